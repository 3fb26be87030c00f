"""Where an index's rows live, and every query run on them: the one module that writes SQL.

`Index`, its `WriteTransaction` and its `DocumentMap` call the named functions
here; search, the UI and the app reach rows through `Index`. The SQLAlchemy
types the callers hold (a connection, a session, the errors they catch) are
re-exported here, so no other module imports SQLAlchemy.

Transactions: SQLite connections run with the driver's own transaction
handling off, and every transaction starts with an explicit BEGIN, so that a
build can start with BEGIN IMMEDIATE and hold SQLite's write lock from its
first read to its commit (SQLAlchemy's documented recipe for pysqlite).
On PostgreSQL a build holds a transaction-level advisory lock instead.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
import re
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import (
    ARRAY,
    Connection,
    Engine,
    any_,
    create_engine,
    delete,
    event,
    func,
    insert,
    inspect,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DatabaseError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from indexer import settings
from indexer.errors import IndexBusyError
from indexer.layout import SQLITE_FILE
from indexer.store.schema import (
    SCHEMA_FORMAT,
    Base,
    DocumentRow,
    IndexInfoRow,
    PassageRow,
    passage_checksum,
)

if TYPE_CHECKING:
    from indexer.sources.documents import Document, PassageSpan

__all__ = [
    "Connection", "DatabaseError", "Engine", "OperationalError", "ProgrammingError", "Session",
    "all_passage_ids", "clear_rows", "count_documents", "count_passages", "create_schema",
    "default_db_url", "delete_documents", "passage_text_blocks_of", "document_field_rows", "document_ids_after", "metadata_keys", "drop_schema", "has_text_checksums", "passage_columns", "insert_documents", "is_locked_error",
    "is_sqlite", "lock_database", "make_engine", "open_session", "passage_checksum_blocks", "passage_details",
    "passage_documents", "passage_text_blocks", "passage_texts", "read_build_id", "read_info",
    "restore_document", "schema_state", "set_aside_if_damaged", "set_text_hashes", "shown_url",
    "stored_document", "stored_document_rows", "write_info",
]

# Seconds a build waits for SQLite's write lock before reporting that another build holds it.
SQLITE_LOCK_WAIT_S = 2.0
logger = logging.getLogger(__name__)

_ID_CHUNK = 30_000  # bound the parameters of one IN (...) clause
# Metadata keys that a JSON path names safely in both databases (`document_field_rows`).
_PLAIN_KEY = re.compile(r"[^\x00-\x1f\"\\]+")


def default_db_url(index_dir: Path) -> str:
    return f"sqlite:///{(Path(index_dir) / SQLITE_FILE).resolve()}"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def shown_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def has_password(url: str) -> bool:
    return make_url(url).password is not None


def env_db_url() -> str | None:
    return settings.db_url()


def make_engine(url: str, for_build: bool = False) -> Engine:
    """An engine for any SQLAlchemy URL. SQLite gets WAL (readers never wait for a build),
    foreign keys, and BEGIN IMMEDIATE for builds."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise ValueError(
            f"Cannot parse database URL {url!r}. Use a SQLAlchemy URL such as "
            "sqlite:///path/store.sqlite or postgresql+psycopg://user@host:5432/dbname."
        ) from err
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)
    timeout = SQLITE_LOCK_WAIT_S if for_build else 30.0
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": timeout})
    begin = "BEGIN IMMEDIATE" if for_build else "BEGIN"

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:
        conn.exec_driver_sql(begin)

    return engine


def lock_database(conn: Connection, url: str) -> None:
    """Hold the database's build lock until the transaction ends; IndexBusyError if taken.

    SQLite: BEGIN IMMEDIATE already holds the write lock (see `make_engine`). PostgreSQL: a
    transaction-level advisory lock keyed by the schema, released when the build's
    transaction or connection ends, so a killed build never leaves it behind.
    """
    if is_sqlite(url):
        return
    got = conn.execute(
        text("SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.semsearch_build'))")
    ).scalar()
    if not got:
        raise IndexBusyError(
            f"Another build is writing the index tables in {shown_url(url)} (it holds their "
            "PostgreSQL advisory lock). Wait for it to finish and run this build again; the lock "
            "is released when that build ends, so there is nothing to remove."
        )


