"""Retrievers: the first stage of the search pipeline, a `Query` in, scored passage ids out.

Dense (embeddings in the vector store), BM25 (exact terms) and hybrid (both,
fused as `search.fusion.Fusion` says) share one protocol, so the searcher groups, reranks
and cuts their output the same way. A reranker (see `rerank.py`) may reorder
what a retriever returns. Which retrievers an index offers is decided once per
loaded build (`retrievers_for`), and which one a search runs once per query
(`choose_mode`).
"""

from __future__ import annotations

import contextvars
import logging
import time
import warnings
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from indexer.embedding import encode_query
from indexer.pipelined_encoding import PipelinedEncoder
from indexer.store.passage_subset import PassageSubset
from search.config import check_mode
from search.errors import IndexUnreadableError, QueryTruncatedWarning
from search.fusion import Fusion

logger = logging.getLogger(__name__)

# Where a hybrid search over remote stores waits for its BM25 list while it fetches the dense one.
_REMOTE_CALLS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="semsearch-remote")


@dataclass(frozen=True)
class Candidate:
    passage_id: int
    score: float


class VectorIndex(Protocol):
    """What dense retrieval needs of a build's vector store (`IndexSnapshot.vectors`)."""

    @property
    def ntotal(self) -> int: ...

    def search(self, queries: np.ndarray, k: int, within: PassageSubset | None = None
               ) -> tuple[np.ndarray, np.ndarray]: ...


class LexicalIndex(Protocol):
    """What BM25 retrieval needs of a build's BM25 store (`IndexSnapshot.bm25`)."""

    def search(self, query: str, n: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]: ...


class Query:
    """One search's query: its text, and its embedding, computed on first use and then kept.

    Every retriever of a search gets the same `Query`, so hybrid retrieval and
    the searcher's widening loop (which may retrieve several times) encode the
    text once, and an over-long query warns once; a BM25 search never encodes it.
    `encode_s` is the time the encoding took (0 until then).
    """

    def __init__(self, text: str, model: Any) -> None:
        self.text = text
        self.model = model
        self.encode_s = 0.0
        self._embedding: np.ndarray | None = None

    @classmethod
    def encoded(cls, text: str, model: Any, embedding: np.ndarray, encode_s: float) -> Query:
        """A query whose embedding was computed already (in a batch with others)."""
        query = cls(text, model)
        warn_if_truncated(text, model)
        query._embedding, query.encode_s = embedding, encode_s
        return query

    @property
    def embedding(self) -> np.ndarray:
        """The unit-normalised query embedding, shape (1, dim)."""
        if self._embedding is None:
            started = time.perf_counter()
            warn_if_truncated(self.text, self.model)
            self._embedding = encode_query(self.model, self.text)
            self.encode_s = time.perf_counter() - started
        return self._embedding


class Retriever(Protocol):
    def retrieve(self, query: Query, n: int, within: PassageSubset | None = None) -> list[Candidate]:
        """The n best passages for `query`, best first; only passages of `within` (a metadata
        filter's subset) when given, ranked as they rank among all."""
        ...


# A text this share of whose tokens the model does not know ([UNK]) embeds like any other such
# text ("🐧🐧🐧" and "😀🎉" at cosine 1.0): its similarity to anything means nothing.
UNREADABLE_SHARE = 0.9


def token_counts(texts: Sequence[str], model: Any) -> list[tuple[int, int]]:
    """(tokens with the special ones, unknown tokens among them) for each text, untruncated: one
    batched call of the Rust tokenizer where the model allows (`PipelinedEncoder.token_counts`;
    10,000 sentences checked one call each took 2.5 s on an H100 machine, three times their encoding)."""
    encoder = PipelinedEncoder.of(model)
    if encoder is not None:
        return encoder.token_counts(texts)
    tokenizer = model.tokenizer
    unknown = getattr(tokenizer, "unk_token_id", None)
    counts = []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        counts.append((len(ids), sum(1 for i in ids if i == unknown) if unknown is not None else 0))
    return counts


