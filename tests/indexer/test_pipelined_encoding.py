"""The pipelined encoder gives `encode()`'s vectors, in input order, and steps aside where it cannot."""

from __future__ import annotations

import numpy as np
import pytest

from indexer.embedding import encode_texts, load_bi_encoder
from indexer.pipelined_encoding import PipelinedEncoder

TEXTS = [
    "",
    "A short one.",
    "Lava and ash erupted from the volcano in Iceland, and flights across Europe were grounded.",
    "Ünïcödé, emoji 🙂 and CJK 漢字 survive tokenisation.",
    " ".join(["a long passage that runs past the model's window"] * 40),  # > 128 tokens: truncated
    "Knead the dough for ten minutes.",
    "Share prices fell sharply after the central bank raised interest rates.",
]


def _reference(model, texts) -> np.ndarray:
    return model.encode(list(texts), batch_size=3, convert_to_numpy=True, normalize_embeddings=True,
                        show_progress_bar=False)


@pytest.fixture()
def model(tiny_model):
    return load_bi_encoder(tiny_model)


def test_vectors_equal_encode_in_input_order(model):
    assert PipelinedEncoder.of(model) is not None
    steps: list[tuple[int, int]] = []
    vectors = encode_texts(model, TEXTS, batch_size=2, chunk_size=3, progress=lambda d, n: steps.append((d, n)))
    np.testing.assert_allclose(vectors, _reference(model, TEXTS), atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert [d for d, _ in steps] == sorted(d for d, _ in steps) and steps[-1] == (len(TEXTS), len(TEXTS))
    assert len(steps) > 1  # flushed in runs of about chunk_size, not once at the end


def test_arrays_equal_the_tokenizers_own_padded_batch(model):
    """Ids, mask and type ids built from the unpadded ids equal what transformers' tokenizer call
    gives for the batch (padding to its longest text, truncation at max_seq_length)."""
    encoder = PipelinedEncoder.of(model)
    assert encoder is not None
    for batch in (TEXTS, TEXTS[1:3], [TEXTS[0]], [TEXTS[4], TEXTS[0]]):
        arrays = encoder.tokenize(batch)
        expected = model.tokenizer(batch, padding=True, truncation=True, max_length=model.max_seq_length,
                                   return_tensors="np")
        assert set(arrays) == {"input_ids", "attention_mask", "token_type_ids"}
        for name, array in arrays.items():
            np.testing.assert_array_equal(array, expected[name].astype(np.int64), err_msg=name)
            assert array.dtype == np.int64


def test_the_time_the_model_waited_for_its_tokenizer_is_counted(model):
    """What bench_gpu reads to tell a GPU starved by its tokenizer thread."""
    from indexer.pipelined_encoding import tokenizer_wait_seconds

    encoder = PipelinedEncoder.of(model)
    assert encoder is not None
    seconds, batches, total = encoder.waits.seconds, encoder.waits.batches, tokenizer_wait_seconds()
    encode_texts(model, TEXTS * 3, batch_size=2)
    assert encoder.waits.batches - batches == -(-len(TEXTS) * 3 // 2)
    assert encoder.waits.seconds > seconds and tokenizer_wait_seconds() - total == pytest.approx(
        encoder.waits.seconds - seconds)


def test_truncation_follows_max_seq_length(model):
    model.max_seq_length = 8
    try:
        encoder = PipelinedEncoder.of(model)
        assert encoder is not None and encoder.max_length == 8
        np.testing.assert_allclose(encode_texts(model, TEXTS), _reference(model, TEXTS), atol=1e-5)
    finally:
        model.max_seq_length = 128
    assert PipelinedEncoder.of(model).max_length == 128


def test_made_once_per_model(model):
    assert PipelinedEncoder.of(model) is PipelinedEncoder.of(model)


def test_the_real_model_matches_encode(default_model):
    np.testing.assert_allclose(encode_texts(default_model, TEXTS), _reference(default_model, TEXTS), atol=1e-5)


def test_models_it_cannot_run_go_through_encode(tiny_model):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense

    lower = SentenceTransformer(tiny_model, device="cpu")
    lower[0].do_lower_case = True
    prompted = SentenceTransformer(tiny_model, device="cpu", prompts={"query": "query: "},
                                   default_prompt_name="query")
    dense = SentenceTransformer(tiny_model, device="cpu")
    dense.append(Dense(32, 8))
    for refused in (lower, prompted, dense):
        assert PipelinedEncoder.of(refused) is None
        np.testing.assert_allclose(encode_texts(refused, TEXTS[1:4]), _reference(refused, TEXTS[1:4]), atol=1e-5)
    assert PipelinedEncoder.of(object()) is None


def test_a_model_whose_encode_is_replaced_is_encoded_by_it(model):
    """A wrapper that computes the vectors otherwise (another runtime, a cache) is what runs."""
    import copy

    wrapped = copy.copy(model)
    marker = np.eye(32, dtype=np.float32)[1]
    wrapped.encode = lambda texts, **kwargs: np.tile(marker, (len(texts), 1))
    assert PipelinedEncoder.of(wrapped) is None and PipelinedEncoder.of(model) is not None
    assert np.array_equal(encode_texts(wrapped, TEXTS[:3]), np.tile(marker, (3, 1)))


def test_a_model_left_in_training_mode_encodes_without_dropout(model):
    expected = _reference(model, TEXTS)
    model.train()
    np.testing.assert_allclose(encode_texts(model, TEXTS), expected, atol=1e-5)
    assert not model.training
