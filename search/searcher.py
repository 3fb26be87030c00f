"""`Searcher`: the query pipeline over an index folder (retrieve, optionally rerank, keep k)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from indexer.bm25_store import BM25Store
from indexer.embedding import load_bi_encoder, model_spec
from indexer.errors import IndexMismatchError
from indexer.faiss_store import VectorStore
from indexer.sql_store import (
    bm25_dir_of,
    count_documents,
    count_passages,
    index_info,
    make_engine,
    passage_details,
    passage_documents,
    read_manifest,
    resolve_db_url,
)
from search.config import SearchConfig, check_mode
from search.errors import EmptyQueryError, IndexNotFoundError, IndexUnreadableError
from search.hits import Hit, SearchResult, StageTimings
from search.rerank import Reranker
from search.retrieve import BM25Retriever, Candidate, DenseRetriever, HybridRetriever, Retriever

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexStats:
    documents: int
    passages: int
    model: str
    dimension: int
    built_at: dt.datetime
    build_seconds: float
    vector_file: str
    bm25_dir: str | None = None


def _missing_index(index_dir: Path) -> IndexNotFoundError:
    return IndexNotFoundError(
        f"No index found in {index_dir}. Build one with: "
        f"python -m indexer build --source PATH --index {index_dir}"
    )


class Searcher:
    """Dense, BM25 or hybrid retrieval over the passages of one index, one hit per document by default.

    The model is the one the index was built with unless `model` names another
    with the same identity; a different model would give meaningless scores.
    The vectors and the BM25 index are loaded together from the names one SQL
    row records, so both always match the same committed passages.
    """

    def __init__(
        self,
        index_dir: Path | str,
        model: str | None = None,
        db_url: str | None = None,
        config: SearchConfig | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self.index_dir = Path(index_dir)
        self.config = config or SearchConfig()
        self.reranker = reranker
        self._warned_no_bm25 = False
        if not self.index_dir.is_dir() or (read_manifest(self.index_dir) is None and db_url is None):
            raise _missing_index(self.index_dir)
        self._engine = make_engine(resolve_db_url(self.index_dir, db_url))
        with Session(self._engine) as session:
            try:
                info = index_info(session)
            except (OperationalError, ProgrammingError) as err:  # no tables: not an index
                raise _missing_index(self.index_dir) from err
            if info is None:
                raise _missing_index(self.index_dir)
            self._model_spec = info.model
            if model is not None and model_spec(model) != info.model:
                raise IndexMismatchError(
                    f"The index in {self.index_dir} was built with {info.model}; searching it "
                    f"with {model_spec(model)} would compare unrelated vectors. Leave the model "
                    "out, or rebuild the index with this model."
                )
            vector_file = info.vector_file
            bm25_dir = bm25_dir_of(session)
        try:
            self.model = load_bi_encoder(self._model_spec)
        except FileNotFoundError as err:
            raise IndexUnreadableError(f"The index in {self.index_dir} cannot be opened: {err}") from err
        self._load_stores(vector_file, bm25_dir)

    def _load_stores(self, vector_file: str, bm25_dir: str | None) -> None:
        try:
            store = VectorStore.load(self.index_dir / vector_file)
            bm25 = BM25Store.load(self.index_dir / bm25_dir) if bm25_dir else None
        except FileNotFoundError as err:
            raise IndexUnreadableError(f"The index in {self.index_dir} cannot be opened: {err}") from err
        self._vector_file, self._bm25_dir = vector_file, bm25_dir
        self.store, self.bm25_store = store, bm25
        self.dense = DenseRetriever(self.model, store)
        self.bm25 = BM25Retriever(bm25) if bm25 is not None else None
        self.hybrid = (
            HybridRetriever(self.dense, self.bm25, self.config.rrf_k) if self.bm25 is not None else None
        )

    @property
    def has_bm25(self) -> bool:
        """False for an index built before BM25 existed, until its next build adds it."""
        return self.bm25 is not None

    def _default_mode(self) -> str:
        """`config.mode`, or dense on an index built before BM25, so searches that name no mode
        keep working until the next build adds BM25; naming bm25 or hybrid raises instead."""
        mode = self.config.mode
        if mode != "dense" and not self.has_bm25:
            if self._warned_no_bm25:
                return "dense"
            self._warned_no_bm25 = True
            logger.warning(
                "The index in %s has no BM25 index yet, so the default mode %r falls back to "
                "dense. Run `python -m indexer build --source PATH --index %s` once to add it.",
                self.index_dir, mode, self.index_dir,
            )
            return "dense"
        return mode

    def retriever(self, mode: str) -> Retriever:
        """The retriever behind `mode`, for use on its own (passage ids in, no grouping)."""
        check_mode(mode)
        if mode == "dense":
            return self.dense
        if self.bm25 is None or self.hybrid is None:
            raise IndexUnreadableError(
                f"The index in {self.index_dir} has no BM25 index (it was built before BM25 "
                f"support), so mode {mode!r} cannot run. Run `python -m indexer build --source "
                f"PATH --index {self.index_dir}` once to add it (nothing is re-embedded), or "
                "search with mode='dense'."
            )
        return self.bm25 if mode == "bm25" else self.hybrid

    def refresh(self) -> bool:
        """Reload the vectors and BM25 if a build has committed since; True when something changed."""
        with Session(self._engine) as session:
            info = index_info(session)
            if info is None:
                return False
            vector_file, bm25_dir = info.vector_file, bm25_dir_of(session)
        if (vector_file, bm25_dir) == (self._vector_file, self._bm25_dir):
            return False
        self._load_stores(vector_file, bm25_dir)
        return True

    def stats(self) -> IndexStats:
        with Session(self._engine) as session:
            info = index_info(session)
            if info is None:
                raise _missing_index(self.index_dir)
            return IndexStats(
                documents=count_documents(session),
                passages=count_passages(session),
                model=info.model,
                dimension=info.dimension,
                built_at=info.built_at,
                build_seconds=info.build_seconds,
                vector_file=info.vector_file,
                bm25_dir=bm25_dir_of(session),
            )

    def search(
        self,
        query: str,
        k: int | None = None,
        mode: str | None = None,
        rerank: bool | None = None,
        candidates: int | None = None,
    ) -> list[Hit]:
        """The k best documents for `query`, each with its best-matching passage.

        `mode` is "dense", "bm25" or "hybrid" (default `config.mode`). `rerank`
        defaults to whether the Searcher was given a reranker; when reranking, the
        retriever's top `candidates` documents (default `config.rerank_candidates`)
        are rescored and the best k kept.
        """
        return self.search_detailed(query, k, mode, rerank, candidates).hits

    def search_detailed(
        self,
        query: str,
        k: int | None = None,
        mode: str | None = None,
        rerank: bool | None = None,
        candidates: int | None = None,
    ) -> SearchResult:
        """`search`, plus the mode used, how many candidates were reranked and per-stage timings."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, not {type(query).__name__}.")
        k = self.config.k if k is None else k
        if k < 1:
            raise ValueError(f"k ({k}) must be at least 1.")
        if mode is None:
            mode = self._default_mode()
        check_mode(mode)
        if rerank is None:
            rerank = self.reranker is not None
        reranker = self.reranker if rerank else None
        if rerank and reranker is None:
            raise ValueError(
                "rerank=True needs a reranker, and this Searcher has none. Create it with "
                "Searcher(index, reranker=CrossEncoderReranker(PATH)) (--rerank-model PATH "
                "on the command line), or search with rerank=False."
            )
        candidates = self.config.rerank_candidates if candidates is None else candidates
        if candidates < 1:
            raise ValueError(f"candidates ({candidates}) must be at least 1.")
        if rerank and k > candidates:
            raise ValueError(
                f"k ({k}) is greater than candidates ({candidates}); raise --candidates or lower k."
            )
        if not query.strip():
            raise EmptyQueryError("The query is empty. Type a few words to search for.")
        query = query.strip()
        retriever = self.retriever(mode)  # raises for bm25/hybrid on an index without BM25

        vector: np.ndarray | None = None
        encode_s = rerank_s = 0.0
        if mode != "bm25":
            started = time.perf_counter()
            vector = self.dense.encode_query(query)
            encode_s = time.perf_counter() - started
        started = time.perf_counter()
        fetch = self._fetcher(mode, retriever, query, vector)
        hits = self._retrieve_hits(fetch, candidates if rerank else k)
        retrieve_s = time.perf_counter() - started
        reranked = 0
        if reranker is not None and hits:
            started = time.perf_counter()
            hits = reranker.rerank(query, hits)
            rerank_s = time.perf_counter() - started
            reranked = len(hits)
        timings = StageTimings(encode_s=encode_s, retrieve_s=retrieve_s, rerank_s=rerank_s)
        return SearchResult(hits=hits[:k], mode=mode, reranked=reranked, timings=timings)

    def _fetcher(
        self, mode: str, retriever: Retriever, query: str, vector: np.ndarray | None
    ) -> Callable[[int], list[Candidate]]:
        """A function of n that reuses the query embedding, which the grouping loop may call often."""
        if mode == "dense" and vector is not None:
            return lambda n: self.dense.retrieve_vector(vector, n)
        if mode == "hybrid" and vector is not None and self.hybrid is not None:
            hybrid = self.hybrid
            return lambda n: hybrid.retrieve_vector(query, vector, n)
        return lambda n: retriever.retrieve(query, n)

    def _retrieve_hits(self, fetch: Callable[[int], list[Candidate]], k: int) -> list[Hit]:
        """Fetch passages until k distinct documents are found or the retriever runs out."""
        total = self.store.ntotal
        n = min(total, k * self.config.candidate_factor)
        while True:
            candidates = fetch(n)
            hits = self._to_hits(candidates, k)
            if len(hits) >= k or n >= total or len(candidates) < n:
                return hits
            n = min(total, n * 2)

    def _to_hits(self, candidates: list[Candidate], k: int) -> list[Hit]:
        """The first k candidates (one per document unless configured otherwise) as hits.

        Grouping needs only passage -> document ids; text and metadata are then
        loaded for the k chosen passages alone.
        """
        with Session(self._engine) as session:
            document_of = passage_documents(session, [c.passage_id for c in candidates])
            chosen: list[Candidate] = []
            seen_docs: set[int] = set()
            for cand in candidates:
                doc_id = document_of.get(cand.passage_id)
                if doc_id is None:  # deleted by a build that committed after we loaded the vectors
                    continue
                if self.config.one_hit_per_document:
                    if doc_id in seen_docs:
                        continue
                    seen_docs.add(doc_id)
                chosen.append(cand)
                if len(chosen) == k:
                    break
            details = passage_details(session, [c.passage_id for c in chosen])
        hits: list[Hit] = []
        for cand in chosen:
            row = details.get(cand.passage_id)
            if row is None:
                continue
            hits.append(
                Hit(
                    doc_id=row.doc_key,
                    title=row.title,
                    text=row.text,
                    score=cand.score,
                    retriever_score=cand.score,
                    metadata=dict(row.meta or {}),
                    passage_id=row.id,
                    start_char=row.start_char,
                    end_char=row.end_char,
                    source=row.source,
                )
            )
        return hits
