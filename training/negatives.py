"""Negative passages for (query, positive) pairs: the seam where hard-negative mining plugs in.

`RandomNegativeMiner` samples from a passage pool. `DenseNegativeMiner` is
sentence-transformers' `mine_hard_negatives`: a bi-encoder embeds the queries
and the candidate passages and the most similar non-positives are negatives.
The library has no BM25 and cannot search an index that is already built, so
two miners stay here: `BM25NegativeMiner` builds BM25 over the pool in memory,
and `IndexNegativeMiner` asks an existing index (BM25, or hybrid: BM25 and the
bi-encoder together) for the query's top passages. Qu et al. (2021, RocketQA)
and Karpukhin et al. (2020, DPR) show such retrieved negatives train much
stronger rerankers than random ones.

Hard miners sample `count` negatives among the first `depth` non-positive
hits instead of taking the very top: the top of a retriever's list holds
unlabelled relevant passages often enough (RocketQA's false negatives) to teach
a reranker the wrong thing, and sampling spreads the difficulty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from indexer.sources.passage_text import passage_text

# Retrieval modes IndexNegativeMiner serves; dense mining is DenseNegativeMiner's.
INDEX_MODES = ("bm25", "hybrid")


class NegativeMiner(Protocol):
    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        """Up to `count` passages that are not in `positives`."""
        ...


def mine_negatives(
    miner: NegativeMiner, positives: Mapping[str, set[str]], count: int, rng: np.random.Generator
) -> dict[str, list[str]]:
    """Up to `count` negatives for every query of `positives`; in one pass when the miner has `mine_many`."""
    mine_many = getattr(miner, "mine_many", None)
    if mine_many is not None:
        return mine_many(positives, count, rng)
    return {query: miner.mine(query, relevant, count, rng) for query, relevant in positives.items()}


def _check_depth(depth: int | None) -> None:
    if depth is not None and depth < 1:
        raise ValueError(f"depth ({depth}) must be at least 1, or None to take the top hits in order.")


def _check_skip(skip: int) -> None:
    if skip < 0:
        raise ValueError(f"skip ({skip}) must be 0 or more.")


def _sample(candidates: list[str], count: int, depth: int | None, rng: np.random.Generator) -> list[str]:
    """The first `count` candidates when `depth` is None, else `count` drawn from the first `depth`."""
    if depth is None:
        return candidates[:count]
    pool = candidates[:depth]
    picks = rng.choice(len(pool), size=min(count, len(pool)), replace=False) if pool else []
    return [pool[int(index)] for index in sorted(picks)]


def _overlaps(text: str, positives: set[str]) -> bool:
    """A passage of a positive document (or the document holding it) is not a negative."""
    return text in positives or any(text in positive or positive in text for positive in positives)


class RandomNegativeMiner:
    def __init__(self, pool: Sequence[str]) -> None:
        self.pool = list(dict.fromkeys(pool))

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        candidates = [passage for passage in self.pool if passage not in positives]
        if not candidates or count <= 0:
            return []
        picks = rng.choice(len(candidates), size=min(count, len(candidates)), replace=False)
        return [candidates[int(index)] for index in picks]


class DenseNegativeMiner:
    """Semantically hard negatives from sentence-transformers' `mine_hard_negatives`.

    The candidates are `pool` plus every positive of the queries mined together,
    so `mine_many` (all queries in one pass, the candidates embedded once) is the
    way to call it; `mine` is one query against `pool`. The library drops each
    query's own positives; passages holding one, or held by one, are dropped
    here too, then the first `skip` are passed over and `count` taken (or
    sampled among the next `depth`), as by the other hard miners.
    """

    def __init__(
        self, model: Any, pool: Sequence[str] = (), skip: int = 0, depth: int | None = None, batch_size: int = 32
    ) -> None:
        """`model`: a loaded SentenceTransformer, or a --base value ("default", a folder; see `resolve_base`)."""
        _check_skip(skip)
        _check_depth(depth)
        if isinstance(model, (str, Path)):
            from training.sentence_model import load_sentence_model

            model = load_sentence_model(model)
        self.model = model
        self.pool = list(dict.fromkeys(pool))
        self.skip = skip
        self.depth = depth
        self.batch_size = batch_size

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        return self.mine_many({query: positives}, count, rng)[query]

    def mine_many(
        self, positives: Mapping[str, set[str]], count: int, rng: np.random.Generator
    ) -> dict[str, list[str]]:
        from datasets import Dataset
        from sentence_transformers.util import mine_hard_negatives

        mined: dict[str, list[str]] = {query: [] for query in positives}
        rows = [(query, passage) for query, relevant in positives.items() for passage in sorted(relevant)]
        if count <= 0 or not rows:
            return mined
        # Room for passages that hold a positive, which the library keeps and _overlaps drops.
        window = self.skip + (self.depth or count) + max(len(relevant) for relevant in positives.values())
        ranked = mine_hard_negatives(
            Dataset.from_dict({"query": [q for q, _ in rows], "positive": [p for _, p in rows]}),
            self.model,
            corpus=self.pool or None,
            range_max=window,
            num_negatives=window,
            sampling_strategy="top",
            output_format="labeled-list",  # best first, and kept when fewer than `window` are found
            batch_size=self.batch_size,
            verbose=False,
        )
        seen: set[str] = set()
        for row in ranked:
            query = row["query"]
            if query in seen:  # one row per positive of the query, each with the same negatives
                continue
            seen.add(query)
            negatives = [
                passage for passage, label in zip(row["positive"], row["labels"], strict=True)
                if label == 0 and not _overlaps(passage, positives[query])
            ]
            mined[query] = _sample(negatives[self.skip :], count, self.depth, rng)
        return mined


class BM25NegativeMiner:
    """Lexically hard negatives: BM25 (the indexer's settings) over `pool`, built in memory.

    For training sources that have no index, such as self-supervised pairs from
    raw documents. A query that matches fewer than `count` passages is topped up
    with random ones from the pool.
    """

    def __init__(self, pool: Sequence[str], depth: int = 30) -> None:
        from indexer.store.bm25_store import BM25Store

        _check_depth(depth)
        self.pool = list(dict.fromkeys(pool))
        self.depth = depth
        self.store = BM25Store.build(np.arange(len(self.pool)), self.pool)
        self._random = RandomNegativeMiner(self.pool)

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        if count <= 0:
            return []
        _, ids = self.store.search(query, self.depth + len(positives))
        candidates = [self.pool[int(i)] for i in ids if self._allowed(self.pool[int(i)], query, positives)]
        negatives = _sample(candidates, count, self.depth, rng)
        if len(negatives) < count:
            chosen = set(negatives)
            rest = [p for p in self.pool if p not in chosen and self._allowed(p, query, positives)]
            picks = rng.choice(len(rest), size=min(count - len(negatives), len(rest)), replace=False) if rest else []
            negatives += [rest[int(index)] for index in picks]
        return negatives

    @staticmethod
    def _allowed(passage: str, query: str, positives: set[str]) -> bool:
        """Not a positive, not a piece of one, and not the query's own source: a passage holding the
        query word for word (an inverse-cloze sentence's document) would be a false negative."""
        return not _overlaps(passage, positives) and query not in passage


class IndexNegativeMiner:
    """Hard negatives: the index's best passages for the query (BM25 or hybrid) that are not its positives.

    The first `skip` non-positive hits are passed over; with `depth` set,
    `count` negatives are sampled among the next `depth` instead of taken in
    order. Negatives read `passage_text(title, text)`, as the reranker sees them
    at query time.
    """

    def __init__(self, index_dir: Path | str, mode: str = "hybrid", skip: int = 0, depth: int | None = None) -> None:
        from search import Searcher

        if mode not in INDEX_MODES:
            raise ValueError(
                f"IndexNegativeMiner mode {mode!r} is not one of {', '.join(INDEX_MODES)}. Dense negatives come "
                "from DenseNegativeMiner (sentence-transformers' mine_hard_negatives): index_miner(..., mode='dense')."
            )
        _check_skip(skip)
        _check_depth(depth)
        self.searcher = Searcher(index_dir)
        self.mode = mode
        self.skip = skip
        self.depth = depth

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        if count <= 0:
            return []
        wanted = self.skip + (self.depth or count) + len(positives)
        hits = self.searcher.search(query, k=wanted, mode=self.mode)
        negatives = [passage_text(hit.title, hit.text) for hit in hits if not _overlaps(hit.text, positives)]
        return _sample(negatives[self.skip :], count, self.depth, rng)


def index_miner(index_dir: Path | str, mode: str = "hybrid", skip: int = 0, depth: int | None = None) -> NegativeMiner:
    """The miner `--negatives-index` names: the index's BM25 or hybrid retriever, or for "dense" the index's
    bi-encoder over the training passages (`DenseNegativeMiner`)."""
    if mode == "dense":
        from search import Searcher

        return DenseNegativeMiner(Searcher(index_dir).model, skip=skip, depth=depth)
    return IndexNegativeMiner(index_dir, mode=mode, skip=skip, depth=depth)
