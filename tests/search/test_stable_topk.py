"""The top k never depends on k: `search(q, k=j) == search(q, k=k)[:j]` in every mode, fusion and
document scoring, with and without reranking, including when the searcher must fetch in several rounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from search import CrossEncoderReranker, SearchConfig, Searcher
from search.config import RerankConfig
from search.document_ranking import RankedDocument, rank_documents, rank_in_rounds
from search.retrieve import Candidate
from tests.search.helpers import CODE_DOC

QUERIES = (
    "bread dough",
    "volcano ash over Europe",
    "the goal in the final",
    "interest rates and stocks",
    "order number QZ9931",
    "Iceland flights cancelled while markets fell",
    "baking a cake in the oven",
    "what happened at the match",
)
# (mode, fusion, fusion weight): every retriever, and hybrid under each fusion.
PIPELINES = (
    ("dense", None, None),
    ("bm25", None, None),
    ("hybrid", "rrf", 0.5),
    ("hybrid", "rrf", 0.8),
    ("hybrid", "minmax", 0.3),
    ("hybrid", "zscore", 0.6),
    ("hybrid", "tmm", 0.8),
)


@pytest.fixture()
def passages_index(topic_corpus, tmp_path, tiny_model) -> Path:
    """The topic documents cut into 16-token passages, so most documents hold several passages."""
    (topic_corpus / "minutes.txt").write_text(CODE_DOC, encoding="utf-8")
    index_dir = tmp_path / "passages_idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, passage_tokens=16,
                            overlap_tokens=4, show_progress=False))
    return index_dir


def _ranked(hits) -> list[tuple[str, int, float]]:
    return [(hit.doc_id, hit.passage_id, hit.score) for hit in hits]


# fusion_depth 1 and 3 force several fetch rounds (documents hold several passages); 100 fetches all at once.
@pytest.mark.parametrize("config", [
    SearchConfig(fusion_depth=1), SearchConfig(fusion_depth=3, second_passage_weight=0.3), SearchConfig(),
], ids=["depth1", "depth3-second", "default"])
def test_top_k_is_a_prefix_of_every_larger_k(passages_index, config: SearchConfig):
    searcher = Searcher(passages_index, config=config)
    documents = searcher.stats().documents
    assert searcher.stats().passages > documents >= 5
    for query in QUERIES:
        for mode, fusion, weight in PIPELINES:
            full = _ranked(searcher.search(query, k=documents, mode=mode, fusion=fusion, fusion_weight=weight))
            assert len({doc for doc, _, _ in full}) == len(full)
            for k in range(1, documents):
                top = searcher.search(query, k=k, mode=mode, fusion=fusion, fusion_weight=weight)
                assert _ranked(top) == full[:k], (query, mode, fusion, weight, k)


@pytest.mark.parametrize("keep_tail", [False, True])
def test_reranked_top_k_is_a_prefix_of_every_larger_k(passages_index, tiny_cross_encoder, keep_tail: bool):
    reranker = CrossEncoderReranker(tiny_cross_encoder, RerankConfig(quantize=False, retriever_weight=0.3))
    searcher = Searcher(passages_index, config=SearchConfig(fusion_depth=2), reranker=reranker)
    documents = searcher.stats().documents
    candidates = 3  # fewer than the documents, so the reranked head and the retriever's tail both show
    for query in QUERIES:
        for mode, fusion, weight in PIPELINES:
            kwargs = {"mode": mode, "fusion": fusion, "fusion_weight": weight, "candidates": candidates,
                      "keep_tail": keep_tail}
            largest = documents if keep_tail else candidates
            full = searcher.search_detailed(query, k=largest, **kwargs)
            assert full.reranked == min(candidates, len(full.hits))
            for k in range(1, largest):
                top = searcher.search_detailed(query, k=k, **kwargs).hits
                assert _ranked(top) == _ranked(full.hits)[:k], (query, mode, fusion, k)


def test_rank_documents_scores_best_plus_a_share_of_the_second():
    candidates = [Candidate(10, 0.9), Candidate(20, 0.8), Candidate(11, 0.7), Candidate(30, 0.5), Candidate(21, 0.1)]
    document_of = {10: 1, 11: 1, 20: 2, 21: 2, 30: 3}
    best_only = rank_documents(candidates, document_of)
    assert best_only == [RankedDocument(1, 10, 0.9), RankedDocument(2, 20, 0.8), RankedDocument(3, 30, 0.5)]
    # Document 1: 0.9 + 0.5 * (0.7 - 0.1); document 2: 0.8 + 0.5 * (0.1 - 0.1); 3 has no second passage.
    second = rank_documents(candidates, document_of, second_passage_weight=0.5)
    assert [(d.document, d.passage_id) for d in second] == [(1, 10), (2, 20), (3, 30)]
    assert [d.score for d in second] == pytest.approx([1.2, 0.8, 0.5])
    lifted = rank_documents([Candidate(1, 1.0), Candidate(2, 0.95), Candidate(3, 0.9), Candidate(4, 0.0)],
                            {1: 7, 2: 8, 3: 8, 4: 9}, second_passage_weight=0.2)
    assert [d.document for d in lifted] == [8, 7, 9], "two strong passages beat one slightly stronger"
    assert rank_documents([Candidate(5, 1.0)], {}) == [], "a passage deleted by a newer build is skipped"
    apart = rank_documents(candidates, document_of, one_per_document=False)
    assert [d.passage_id for d in apart] == [10, 20, 11, 30, 21]


def test_rank_in_rounds_never_depends_on_k():
    """A fake retriever whose order changes with the depth asked for, as a fused list's does."""
    document_of = {pid: pid // 3 for pid in range(60)}  # three passages per document

    def fetch(n: int) -> list[Candidate]:
        # The deeper the fetch, the more the order rotates: only the depths asked for may matter.
        pids = list(range(60))[:n]
        rotated = pids[n % 7:] + pids[:n % 7]
        return [Candidate(pid, float(-i)) for i, pid in enumerate(rotated)]

    def documents_of(pids: list[int]) -> dict[int, int]:
        return {pid: document_of[pid] for pid in pids}

    full = rank_in_rounds(fetch, documents_of, k=20, first_depth=4, total=60)
    assert len(full) == 20
    for k in range(1, 20):
        assert rank_in_rounds(fetch, documents_of, k=k, first_depth=4, total=60) == full[:k]
    asked: list[int] = []
    rank_in_rounds(lambda n: asked.append(n) or fetch(n), documents_of, k=20, first_depth=4, total=60)
    assert asked == [4, 8, 16, 32, 60], "fixed depths, doubled, capped at the passages there are"
