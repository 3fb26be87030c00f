from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from data.pairs import detect_schema, iter_pairs


def test_csv_and_jsonl_with_malformed_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    csv_path = tmp_path / "p.csv"
    csv_path.write_text("sentence1,sentence2,score\na,b,4.5\nc,d,not-a-number\n")
    jsonl_path = tmp_path / "t.jsonl"
    jsonl_path.write_text(json.dumps({"anchor": "q", "positive": "p", "negative": "n"}) + "\n{broken\n"
                          + json.dumps({"anchor": "q", "positive": "", "negative": "n"}) + "\n")
    with caplog.at_level(logging.WARNING):
        assert list(iter_pairs(csv_path)) == [{"sentence1": "a", "sentence2": "b", "score": 4.5}]
        assert list(iter_pairs(jsonl_path)) == [{"anchor": "q", "positive": "p", "negative": "n"}]
    assert f"{csv_path}:3" in caplog.text and f"{jsonl_path}:2" in caplog.text and f"{jsonl_path}:3" in caplog.text


def test_schema_errors(tmp_path: Path) -> None:
    assert detect_schema({"query", "passage", "label"}) == ("query", "passage", "label")
    with pytest.raises(ValueError, match="match no pair schema. Valid column sets: anchor, positive, negative"):
        detect_schema({"a", "b"})
    with pytest.raises(ValueError, match=r"Unsupported pair file .*Valid extensions: .jsonl, .csv, .tsv"):
        list(iter_pairs(_touch(tmp_path / "p.xml")))
    with pytest.raises(ValueError, match="holds no rows"):
        list(iter_pairs(_touch(tmp_path / "empty.jsonl")))


def _touch(path: Path) -> Path:
    path.write_text("")
    return path


def test_missing_pair_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Pair file .* does not exist"):
        list(iter_pairs(tmp_path / "none.jsonl"))
