"""Batch indexing: files in, passages out, embeddings into FAISS, text and metadata into SQL."""

from indexer.build import BuildReport, build_index
from indexer.config import IndexConfig
from indexer.errors import BadInputError, IndexBusyError, IndexerError, IndexMismatchError

__all__ = [
    "BadInputError",
    "BuildReport",
    "IndexBusyError",
    "IndexConfig",
    "IndexMismatchError",
    "IndexerError",
    "build_index",
]
