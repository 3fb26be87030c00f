"""Collections: the indexes one service serves, by name (`python -m search.api --root DIR`).

Every folder under the root that holds an index (`index.json`) or a collection made over HTTP
(`collection.json`, written by PUT /collections/{name} before its first document) is a
collection named after the folder. `--index DIR` serves one, named after its folder, and cannot
create or delete any. A collection folder made by `python -m indexer build --index ROOT/NAME`
while the service runs is found the next time a request names it or lists them.

Deleting a collection first turns new requests away (404), then waits for the requests in
flight to finish, then closes it and removes its folder.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from indexer.build.collections import (
    COLLECTION_NAME_RULE,
    SETTINGS_FILE,
    CollectionSettings,
    is_collection,
    is_collection_name,
)
from search.api_errors import ApiError
from search.shared_models import SharedModels

logger = logging.getLogger(__name__)

__all__ = ["SETTINGS_FILE", "Collection", "CollectionSettings", "Collections", "check_name", "is_collection"]

# How long DELETE /collections/{name} waits for the requests in flight before answering 503.
DRAIN_SECONDS = 60.0


def check_name(name: str) -> str:
    """`name` if it can name a collection folder; else a 400 that gives the rule."""
    if not is_collection_name(name):
        raise ApiError(400, "invalid_collection_name", f"{name[:80]!r} cannot name a collection: {COLLECTION_NAME_RULE}.")
    return name


class Collection:
    """One served collection: its folder, settings and Service, the requests using it, and the
    lock that queues this process's writes to it (the indexer's own locks guard against others)."""

    def __init__(self, name: str, folder: Path, settings: CollectionSettings, service: Any) -> None:
        self.name, self.folder, self.settings, self.service = name, folder, settings, service
        self.write_lock = threading.Lock()
        self._users = 0
        self._idle = threading.Condition()
        self.closing = False

    @contextlib.contextmanager
    def use(self) -> Iterator[Collection]:
        """Count a request in flight; a collection being deleted turns it away (404)."""
        with self._idle:
            if self.closing:
                raise gone(self.name)
            self._users += 1
        try:
            yield self
        finally:
            with self._idle:
                self._users -= 1
                self._idle.notify_all()

    def drain(self, timeout: float) -> bool:
        """Wait until no request uses the collection; False if some still do after `timeout` s."""
        with self._idle:
            return self._idle.wait_for(lambda: self._users == 0, timeout)


def gone(name: str) -> ApiError:
    return ApiError(404, "no_collection", f"There is no collection {name!r}. GET /collections lists them; "
                    "PUT /collections/{name} creates one.")


class Collections:
    """The collections of one service. `make_service(folder, settings)` opens a collection's
    Service (sharing the reranker and the models); `root` None serves `single` alone."""

    def __init__(self, root: Path | None, single: Path | None,
                 make_service: Callable[[Path, CollectionSettings], Any], models: SharedModels) -> None:
        if (root is None) == (single is None):
            raise ValueError("give either root (a folder of collections) or single (one index folder)")
        self.root, self.make_service = root, make_service
        self.models = models  # the bi-encoders, loaded once per distinct model for every collection
        self._lock = threading.RLock()
        self._all: dict[str, Collection] = {}
        if single is not None:
            self._add(single.name, single, CollectionSettings.load(single) if single.is_dir() else CollectionSettings())

    @property
    def single(self) -> Collection | None:
        """The one collection of `--index DIR`; None with --root."""
        return next(iter(self._all.values())) if self.root is None else None

    def _add(self, name: str, folder: Path, settings: CollectionSettings) -> Collection:
        collection = Collection(name, folder, settings, self.make_service(folder, settings))
        self._all[name] = collection
        return collection

    def scan(self) -> list[Collection]:
        """Every collection, adding folders that became collections since the last scan."""
        with self._lock:
            if self.root is not None and self.root.is_dir():
                for folder in sorted(self.root.iterdir()):
                    if folder.name not in self._all and is_collection_name(folder.name) and is_collection(folder):
                        try:
                            self._add(folder.name, folder, CollectionSettings.load(folder))
                        except ValueError as err:
                            logger.warning("Not serving %s: %s", folder, err)
            return sorted((c for c in self._all.values() if not c.closing), key=lambda c: c.name)

    def get(self, name: str) -> Collection:
        """The collection `name` (404 when there is none, 400 for a name no folder can have)."""
        with self._lock:
            found = self._all.get(name)
        if found is None:
            check_name(name)
            found = next((c for c in self.scan() if c.name == name), None)
        if found is None or found.closing:
            raise gone(name)
        return found

    def create(self, name: str, settings: CollectionSettings) -> tuple[Collection, bool]:
        """(the collection, whether it was made now); a 409 when it exists with other settings."""
        if self.root is None:
            raise single_index()
        check_name(name)
        with self._lock:
            existing = next((c for c in self.scan() if c.name == name), None)
            if existing is not None:
                if existing.settings != settings:
                    raise ApiError(409, "collection_exists", f"Collection {name!r} exists with other settings; "
                                   "DELETE it first to create it again, or PUT the same settings.")
                return existing, False
            folder = self.root / name
            if folder.exists():
                raise ApiError(409, "collection_exists", f"{name!r} is a folder under the root that is not "
                               "a collection; choose another name, or move that folder away.")
            folder.mkdir(parents=True)
            settings.save(folder)
            return self._add(name, folder, settings), True

    def remove(self, name: str, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Turn new requests away, wait for those in flight, close, and delete the folder."""
        if self.root is None:
            raise single_index()
        collection = self.get(name)
        with collection._idle:
            collection.closing = True
        if not collection.drain(drain_seconds):
            collection.closing = False
            raise ApiError(503, "collection_busy", f"Requests to {name!r} did not finish within {drain_seconds:.0f} s; "
                           "nothing was deleted. Try again.", {"Retry-After": "5"})
        with collection.write_lock:
            collection.service.close()
            shutil.rmtree(collection.folder, ignore_errors=True)
        with self._lock:
            self._all.pop(name, None)

    def close(self) -> None:
        for collection in list(self._all.values()):
            collection.service.close()


def single_index() -> ApiError:
    return ApiError(409, "single_index", "This service serves one index (--index DIR): it cannot create or "
                    "delete collections. Start it with --root DIR to serve a folder of collections.")