def is_locked_error(err: OperationalError) -> bool:
    return "database is locked" in str(err.orig) or "database is busy" in str(err.orig)


def is_damaged_error(err: DatabaseError) -> bool:
    message = str(err.orig).lower()
    return any(
        phrase in message
        for phrase in ("file is not a database", "malformed", "disk image", "file is encrypted")
    )


def schema_state(conn: Connection) -> str:
    """'missing' (no index tables), 'old' (tables of an earlier format) or 'current'."""
    inspector = inspect(conn)
    if not inspector.has_table(IndexInfoRow.__tablename__):
        return "missing"
    columns = {column["name"] for column in inspector.get_columns(IndexInfoRow.__tablename__)}
    if "format" not in columns:
        return "old"
    stored = conn.execute(select(IndexInfoRow.format).where(IndexInfoRow.id == 1)).scalar()
    return "current" if stored in (None, SCHEMA_FORMAT) else "old"


def create_schema(conn: Connection) -> None:
    Base.metadata.create_all(conn)
    table = IndexInfoRow.__table__
    info_columns = _info_columns(conn)
    if "layout" not in info_columns:  # a table of this format from before index types
        conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN layout JSON"))
    if "encoding" not in info_columns:  # from before encodings were recorded
        conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN encoding VARCHAR(32)"))
    present = passage_columns(conn)
    if "text_hash" not in present:  # passages of this format from before checksums
        conn.execute(text(f"ALTER TABLE {PassageRow.__tablename__} ADD COLUMN text_hash VARCHAR(16)"))
    for column, kind in LOCATION_COLUMNS.items():  # passages of this format from before locations
        if column not in present:
            conn.execute(text(f"ALTER TABLE {PassageRow.__tablename__} ADD COLUMN {column} {kind}"))
    if conn.dialect.name == "postgresql":
        _metadata_as_jsonb(conn)


def _metadata_as_jsonb(conn: Connection) -> None:
    """PostgreSQL: documents' metadata as JSONB with a GIN index (a table written before filters
    held JSON: converted in place, no rebuild)."""
    documents = DocumentRow.__tablename__
    kind = conn.execute(text(
        "SELECT data_type FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = :table AND column_name = 'metadata'"), {"table": documents}).scalar()
    if kind == "json":
        conn.execute(text(f"ALTER TABLE {documents} ALTER COLUMN metadata TYPE jsonb USING metadata::jsonb"))
    conn.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{documents}_metadata ON {documents} USING gin (metadata)"))


# Columns added to the passages table after its format was fixed, and their SQL types.
LOCATION_COLUMNS = {"page_first": "INTEGER", "page_last": "INTEGER", "section": "TEXT"}


def passage_columns(conn: Connection) -> frozenset[str]:
    """The columns the passages table has: an index built before checksums lacks `text_hash`,
    one built before locations lacks `LOCATION_COLUMNS`."""
    return frozenset(column["name"] for column in inspect(conn).get_columns(PassageRow.__tablename__))


def has_text_checksums(conn: Connection) -> bool:
    """Whether the passages table has its `text_hash` column (an index built since checksums)."""
    return "text_hash" in passage_columns(conn)


def _info_columns(conn: Connection) -> set[str]:
    return {column["name"] for column in inspect(conn).get_columns(IndexInfoRow.__tablename__)}


def drop_schema(conn: Connection) -> None:
    Base.metadata.drop_all(conn)


def read_info(conn: Connection) -> IndexInfoRow | None:
    """The info row; columns an older table lacks (`layout`, `encoding`) read as None."""
    table = IndexInfoRow.__table__
    present = _info_columns(conn)
    columns = [column for column in table.columns if column.name in present]
    row = conn.execute(select(*columns).where(table.c.id == 1)).mappings().first()
    return IndexInfoRow(**row) if row is not None else None


