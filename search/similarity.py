"""The similarity API other code imports: cosine similarity of sentence embeddings.

`top_pairs` is sentence-transformers' `paraphrase_mining_embeddings`, which
scores row blocks, so N sentences never need an N×N matrix in memory at once
when only the best pairs are wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from indexer.embedding import encode_texts, load_bi_encoder

_BLOCK_ROWS = 4096


@dataclass(frozen=True)
class Pair:
    i: int
    j: int
    score: float


def _model(model):
    """A loaded model passed through, a folder path or None (the default) loaded once."""
    if model is None or isinstance(model, str):
        return load_bi_encoder(model)
    return model


def _check_sentences(sentences: Sequence[str], name: str) -> list[str]:
    if isinstance(sentences, str):
        raise TypeError(f"{name} must be a list of strings, not a single string; wrap it in [...].")
    items = list(sentences)
    for pos, sentence in enumerate(items):
        _check_sentence(sentence, f"{name}[{pos}]")
    return items


def _check_sentence(sentence: object, name: str) -> str:
    """`sentence`, a string with something to embed: an empty one would still get a score, which
    would mean nothing."""
    if not isinstance(sentence, str):
        raise TypeError(f"{name} is {type(sentence).__name__}; it must be a string.")
    if not sentence.strip():
        raise ValueError(f"{name} is empty; give it a sentence with some words to compare.")
    return sentence


def embed(sentences: Sequence[str], model=None, batch_size: int = 64) -> np.ndarray:
    """Unit-normalised float32 embeddings, (n, dim)."""
    return encode_texts(_model(model), _check_sentences(sentences, "sentences"), batch_size=batch_size)


def similarity(a: str, b: str, model=None) -> float:
    """Cosine similarity of the embeddings of two sentences, in [-1, 1]."""
    _check_sentence(a, "a")
    _check_sentence(b, "b")
    vectors = embed([a, b], model)
    return float(vectors[0] @ vectors[1])


def similarity_matrix(
    sentences_a: Sequence[str], sentences_b: Sequence[str] | None = None, model=None
) -> np.ndarray:
    """Cosine similarities, shape (len(a), len(b)); `b` defaults to `a`."""
    a = _check_sentences(sentences_a, "sentences_a")
    emb_a = embed(a, model)
    emb_b = emb_a if sentences_b is None else embed(_check_sentences(sentences_b, "sentences_b"), model)
    return emb_a @ emb_b.T


def top_pairs(sentences: Sequence[str], k: int = 10, model=None) -> list[Pair]:
    """The k most similar pairs (i < j) among `sentences`, best first, computed block by block."""
    if k < 1:
        raise ValueError(f"k ({k}) must be at least 1.")
    items = _check_sentences(sentences, "sentences")
    if len(items) < 2:
        raise ValueError(f"top_pairs needs at least 2 sentences, got {len(items)}.")
    return top_pairs_from_embeddings(embed(items, model), k)


def top_pairs_from_embeddings(emb: np.ndarray, k: int, block_rows: int = _BLOCK_ROWS) -> list[Pair]:
    """Exact top-k of the strict upper triangle of emb @ emb.T, `block_rows` rows scored at a time.

    A pair among the k best is among the k best neighbours of each of its sentences,
    so mining each sentence's top k neighbours (`top_k=k`) finds all of them.
    """
    # Imported here: `import search` (a BM25-only search, the app's first page) must not pay
    # for torch and sentence-transformers, several seconds on a small CPU.
    import torch
    from sentence_transformers.util import dot_score, paraphrase_mining_embeddings

    mined = paraphrase_mining_embeddings(
        torch.from_numpy(np.ascontiguousarray(emb)), query_chunk_size=block_rows, max_pairs=k, top_k=k,
        score_function=dot_score,
    )
    # The library returns [score, i, j] lists ordered by score alone; Pair and the (i, j) tie order are ours.
    pairs = [Pair(int(i), int(j), float(score)) for score, i, j in mined]
    return sorted(pairs, key=lambda pair: (-pair.score, pair.i, pair.j))
