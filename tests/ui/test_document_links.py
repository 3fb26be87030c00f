"""The links from a hit to its document: which hits get which download, read only when pressed."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from indexer.sources.readers import read_documents
from search import Hit
from tests.indexer.sources.formats.test_mail import mbox_of, message
from ui.document_links import local_file, mbox_message_file, message_reader


def _hit(doc_id: str, source: str, path: Path | str) -> Hit:
    return Hit(doc_id=doc_id, title="t", text="x", score=0.5, source=source, path=str(path))


def test_an_mbox_message_downloads_alone_and_a_changed_folder_names_the_fix(tmp_path: Path) -> None:
    mbox_of(tmp_path / "Inbox", [message("First report."), message("Second report.")])
    docs = list(read_documents(tmp_path))
    second = _hit(docs[1].doc_id, docs[1].source, tmp_path / "Inbox")
    assert mbox_message_file(second) == (tmp_path / "Inbox", docs[1].line)
    assert local_file(second) is None  # the folder is not this hit's document
    read = message_reader(tmp_path / "Inbox", docs[1].line)
    assert read().rstrip().endswith(b"Second report.") and b"First report." not in read()
    (tmp_path / "Inbox").write_text("Notes now.\n")  # the folder changed since it was indexed
    with pytest.raises(FileNotFoundError, match=f"no message at line {docs[1].line}.*build the index again"):
        read()
    (tmp_path / "Inbox").unlink()
    assert mbox_message_file(second) is None


def test_a_record_or_a_whole_file_is_not_taken_for_an_mbox_message(tmp_path: Path) -> None:
    (tmp_path / "records.jsonl").write_text('{"text": "a record without an id"}\n')
    (tmp_path / "notes.txt").write_text("Plain notes.\n")
    assert mbox_message_file(_hit("records.jsonl#L1", "records.jsonl", tmp_path / "records.jsonl")) is None
    notes = _hit("notes.txt", "notes.txt", tmp_path / "notes.txt")
    assert mbox_message_file(notes) is None and local_file(notes) == tmp_path / "notes.txt"
    assert mbox_message_file(_hit("Inbox#L1", "Inbox", "")) is None  # added without a file
    # a JSON export saved without .json, its records without ids: named by their lines, as messages are
    (tmp_path / "export").write_text('[{"body": "The printer jams on every second page."},\n'
                                     ' {"body": "The VPN drops every hour since the update."}]\n')
    record = list(read_documents(tmp_path / "export"))[1]
    assert record.doc_id == "export#L2"
    assert mbox_message_file(_hit(record.doc_id, record.source, tmp_path / "export")) is None


def _page(folder: str, line: int) -> None:
    """Each kind of hit's links, as the search page draws them (AppTest runs this as a script)."""
    from search import Hit
    from ui.document_links import show_document_links

    for n, (doc_id, source) in enumerate([(f"Inbox#L{line}", "Inbox"), ("notes.txt", "notes.txt"),
                                          ("records.jsonl#L1", "records.jsonl")]):
        show_document_links(Hit(doc_id=doc_id, title="t", text="x", score=0.5, source=source,
                                path=f"{folder}/{source}"), str(n))


def test_the_page_offers_the_message_as_an_eml_the_file_whole_and_a_record_nothing(tmp_path: Path) -> None:
    mbox_of(tmp_path / "Inbox", [message("First report."), message("Second report.")])
    (tmp_path / "notes.txt").write_text("Plain notes.\n")
    (tmp_path / "records.jsonl").write_text('{"text": "a record without an id"}\n')
    line = list(read_documents(tmp_path / "Inbox"))[1].line
    at = AppTest.from_function(_page, args=(str(tmp_path), line), default_timeout=30).run()
    assert not at.exception
    assert [b.label for b in at.get("download_button")] == [f"Download the message (line {line} of Inbox)",
                                                            "Download notes.txt"]
