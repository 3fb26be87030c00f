from __future__ import annotations

import itertools

import numpy as np
import pytest

from search import similarity, similarity_matrix, top_pairs
from search.sentence_similarity import top_pairs_from_embeddings


@pytest.mark.integration
def test_similarity_orders_paraphrase_above_unrelated(default_model):
    close = similarity("A man is playing a guitar.", "Someone plays an instrument.")
    far = similarity("A man is playing a guitar.", "The stock market fell sharply.")
    assert close > far + 0.3
    assert similarity("same sentence", "same sentence") == pytest.approx(1.0, abs=1e-5)


@pytest.mark.integration
def test_matrix_shape_symmetry_and_agreement_with_pairwise(default_model):
    a = ["a cat sleeps", "a dog barks", "markets fell"]
    b = ["a kitten naps", "stocks dropped"]
    m = similarity_matrix(a, b)
    assert m.shape == (3, 2)
    assert m[0, 0] == pytest.approx(similarity(a[0], b[0]), abs=1e-5)
    assert m[2, 1] > m[2, 0]
    square = similarity_matrix(a)
    np.testing.assert_allclose(square, square.T, atol=1e-6)


def test_model_can_be_passed_in(tiny_model):
    value = similarity("one", "two", model=tiny_model)
    assert -1.0 <= value <= 1.0


def test_top_pairs_matches_brute_force_across_blocks():
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((57, 8)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    brute = sorted(
        ((float(emb[i] @ emb[j]), i, j) for i, j in itertools.combinations(range(57), 2)), reverse=True
    )[:12]
    got = top_pairs_from_embeddings(emb, 12, block_rows=10)
    assert [(p.i, p.j) for p in got] == [(i, j) for _, i, j in brute]
    np.testing.assert_allclose([p.score for p in got], [s for s, _, _ in brute], rtol=1e-5)


def test_top_pairs_with_fewer_pairs_than_k(tiny_model):
    pairs = top_pairs(["a", "b", "c"], k=10, model=tiny_model)
    assert sorted((p.i, p.j) for p in pairs) == [(0, 1), (0, 2), (1, 2)]


def test_bad_inputs_are_explained(tiny_model):
    with pytest.raises(TypeError, match="not a single string"):
        similarity_matrix("just one string", model=tiny_model)
    with pytest.raises(TypeError, match=r"sentences_a\[1\] must be a string, not int"):
        similarity_matrix(["ok", 3], model=tiny_model)
    with pytest.raises(TypeError, match="b must be a string, not NoneType"):
        similarity("a", None, model=tiny_model)
    # An empty sentence would still get a score (0.54 with MiniLM), which means nothing.
    with pytest.raises(ValueError, match="a is empty; give it a sentence"):
        similarity("", "x", model=tiny_model)
    with pytest.raises(ValueError, match="b is empty"):
        similarity("x", " \t\n", model=tiny_model)
    with pytest.raises(ValueError, match=r"sentences_b\[1\] is empty"):
        similarity_matrix(["x"], ["y", "  "], model=tiny_model)
    with pytest.raises(ValueError, match=r"sentences\[0\] is empty"):
        top_pairs(["", "b"], model=tiny_model)
    with pytest.raises(ValueError, match="needs at least 2 sentences, got 1"):
        top_pairs(["alone"], model=tiny_model)
    with pytest.raises(ValueError, match=r"k \(0\) must be at least 1"):
        top_pairs(["a", "b"], k=0, model=tiny_model)


def test_text_without_a_word_the_model_knows_is_refused_and_cosines_stay_in_range(tiny_model_dir):
    from search.sentence_similarity import unreadable_sentences

    model = str(tiny_model_dir)
    with pytest.raises(ValueError, match=r"a \('🐧🐧🐧'\) holds no word the model knows"):
        similarity("🐧🐧🐧", "😀🎉", model=model)
    with pytest.raises(ValueError, match=r"sentences_a\[1\] .* holds no word the model knows"):
        similarity_matrix(["a cat", "😀🎉"], model=model)
    assert unreadable_sentences(["a cat", "🐧🐧🐧", "a 🐧 sat on the mat"], model=model) == [1]
    same = similarity("the cat sat on the mat", "the cat sat on the mat", model=model)
    assert same <= 1.0 and same == pytest.approx(1.0, abs=1e-5)
    assert float(similarity_matrix(["a dog", "a cat"], model=model).max()) <= 1.0
