from __future__ import annotations

import numpy as np
import pytest

from training.pretrain_data import IS_NEXT, NOT_NEXT, ExampleStream, collate, document_examples

CLS, SEP, PAD = 2, 3, 0


def _corpus(documents: int = 200, seed: int = 0) -> list[list[np.ndarray]]:
    """Document d's tokens are 1000*d + running index, so provenance and order are checkable."""
    rng = np.random.default_rng(seed)
    corpus = []
    for d in range(documents):
        lengths = rng.integers(3, 20, size=int(rng.integers(2, 12)))
        start = 1000 * (d + 1)
        sentences, offset = [], 0
        for length in lengths:
            sentences.append(np.arange(start + offset, start + offset + length, dtype=np.int32))
            offset += length
        corpus.append(sentences)
    return corpus


def test_nsp_is_balanced_and_segments_are_well_formed() -> None:
    corpus = _corpus()
    stream = ExampleStream(corpus, seed=0, max_length=64, cls_id=CLS, sep_id=SEP)
    examples = stream.take(4000)
    labels = np.array([example.next_sentence_label for example in examples])
    assert abs((labels == NOT_NEXT).mean() - 0.5) < 0.03
    for example in examples[:500]:
        ids, types = example.input_ids, example.token_type_ids
        assert len(ids) <= 64 and ids[0] == CLS and ids[-1] == SEP
        seps = np.flatnonzero(ids == SEP)
        assert len(seps) == 2
        a, b = ids[1 : seps[0]], ids[seps[0] + 1 : -1]
        assert len(a) and len(b)
        assert (types[: seps[0] + 1] == 0).all() and (types[seps[0] + 1 :] == 1).all()
        same_document = a[0] // 1000 == b[0] // 1000
        if example.next_sentence_label == IS_NEXT:
            assert same_document and b[0] > a[-1], "B must be the true continuation of A"
        else:
            assert not same_document


def test_examples_are_packed_to_max_length() -> None:
    corpus = [[np.arange(1000 * (d + 1) + 10 * i, 1000 * (d + 1) + 10 * i + 10, dtype=np.int32) for i in range(40)]
              for d in range(5)]
    examples = document_examples(corpus, 0, np.random.default_rng(0), max_length=128, cls_id=CLS, sep_id=SEP)
    lengths = [len(example.input_ids) for example in examples]
    assert max(lengths) <= 128 and min(sorted(lengths)[1:]) >= 120  # all full but the final remainder


def test_without_nsp_one_segment() -> None:
    examples = document_examples(_corpus(5), 1, np.random.default_rng(0), 32, CLS, SEP, nsp=False)
    for example in examples:
        assert (example.input_ids == SEP).sum() == 1 and (example.token_type_ids == 0).all()


def test_stream_state_resumes_exactly() -> None:
    corpus = _corpus(30)
    first = ExampleStream(corpus, seed=3, max_length=48, cls_id=CLS, sep_id=SEP)
    first.take(57)
    state = first.state_dict()
    expected = first.take(200)  # crosses into the next epoch
    second = ExampleStream(corpus, seed=3, max_length=48, cls_id=CLS, sep_id=SEP)
    second.load_state_dict(state)
    resumed = second.take(200)
    assert all((x.input_ids == y.input_ids).all() and x.next_sentence_label == y.next_sentence_label
               for x, y in zip(expected, resumed, strict=True))


def test_collate_pads() -> None:
    examples = ExampleStream(_corpus(10), 0, 32, CLS, SEP).take(8)
    batch = collate(examples, PAD)
    width = max(len(e.input_ids) for e in examples)
    assert batch["input_ids"].shape == (8, width)
    assert (batch["attention_mask"].sum(1) == [len(e.input_ids) for e in examples]).all()
    assert (batch["input_ids"][batch["attention_mask"] == 0] == PAD).all()


def test_nsp_needs_two_documents() -> None:
    with pytest.raises(ValueError, match="NSP needs at least 2 documents.*--no-nsp"):
        ExampleStream(_corpus(1), 0, 32, CLS, SEP)


def test_stream_without_any_example_fails_instead_of_looping() -> None:
    with pytest.raises(ValueError, match="No document yields a pretraining example"):
        ExampleStream(_corpus(3), 0, max_length=3, cls_id=CLS, sep_id=SEP).take(1)
