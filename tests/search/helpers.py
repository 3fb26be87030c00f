"""Helpers shared by search tests and the app tests: a tiny cross-encoder and an exact-code document."""

from __future__ import annotations

import dataclasses
from pathlib import Path

# A document whose only link to its query is a code: BM25 matches it exactly, while the
# tiny random-weight bi-encoder ranks another document first (checked in test_retrieve).
CODE_DOC = (
    "Minutes of the annual meeting of the village gardening club: members discussed compost, "
    "the autumn show, the price of seed potatoes, a new shed for the allotments and the order "
    "number QZ9931 for replacement hoses."
)
CODE_QUERY = "QZ9931"


def build_tiny_cross_encoder(folder: Path, initializer_range: float = 0.02) -> str:
    """A 2-layer BERT cross-encoder with random weights saved into `folder`; its order is
    arbitrary but fixed by the seed. At BERT's initializer range (0.02) all its scores lie
    within about 1e-4 of each other; 0.2 spreads them over about 0.2."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    from indexer.model_spec import default_model_path

    torch.manual_seed(0)
    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, num_labels=1, initializer_range=initializer_range,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def without_bm25(monkeypatch) -> None:
    """Every `Index` opened from here on loads its builds without their BM25 part, as an index
    without BM25 would (the indexer itself always writes one)."""
    from indexer.index import Index

    loaded = Index.snapshot
    monkeypatch.setattr(Index, "snapshot", lambda self: dataclasses.replace(loaded(self), bm25=None))
