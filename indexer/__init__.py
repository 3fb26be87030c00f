"""Batch indexing: files in, passages out, embeddings into FAISS, text and metadata into SQL.

`Index` owns an index folder; `build_index` runs plan -> chunk and embed -> commit through it.
"""

from indexer.build.config import IndexConfig
from indexer.build.pipeline import build_index
from indexer.build.repair import RepairReport, repair_index
from indexer.build.report import BuildReport
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
from indexer.sources.passage_text import passage_text
from indexer.store.bm25_store import bm25_terms

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