def read_build_id(conn: Connection) -> str | None:
    return conn.execute(select(IndexInfoRow.build_id).where(IndexInfoRow.id == 1)).scalar()


def count_documents(conn: Connection) -> int:
    return int(conn.scalar(select(func.count()).select_from(DocumentRow)) or 0)


def document_id_span(session: Session) -> int:
    """The largest document row id (0 for none): an upper bound on the documents stored, read from
    the primary key's index, where a count would walk every row."""
    return int(session.scalar(select(func.max(DocumentRow.id))) or 0)


def count_passages(conn: Connection) -> int:
    return int(conn.scalar(select(func.count()).select_from(PassageRow)) or 0)


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    ids = [int(i) for i in ids]
    for begin in range(0, len(ids), _ID_CHUNK):
        yield ids[begin : begin + _ID_CHUNK]


def passage_details(conn: Connection, ids: Sequence[int], checksums: bool = True,
                    locations: bool = True) -> dict[int, Any]:
    """Passage id -> row of (text, offsets, document key, title, metadata, source, the stored
    `text_hash` when `checksums`, and page_first, page_last, section when `locations`: a table
    from before them has no such columns), one query.

    Plain rows rather than ORM objects, and only for the passages that become
    hits: building a hundred ORM objects per query cost more than the search.
    """
    out: dict[int, Any] = {}
    for chunk in _chunks(ids):
        rows = conn.execute(
            select(
                PassageRow.id,
                PassageRow.text,
                PassageRow.start_char,
                PassageRow.end_char,
                DocumentRow.doc_key,
                DocumentRow.title,
                DocumentRow.meta.label("meta"),
                DocumentRow.source,
                DocumentRow.origin,
                *((PassageRow.text_hash,) if checksums else ()),
                *((PassageRow.page_first, PassageRow.page_last, PassageRow.section) if locations else ()),
            )
            .join(DocumentRow, PassageRow.document_id == DocumentRow.id)
            .where(PassageRow.id.in_(chunk))
        )
        out.update({row.id: row for row in rows})
    return out


def passage_documents(conn: Connection, after: int, limit: int) -> np.ndarray:
    """(passage id, document row id) of the first `limit` passages with an id above `after`, by
    id, as an (n, 2) int64 array."""
    rows = conn.execute(
        select(PassageRow.id, PassageRow.document_id).where(PassageRow.id > after)
        .order_by(PassageRow.id).limit(limit)
    ).all()
    # Flattened first: numpy probing each Row for array attributes costs an exception per row
    # (43 s for 1M rows, against 0.3 s this way).
    flat = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows))
    return flat.reshape(len(rows), 2)


def document_ids_of(conn: Connection, passage_ids: Sequence[int]) -> dict[int, int]:
    """Passage id -> document row id of the stored passages among `passage_ids` (a search's few
    hundred candidates: one IN list over the key)."""
    out: dict[int, int] = {}
    for chunk in _chunks(passage_ids):
        out.update((int(pid), int(did)) for pid, did in conn.execute(
            select(PassageRow.id, PassageRow.document_id).where(PassageRow.id.in_(chunk))))
    return out


def document_ids_after(conn: Connection, after: int) -> np.ndarray:
    """The row ids of the documents with an id above `after`, ascending (int64)."""
    ids = conn.execute(select(DocumentRow.id).where(DocumentRow.id > after).order_by(DocumentRow.id)).scalars().all()
    return np.asarray(ids, dtype=np.int64)


