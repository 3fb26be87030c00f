"""The rules bench/bench_office.py scores by: recall and precision of words as multisets, and what
counts as a file a reader could not read."""

from __future__ import annotations

import pytest

from bench.bench_office import overlap, read_all, words
from indexer.sources.formats import UnreadableDocument


def test_words_are_lowercased_letter_runs_of_three_or_more():
    assert words("The Café's 3 ab, THE cafe") == {"the": 2, "café": 1, "cafe": 1}


def test_overlap_is_recall_and_precision_as_multisets():
    assert overlap("alpha beta beta gamma", "beta alpha delta") == pytest.approx((2 / 4, 2 / 3))
    assert overlap("alpha beta", "") == (0.0, 0.0)
    assert overlap("alpha beta", "alpha beta alpha beta") == pytest.approx((1.0, 0.5))


def test_a_refused_file_is_left_out_and_any_other_error_raised(tmp_path):
    files = [tmp_path / "a", tmp_path / "b"]

    def refuse_b(path):
        if path.name == "b":
            raise UnreadableDocument("no text")
        return path.name

    assert read_all(files, refuse_b, UnreadableDocument) == {files[0]: "a"}

    def crash(path):
        raise KeyError(path.name)

    with pytest.raises(KeyError):
        read_all(files, crash, UnreadableDocument)
