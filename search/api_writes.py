"""Writes over HTTP, through the indexer's own write path.

An upsert is a build whose source is the request: `BuildLoop` (indexer/build/loop.py) plans the
documents against what the collection stores, embeds what is new or changed with
`ModelEmbedder`, and commits in one `Index.transaction()`, under the same folder lock and
database lock as `python -m indexer build`. Unchanged documents are left alone, exactly as a
build leaves an unchanged file. A delete is one `WriteTransaction.commit` of a plan that only
removes. There is no other write path.

Durable when answered: each write commits once, whole (the loop is given one chunk for the
whole batch), and the transaction commits only after its files are written and synced; a
`kill -9` before the commit leaves the previous build, with none of the batch. Documents written
here are stored with origin and source "api", so a folder build (which prunes only its own
origin) never removes them.

A write while another build holds the collection's lock retries for up to `wait_seconds`
(ApiConfig.write_wait_seconds), then raises `WriteBusy`, which the API answers 503 with
Retry-After. Searches meanwhile answer from the committed build.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from indexer.build.config import IndexConfig
from indexer.build.loop import BuildLoop
from indexer.build.pipeline import ModelEmbedder, chunking_for
from indexer.build.report import BuildReport
from indexer.build.source_stream import SourceStream
from indexer.embedding import embedding_dimension
from indexer.errors import IndexBusyError
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.sources.documents import Document, validate_document
from indexer.store.metadata_filter import Filter
from indexer.store.plan import Plan
from indexer.store.records import BuildMeta
from indexer.store.segments import SegmentPolicy

# The origin and source recorded for documents written over HTTP.
API_ORIGIN = "api"
# One commit for a whole batch: more passages than any batch the API accepts.
WHOLE_BATCH = 1 << 40
# How often a write waiting for another build's lock tries again.
RETRY_SECONDS = 0.2

T = TypeVar("T")


class WriteBusy(Exception):
    """Another build held the collection's lock for the whole wait."""


@dataclass
class WriteOutcome:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    not_found: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class WriteTarget:
    """Where a write goes: the collection's folder, its database, FAISS index type, and the model
    that embeds (that of its committed build, else the one it was created with)."""

    folder: Path
    db_url: str | None
    vector_index: Any
    spec: ModelSpec
    model: Any


class WholeBatchEmbedder(ModelEmbedder):
    """The build's `ModelEmbedder` without its small first commit: a batch commits whole."""

    first_commit = None  # type: ignore[assignment]  # `Embedder` allows None: the commit cap

    def check(self, changes: Plan) -> None:
        return None  # any plan: the default of `Embedder`


def as_documents(items: Sequence[tuple[str, str, str, dict[str, Any]]]) -> list[Document]:
    """(id, title, text, metadata) as the indexer's documents; a ValueError naming the first id
    that cannot be stored (the readers' own checks) or that appears twice."""
    documents: list[Document] = []
    seen: set[str] = set()
    for doc_id, title, text, metadata in items:
        if doc_id in seen:
            raise ValueError(f"Document id {doc_id!r} appears twice in this batch; send each id once.")
        seen.add(doc_id)
        doc = Document(doc_id=doc_id, title=title, text=text, source=API_ORIGIN, metadata=dict(metadata))
        problem = validate_document(doc)
        if problem:
            raise ValueError(f"Document {doc_id[:80]!r}: {problem}.")
        documents.append(doc)
    return documents


def waiting_for_lock(write: Callable[[], T], wait_seconds: float) -> T:
    """`write()`, tried again while another build holds the lock, for up to `wait_seconds`."""
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return write()
        except IndexBusyError as err:
            if time.monotonic() >= deadline:
                raise WriteBusy(str(err)) from err
            time.sleep(RETRY_SECONDS)


def upsert(target: WriteTarget, documents: list[Document], wait_seconds: float) -> WriteOutcome:
    """Add the new documents and replace the changed ones, in one commit of the build loop."""
    config = IndexConfig(source=Path(API_ORIGIN), index_dir=target.folder, model=target.spec.id, db_url=target.db_url,
                         prune=False, show_progress=False, commit_passages=WHOLE_BATCH,
                         vector_index=target.vector_index)
    chunking = chunking_for(config, target.model, None)

    def write() -> BuildReport:
        embedder = WholeBatchEmbedder(target.spec, target.model, config)
        meta = BuildMeta(target.spec, embedding_dimension(target.model), chunking.passage_tokens,
                         chunking.overlap_tokens, chunking.embed_titles, time.perf_counter(),
                         config.vector_index, config.segments)
        report = BuildReport(index_dir=config.index_dir, model=target.spec.id)
        index = Index.create(config.index_dir, config.db_url)
        try:
            BuildLoop(config, index, SourceStream.of(list(documents)), API_ORIGIN, embedder, meta, report, None).run()
        finally:
            index.close()
        return report

    report = waiting_for_lock(write, wait_seconds)
    return WriteOutcome(added=report.documents_added, updated=report.documents_updated,
                        unchanged=report.documents_unchanged,
                        skipped=[f"{issue.doc_id}: {issue.problem}" for issue in report.issues])


def remove_documents(folder: Path, db_url: str | None, ids: Sequence[str], wait_seconds: float) -> WriteOutcome:
    """Delete the stored documents among `ids` in one commit; the others are `not_found`."""
    def write() -> list[str]:
        index = Index.create(folder, db_url)
        try:
            with index.transaction() as tx:
                info = tx.info
                if info is None:
                    return []
                stored = tx.stored_documents(list(ids))
                present = sorted({key for key in ids if key in stored})
                if present:
                    meta = BuildMeta(ModelSpec.resolve(info.model), info.dimension, info.passage_tokens,
                                     info.overlap_tokens, info.embed_titles, time.perf_counter(), None,
                                     SegmentPolicy(), encoding=info.vector_encoding)
                    tx.commit(Plan(remove=present), API_ORIGIN, [], np.empty((0, info.dimension), np.float32), meta)
                return present
        finally:
            index.close()

    present = waiting_for_lock(write, wait_seconds)
    found = set(present)
    return WriteOutcome(deleted=len(present), not_found=[key for key in dict.fromkeys(ids) if key not in found])


def matching_ids(index: Index, flt: Filter) -> list[str]:
    """The ids of the committed documents whose metadata matches `flt`."""
    passage_ids = index.matching_passages(flt).ids()
    records = index.passages(passage_ids.tolist())
    return sorted({record.doc_id for record in records.values()})
