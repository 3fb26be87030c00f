"""`Index`: the one object that owns an index folder.

It owns the manifest, the SQL engine, the vector and BM25 stores of the
committed build, the locks and the file names (`indexer.layout`). Search, the
UI and the app open an `Index` and ask it for passages; they never see SQL.
Builds write through `Index.transaction()`, which:

1. holds the folder's lock and the database's build lock for the whole build;
2. lets the build stage row changes and write new, versioned files;
3. records the file names with their digests in the same SQL transaction as
   the rows, and commits only after every file is durably written;
4. removes the files no committed row names any more, after the commit.

A crash at any point leaves the previous rows pointing at the previous files.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from indexer.errors import (
    IndexBusyError,
    IndexerError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
    NotEnoughSpaceError,
)
from indexer.layout import IndexLayout
from indexer.model_spec import ModelSpec
from indexer.sources.documents import source_file
from indexer.sources.outline import Location
from indexer.store import sql_store
from indexer.store.bm25_store import BM25Store
from indexer.store.document_map import DocumentMap
from indexer.store.faiss_store import VectorStore
from indexer.store.field_index import FieldSummary
from indexer.store.filter_matches import FilterMatches
from indexer.store.integrity import damaged, verified_bm25, verified_vectors
from indexer.store.manifest import Manifest, read_manifest, write_manifest
from indexer.store.metadata_filter import RESERVED_FIELDS, Filter
from indexer.store.passage_subset import PassageSubset
from indexer.store.records import (
    BuildMeta,
    CommitResult,
    DocumentRecord,
    IndexInfo,
    IndexSnapshot,
    IndexStats,
    PassageRecord,
    SnapshotLoader,
    build_command,
    repair_command,
)
from indexer.store.schema import SCHEMA_FORMAT, passage_checksum
from indexer.store.sql_store import (
    Connection,
    DatabaseError,
    Engine,
    OperationalError,
    ProgrammingError,
)
from indexer.store.transaction import WriteTransaction, folder_lock

logger = logging.getLogger(__name__)

# A refresh that races a build deleting the files it just read retries this often.
_LOAD_ATTEMPTS = 3
# An index of this many passages or more reads its passage -> document map in a thread
# (`Index.document_ids`); a smaller one reads it at once (200,000 rows: a fraction of a second).
BACKGROUND_MAP_PASSAGES = 200_000


def _not_found(index_dir: Path) -> IndexNotFoundError:
    return IndexNotFoundError(f"No index found in {index_dir}. Build one with: {build_command(index_dir)}")


def free_bytes(path: Path) -> int:
    """Bytes free on the file system that holds `path`."""
    return shutil.disk_usage(path).free


def folder_bytes(root: Path, skip: set[str]) -> int:
    """Bytes of the files under `root`, leaving out the top-level entries named in `skip` and
    damaged files kept aside."""
    total = 0
    for entry in root.iterdir() if root.is_dir() else ():
        if entry.name in skip or ".damaged-" in entry.name:
            continue
        if entry.is_file():
            total += entry.stat().st_size
        elif entry.is_dir():
            total += sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
    return total


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
        self, index_dir: Path, db_url: str, manifest: Manifest | None, use_gpu: bool = True,
        files: SnapshotLoader | None = None,
    ) -> None:
        self.index_dir = index_dir
        self._files = files
        self.layout = IndexLayout(index_dir)
        self.db_url = db_url
        self.manifest = manifest
        self.use_gpu = use_gpu
        self._engine: Engine = sql_store.make_engine(db_url)
        self._store_file = self._sqlite_identity()
        # The passages table's columns (text checksums and locations came later); read once.
        self._passage_columns: frozenset[str] | None = None
        self._snapshot: IndexSnapshot | None = None
        self._document_map: DocumentMap | None = None
        self._document_map_covers: str | None = None  # the build whose every passage the map holds
        self._document_map_loading: str | None = None  # the base a thread reads the map of
        self._matches = FilterMatches()
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
    def open(cls, index_dir: Path | str | os.PathLike[str], db_url: str | None = None, use_gpu: bool = True,
             files: SnapshotLoader | None = None) -> Index:
        """An index with a committed build; IndexNotFoundError when there is none yet.

        `files` loads a build's vectors and BM25 in place of reading its files here: a sharded
        service's router gets them from its shards (`indexer.store.shards.sharded_files`)."""
        index_dir = Path(index_dir)
        _check_folder(index_dir)
        if not index_dir.is_dir():
            raise _not_found(index_dir)
        layout = IndexLayout(index_dir)
        manifest = read_manifest(layout.manifest)
        if manifest is None:
            raise cls._without_manifest(index_dir, db_url)
        resolved = cls.resolve_db_url(index_dir, db_url, manifest)
        if resolved == sql_store.default_db_url(index_dir) and not layout.sqlite_file.is_file():
            # Connecting would create an empty store.sqlite: opening to search never writes.
            raise IndexUnreadableError(
                f"The index in {index_dir} has lost its SQL store ({layout.sqlite_file.name}), which "
                "holds the passages' text. Build it again from your source: "
                f"{build_command(index_dir)} --rebuild"
            )
        index = cls(index_dir, resolved, manifest, use_gpu, files)
        try:
            index._load(required=True)
        except BaseException:
            index.close()
            raise
        return index

    @classmethod
    def _without_manifest(cls, index_dir: Path, db_url: str | None) -> IndexerError:
        """Why a folder without a readable index.json cannot be opened: there is no index; or its
        database still knows it, and `repair` writes the file again; or the rows are another
        folder's. Reads the database only where one exists, and writes nothing."""
        layout = IndexLayout(index_dir)
        explicit = db_url or sql_store.env_db_url()
        url = explicit or (sql_store.default_db_url(index_dir) if layout.sqlite_file.is_file() else None)
        info = cls._info_at(index_dir, url) if url is not None else None
        if info is None:
            if not layout.manifest.is_file():
                return _not_found(index_dir)
            return IndexUnreadableError(
                f"The index in {index_dir} has an unreadable {layout.manifest.name} and no rows to "
                f"recover it from. Build it again: {build_command(index_dir)} --rebuild")
        probe = cls(index_dir, url, None, use_gpu=False)
        probe.close()
        if not probe._owns(info.owner_path):
            return probe._owner_error(info.owner, info.owner_path)
        kind = "an unreadable" if layout.manifest.is_file() else "no"
        return IndexUnreadableError(
            f"The index in {index_dir} has {kind} {layout.manifest.name}, which names the index and "
            f"where its rows live. The database knows its index: write the file again with: "
            f"{repair_command(index_dir)}" + (" --db URL" if explicit else ""))

    @classmethod
    def _info_at(cls, index_dir: Path, url: str) -> IndexInfo | None:
        """The info row in the database at `url`, read without an owner check; None if none."""
        probe = cls(index_dir, url, None, use_gpu=False)
        try:
            with probe._read() as conn:
                if sql_store.schema_state(conn) != "current":
                    return None
                row = sql_store.read_info(conn)
                return IndexInfo.from_row(row) if row is not None else None
        except IndexerError:
            return None
        finally:
            probe.close()

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

    def _owns(self, owner_path: str) -> bool:
        """Whether rows recorded for `owner_path` are this folder's (the path as it was built)."""
        return owner_path in (str(self.index_dir.resolve()), str(self.index_dir))

    def _check_owner(self, owner: str, owner_path: str) -> None:
        if self.manifest is None or owner != self.manifest.index_id:
            raise self._owner_error(owner, owner_path)

    def _owner_error(self, owner: str, owner_path: str) -> IndexMismatchError:
        return IndexMismatchError(
            f"The database {sql_store.shown_url(self.db_url)} holds the index of another folder "
            f"({owner_path}, index id {owner}), not of {self.index_dir}. Point --db at another "
            "database or PostgreSQL schema (for example ?options=-csearch_path%3Dmy_schema), or use "
            "that folder. Nothing was changed."
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
                    raise damaged(self.index_dir, info, "a file of the committed build is missing") from None

    def _current_build_id(self) -> str | None:
        with self._read() as conn:
            try:
                return sql_store.read_build_id(conn)
            except (OperationalError, ProgrammingError):
                return None

    def _load_snapshot(self, info: IndexInfo) -> IndexSnapshot:
        """The build's files, verified. Damaged vectors raise; a damaged or missing BM25 part
        loads as None with the reason, so searches go on in dense mode and say why."""
        if self._files is not None:
            return self._files(self.index_dir, info)
        vectors = verified_vectors(self.index_dir, info, self.use_gpu, mapped=True)
        try:
            return IndexSnapshot(info.build_id, info, vectors, verified_bm25(self.index_dir, info, mapped=True))
        except (FileNotFoundError, IndexUnreadableError) as err:
            if self._current_build_id() != info.build_id:
                raise  # a build replaced it meanwhile: `_load` loads that one
            problem = str(err) if isinstance(err, IndexUnreadableError) else str(
                damaged(self.index_dir, info, "a file of the committed build is missing"))
            logger.warning("%s Searching in dense mode until then.", problem)
            return IndexSnapshot(info.build_id, info, vectors, None, problem)

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
        if spec.id != info.model and spec.fingerprint() != info.model_fingerprint:  # a copy elsewhere is the same model
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
        if dimension is not None:
            self.check_dimension(dimension, str(spec.path))

    def check_dimension(self, dimension: int, model: str = "The model given") -> None:
        """Refuse a model whose vectors have another dimension than the index's (all a loaded model,
        whose files cannot be fingerprinted, can be checked for)."""
        if dimension != self.info.dimension:
            named = model if model == "The model given" else f"The model in {model}"
            raise IndexMismatchError(
                f"{named} makes {dimension}-dimensional vectors, the index in {self.index_dir} holds "
                f"{self.info.dimension}-dimensional ones. Use the model it was built with, or rebuild: "
                f"{build_command(self.index_dir)} --rebuild"
            )

    def load_model(self, device: str | None = None):
        """The index's bi-encoder, checked against the index (files and dimension), computing as the
        index's vectors were computed (`IndexInfo.vector_encoding`)."""
        from indexer.embedding import embedding_dimension, load_bi_encoder

        spec = self.model_spec
        self.check_model(spec)
        model = load_bi_encoder(spec, device=device, encoding=self.info.vector_encoding)
        self.check_model(spec, embedding_dimension(model))
        return model

    def refresh(self) -> bool:
        """Load a build committed since the last load; True when the loaded build changed.

        Costs one small SQL read when nothing changed, so searchers call it before every query.
        A SQLite file replaced by a --rebuild (the damaged one set aside) is reopened: pooled
        connections would go on reading the old one.
        """
        identity = self._sqlite_identity()
        if identity != self._store_file:
            with self._lock:
                self._engine.dispose()
                self._engine = sql_store.make_engine(self.db_url)
                self._store_file = identity
                self._document_map, self._document_map_covers = None, None
                self._matches = FilterMatches()
                self._passage_columns = None
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
        return IndexStats.of(self.info)

    def build_progress(self) -> tuple[int, int] | None:
        """(passages committed, passages it will commit) of a build that is growing this index in
        chunks right now, whose committed part searches already see; None when none is running."""
        try:
            found = json.loads(self.layout.progress_file.read_text())
            done, total, pid = int(found["done"]), int(found["total"]), int(found["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        try:
            os.kill(pid, 0)  # the build's process: a file left by a killed build says nothing
        except ProcessLookupError:
            return None
        except PermissionError:
            pass  # alive, another user's
        return done, total

    def _sqlite_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the folder's own SQLite file; None for another database or none."""
        if self.db_url != sql_store.default_db_url(self.index_dir):
            return None
        try:
            found = self.layout.sqlite_file.stat()
        except OSError:
            return None
        return found.st_dev, found.st_ino

    def document_ids(self, passage_ids: Sequence[int]) -> dict[int, int]:
        """Passage id -> document row id; passages never stored are absent (`DocumentMap`: in
        memory, read once per base build and extended by the rows later commits added).

        The map of an index of `BACKGROUND_MAP_PASSAGES` or more is read in a thread: until it is
        in, each call asks SQL for its own ids (an IN list over the key: milliseconds), where the
        first search of a 10M-passage index waited for the whole map, 43 s read from SQL
        (BENCHMARKS.md, "Scale at 10,000,000 and 1,000,000 passages")."""
        if not len(passage_ids):
            return {}
        snap = self.snapshot()
        base = snap.info.vector_file
        known = self._document_map
        if (known is None or known.base != base) and snap.info.passages >= BACKGROUND_MAP_PASSAGES:
            self._load_document_map_in_background(base)
            with self._read() as conn:
                return sql_store.document_ids_of(conn, passage_ids)
        if known is None or known.base != base or not known.covers(passage_ids):
            with self._lock, self._read() as conn:
                known = self._document_map
                if known is None or known.base != base:
                    known = DocumentMap.load(conn, base)
                elif not known.covers(passage_ids):
                    known = known.extended(conn)
                self._document_map = known
        return known.lookup(passage_ids)

    def load_document_map(self) -> None:
        """Read the loaded build's passage-to-document map now, in this thread, for a caller that
        would rather wait once than have its first searches ask SQL (bench_scale times searches
        at rest this way). Without it, a large index reads the map in a thread on its first
        search (`document_ids`)."""
        snap = self.snapshot()
        with self._lock, self._read() as conn:
            self._current_document_map(conn, snap)

    def _load_document_map_in_background(self, base: str) -> None:
        """Start reading `base`'s document map in a thread, unless one already reads it; the map
        is kept if the loaded base is still `base` when it is in."""
        with self._lock:
            if self._document_map_loading == base:
                return
            self._document_map_loading = base

        def load() -> None:
            try:
                with self._read() as conn:
                    loaded = DocumentMap.load(conn, base)
                with self._lock:
                    current = self._document_map
                    if self.snapshot().info.vector_file == base and (current is None or current.base != base):
                        self._document_map = loaded
            except Exception:  # noqa: BLE001 -- the searches go on asking SQL; the next one tries again
                logger.exception("reading the passage-to-document map of %s failed", self.index_dir)
            finally:
                with self._lock:
                    if self._document_map_loading == base:
                        self._document_map_loading = None

        threading.Thread(target=load, name="semsearch-document-map", daemon=True).start()

    def matching_passages(self, flt: Filter, snapshot: IndexSnapshot | None = None) -> PassageSubset:
        """The live passages of `snapshot` (default: the loaded build) whose document satisfies the
        metadata filter `flt`; computed once per filter and build, then cached."""
        snap = snapshot or self.snapshot()
        with self._lock, self._read() as conn:
            known = self._current_document_map(conn, snap)
            return self._matches.subset(conn, flt, snap.build_id, snap.info.vector_file, known,
                                        snap.vectors.deleted)

    def metadata_fields(self, limit: int = 200) -> list[tuple[str, int]]:
        """(field, documents that have it) of the metadata fields the index holds, most common
        first, after the three every document has (`_id`, `_path`, `_type`)."""
        snap = self.snapshot()
        with self._read() as conn:
            found = sql_store.metadata_keys(conn, limit)
        everyone = snap.info.documents
        return [("_type", everyone), ("_path", everyone), ("_id", everyone)] + [f for f in found if f[0] not in RESERVED_FIELDS]

    def field_summary(self, field: str) -> FieldSummary:
        """What one field holds in the loaded build: its common values and numeric range."""
        snap = self.snapshot()
        with self._lock, self._read() as conn:
            known = self._current_document_map(conn, snap)
            return self._matches.summary(conn, field, snap.build_id, snap.info.vector_file, known, snap.vectors.deleted)

    def _current_document_map(self, conn: Connection, snap: IndexSnapshot) -> DocumentMap:
        """The passage -> document map, holding every passage of `snap`: read from SQL only when the
        base or the build changed since it last did (a new filter at 1M then skips a query)."""
        known = self._document_map
        if known is not None and known.base == snap.info.vector_file and self._document_map_covers == snap.build_id:
            return known
        if known is None or known.base != snap.info.vector_file:
            known = DocumentMap.load(conn, snap.info.vector_file)
        else:
            known = known.extended(conn)
        self._document_map, self._document_map_covers = known, snap.build_id
        return known

    def passages(self, passage_ids: Sequence[int]) -> dict[int, PassageRecord]:
        if not len(passage_ids):
            return {}
        with self._read() as conn:
            if self._passage_columns is None:
                self._passage_columns = sql_store.passage_columns(conn)
            checksums = "text_hash" in self._passage_columns
            locations = "section" in self._passage_columns
            try:
                rows = sql_store.passage_details(conn, passage_ids, checksums, locations)
            except ValueError as err:  # a zeroed or altered page inside a row's metadata JSON
                raise IndexUnreadableError(
                    f"The SQL store of {self.index_dir} is damaged: a stored document's metadata "
                    f"cannot be read ({err}). It holds the passages' text, so rebuild from your "
                    f"source: {build_command(self.index_dir)} --rebuild"
                ) from err
        if checksums:
            self._check_texts(rows)
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
                location=Location.from_columns(row.page_first, row.page_last, row.section) if locations else Location(),
                path=str(source_file(row.origin, row.source)) if row.origin else "",
            )
            for pid, row in rows.items()
        }

    def document(self, doc_id: str) -> DocumentRecord | None:
        """The committed document stored under `doc_id` and its passages; None when none is."""
        with self._read() as conn:
            row = sql_store.document_by_key(conn, doc_id)
            ids = [] if row is None else sql_store.document_passage_ids(conn, row.id)
        if row is None:
            return None
        found = self.passages(ids)
        return DocumentRecord(row.doc_key, row.title, row.text, dict(row.meta or {}), row.source,
                              tuple(found[pid] for pid in ids if pid in found))

    def _check_texts(self, rows: dict) -> None:
        """Refuse rows whose title or text is not what was written (their checksum differs):
        a hit must never show altered text as if it were the document's."""
        altered = sorted(pid for pid, row in rows.items()
                         if row.text_hash is not None and row.text_hash != passage_checksum(row.title, row.text))
        if altered:
            first = rows[altered[0]]
            more = f" and {len(altered) - 1} more" if len(altered) > 1 else ""
            raise IndexUnreadableError(
                f"The SQL store of {self.index_dir} holds altered text: passage {altered[0]} of "
                f"{first.doc_key!r}{more} no longer matches the checksum written with it. Repair "
                f"restores it from the document's stored text or its source: {repair_command(self.index_dir)}"
            )

    # --- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, rebuild: bool = False) -> Iterator[WriteTransaction]:
        """One build: locks held throughout, files written before the commit, stale files removed
        after it. Leaving the block normally commits; an exception rolls everything back."""
        with folder_lock(self.layout.lock_file):
            if rebuild:
                self._check_room_for_rebuild()
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
            self._passage_columns = None  # the build may have added columns
            if tx.result is not None:
                self._remove_stale_files(set(tx.result))

    def _settle_manifest(self, info: IndexInfo | None) -> None:
        """The manifest this build commits under, written once the database said it may proceed
        (before the first commit, so a first build killed after it still reads as an index).

        A missing, unreadable or recreated manifest beside rows that this folder owns is
        recovered from them: the database knows its owner. Rows of another folder are refused,
        and nothing is written. An explicit --db is recorded."""
        current = read_manifest(self.layout.manifest)
        manifest = current or Manifest.new(None)
        if info is not None and info.owner != manifest.index_id:
            if not self._owns(info.owner_path):
                self.manifest = manifest
                self._check_owner(info.owner, info.owner_path)  # raises: not our rows
            logger.warning("%s did not name the index its database holds; rewrote it from the database "
                           "(index id %s).", self.layout.manifest, info.owner)
            manifest = Manifest(info.owner, current.db_url if current else None,
                                current.has_password if current else False)
        if self._explicit_db is not None:
            manifest = manifest.with_db(self._explicit_db)
        if manifest != current:
            write_manifest(self.layout.manifest, manifest)
        self.manifest = manifest

    def _start(self, conn: Connection, rebuild: bool) -> WriteTransaction:
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
        self._settle_manifest(info)  # refuses another folder's rows, even with --rebuild
        if info is None and not rebuild and sql_store.count_documents(conn):
            raise IndexMismatchError(
                f"The database behind {self.index_dir} holds documents but no index info. "
                f"Pass --rebuild to start it afresh: {build_command(self.index_dir)} --rebuild"
            )
        session = sql_store.open_session(conn)
        if rebuild:
            sql_store.clear_rows(session)
        return WriteTransaction(self.layout, self.manifest.index_id, conn, session, None if rebuild else info,
                                replaces=info if rebuild else None)

    def _check_room_for_rebuild(self) -> None:
        """A --rebuild writes its rows and files beside the build it replaces, which readers keep
        using until the rebuild commits: the disk must hold both. Refused before anything is
        written when it cannot."""
        needed = folder_bytes(self.layout.root, skip={self.layout.uploads.name})
        free = free_bytes(self.layout.root)
        if needed > free:
            raise NotEnoughSpaceError(
                f"A --rebuild writes the new index beside the one it replaces, which stays searchable "
                f"until the new one is complete: that needs about {needed / 1e6:,.0f} MB free where "
                f"{self.index_dir} is, and {free / 1e6:,.0f} MB are. Free some space, or build into "
                "another --index folder (and delete this one)."
            )

    def _set_aside_damaged_sqlite(self) -> None:
        """--rebuild over a damaged SQLite file: keep it under another name, start a new one."""
        if self.db_url == sql_store.default_db_url(self.index_dir):
            sql_store.set_aside_if_damaged(self.db_url, self.layout.sqlite_file)

    def _remove_stale_files(self, keep: set[str]) -> None:
        """Delete vector files, BM25 folders and temp files that no committed row names.

        A searcher loads both files when it opens or refreshes, so it never reads a removed one.
        """
        for path in self.layout.stale_paths(keep):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


__all__ = [
    "BuildMeta",
    "WriteTransaction",
    "CommitResult",
    "DocumentRecord",
    "Index",
    "IndexInfo",
    "IndexSnapshot",
    "IndexStats",
    "PassageRecord",
]
