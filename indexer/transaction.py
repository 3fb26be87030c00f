"""`BuildTransaction`: one build's open SQL transaction, and the commit that writes its files.

Handed out by `Index.build()`, which holds the locks around it and commits the SQL
transaction after `commit` has written and recorded both files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy import Connection, delete, select
from sqlalchemy.orm import Session

from indexer import sql_store
from indexer.bm25_store import BM25Store
from indexer.documents import Document, PassageSpan
from indexer.errors import IndexBusyError, IndexMismatchError, IndexUnreadableError
from indexer.faiss_store import VectorStore
from indexer.integrity import (
    file_digest,
    folder_digest,
    id_checksum,
    verified_bm25,
    verified_vectors,
)
from indexer.passage_text import passage_text
from indexer.plan import Plan, StoredDocument
from indexer.records import BuildMeta, CommitResult, IndexInfo, repair_command
from indexer.schema import SCHEMA_FORMAT, DocumentRow, IndexInfoRow, PassageRow

if TYPE_CHECKING:
    from indexer.index import Index


class BuildTransaction:
    """The open build: stored documents to plan against, and `commit` for the changes."""

    def __init__(self, index: Index, conn: Connection, session: Session, info: IndexInfo | None) -> None:
        self.index = index
        self.conn = conn
        self.session = session
        self.info = info
        self.result: tuple[str, str] | None = None  # the files the commit wrote

    def stored_documents(self) -> dict[str, StoredDocument]:
        rows = self.session.execute(
            select(DocumentRow.doc_key, DocumentRow.id, DocumentRow.content_hash,
                   DocumentRow.origin, DocumentRow.source)
        )
        return {key: StoredDocument(row_id, digest, origin, source)
                for key, row_id, digest, origin, source in rows}

    def stored_passages(self) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
        """(passage ids, titles, texts) of every stored passage in blocks of 4096, by id."""
        last = -1
        while True:
            rows = self.session.execute(
                select(PassageRow.id, DocumentRow.title, PassageRow.text)
                .join(PassageRow.document)
                .where(PassageRow.id > last)
                .order_by(PassageRow.id)
                .limit(4096)
            ).all()
            if not rows:
                return
            last = rows[-1].id
            yield (np.asarray([r.id for r in rows], dtype=np.int64),
                   [r.title for r in rows], [r.text for r in rows])

    def check_compatible(self, meta: BuildMeta) -> None:
        info = self.info
        if info is None:
            return
        same = (info.model, info.model_fingerprint, info.dimension) == (
            meta.model.id, meta.model.fingerprint(), meta.dimension)
        if not same:
            reason = "its files changed" if info.model == meta.model.id else "it is another model"
            raise IndexMismatchError(
                f"The index in {self.index.index_dir} was built with model {info.model} "
                f"(dimension {info.dimension}, fingerprint {info.model_fingerprint[:12]}); this build "
                f"uses {meta.model.id} (dimension {meta.dimension}, fingerprint "
                f"{meta.model.fingerprint()[:12]}): {reason}, so old and new vectors would not be "
                "comparable. Build into another --index folder, or pass --rebuild to re-embed "
                "everything."
            )

    def committed_vectors(self) -> VectorStore | None:
        """A CPU copy of the committed vectors, verified; None on a first build."""
        if self.info is None:
            return None
        return verified_vectors(self.index.index_dir, self.info, use_gpu=False)

    def committed_bm25_ok(self) -> bool:
        if self.info is None:
            return False
        try:
            verified_bm25(self.index.index_dir, self.info)
        except (IndexUnreadableError, FileNotFoundError):
            return False
        return True

    def commit(
        self,
        plan: Plan,
        origin: str,
        passages: Sequence[Sequence[PassageSpan]],
        vectors: np.ndarray,
        meta: BuildMeta,
    ) -> CommitResult:
        """Stage the plan's row changes, update the vectors, write both files, record them.

        `passages[i]` are the spans of `plan.to_embed[i]`; `vectors` holds one row per span,
        in that order.
        """
        self.check_compatible(meta)
        docs = plan.to_embed
        if len(passages) != len(docs):
            raise ValueError(f"{len(passages)} passage lists for {len(docs)} documents.")
        total = sum(len(spans) for spans in passages)
        if len(vectors) != total:
            raise ValueError(f"{len(vectors)} vectors for {total} passages.")
        stored = self.stored_documents()
        base_ok = self.info is not None
        if plan.is_empty and base_ok and self.committed_bm25_ok():
            self.committed_vectors()  # verifies the vectors too: a damaged file fails the build
            self.result = (self.info.vector_file, self.info.bm25_dir)
            return CommitResult(self.info.build_id, False, self.info.documents, self.info.passages,
                                0, 0, 0.0)
        store = self.committed_vectors() or VectorStore.create(meta.dimension)
        stale = [stored[d.doc_id].row_id for d in plan.change] + [stored[k].row_id for k in plan.remove]
        removed = self._delete_documents(stale)
        new_ids = self._insert(docs, origin, passages)
        store.remove(removed)
        store.add(new_ids, vectors)
        return self._write(store, meta, len(new_ids), len(removed))

    def replace_vectors(self, store: VectorStore, meta: BuildMeta) -> CommitResult:
        """Commit `store` (all stored passages, re-embedded) and a fresh BM25; rows unchanged."""
        return self._write(store, meta, 0, 0)

    def _delete_documents(self, row_ids: list[int]) -> np.ndarray:
        if not row_ids:
            return np.empty(0, dtype=np.int64)
        removed = np.fromiter(
            self.session.scalars(select(PassageRow.id).where(PassageRow.document_id.in_(row_ids))),
            dtype=np.int64,
        )
        self.session.execute(delete(PassageRow).where(PassageRow.document_id.in_(row_ids)))
        self.session.execute(delete(DocumentRow).where(DocumentRow.id.in_(row_ids)))
        self.session.flush()
        return removed

    def _insert(self, docs: list[Document], origin: str,
                passages: Sequence[Sequence[PassageSpan]]) -> np.ndarray:
        now = dt.datetime.now(dt.UTC)
        rows: list[PassageRow] = []
        for doc, spans in zip(docs, passages, strict=True):
            row = DocumentRow(
                doc_key=doc.doc_id, title=doc.title, origin=origin, source=doc.source,
                text=doc.text, content_hash=doc.content_hash(), meta=doc.metadata, indexed_at=now,
            )
            for span in spans:
                passage = PassageRow(ordinal=span.ordinal, start_char=span.start_char,
                                     end_char=span.end_char,
                                     text=doc.text[span.start_char : span.end_char])
                row.passages.append(passage)
                rows.append(passage)
            self.session.add(row)
        self.session.flush()  # assigns passage ids, which become the FAISS and BM25 ids
        return np.asarray([p.id for p in rows], dtype=np.int64)

    def _all_passage_ids(self) -> np.ndarray:
        return np.fromiter(self.session.scalars(select(PassageRow.id).order_by(PassageRow.id)),
                           dtype=np.int64)

    def _write(self, store: VectorStore, meta: BuildMeta, added: int, removed: int) -> CommitResult:
        sql_ids = self._all_passage_ids()
        if not np.array_equal(np.sort(store.ids()), sql_ids):
            raise RuntimeError(
                f"FAISS holds {store.ntotal} vectors but SQL holds {len(sql_ids)} passages, or their "
                f"ids differ; nothing was committed. Repair with: {repair_command(self.index.index_dir)}"
            )
        bm25_started = time.perf_counter()
        ids, texts = [], []
        for block_ids, titles, block_texts in self.stored_passages():
            ids.append(block_ids)
            texts.extend(passage_text(t, x) for t, x in zip(titles, block_texts, strict=True))
        bm25 = BM25Store.build(np.concatenate(ids) if ids else np.empty(0, np.int64), texts)
        if not np.array_equal(np.sort(bm25.ids()), sql_ids):
            raise RuntimeError("BM25 and SQL hold different passages; nothing was committed.")
        # Both files of one build share its id, which makes a directory listing easy to read.
        build_id = uuid.uuid4().hex[:12]
        layout = self.index.layout
        vector_file, bm25_dir = layout.vector_name(build_id), layout.bm25_name(build_id)
        bm25.save(layout.root / bm25_dir)
        bm25_seconds = time.perf_counter() - bm25_started
        store.save(layout.root / vector_file)
        documents = sql_store.count_documents(self.conn)
        values = dict(
            format=SCHEMA_FORMAT,
            owner=self.index.manifest.index_id,
            owner_path=str(layout.root.resolve()),
            build_id=build_id,
            model=meta.model.id,
            model_fingerprint=meta.model.fingerprint(),
            dimension=meta.dimension,
            vector_file=vector_file,
            vector_digest=file_digest(layout.root / vector_file),
            bm25_dir=bm25_dir,
            bm25_digest=folder_digest(layout.root / bm25_dir),
            documents=documents,
            passages=len(sql_ids),
            id_checksum=id_checksum(sql_ids),
            passage_tokens=meta.passage_tokens,
            overlap_tokens=meta.overlap_tokens,
            embed_titles=meta.embed_titles,
            built_at=dt.datetime.now(dt.UTC),
            build_seconds=time.perf_counter() - meta.started,
        )
        row = self.session.get(IndexInfoRow, 1)
        if row is None:
            self.session.add(IndexInfoRow(id=1, **values))
        else:
            for key, value in values.items():
                setattr(row, key, value)
        self.session.flush()
        self.result = (vector_file, bm25_dir)
        return CommitResult(build_id, True, documents, len(sql_ids), added, removed, bm25_seconds)


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """One build at a time per index folder. flock is released when its process ends, even by
    kill -9, so a lock file left behind never blocks anything and never needs removing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            fh.seek(0)
            holder = fh.read().strip()
            by = f" (process {holder})" if holder.isdigit() else ""
            raise IndexBusyError(
                f"Another build is writing {path.parent}{by}. Wait for it to finish and run this "
                "build again; its lock goes away by itself when that process ends."
            ) from err
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

