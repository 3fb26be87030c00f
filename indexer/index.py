"""`Index`: the one object that owns an index folder.

It owns the manifest, the SQL engine, the vector and BM25 stores of the
committed build, the locks and the file names (`indexer.layout`). Search, the
UI and the app open an `Index` and ask it for passages; they never see SQL.
Builds write through `Index.build()`, a transaction that:

1. holds the folder's lock and the database's build lock for the whole build;
2. lets the build stage row changes and write new, versioned files;
3. records the file names with their digests in the same SQL transaction as
   the rows, and commits only after every file is durably written;
4. removes the files no committed row names any more, after the commit.

A crash at any point leaves the previous rows pointing at the previous files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, delete, select
from sqlalchemy.exc import DatabaseError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from indexer import sql_store
from indexer.bm25_store import BM25Store
from indexer.documents import Document, PassageSpan
from indexer.errors import (
    IndexBusyError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
)
from indexer.faiss_store import VectorStore
from indexer.integrity import file_digest, folder_digest, id_checksum
from indexer.layout import IndexLayout
from indexer.manifest import Manifest, read_manifest, write_manifest
from indexer.model_spec import ModelSpec
from indexer.passage_text import passage_text
from indexer.plan import Plan, StoredDocument
from indexer.schema import SCHEMA_FORMAT, DocumentRow, IndexInfoRow, PassageRow

logger = logging.getLogger(__name__)

# A refresh that races a build deleting the files it just read retries this often.
_LOAD_ATTEMPTS = 3


@dataclass(frozen=True)
class IndexInfo:
    """The committed build, as its info row records it."""

    owner: str
    owner_path: str
    build_id: str
    model: str
    model_fingerprint: str
    dimension: int
    vector_file: str
    vector_digest: str
    bm25_dir: str
    bm25_digest: str
    documents: int
    passages: int
    id_checksum: str
    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool
    built_at: dt.datetime
    build_seconds: float

    @classmethod
    def from_row(cls, row: IndexInfoRow) -> IndexInfo:
        return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class IndexStats:
    documents: int
    passages: int
    model: str
    model_label: str
    dimension: int
    built_at: dt.datetime
    build_seconds: float
    vector_file: str
    bm25_dir: str | None
    build_id: str


@dataclass(frozen=True)
class PassageRecord:
    passage_id: int
    doc_id: str
    title: str
    text: str
    start_char: int
    end_char: int
    metadata: dict[str, Any]
    source: str


@dataclass(frozen=True)
class IndexSnapshot:
    """One committed build's vectors and BM25 index, loaded together and verified together."""

    build_id: str
    info: IndexInfo
    vectors: VectorStore
    bm25: BM25Store | None


@dataclass(frozen=True)
class BuildMeta:
    """What a build records about how its vectors were made."""

    model: ModelSpec
    dimension: int
    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool
    started: float  # time.perf_counter() at the start of the build


@dataclass(frozen=True)
class CommitResult:
    build_id: str
    wrote_files: bool
    documents: int
    passages: int
    passages_added: int
    passages_removed: int
    bm25_seconds: float


def build_command(index_dir: Path) -> str:
    return f"python -m indexer build --source PATH --index {index_dir}"


def repair_command(index_dir: Path) -> str:
    return f"python -m indexer repair --index {index_dir}"


def _not_found(index_dir: Path) -> IndexNotFoundError:
    return IndexNotFoundError(f"No index found in {index_dir}. Build one with: {build_command(index_dir)}")


