"""bench_encode's variants compute the model's own function, and its arithmetic and choice add up."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_encode import choose, matmul_peak, passage_flops
from bench.encode_variants import VARIANTS, as_bi_encoder, make_encoder
from indexer.embedding import encode_query, encode_texts

TEXTS = ["a cat sat on the mat", "The indexer cuts documents into passages of at most 256 tokens. " * 6,
         "short", "bread rises in a warm oven with yeast and water and a little salt"]
# How far each variant may move a vector (cosine) from encode()'s: the same function in fp32
# moves it by rounding only; bf16 and int8 round the arithmetic itself.
AGREEMENT = {"fp32": 0.99999, "bf16": 0.98, "int8": 0.95}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_dir), device="cpu")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_each_variant_encodes_what_the_model_encodes(tiny, name, tmp_path):
    reference = tiny.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    vectors = make_encoder(tiny, name, tmp_path)(TEXTS)
    assert vectors.shape == reference.shape and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    cosines = (vectors * reference).sum(axis=1)
    assert cosines.min() >= AGREEMENT[VARIANTS[name].precision], (name, cosines)


def test_a_variant_stands_in_for_the_model_where_the_indexer_encodes(tiny, tmp_path):
    variant = as_bi_encoder(tiny, make_encoder(tiny, "onnx-fp32", tmp_path))
    got = encode_texts(variant, TEXTS, batch_size=2)
    assert np.allclose(got, tiny.encode(TEXTS, normalize_embeddings=True), atol=1e-4)
    assert variant.encode("one text").shape == (tiny.get_sentence_embedding_dimension(),)
    assert tiny.encode.__self__ is tiny, "the model itself is left as it was"


def test_the_indexer_encodes_through_the_variant_not_the_models_own_modules(tiny):
    """`encode_texts` runs a plain bi-encoder's torch modules itself (indexer.pipelined_encoding);
    a variant must still be what computes the vectors, for the index and for the queries."""
    marker = np.eye(tiny.get_sentence_embedding_dimension(), dtype=np.float32)[0]
    variant = as_bi_encoder(tiny, lambda texts: np.tile(marker, (len(texts), 1)))
    assert np.array_equal(encode_texts(variant, TEXTS, batch_size=2), np.tile(marker, (len(TEXTS), 1)))
    assert np.array_equal(encode_query(variant, "one query")[0], marker)
    assert variant.max_seq_length == tiny.max_seq_length and variant.tokenizer is tiny.tokenizer


def test_the_arithmetic_counts_tokens_not_padding(tiny):
    config = tiny[0].auto_model.config  # 2 layers, hidden 32, inner 64 (tests/conftest.py)
    per_layer = 4 * 32 * 32 + 2 * 32 * config.intermediate_size
    assert passage_flops(tiny, np.array([10])) == 2 * 2 * per_layer * 10 + 4 * 2 * 32 * 100
    assert passage_flops(tiny, np.array([10, 10])) == 2 * passage_flops(tiny, np.array([10]))
    assert matmul_peak("fp32", size=128, tries=2) > 0 and matmul_peak("int8", size=128, tries=2) > 0


def test_the_default_is_the_fastest_variant_within_the_allowed_loss():
    cells = [("a", "dense"), ("a", "hybrid")]
    rate = {"fp32": 10.0, "bf16": 30.0, "int8-torch": 20.0}
    ndcg = {"bf16": {cells[0]: (0.70, 0.690), cells[1]: (0.8, 0.8)},  # loses 0.01 on one cell
            "int8-torch": {cells[0]: (0.70, 0.696), cells[1]: (0.8, 0.801)}}
    assert choose(rate, ndcg, cells) == "`int8-torch` (2.00x encode())"
    assert choose(rate, {}, cells) == "`fp32` (1.00x encode())"
