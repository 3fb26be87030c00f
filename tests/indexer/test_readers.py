from __future__ import annotations

import json

import pytest

from indexer.documents import InputIssue
from indexer.readers import read_documents


def collect(source, **kwargs):
    issues: list[InputIssue] = []
    docs = list(read_documents(source, on_issue=issues.append, **kwargs))
    return docs, [str(i) for i in issues]


def test_folder_of_text_and_markdown(tmp_path):
    (tmp_path / "a.txt").write_text("plain text body")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# The Title\nmarkdown body")
    docs, issues = collect(tmp_path)
    assert issues == []
    by_id = {d.doc_id: d for d in docs}
    assert set(by_id) == {"a.txt", "sub/b.md"}
    assert by_id["sub/b.md"].title == "The Title"
    assert by_id["a.txt"].title == "a"


def test_jsonl_keeps_extra_fields_as_metadata_and_reports_bad_lines(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(
        json.dumps({"id": 7, "title": "T", "text": "body", "year": 2020, "tags": ["x"]})
        + "\n{not json\n"
        + json.dumps({"id": "e", "text": "  "})
        + "\n"
        + json.dumps(["a", "list"])
        + "\n"
    )
    docs, issues = collect(path)
    assert [(d.doc_id, d.title, d.metadata) for d in docs] == [("7", "T", {"year": 2020, "tags": ["x"]})]
    assert issues[0].startswith("docs.jsonl:2: malformed JSON")
    assert issues[1] == "docs.jsonl:3: empty document (no 'text' field or it is blank)"
    assert issues[2].startswith("docs.jsonl:4: a JSON line must be an object")


def test_beir_folder_reads_corpus_only(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "x", "metadata": {"k": 1}}) + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "q"}) + "\n")
    docs, issues = collect(tmp_path)
    assert issues == []
    assert [(d.doc_id, d.metadata) for d in docs] == [("d1", {"k": 1})]


def test_csv_with_column_mapping(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("key,headline,body,team\n1,H1,first body,red\n2,H2,,blue\n")
    docs, issues = collect(path, csv_columns=("key", "headline", "body"))
    assert [(d.doc_id, d.title, d.text, d.metadata) for d in docs] == [
        ("1", "H1", "first body", {"team": "red"})
    ]
    assert issues == ["t.csv:3: empty document (column 'body' is blank)"]


def test_csv_missing_text_column_names_the_columns_and_the_flag(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    docs, issues = collect(path)
    assert docs == []
    assert issues == ["t.csv:1: missing CSV column 'text' (columns: a, b); map yours with --csv-text/--csv-title/--csv-id"]


def test_binary_invalid_utf8_empty_and_unsupported_files_are_reported(tmp_path):
    (tmp_path / "bin.txt").write_bytes(b"abc\x00\x01\x02")
    (tmp_path / "latin.txt").write_bytes(b"line one\ncaf\xe9\n")
    (tmp_path / "empty.md").write_text("   \n")
    (tmp_path / "paper.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "ok.txt").write_text("fine")
    docs, issues = collect(tmp_path)
    assert [d.doc_id for d in docs] == ["ok.txt"]
    assert "bin.txt: binary file (it holds NUL bytes); only text is indexed" in issues
    assert "latin.txt:2: invalid UTF-8 at byte 12; re-save the file as UTF-8" in issues
    assert "empty.md: empty document" in issues
    assert "paper.pdf: unsupported file type '.pdf'; supported: .txt, .md, .jsonl, .csv" in issues


def test_duplicate_ids_keep_the_first(tmp_path):
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "x", "text": "one"}) + "\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"id": "x", "text": "two"}) + "\n")
    docs, issues = collect(tmp_path)
    assert [d.text for d in docs] == ["one"]
    assert issues == ["b.jsonl: duplicate document id 'x' (first seen in a.jsonl); kept the first"]


def test_missing_source_says_what_is_supported(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist. Pass a folder of .txt/.md files"):
        list(read_documents(tmp_path / "nope"))
