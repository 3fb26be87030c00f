"""`Searcher`: the query pipeline over an index folder (retrieve, optionally rerank, keep k)."""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from indexer.embedding import load_bi_encoder, model_spec
from indexer.errors import IndexMismatchError
from indexer.faiss_store import VectorStore
from indexer.sql_store import (
    count_documents,
    count_passages,
    index_info,
    make_engine,
    passages_with_documents,
    read_manifest,
    resolve_db_url,
)
from search.config import SearchConfig
from search.errors import EmptyQueryError, IndexNotFoundError, IndexUnreadableError
from search.hits import Hit
from search.rerank import Reranker
from search.retrieve import Candidate, DenseRetriever

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


def _missing_index(index_dir: Path) -> IndexNotFoundError:
    return IndexNotFoundError(
        f"No index found in {index_dir}. Build one with: "
        f"python -m indexer build --source PATH --index {index_dir}"
    )


class Searcher:
    """Dense retrieval over the passages of one index, one hit per document by default.

    The model is the one the index was built with unless `model` names another
    with the same identity; a different model would give meaningless scores.
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
            self._vector_file = info.vector_file
        try:
            self.model = load_bi_encoder(self._model_spec)
            self.store = VectorStore.load(self.index_dir / self._vector_file)
        except FileNotFoundError as err:
            raise IndexUnreadableError(f"The index in {self.index_dir} cannot be opened: {err}") from err
        self.retriever = DenseRetriever(self.model, self.store)

    def refresh(self) -> bool:
        """Reload the vectors if a build has committed since; True when something changed."""
        with Session(self._engine) as session:
            info = index_info(session)
            if info is None or info.vector_file == self._vector_file:
                return False
            self._vector_file = info.vector_file
        self.store = VectorStore.load(self.index_dir / self._vector_file)
        self.retriever = DenseRetriever(self.model, self.store)
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
            )

    def search(self, query: str, k: int | None = None) -> list[Hit]:
        """The k best documents for `query`, each with its best-matching passage."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, not {type(query).__name__}.")
        if not query.strip():
            raise EmptyQueryError("The query is empty. Type a few words to search for.")
        k = self.config.k if k is None else k
        if k < 1:
            raise ValueError(f"k ({k}) must be at least 1.")
        hits = self._retrieve_hits(query.strip(), k)
        if self.reranker is not None:
            hits = self.reranker.rerank(query, hits)
        return hits[:k]

    def _retrieve_hits(self, query: str, k: int) -> list[Hit]:
        total = self.store.ntotal
        n = min(total, k * self.config.candidate_factor)
        while True:
            candidates = self.retriever.retrieve(query, n)
            hits = self._to_hits(candidates)
            if len(hits) >= k or n >= total:
                return hits
            n = min(total, n * 2)

    def _to_hits(self, candidates: list[Candidate]) -> list[Hit]:
        with Session(self._engine) as session:
            rows = passages_with_documents(session, [c.passage_id for c in candidates])
            hits: list[Hit] = []
            seen_docs: set[int] = set()
            for cand in candidates:
                row = rows.get(cand.passage_id)
                if row is None:  # deleted by a build that committed after we loaded the vectors
                    continue
                if self.config.one_hit_per_document:
                    if row.document_id in seen_docs:
                        continue
                    seen_docs.add(row.document_id)
                doc = row.document
                hits.append(
                    Hit(
                        doc_id=doc.doc_key,
                        title=doc.title,
                        text=row.text,
                        score=cand.score,
                        metadata=dict(doc.meta or {}),
                        passage_id=row.id,
                        start_char=row.start_char,
                        end_char=row.end_char,
                        source=doc.source,
                    )
                )
            return hits