def _check_folder(index_dir: Path) -> None:
    # The nearest part of the path that exists: a file there, the folder's or a parent's, would
    # make mkdir fail with NotADirectoryError instead of this message.
    existing = next((p for p in (index_dir, *index_dir.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        within = "" if existing == index_dir else f", so {index_dir} cannot be created"
        raise IndexNotFoundError(
            f"{existing} is a file, not an index folder{within}. Pass a folder path to --index "
            "(it is created if missing)."
        )


class Index:
    """An index folder: open it to search, or `create` it and `build()` into it."""

    def __init__(
        self, index_dir: Path, db_url: str, manifest: Manifest | None, use_gpu: bool = True
    ) -> None:
        self.index_dir = index_dir
        self.layout = IndexLayout(index_dir)
        self.db_url = db_url
        self.manifest = manifest
        self.use_gpu = use_gpu
        self._engine: Engine = sql_store.make_engine(db_url)
        self._snapshot: IndexSnapshot | None = None
        self._lock = threading.RLock()
        self._explicit_db: str | None = None

    # --- opening ------------------------------------------------------------------------------

    @staticmethod
    def resolve_db_url(index_dir: Path, db_url: str | None, manifest: Manifest | None) -> str:
        """The URL given, else SEMSEARCH_DB, else the manifest's, else SQLite in the folder."""
        if db_url:
            return db_url
        env = sql_store.env_db_url()
        if env:
            return env
        if manifest is not None and manifest.db_url:
            if manifest.has_password:
                raise ValueError(
                    f"The index in {index_dir} keeps its rows in {manifest.db_url}, whose password "
                    "is not stored. Pass db_url=... (or --db, or set SEMSEARCH_DB)."
                )
            return manifest.db_url
        return sql_store.default_db_url(index_dir)

    @classmethod
    def open(cls, index_dir: Path | str, db_url: str | None = None, use_gpu: bool = True) -> Index:
        """An index with a committed build; IndexNotFoundError when there is none yet."""
        index_dir = Path(index_dir)
        _check_folder(index_dir)
        if not index_dir.is_dir():
            raise _not_found(index_dir)
        layout = IndexLayout(index_dir)
        manifest = read_manifest(layout.manifest)
        if manifest is None:
            if layout.manifest.is_file():
                raise IndexMismatchError(
                    f"The index in {index_dir} was built by an older version of semsearch. Rebuild "
                    f"it with: {build_command(index_dir)} --rebuild"
                )
            raise _not_found(index_dir)
        index = cls(index_dir, cls.resolve_db_url(index_dir, db_url, manifest), manifest, use_gpu)
        try:
            index._load(required=True)
        except BaseException:
            index.close()
            raise
        return index

    @classmethod
    def create(cls, index_dir: Path | str, db_url: str | None = None, use_gpu: bool = False) -> Index:
        """The index in `index_dir` for building into, creating the folder if missing.

        Nothing is loaded or checked until `build()` (which writes the manifest under the
        folder's lock, before its first commit) or `snapshot()`.
        """
        index_dir = Path(index_dir)
        _check_folder(index_dir)
        index_dir.mkdir(parents=True, exist_ok=True)
        manifest = read_manifest(IndexLayout(index_dir).manifest)
        if db_url is not None and manifest is not None:
            manifest = manifest.with_db(db_url)
        resolved = cls.resolve_db_url(index_dir, db_url, manifest)
        index = cls(index_dir, resolved, manifest, use_gpu)
        index._explicit_db = db_url
        return index

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- reading ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _read(self) -> Iterator[Connection]:
        """A read connection; database errors become index errors that say how to recover."""
        try:
            with self._engine.connect() as conn:
                yield conn
        except DatabaseError as err:
            raise self._database_error(err) from err

    def _database_error(self, err: DatabaseError) -> Exception:
        shown = sql_store.shown_url(self.db_url)
        if sql_store.is_damaged_error(err):
            return IndexUnreadableError(
                f"The SQL store of {self.index_dir} ({shown}) is damaged: {err.orig}. It holds the "
                f"passages' text, so rebuild from your source: {build_command(self.index_dir)} "
                "--rebuild (the damaged file is kept beside it as store.sqlite.damaged-<time>)."
            )
        if isinstance(err, OperationalError | ProgrammingError):
            return IndexUnreadableError(
                f"The database of {self.index_dir} ({shown}) cannot be read: {err.orig}. Check that "
                "it is reachable, or rebuild the index with "
                f"{build_command(self.index_dir)} --rebuild."
            )
        return err

    def _read_info(self, conn: Connection) -> IndexInfo | None:
        state = sql_store.schema_state(conn)
        if state == "missing":
            return None
        if state == "old":
            raise IndexMismatchError(
                f"The index in {self.index_dir} was built by an older version of semsearch (its "
                f"tables are not format {SCHEMA_FORMAT}). Rebuild it with: "
                f"{build_command(self.index_dir)} --rebuild"
            )
        row = sql_store.read_info(conn)
        if row is None:
            return None
        info = IndexInfo.from_row(row)
        self._check_owner(info.owner, info.owner_path)
        return info

    def _check_owner(self, owner: str, owner_path: str) -> None:
        if self.manifest is None or owner != self.manifest.index_id:
            raise IndexMismatchError(
                f"The database {sql_store.shown_url(self.db_url)} holds the index of another folder "
                f"({owner_path}, index id {owner}), not of {self.index_dir}. Point --db at another database or PostgreSQL schema "
                "(for example ?options=-csearch_path%3Dmy_schema), or use that folder. Nothing "
                "was changed."
            )

    def _load(self, required: bool) -> None:
        """Load the committed build's files, retrying when a concurrent build replaced them."""
        for attempt in range(_LOAD_ATTEMPTS):
            with self._read() as conn:
                info = self._read_info(conn)
            if info is None:
                if required:
                    raise _not_found(self.index_dir)
                self._snapshot = None
                return
            try:
                self._snapshot = self._load_snapshot(info)
                return
            except (FileNotFoundError, IndexUnreadableError) as err:
                # A build that committed meanwhile removes the files it replaced, one by one: a
                # half-removed BM25 folder fails its digest. Damage only if the build is current.
                if attempt == _LOAD_ATTEMPTS - 1 or self._current_build_id() == info.build_id:
                    if isinstance(err, IndexUnreadableError):
                        raise
                    raise self._damaged(info, "a file of the committed build is missing") from None

    def _current_build_id(self) -> str | None:
        with self._read() as conn:
            try:
                return sql_store.read_build_id(conn)
            except (OperationalError, ProgrammingError):
                return None

    def _damaged(self, info: IndexInfo, what: str) -> IndexUnreadableError:
        return IndexUnreadableError(
            f"The index in {self.index_dir} is damaged: {what} (build {info.build_id}). Its text "
            f"is safe in SQL; repair it with: {repair_command(self.index_dir)}"
        )

    def _load_snapshot(self, info: IndexInfo, use_gpu: bool | None = None) -> IndexSnapshot:
        vectors = self._load_vectors(info, self.use_gpu if use_gpu is None else use_gpu)
        bm25 = self._load_bm25(info)
        return IndexSnapshot(info.build_id, info, vectors, bm25)

    def _load_vectors(self, info: IndexInfo, use_gpu: bool) -> VectorStore:
        path = self.index_dir / info.vector_file
        if not path.is_file():
            raise FileNotFoundError(path)
        if file_digest(path) != info.vector_digest:
            raise self._damaged(info, f"the vector file {info.vector_file} is not the one committed "
                                      "(truncated, altered or copied from another build)")
        try:
            store = VectorStore.load(path, use_gpu=False)  # ids are checked on the CPU copy
        except RuntimeError as err:
            raise self._damaged(info, f"the vector file {info.vector_file} cannot be read ({err})") from err
        if id_checksum(store.ids()) != info.id_checksum:
            raise self._damaged(info, f"the vector file {info.vector_file} holds other passage ids "
                                      "than the committed rows")
        if store.dim != info.dimension:
            raise self._damaged(info, f"the vector file has dimension {store.dim}, the index "
                                      f"{info.dimension}")
        return store.on_gpu() if use_gpu else store

    def _load_bm25(self, info: IndexInfo) -> BM25Store:
        path = self.index_dir / info.bm25_dir
        if not path.is_dir():
            raise FileNotFoundError(path)
        if folder_digest(path) != info.bm25_digest:
            raise self._damaged(info, f"the BM25 folder {info.bm25_dir} is not the one committed")
        try:
            bm25 = BM25Store.load(path)
        except (OSError, ValueError, KeyError) as err:
            raise self._damaged(info, f"the BM25 folder {info.bm25_dir} cannot be read ({err})") from err
        if id_checksum(bm25.ids()) != info.id_checksum:
            raise self._damaged(info, f"the BM25 folder {info.bm25_dir} holds other passage ids "
                                      "than the committed rows")
        return bm25

    def snapshot(self) -> IndexSnapshot:
        """The loaded build. Hold on to it for the length of one search."""
        snap = self._snapshot
        if snap is None:
            with self._lock:
                if self._snapshot is None:
                    self._load(required=True)
                snap = self._snapshot
        assert snap is not None  # _load(required=True) raised otherwise
        return snap

    @property
    def info(self) -> IndexInfo:
        return self.snapshot().info

    @property
    def vectors(self) -> VectorStore:
        return self.snapshot().vectors

    @property
    def bm25(self) -> BM25Store | None:
        return self.snapshot().bm25

    @property
    def build_id(self) -> str:
        return self.snapshot().build_id

    @property
    def model_spec(self) -> ModelSpec:
        model = self.info.model
        try:
            return ModelSpec.resolve(model)
        except FileNotFoundError as err:
            raise IndexUnreadableError(
                f"The model folder {model} that the index in {self.index_dir} was built with is "
                f"gone. Restore it, or re-embed with another model: {build_command(self.index_dir)} "
                "--model FOLDER --rebuild"
            ) from err

    def check_model(self, spec: ModelSpec, dimension: int | None = None) -> None:
        """Refuse a model whose files or dimension differ from the ones the vectors came from."""
        info = self.info
        if spec.id != info.model:
            raise IndexMismatchError(
                f"The index in {self.index_dir} was built with {info.model}; searching it with "
                f"{spec.id} would compare unrelated vectors. Leave the model out, or rebuild the "
                "index with this model."
            )
        if spec.fingerprint() != info.model_fingerprint:
            raise IndexMismatchError(
                f"The model files in {spec.path} changed since the index in {self.index_dir} was "
                f"built (fingerprint {spec.fingerprint()[:12]} now, {info.model_fingerprint[:12]} "
                "then), so its vectors no longer match new queries. Restore the model it was built "
                f"with, or re-embed the stored passages with the model now there: "
                f"{repair_command(self.index_dir)} --reembed"
            )
        if dimension is not None and dimension != info.dimension:
            raise IndexMismatchError(
                f"The model in {spec.path} makes {dimension}-dimensional vectors, the index in "
                f"{self.index_dir} holds {info.dimension}-dimensional ones. Use the model it was "
                f"built with, or rebuild: {build_command(self.index_dir)} --rebuild"
            )

    def load_model(self, device: str | None = None):
        """The index's bi-encoder, checked against the index (files and dimension)."""
        from indexer.embedding import embedding_dimension, load_bi_encoder

        spec = self.model_spec
        self.check_model(spec)
        model = load_bi_encoder(spec, device=device)
        self.check_model(spec, embedding_dimension(model))
        return model

    def refresh(self) -> bool:
        """Load a build committed since the last load; True when the loaded build changed.

        Costs one small SQL read when nothing changed, so searchers call it before every query.
        """
        current = self._current_build_id()
        snap = self._snapshot
        if snap is not None and current == snap.build_id:
            return False
        with self._lock:
            before = None if self._snapshot is None else self._snapshot.build_id
            self._load(required=snap is not None)
            after = None if self._snapshot is None else self._snapshot.build_id
        return before != after

    def stats(self) -> IndexStats:
        info = self.info
        return IndexStats(
            documents=info.documents,
            passages=info.passages,
            model=info.model,
            model_label=ModelSpec(info.model, Path(info.model)).label,
            dimension=info.dimension,
            built_at=info.built_at,
            build_seconds=info.build_seconds,
            vector_file=info.vector_file,
            bm25_dir=info.bm25_dir,
            build_id=info.build_id,
        )

    def document_ids(self, passage_ids: Sequence[int]) -> dict[int, int]:
        """Passage id -> document row id; passages no longer stored are absent."""
        if not len(passage_ids):
            return {}
        with self._read() as conn:
            return sql_store.passage_documents(conn, passage_ids)

    def passages(self, passage_ids: Sequence[int]) -> dict[int, PassageRecord]:
        if not len(passage_ids):
            return {}
        with self._read() as conn:
            rows = sql_store.passage_details(conn, passage_ids)
        return {
            pid: PassageRecord(
                passage_id=pid,
                doc_id=row.doc_key,
                title=row.title,
                text=row.text,
                start_char=row.start_char,
                end_char=row.end_char,
                metadata=dict(row.meta or {}),
                source=row.source,
            )
            for pid, row in rows.items()
        }

    # --- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def build(self, rebuild: bool = False) -> Iterator[BuildTransaction]:
        """One build: locks held throughout, files written before the commit, stale files removed
        after it. Leaving the block normally commits; an exception rolls everything back."""
        with _folder_lock(self.layout.lock_file):
            self._write_manifest()
            if rebuild:
                self._set_aside_damaged_sqlite()
            engine = sql_store.make_engine(self.db_url, for_build=True)
            try:
                with engine.connect() as conn:
                    try:
                        outer = conn.begin()
                    except OperationalError as err:
                        if sql_store.is_locked_error(err):
                            raise IndexBusyError(
                                f"Another build is writing {sql_store.shown_url(self.db_url)} (it "
                                "holds SQLite's write lock). Wait for it to finish and run this "
                                "build again; the lock goes with that process."
                            ) from err
                        raise
                    with outer:
                        sql_store.lock_database(conn, self.db_url)
                        tx = self._start(conn, rebuild)
                        try:
                            yield tx
                            tx.session.flush()
                        finally:
                            tx.session.close()
            except DatabaseError as err:
                raise self._database_error(err) from err
            finally:
                engine.dispose()
            self._snapshot = None  # loaded again on first use
            if tx.result is not None:
                self._remove_stale_files(set(tx.result))

    def _write_manifest(self) -> None:
        """Create the manifest (the index's id) before the first commit; record an explicit --db."""
        current = read_manifest(self.layout.manifest)
        manifest = current or Manifest.new(None)
        if self._explicit_db is not None:
            manifest = manifest.with_db(self._explicit_db)
        if manifest != current:
            write_manifest(self.layout.manifest, manifest)
        self.manifest = manifest

    def _start(self, conn: Connection, rebuild: bool) -> BuildTransaction:
        state = sql_store.schema_state(conn)
        if state == "old":
            if not rebuild:
                raise IndexMismatchError(
                    f"The index in {self.index_dir} was built by an older version of semsearch. "
                    f"Rebuild it with: {build_command(self.index_dir)} --rebuild"
                )
            sql_store.drop_schema(conn)
        sql_store.create_schema(conn)
        row = sql_store.read_info(conn)
        info = IndexInfo.from_row(row) if row is not None else None
        if info is not None:
            self._check_owner(info.owner, info.owner_path)  # even with --rebuild: not our rows
        elif not rebuild and sql_store.count_documents(conn):
            raise IndexMismatchError(
                f"The database behind {self.index_dir} holds documents but no index info. "
                f"Pass --rebuild to start it afresh: {build_command(self.index_dir)} --rebuild"
            )
        session = Session(bind=conn, autoflush=False)
        if rebuild:
            session.execute(delete(PassageRow))
            session.execute(delete(DocumentRow))
            session.flush()
        return BuildTransaction(self, conn, session, None if rebuild else info)

    def _set_aside_damaged_sqlite(self) -> None:
        """--rebuild over a damaged SQLite file: keep it under another name, start a new one."""
        path = self.layout.sqlite_file
        if self.db_url != sql_store.default_db_url(self.index_dir) or not path.is_file():
            return
        probe = sql_store.make_engine(self.db_url)
        try:
            with probe.connect() as conn:
                sql_store.schema_state(conn)
            return
        except DatabaseError as err:
            if not sql_store.is_damaged_error(err):
                return
        finally:
            probe.dispose()
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
        for suffix in ("", "-wal", "-shm"):
            part = path.with_name(path.name + suffix)
            if part.exists():
                part.rename(path.with_name(f"{path.name}{suffix}.damaged-{stamp}"))
        logger.warning("the SQL store %s was damaged; kept it as %s.damaged-%s", path, path.name, stamp)

    def _remove_stale_files(self, keep: set[str]) -> None:
        """Delete vector files, BM25 folders and temp files that no committed row names.

        A searcher loads both files when it opens or refreshes, so it never reads a removed one.
        """
        import shutil

        for path in self.layout.stale_paths(keep):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


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
        return self.index._load_vectors(self.info, use_gpu=False)

    def committed_bm25_ok(self) -> bool:
        if self.info is None:
            return False
        try:
            self.index._load_bm25(self.info)
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
def _folder_lock(path: Path) -> Iterator[None]:
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


__all__ = [
    "BuildMeta",
    "BuildTransaction",
    "CommitResult",
    "Index",
    "IndexInfo",
    "IndexSnapshot",
    "IndexStats",
    "PassageRecord",
]
