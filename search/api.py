"""HTTP API over the `Searcher`: `python -m search.api --index DIR [--host 127.0.0.1] [--port 8000]
[--workers 1] [--rerank-model PATH | --rerank | --no-rerank]`.

Every search goes through `Searcher.search_detailed`, as the CLI, the app and the
evaluation do, so the service answers exactly what they answer. The service is
read-only: indexing stays the job of `python -m indexer build`, whose commits the
Searcher picks up before the next query (`SearchConfig.auto_refresh`).

One worker holds one Searcher (the model, the vectors and the BM25 index). The
model is shared by every request of the worker; searches and similarity
requests run in worker threads, `search_threads` at a time (1 by default: torch
already spreads one encoding over all cores, and on 2 cores concurrent
encodings only queue for them), while the others wait in the event loop
without holding a thread, so /health and /stats stay quick under load.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import math
import os
import re
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import anyio
import anyio.to_thread
from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline

from indexer import settings
from indexer.errors import IndexerError, IndexNotFoundError
from indexer.store.sql_store import shown_url
from search.api_errors import (
    ApiError,
    BodySizeLimit,
    RequestHeadLimit,
    install_error_handlers,
    redact,
)
from search.api_keys import ApiKeys, is_loopback, keys_file
from search.api_metrics import MULTIPROC_ENV, ApiMetrics, RequestMetrics
from search.api_models import (
    HAS_WORDS,
    MAX_BODY_BYTES,
    MAX_HEADER_BYTES,
    MAX_HTTP_HEAD_BYTES,
    MAX_QUERY_CHARS,
    MAX_SIMILARITY_SENTENCES,
    MAX_URL_BYTES,
    BuildProgressOut,
    ErrorResponse,
    FusionMethod,
    HealthResponse,
    HitOut,
    LocationOut,
    MatchOut,
    Mode,
    SearchBatchRequest,
    SearchBatchResponse,
    SearchFields,
    SearchRequest,
    SearchResponse,
    SimilarityRequest,
    SimilarityResponse,
    StatsResponse,
    TimingsOut,
    filter_components,
)
from search.errors import NoRerankerError
from search.hits import SearchResult
from search.matches import find_matches, query_terms
from search.params import DEFAULT_K, MAX_K, SearchParams
from search.rerank import NO_RERANKER, Reranker, RerankerChoice, resolve_reranker
from search.searcher import Searcher
from search.sentence_similarity import similarity_matrix, unreadable_sentences

logger = logging.getLogger(__name__)

# The environment variable that carries the ApiConfig to each worker process of `--workers N`.
CONFIG_ENV = "SEMSEARCH_API_CONFIG"
# The "Authorization: Bearer KEY" reader of `guard`; module-level, as string annotations name it.
BEARER = HTTPBearer(auto_error=False, description="a key from the service's --api-keys file")
# How long uvicorn's supervisor waits for a worker of `--workers N` to answer its ping.
WORKER_HEALTHCHECK_S = 120


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
    `api_keys`: the keys file (`search.api_keys`); None lets every request in."""

    index_dir: Path
    db_url: str | None = None
    rerank_model: str | None = None
    rerank: bool | None = None
    similarity_model: str | None = None
    poll_seconds: float = 2.0
    search_threads: int = 1
    cors_origins: tuple[str, ...] = ()
    open_in_background: bool = False
    api_keys: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "index_dir", Path(self.index_dir))
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
        return json.dumps({**dataclasses.asdict(self), "index_dir": str(self.index_dir)})

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
                    self.reranker = self.choice.load()
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
                searcher = Searcher(self.config.index_dir, db_url=self.config.db_url, reranker=self.reranker,
                                    rerank_by_default=self.choice.enabled and self.reranker is not None)
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
        from indexer.model_spec import ModelSpec

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


async def _in_thread(service: Service, call: Callable[[], Any]) -> Any:
    """Run model work in a worker thread, `search_threads` at a time; the rest wait without a thread."""
    return await anyio.to_thread.run_sync(call, limiter=service.limiter)


# --- what each route answers -------------------------------------------------------------------


def health_of(service: Service) -> HealthResponse:
    """`index` is "ready" only while a search can be answered: an open index whose last search
    failed (a damaged SQL store) is "unreadable", with the reason, until a newer build is served."""
    problem = service.problem
    if service.opening:
        return HealthResponse(status="ok", index="loading", detail="The index and its models are loading.")
    if service.ready:
        failure = service.failure()
        if failure is None:
            return HealthResponse(status="ok", index="ready", detail=None)
        return HealthResponse(status="ok", index="unreadable", detail=service.public(str(failure)))
    state: Literal["missing", "unreadable"] = (
        "missing" if problem is None or isinstance(problem, IndexNotFoundError) else "unreadable")
    return HealthResponse(status="ok", index=state, detail=None if problem is None else service.public(str(problem)))


