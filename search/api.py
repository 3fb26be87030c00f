"""HTTP API over the `Searcher`: `python -m search.api --index DIR [--host 127.0.0.1] [--port 8000]
[--workers 1 | --ray local|ADDRESS --replicas R [--shards N]] [--rerank-model PATH | --rerank | --no-rerank]`.

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
import logging
import os
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import Body, Depends, FastAPI, Query, Request
from fastapi import Path as FastApiPath
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi_offline import FastAPIOffline

from indexer import settings
from indexer.build.collections import COLLECTION_NAME, COLLECTION_NAME_RULE, CollectionSettings
from indexer.errors import IndexNotFoundError
from indexer.layout import MANIFEST
from indexer.store.records import SnapshotLoader
from search.api_answers import (
    collection_out,
    create_collection,
    figures_of,
    health_of_service,
    refuse_unknown_parameters,
    search_batch_with,
    search_with,
    similarity_with,
    stats_of,
)
from search.api_collection_models import (
    MAX_WRITE_DOCUMENTS,
    CollectionOut,
    CollectionSettingsIn,
    CollectionsResponse,
    DeleteDocumentsRequest,
    DocumentOut,
    DocumentsRequest,
    WriteResponse,
)
from search.api_collections import Collection, Collections
from search.api_documents import (
    delete_documents,
    delete_request,
    read_document,
    write_counts,
    write_documents,
)
from search.api_errors import (
    ApiError,
    BodySizeLimit,
    RequestHeadLimit,
    install_error_handlers,
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
    ErrorResponse,
    FusionMethod,
    HealthResponse,
    Mode,
    SearchBatchRequest,
    SearchBatchResponse,
    SearchRequest,
    SearchResponse,
    SimilarityRequest,
    SimilarityResponse,
    StatsResponse,
    filter_components,
)
from search.api_service import DEFAULT_WRITE_WAIT_S, ApiConfig, Service, reranker_setting
from search.params import DEFAULT_K, MAX_K
from search.rerank import NO_RERANKER, Reranker, RerankerChoice, resolve_reranker
from search.shared_models import SharedModels

logger = logging.getLogger(__name__)

# The environment variable that carries the ApiConfig to each worker process of `--workers N`.
CONFIG_ENV = "SEMSEARCH_API_CONFIG"
# The "Authorization: Bearer KEY" reader of `guard`; module-level, as string annotations name it.
BEARER = HTTPBearer(auto_error=False, description="a key from the service's --api-keys file")
# How long uvicorn's supervisor waits for a worker of `--workers N` to answer its ping.
WORKER_HEALTHCHECK_S = 120

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


def shared_reranker(choice: RerankerChoice, loaded: Reranker | None) -> Callable[[], Reranker | None]:
    """`choice.load`, run once for every collection: the first caller loads, the others wait for it."""
    lock = threading.Lock()
    box: list[Reranker | None] = [loaded]

    def load() -> Reranker | None:
        with lock:
            if box[0] is None and choice.path is not None:
                box[0] = choice.load()
            return box[0]

    return load


def open_collection(service: Service, folder: Path) -> None:
    """Open a collection made or found after startup: one with a build in the background (503
    "loading" meanwhile); a new one, with nothing to load, at once (answering 503 "no_index"
    until its first write commits)."""
    if (folder / MANIFEST).is_file():
        service.open_in_background()
    elif service.try_open() is None:
        service.watch()


async def _open_at_start(service: Service, config: ApiConfig) -> None:
    if config.open_in_background:
        service.open_in_background()
    elif await anyio.to_thread.run_sync(service.try_open) is None:
        if isinstance(service.problem, IndexNotFoundError):  # try_open logged any other problem
            logger.warning("%s The service answers 503 until then.", service.problem)
        service.watch()


def _lifespan(collections: Collections, config: ApiConfig,
              started: dict[str, Any]) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        started["limiter"] = anyio.CapacityLimiter(config.search_threads)  # one for every collection
        for collection in collections.scan():
            collection.service.limiter = started["limiter"]
            await _open_at_start(collection.service, config)
        try:
            yield
        finally:
            started.pop("limiter", None)
            await anyio.to_thread.run_sync(collections.close)

    return lifespan


def _new_app(collections: Collections, config: ApiConfig, keys: ApiKeys | None, metrics: ApiMetrics,
             started: dict[str, Any]) -> FastAPI:
    # /docs and /redoc from assets in a package, not a CDN: no machine here reaches one, and a
    # service behind a firewall is the same. fastapi-offline was chosen over swagger-ui-bundle,
    # whose Swagger UI 4.15 cannot render the OpenAPI 3.1 schema FastAPI writes (5.x can).
    app = FastAPIOffline(
        title="semsearch",
        summary="Semantic search over collections of documents: the same Searcher and build loop as the CLI "
                "and the app.",
        description=(
            f"Limits: a query or sentence holds at most {MAX_QUERY_CHARS} characters; `k` and "
            f"`candidates` lie in 1..{MAX_K}; a similarity list holds at most "
            f"{MAX_SIMILARITY_SENTENCES} sentences; a write at most {MAX_WRITE_DOCUMENTS} documents; a "
            f"request body at most {MAX_BODY_BYTES} bytes, "
            f"a URL {MAX_URL_BYTES} (414) and the headers {MAX_HEADER_BYTES} (431). An unknown field "
            "or query parameter is a 422. "
            "Errors are JSON: `{\"error\": code, \"detail\": what was wrong and the fix}`. "
            "503 while a collection has no build yet, or while another build holds a write's lock "
            f"longer than {config.write_wait_seconds:g} s (with Retry-After). A 200 to a write means "
            "it has committed."
        ),
        version="1",
        lifespan=_lifespan(collections, config, started),
        responses={
            400: {"model": ErrorResponse}, 404: {"model": ErrorResponse}, 409: {"model": ErrorResponse},
            413: {"model": ErrorResponse}, 414: {"model": ErrorResponse},
            422: {"model": ErrorResponse}, 431: {"model": ErrorResponse}, 503: {"model": ErrorResponse},
        },
    )
    if keys is not None:  # declared only where they can happen: a service without keys never answers them
        app.router.responses.update({401: {"model": ErrorResponse}, 403: {"model": ErrorResponse}})
    single = collections.single
    app.state.service = None if single is None else single.service
    app.state.collections = collections
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()  # FastAPI's, cached on the app; the filter's recursive schema joins it
        schema.setdefault("components", {}).setdefault("schemas", {}).update(filter_components())
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES)
    if config.cors_origins:  # off by default: a browser page elsewhere may not read the answers
        app.add_middleware(CORSMiddleware, allow_origins=list(config.cors_origins),
                           allow_methods=["GET", "POST", "PUT", "DELETE"],
                           allow_headers=["Content-Type", "Authorization"], max_age=600)
    app.add_middleware(RequestHeadLimit)  # refuses before anything reads the request
    app.add_middleware(RequestMetrics, metrics=metrics)  # outermost: counts every answer, refusals too
    install_error_handlers(app)
    return app


def _collections(config: ApiConfig, metrics: Callable[[], ApiMetrics], started: dict[str, Any],
                 files: SnapshotLoader | None = None) -> Collections:
    """The service's collections, each with its own Service; the reranker and the models shared."""
    choice = resolve_reranker(config.rerank, reranker_setting(config))
    loaded = None if config.open_in_background else choice.load()
    reranker_source = shared_reranker(choice, loaded)
    models = SharedModels()  # becomes the collections' own, below

    def make_service(folder: Path, settings: CollectionSettings) -> Service:
        own = dataclasses.replace(config, index_dir=folder, root=None, db_url=settings.db_url or config.db_url)
        service = Service(own, choice, loaded)
        service.reranker_source, service.models, service.files = reranker_source, models, files
        service.searched = lambda result: metrics().observe_search(result)
        if "limiter" in started:  # made or found while the server runs
            service.limiter = started["limiter"]
            open_collection(service, folder)
        return service

    collections = Collections(config.root, config.index_dir, make_service, models)
    return collections