def document_field_rows(conn: Connection, field: str, after: int, limit: int,
                        upto: int | None = None) -> list[tuple[int, bool, Any]]:
    """(document row id, whether the field is present, its value) of the first `limit` documents
    with an id above `after` (and at most `upto`), by id. `field` is a top-level metadata key, or "_id" (the document's
    id) or "_path" (its source file). Values come decoded from JSON: str, int, float, bool, None,
    list or dict. The database's own JSON functions pick the field out (SQLite's json_type and
    ->, PostgreSQL's jsonb_typeof and ->), so no document's whole metadata is read."""
    if field in ("_id", "_path"):
        column = DocumentRow.doc_key if field == "_id" else DocumentRow.source
        rows = conn.execute(select(DocumentRow.id, column).where(*_id_range(after, upto))
                            .order_by(DocumentRow.id).limit(limit)).all()
        return [(int(row_id), True, value) for row_id, value in rows]
    if not _PLAIN_KEY.fullmatch(field):  # quotes, backslashes, NUL: read each document's metadata
        rows = conn.execute(select(DocumentRow.id, DocumentRow.meta).where(*_id_range(after, upto))
                            .order_by(DocumentRow.id).limit(limit)).all()
        return [(int(row_id), isinstance(meta, dict) and field in meta,
                 meta.get(field) if isinstance(meta, dict) else None) for row_id, meta in rows]
    if conn.dialect.name == "sqlite":
        # json_extract gives scalars as SQL values (no JSON to parse: 1M rows in 2 s, not 8), and
        # arrays and objects as JSON text; json_type tells booleans (1/0 in SQL) from numbers.
        path = '$."' + field + '"'
        kind, value = func.json_type(DocumentRow.meta, path), func.json_extract(DocumentRow.meta, path)
        rows = conn.execute(select(DocumentRow.id, kind, value).where(*_id_range(after, upto))
                            .order_by(DocumentRow.id).limit(limit)).all()
        return [(row_id, found is not None, _sqlite_json_value(found, raw)) for row_id, found, raw in rows]
    value = DocumentRow.meta.op("->")(field)
    rows = conn.execute(select(DocumentRow.id, func.jsonb_typeof(value), value).where(*_id_range(after, upto))
                        .order_by(DocumentRow.id).limit(limit)).all()
    return [(row_id, found is not None, raw) for row_id, found, raw in rows]


def _sqlite_json_value(kind: str | None, raw: Any) -> Any:
    if kind in ("array", "object"):
        return json.loads(raw)
    if kind in ("true", "false"):
        return kind == "true"
    return raw  # text, integer, real; None for null or missing


def metadata_keys(conn: Connection, limit: int = 200) -> list[tuple[str, int]]:
    """(key, documents that have it) of the top-level metadata keys, the most common first, at
    most `limit`: what a filter can name (json_each on SQLite, jsonb_object_keys on PostgreSQL)."""
    table = DocumentRow.__tablename__
    if conn.dialect.name == "sqlite":
        query = (f"SELECT j.key, count(*) AS n FROM {table}, json_each({table}.metadata) AS j "
                 "WHERE json_type(" + table + ".metadata) = 'object' GROUP BY j.key ORDER BY n DESC, j.key LIMIT :limit")
    else:
        query = (f"SELECT k, count(*) AS n FROM {table}, jsonb_object_keys(CASE WHEN jsonb_typeof(metadata) = "
                 "'object' THEN metadata ELSE '{}'::jsonb END) AS k GROUP BY k ORDER BY n DESC, k LIMIT :limit")
    return [(str(key), int(n)) for key, n in conn.execute(text(query), {"limit": limit})]


def _id_range(after: int, upto: int | None) -> list[Any]:
    return [DocumentRow.id > after] + ([DocumentRow.id <= upto] if upto is not None else [])


# --- what a build reads and writes, in its session ----------------------------------------------

# Keys or ids one query of a build asks for at most (`_among`).
_BUILD_IN_LIST = 8192


