"""The service behind the HTTP API: its configuration (`ApiConfig`) and one `Service` per
collection, which opens the collection's Searcher when its index exists, serves it, and watches
for newer builds. search/api.py assembles the FastAPI app over them."""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from indexer import settings
from indexer.errors import IndexerError, IndexNotFoundError
from indexer.model_spec import ModelSpec
from indexer.store.records import SnapshotLoader
from indexer.store.sql_store import shown_url
from search.api_errors import (
    ApiError,
    redact,
)
from search.hits import SearchResult
from search.rerank import Reranker, RerankerChoice, resolve_reranker
from search.searcher import Searcher
from search.shared_models import SharedModels

logger = logging.getLogger(__name__)

# How long a write waits for another build of its collection to release the lock (then 503).
DEFAULT_WRITE_WAIT_S = 10.0


@dataclass(frozen=True)
class ApiConfig:
    """How the service runs. `rerank_model` None means SEMSEARCH_RERANKER, else the shipped
    reranker; "none" turns reranking off. `rerank` is the default for a request that does not
    say, decided by `resolve_reranker` when None. `similarity_model` serves /similarity while no
    index is open (None: the default bi-encoder); once one is, its own model does.
    `poll_seconds` is how often a service without an index looks for one. `cors_origins` are the
    web origins whose pages may call the API from a browser (CORS); none by default.
    `open_in_background`: the server listens at once and loads the reranker, the index and its
    model in a background thread, answering 503 with Retry-After ("loading") meanwhile, instead of
    refusing connections until they have loaded (`python -m search.api` does; `--load-first` not).
    `api_keys`: the keys file (`search.api_keys`); None lets every request in.
    `root` (instead of `index_dir`): serve every collection under it (`search.api_collections`).
    `default_model`: the model of a collection created without one (None: all-MiniLM-L6-v2).
    `write_wait_seconds`: how long a write waits for another build's lock before a 503."""

    index_dir: Path | None = None
    db_url: str | None = None
    rerank_model: str | None = None
    rerank: bool | None = None
    similarity_model: str | None = None
    poll_seconds: float = 2.0
    search_threads: int = 1
    cors_origins: tuple[str, ...] = ()
    open_in_background: bool = False
    api_keys: str | None = None
    root: Path | None = None
    default_model: str | None = None
    write_wait_seconds: float = DEFAULT_WRITE_WAIT_S

    def __post_init__(self) -> None:
        if (self.index_dir is None) == (self.root is None):
            raise ValueError("Give either index_dir (--index DIR, one index) or root (--root DIR, a folder of "
                             f"collections); got index_dir={self.index_dir} and root={self.root}.")
        for name in ("index_dir", "root"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        if not (math.isfinite(self.write_wait_seconds) and self.write_wait_seconds >= 0):
            raise ValueError(f"write_wait_seconds ({self.write_wait_seconds}) must be 0 or more seconds.")
        if self.api_keys is not None:
            object.__setattr__(self, "api_keys", str(self.api_keys))
        object.__setattr__(self, "cors_origins", tuple(self.cors_origins))
        for origin in self.cors_origins:
            if origin != "*" and not re.fullmatch(r"https?://[^/\s]+", origin):
                raise ValueError(f"CORS origin {origin!r} is not an origin; give scheme and host (and port), "
                                 "e.g. https://intranet.example.org or http://localhost:3000, with no path.")
        if not (math.isfinite(self.poll_seconds) and self.poll_seconds > 0):
            raise ValueError(f"poll_seconds ({self.poll_seconds}) must be a positive number of seconds.")
        if self.search_threads < 1:
            raise ValueError(f"search_threads ({self.search_threads}) must be at least 1.")

    def to_json(self) -> str:
        paths = {name: None if getattr(self, name) is None else str(getattr(self, name)) for name in ("index_dir", "root")}
        return json.dumps({**dataclasses.asdict(self), **paths})

    @classmethod
    def from_json(cls, text: str) -> ApiConfig:
        return cls(**json.loads(text))


def reranker_setting(config: ApiConfig) -> str | None:
    """--rerank-model, else SEMSEARCH_RERANKER (as the app reads it), else None for the shipped one."""
    if config.rerank_model is not None:
        return config.rerank_model
    return settings.reranker()


# --- the service: one Searcher per worker, opened when the index exists ------------------------


class Service:
    """The Searcher a worker answers from, and how it came to be (or why it is not there yet).

    A service started before its index exists answers 503 and looks for a committed build every
    `poll_seconds` in a background thread, then loads it: no restart, and no request ever waits
    for the model to load.
    """

    def __init__(self, config: ApiConfig, choice: RerankerChoice, reranker: Reranker | None) -> None:
        self.config = config
        self.choice = choice
        self.reranker = reranker
        self._searcher: Searcher | None = None
        self._model_label = ""
        self._problem: Exception | None = None
        self._failed: tuple[str, Exception] | None = None  # (build id, why) of a search that could not be answered
        self._open_lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        self._opening = False  # the background open of `open_in_background` is running
        self.limiter: anyio.CapacityLimiter | None = None  # made in the event loop, at startup
        # Called with every search's result (the metrics observe its stage timings).
        self.searched: Callable[[SearchResult], None] = lambda result: None
        # Where the reranker comes from when it loads in the background: one load for every collection.
        self.reranker_source: Callable[[], Reranker | None] = choice.load
        self.models: SharedModels | None = None  # the service's models, shared by its collections
        # Where the Searcher gets each build's vectors and BM25: None, the index's files; a sharded
        # service's router, its shards (`indexer.store.shards.sharded_files`).
        self.files: SnapshotLoader | None = None

    @classmethod
    def start(cls, config: ApiConfig) -> Service:
        """Decide on the reranker (`resolve_reranker`, the CLI's and the app's rule) and load it, now
        or, with `open_in_background`, in `open_in_background` (a bad setting still fails here)."""
        choice = resolve_reranker(config.rerank, reranker_setting(config))
        return cls(config, choice, None if config.open_in_background else choice.load())

    @property
    def opening(self) -> bool:
        return self._opening

    def open_in_background(self) -> None:
        """Load the reranker and open the index in a thread while the server already answers (503,
        "loading", until done); then look for the index as `watch` does when it is not there yet."""
        self._opening = True

        def run() -> None:
            try:
                if self.reranker is None:
                    self.reranker = self.reranker_source()
            except (OSError, ValueError) as err:  # the reranker folder: said by /health and each search
                logger.error("The reranker cannot be loaded: %s", err)
                self._problem = err
                self._opening = False
                return
            opened = self.try_open()
            self._opening = False
            if self._stop.is_set():  # the server stopped while this loaded: release what it opened
                self.close()
                return
            if opened is None:
                if isinstance(self._problem, IndexNotFoundError):
                    logger.warning("%s The service answers 503 until then.", self._problem)
                self.watch()

        threading.Thread(target=run, name="semsearch-open", daemon=True).start()

    def public(self, text: str) -> str:
        """`text` without the paths and the database URL this server runs with (`redact`): answers
        name "<index>", "<database>" and "<reranker>" instead; the log keeps them."""
        named: dict[str, str] = {}
        for folder, stand_in in ((self.config.index_dir, "<index>"), (self.choice.path, "<reranker>")):
            if folder is not None:
                for shown in {str(folder), str(Path(folder).resolve()), str(Path(folder).expanduser())}:
                    named[shown] = stand_in
        for url in (self.config.db_url, settings.db_url()):
            if url:
                named[url] = "<database>"
                named[shown_url(url)] = "<database>"
        return redact(text, named)

    @property
    def ready(self) -> bool:
        return self._searcher is not None

    def failed(self, searcher: Searcher, err: Exception) -> None:
        """A search of `searcher` could not be answered (a damaged SQL store): /health says so
        until a search succeeds or another build is served."""
        try:
            build_id = searcher.stats().build_id
        except IndexerError:
            build_id = ""
        self._failed = (build_id, err)

    def answered(self) -> None:
        self._failed = None

    def failure(self) -> Exception | None:
        """Why searches fail now: the last failure, while the build it happened on is still served."""
        failed, searcher = self._failed, self._searcher
        if failed is None or searcher is None:
            return None
        try:
            current = searcher.stats().build_id
        except IndexerError as err:
            return err
        return failed[1] if current == failed[0] else None

    @property
    def problem(self) -> Exception | None:
        """Why the index is not open: IndexNotFoundError before the first build, else what failed."""
        return None if self._searcher is not None else self._problem

    def try_open(self) -> Searcher | None:
        """Open the index if it has a committed build; None (and `problem` says why) if not."""
        with self._open_lock:
            if self._searcher is not None:
                return self._searcher
            try:
                searcher = self._open_searcher()
            except (IndexerError, ValueError) as err:  # ValueError: a database URL without its password
                if str(err) != str(self._problem) and not isinstance(err, IndexNotFoundError):
                    logger.warning("The index cannot be opened: %s", err)
                self._problem = err
                return None
            self._model_label = searcher.stats().model_label
            self._searcher = searcher
            self._problem = None
            logger.info("Serving %s (%s)", self.config.index_dir, self._model_label)
            return searcher

    def _open_searcher(self) -> Searcher:
        """A Searcher over the index, its model shared with the other collections (`models`)."""
        assert self.config.index_dir is not None, "each collection's Service has its folder"
        searcher = Searcher(self.config.index_dir, db_url=self.config.db_url, reranker=self.reranker,
                            rerank_by_default=self.choice.enabled and self.reranker is not None,
                            model_loading="eager" if self.models is None else "lazy", files=self.files)
        if self.models is not None:
            try:
                self.models.attach(searcher)
            except BaseException:
                searcher.close()
                raise
        return searcher

    @property
    def opened(self) -> Searcher | None:
        """The Searcher, once the index has a committed build and has opened; else None."""
        return self._searcher

    def after_write(self) -> str:
        """Serve the build a write just committed (opening the index after its first one); its id."""
        searcher = self._searcher or self.try_open()
        if searcher is None:
            return ""
        searcher.refresh()
        return searcher.stats().build_id

    def watch(self) -> None:
        """Look for the index in the background until it opens or the service stops."""
        if self._searcher is not None or self._watcher is not None:
            return

        def loop() -> None:
            while not self._stop.wait(self.config.poll_seconds):
                if self.try_open() is not None:
                    return

        self._watcher = threading.Thread(target=loop, name="semsearch-index-watcher", daemon=True)
        self._watcher.start()

    def searcher(self) -> Searcher:
        searcher = self._searcher
        if searcher is None:
            raise self.unavailable(self._problem)
        return searcher

    def unavailable(self, err: Exception | None) -> ApiError:
        if self._opening:
            return ApiError(503, "loading", "The index and its models are loading; ask again in a moment.",
                            {"Retry-After": "1"})
        retry = str(max(1, math.ceil(self.config.poll_seconds)))
        if err is None or isinstance(err, IndexNotFoundError):
            found = str(err) if err is not None else "No index is open yet."
            detail = f"{found} The service loads it as soon as a build commits; no restart needed."
            return ApiError(503, "no_index", self.public(detail), {"Retry-After": retry})
        return ApiError(503, "index_unavailable", self.public(f"The index cannot be read: {err}"),
                        {"Retry-After": retry})

    def similarity_model(self) -> tuple[Any, str]:
        """The index's bi-encoder once an index is open, else `config.similarity_model` (the default)."""
        if self._searcher is not None:
            return self._searcher.model, self._model_label
        from indexer.embedding import load_bi_encoder

        spec = ModelSpec.resolve(self.config.similarity_model)
        return load_bi_encoder(spec), spec.label

    def close(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        with self._open_lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None


async def in_worker_thread(service: Service, call: Callable[[], Any]) -> Any:
    """Run model work in a worker thread, `search_threads` at a time; the rest wait without a thread."""
    return await anyio.to_thread.run_sync(call, limiter=service.limiter)