def the_index(collections: Collections) -> Service:
    """The one index of `--index DIR`, which the paths without a collection answer from."""
    single = collections.single
    if single is None:
        raise ApiError(404, "collection_required", "This service serves collections (--root): name one, as in "
                       "/collections/{name}/search; GET /collections lists them.")
    return single.service


def create_app(config: ApiConfig, files: SnapshotLoader | None = None) -> FastAPI:
    """The FastAPI app over `config.index_dir` (or every collection under `config.root`); the
    reranker is loaded here, the indexes at startup. Each route only hands its request to the
    function above that answers it. `files`: where the index's vectors and BM25 come from when
    not from its folder (a sharded service's router: `search.api_ray`)."""
    if files is not None and config.root is not None:
        raise ValueError("A sharded service serves one index (--index DIR), not a folder of collections (--root).")
    started: dict[str, Any] = {}
    holder: list[ApiMetrics] = []
    collections = _collections(config, lambda: holder[0], started, files)
    keys = ApiKeys.load(config.api_keys) if config.api_keys else None
    metrics = ApiMetrics(lambda: [figures_of(c.name, c.service) for c in collections.scan()])
    holder.append(metrics)
    app = _new_app(collections, config, keys, metrics, started)
    _index_routes(app, collections, guard(keys, "read"), metrics)
    _collection_routes(app, collections, guard(keys, "read"), guard(keys, "write"))
    _document_routes(app, collections, config, guard(keys, "read"), guard(keys, "write"), metrics)
    return app


