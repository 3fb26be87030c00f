"""The rules bench/bench_documents.py scores and samples by: word recall as a multiset, the text an
outline places on a page, fixed-seed samples, and the end-to-end character budget."""

from __future__ import annotations

import pytest

from bench.bench_documents import fit_budget, page_slice, sample, summary, word_recall, words
from indexer.sources.outline import Block, assemble


def test_words_are_lowercased_alnum_runs_with_ligatures_as_letters():
    assert words("The ﬁle_name, the FILE: 3.14") == {"the": 2, "file": 2, "name": 1, "3": 1, "14": 1}


def test_word_recall_counts_repeated_words_as_a_multiset():
    assert word_recall("to be or not to be", "to be or not to be") == 1.0
    # "to" twice and "be" twice in the reference; the candidate holds each once: 4 of 6 words.
    assert word_recall("to be or not to be", "be not or to") == pytest.approx(4 / 6)
    # Extra words in the candidate do not raise recall above 1, nor lower it.
    assert word_recall("alpha beta", "Alpha, BETA gamma delta") == 1.0
    assert word_recall("alpha beta", "") == 0.0
    assert word_recall("", "anything") == 1.0


def test_page_slice_follows_the_outline_assemble_builds():
    text, outline = assemble([Block("first page words", page=1), Block("", page=2),
                              Block("third page", page=3), Block("fourth", page=4), Block("", page=5)])
    starts = outline.page_starts
    assert page_slice(text, starts, 1).strip() == "first page words"
    assert page_slice(text, starts, 2) == ""  # an empty page starts where the next text does
    assert page_slice(text, starts, 3).strip() == "third page"
    assert page_slice(text, starts, 4) == "fourth"  # the last start runs to the end of the text
    assert page_slice(text, starts, 5) == ""  # a trailing empty page has no start at all
    assert "".join(page_slice(text, starts, n) for n in range(1, 6)) == text
    with pytest.raises(ValueError):
        page_slice(text, starts, 0)


def test_page_slice_scores_a_page_against_its_own_text_only():
    text, outline = assemble([Block("apple banana cherry", page=1), Block("delta echo foxtrot", page=2)])
    assert word_recall("delta echo foxtrot", page_slice(text, outline.page_starts, 2)) == 1.0
    assert word_recall("delta echo foxtrot", page_slice(text, outline.page_starts, 1)) == 0.0


def test_sample_is_sorted_repeatable_and_seed_dependent():
    items = [f"f{i:03d}" for i in range(100)]
    first = sample(list(reversed(items)), 10, seed=42)
    assert first == sorted(first) and len(set(first)) == 10
    assert first == sample(items, 10, seed=42)
    assert first != sample(items, 10, seed=7)
    assert sample(["b", "a"], 5, seed=1) == ["a", "b"]


def test_fit_budget_passes_over_files_too_large_for_what_is_left():
    sizes = [("a", 50), ("b", 80), ("c", 30), ("d", 20)]
    assert fit_budget(sizes, 100) == ["a", "c", "d"]
    assert fit_budget(sizes, 10) == ["d"]  # none fits: the smallest alone
    assert fit_budget([], 10) == []


def test_summary_says_whether_the_mean_meets_the_target():
    assert "**met**" in summary([0.99, 0.96, 0.93], [])
    line = summary([0.99, 0.80], [1.0])
    assert "NOT met" in line and "min 0.800" in line and "pdfminer.six: mean 1.000" in line
    assert "1/2" in line