def stats_of(service: Service) -> StatsResponse:
    searcher = service.searcher()
    try:
        figures = searcher.stats()
    except IndexerError as err:
        raise service.unavailable(err) from err
    return StatsResponse(
        documents=figures.documents, passages=figures.passages, model=service.public(figures.model),
        model_label=figures.model_label, dimension=figures.dimension, index_type=figures.vector_index,
        recall_at_10=figures.recall_at_10, delta_segments=figures.delta_segments,
        modes=list(searcher.modes), built_at=figures.built_at, build_seconds=figures.build_seconds,
        build_id=figures.build_id,
        reranker=None if service.reranker is None else Path(str(service.choice.path)).name,
        rerank_default=searcher.rerank_by_default,
        building=None if (progress := searcher.build_progress()) is None
        else BuildProgressOut(done=progress[0], total=progress[1]),
    )


def params_of(request: SearchFields) -> SearchParams:
    """The `SearchParams` of a request's fields. keep_tail: a k above `candidates` (which the schema
    allows) returns k hits, the top `candidates` of them reranked, not a 400."""
    return SearchParams(k=request.k, offset=request.offset, mode=request.mode, rerank=request.rerank,
                        candidates=request.candidates, fusion=request.fusion, fusion_weight=request.fusion_weight,
                        filter=request.filter, keep_tail=True, min_relevance=request.min_relevance)


async def answer(service: Service, search: Callable[[Searcher, SearchParams], Any], request: SearchFields) -> Any:
    """Run `search(searcher, params)` in a worker thread, turning what it raises into the API's
    errors; what it returned, with fallback reasons redacted."""
    searcher = service.searcher()
    try:
        params = params_of(request)
        searcher.reranks(params)
        found = await _in_thread(service, functools.partial(search, searcher, params))
    except NoRerankerError as err:
        raise ApiError(400, "no_reranker", (
            "rerank=true needs a reranker, and this server has none. Start it with "
            "--rerank-model PATH (or SEMSEARCH_RERANKER=PATH), or search with rerank=false.")) from err
    except IndexerError as err:  # before ValueError: IndexMismatchError is both
        service.failed(searcher, err)
        raise service.unavailable(err) from err
    except (ValueError, TypeError) as err:  # the Searcher's own checks
        raise ApiError(400, "bad_request", service.public(str(err))) from err
    service.answered()
    return found


def public_result(service: Service, result: SearchResult) -> SearchResult:
    if result.fallback_reason is None:
        return result
    return dataclasses.replace(result, fallback_reason=service.public(result.fallback_reason))


async def search_with(service: Service, request: SearchRequest) -> SearchResponse:
    result = await answer(service, lambda searcher, params: searcher.search_detailed(request.q, params), request)
    service.searched(result)
    return search_response(request.q, request, public_result(service, result))


async def search_batch_with(service: Service, request: SearchBatchRequest) -> SearchBatchResponse:
    results = await answer(service, lambda searcher, params: searcher.search_batch(request.queries, params), request)
    for result in results:
        service.searched(result)
    return SearchBatchResponse(results=[search_response(query, request, public_result(service, result))
                                        for query, result in zip(request.queries, results, strict=True)])


def refuse_unknown_parameters(http: Request) -> None:
    """A query parameter GET /search does not know is a 422, as an unknown field of POST is:
    a misspelt `mdoe=bm25` must not silently search in the default mode."""
    unknown = sorted(set(http.query_params) - set(SearchRequest.model_fields) | ({"filter"} & set(http.query_params)))
    if unknown:
        raise RequestValidationError([
            {"type": "extra_forbidden", "loc": ("query", name), "input": http.query_params[name],
             "msg": "A filter is a JSON object: send it in the body of POST /search" if name == "filter"
             else "Extra inputs are not permitted"} for name in unknown])


