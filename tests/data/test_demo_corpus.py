from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from data.demo_corpus import build_demo_corpus, module_document, module_source_path


@pytest.fixture(scope="module")
def demo_docs(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    path = build_demo_corpus(tmp_path_factory.mktemp("demo") / "demo.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_demo_corpus_holds_reference_topics_and_module_docs(demo_docs):
    docs = demo_docs
    ids = {d["id"] for d in docs}
    assert len(docs) > 150
    assert "topic:with" in ids and "module:json" in ids
    assert "builtin:open" in ids and "builtin:str" in ids and "builtin:True" not in ids
    str_doc = next(d for d in docs if d["id"] == "builtin:str")
    assert "str.split:" in str_doc["text"]
    assert all(d["text"].strip() and d["title"] for d in docs)
    assert len(ids) == len(docs), "ids are unique"
    assert not any(i.startswith("module:antigravity") for i in ids)


def test_frozen_modules_are_read_from_their_source_files(demo_docs):
    """Python 3.11 freezes os, io, posixpath, abc, codecs, stat and site; their .py files still ship."""
    ids = {d["id"] for d in demo_docs}
    for name in ("os", "io", "posixpath", "abc", "codecs", "stat", "site"):
        assert module_source_path(name) is not None and module_source_path(name).suffix == ".py"
        assert f"module:{name}" in ids
    titles = {d["id"]: d["title"] for d in demo_docs}
    assert titles["module:posixpath"] == "Module os.path (posixpath)"
    assert module_source_path("sys") is None  # compiled in: no source, no document


def test_the_pages_searched_first_are_written_first(demo_docs):
    """The background build commits in file order: its first minute must cover open(), os.path, io."""
    order = [d["id"] for d in demo_docs]
    first = order[: len(order) // 3]
    for wanted in ("builtin:open", "builtin:str", "module:os", "module:posixpath", "module:io",
                   "module:json", "module:re"):
        assert wanted in first, wanted
    assert order.index("module:posixpath") < order.index("module:zipfile") < order.index("topic:with")


def test_module_document_reads_docstrings_without_importing():
    source = '"""Module summary."""\n\ndef public(x):\n    """Return the value of x plus one, always."""\n\ndef _private():\n    """Hidden helper function docstring here."""\n'
    doc = module_document("mymod", source)
    assert doc["title"] == "Module mymod"
    assert "Module summary." in doc["text"]
    assert "function mymod.public: Return the value" in doc["text"]
    assert "_private" not in doc["text"]
    assert module_document("broken", "def (") is None


OBVIOUS_QUERIES = {
    "os.path.join": "module:posixpath",
    "join path components": "module:posixpath",
    "abstract base class": "module:abc",
    "encode text to bytes with a codec": "module:codecs",
    "file permissions mode bits stat": "module:stat",
    "site-packages directory": "module:site",
    "open a file for appending": "builtin:open",
}


@pytest.mark.integration
def test_obvious_queries_find_their_module_in_the_top_3(demo_docs):
    """BM25 over the demo corpus cut into passages exactly as the indexer cuts them.

    BM25 alone, because it needs no embedding: the build's chunking and passage text,
    the searcher's lexical store. Dense adds to these, it never takes them away in hybrid.
    """
    from indexer.build.config import IndexConfig
    from indexer.build.pipeline import chunking_for
    from indexer.embedding import load_bi_encoder
    from indexer.sources.chunking import short_tail_tokens, split_into_passages
    from indexer.sources.documents import Document
    from indexer.store.bm25_store import TITLE_REPEATS, BM25Store, bm25_document

    model = load_bi_encoder()
    docs = [Document(doc_id=d["id"], title=d["title"], text=d["text"], source="demo") for d in demo_docs]
    config = IndexConfig(source=Path("."), index_dir=Path("."))
    chunking = chunking_for(config, model, None)
    spans = [split_into_passages(doc.text, model.tokenizer, chunking.passage_tokens, chunking.overlap_tokens,
                                 min_tail_tokens=short_tail_tokens(chunking.passage_tokens)) for doc in docs]
    owners, texts = [], []
    for doc, doc_spans in zip(docs, spans, strict=True):
        for span in doc_spans:
            owners.append(doc.doc_id)
            texts.append(bm25_document(doc.title, doc.text[span.start_char : span.end_char]))
    bm25 = BM25Store.build(np.arange(len(texts)), texts, title_repeats=TITLE_REPEATS)
    for query, expected in OBVIOUS_QUERIES.items():
        _, passage_ids = bm25.search(query, 100)
        ranked = list(dict.fromkeys(owners[i] for i in passage_ids))
        assert expected in ranked[:3], f"{query!r}: {ranked[:5]}"


def test_the_tutorial_and_howtos_join_as_one_document_per_section(tmp_path):
    from data.demo_corpus import iter_guide_documents

    (tmp_path / "tutorial").mkdir()
    (tmp_path / "howto").mkdir()
    body = "<p>" + "Sorted returns a new list ordered by the key function you give it. " * 3 + "</p>"
    (tmp_path / "howto" / "sorting.html").write_text(
        "<html><head><title>Sorting</title></head><body><nav>Previous topic</nav>"
        f"<div role='main'><h1>Sorting HOW TO¶</h1>{body}<h2>Key Functions¶</h2>{body}"
        f"<h3>Detail</h3>{body}</div></body></html>", encoding="utf-8")
    (tmp_path / "tutorial" / "index.html").write_text("<html><body><h1>Contents</h1></body></html>")
    (tmp_path / "tutorial" / "intro.html").write_text(
        f"<html><body><main><h1>1. Introduction</h1><h2>1.1. Numbers</h2>{body}</main></body></html>")
    docs = list(iter_guide_documents(tmp_path))
    assert [(d["id"], d["title"]) for d in docs] == [
        ("tutorial:intro:0", "Tutorial: 1. Introduction › 1.1. Numbers"),
        ("howto:sorting:0", "HOWTO: Sorting HOW TO"),
        ("howto:sorting:1", "HOWTO: Sorting HOW TO › Key Functions"),
    ]
    assert "Detail" in docs[2]["text"] and "Previous topic" not in docs[1]["text"]
    assert list(iter_guide_documents(None)) == []
