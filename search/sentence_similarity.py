"""The similarity API other code imports: cosine similarity of sentence embeddings.

`top_pairs` is sentence-transformers' `paraphrase_mining_embeddings`, which
scores row blocks, so N sentences never need an N×N matrix in memory at once
when only the best pairs are wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from indexer.embedding import (
    check_model_argument,
    encode_texts,
    is_loaded_bi_encoder,
    load_bi_encoder,
)
from search.inputs import text_input, text_list, whole_number
from search.retrieve import (
    token_counts,
    unreadable,
    unreadable_counts,
    unreadable_message,
    warn_if_truncated,
)

_BLOCK_ROWS = 4096


@dataclass(frozen=True)
class Pair:
    i: int
    j: int
    score: float


def _model(model: Any) -> Any:
    """A loaded model passed through, a folder (str or os.PathLike) or None (the default) loaded
    once; anything else is a TypeError."""
    check_model_argument(model)
    return model if is_loaded_bi_encoder(model) else load_bi_encoder(model)


EMPTY = "give it a sentence with some words to compare."


def _sentences(sentences: object, name: str, model: Any) -> list[str]:
    """Checked sentences (`search.inputs.text_list`), each warned about when the model reads only
    its start (`QueryTruncatedWarning`, as a query gets); a sentence the model cannot read (no
    word it knows) is a ValueError naming it."""
    items = text_list(sentences, name, EMPTY)
    counts = token_counts(items, model)  # one batched tokenizer call for all the checks
    for pos, (sentence, count) in enumerate(zip(items, counts, strict=True)):
        if unreadable_counts(count, model):
            raise ValueError(unreadable_message(sentence, f"{name}[{pos}]") + ".")
        warn_if_truncated(sentence, model, f"{name}[{pos}]", tokens=count[0])
    return items


def unreadable_sentences(sentences: Sequence[str], model: Any = None) -> list[int]:
    """Positions of the sentences the model cannot read (no word it knows: `search.retrieve.unreadable`),
    which the other functions refuse; a page can leave them out and say so."""
    loaded = _model(model)
    return [pos for pos, count in enumerate(token_counts(list(sentences), loaded)) if unreadable_counts(count, loaded)]


def _check_readable(sentence: str, model: Any, name: str) -> None:
    if unreadable(sentence, model):
        raise ValueError(unreadable_message(sentence, name) + ".")


def embed(sentences: Sequence[str], model: Any = None, batch_size: int = 64) -> np.ndarray:
    """Unit-normalised float32 embeddings, (n, dim)."""
    loaded = _model(model)
    return encode_texts(loaded, _sentences(sentences, "sentences", loaded), batch_size=batch_size)


def similarity(a: str, b: str, model: Any = None) -> float:
    """Cosine similarity of the embeddings of two sentences, in [-1, 1]. `model`: a folder (str or
    os.PathLike), a loaded SentenceTransformer, or None for the default."""
    first = text_input(a, "a", f"a is empty; {EMPTY}")
    second = text_input(b, "b", f"b is empty; {EMPTY}")
    loaded = _model(model)
    for sentence, name in ((first, "a"), (second, "b")):
        _check_readable(sentence, loaded, name)
        warn_if_truncated(sentence, loaded, name)
    vectors = encode_texts(loaded, [first, second])
    return float(np.clip(vectors[0] @ vectors[1], -1.0, 1.0))  # unit vectors in float32 reach 1.0000001


def similarity_matrix(
    sentences_a: Sequence[str], sentences_b: Sequence[str] | None = None, model: Any = None
) -> np.ndarray:
    """Cosine similarities, float32 of shape (len(a), len(b)); `b` defaults to `a`.

    The matrix is built whole: 10,000 sentences make 400 MB. For the best pairs among many
    sentences use `top_pairs`, which scores blocks of rows and keeps only the best."""
    loaded = _model(model)
    emb_a = encode_texts(loaded, _sentences(sentences_a, "sentences_a", loaded))
    emb_b = emb_a if sentences_b is None else encode_texts(loaded, _sentences(sentences_b, "sentences_b", loaded))
    return np.clip(emb_a @ emb_b.T, -1.0, 1.0)


def top_pairs(sentences: Sequence[str], k: int = 10, model: Any = None) -> list[Pair]:
    """The k most similar pairs (i < j) among `sentences`, best first, computed block by block."""
    k = whole_number("k", k)
    loaded = _model(model)
    items = _sentences(sentences, "sentences", loaded)
    if len(items) < 2:
        raise ValueError(f"top_pairs needs at least 2 sentences, got {len(items)}.")
    return top_pairs_from_embeddings(encode_texts(loaded, items), k)


def top_pairs_from_embeddings(emb: np.ndarray, k: int, block_rows: int = _BLOCK_ROWS) -> list[Pair]:
    """Exact top-k of the strict upper triangle of emb @ emb.T, `block_rows` rows scored at a time.

    A pair among the k best is among the k best neighbours of each of its sentences,
    so mining each sentence's top k neighbours (`top_k=k`) finds all of them.
    """
    # Imported here: `import search` (a BM25-only search, the app's first page) must not pay
    # for torch and sentence-transformers, several seconds on a small CPU.
    import torch
    from sentence_transformers.util import dot_score, paraphrase_mining_embeddings

    device = "cuda" if torch.cuda.is_available() else "cpu"  # 10,000 x 10,000 scores: the GPU's work
    mined = paraphrase_mining_embeddings(
        torch.from_numpy(np.ascontiguousarray(emb)).to(device), query_chunk_size=block_rows, max_pairs=k, top_k=k,
        score_function=dot_score,
    )
    # The library returns [score, i, j] lists ordered by score alone; Pair and the (i, j) tie order are ours.
    pairs = [Pair(int(i), int(j), min(1.0, max(-1.0, float(score)))) for score, i, j in mined]
    return sorted(pairs, key=lambda pair: (-pair.score, pair.i, pair.j))
