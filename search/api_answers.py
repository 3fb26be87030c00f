"""What each route of the HTTP API answers: the functions between a validated request and its
response model, so that the routes in search/api.py only hand requests over."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

from fastapi import Request
from fastapi.exceptions import RequestValidationError

from indexer.build.collections import CollectionSettings
from indexer.errors import IndexerError, IndexNotFoundError, ShardUnavailableError
from indexer.model_spec import ModelSpec
from indexer.store.shards import partial_results
from indexer.store.sql_store import shown_url
from search.api_collection_models import (
    CollectionOut,
    CollectionSettingsIn,
    CollectionStatsOut,
)
from search.api_collections import (
    Collection,
    Collections,
    check_name,
    single_index,
)
from search.api_errors import (
    ApiError,
    redact,
)
from search.api_models import (
    BuildProgressOut,
    HealthResponse,
    HitOut,
    LocationOut,
    MatchOut,
    SearchBatchRequest,
    SearchBatchResponse,
    SearchFields,
    SearchRequest,
    SearchResponse,
    SimilarityRequest,
    SimilarityResponse,
    StatsResponse,
    TimingsOut,
)
from search.api_service import Service, in_worker_thread
from search.errors import NoRerankerError
from search.hits import SearchResult
from search.matches import find_matches, query_terms
from search.params import SearchParams
from search.searcher import Searcher
from search.sentence_similarity import similarity_matrix, unreadable_sentences

logger = logging.getLogger(__name__)

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


def health_of_service(collections: Collections) -> HealthResponse:
    """/health: the one index's, or with --root "loading" while any collection opens, else "ready"."""
    single = collections.single
    if single is not None:
        return health_of(single.service)
    if any(c.service.opening for c in collections.scan()):
        return HealthResponse(status="ok", index="loading", detail="Collections are loading.")
    return HealthResponse(status="ok", index="ready", detail=None)


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


def _searched(search: Callable[[Searcher, SearchParams], Any], searcher: Searcher, params: SearchParams,
              allow_partial: bool) -> tuple[Any, list[int]]:
    """`search(searcher, params)`, and the shards left out of it (`allow_partial` lets a sharded
    index answer without the shards that are down: `indexer.store.shards.partial_results`)."""
    if not allow_partial:
        return search(searcher, params), []
    with partial_results() as missing:
        return search(searcher, params), sorted(missing)


async def answer(service: Service, search: Callable[[Searcher, SearchParams], Any],
                 request: SearchFields) -> tuple[Any, list[int]]:
    """Run `search(searcher, params)` in a worker thread, turning what it raises into the API's
    errors; what it returned, and the shards missing from it (`allow_partial`)."""
    searcher = service.searcher()
    try:
        params = params_of(request)
        searcher.reranks(params)
        found = await in_worker_thread(service, functools.partial(
            _searched, search, searcher, params, request.allow_partial))
    except ShardUnavailableError as err:  # the shard is restarted by Ray Serve: worth a retry
        raise ApiError(503, "shard_unavailable", service.public(str(err)), {"Retry-After": "2"}) from err
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
    result, missing = await answer(service, lambda searcher, params: searcher.search_detailed(request.q, params),
                                   request)
    service.searched(result)
    return search_response(request.q, request, public_result(service, result), missing)


async def search_batch_with(service: Service, request: SearchBatchRequest) -> SearchBatchResponse:
    results, missing = await answer(service, lambda searcher, params: searcher.search_batch(request.queries, params),
                                    request)
    for result in results:
        service.searched(result)
    return SearchBatchResponse(results=[search_response(query, request, public_result(service, result), missing)
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


def search_response(query: str, request: SearchFields, result: SearchResult,
                    missing_shards: list[int] | None = None) -> SearchResponse:
    timings = result.timings
    terms = query_terms(query)
    return SearchResponse(
        query=query, k=request.k, offset=request.offset, mode=result.mode, fallback_reason=result.fallback_reason,
        relevance_note=result.relevance_note, filter_note=result.filter_note,
        reranked=result.reranked, build_id="" if result.stats is None else result.stats.build_id,
        missing_shards=missing_shards or [],
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
        matrix, label, unreadable = await in_worker_thread(service, compute)
    except IndexerError as err:
        raise service.unavailable(err) from err
    except (ValueError, TypeError) as err:  # the similarity functions' own checks, in the request's own names
        message = str(err).replace("sentences_a", "a").replace("sentences_b", "b")
        raise ApiError(400, "bad_request", service.public(message)) from err
    return SimilarityResponse(model=label, matrix=matrix, score=matrix[0][0] if pair else None,
                              unreadable=unreadable)


def figures_of(name: str, service: Service) -> tuple[str, str, bool, Any]:
    """What /metrics reads of one collection when scraped: (its name, its index state as /health
    says it, whether the model has loaded, the newest build's figures or None)."""
    state = health_of(service).index
    searcher = service.opened if service.ready else None
    stats = None
    if searcher is not None:
        with contextlib.suppress(IndexerError):
            stats = searcher.stats()
    return name, state, bool(searcher is not None and searcher.model_loaded), stats


def collection_out(collection: Collection) -> CollectionOut:
    """A collection as GET /collections lists it: its state, and its newest build's figures."""
    service = collection.service
    health = health_of(service)
    figures = figures_of(collection.name, service)[3]
    state = "empty" if health.index == "missing" else health.index
    stats = None if figures is None else CollectionStatsOut(
        documents=figures.documents, passages=figures.passages, model_label=figures.model_label,
        index_type=figures.vector_index, build_id=figures.build_id, built_at=figures.built_at)
    return CollectionOut(name=collection.name, state=state, detail=health.detail,
                         model=None if collection.settings.model is None else service.public(collection.settings.model),
                         stats=stats)


def create_collection(collections: Collections, name: str, body: CollectionSettingsIn) -> tuple[Collection, bool]:
    """PUT /collections/{name}: the settings checked (the model folder exists, the URL parses)."""
    if collections.root is None:
        raise single_index()
    check_name(name)
    try:
        if body.model is not None:
            ModelSpec.resolve(body.model)
        if body.database_url is not None:
            shown_url(body.database_url)
        settings = CollectionSettings(model=body.model, index_type=body.index_type, db_url=body.database_url)
    except (OSError, ValueError, ImportError) as err:
        raise ApiError(400, "bad_collection_settings", redact(str(err), {})) from err
    return collections.create(name, settings)
