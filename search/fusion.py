"""Reciprocal-rank fusion (Cormack, Clarke & Büttcher 2009, "Reciprocal Rank Fusion
outperforms Condorcet and individual Rank Learning Methods").

Fusing ranks rather than scores is what lets BM25 scores (unbounded, query
dependent) and cosine similarities be combined without calibrating either.
"""

from __future__ import annotations


def reciprocal_rank_fusion(rankings: list[list[int]], k: int = 60) -> list[tuple[int, float]]:
    """(id, score) for every id in any ranking, best first; score = Σ 1 / (k + rank), rank from 1.

    An id missing from a ranking gets nothing from it. Equal scores keep the
    order in which ids are first met reading the rankings in turn, so earlier
    rankings win ties. Each ranking must list an id at most once.
    """
    if k < 0:
        raise ValueError(f"k ({k}) must not be negative; Cormack et al. use 60.")
    scores: dict[int, float] = {}
    for which, ranking in enumerate(rankings):
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                raise ValueError(
                    f"ranking {which} lists id {item} twice; each ranking must list an id at most once."
                )
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