def unreadable_counts(counts: tuple[int, int], model: Any) -> bool:
    """Whether a text of these `token_counts` is one the model knows almost none of (at least
    `UNREADABLE_SHARE` of its own tokens, the special ones aside, are the unknown token)."""
    tokens, unknown = counts
    words = tokens - model.tokenizer.num_special_tokens_to_add(pair=False)
    return words > 0 and unknown / words >= UNREADABLE_SHARE


def unreadable(text: str, model: Any) -> bool:
    """Whether the model knows almost none of `text`'s tokens (at least `UNREADABLE_SHARE` are its
    unknown token): emoji, or a script its vocabulary lacks."""
    return unreadable_counts(token_counts([text], model)[0], model)


def unreadable_message(text: str, name: str) -> str:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return (f"{name} ({shown!r}) holds no word the model knows: it reads almost every token as unknown, "
            "so any two such texts embed alike and their similarity means nothing. Give it words in a "
            "language the model was trained on")


def warn_if_truncated(text: str, model: Any, name: str = "query", tokens: int | None = None) -> None:
    """A `QueryTruncatedWarning` when the model reads only the start of `text` (a query, or a
    sentence to compare); `tokens`, its count with the special tokens, where already known."""
    if tokens is None:
        tokens = token_counts([text], model)[0][0]
    if tokens > model.max_seq_length:
        what = ("The query", "search on") if name == "query" else (name, "compare")
        warnings.warn(
            f"{what[0]} has {tokens} tokens but the model reads {model.max_seq_length}; "
            f"the rest was ignored. Shorten it to {what[1]} all of it.",
            QueryTruncatedWarning,
            stacklevel=4,
        )


class DenseRetriever:
    """Cosine similarity between the query embedding and the passage vectors."""

    def __init__(self, vectors: VectorIndex) -> None:
        self.vectors = vectors

    def retrieve(self, query: Query, n: int, within: PassageSubset | None = None) -> list[Candidate]:
        if self.vectors.ntotal == 0 or n < 1 or (within is not None and within.count == 0):
            return []
        scores, ids = self.vectors.search(query.embedding, n, within) if within is not None else \
            self.vectors.search(query.embedding, n)
        return [
            Candidate(int(pid), float(score))
            for score, pid in zip(scores[0], ids[0], strict=True)
            if pid >= 0
        ]


class BM25Retriever:
    """BM25 over title + passage text; finds exact terms (names, codes, rare words) embeddings blur.

    Returns only passages sharing at least one (stemmed, non-stop) word with the
    query, so it may return fewer than n.
    """

    def __init__(self, bm25: LexicalIndex) -> None:
        self.bm25 = bm25

    def retrieve(self, query: Query, n: int, within: PassageSubset | None = None) -> list[Candidate]:
        if within is not None and within.count == 0:
            return []
        scores, ids = self.bm25.search(query.text, n, within) if within is not None else self.bm25.search(query.text, n)
        return [Candidate(int(pid), float(score)) for score, pid in zip(scores, ids, strict=True)]


class HybridRetriever:
    """Dense and BM25 passage rankings fused into one (`search.fusion.Fusion`: RRF or a convex combination).

    Fusion happens at the passage level, before the searcher groups passages
    into documents: both retrievers rank passages natively, the hybrid stays a
    plain `Retriever`, and the passage it ranks first for a document is the one
    both retrievers put highest, which is what the reranker and the UI show.
    The cost is that a document whose several passages all rank high in one list
    pushes other documents down that list; on SciFact, where most documents are
    one or two passages, that is minor. Both lists are cut at n before fusing,
    so what n is decides the fused order: the searcher asks only for depths that
    do not depend on k (`SearchConfig.fusion_depth`, then doubled).
    """

    def __init__(self, dense: DenseRetriever, bm25: BM25Retriever, fusion: Fusion | None = None) -> None:
        self.dense = dense
        self.bm25 = bm25
        self.fusion = fusion or Fusion()

    def with_fusion(self, fusion: Fusion) -> HybridRetriever:
        """The same two retrievers fused another way (for one search that names its own fusion)."""
        return self if fusion == self.fusion else HybridRetriever(self.dense, self.bm25, fusion)

    def retrieve(self, query: Query, n: int, within: PassageSubset | None = None) -> list[Candidate]:
        if getattr(self.dense.vectors, "remote", False) and getattr(self.bm25.bm25, "remote", False):
            # Both lists come from other processes (a sharded index's shards): ask for them at once,
            # one round trip instead of two. The BM25 call runs in a thread, in this search's context.
            query.embedding  # noqa: B018 -- encoded here, once, not in the thread
            context = contextvars.copy_context()
            pending = _REMOTE_CALLS.submit(context.run, self.bm25.retrieve, query, n, within)
            dense_found = self.dense.retrieve(query, n, within)
            lexical_found = pending.result()
        else:
            dense_found = self.dense.retrieve(query, n, within)
            lexical_found = self.bm25.retrieve(query, n, within)
        dense = [(c.passage_id, c.score) for c in dense_found]
        lexical = [(c.passage_id, c.score) for c in lexical_found]
        return [Candidate(pid, score) for pid, score in self.fusion.fuse(dense, lexical)[:n]]


