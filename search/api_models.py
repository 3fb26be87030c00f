"""The HTTP API's request and response bodies, and the limits a request must keep within.

The limits bound what one request can cost a shared service: a query longer than
2,000 characters is far past the 256 tokens the model reads, and a similarity
request of 100 × 100 sentences is a few seconds of CPU. FastAPI publishes these
models, with their limits, in the OpenAPI schema at /docs.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    WithJsonSchema,
)

from indexer.store import metadata_filter
from search.fusion import FUSIONS
from search.params import DEFAULT_K, MAX_K

# A query or sentence longer than this is refused (422); the model reads 256 tokens of it anyway.
MAX_QUERY_CHARS = 2000
# A query must hold something besides whitespace (JSON Schema's patterns match anywhere): a
# character that is whitespace to none of Python (which also counts \x1c-\x1f and \x85), JSON
# Schema's ECMA regex (which also counts \ufeff) or the validator, so that no query the schema
# accepts is one the searcher finds empty.
HAS_WORDS = r"[^\s\x1c-\x1f\x85\ufeff]"
# Sentences in each list of a similarity request (422 above it), so a matrix is at most 100 x 100.
MAX_SIMILARITY_SENTENCES = 100
# Queries in one POST /search/batch (422 above it): encoded together, then searched one by one.
MAX_BATCH_QUERIES = 64
# Every request body, counted as it streams in (413 above it): the largest body the schema allows,
# two full similarity lists with every character written as a JSON escaped surrogate pair (12
# bytes), plus room for the other fields. So a body is refused by its size only when no schema
# could accept it, never one the schema accepts.
MAX_BODY_BYTES = 2 * MAX_SIMILARITY_SENTENCES * MAX_QUERY_CHARS * 12 + 64 * 1024
# The path and query string of a request (414 above it): a GET /search of the longest query,
# percent-encoded (3 bytes a character at most), with every other field, fits.
MAX_URL_BYTES = 8 * 1024
# All header names and values of a request together (431 above it).
MAX_HEADER_BYTES = 16 * 1024
# What the HTTP server (uvicorn's h11) buffers of a request line and headers before the app sees
# them: past this it answers "400 Invalid HTTP request received." itself, in plain text, as it does
# for a Content-Length or chunk size that is not a number. Below it, the limits above answer JSON.
MAX_HTTP_HEAD_BYTES = 1024 * 1024

Mode = Literal["dense", "bm25", "hybrid"]
FusionMethod = Literal["rrf", "minmax", "tmm", "zscore"]
assert get_args(FusionMethod) == FUSIONS, "FusionMethod must list search.fusion.FUSIONS"
Sentence = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=HAS_WORDS)]
Sentences = Annotated[list[Sentence], Field(min_length=1, max_length=MAX_SIMILARITY_SENTENCES)]


def _whole_number(value: object) -> object:
    """166.0 as 166: JSON Schema's `integer` admits a number with a zero fraction, and JSON has
    no other way to tell; 2.5, "5" and true stay what they are, and strict validation refuses them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# An integer field of a strict request body, as JSON Schema defines integers, from 1 to MAX_K
# (the bounds inside the type, so that the schema of an optional one keeps them).
WholeNumber = Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(_whole_number)]
Offset = Annotated[int, Field(ge=0, le=MAX_K - 1), BeforeValidator(_whole_number)]


QueryText = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=HAS_WORDS)]


def _checked_filter(value: dict[str, Any]) -> dict[str, Any]:
    metadata_filter.parse_filter(value)  # a FilterError (a ValueError) is a 422 naming the fix
    return value


# The filter's schema is recursive, so it is published once as components (`filter_components`)
# and referred to from here; `metadata_filter.json_schema` states what `parse_filter` accepts.
FILTER_REF = "#/components/schemas/MetadataFilter"
MetadataFilterJson = Annotated[dict[str, Any], WithJsonSchema({"$ref": FILTER_REF}), AfterValidator(_checked_filter)]


def filter_components() -> dict[str, dict[str, Any]]:
    """The OpenAPI components a `MetadataFilterJson` refers to."""
    return metadata_filter.json_schema(FILTER_REF, "#/components/schemas/FieldCondition")


