"""`Searcher`: the query pipeline over an index (retrieve, optionally rerank, keep k).

It asks an `Index` for everything stored: the model, one consistent build's
vector and BM25 stores, and the passages behind the ids they return. It opens
no database session and no index file itself.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from indexer.embedding import (
    check_model_argument,
    embedding_dimension,
    encode_texts,
    is_loaded_bi_encoder,
)
from indexer.index import Index, IndexStats
from indexer.model_spec import ModelSpec
from indexer.store.passage_subset import PassageSubset
from indexer.store.records import IndexSnapshot, PassageRecord, SnapshotLoader
from search.config import SearchConfig
from search.document_ranking import rank_in_rounds
from search.errors import ModelNotReadyError, NoRerankerError, StaleBuildWarning
from search.filter_note import no_match_note
from search.fusion import Fusion
from search.hits import Hit, SearchResult, StageTimings
from search.inputs import ordered, text_input
from search.model_load import MODEL_LOADING, ModelLoad
from search.params import MAX_K, SearchParams
from search.relevance import Calibrated, Calibration, load_calibration
from search.rerank import Reranker
from search.retrieve import (
    HybridRetriever,
    ModeChoice,
    Query,
    Retriever,
    choose_mode,
    retrievers_for,
)

__all__ = ["MODEL_LOADING", "IndexStats", "LoadedBuild", "ModelLoad", "Searcher"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class LoadedBuild:
    """One committed build as the searcher answers from it: a retriever per mode, and its figures.

    Replaced as a whole when a newer build is loaded, so a search that took it
    keeps one consistent view while another thread refreshes.
    """

    build_id: str
    retrievers: Mapping[str, Retriever]
    passages: int
    stats: IndexStats
    bm25_problem: str | None = None
    snapshot: IndexSnapshot | None = None  # what a filter's matching passages are computed on


def _query_text(query: object, name: str) -> str:
    """`query` stripped; a TypeError for another type, EmptyQueryError for one without words."""
    where = "The query" if name == "query" else f"Query {name}"
    return text_input(query, name, f"{where} is empty. Type a few words to search for.")


def distinct_passages(ranked: Sequence[tuple[Any, PassageRecord]]) -> tuple[list[tuple[Any, PassageRecord]],
                                                                            dict[int, list[str]]]:
    """`ranked` less every entry whose passage text (spaces collapsed) repeats a higher entry's,
    and, per kept passage id, the document ids merged into it, in rank order."""
    first: dict[str, int] = {}
    distinct: list[tuple[Any, PassageRecord]] = []
    merged: dict[int, list[str]] = {}
    for doc, record in ranked:
        key = " ".join(record.text.split())
        owner = first.setdefault(key, record.passage_id)
        if owner == record.passage_id:
            distinct.append((doc, record))
        else:
            merged.setdefault(owner, []).append(record.doc_id)
    return distinct, merged


def at_the_ends(choice: ModeChoice, fused_by: Fusion) -> ModeChoice:
    """A hybrid search at a dense share of 1 is the dense search, and at 0 the BM25 one, exactly:
    fusing would still rank by the fused lists' own rules (reciprocal ranks, no second-passage
    bonus), which differ from the single retriever's, while the share promises one list alone."""
    if choice.mode != "hybrid" or fused_by.weight not in (0.0, 1.0):
        return choice
    return replace(choice, mode="dense" if fused_by.weight == 1.0 else "bm25")


def with_relevance(hits: list[Hit], calibrated: Calibrated, scored: int) -> list[Hit]:
    """`hits` with the calibrated relevance of the first `scored` (those ranked by the score the
    curve was fitted on: after reranking, the reranked head; the tail past it keeps None)."""
    if calibrated.curve is None or not hits:
        return hits
    probabilities = calibrated.curve([hit.score for hit in hits[:scored]])
    return [replace(hit, relevance=p) for hit, p in zip(hits, probabilities, strict=False)] + hits[scored:]