def _among(session: Session, column: Any, values: Sequence[Any]) -> Any:
    """`column IN values` with the values bound as one parameter: a JSON array that SQLite reads
    with json_each, an array PostgreSQL compares with = ANY, elsewhere a plain IN list. SQLAlchemy
    renders a plain IN list one parameter per value, in Python: planning each commit of a
    31k-passage build against the keys of its 30,000 documents took 3.4 s of the build's 11 s on
    an H100 machine's main thread (BENCHMARKS.md, bench_gpu-encode)."""
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        each = func.json_each(json.dumps(values)).table_valued("value")
        return column.in_(select(each.c.value))
    if dialect == "postgresql":
        return column == any_(literal(values, ARRAY(column.type)))
    return column.in_(values)


def open_session(conn: Connection) -> Session:
    """The ORM session a build stages its rows in, on its open transaction."""
    return Session(bind=conn, autoflush=False)


def clear_rows(session: Session) -> None:
    """Delete every passage and document (a --rebuild), in the build's transaction."""
    session.execute(delete(PassageRow))
    session.execute(delete(DocumentRow))
    session.flush()


def stored_document_rows(session: Session, keys: Sequence[str] | None,
                         origin: str | None) -> list[tuple[str, int, str, str, str]]:
    """(key, row id, content hash, origin, source) of every document, or of those whose key is in
    `keys` or whose origin is `origin`."""
    columns = (DocumentRow.doc_key, DocumentRow.id, DocumentRow.content_hash, DocumentRow.origin,
               DocumentRow.source)
    if keys is None and origin is None:
        return [tuple(row) for row in session.execute(select(*columns))]
    rows = [tuple(row) for row in session.execute(select(*columns).where(DocumentRow.origin == origin))] \
        if origin is not None else []
    wanted = sorted(set(keys or ()))
    for start in range(0, len(wanted), _BUILD_IN_LIST):
        rows += [tuple(row) for row in session.execute(
            select(*columns).where(_among(session, DocumentRow.doc_key, wanted[start:start + _BUILD_IN_LIST])))]
    return rows


