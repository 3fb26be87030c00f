"""`index.json`: the index's id and where its rows live.

It is written when an index is created, before any row is committed, so a
first build killed after its commit still reads as an index. Passwords are
never written: pass `db_url` (or set SEMSEARCH_DB) to open such an index.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from indexer.store.sql_store import has_password, shown_url

FORMAT = 2


@dataclass(frozen=True)
class Manifest:
    index_id: str
    db_url: str | None  # None: SQLite inside the folder
    has_password: bool = False

    @classmethod
    def new(cls, db_url: str | None) -> Manifest:
        return cls(uuid.uuid4().hex, *_shown(db_url))

    def with_db(self, db_url: str | None) -> Manifest:
        return Manifest(self.index_id, *_shown(db_url))


def _shown(db_url: str | None) -> tuple[str | None, bool]:
    if db_url is None:
        return None, False
    return shown_url(db_url), has_password(db_url)


def read_manifest(path: Path) -> Manifest | None:
    """The manifest at `path`, or None when there is none or it predates index ids."""
    if not path.is_file():
        return None
    try:
        payload = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(payload, dict) or not payload.get("index_id"):
        return None
    return Manifest(str(payload["index_id"]), payload.get("db_url"), bool(payload.get("has_password")))


def write_manifest(path: Path, manifest: Manifest) -> None:
    payload = {
        "format": FORMAT,
        "index_id": manifest.index_id,
        "db_url": manifest.db_url,
        "has_password": manifest.has_password,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    tmp.replace(path)
