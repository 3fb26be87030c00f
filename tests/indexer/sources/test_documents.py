from __future__ import annotations

import math

import pytest

from indexer.sources.documents import MAX_ID_CHARS, Document, validate_document


def doc(**kwargs) -> Document:
    return Document(**{"doc_id": "d", "title": "t", "text": "body", "source": "s.jsonl", **kwargs})


def test_line_locates_the_record_but_is_not_part_of_the_content_hash():
    first, moved = doc(line=3), doc(line=40)
    assert first.content_hash() == moved.content_hash() == doc().content_hash()
    assert (first.location, doc().location) == ("s.jsonl:3", "s.jsonl")
    assert doc(text="other", line=3).content_hash() != first.content_hash()


def test_a_plain_document_is_valid():
    assert validate_document(doc(metadata={"year": 2020, "score": 0.5, "tags": ["a"], "none": None})) is None
    assert validate_document(doc(doc_id="x" * MAX_ID_CHARS)) is None


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"doc_id": "x" * (MAX_ID_CHARS + 1)}, r"^id is 513 characters, over the limit of 512; use a shorter id$"),
        ({"text": "a\x00"}, r"^text holds a NUL character \(\\x00\), which PostgreSQL cannot store"),
        ({"metadata": {"a": {"b": [1, "\x00"]}}}, r"^metadata\.a\.b\[1\] holds a NUL character"),
        ({"metadata": {"a": math.nan}}, r"^metadata\.a is nan, which JSON \(and so PostgreSQL\) cannot store"),
        ({"metadata": {"a": [{"b": math.inf}]}}, r"^metadata\.a\[0\]\.b is inf"),
        ({"title": "\udc80"}, r"^title holds a lone surrogate \(U\+DC80\), which is not valid Unicode text"),
        ({"text": "x" * 11}, r"^document is 11 characters, over the limit of 10 characters; split the file, or raise --max-document-chars$"),
    ],
)
def test_problems_postgres_or_the_size_limit_would_refuse(kwargs, problem):
    with pytest.raises(ValueError, match=problem):
        found = validate_document(doc(**kwargs), max_document_chars=10)
        raise ValueError(found)


def test_deep_metadata_does_not_overflow_the_stack():
    nested: object = "\x00"
    for _ in range(1000):
        nested = [nested]
    assert validate_document(doc(metadata={"deep": nested})).startswith("metadata.deep[0][0]")


def test_the_content_hash_is_kept_and_a_changed_copy_hashes_its_own_content():
    import dataclasses
    import pickle

    doc = Document("a", "Title", "text", "a.md", metadata={"k": 1})
    first = doc.content_hash()
    assert doc.content_hash() == first and len(first) == 64
    changed = dataclasses.replace(doc, text="other text")
    assert changed.content_hash() != first
    assert dataclasses.replace(changed, text="text").content_hash() == first
    assert pickle.loads(pickle.dumps(doc)).content_hash() == first
    assert doc == Document("a", "Title", "text", "a.md", metadata={"k": 1})  # the kept digest is no field
    other = Document("a", "Title", "text", "a.md", metadata={"k": 1})
    other.keep_content_digest(bytes.fromhex(first))  # as a worker process computed it
    assert other.content_hash() == first
    with pytest.raises(ValueError, match="32 bytes"):
        other.keep_content_digest(b"short")
