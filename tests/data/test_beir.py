from __future__ import annotations

import pytest

from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries


def test_reads_the_shared_scifact_counts(shared_data):
    folder = shared_data / "scifact"
    assert sum(1 for _ in iter_beir_corpus(folder)) == 5183
    assert len(load_beir_queries(folder)) == 1109
    test = load_beir_qrels(folder, "test")
    assert len(test) == 300 and sum(len(v) for v in test.values()) == 339


def test_malformed_corpus_line_is_skipped_with_file_and_line(tmp_path, caplog):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "1", "text": "a"}\n{oops\n')
    docs = list(iter_beir_corpus(tmp_path))
    assert [d["_id"] for d in docs] == ["1"]
    assert "corpus.jsonl:2: skipping malformed JSON line" in caplog.text


def test_missing_files_explain_the_layout(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds corpus.jsonl, queries.jsonl and qrels"):
        list(iter_beir_corpus(tmp_path))
