from __future__ import annotations

from data.jsonl import iter_json_objects


def test_objects_come_with_line_numbers_and_bad_lines_are_named(caplog):
    lines = ['{"a": 1}\n', "\n", "{broken\n", "[1, 2]\n", '{"b": 2}\n']
    assert list(iter_json_objects(lines, "f.jsonl")) == [(1, {"a": 1}), (5, {"b": 2})]
    assert "f.jsonl:3: skipping malformed JSON line" in caplog.text
    assert "f.jsonl:4: expected a JSON object" in caplog.text
