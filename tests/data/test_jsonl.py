from __future__ import annotations

from data.jsonl import iter_json_objects


def test_objects_come_with_line_numbers_and_bad_lines_are_named(caplog):
    lines = ['{"a": 1}\n', "\n", "{broken\n", "[1, 2]\n", '{"b": 2}\n']
    assert list(iter_json_objects(lines, "f.jsonl")) == [(1, {"a": 1}), (5, {"b": 2})]
    assert "f.jsonl:3: skipping malformed JSON line" in caplog.text
    assert "f.jsonl:4: expected a JSON object" in caplog.text


def test_unicode_line_separators_stay_inside_their_line(tmp_path, caplog):
    path = tmp_path / "u.jsonl"
    text = "a\u2028b\u2029c\u0085d"
    path.write_bytes(('{"text": "' + text + '"}\n{broken\n{"b": 2}\n').encode())
    with path.open(encoding="utf-8", newline="\n") as handle:
        assert list(iter_json_objects(handle, path)) == [(1, {"text": text}), (3, {"b": 2})]
    assert f"{path}:2: skipping malformed JSON line" in caplog.text


def test_number_python_cannot_convert_is_a_malformed_line_not_a_crash(caplog):
    lines = ['{"n": ' + "9" * 5000 + "}\n", '{"b": 2}\n']
    assert list(iter_json_objects(lines, "f.jsonl")) == [(2, {"b": 2})]
    assert "f.jsonl:1: skipping malformed JSON line (Exceeds the limit" in caplog.text
