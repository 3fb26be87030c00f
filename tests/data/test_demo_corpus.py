from __future__ import annotations

import json

from data.demo_corpus import build_demo_corpus, module_document


def test_demo_corpus_holds_reference_topics_and_module_docs(tmp_path):
    path = build_demo_corpus(tmp_path / "demo.jsonl")
    docs = [json.loads(line) for line in path.read_text().splitlines()]
    ids = {d["id"] for d in docs}
    assert len(docs) > 150
    assert "topic:with" in ids and "module:json" in ids
    assert "builtin:open" in ids and "builtin:str" in ids and "builtin:True" not in ids
    str_doc = next(d for d in docs if d["id"] == "builtin:str")
    assert "str.split:" in str_doc["text"]
    assert all(d["text"].strip() and d["title"] for d in docs)
    assert len(ids) == len(docs), "ids are unique"
    assert not any(i.startswith("module:antigravity") for i in ids)


def test_module_document_reads_docstrings_without_importing():
    source = '"""Module summary."""\n\ndef public(x):\n    """Return the value of x plus one, always."""\n\ndef _private():\n    """Hidden helper function docstring here."""\n'
    doc = module_document("mymod", source)
    assert doc["title"] == "Module mymod"
    assert "Module summary." in doc["text"]
    assert "function mymod.public: Return the value" in doc["text"]
    assert "_private" not in doc["text"]
    assert module_document("broken", "def (") is None
