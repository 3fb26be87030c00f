"""`plan`: the first step of a build, pure, tested without a database."""

from __future__ import annotations

import pytest

from indexer.sources.documents import Document
from indexer.store.plan import Plan, StoredDocument, plan

ORIGIN = "/data/notes"


def doc(doc_id: str, text: str = "text", source: str | None = None, line: int | None = None) -> Document:
    return Document(doc_id=doc_id, title="", text=text, source=source or doc_id, line=line)


def stored(document: Document, row_id: int, origin: str = ORIGIN) -> StoredDocument:
    return StoredDocument(row_id, document.content_hash(), origin, document.source)


def test_empty_index_adds_everything():
    docs = [doc("a"), doc("b")]
    result = plan({}, docs, ORIGIN)
    assert [d.doc_id for d in result.add] == ["a", "b"]
    assert (result.change, result.remove, result.unchanged, result.moved) == ([], [], [], [])
    assert result.to_embed == docs and not result.is_empty


def test_same_content_is_unchanged_and_the_plan_is_empty():
    docs = [doc("a"), doc("b")]
    existing = {d.doc_id: stored(d, i) for i, d in enumerate(docs, start=1)}
    result = plan(existing, docs, ORIGIN)
    assert result.unchanged == ["a", "b"]
    assert result.is_empty and result.to_embed == []


def test_changed_content_is_re_embedded():
    existing = {"a": stored(doc("a", "old text"), 1)}
    result = plan(existing, [doc("a", "new text")], ORIGIN)
    assert [d.text for d in result.change] == ["new text"]
    assert result.add == [] and result.unchanged == [] and result.moved == []


def test_documents_the_source_lost_are_removed_unless_pruning_is_off():
    existing = {"a": stored(doc("a"), 1), "gone": stored(doc("gone"), 2)}
    assert plan(existing, [doc("a")], ORIGIN).remove == ["gone"]
    assert plan(existing, [doc("a")], ORIGIN, prune=False).remove == []


def test_a_build_never_removes_documents_of_another_source():
    """The app's uploads (another origin) survive a build of the original source."""
    existing = {"a": stored(doc("a"), 1), "upload.txt": stored(doc("upload.txt"), 2, origin="/idx/uploads")}
    assert plan(existing, [doc("a")], ORIGIN).remove == []


def test_mixed_add_change_remove_unchanged():
    a, b, c = doc("a"), doc("b", "old"), doc("c")
    existing = {d.doc_id: stored(d, i) for i, d in enumerate([a, b, c], start=1)}
    result = plan(existing, [a, doc("b", "new"), doc("d")], ORIGIN)
    assert [d.doc_id for d in result.add] == ["d"]
    assert [d.doc_id for d in result.change] == ["b"]
    assert result.remove == ["c"]
    assert result.unchanged == ["a"]
    assert [d.doc_id for d in result.to_embed] == ["d", "b"], "added documents come first"


def test_an_id_stored_from_another_file_is_replaced_with_a_warning_naming_both_places():
    existing = {"x": stored(doc("x", "first", source="one.jsonl"), 1)}
    result = plan(existing, [doc("x", "second", source="two.jsonl", line=7)], ORIGIN)
    assert [d.text for d in result.change] == ["second"]
    assert len(result.moved) == 1
    assert str(result.moved[0]) == (
        "document id 'x' was indexed from one.jsonl (/data/notes) and is now replaced by the one "
        "in two.jsonl:7; give one of them another id if both should stay"
    )


def test_same_content_from_another_source_is_still_replaced_and_warned():
    original = doc("x", "same", source="notes.txt")
    existing = {"x": stored(original, 1, origin="/idx/uploads")}
    result = plan(existing, [original], ORIGIN)
    assert [d.doc_id for d in result.change] == ["x"], "the row moves to this source"
    assert "indexed from notes.txt (/idx/uploads)" in str(result.moved[0])


def test_duplicate_ids_in_one_build_are_a_programming_error():
    with pytest.raises(ValueError, match="appears twice in one build"):
        plan({}, [doc("a"), doc("a")], ORIGIN)


def test_plan_defaults_are_empty():
    assert Plan().is_empty and Plan().to_embed == []


def test_what_is_left_after_a_commit_is_what_planning_again_gives():
    """`after_commit`: a build plans a window once and takes chunk after chunk of it; what is left
    after each commit must be the plan made again against what that commit stored."""
    from indexer.build.loop import next_chunk
    from indexer.store.plan import after_commit

    old = [doc("keep"), doc("edit", "old"), doc("gone"), doc("moved", source="old/place")]
    existing = {d.doc_id: stored(d, i) for i, d in enumerate(old, start=1)}
    docs = ([doc("keep"), doc("edit", "new"), doc("moved", source="new/place")]
            + [doc(f"new{i}", "words " * i) for i in range(7)])
    changes = plan(existing, docs, ORIGIN)
    assert changes.remove == ["gone"] and changes.moved and changes.change
    while not changes.is_empty:
        chunk = next_chunk(changes, lambda d: [d.doc_id] * 2, 5)
        for key in chunk.remove:  # the commit, as the index stores it
            del existing[key]
        for i, d in enumerate(chunk.to_embed, start=len(existing) + 10):
            existing[d.doc_id] = stored(d, i)
        left, again = after_commit(changes, chunk), plan(existing, docs, ORIGIN)
        assert (left.add, left.change, left.remove, left.moved, left.kept) == \
            (again.add, again.change, again.remove, again.moved, again.kept)
        assert sorted(left.unchanged) == sorted(again.unchanged)
        changes = left
    assert sorted(changes.unchanged) == sorted(d.doc_id for d in docs)
