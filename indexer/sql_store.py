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

from sqlalchemy import Engine, create_engine, event, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
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


def index_info(session: Session) -> IndexInfoRow | None:
    return session.get(IndexInfoRow, 1)


def count_documents(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(DocumentRow)) or 0)


def count_passages(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(PassageRow)) or 0)


def passages_with_documents(session: Session, ids: list[int]) -> dict[int, PassageRow]:
    """Passage rows (with their document loaded) by id, in one query."""
    if not ids:
        return {}
    from sqlalchemy.orm import joinedload

    rows = session.scalars(
        select(PassageRow).where(PassageRow.id.in_(ids)).options(joinedload(PassageRow.document))
    ).all()
    return {row.id: row for row in rows}
