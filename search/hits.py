"""What a search returns: `Hit`s in a `SearchResult`, immutable, each with a `to_dict()` that
`json.dumps` accepts."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from indexer.sources.outline import Location

if TYPE_CHECKING:
    from indexer.index import IndexStats


def _plain(value: Any) -> Any:
    """`value` as JSON can hold it: mappings as dicts, tuples as lists, times in RFC 3339."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dt.datetime):
        return (value if value.tzinfo else value.replace(tzinfo=dt.UTC)).isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


@dataclass(frozen=True)
class Hit:
    """One result: the document, its best passage and where that passage sits in it.

    `score` is what the hits are ordered by: the reranker's score when they were
    reranked, else the retriever's. `retriever_score` (cosine, BM25, or the
    fused score of the hybrid's fusion method, by mode; a z-score may be
    negative) and `rerank_score` keep both, so a UI can show why a reranked
    hit moved.

    A hit is immutable and hashable: `metadata` is a read-only view of a private copy of the
    document's metadata (`dict(hit.metadata)` gives a dict to change), and the hash leaves it out,
    so two equal hits hash alike. `to_dict()` is the hit as JSON-ready plain values.

    `location` is where the passage sits in its document: its pages (PDF; a presentation's slides)
    and heading path (Word, OpenDocument, HTML, EPUB, Markdown, reST); `location.label` reads "p. 7 · Installation › Linux", and
    is "" for a document without pages or headings (a JSONL record, plain text).
    """

    doc_id: str
    title: str
    text: str
    score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    passage_id: int = -1
    start_char: int = 0
    end_char: int = 0
    source: str = ""
    retriever_score: float | None = None
    rerank_score: float | None = None
    location: Location = field(default_factory=Location)
    # The file on this machine the document was read from (its folder joined to `source`); "" for
    # documents added without one. The HTTP API leaves it out: it names no server paths.
    path: str = ""
    # Lower-ranked documents whose best passage was this one's text word for word (the same section
    # in two files), merged into this hit so that a page never shows one passage twice. It names
    # those among the documents this search ranked, so a larger k may name more: a note, left out
    # of equality and the hash, which stay those of the ranking.
    merged: tuple[str, ...] = field(default=(), compare=False)
    # The probability that this hit is relevant, from the score that ranks it through the curve
    # fitted on the dev sets (`search.relevance`); never higher than a higher hit's. None when no
    # curve fits the search (another bi-encoder, a hit past the reranked head); see
    # `SearchResult.relevance_note`.
    relevance: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.metadata, MappingProxyType):
            object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __hash__(self) -> int:
        return hash((self.doc_id, self.passage_id, self.title, self.text, self.score, self.start_char,
                     self.end_char, self.source, self.retriever_score, self.rerank_score, self.location,
                     self.path, self.relevance))

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON values: `doc_id`, `title`, `text`, `score`, `metadata` (a
        dict), `passage_id`, `start_char`, `end_char`, `source`, `retriever_score`, `rerank_score`,
        `location` (`Location.to_dict`: page, page_last, section, label), `path`, `merged`,
        `relevance`."""
        values = _plain(self)
        values["location"] = self.location.to_dict()
        return values


@dataclass(frozen=True)
class StageTimings:
    """Seconds spent in each stage of one search; 0 for a stage the search skipped.

    `retrieve_s` covers the FAISS and/or BM25 lookups, fusion, the SQL fetch and
    grouping into documents; `encode_s` is embedding the query (dense and hybrid).
    """

    encode_s: float = 0.0
    retrieve_s: float = 0.0
    rerank_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.encode_s + self.retrieve_s + self.rerank_s


@dataclass(frozen=True)
class SearchResult:
    """Hits plus how they were found: the mode that ran, how many candidates were reranked, timings.

    `fallback_reason` is set when `mode` is not the one the search would have
    used (an index without BM25 searched dense), and says how to fix it.
    `stats` describes the committed build that answered, so a page can show the
    figures of the build its results come from.
    """

    hits: list[Hit]
    mode: str
    reranked: int = 0
    timings: StageTimings = field(default_factory=StageTimings)
    fallback_reason: str | None = None
    stats: IndexStats | None = None
    # Ranked documents left out because their rows left the database after this searcher loaded
    # its build (another process deleted or changed them; `Searcher.refresh` loads the newer one).
    # The search ranks deeper to make up for them, so fewer than k hits come back only when fewer
    # than k documents remain; `StaleBuildWarning` says so.
    skipped: int = 0
    # Why hits carry no relevance, or which curve stands in for the one asked (a hand-set weight).
    relevance_note: str | None = None
    # Why a filtered search found no document: a field no document has (named, with the fields
    # documents do have), or values none meets (`search.filter_note`). None otherwise.
    filter_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON values: `hits` (each `Hit.to_dict`), `mode`, `reranked`,
        `timings` (seconds per stage), `fallback_reason`, `stats` (times in RFC 3339), `skipped`,
        `relevance_note`, `filter_note`."""
        return _plain(self)
