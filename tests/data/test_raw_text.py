from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from data.paths import shared_data_dir
from data.raw_text import detect_format, iter_documents, split_sentences

CORPUS = shared_data_dir() / "corpus"


def test_txt_documents_split_on_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("First doc line one.\nLine two.\n\n\nSecond doc.\n")
    documents = list(iter_documents(path))
    assert [d.text for d in documents] == ["First doc line one.\nLine two.", "Second doc."]
    assert detect_format(path) == "txt"


def test_jsonl_skips_malformed_lines_with_file_and_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": 1, "title": "T", "text": "Body."}) + "\n{not json\n" + json.dumps({"x": 1}) + "\n")
    with caplog.at_level(logging.WARNING):
        documents = list(iter_documents(path))
    assert [(d.id, d.title, d.text) for d in documents] == [("1", "T", "Body.")]
    assert f"{path}:2" in caplog.text and f"{path}:3" in caplog.text


def test_wikiextractor_drops_repeated_title_and_reads_gzip(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "wiki.txt.gz"
    text = (
        '<doc id="7" url="?curid=7" title="Alpha">\nAlpha\n\nAlpha is a letter. It comes first.\n</doc>\n'
        '<doc id="8" url="?curid=8" title="Beta">\nBeta\n\nNever closed.\n'
    )
    with gzip.open(path, "wt") as handle:
        handle.write(text)
    assert detect_format(path) == "wikiextractor"
    with caplog.at_level(logging.WARNING):
        documents = list(iter_documents(path))
    assert [(d.id, d.title, d.text) for d in documents] == [("7", "Alpha", "Alpha is a letter. It comes first.")]
    assert "never closed" in caplog.text and f"{path}:" in caplog.text


def test_missing_file_and_unknown_format_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        list(iter_documents(tmp_path / "nope.txt"))
    path = tmp_path / "a.txt"
    path.write_text("x")
    with pytest.raises(ValueError, match="Unknown corpus format 'xml'. Valid: txt, jsonl, wikiextractor"):
        list(iter_documents(path, fmt="xml"))


def test_split_sentences() -> None:
    assert split_sentences("Dr. Who is here. He left! Did he?\nNew para") == [
        "Dr. Who is here.", "He left!", "Did he?", "New para"]


def test_readers_stream_lazily(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("a\n\nb\n")
    iterator = iter_documents(path)
    assert next(iterator).text == "a"


@pytest.mark.integration
@pytest.mark.skipif(not (CORPUS / "enwiki_slice.txt.gz").is_file(), reason="shared corpus not found")
def test_shared_corpora_parse() -> None:
    import itertools

    wiki = list(itertools.islice(iter_documents(CORPUS / "enwiki_slice.txt.gz"), 200))
    assert len(wiki) == 200 and all(d.title and not d.text.startswith(d.title + "\n") for d in wiki if d.text)
    news = list(itertools.islice(iter_documents(CORPUS / "enwikinews.jsonl.gz"), 200))
    assert len(news) == 200 and sum(bool(d.text) for d in news) > 50


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_jsonl_splits_lines_on_newline_only(tmp_path: Path, suffix: str) -> None:
    # U+2028/U+0085 may stand raw in a JSON string, and a lone "\r" is JSON whitespace.
    data = '{"id": "a", "text": "x\u2028y\u0085z"}\r\n{"id": "b",\r"text": "w"}\n'.encode()
    path = tmp_path / f"c{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    assert [(d.id, d.text) for d in iter_documents(path)] == [("a", "x\u2028y\u0085z"), ("b", "w")]