def retrievers_for(vectors: VectorIndex, bm25: LexicalIndex | None, fusion: Fusion | None = None) -> dict[str, Retriever]:
    """Mode -> retriever for one build: all three modes, or only dense for an index without BM25."""
    dense = DenseRetriever(vectors)
    if bm25 is None:
        return {"dense": dense}
    lexical = BM25Retriever(bm25)
    return {"dense": dense, "bm25": lexical, "hybrid": HybridRetriever(dense, lexical, fusion)}


@dataclass(frozen=True)
class ModeChoice:
    """The mode a search runs in; `fallback_reason` says why it is not the one asked for."""

    mode: str
    fallback_reason: str | None = None


def choose_mode(requested: str | None, default: str, available: Collection[str], index_dir: Path,
                model_ready: bool = True, bm25_problem: str | None = None) -> ModeChoice:
    """The one rule for which mode runs: `requested`, else `default`, on the retrievers `available`.

    An index whose build has no BM25 part has only dense. A search that names no
    mode then runs dense, with the reason and the fix, so searches keep working
    until BM25 is rebuilt; naming bm25 or hybrid raises instead, since the
    caller asked for exact-word matching that dense cannot give. `bm25_problem` says why a build
    that has BM25 cannot use it (its folder is damaged or missing), with the repair command.

    While the model is still loading (`model_ready` False: a Searcher that loads it in
    the background), a search that needs it runs BM25, with the reason, rather than
    keep its caller waiting seconds; an index without BM25 has to wait for the model.
    """
    choice = _index_mode(requested, default, available, index_dir, bm25_problem)
    if model_ready or choice.mode == "bm25" or "bm25" not in available:
        return choice
    return ModeChoice(
        "bm25",
        f"The semantic model is still loading, so these are keyword (BM25) results; searches run "
        f"in {choice.mode} mode as soon as it has loaded.",
    )


def _index_mode(requested: str | None, default: str, available: Collection[str], index_dir: Path,
                bm25_problem: str | None) -> ModeChoice:
    if requested is not None:
        check_mode(requested)
        if requested not in available:
            if bm25_problem is not None:
                raise IndexUnreadableError(f"{bm25_problem} Until then mode {requested!r} cannot run; "
                                           "search with mode='dense'.")
            raise IndexUnreadableError(
                f"The index in {index_dir} has no BM25 index, so mode {requested!r} cannot run. "
                f"Run `python -m indexer repair --index {index_dir}` to rebuild it from the stored "
                "passages (nothing is re-embedded), or search with mode='dense'."
            )
        return ModeChoice(requested)
    if default in available:
        return ModeChoice(default)
    if bm25_problem is not None:
        return ModeChoice("dense", f"{bm25_problem} Until then it is searched in dense mode instead of {default}.")
    return ModeChoice(
        "dense",
        f"The index in {index_dir} has no BM25 index, so it is searched in dense mode instead of "
        f"{default}. Run `python -m indexer repair --index {index_dir}` to rebuild BM25 from the "
        "stored passages (nothing is re-embedded).",
    )
