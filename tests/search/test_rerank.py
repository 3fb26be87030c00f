from __future__ import annotations

import pytest

from search.hits import Hit
from search.rerank import CrossEncoderReranker


def test_rerank_orders_by_cross_encoder_score_and_keeps_retriever_score(tiny_cross_encoder):
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    texts = ["lava and ash", "bread dough", "a goal in the final", "interest rates", "glaciers melt"]
    hits = [Hit(doc_id=str(i), title="", text=t, score=1.0 - i / 10) for i, t in enumerate(texts)]
    reranked = reranker.rerank("volcano", hits)
    direct = reranker.model.predict([("volcano", t) for t in texts])
    assert [h.doc_id for h in reranked] == [str(i) for i in sorted(range(5), key=lambda i: -direct[i])]
    assert [h.score for h in reranked] == pytest.approx(sorted(direct, reverse=True), rel=1e-5)
    assert [h.rerank_score for h in reranked] == [h.score for h in reranked]
    assert {h.doc_id: h.retriever_score for h in reranked} == {h.doc_id: h.score for h in hits}
    assert all(h.metadata == {} for h in reranked), "document metadata is left alone"
    assert reranker.rerank("q", []) == []


def test_missing_reranker_folder_says_what_to_pass(tmp_path):
    with pytest.raises(OSError, match="Cannot load a cross-encoder from .*Pass the folder a CrossEncoder"):
        CrossEncoderReranker(str(tmp_path / "no_such_model"))
