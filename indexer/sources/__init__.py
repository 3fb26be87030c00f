"""Reading documents: file readers, the Document record, chunking into passages, what the
model reads of a passage, and precomputed vector tables. Any part of the indexer may use it.
"""