def document_keys_of_origin(session: Session, origin: str, size: int = 65_536) -> Iterator[list[tuple[str, str]]]:
    """(key, source) of every document whose origin is `origin`, in pages of `size`, by row id."""
    last = -1
    while True:
        rows = session.execute(
            select(DocumentRow.id, DocumentRow.doc_key, DocumentRow.source)
            .where(DocumentRow.origin == origin, DocumentRow.id > last)
            .order_by(DocumentRow.id)
            .limit(size)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        yield [(row.doc_key, row.source) for row in rows]


def passage_text_blocks(session: Session, size: int = 4096) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
    """(passage ids, titles, texts) of every stored passage in blocks of `size`, by id."""
    last = -1
    while True:
        rows = session.execute(
            select(PassageRow.id, DocumentRow.title, PassageRow.text)
            .join(PassageRow.document)
            .where(PassageRow.id > last)
            .order_by(PassageRow.id)
            .limit(size)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        yield (np.asarray([r.id for r in rows], dtype=np.int64),
               [r.title for r in rows], [r.text for r in rows])


def passage_text_blocks_of(session: Session, ids: np.ndarray,
                           size: int = 4096) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
    """(passage ids, titles, texts) of the stored passages among `ids`, in blocks, by id."""
    ids = np.unique(np.asarray(ids, dtype=np.int64))
    step = max(1, min(size, _BUILD_IN_LIST))
    for start in range(0, len(ids), step):
        rows = session.execute(
            select(PassageRow.id, DocumentRow.title, PassageRow.text).join(PassageRow.document)
            .where(_among(session, PassageRow.id, ids[start:start + step].tolist())).order_by(PassageRow.id)
        ).all()
        if rows:
            yield (np.asarray([r.id for r in rows], dtype=np.int64), [r.title for r in rows], [r.text for r in rows])


def passage_texts(session: Session, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """Passage id -> (document title, passage text) for the ids still stored."""
    out: dict[int, tuple[str, str]] = {}
    ids = [int(i) for i in ids]
    for start in range(0, len(ids), _BUILD_IN_LIST):
        out.update((r.id, (r.title, r.text)) for r in session.execute(
            select(PassageRow.id, DocumentRow.title, PassageRow.text).join(PassageRow.document)
            .where(_among(session, PassageRow.id, ids[start:start + _BUILD_IN_LIST]))))
    return out


def delete_documents(session: Session, row_ids: Sequence[int]) -> np.ndarray:
    """Delete these documents and their passages; the ids of the passages deleted."""
    if not row_ids:
        return np.empty(0, dtype=np.int64)
    removed = np.fromiter(
        session.scalars(select(PassageRow.id).where(_among(session, PassageRow.document_id, row_ids))), dtype=np.int64)
    session.execute(delete(PassageRow).where(_among(session, PassageRow.document_id, row_ids)))
    session.execute(delete(DocumentRow).where(_among(session, DocumentRow.id, row_ids)))
    session.flush()
    return removed


# Documents whose rows are inserted together (`insert_documents`).
INSERT_BATCH = 2_000


def insert_documents(session: Session, docs: Sequence[Document], origin: str,
                     passages: Sequence[Sequence[PassageSpan]],
                     keep_texts: bool = True) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Insert the documents and their passages; the new passage ids (which become the FAISS and
    BM25 ids) and, with `keep_texts`, the (title, text) pair of each passage, in order.

    Rows go in `INSERT_BATCH` documents at a time, with no ORM object per row: the unit of work
    built and tracked about 20,000 objects per 13,500 passages, 4.9 s of a build's 8.3 s of
    commits on this 2-core machine, and the ORM objects kept until the commit held about 8 KB a
    passage (issue 31). On SQLite and PostgreSQL each batch's ids are taken first, as the
    database would give them (`_reserved_ids`), and the rows go in as one executemany: SQLite ran
    an INSERT ... RETURNING row by row (45,000 statements for a 31k-passage build, 2.2 s of its
    interpreter time). Elsewhere they go in as INSERT ... RETURNING id (SQLAlchemy's bulk insert,
    ids in the order of the rows). The ids gather in a C array, not as Python ints (about 600
    bytes a passage kept over a commit of 1M).
    """
    now = dt.datetime.now(dt.UTC)
    ids = array("q")
    titled: list[tuple[str, str]] = []
    for start in range(0, len(docs), INSERT_BATCH):
        batch = docs[start:start + INSERT_BATCH]
        if not batch:
            continue
        doc_rows = [_document_values(doc, origin, now) for doc in batch]
        doc_ids = _inserted(session, DocumentRow, DOCUMENT_COLUMNS, doc_rows)
        rows = [row for doc, spans, doc_id in zip(batch, passages[start:start + INSERT_BATCH], doc_ids, strict=True)
                for row in _passage_values(doc, spans, doc_id, titled if keep_texts else None)]
        if rows:
            ids.extend(_inserted(session, PassageRow, PASSAGE_COLUMNS, rows))
    return np.frombuffer(ids, dtype=np.int64).copy(), titled


# The columns of a row as `_document_values` and `_passage_values` give them, in order.
DOCUMENT_COLUMNS = ("doc_key", "title", "origin", "source", "text", "content_hash", "metadata", "indexed_at")
PASSAGE_COLUMNS = ("document_id", "ordinal", "start_char", "end_char", "text", "text_hash", "page_first",
                   "page_last", "section")
# The DB-API placeholder of each parameter style that takes parameters by position.
_PLACEHOLDERS = {"qmark": "?", "format": "%s", "pyformat": "%s"}


def _inserted(session: Session, table: type[DocumentRow] | type[PassageRow], names: Sequence[str],
              rows: list[tuple[Any, ...]]) -> Sequence[int]:
    """Insert `rows` (tuples of the columns `names`) into `table`; their ids, in order.

    Where the ids are reserved (SQLite, PostgreSQL), the rows go to the driver's own executemany,
    each value converted by its column type's own bind processor (JSON, dates), taken once per
    insert: SQLAlchemy's per-row handling of an executemany's parameters was about 2 s of an H200
    build's 3.1 s of SQL rows for 31k passages (BENCHMARKS.md, bench_gpu-encode). Elsewhere, Core's
    INSERT ... RETURNING (not the ORM's bulk insert: its per-row bookkeeping was a third of the time)."""
    dialect = session.get_bind().dialect
    placeholder = _PLACEHOLDERS.get(dialect.paramstyle)
    columns = table.__table__.c
    reserved = _reserved_ids(session, table, len(rows)) if placeholder else None
    if reserved is None:
        return session.connection().execute(
            insert(table.__table__).returning(columns.id, sort_by_parameter_order=True),
            [dict(zip(names, row, strict=True)) for row in rows]).scalars().all()
    convert = [(at, process) for at, name in enumerate(names)
               if (process := columns[name].type.dialect_impl(dialect).bind_processor(dialect)) is not None]
    if convert:
        rows = [tuple(row) for row in rows]
        for at, process in convert:
            rows = [row[:at] + (process(row[at]),) + row[at + 1:] for row in rows]
    quote = dialect.identifier_preparer.quote
    statement = (f"INSERT INTO {quote(table.__tablename__)} ({', '.join(map(quote, ('id', *names)))}) "
                 f"VALUES ({', '.join([placeholder] * (len(names) + 1))})")
    session.connection().exec_driver_sql(statement, [(row_id, *row) for row_id, row in zip(reserved, rows, strict=True)])
    return reserved


def _reserved_ids(session: Session, table: type[DocumentRow] | type[PassageRow], count: int) -> Sequence[int] | None:
    """`count` new ids of `table`, as the database would give them, for a build that holds the
    index's write lock: SQLite's AUTOINCREMENT (past the largest id ever given, which
    `sqlite_sequence` keeps, so an id is never reused), PostgreSQL's sequence (`nextval`); None
    for another database (the caller inserts with RETURNING)."""
    name = session.get_bind().dialect.name
    if name == "sqlite":
        largest = session.execute(select(func.max(table.id))).scalar() or 0
        given = session.execute(text("SELECT seq FROM sqlite_sequence WHERE name = :name"),
                                {"name": table.__tablename__}).scalar() if _has_sqlite_sequence(session) else None
        first = max(largest, given or 0) + 1
        return range(first, first + count)
    if name == "postgresql":
        return session.execute(text("SELECT nextval(pg_get_serial_sequence(:name, 'id')) FROM generate_series(1, :n)"),
                               {"name": table.__tablename__, "n": count}).scalars().all()
    return None


def _has_sqlite_sequence(session: Session) -> bool:
    return session.execute(text("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'")).first() is not None


def _document_values(doc: Document, origin: str, now: dt.datetime) -> tuple[Any, ...]:
    """A document's row (`DOCUMENT_COLUMNS`)."""
    return (doc.doc_id, doc.title, origin, doc.source, doc.text, doc.content_hash(), doc.metadata, now)


def _passage_values(doc: Document, spans: Sequence[PassageSpan], document_id: int,
                    titled: list[tuple[str, str]] | None) -> list[tuple[Any, ...]]:
    """A row per span of `doc` (`PASSAGE_COLUMNS`); appends (title, text) of each passage to `titled`."""
    rows = []
    for span in spans:
        body = doc.text[span.start_char : span.end_char]
        where = doc.outline.locate(span.start_char, span.end_char)
        rows.append((document_id, span.ordinal, span.start_char, span.end_char, body,
                     passage_checksum(doc.title, body), where.page_first, where.page_last, where.section_path or None))
        if titled is not None:
            titled.append((doc.title, body))
    return rows


def all_passage_ids(session: Session) -> np.ndarray:
    return np.fromiter(session.scalars(select(PassageRow.id).order_by(PassageRow.id)), dtype=np.int64)


def write_info(session: Session, values: dict[str, Any]) -> IndexInfoRow:
    """Create or update the info row with `values`, in the build's transaction; the row."""
    row = session.get(IndexInfoRow, 1)
    if row is None:
        row = IndexInfoRow(id=1, **values)
        session.add(row)
    else:
        for key, value in values.items():
            setattr(row, key, value)
    session.flush()
    return row


# --- checking and restoring stored text (repair) ------------------------------------------------


def passage_checksum_blocks(session: Session, size: int = 4096) -> Iterator[list[Any]]:
    """Rows of (id, document_id, title, text, text_hash) of every passage, in blocks, by id."""
    last = -1
    while True:
        rows = session.execute(
            select(PassageRow.id, PassageRow.document_id, DocumentRow.title, PassageRow.text, PassageRow.text_hash)
            .join(PassageRow.document).where(PassageRow.id > last).order_by(PassageRow.id).limit(size)
        ).all()
        if not rows:
            return
        last = rows[-1].id
        yield rows


def set_text_hashes(session: Session, hashes: dict[int, str]) -> None:
    """Write the checksums of passages that had none."""
    for passage_id, digest in hashes.items():
        session.execute(update(PassageRow).where(PassageRow.id == passage_id).values(text_hash=digest))


def stored_document(session: Session, document_id: int) -> Any:
    """(doc_key, title, text, meta, content_hash, origin, source) of one document row."""
    return session.execute(
        select(DocumentRow.doc_key, DocumentRow.title, DocumentRow.text, DocumentRow.meta.label("meta"),
               DocumentRow.content_hash, DocumentRow.origin, DocumentRow.source)
        .where(DocumentRow.id == document_id)
    ).one()


def document_by_key(conn: Connection, key: str) -> Any:
    """(row id, doc_key, title, text, meta, source) of the document stored under `key`, or None."""
    return conn.execute(
        select(DocumentRow.id, DocumentRow.doc_key, DocumentRow.title, DocumentRow.text,
               DocumentRow.meta.label("meta"), DocumentRow.source)
        .where(DocumentRow.doc_key == key)
    ).first()


def document_passage_ids(conn: Connection, document_id: int) -> list[int]:
    """The ids of one document's passages, in their order within it."""
    return list(conn.execute(select(PassageRow.id).where(PassageRow.document_id == document_id)
                             .order_by(PassageRow.ordinal)).scalars())


def restore_document(session: Session, document_id: int, title: str, text_: str, meta: dict[str, Any]) -> int:
    """Write a document's title, text and metadata back, and each of its passages' text (cut from
    it at the stored offsets) with its checksum; the number of passages rewritten."""
    session.execute(update(DocumentRow).where(DocumentRow.id == document_id)
                    .values(title=title, text=text_, meta=meta))
    spans = session.execute(select(PassageRow.id, PassageRow.start_char, PassageRow.end_char)
                            .where(PassageRow.document_id == document_id)).all()
    for passage_id, start, end in spans:
        body = text_[start:end]
        session.execute(update(PassageRow).where(PassageRow.id == passage_id)
                        .values(text=body, text_hash=passage_checksum(title, body)))
    session.flush()
    return len(spans)


def set_aside_if_damaged(url: str, path: Path) -> None:
    """Rename a damaged SQLite file (and its WAL files) to `<name>.damaged-<time>`; else nothing.

    Damage anywhere in the file counts, not only in its schema: `PRAGMA quick_check` reads
    every page (seconds for a large file, paid only by a --rebuild)."""
    if not path.is_file():
        return
    probe = make_engine(url)
    try:
        with probe.connect() as conn:
            schema_state(conn)
            problems = [row[0] for row in conn.exec_driver_sql("PRAGMA quick_check").fetchall()]
        if problems == ["ok"]:
            return
    except DatabaseError as err:
        if not is_damaged_error(err):
            return
    finally:
        probe.dispose()
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    for suffix in ("", "-wal", "-shm"):
        part = path.with_name(path.name + suffix)
        if part.exists():
            part.rename(path.with_name(f"{path.name}{suffix}.damaged-{stamp}"))
    logger.warning("the SQL store %s was damaged; kept it as %s.damaged-%s", path, path.name, stamp)
