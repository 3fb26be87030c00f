"""Fusing the dense and BM25 rankings of one query into one.

Two families, both over the same two lists (each cut at the same fixed depth):

- Reciprocal-rank fusion (Cormack, Clarke & Büttcher 2009, "Reciprocal Rank
  Fusion outperforms Condorcet and individual Rank Learning Methods"), plain or
  weighted: only ranks count, so BM25 scores (unbounded, query dependent) and
  cosine similarities need no calibration.
- A convex combination of per-query normalised scores, w · dense + (1 - w) ·
  BM25 (Bruch, Gai & Ingber 2023, "An Analysis of Fusion Functions for Hybrid
  Retrieval", ACM TOIS): it keeps how far apart the scores are, which ranks
  throw away, and its one weight is learnt from a small labelled sample.
  Normalised by min-max (scaled between the list's lowest and best score), by
  theoretical min-max ("tmm": between the lowest score the retriever can give,
  -1 for a cosine and 0 for BM25, and the list's best; the paper's TM2C2, which
  does not hinge on where the list happens to be cut), or by z-score (mean and
  standard deviation of the list, which a single outlying top score does not
  stretch as it stretches min-max).

`fusion_weight` is always the dense list's share, from 0 (BM25 alone) to 1
(dense alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# "rrf": weighted reciprocal rank (plain RRF at weight 0.5); "minmax", "tmm" and "zscore": convex combinations.
FUSIONS = ("rrf", "minmax", "tmm", "zscore")
NORMALISATIONS = ("minmax", "tmm", "zscore")
# The lowest score each retriever can give, which "tmm" scales from: the cosine of unit vectors
# (`indexer.store.faiss_store` keeps them unit-normalised), and BM25, a sum of non-negative term weights.
LOWEST_POSSIBLE = {"dense": -1.0, "bm25": 0.0}


def check_fusion(method: str) -> str:
    if method not in FUSIONS:
        raise ValueError(
            f"Unknown fusion {method!r}. Valid: {', '.join(FUSIONS)} "
            "(reciprocal rank, or a convex combination of min-max, theoretical min-max or z-score "
            "normalised scores)."
        )
    return method


def check_fusion_weight(weight: object) -> float:
    """`weight` as a float in 0..1 (the dense list's share); anything else names the valid range."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise TypeError(f"fusion weight must be a number between 0 and 1, not {weight!r} ({type(weight).__name__}).")
    if not 0.0 <= weight <= 1.0:  # also refuses nan
        raise ValueError(
            f"fusion weight ({weight}) must lie between 0 (BM25 alone) and 1 (dense alone); 0.5 weighs both equally."
        )
    return float(weight)


# The constant of reciprocal-rank fusion: 1 / (RRF_K + rank), 60 as in Cormack et al. 2009.
RRF_K = 60


def check_rrf_k(value: int) -> int:
    """The one check of an RRF constant, for hybrid fusion and for the reranker's rank fusion."""
    if value < 0:
        raise ValueError(f"rrf_k ({value}) must not be negative; Cormack et al. use {RRF_K}.")
    return value


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[int]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[tuple[int, float]]:
    """(id, score) for every id in any ranking, best first; score = Σ weight / (k + rank), rank from 1.

    Weights default to 1 each (plain RRF). An id missing from a ranking gets
    nothing from it. Equal scores keep the order in which ids are first met
    reading the rankings in turn, so earlier rankings win ties. Each ranking must
    list an id at most once.
    """
    if k < 0:
        raise ValueError(f"k ({k}) must not be negative; Cormack et al. use 60.")
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings; give one weight per ranking.")
    scores: dict[int, float] = {}
    for which, (ranking, weight) in enumerate(zip(rankings, weights, strict=True)):
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                raise ValueError(
                    f"ranking {which} lists id {item} twice; each ranking must list an id at most once."
                )
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores mapped onto 0..1 (worst to best of this list). A list without spread (one item, or all
    equal) maps to 1: every item is as good as the list's best, and above anything the list lacks (0)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high - low <= 0.0:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def theoretical_min_max(scores: Sequence[float], lowest_possible: float) -> list[float]:
    """Scores mapped onto 0..1 from the lowest score the retriever can give to the list's best
    (Bruch et al. 2023's TMM). A list whose best is not above that floor maps to 1, as in `min_max`."""
    if not scores:
        return []
    high = max(scores)
    if high - lowest_possible <= 0.0:
        return [1.0] * len(scores)
    return [(s - lowest_possible) / (high - lowest_possible) for s in scores]


def z_score(scores: Sequence[float]) -> list[float]:
    """(score - mean) / standard deviation of the list. A list without spread maps to 0."""
    if not scores:
        return []
    mean = math.fsum(scores) / len(scores)
    spread = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / len(scores))
    if spread <= 0.0:
        return [0.0] * len(scores)
    return [(s - mean) / spread for s in scores]


