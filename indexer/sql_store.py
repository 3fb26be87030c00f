"""Where an index's SQL rows live and how to reach them.

The index folder holds a small manifest (`index.json`) naming its database, so
`Searcher(index_dir)` finds the rows of an index built on PostgreSQL as well as
the default SQLite file inside the folder. Passwords are never written there:
pass `db_url` (or set SEMSEARCH_DB) to open such an index.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from indexer.schema import Base, DocumentRow, IndexInfoRow, PassageRow

MANIFEST = "index.json"
SQLITE_FILE = "store.sqlite"


def default_db_url(index_dir: Path) -> str:
    return f"sqlite:///{(Path(index_dir) / SQLITE_FILE).resolve()}"


def manifest_path(index_dir: Path) -> Path:
    return Path(index_dir) / MANIFEST


def read_manifest(index_dir: Path) -> dict | None:
    path = manifest_path(index_dir)
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def write_manifest(index_dir: Path, db_url: str | None) -> None:
    shown = None if db_url is None else make_url(db_url).render_as_string(hide_password=True)
    payload = {"format": 1, "db_url": shown, "has_password": bool(db_url and make_url(db_url).password)}
    tmp = manifest_path(index_dir).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    tmp.replace(manifest_path(index_dir))


def resolve_db_url(index_dir: Path, db_url: str | None) -> str:
    """The URL given, else SEMSEARCH_DB, else the manifest's, else SQLite in the folder."""
    if db_url:
        return db_url
    env = os.environ.get("SEMSEARCH_DB")
    if env:
        return env
    manifest = read_manifest(index_dir)
    if manifest and manifest.get("db_url"):
        if manifest.get("has_password"):
            raise ValueError(
                f"The index in {index_dir} keeps its rows in {manifest['db_url']}, whose password "
                "is not stored. Pass db_url=... (or --db, or set SEMSEARCH_DB)."
            )
        return manifest["db_url"]
    return default_db_url(index_dir)


def _enable_sqlite_foreign_keys(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def make_engine(url: str) -> Engine:
    """An engine for any SQLAlchemy URL; SQLite gets foreign keys and WAL for concurrent readers."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise ValueError(
            f"Cannot parse database URL {url!r}. Use a SQLAlchemy URL such as "
            "sqlite:///path/store.sqlite or postgresql+psycopg://user@host:5432/dbname."
        ) from err
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", _enable_sqlite_foreign_keys)
        return engine
    return create_engine(url, pool_pre_ping=True)


def create_schema(engine: Engine) -> None:
    Base.metadata.create_all(engine)
    add_missing_columns(engine)


def add_missing_columns(engine: Engine) -> None:
    """Add nullable columns that newer versions put on existing tables (only `bm25_dir` so far).

    `create_all` creates missing tables but never alters existing ones; an index
    built before BM25 existed would otherwise fail on its first incremental build.
    """
    inspector = inspect(engine)
    for table in Base.metadata.sorted_tables:
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            if not column.nullable:
                raise RuntimeError(
                    f"Table {table.name} lacks the required column {column.name}; "
                    "rebuild the index with --rebuild."
                )
            kind = column.type.compile(dialect=engine.dialect)
            with engine.begin() as conn:
                conn.execute(text(f'ALTER TABLE {table.name} ADD COLUMN {column.name} {kind}'))


def index_info(session: Session) -> IndexInfoRow | None:
    return session.get(IndexInfoRow, 1)


def bm25_dir_of(session: Session) -> str | None:
    """The BM25 folder the committed rows point at; None for an index built before BM25.

    Such an index's info table may lack the column entirely until its next build.
    """
    try:
        return session.scalar(select(IndexInfoRow.bm25_dir).where(IndexInfoRow.id == 1))
    except (OperationalError, ProgrammingError):
        session.rollback()
        return None


def count_documents(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(DocumentRow)) or 0)


def count_passages(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(PassageRow)) or 0)


def passage_documents(session: Session, ids: list[int]) -> dict[int, int]:
    """Passage id -> document id, for grouping candidates by document before loading any text."""
    if not ids:
        return {}
    rows = session.execute(
        select(PassageRow.id, PassageRow.document_id).where(PassageRow.id.in_(ids))
    )
    return {pid: did for pid, did in rows}


def passage_details(session: Session, ids: list[int]) -> dict[int, Any]:
    """Passage id -> row of (text, offsets, document key, title, metadata, source), one query.

    Plain rows rather than ORM objects, and only for the passages that become
    hits: building a hundred ORM objects per query cost more than the search.
    """
    if not ids:
        return {}
    rows = session.execute(
        select(
            PassageRow.id,
            PassageRow.text,
            PassageRow.start_char,
            PassageRow.end_char,
            DocumentRow.doc_key,
            DocumentRow.title,
            DocumentRow.meta,
            DocumentRow.source,
        )
        .join(DocumentRow, PassageRow.document_id == DocumentRow.id)
        .where(PassageRow.id.in_(ids))
    )
    return {row.id: row for row in rows}