def _index_routes(app: FastAPI, collections: Collections, reader: list[Any], metrics: ApiMetrics) -> None:
    """The paths of the one index of `--index DIR` (404 collection_required with --root)."""

    @app.get("/health", response_model=HealthResponse)
    async def health() -> HealthResponse:
        """Always 200 while the process runs; `index` says whether searches can be answered."""
        return health_of_service(collections)

    @app.get("/stats", response_model=StatsResponse, dependencies=reader)
    def stats() -> StatsResponse:
        """The figures of the newest committed build (one small SQL read checks for a newer one)."""
        return stats_of(the_index(collections))

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
        allow_partial: bool = False,
    ) -> SearchResponse:
        """The k best documents for `q`, each with its best passage; the same fields as POST."""
        refuse_unknown_parameters(http)
        return await search_with(the_index(collections), SearchRequest.model_construct(
            q=q, k=k, offset=offset, mode=mode, rerank=rerank, candidates=candidates, fusion=fusion,
            fusion_weight=fusion_weight, min_relevance=min_relevance, allow_partial=allow_partial))

    @app.post("/search", response_model=SearchResponse, dependencies=reader)
    async def search_post(request: SearchRequest) -> SearchResponse:
        """The k best documents for `q`, each with its best passage, the mode that ran and timings."""
        return await search_with(the_index(collections), request)

    @app.post("/search/batch", response_model=SearchBatchResponse, dependencies=reader)
    async def search_batch(request: SearchBatchRequest) -> SearchBatchResponse:
        """Up to MAX_BATCH_QUERIES queries with the same fields, encoded in one batch: one answer
        each, as POST /search gives it."""
        return await search_batch_with(the_index(collections), request)

    @app.post("/similarity", response_model=SimilarityResponse, dependencies=reader)
    async def similarity(request: Annotated[SimilarityRequest, Body()]) -> SimilarityResponse:
        """Cosine similarity of two sentences, or the len(a) x len(b) matrix of two lists."""
        return await similarity_with(the_index(collections), request)

    @app.get("/metrics", dependencies=reader, response_class=Response,
             responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                              "description": "Prometheus text format (docs/api.md lists the metrics)"}})
    def prometheus_metrics() -> Response:
        """The service's metrics for Prometheus: requests and their latency by route and status,
        search stage timings, writes, and per collection its documents, passages, build and model state."""
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)


CollectionName = Annotated[str, FastApiPath(description=COLLECTION_NAME_RULE, pattern=COLLECTION_NAME)]