def search_response(query: str, request: SearchFields, result: SearchResult) -> SearchResponse:
    timings = result.timings
    terms = query_terms(query)
    return SearchResponse(
        query=query, k=request.k, offset=request.offset, mode=result.mode, fallback_reason=result.fallback_reason,
        relevance_note=result.relevance_note,
        reranked=result.reranked, build_id="" if result.stats is None else result.stats.build_id,
        timings=TimingsOut(
            encode_ms=timings.encode_s * 1000, retrieve_ms=timings.retrieve_s * 1000,
            rerank_ms=timings.rerank_s * 1000, total_ms=timings.total_s * 1000,
        ),
        hits=[
            HitOut(
                rank=rank, doc_id=hit.doc_id, title=hit.title, text=hit.text,
                start_char=hit.start_char, end_char=hit.end_char, score=hit.score,
                retriever_score=hit.retriever_score, rerank_score=hit.rerank_score,
                metadata=dict(hit.metadata), source=hit.source, location=LocationOut(**hit.location.to_dict()),
                merged=list(hit.merged), relevance=hit.relevance,
                matches=[MatchOut(start=m.start, end=m.end, term=m.term) for m in find_matches(hit.text, terms)],
            )
            for rank, hit in enumerate(result.hits, start=request.offset + 1)
        ],
    )


async def similarity_with(service: Service, request: SimilarityRequest) -> SimilarityResponse:
    pair = isinstance(request.a, str)
    a = cast(list[str], [request.a] if pair else request.a)
    b = cast(list[str], [request.b] if pair else request.b)

    def compute() -> tuple[list[list[float | None]], str, list[str]]:
        model, label = service.similarity_model()
        bad_a, bad_b = set(unreadable_sentences(a, model)), set(unreadable_sentences(b, model))
        rows = [i for i in range(len(a)) if i not in bad_a]
        cols = [j for j in range(len(b)) if j not in bad_b]
        matrix: list[list[float | None]] = [[None] * len(b) for _ in a]
        if rows and cols:
            scores = similarity_matrix([a[i] for i in rows], [b[j] for j in cols], model=model)
            for r, i in enumerate(rows):
                for c, j in enumerate(cols):
                    matrix[i][j] = float(scores[r, c])
        return matrix, label, [f"a[{i}]" for i in sorted(bad_a)] + [f"b[{j}]" for j in sorted(bad_b)]

    try:
        matrix, label, unreadable = await _in_thread(service, compute)
    except IndexerError as err:
        raise service.unavailable(err) from err
    except (ValueError, TypeError) as err:  # the similarity functions' own checks, in the request's own names
        message = str(err).replace("sentences_a", "a").replace("sentences_b", "b")
        raise ApiError(400, "bad_request", service.public(message)) from err
    return SimilarityResponse(model=label, matrix=matrix, score=matrix[0][0] if pair else None,
                              unreadable=unreadable)


def figures_of(service: Service) -> tuple[str, str, bool, Any]:
    """What /metrics reads when scraped: (collection name, index state as /health says it, whether
    the model has loaded, the newest build's figures or None)."""
    state = health_of(service).index
    searcher = service._searcher if service.ready else None
    stats = None
    if searcher is not None:
        with contextlib.suppress(IndexerError):
            stats = searcher.stats()
    return service.config.index_dir.name, state, bool(searcher is not None and searcher.model_loaded), stats


