"""Shared fixtures: a tiny bi-encoder built from a config, the real default model, small corpora."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Idle OpenMP threads sleep instead of spinning: on 2 shared cores, spinning made
# tiny-model training ~60x slower. Must be set before torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# Indexes built by tests compute fp32 vectors, whatever this CPU would choose (`indexer.encoding`),
# so that tests comparing stored vectors with `encode()` hold on every machine; the encodings and
# the machine's choice are tested in tests/indexer/test_encoding.py, which unsets this.
os.environ.setdefault("SEMSEARCH_ENCODING", "fp32")

from data.paths import shared_data_dir


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A 2-layer BERT with hidden size 32 (random weights) wrapped as a SentenceTransformer.

    It reuses the default model's WordPiece vocabulary so it tokenises real text;
    its embeddings are meaningless but deterministic, which is all storage tests need.
    """
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    from indexer.model_spec import default_model_path

    torch.manual_seed(0)
    bert_dir = tmp_path_factory.mktemp("tiny_bert")
    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    transformer = Transformer(str(bert_dir), max_seq_length=128)
    model = SentenceTransformer(modules=[transformer, Pooling(32, "mean"), Normalize()], device="cpu")
    out = tmp_path_factory.mktemp("tiny_st")
    model.save(str(out))
    return out


@pytest.fixture()
def tiny_model(tiny_model_dir, tmp_path) -> str:
    """A private copy of the tiny model folder, as a path string."""
    target = tmp_path / "model"
    shutil.copytree(tiny_model_dir, target)
    return str(target)


@pytest.fixture(scope="session")
def default_model():
    from indexer.embedding import load_bi_encoder

    return load_bi_encoder(None)


TOPIC_DOCS = {
    "volcano.txt": "Lava and ash erupted from the volcano in Iceland, and flights across Europe were grounded.",
    "baking.txt": "Knead the dough for ten minutes, let it rise for an hour, then bake the bread at 220 degrees.",
    "football.md": "# Cup final\nThe striker scored twice in the second half and the team lifted the trophy.",
    "markets.txt": "Share prices fell sharply after the central bank raised interest rates by half a point.",
}


@pytest.fixture()
def topic_corpus(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in TOPIC_DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared datasets not found at {path} (set SEMSEARCH_DATA)")
    return path
