"""From passages to documents: how a ranked list of passages becomes a ranked list of documents.

A document is represented by its best passage (the one a hit shows and a
reranker reads). Its score is that passage's, plus optionally a share of its
second-best passage's: a document that matches in two places is a little more
likely to be about the query than one that matches once (the "best passage plus
a little of the second" of MaxP-style aggregation; Dai & Callan 2019 rank by
the best passage alone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from search.retrieve import Candidate


@dataclass(frozen=True)
class RankedDocument:
    """A document's best passage, and the document's score."""

    document: int
    passage_id: int
    score: float


def rank_documents(
    candidates: Sequence[Candidate],
    document_of: Mapping[int, int],
    second_passage_weight: float = 0.0,
    one_per_document: bool = True,
) -> list[RankedDocument]:
    """The documents of `candidates` (passages, best first), best first.

    Score = best passage + `second_passage_weight` × (second-best passage -
    the lowest score in `candidates`), measured from the lowest score so that
    the bonus is never negative whatever the score's scale (cosine, BM25, RRF, z-score). Ties
    keep the order of the documents' best passages. Passages whose document is
    unknown (deleted by a newer build) are skipped. With `one_per_document`
    False every passage stands alone and the scores are kept as they are.
    """
    known = [c for c in candidates if c.passage_id in document_of]
    if not one_per_document:
        return [RankedDocument(c.passage_id, c.passage_id, c.score) for c in known]
    best: dict[int, Candidate] = {}
    second: dict[int, float] = {}
    for cand in known:
        document = document_of[cand.passage_id]
        if document not in best:
            best[document] = cand
        elif document not in second:
            second[document] = cand.score
    if not best:
        return []
    floor = min(c.score for c in known)
    ranked = [
        RankedDocument(
            document,
            cand.passage_id,
            cand.score + second_passage_weight * (second[document] - floor) if document in second else cand.score,
        )
        for document, cand in best.items()
    ]
    if second_passage_weight > 0:
        ranked.sort(key=lambda doc: -doc.score)  # stable: ties keep the best passages' order
    return ranked


def rank_in_rounds(
    fetch: Callable[[int], Sequence[Candidate]],
    documents_of: Callable[[list[int]], Mapping[int, int]],
    k: int,
    first_depth: int,
    total: int,
    second_passage_weight: float = 0.0,
    one_per_document: bool = True,
) -> list[RankedDocument]:
    """The first k (or all) documents of one query's document ranking, built in rounds of fixed depths.

    Round one ranks the documents of `fetch(first_depth)` (the top passages;
    in hybrid, the fusion of each list's top `first_depth`). Only when those hold
    fewer than k documents and more passages exist, round two fetches twice as
    deep and appends the documents it finds that round one had not, in their
    round-two order; and so on. The depths tried depend on `first_depth` and the
    index alone, never on k, so a larger k reads further down the same ranking:
    `rank_in_rounds(..., k=j) == rank_in_rounds(..., k=k)[:j]` for j <= k. A depth
    that grew with k would instead change every fused score (a list cut lower
    holds other passages, and min-max moves its floor) and reorder the top.
    """
    depth = first_depth
    ranked: list[RankedDocument] = []
    seen: set[int] = set()
    while True:
        n = min(total, depth)
        candidates = fetch(n)
        document_of = documents_of([c.passage_id for c in candidates])
        for doc in rank_documents(candidates, document_of, second_passage_weight, one_per_document):
            if doc.document not in seen:
                seen.add(doc.document)
                ranked.append(doc)
        if len(ranked) >= k or n >= total or len(candidates) < n:
            return ranked[:k]
        depth *= 2