class SearchFields(BaseModel):
    """What a search asks besides its query, as `search.SearchParams` takes it. Strict: `"k": "5"`,
    `"k": 2.5` or `"rerank": "yes"` is a 422, not silently converted; `"k": 5.0` is the integer 5,
    as JSON Schema reads it."""

    model_config = ConfigDict(strict=True, extra="forbid")

    k: WholeNumber = Field(DEFAULT_K, description=f"documents to return, 1..{MAX_K}")
    offset: Offset = Field(0, description=f"documents of the ranking to skip first, 0..{MAX_K - 1} (the next "
                           f"page: offset=k); a search ranks at most {MAX_K} documents, so a page past them is cut")
    mode: Mode | None = Field(None, description="retriever; default hybrid (dense when the index has no BM25)")
    rerank: bool | None = Field(
        None, description="rescore the top `candidates` with the server's cross-encoder; default: the server's setting"
    )
    candidates: WholeNumber | None = Field(
        None, description=f"documents the reranker rescores, 1..{MAX_K} (default 50)"
    )
    fusion: FusionMethod | None = Field(
        None, description="how hybrid fuses dense and BM25: reciprocal rank, or min-max / theoretical "
        "min-max / z-score normalised scores combined; default the server's SearchConfig"
    )
    fusion_weight: float | None = Field(
        None, ge=0.0, le=1.0, allow_inf_nan=False,
        description="the dense list's share in hybrid, 0 (BM25 alone) to 1 (dense alone)",
    )
    min_relevance: float | None = Field(
        None, ge=0.0, le=1.0, allow_inf_nan=False,
        description="keep only hits whose calibrated relevance reaches this probability, 0..1 (a cut of the "
        "ranking, so fewer than k may come back); not applied where hits carry no relevance (BM25; dense or hybrid over an index "
        "of another bi-encoder than the curves were fitted with), "
        "and `relevance_note` says so",
    )
    filter: MetadataFilterJson | None = Field(
        None, description='keep only documents whose metadata matches, before ranking: {"tag": "billing", '
        '"year": {"$gte": 2025}}; k hits come back whenever k documents match (POST only)')
    allow_partial: bool = Field(
        False, description="on a sharded service (--shards N): when a shard does not answer, search the "
        "shards that do and name the others in `missing_shards`; by default such a search is a 503 "
        "naming the shard, never a silently partial answer")


class SearchRequest(SearchFields):
    """POST /search."""

    q: QueryText = Field(description="the query: some words, not only whitespace")


class SearchBatchRequest(SearchFields):
    """POST /search/batch: several queries with the same fields, encoded in one batch."""

    queries: list[QueryText] = Field(min_length=1, max_length=MAX_BATCH_QUERIES,
                                     description=f"1..{MAX_BATCH_QUERIES} queries, each as `q` of /search")


class SimilarityPair(BaseModel):
    """POST /similarity with two sentences: `score` is their cosine similarity."""

    model_config = ConfigDict(strict=True, extra="forbid")

    a: Sentence = Field(description=f"a sentence of 1..{MAX_QUERY_CHARS} characters, not only whitespace")
    b: Sentence = Field(description="another sentence")


class SimilarityLists(BaseModel):
    """POST /similarity with two lists: `matrix` holds len(a) x len(b) cosine similarities."""

    model_config = ConfigDict(strict=True, extra="forbid")

    a: Sentences = Field(description=f"1..{MAX_SIMILARITY_SENTENCES} sentences, each as in a pair")
    b: Sentences = Field(description=f"1..{MAX_SIMILARITY_SENTENCES} sentences")


def _similarity_shape(body: object) -> str:
    """Which shape a body asks for, by its `a`: a sentence makes a pair, anything else lists."""
    first = body.get("a") if isinstance(body, dict) else getattr(body, "a", None)
    return SIMILARITY_PAIR if isinstance(first, str) else SIMILARITY_LISTS


SIMILARITY_PAIR, SIMILARITY_LISTS = "pair", "lists"
# Both shapes in one body: the schema says a and b are both sentences or both lists, as the
# server requires; a body is checked against the shape its `a` asks for, so errors name a field
# of that shape (the tag is left out of their location).
SimilarityRequest = Annotated[
    Annotated[SimilarityPair, Tag(SIMILARITY_PAIR)] | Annotated[SimilarityLists, Tag(SIMILARITY_LISTS)],
    Discriminator(_similarity_shape),
]


class BuildProgressOut(BaseModel):
    done: int = Field(description="passages committed so far")
    total: int = Field(description="passages the build will have committed when it ends")


class MatchOut(BaseModel):
    start: int = Field(description="where the word starts in the hit's `text` (characters)")
    end: int = Field(description="where it ends")
    term: str = Field(description="the BM25 term it matched (a stem of a query word)")


class LocationOut(BaseModel):
    page: int | None = Field(description="the passage's first page (1-based, as a PDF viewer counts); "
                             "null where the document has no pages")
    page_last: int | None = Field(description="its last page (equal to `page` on one page)")
    section: list[str] = Field(description="its heading path, outermost first; empty without headings")
    label: str = Field(description="how a person reads it: 'p. 7', 'pp. 7–8', 'Installation › Linux', "
                       "or both joined by ' · '; empty when there is neither")


