"""Batch indexing: files in, passages out, embeddings into FAISS, text and metadata into SQL.

`Index` owns an index folder; `build_index` runs plan -> chunk and embed -> commit through it.
"""

from indexer.bm25_store import bm25_terms
from indexer.build import build_index
from indexer.build_report import BuildReport
from indexer.config import IndexConfig
from indexer.errors import (
    BadInputError,
    BuildInterrupted,
    IndexBusyError,
    IndexerError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
)
from indexer.index import Index, IndexSnapshot, IndexStats, PassageRecord
from indexer.model_spec import ModelSpec
from indexer.passage_text import passage_text
from indexer.repair import RepairReport, repair_index

__all__ = [
    "BadInputError",
    "BuildInterrupted",
    "BuildReport",
    "Index",
    "IndexBusyError",
    "IndexConfig",
    "IndexMismatchError",
    "IndexNotFoundError",
    "IndexSnapshot",
    "IndexStats",
    "IndexUnreadableError",
    "IndexerError",
    "ModelSpec",
    "PassageRecord",
    "RepairReport",
    "bm25_terms",
    "build_index",
    "passage_text",
    "repair_index",
]