def _normalised(scores: Sequence[float], method: str, lowest_possible: float) -> tuple[list[float], float]:
    """The normalised scores and the value an item missing from the list gets.

    Missing means it ranked below the list's cut, so it gets the value of the
    list's lowest item: 0 for min-max; for theoretical min-max and z-score the
    list's lowest value, or, when the list has no spread, the floor (0) for
    theoretical min-max and one unit below its items for z-score (one match is
    still evidence that the others lack).
    """
    if method == "minmax":
        return min_max(scores), 0.0
    if method == "tmm":
        normalised = theoretical_min_max(scores, lowest_possible)
        if not normalised:
            return [], 0.0
        lowest = min(normalised)
        return normalised, (0.0 if max(normalised) == lowest else lowest)
    normalised = z_score(scores)
    if not normalised:
        return [], 0.0
    lowest = min(normalised)
    return normalised, (lowest - 1.0 if max(normalised) == lowest else lowest)


def convex_fusion(
    scored: Sequence[Sequence[tuple[int, float]]],
    weights: Sequence[float],
    method: str = "minmax",
    lowest_possible: Sequence[float] | None = None,
) -> list[tuple[int, float]]:
    """(id, Σ weight · normalised score) for every id in any list, best first (Bruch et al. 2023).

    `scored` holds one list of (id, raw score) per retriever. Each list is
    normalised on its own (`method` "minmax", "tmm" or "zscore"; "tmm" needs
    `lowest_possible`, the lowest score each retriever can give); an id a list
    lacks gets that list's floor (see `_normalised`). Equal fused scores keep the
    order in which ids are first met reading the lists in turn.
    """
    if method not in NORMALISATIONS:
        raise ValueError(f"Unknown normalisation {method!r}. Valid: {', '.join(NORMALISATIONS)}.")
    if len(weights) != len(scored):
        raise ValueError(f"{len(weights)} weights for {len(scored)} lists; give one weight per list.")
    if lowest_possible is None:
        if method == "tmm":
            raise ValueError("tmm scales from each retriever's lowest possible score; pass lowest_possible, "
                             "one per list (LOWEST_POSSIBLE has the dense and BM25 ones).")
        lowest_possible = [0.0] * len(scored)
    if len(lowest_possible) != len(scored):
        raise ValueError(f"{len(lowest_possible)} lowest scores for {len(scored)} lists; give one per list.")
    order: dict[int, None] = {}
    normalised: list[tuple[dict[int, float], float]] = []
    for which, (items, lowest) in enumerate(zip(scored, lowest_possible, strict=True)):
        ids = [item for item, _ in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"list {which} holds an id twice; each list must hold an id at most once.")
        values, floor = _normalised([score for _, score in items], method, lowest)
        normalised.append((dict(zip(ids, values, strict=True)), floor))
        order.update(dict.fromkeys(ids))
    fused = [
        (item, math.fsum(w * by_id.get(item, floor) for w, (by_id, floor) in zip(weights, normalised, strict=True)))
        for item in order
    ]
    return sorted(fused, key=lambda pair: -pair[1])


@dataclass(frozen=True)
class Fusion:
    """How a hybrid search fuses its dense and BM25 lists: the method and the dense list's weight."""

    method: str = "rrf"
    weight: float = 0.5
    rrf_k: int = RRF_K

    def __post_init__(self) -> None:
        check_fusion(self.method)
        object.__setattr__(self, "weight", check_fusion_weight(self.weight))
        check_rrf_k(self.rrf_k)

    def fuse(self, dense: Sequence[tuple[int, float]], bm25: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
        """Every id of either (id, score) list, with its fused score, best first; dense wins ties."""
        if self.method == "rrf":
            # Scaled so that weight 0.5 is plain RRF, score for score.
            return reciprocal_rank_fusion(
                [[item for item, _ in dense], [item for item, _ in bm25]],
                k=self.rrf_k,
                weights=[2.0 * self.weight, 2.0 * (1.0 - self.weight)],
            )
        return convex_fusion([dense, bm25], [self.weight, 1.0 - self.weight], self.method,
                             [LOWEST_POSSIBLE["dense"], LOWEST_POSSIBLE["bm25"]])
