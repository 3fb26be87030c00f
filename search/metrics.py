"""Ranking metrics as trec_eval (and so BEIR) defines them: linear gain nDCG, MRR, recall."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np


def ndcg_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    """DCG of the top k over the ideal DCG, gain = graded relevance, discount log2(rank + 1)."""
    dcg = sum(
        relevance.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k])
    )
    ideal = sorted((r for r in relevance.values() if r > 0), reverse=True)[:k]
    idcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def mrr_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int = 10) -> float:
    for rank, doc in enumerate(ranked[:k]):
        if relevance.get(doc, 0) > 0:
            return 1.0 / (rank + 1)
    return 0.0


def recall_at_k(ranked: Sequence[str], relevance: Mapping[str, int], k: int = 100) -> float:
    relevant = {doc for doc, rel in relevance.items() if rel > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def percentile_ms(seconds: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(seconds) * 1000.0, q)) if len(seconds) else 0.0


def judged_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """The queries with at least one relevant document, in qrels order: those metrics average over."""
    return [qid for qid in qrels if any(r > 0 for r in qrels[qid].values())]


def evaluate_rankings(
    rankings: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Mean nDCG@10, MRR@10 and recall@100 over the queries that have judgements."""
    judged = judged_queries(qrels)
    if not judged:
        raise ValueError("No query has a relevant document in the qrels; check the split.")
    totals = {"ndcg@10": 0.0, "mrr@10": 0.0, "recall@100": 0.0}
    for qid in judged:
        ranked = list(rankings.get(qid, []))
        totals["ndcg@10"] += ndcg_at_k(ranked, qrels[qid], 10)
        totals["mrr@10"] += mrr_at_k(ranked, qrels[qid], 10)
        totals["recall@100"] += recall_at_k(ranked, qrels[qid], 100)
    return {name: value / len(judged) for name, value in totals.items()}
