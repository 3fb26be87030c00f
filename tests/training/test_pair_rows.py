from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from training.siamese_data import load_training_data, load_training_dataset, sample_in_proportion


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _labelled(path: Path, labels: list) -> Path:
    return _jsonl(path, [{"sentence1": f"a {i}", "sentence2": f"b {i}", "label": label} for i, label in enumerate(labels)])


def test_label_ids_must_run_from_0_to_k_minus_1(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    assert load_training_dataset(_labelled(tmp_path / "ok.jsonl", [0, 2, 1, "1"]), "softmax", rng)["label"] == [0, 2, 1, 1]
    with pytest.raises(ValueError, match=r"minus.jsonl:2: label -1 is not a class id 0..1"):
        load_training_dataset(_labelled(tmp_path / "minus.jsonl", [0, -1, 0]), "softmax", rng)
    with pytest.raises(ValueError, match=r"gap.jsonl:3: label 99 is not a class id 0..2: the file uses 3 distinct "
                                         r"ids \(0, 1, 99\).*Renumber them"):
        load_training_dataset(_labelled(tmp_path / "gap.jsonl", [0, 1, 99]), "softmax", rng)
    with pytest.raises(ValueError, match=r"mixed.jsonl:2: label 'neutral' is a name, but line 1 has the class id 0"):
        load_training_dataset(_labelled(tmp_path / "mixed.jsonl", [0, "neutral"]), "softmax", rng)


def test_label_names_are_numbered_in_sorted_order(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    names = ["entailment", "neutral", "contradiction", "neutral"]
    csv = tmp_path / "nli.csv"
    csv.write_text("sentence1,sentence2,label\n" + "".join(f"a {i},b {i},{name}\n" for i, name in enumerate(names)))
    with caplog.at_level(logging.WARNING):
        data = load_training_data(csv, "softmax", np.random.default_rng(0))
    assert data.label_names == ("contradiction", "entailment", "neutral")
    assert data.dataset["label"] == [1, 2, 0, 2] and not caplog.records  # no "malformed row" warnings


def test_scores_keep_their_scale_and_out_of_range_is_refused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rng = np.random.default_rng(0)
    rows = [{"sentence1": "a", "sentence2": "b", "score": score} for score in (1.0, 3.0, 4.8)]
    five = _jsonl(tmp_path / "five.jsonl", rows)
    with pytest.raises(ValueError, match=r"five.jsonl:2: score 3 lies outside the scale 0-1; pass --score-range LOW "
                                         r"HIGH with the scale of your file \(e.g. --score-range 0 5\)"):
        load_training_dataset(five, "cosine", rng)
    with caplog.at_level(logging.INFO, logger="training"):
        scores = load_training_dataset(five, "cosine", rng, score_range=(1.0, 5.0))["score"]
    assert scores == pytest.approx([0.0, 0.5, 0.95])  # (x - 1) / 4, as SICK: 4.8 is not stretched to 1
    assert "scale 1-5 (--score-range), mapped to 0-1" in caplog.text
    signed = _jsonl(tmp_path / "signed.jsonl", [{"sentence1": "a", "sentence2": "b", "score": s} for s in (-1, 0, 1)])
    assert load_training_dataset(signed, "cosine", rng, score_range=(-1.0, 1.0))["score"] == [0.0, 0.5, 1.0]
    with pytest.raises(ValueError, match=r"signed.jsonl:1: score -1 lies outside the scale 0-5; fix the score"):
        load_training_dataset(signed, "cosine", rng, score_range=(0.0, 5.0))


def test_max_train_examples_samples_both_kinds_in_proportion(tiny_jsonl_corpus: Path) -> None:
    rng = np.random.default_rng(0)
    full = load_training_dataset(tiny_jsonl_corpus, "mnrl", rng)
    capped = load_training_dataset(tiny_jsonl_corpus, "mnrl", np.random.default_rng(0), max_examples=20)
    titles = sum(row["anchor"].startswith("Notes on") for row in capped)
    full_share = sum(row["anchor"].startswith("Notes on") for row in full) / len(full)
    assert len(capped) == 20 and 0 < titles < 20 and abs(titles / 20 - full_share) <= 0.05
    groups = [[{"k": "a"}] * 90, [{"k": "b"}] * 10]
    assert [row["k"] for row in sample_in_proportion(groups, 10, rng)].count("b") == 1