def _collection_routes(app: FastAPI, collections: Collections, reader: list[Any], writer: list[Any]) -> None:
    """GET /collections, PUT and DELETE /collections/{name}, and each collection's searches."""

    @app.get("/collections", response_model=CollectionsResponse, dependencies=reader)
    def list_collections() -> CollectionsResponse:
        """Every collection, with its state and the figures of its newest build."""
        return CollectionsResponse(collections=[collection_out(c) for c in collections.scan()])

    @app.put("/collections/{name}", response_model=CollectionOut, status_code=201, dependencies=writer,
             responses={200: {"model": CollectionOut, "description": "it exists already, with these settings"}})
    async def put_collection(name: CollectionName, body: CollectionSettingsIn, response: Response) -> CollectionOut:
        """Create a collection (201; 200 when it exists with the same settings). It is searchable
        once its first documents are written. 409 with --index, or with other settings."""
        collection, made = await anyio.to_thread.run_sync(create_collection, collections, name, body)
        response.status_code = 201 if made else 200
        return collection_out(collection)

    @app.delete("/collections/{name}", status_code=204, response_class=Response, dependencies=writer)
    async def delete_collection(name: CollectionName) -> Response:
        """Delete a collection and its folder, once the requests using it have finished."""
        await anyio.to_thread.run_sync(collections.remove, name)
        return Response(status_code=204)

    @app.get("/collections/{name}/stats", response_model=StatsResponse, dependencies=reader)
    def collection_stats(name: CollectionName) -> StatsResponse:
        """The figures of the collection's newest committed build."""
        with collections.get(name).use() as collection:
            return stats_of(collection.service)

    @app.post("/collections/{name}/search", response_model=SearchResponse, dependencies=reader)
    async def collection_search(name: CollectionName, request: SearchRequest) -> SearchResponse:
        """POST /search over this collection."""
        with collections.get(name).use() as collection:
            return await search_with(collection.service, request)

    @app.post("/collections/{name}/search/batch", response_model=SearchBatchResponse, dependencies=reader)
    async def collection_search_batch(name: CollectionName, request: SearchBatchRequest) -> SearchBatchResponse:
        """POST /search/batch over this collection."""
        with collections.get(name).use() as collection:
            return await search_batch_with(collection.service, request)

    @app.post("/collections/{name}/similarity", response_model=SimilarityResponse, dependencies=reader)
    async def collection_similarity(name: CollectionName,
                                    request: Annotated[SimilarityRequest, Body()]) -> SimilarityResponse:
        """POST /similarity with this collection's model."""
        with collections.get(name).use() as collection:
            return await similarity_with(collection.service, request)


def _document_routes(app: FastAPI, collections: Collections, config: ApiConfig, reader: list[Any],
                     writer: list[Any], metrics: ApiMetrics) -> None:
    """A collection's documents: written, read back, deleted. Writes run in worker threads."""
    wait = config.write_wait_seconds

    async def written(name: str, write: Callable[[Collection], WriteResponse]) -> WriteResponse:
        with collections.get(name).use() as collection:
            answer = await anyio.to_thread.run_sync(write, collection)
        metrics.count_writes(name, write_counts(answer))
        return answer

    @app.post("/collections/{name}/documents", response_model=WriteResponse, dependencies=writer)
    async def post_documents(name: CollectionName, request: DocumentsRequest) -> WriteResponse:
        """Add new documents, replace changed ones, leave unchanged ones alone; 200 once committed."""
        return await written(name, lambda c: write_documents(c, request, collections.models, config.default_model,
                                                             wait))

    @app.post("/collections/{name}/documents/delete", response_model=WriteResponse, dependencies=writer)
    async def delete_many(name: CollectionName, request: DeleteDocumentsRequest) -> WriteResponse:
        """Delete documents by ids, or every one a metadata filter matches; 200 once committed."""
        return await written(name, lambda c: delete_request(c, request, wait))

    @app.get("/collections/{name}/documents/{doc_id:path}", response_model=DocumentOut, dependencies=reader)
    async def get_document(name: CollectionName, doc_id: str) -> DocumentOut:
        """The committed document and its passages."""
        with collections.get(name).use() as collection:
            return await anyio.to_thread.run_sync(read_document, collection, doc_id)

    @app.delete("/collections/{name}/documents/{doc_id:path}", response_model=WriteResponse, dependencies=writer)
    async def delete_one(name: CollectionName, doc_id: str) -> WriteResponse:
        """Delete one document; 404 when the collection holds none with this id."""
        answer = await written(name, lambda c: delete_documents(c, [doc_id], wait))
        if answer.not_found:
            raise ApiError(404, "no_document", f"Collection {name!r} holds no document {doc_id[:200]!r}.")
        return answer


