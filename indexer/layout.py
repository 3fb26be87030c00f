"""The names of everything inside an index folder, in one place.

    index.json            manifest: the index id, and which database holds the rows
    store.sqlite          rows, when the database is the default SQLite file
    vectors-<build>.faiss the base's vectors, or a delta segment's (a new file per build)
    bm25-<build>/         the base's BM25 index, or a delta segment's (a new folder per build)
    deleted-<build>.npy   ids deleted since the base that its segments still hold (indexer.store.segments)
    shards-<build>/       a segment split into shards by passage id, when the index is sharded (indexer.store.shards)
    uploads/              files added through the app
    .lock                 held (flock) by the build writing the folder
    .vectors-*.tmp, .bm25-*.tmp, .deleted-*.tmp, .shards-*.tmp   partial writes, removed by the next build
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MANIFEST = "index.json"
SQLITE_FILE = "store.sqlite"
LOCK_FILE = ".lock"
# Written by a build that commits in chunks, after each commit: what readers say while it runs.
PROGRESS_FILE = ".build-progress.json"
UPLOADS_DIR = "uploads"
VECTOR_PREFIX = "vectors-"
VECTOR_SUFFIX = ".faiss"
BM25_PREFIX = "bm25-"
DELETED_PREFIX = "deleted-"
DELETED_SUFFIX = ".npy"
SHARDS_PREFIX = "shards-"


@dataclass(frozen=True)
class IndexLayout:
    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def sqlite_file(self) -> Path:
        return self.root / SQLITE_FILE

    @property
    def lock_file(self) -> Path:
        return self.root / LOCK_FILE

    @property
    def progress_file(self) -> Path:
        return self.root / PROGRESS_FILE

    @property
    def uploads(self) -> Path:
        return self.root / UPLOADS_DIR

    @staticmethod
    def vector_name(build_id: str) -> str:
        return f"{VECTOR_PREFIX}{build_id}{VECTOR_SUFFIX}"

    @staticmethod
    def bm25_name(build_id: str) -> str:
        return f"{BM25_PREFIX}{build_id}"

    @staticmethod
    def deleted_name(build_id: str) -> str:
        return f"{DELETED_PREFIX}{build_id}{DELETED_SUFFIX}"

    def stale_paths(self, keep: set[str]) -> list[Path]:
        """Vector files, BM25 folders and temp files in the folder that `keep` does not name."""
        patterns = (
            f"{VECTOR_PREFIX}*{VECTOR_SUFFIX}",
            f"{BM25_PREFIX}*",
            f"{DELETED_PREFIX}*{DELETED_SUFFIX}",
            f".{VECTOR_PREFIX}*.tmp",
            f".{BM25_PREFIX}*.tmp",
            f".{DELETED_PREFIX}*.tmp",
            f"{SHARDS_PREFIX}*",
            f".{SHARDS_PREFIX}*.tmp",
        )
        found = {path for pattern in patterns for path in self.root.glob(pattern)}
        return sorted(path for path in found if path.name not in keep)