class Searcher:
    """Dense, BM25 or hybrid retrieval over the passages of one index, one hit per document by default.

    The model is the one the index was built with unless `model` names another
    with the same identity; a different model would give meaningless scores.
    The vectors and the BM25 index come from one committed build, so both
    always match the same passages.

    `model_loading` says when the bi-encoder loads (torch and sentence-transformers
    with it: seconds on a small CPU). "eager", the default, loads it before the
    constructor returns, so every search runs in the mode asked and a model that cannot
    load raises from the constructor: what scripts, the CLI and the evaluation want.
    "background" returns at once and loads it in a thread: until it is ready, a search
    that needs it (dense, hybrid) answers with BM25, with `mode` "bm25" and a
    `fallback_reason` saying so, then switches by itself: an interactive page's first
    search does not wait for torch. "lazy" loads it on the first search that
    needs it, which waits, so a BM25-only tool never imports torch. With either, a
    model that cannot load raises its error from every search that needs it, while
    BM25 searches keep working; `wait_for_model` waits for it.

    `rerank_by_default` is whether a search that does not say reranks with `reranker`
    (default: whenever there is one). The app, the CLI, the API and the evaluation
    pass `resolve_reranker`'s decision.

    `files` loads each build's vectors and BM25 instead of reading them from the folder: a
    sharded service passes `indexer.store.shards.sharded_files(shards)`, and the searcher ranks,
    fuses, groups and reads passages exactly as over one index.
    """

    def __init__(
        self,
        index_dir: Path | str | os.PathLike[str],
        model: Any = None,
        db_url: str | None = None,
        config: SearchConfig | None = None,
        reranker: Reranker | None = None,
        model_loading: str = "eager",
        rerank_by_default: bool | None = None,
        files: SnapshotLoader | None = None,
    ) -> None:
        if rerank_by_default and reranker is None:
            raise ValueError("rerank_by_default=True needs a reranker; pass reranker=CrossEncoderReranker(PATH).")
        self.config = config or SearchConfig()
        self.reranker = reranker
        self.rerank_by_default = reranker is not None if rerank_by_default is None else rerank_by_default
        # The relevance curves (`search.relevance`): the shipped ones; a program may set its own.
        self.calibration: Calibration | None = load_calibration()
        check_model_argument(model)
        self.index = Index.open(index_dir, db_url=db_url, files=files)
        self.index_dir = self.index.index_dir
        try:
            if is_loaded_bi_encoder(model):
                self.index.check_dimension(embedding_dimension(model))
                self._model = ModelLoad(lambda: model, "eager")
            else:
                if model is not None:
                    self.index.check_model(ModelSpec.resolve(model))
                self._model = ModelLoad(self.index.load_model, model_loading)
        except BaseException:
            self.index.close()
            raise
        self._closed = False
        self._refresh_lock = threading.Lock()
        self._warned_fallback = False
        self._filter_notes: dict[tuple[str, tuple[str, ...]], str] = {}
        self._loaded = self._load()

    def _load(self) -> LoadedBuild:
        """The build the index has loaded, with its figures (read from that same build)."""
        snapshot = self.index.snapshot()
        stats = IndexStats.of(snapshot.info)  # the figures of this very build
        return LoadedBuild(
            build_id=snapshot.build_id,
            retrievers=retrievers_for(snapshot.vectors, snapshot.bm25, self.config.fusion_for()),
            passages=snapshot.vectors.ntotal,
            stats=stats,
            bm25_problem=snapshot.bm25_problem,
            snapshot=snapshot,
        )

    @property
    def model(self) -> Any:
        """The index's bi-encoder; waits for it (or loads it) if it is not loaded yet."""
        return self._model.get()

    @model.setter
    def model(self, model: Any) -> None:
        """Search with this bi-encoder object instead (tests wrap the loaded one to count calls)."""
        self._model = ModelLoad(lambda: model, "eager")

    @property
    def model_loading(self) -> bool:
        """True while the model loads in the background, and searches that need it run BM25."""
        return self._model.loading

    @property
    def model_loaded(self) -> bool:
        """True once the bi-encoder has loaded (a lazy one loads with the first search needing it)."""
        return self._model.loaded

    def wait_for_model(self, timeout: float | None = None) -> None:
        """Block until the model has loaded (TimeoutError after `timeout` s); raises its error
        if it cannot load."""
        self._model.get(timeout)

    @property
    def modes(self) -> tuple[str, ...]:
        """The modes the loaded build can run."""
        return tuple(self._loaded.retrievers)

    def query(self, text: str) -> Query:
        """A `Query` for this searcher's model, to call a retriever with directly."""
        return Query(text, self.model)

    def retriever(self, mode: str | None = None) -> Retriever:
        """The retriever a search in `mode` runs, for use on its own (passage ids in, no grouping)."""
        loaded = self._loaded
        choice = choose_mode(mode, self.config.mode, loaded.retrievers, self.index_dir,
                             bm25_problem=loaded.bm25_problem)
        return loaded.retrievers[choice.mode]

    def refresh(self) -> bool:
        """Load the newest committed build if another has committed since; True when it changed.

        One small SQL read when nothing changed; `search` calls it first unless
        `config.auto_refresh` is off.
        """
        with self._refresh_lock:
            if not self.index.refresh():
                return False
            self._loaded = self._load()
            return True

    def stats(self) -> IndexStats:
        """The figures of the build this searcher answers from (the newest, with auto_refresh)."""
        if self.config.auto_refresh:
            self.refresh()
        return self._loaded.stats

    def build_progress(self) -> tuple[int, int] | None:
        """(passages committed, passages to commit) of a build growing the index in chunks right
        now: searches answer from the committed part meanwhile. None when no build runs."""
        return self.index.build_progress()

    def close(self) -> None:
        """Release the index (its database connections); searching afterwards raises ValueError."""
        self._closed = True
        self.index.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("This Searcher is closed; open another: Searcher(index_dir).")

    def params(self, params: SearchParams | None = None, **fields: object) -> SearchParams:
        """`params` (default: `SearchParams()`) with `fields` replaced, checked."""
        if params is None:
            return SearchParams(**fields)  # type: ignore[arg-type]
        return replace(params, **cast(dict[str, Any], fields)) if fields else params

    def reranks(self, params: SearchParams) -> bool:
        """The one rule for whether a search reranks: what it asks, else `rerank_by_default`.
        Asking without a reranker raises `NoRerankerError`."""
        rerank = self.rerank_by_default if params.rerank is None else params.rerank
        if rerank and self.reranker is None:
            raise NoRerankerError(
                "rerank=True needs a reranker, and this Searcher has none. Create it with "
                "Searcher(index, reranker=CrossEncoderReranker(PATH)) (--rerank-model PATH "
                "on the command line), or search with rerank=False."
            )
        return rerank

    def search(self, query: str, params: SearchParams | None = None, **fields: object) -> list[Hit]:
        """The k best documents for `query`, each with its best-matching passage.

        `params` says what to search for (`SearchParams`: k, mode, rerank, candidates,
        fusion, fusion_weight); keyword `fields` build or override one, so
        `search(q, k=5, mode="bm25")` works too. A field left None takes this
        searcher's setting: `config.mode`, `config.rerank_candidates`,
        `config.fusion_for()`, `rerank_by_default`. The top k never depends on k:
        `search(q, k=5) == search(q, k=30)[:5]`.
        """
        return self.search_detailed(query, params, **fields).hits

    def search_detailed(self, query: str, params: SearchParams | None = None, **fields: object) -> SearchResult:
        """`search`, plus the mode that ran, how many candidates were reranked and per-stage timings.
        Every field is checked before anything is retrieved."""
        return self._search(_query_text(query, "query"), self.params(params, **fields))

    def search_batch(self, queries: Sequence[str], params: SearchParams | None = None,
                     **fields: object) -> list[SearchResult]:
        """What `search_detailed` answers for each query, in order. The queries a model reads are
        encoded together, in one batch, which is what makes a batch faster than the same queries
        one at a time; each result's `encode_s` is its share of that batch. Every query is checked
        (a string with words) before any is searched."""
        texts = [_query_text(query, f"queries[{i}]") for i, query in enumerate(ordered(queries, "queries"))]
        params = self.params(params, **fields)
        prepared: list[Query | None] = [None] * len(texts)
        _, choice = self._choose(params.mode, params.model_wait)
        if texts and choice.mode != "bm25":
            started = time.perf_counter()
            embeddings = encode_texts(self.model, texts)
            share = (time.perf_counter() - started) / len(texts)
            prepared = [Query.encoded(text, self.model, embeddings[i : i + 1], share) for i, text in enumerate(texts)]
        return [self._search(text, params, query) for text, query in zip(texts, prepared, strict=True)]

    def _search(self, text: str, params: SearchParams, prepared: Query | None = None) -> SearchResult:
        """One search of `text` (stripped, with words) with checked `params`; `prepared` carries its
        embedding when a batch computed it."""
        k = min(params.offset + params.k, MAX_K)  # a page is cut from the top offset + k: raising either only appends
        candidates = self.config.rerank_candidates if params.candidates is None else params.candidates
        fused_by = self.config.fusion_for(params.fusion, params.fusion_weight)
        reranker = self.reranker if self.reranks(params) else None
        if reranker is not None and k > candidates and not params.keep_tail:
            raise ValueError(
                f"{'k' if not params.offset else 'offset + k'} ({k}) is greater than candidates "
                f"({candidates}); raise candidates or lower k."
            )
        loaded, choice = self._choose(params.mode, params.model_wait)
        choice = at_the_ends(choice, fused_by)
        model = None if choice.mode == "bm25" else self.model  # may wait for it; BM25 never encodes
        started = time.perf_counter()
        request = prepared if prepared is not None and model is not None else Query(text, model)
        depth = (max(k, candidates) if params.keep_tail else candidates) if reranker is not None else k
        within = self._within(loaded, params)
        hits, skipped = self._retrieve_hits(loaded, choice.mode, request, depth, fused_by, within)
        expected = loaded.stats.documents if within is None else within.documents
        if len(hits) < min(depth, expected) and self.config.auto_refresh and self.refresh():
            # A build committed while this search read, and its rows replaced passages the loaded
            # build still named (a rebuild replaces all): answer from the new build instead.
            loaded, choice = self._choose(params.mode, params.model_wait)
            choice = at_the_ends(choice, fused_by)
            if choice.mode != "bm25" and request.model is None:
                request = Query(text, self.model)
            within = self._within(loaded, params)
            hits, skipped = self._retrieve_hits(loaded, choice.mode, request, depth, fused_by, within)
        if skipped and len(hits) < depth:
            warnings.warn(
                f"{skipped} of the documents this search ranked were deleted or changed by another "
                f"process after this Searcher loaded its build, and only {len(hits)} remain to show. "
                "Call refresh() (or keep SearchConfig.auto_refresh on) to search the newest build.",
                StaleBuildWarning, stacklevel=3)
        retrieve_s = time.perf_counter() - started - request.encode_s
        reranked, rerank_s = 0, 0.0
        if reranker is not None and hits:
            started = time.perf_counter()
            head, tail = hits[:candidates], hits[candidates:]
            hits = reranker.rerank(text, head) + tail
            rerank_s = time.perf_counter() - started
            reranked = len(head)
        calibrated = self.calibrated(choice.mode, fused_by, reranked > 0, loaded.stats.model_label)
        hits = with_relevance(hits, calibrated, reranked if reranker is not None else len(hits))
        note = calibrated.note
        if params.min_relevance is not None:
            if calibrated.curve is None:
                note = f"min_relevance was not applied: {note}"
            else:  # relevance never rises down the ranking: a cut, which keeps the top k stable
                hits = [hit for hit in hits if hit.relevance is not None and hit.relevance >= params.min_relevance]
        return SearchResult(
            hits=hits[params.offset:k],
            mode=choice.mode,
            reranked=reranked,
            timings=StageTimings(encode_s=request.encode_s, retrieve_s=retrieve_s, rerank_s=rerank_s),
            fallback_reason=choice.fallback_reason,
            stats=loaded.stats,
            skipped=skipped,
            relevance_note=note,
            filter_note=self._filter_note(loaded, within),
        )

    def _filter_note(self, loaded: LoadedBuild, within: PassageSubset | None) -> str | None:
        """Why the search's filter matched no document (`search.filter_note`); None when it matched
        some, or without a filter. Made once per build and set of absent fields: listing the index's
        fields reads every document's metadata."""
        if within is None or within.documents:
            return None
        key = (loaded.stats.build_id, within.absent_fields)
        note = self._filter_notes.get(key)
        if note is None:
            fields = self.index.metadata_fields() if within.absent_fields else []
            if len(self._filter_notes) >= 64:
                self._filter_notes.clear()
            note = self._filter_notes[key] = no_match_note(within.absent_fields, fields)
        return note

    def calibrated(self, mode: str, fusion: Fusion, reranked: bool, model_label: str) -> Calibrated:
        """The relevance curve for a ranking, from `self.calibration` (`search.relevance`)."""
        calibration = self.calibration
        if calibration is None:
            return Calibrated(None, None, "no relevance calibration is installed (search/calibration.json)")
        return calibration.for_ranking(mode, fusion if mode == "hybrid" else None, reranked, model_label)

    def _choose(self, mode: str | None, model_wait: float | None = None) -> tuple[LoadedBuild, ModeChoice]:
        """The newest build (with auto_refresh) and the mode a search asking `mode` runs in it.

        A mode the caller named is served: while the model loads, a search naming dense or
        hybrid waits for it, at most `model_wait` seconds (None: as long as it takes), then raises
        `ModelNotReadyError`; only a search that names no mode falls back to BM25 meanwhile."""
        self._check_open()
        if self.config.auto_refresh:
            self.refresh()
        loaded = self._loaded
        if mode in ("dense", "hybrid") and self._model.loading:
            try:
                self._model.get(model_wait)
            except TimeoutError as err:
                raise ModelNotReadyError(
                    f"The semantic model is still loading after {model_wait:g} s, and mode {mode!r} needs it. "
                    "Wait longer (model_wait), search with mode='bm25', or leave the mode out to get "
                    "keyword (BM25) results until it has loaded.") from err
        loading = self._model.loading
        choice = choose_mode(mode, self.config.mode, loaded.retrievers, self.index_dir, model_ready=not loading,
                             bm25_problem=loaded.bm25_problem)
        # Logged once: an index without BM25 stays so until repaired; a loading model passes.
        if choice.fallback_reason is not None and not self._warned_fallback and not loading:
            self._warned_fallback = True
            logger.warning("%s", choice.fallback_reason)
        return loaded, choice

    def _within(self, loaded: LoadedBuild, params: SearchParams) -> PassageSubset | None:
        """The passages of the loaded build that the search's filter matches; None without one."""
        if params.filter is None:
            return None
        return self.index.matching_passages(params.filter, loaded.snapshot)  # type: ignore[arg-type]

    def _retrieve_hits(self, loaded: LoadedBuild, mode: str, query: Query, k: int, fused_by: Fusion,
                       within: PassageSubset | None = None) -> tuple[list[Hit], int]:
        """The first k documents of this query's one document ranking (`rank_in_rounds`: fetched at
        depths that never depend on k, so a larger k only appends), each a hit on its best passage;
        only documents of `within` (a filter's passages) when given. Documents whose rows have left
        the database since the build was loaded are skipped, and a document whose passage repeats
        a higher one's text word for word is merged into that hit (`Hit.merged`); the ranking is
        read further for as many more, so k distinct hits come back and the top k stays stable.
        Returns the hits and how many were skipped."""
        retriever = loaded.retrievers[mode]
        if isinstance(retriever, HybridRetriever):
            retriever = retriever.with_fusion(fused_by)
        second_passage_weight = self.config.second_passage_for(mode, fused_by.method)
        total = loaded.passages if within is None else min(loaded.passages, within.count)
        want = k
        while True:
            chosen = rank_in_rounds(
                lambda n: retriever.retrieve(query, n, within), self.index.document_ids, want,
                self.config.fusion_depth, total, second_passage_weight, self.config.one_hit_per_document)
            records = self.index.passages([doc.passage_id for doc in chosen])
            kept = [(doc, record) for doc in chosen if (record := records.get(doc.passage_id)) is not None]
            skipped = len(chosen) - len(kept)
            distinct, merged = distinct_passages(kept)
            if len(distinct) >= k or not (skipped or merged) or len(chosen) < want:
                break
            want += k - len(distinct)  # read on past the documents that are gone or merged
        hits = [
            Hit(doc_id=record.doc_id, title=record.title, text=record.text, score=doc.score,
                retriever_score=doc.score, metadata=record.metadata, passage_id=record.passage_id,
                start_char=record.start_char, end_char=record.end_char, source=record.source,
                location=record.location, path=record.path, merged=tuple(merged.get(record.passage_id, ())))
            for doc, record in distinct[:k]
        ]
        return hits, skipped