class HitOut(BaseModel):
    rank: int
    doc_id: str
    title: str
    text: str = Field(description="the passage that matched")
    start_char: int = Field(description="where the passage starts in the document")
    end_char: int
    score: float = Field(description="what hits are ordered by: the reranker's when reranked")
    retriever_score: float | None = Field(description="cosine, BM25 or fused reciprocal-rank score, by mode")
    rerank_score: float | None = Field(description="the cross-encoder's score; null when not reranked")
    metadata: dict[str, Any]
    source: str = Field(description="the file the document was read from")
    location: LocationOut = Field(description="where the passage is in its document: pages and headings")
    relevance: float | None = Field(ge=0.0, le=1.0, description=(
        "the probability that this hit is relevant, from the score that ranks it through a curve fitted "
        "on the dev sets (never higher than a higher hit's); null when no curve fits the search, and "
        "`relevance_note` says why"))
    merged: list[str] = Field(description="ids of lower-ranked documents whose passage was this one's text "
                              "word for word, merged into this hit; empty when none")
    matches: list[MatchOut] = Field(
        description="the words of `text` the query matches as BM25 matches them (stop words left out, "
        "stems compared: 'opens' matches 'open'), whatever mode ran; empty when none do")


class TimingsOut(BaseModel):
    encode_ms: float
    retrieve_ms: float
    rerank_ms: float
    total_ms: float


class SearchResponse(BaseModel):
    query: str
    k: int
    offset: int = Field(description="documents of the ranking skipped before the first hit (its rank is offset + 1)")
    mode: str = Field(description="the mode that ran")
    fallback_reason: str | None = Field(description="why `mode` is not the one asked for, and the fix")
    relevance_note: str | None = Field(default=None, description=(
        "why hits carry no relevance, or which fitted curve stands in for the one asked"))
    filter_note: str | None = Field(default=None, description=(
        "why a filtered search found no document: a field no document has (with the fields documents "
        "have), or values none meets; null when the filter matched documents, or without a filter"))
    reranked: int = Field(description="how many candidates the cross-encoder rescored; 0 when it did not run")
    build_id: str = Field(description="the committed build that answered")
    missing_shards: list[int] = Field(default_factory=list, description=(
        "shards of a sharded service that did not answer, whose passages these hits lack (only with "
        "allow_partial=true); empty when every passage was searched"))
    timings: TimingsOut
    hits: list[HitOut]


class SearchBatchResponse(BaseModel):
    results: list[SearchResponse] = Field(description="one answer per query, in the order asked")


class StatsResponse(BaseModel):
    documents: int
    passages: int
    model: str
    model_label: str
    dimension: int
    index_type: str = Field(description="the FAISS index over unit vectors, e.g. 'exact (Flat)' or "
                                        "'IVF1024,SQ8 (nprobe 16, recall@10 0.962)'")
    recall_at_10: float = Field(description="recall@10 of the FAISS index against exact search, "
                                            "measured when it was built (1.0 when exact)")
    delta_segments: int = Field(description="segments appended since the last full build")
    modes: list[str] = Field(description="the modes this build can run")
    built_at: dt.datetime
    build_seconds: float
    build_id: str
    reranker: str | None = Field(description="the cross-encoder `rerank` uses; null when there is none")
    rerank_default: bool = Field(description="whether a search that does not say reranks")
    building: BuildProgressOut | None = Field(
        None, description="a build growing the index in chunks right now: searches answer from the "
        "passages committed so far; null when no build runs (a --rebuild commits once, at its end)")


class SimilarityResponse(BaseModel):
    model: str
    matrix: list[list[float | None]] = Field(description=(
        "cosine similarities in [-1, 1], one row per sentence of `a`; null where either sentence holds no "
        "word the model knows (see `unreadable`)"))
    score: float | None = Field(description="the one similarity, when `a` and `b` are sentences (null when "
                                "either is unreadable)")
    unreadable: list[str] = Field(default_factory=list, description=(
        "the sentences the model cannot read, as `a[i]` or `b[j]`: it knows almost none of their tokens "
        "(emoji, a script outside its vocabulary), so any two such texts would embed alike and score 1; "
        "their similarities are null"))


class HealthResponse(BaseModel):
    status: Literal["ok"]
    index: Literal["ready", "loading", "missing", "unreadable"]
    detail: str | None = Field(description="why the index is not ready, and the fix")


class ErrorItem(BaseModel):
    loc: str = Field(description="where: body.k, query.q, ...")
    msg: str


class ErrorResponse(BaseModel):
    error: str = Field(description="a short code: bad_request, invalid_request, no_index, ...")
    detail: str = Field(description="what was wrong, the allowed range and the fix")
    errors: list[ErrorItem] | None = None
