from __future__ import annotations

import logging
from pathlib import Path

import pytest

from data.paths import shared_data_dir
from data.stsb import iter_stsb, load_stsb

STSB = shared_data_dir() / "stsb"


def _write(folder: Path, lines: list[str], split: str = "train") -> Path:
    folder.mkdir(exist_ok=True)
    (folder / f"sts-{split}.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_parses_rows_with_extra_fields_and_quotes(tmp_path: Path) -> None:
    folder = _write(tmp_path / "stsb", [
        "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane is taking off.",
        'main-news\theadlines\t2013\t0002\t1.5\t"Unbalanced quote\tSecond one\tsource1\tsource2',
    ])
    pairs = load_stsb(folder, "train")
    assert [(p.sentence1, p.sentence2, p.score) for p in pairs] == [
        ("A plane is taking off.", "An air plane is taking off.", 5.0),
        ('"Unbalanced quote', "Second one", 1.5),
    ]


def test_malformed_rows_warn_with_file_and_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = _write(tmp_path / "stsb", [
        "g\tf\ty\t1\t4.0\tok one\tok two",
        "g\tf\ty\t2\ttoo few",
        "g\tf\ty\t3\tnot-a-number\ta\tb",
        "g\tf\ty\t4\t7.5\ta\tb",
    ], split="dev")
    with caplog.at_level(logging.WARNING):
        pairs = list(iter_stsb(folder, "dev"))
    assert len(pairs) == 1
    path = folder / "sts-dev.csv"
    assert f"{path}:2" in caplog.text and f"{path}:3" in caplog.text and f"{path}:4" in caplog.text


def test_bad_split_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Unknown STSb split 'valid'. Valid: train, dev, test"):
        load_stsb(tmp_path, "valid")
    with pytest.raises(ValueError, match="STSb file .* not found"):
        load_stsb(tmp_path, "test")


@pytest.mark.integration
@pytest.mark.skipif(not (STSB / "sts-test.csv").is_file(), reason="shared STSb not found")
def test_shared_stsb_counts() -> None:
    assert [len(load_stsb(STSB, split)) for split in ("train", "dev", "test")] == [5749, 1500, 1379]
