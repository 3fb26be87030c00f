from __future__ import annotations

import pytest

from search.hits import Hit
from search.rerank import CrossEncoderReranker


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A 2-layer BERT cross-encoder with random weights: its order is arbitrary but fixed."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    from indexer.embedding import default_model_path

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny_ce")
    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, num_labels=1,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_rerank_orders_by_cross_encoder_score_and_keeps_retriever_score(tiny_cross_encoder):
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    texts = ["lava and ash", "bread dough", "a goal in the final", "interest rates", "glaciers melt"]
    hits = [Hit(doc_id=str(i), title="", text=t, score=1.0 - i / 10) for i, t in enumerate(texts)]
    reranked = reranker.rerank("volcano", hits)
    direct = reranker.model.predict([("volcano", t) for t in texts])
    assert [h.doc_id for h in reranked] == [str(i) for i in sorted(range(5), key=lambda i: -direct[i])]
    assert [h.score for h in reranked] == pytest.approx(sorted(direct, reverse=True), rel=1e-5)
    assert {h.doc_id: h.metadata["retriever_score"] for h in reranked} == {h.doc_id: h.score for h in hits}
    assert reranker.rerank("q", []) == []