def guard(keys: ApiKeys | None, need: str) -> list[Any]:
    """The route dependencies that let in only a request whose bearer key has scope `need`
    ("read" or "write"); none when the service has no keys."""
    if keys is None:
        return []

    def check(credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)]) -> None:
        if credentials is None:
            raise ApiError(401, "unauthorized", "This service needs an API key: send the header "
                           "'Authorization: Bearer KEY' with a key from its --api-keys file.",
                           {"WWW-Authenticate": "Bearer"})
        scope = keys.scope_of(credentials.credentials)
        if scope is None:
            raise ApiError(401, "unauthorized", "The API key is not one this service accepts; check it "
                           "(it is compared whole) or ask for one from its --api-keys file.",
                           {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        if not ApiKeys.allows(scope, need):
            raise ApiError(403, "forbidden", f"This key may {scope} only, and this request needs a {need} key.")

    return [Depends(check)]


# --- the app ----------------------------------------------------------------------------------


def _lifespan(service: Service, config: ApiConfig) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        service.limiter = anyio.CapacityLimiter(config.search_threads)
        if config.open_in_background:
            service.open_in_background()
        elif await anyio.to_thread.run_sync(service.try_open) is None:
            if isinstance(service.problem, IndexNotFoundError):  # try_open logged any other problem
                logger.warning("%s The service answers 503 until then.", service.problem)
            service.watch()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(service.close)

    return lifespan


def _new_app(service: Service, config: ApiConfig, keys: ApiKeys | None, metrics: ApiMetrics) -> FastAPI:
    # /docs and /redoc from assets in a package, not a CDN: no machine here reaches one, and a
    # service behind a firewall is the same. fastapi-offline was chosen over swagger-ui-bundle,
    # whose Swagger UI 4.15 cannot render the OpenAPI 3.1 schema FastAPI writes (5.x can).
    app = FastAPIOffline(
        title="semsearch",
        summary="Semantic search over one index: the same Searcher as the CLI and the app. Read-only.",
        description=(
            f"Limits: a query or sentence holds at most {MAX_QUERY_CHARS} characters; `k` and "
            f"`candidates` lie in 1..{MAX_K}; a similarity list holds at most "
            f"{MAX_SIMILARITY_SENTENCES} sentences; a request body at most {MAX_BODY_BYTES} bytes, "
            f"a URL {MAX_URL_BYTES} (414) and the headers {MAX_HEADER_BYTES} (431). An unknown field "
            "or query parameter is a 422. "
            "Errors are JSON: `{\"error\": code, \"detail\": what was wrong and the fix}`. "
            "503 while no index has been built; indexing is `python -m indexer build`'s job."
        ),
        version="1",
        lifespan=_lifespan(service, config),
        responses={
            400: {"model": ErrorResponse}, 413: {"model": ErrorResponse}, 414: {"model": ErrorResponse},
            422: {"model": ErrorResponse}, 431: {"model": ErrorResponse}, 503: {"model": ErrorResponse},
        },
    )
    if keys is not None:  # declared only where they can happen: a service without keys never answers them
        app.router.responses.update({401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}})
    app.state.service = service
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()  # FastAPI's, cached on the app; the filter's recursive schema joins it
        schema.setdefault("components", {}).setdefault("schemas", {}).update(filter_components())
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES)
    if config.cors_origins:  # off by default: a browser page elsewhere may not read the answers
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Content-Type"], max_age=600)
    app.add_middleware(RequestHeadLimit)  # refuses before anything reads the request
    app.add_middleware(RequestMetrics, metrics=metrics)  # outermost: counts every answer, refusals too
    install_error_handlers(app)
    return app


def create_app(config: ApiConfig) -> FastAPI:
    """The FastAPI app over `config.index_dir`; the reranker is loaded here, the index at startup.
    Each route only hands its request to the function above that answers it."""
    service = Service.start(config)
    keys = ApiKeys.load(config.api_keys) if config.api_keys else None
    metrics = ApiMetrics(lambda: figures_of(service))
    service.searched = metrics.observe_search
    app = _new_app(service, config, keys, metrics)
    reader = guard(keys, "read")

    @app.get("/health", response_model=HealthResponse)
    async def health() -> HealthResponse:
        """Always 200 while the process runs; `index` says whether searches can be answered."""
        return health_of(service)

    @app.get("/stats", response_model=StatsResponse, dependencies=reader)
    def stats() -> StatsResponse:
        """The figures of the newest committed build (one small SQL read checks for a newer one)."""
        return stats_of(service)

    @app.get("/search", response_model=SearchResponse, dependencies=reader)
    async def search_get(
        http: Request,
        q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, pattern=HAS_WORDS,
                                description="the query: some words, not only whitespace")],
        k: Annotated[int, Query(ge=1, le=MAX_K)] = DEFAULT_K,
        offset: Annotated[int, Query(ge=0, le=MAX_K - 1)] = 0,
        mode: Mode | None = None,
        rerank: bool | None = None,
        candidates: Annotated[int | None, Query(ge=1, le=MAX_K)] = None,
        fusion: FusionMethod | None = None,
        fusion_weight: Annotated[float | None, Query(ge=0.0, le=1.0, allow_inf_nan=False)] = None,
        min_relevance: Annotated[float | None, Query(ge=0.0, le=1.0, allow_inf_nan=False)] = None,
    ) -> SearchResponse:
        """The k best documents for `q`, each with its best passage; the same fields as POST."""
        refuse_unknown_parameters(http)
        return await search_with(service, SearchRequest.model_construct(
            q=q, k=k, offset=offset, mode=mode, rerank=rerank, candidates=candidates, fusion=fusion,
            fusion_weight=fusion_weight, min_relevance=min_relevance))

    @app.post("/search", response_model=SearchResponse, dependencies=reader)
    async def search_post(request: SearchRequest) -> SearchResponse:
        """The k best documents for `q`, each with its best passage, the mode that ran and timings."""
        return await search_with(service, request)

    @app.post("/search/batch", response_model=SearchBatchResponse, dependencies=reader)
    async def search_batch(request: SearchBatchRequest) -> SearchBatchResponse:
        """Up to MAX_BATCH_QUERIES queries with the same fields, encoded in one batch: one answer
        each, as POST /search gives it."""
        return await search_batch_with(service, request)

    @app.post("/similarity", response_model=SimilarityResponse, dependencies=reader)
    async def similarity(request: Annotated[SimilarityRequest, Body()]) -> SimilarityResponse:
        """Cosine similarity of two sentences, or the len(a) x len(b) matrix of two lists."""
        return await similarity_with(service, request)

    @app.get("/metrics", dependencies=reader, response_class=Response,
             responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                              "description": "Prometheus text format (docs/api.md lists the metrics)"}})
    def prometheus_metrics() -> Response:
        """The service's metrics for Prometheus: requests and their latency by route and status,
        search stage timings, and per collection its documents, passages, build and model state."""
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    return app


