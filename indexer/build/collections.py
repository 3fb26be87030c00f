"""A folder of indexes, each one a collection named after its folder.

The HTTP service (`python -m search.api --root DIR`) and the app (SEMSEARCH_ROOT) read the same
folder the same way, here: a collection is a folder under the root whose name follows
`COLLECTION_NAME_RULE` and that holds an index (`index.json`) or a collection's settings
(`collection.json`, written when a collection is created before its first document).
`CollectionSettings` says how such a collection is built; an index built by
`python -m indexer build --index ROOT/NAME` has none, and takes the defaults.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from indexer.layout import MANIFEST
from indexer.store.ann import KINDS, VectorIndexConfig

# A collection name: a folder under the root. Letters, digits, '-' and '_' only, so that no name
# is a path ('..', '/'), a hidden file or a name that differs by case on one disk only.
COLLECTION_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
COLLECTION_NAME_RULE = ("a collection name is 1 to 64 letters, digits, '-' or '_', starting with a letter "
                        "or digit (for example 'support-en')")
SETTINGS_FILE = "collection.json"
_NAME = re.compile(COLLECTION_NAME)


def is_collection_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name))


def is_collection(folder: Path) -> bool:
    return folder.is_dir() and ((folder / MANIFEST).is_file() or (folder / SETTINGS_FILE).is_file())


def list_collections(root: Path) -> list[Path]:
    """The collection folders directly under `root`, by name; none when `root` is not a folder."""
    if not root.is_dir():
        return []
    return sorted(folder for folder in root.iterdir() if is_collection_name(folder.name) and is_collection(folder))


@dataclass(frozen=True)
class CollectionSettings:
    """How a collection is built: its model (None: the default), FAISS index type (None: auto)
    and database URL (None: SQLite in its folder). Kept in `collection.json`, readable by its
    owner only, since a database URL may hold a password."""

    model: str | None = None
    index_type: str | None = None
    db_url: str | None = None

    def __post_init__(self) -> None:
        if self.index_type is not None and self.index_type not in KINDS:
            raise ValueError(f"Unknown index_type {self.index_type!r}. Valid: {', '.join(KINDS)}.")

    @property
    def vector_index(self) -> VectorIndexConfig | None:
        return None if self.index_type is None else VectorIndexConfig(kind=self.index_type)

    def save(self, folder: Path) -> None:
        path = folder / SETTINGS_FILE
        tmp = path.with_name(f".{SETTINGS_FILE}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(self), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    @classmethod
    def load(cls, folder: Path) -> CollectionSettings:
        """The folder's settings; the defaults for an index built by `python -m indexer build`."""
        try:
            found = json.loads((folder / SETTINGS_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as err:
            raise ValueError(f"{folder / SETTINGS_FILE} cannot be read ({err}); fix or delete it.") from err
        return cls(**{key: found.get(key) for key in ("model", "index_type", "db_url")})
