"""What an index stores and how: SQL rows, vectors and their ANN index, BM25, segments, the
manifest, integrity checks and the commit transaction. `indexer.index.Index` is their one user
outside this package.
"""