def app_from_env() -> FastAPI:
    """The app of one worker of `--workers N`: uvicorn imports it by name in each process."""
    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise RuntimeError(f"{CONFIG_ENV} is not set; start the service with python -m search.api.")
    return create_app(ApiConfig.from_json(text))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m search.api", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--index", type=Path, help="the index folder to serve (it may not exist yet)")
    where.add_argument("--root", type=Path, help="serve every index folder under ROOT as a collection, and "
                       "create and delete collections there over HTTP (/collections)")
    parser.add_argument("--default-model", default=None, metavar="PATH",
                        help="the model of a collection created without one (default: all-MiniLM-L6-v2)")
    parser.add_argument("--write-wait", type=float, default=DEFAULT_WRITE_WAIT_S, metavar="SECONDS",
                        help="how long a write waits while another build holds its collection's lock, "
                        f"then answers 503 with Retry-After (default {DEFAULT_WRITE_WAIT_S:g})")
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
    parser.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="serve on Ray Serve instead of uvicorn (search/api_ray.py): 'local' starts a Ray "
                        "here, else a running cluster's address (ray://HOST:10001, or auto)")
    parser.add_argument("--replicas", type=int, default=1,
                        help="with --ray: copies of the service over the same index (default 1)")
    parser.add_argument("--replica-cpus", type=float, default=1.0,
                        help="with --ray: CPUs each replica reserves on its node (default 1)")
    parser.add_argument("--shards", type=int, default=0,
                        help="with --ray: serve an index built with --shards N as N shard deployments behind a "
                        "router, each holding 1/N of the vectors and BM25 (default: one index per replica)")
    parser.add_argument("--shard-cpus", type=float, default=1.0,
                        help="with --shards: CPUs each shard replica reserves on its node (default 1)")
    parser.add_argument("--shard-timeout", type=float, default=30.0,
                        help="with --shards: seconds the router waits for a shard before answering 503 (default 30)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
            index_dir=args.index, root=args.root, default_model=args.default_model,
            write_wait_seconds=args.write_wait, db_url=args.db, rerank_model=args.rerank_model, rerank=args.rerank,
            poll_seconds=args.poll_seconds, search_threads=args.search_threads,
            cors_origins=tuple(args.cors_origin), open_in_background=not args.load_first,
            api_keys=None if keys is None else str(keys.resolve()),
        )
        if keys is not None:
            ApiKeys.load(keys)  # refuse a bad keys file here, once, before any worker starts
        if args.ray is not None:
            return _serve_on_ray(config, args)
        if args.shards:
            raise ValueError("--shards runs the shards as Ray Serve deployments: add --ray local (or a "
                             "cluster's address).")
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
        # h11, named: uvicorn takes httptools when it is installed (Ray Serve brings it), which
        # ignores the head-size limit below and refuses a long URL with its own plain-text 400
        # instead of the app's JSON 414 (tests/search/test_api_server.py).
        uvicorn.run(app, host=args.host, port=args.port, workers=args.workers, factory=isinstance(app, str),
                    log_level=args.log_level.lower(), timeout_worker_healthcheck=WORKER_HEALTHCHECK_S,
                    http="h11", h11_max_incomplete_event_size=MAX_HTTP_HEAD_BYTES)
    return 0


def _serve_on_ray(config: ApiConfig, args: argparse.Namespace) -> int:
    from search.api_ray import RayServeConfig, serve_until_interrupted

    if args.workers != 1:
        raise ValueError("--workers is uvicorn's processes on this machine; with --ray give --replicas instead.")
    resolve_reranker(config.rerank, reranker_setting(config))  # refuse a bad setting once, here
    ray_config = RayServeConfig(address=args.ray, replicas=args.replicas, replica_cpus=args.replica_cpus,
                                host=args.host, port=args.port, shards=args.shards, shard_cpus=args.shard_cpus,
                                shard_timeout_s=args.shard_timeout)
    return serve_until_interrupted(config, ray_config, create_app)


if __name__ == "__main__":
    sys.exit(main())
