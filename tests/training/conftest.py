"""Session-scoped tiny fixtures: a synthetic corpus, a WordPiece vocab trained on it, a 2-layer BERT (hidden 32)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the teacher", "a small bird", "the farmer", "our neighbour"]
VERBS = ["sees", "likes", "finds", "watches", "follows", "paints", "feeds", "visits"]
OBJECTS = ["the river", "a red ball", "the garden", "an apple tree", "the market", "a quiet village", "the mountains"]
TOPICS = ["weather", "music", "football", "cooking", "history", "gardening", "science", "travel"]


def synthetic_documents(count: int, seed: int = 0) -> list[tuple[str, list[str]]]:
    """(title, sentences) documents with a simple grammar; each document sticks to one topic."""
    rng = np.random.default_rng(seed)
    documents = []
    for index in range(count):
        topic = TOPICS[index % len(TOPICS)]
        sentences = [
            f"{SUBJECTS[rng.integers(len(SUBJECTS))].capitalize()} {VERBS[rng.integers(len(VERBS))]} "
            f"{OBJECTS[rng.integers(len(OBJECTS))]} while talking about {topic}."
            for _ in range(int(rng.integers(4, 9)))
        ]
        documents.append((f"Notes on {topic} {index}", sentences))
    return documents


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Plain text, documents separated by blank lines (about 20 KB)."""
    path = tmp_path_factory.mktemp("corpus") / "tiny.txt"
    path.write_text("\n\n".join(" ".join(sentences) for _, sentences in synthetic_documents(60)) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_jsonl_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus_jsonl") / "tiny.jsonl"
    with path.open("w") as handle:
        for index, (title, sentences) in enumerate(synthetic_documents(60, seed=1)):
            handle.write(json.dumps({"id": str(index), "title": title, "text": " ".join(sentences)}) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from training.config import TokenizerConfig
    from training.tokenizer import train_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer(TokenizerConfig(corpus=tiny_corpus, out=out, vocab_size=300, min_frequency=1))
    return out


@pytest.fixture(scope="session")
def tiny_bert_dir(tiny_tokenizer_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer BERT with hidden 32 and MLM/NSP heads, saved with its tokenizer. Copy before modifying."""
    import torch
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    tokenizer = BertTokenizer.from_pretrained(str(tiny_tokenizer_dir))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, pad_token_id=tokenizer.pad_token_id)
    out = tmp_path_factory.mktemp("tiny_bert")
    BertForPreTraining(config).save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return out


@pytest.fixture
def tiny_bert_copy(tiny_bert_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "bert"
    shutil.copytree(tiny_bert_dir, target)
    return target


@pytest.fixture(scope="session")
def tiny_pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scored pairs on the default 0-1 scale: same-topic sentences score 1, different topics 0."""
    documents = synthetic_documents(40, seed=2)
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    rng = np.random.default_rng(3)
    with path.open("w") as handle:
        for _ in range(160):
            first, second = rng.integers(len(documents), size=2)
            same = TOPICS.index(documents[first][0].split()[2]) == TOPICS.index(documents[second][0].split()[2])
            row = {"sentence1": documents[first][1][0], "sentence2": documents[second][1][-1], "score": 1.0 if same else 0.0}
            handle.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_triplets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    documents = synthetic_documents(40, seed=4)
    path = tmp_path_factory.mktemp("triplets") / "triplets.jsonl"
    with path.open("w") as handle:
        for index, (_, sentences) in enumerate(documents):
            other = documents[(index + 3) % len(documents)][1]
            handle.write(json.dumps({"anchor": sentences[0], "positive": sentences[1], "negative": other[0]}) + "\n")
    return path
