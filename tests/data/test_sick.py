from __future__ import annotations

import logging
from pathlib import Path

import pytest

from data.paths import shared_data_dir
from data.sick import LABELS, iter_sick

SICK = shared_data_dir() / "sick" / "SICK_train_trial.txt"
HEADER = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\tentailment_BA\t"
          "sentence_A_original\tsentence_B_original\tsentence_A_dataset\tsentence_B_dataset\tSemEval_set")


def _row(pair_id: int, label: str, score: str, split: str) -> str:
    return f"{pair_id}\tA man runs\tA person runs\t{label}\t{score}\tx\tx\tx\tx\tF\tF\t{split}"


def test_selects_splits_and_maps_labels(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "sick.txt"
    path.write_text("\n".join([HEADER, _row(1, "ENTAILMENT", "4.5", "TRAIN"), _row(2, "CONTRADICTION", "1.2", "TRIAL"),
                               _row(3, "MAYBE", "3", "TRAIN"), "4\tshort row"]) + "\n")
    with caplog.at_level(logging.WARNING):
        train = list(iter_sick(path, ("TRAIN",)))
    assert [(p.label, p.relatedness, p.split) for p in train] == [(LABELS.index("ENTAILMENT"), 4.5, "TRAIN")]
    assert f"{path}:4" in caplog.text and f"{path}:5" in caplog.text
    both = list(iter_sick(path, ("train", "trial")))
    assert [p.label for p in both] == [0, 2]


def test_missing_columns_and_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("a\tb\n1\t2\n")
    with pytest.raises(ValueError, match="header lacks SICK columns"):
        list(iter_sick(path))
    with pytest.raises(ValueError, match="SICK file .* not found"):
        list(iter_sick(tmp_path / "none.txt"))


@pytest.mark.integration
@pytest.mark.skipif(not SICK.is_file(), reason="shared SICK not found")
def test_shared_sick_counts() -> None:
    assert len(list(iter_sick(SICK, ("TRAIN",)))) == 4439
    assert len(list(iter_sick(SICK, ("TRAIN", "TRIAL")))) == 4934