def app_from_env() -> FastAPI:
    """The app of one worker of `--workers N`: uvicorn imports it by name in each process."""
    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise RuntimeError(f"{CONFIG_ENV} is not set; start the service with python -m search.api.")
    return create_app(ApiConfig.from_json(text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search.api", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="the index folder to serve (it may not exist yet)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--workers", type=int, default=1,
                        help="processes, each with its own model and index in memory (default 1)")
    parser.add_argument("--db", default=None, help="SQLAlchemy URL, when the index keeps rows elsewhere")
    parser.add_argument("--rerank-model", default=None, metavar="PATH",
                        help="CrossEncoder folder (default: SEMSEARCH_RERANKER, else models/reranker; "
                        f"{'/'.join(NO_RERANKER)} for none)")
    parser.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                        help="whether a search that does not say reranks (default: the reranker's config)")
    parser.add_argument("--poll-seconds", type=float, default=2.0,
                        help="how often a service without an index looks for one")
    parser.add_argument("--search-threads", type=int, default=1,
                        help="searches one worker runs at once (default 1; torch uses every core for each)")
    parser.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                        help="let web pages from ORIGIN (e.g. https://intranet.example.org) call the API "
                        "from a browser; repeat for several; none by default")
    parser.add_argument("--load-first", action="store_true",
                        help="load the index and the models before listening (connections are refused "
                        "meanwhile); by default the server listens at once and answers 503 'loading' until ready")
    parser.add_argument("--api-keys", default=None, metavar="FILE",
                        help="keys clients must send as 'Authorization: Bearer KEY', one a line: 'read KEY' "
                        "or 'write KEY' (default: the file named by SEMSEARCH_API_KEYS; none lets every "
                        "request in, which only a loopback --host allows)")
    parser.add_argument("--insecure-no-auth", action="store_true",
                        help="serve a non-loopback --host without API keys (anyone who reaches it may search)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    settings.quiet_library_logs()
    import uvicorn

    try:
        if args.workers < 1:
            raise ValueError(f"--workers ({args.workers}) must be at least 1.")
        keys = keys_file(args.api_keys)
        if keys is None and not is_loopback(args.host) and not args.insecure_no_auth:
            raise ValueError(f"--host {args.host} lets other machines in, and no API keys are set: give "
                             "--api-keys FILE (lines 'read KEY' / 'write KEY'), or --insecure-no-auth to "
                             "serve without keys, or --host 127.0.0.1.")
        config = ApiConfig(
            index_dir=args.index, db_url=args.db, rerank_model=args.rerank_model, rerank=args.rerank,
            poll_seconds=args.poll_seconds, search_threads=args.search_threads,
            cors_origins=tuple(args.cors_origin), open_in_background=not args.load_first,
            api_keys=None if keys is None else str(keys.resolve()),
        )
        if keys is not None:
            ApiKeys.load(keys)  # refuse a bad keys file here, once, before any worker starts
        if args.workers == 1:
            app: FastAPI | str = create_app(config)
        else:
            resolve_reranker(config.rerank, reranker_setting(config))  # refuse a bad setting once, here
            os.environ[CONFIG_ENV] = config.to_json()
            app = "search.api:app_from_env"
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    # A worker loading torch and the models on busy cores answers uvicorn's pings late; the default
    # 5 s had every worker killed and restarted, forever.
    with tempfile.TemporaryDirectory(prefix="semsearch-metrics-") as shared:
        if args.workers > 1:  # the workers' counters, summed by every scrape (search.api_metrics)
            os.environ[MULTIPROC_ENV] = shared
        uvicorn.run(app, host=args.host, port=args.port, workers=args.workers, factory=isinstance(app, str),
                    log_level=args.log_level.lower(), timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
                    h11_max_incomplete_event_size=MAX_HTTP_HEAD_BYTES)
    return 0


if __name__ == "__main__":
    sys.exit(main())
