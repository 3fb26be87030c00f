"""A CSV's columns mapped to text, title and id: the header is renamed, the rows are kept, and the
indexer's own reader, with the columns every upload build uses, reads the file as mapped."""

from __future__ import annotations

import codecs
import gzip
from pathlib import Path

import pytest

from indexer import IndexConfig
from indexer.sources import csv_records
from indexer.sources.documents import InputIssue
from indexer.sources.readers import read_documents
from ui.csv_columns import (
    CsvMapping,
    apply_mapping,
    csv_columns,
    is_csv,
    mapping_problem,
    needs_mapping,
    record_reading,
    renamed_columns,
    suggest_mapping,
)

ARTICLES = (
    b'key,headline,body,lang\n'
    b'a1,Volcanoes,"Volcanoes erupt lava.\nAsh follows.",en\n'
    b'\n'
    b'a2,Bread,Knead the dough and bake it.,en\n'
)


def read_as_uploads(tmp_path: Path, name: str, data: bytes) -> tuple[list, list[InputIssue]]:
    """What a build of the uploads folder reads from the file: IndexConfig's default columns."""
    folder = tmp_path / "uploads"
    folder.mkdir(exist_ok=True)
    (folder / name).write_bytes(data)
    config = IndexConfig(source=folder, index_dir=tmp_path / "index")
    issues: list[InputIssue] = []
    docs = list(read_documents(folder, issues.append, (config.csv_id_column, config.csv_title_column,
                                                       config.csv_text_column)))
    return docs, issues


def test_a_mapped_csv_reads_as_mapped_with_the_default_columns(tmp_path: Path) -> None:
    docs, issues = read_as_uploads(tmp_path, "articles.csv", ARTICLES)
    assert [(d.doc_id, d.title, d.text) for d in docs] == [  # as uploaded: a record a row (csv_records)
        ("articles.csv#a1", "Volcanoes", "Volcanoes erupt lava.\nAsh follows."),
        ("articles.csv#a2", "Bread", "Knead the dough and bake it.")], issues
    mapped = apply_mapping(ARTICLES, CsvMapping(text="body", title="headline", id="key"))
    assert mapped.split(b"\n", 1) == [b"id,title,text,lang", ARTICLES.split(b"\n", 1)[1]], "rows untouched"
    docs, issues = read_as_uploads(tmp_path, "articles.csv", mapped)
    assert issues == []
    assert [(d.doc_id, d.title, d.text, d.metadata, d.line) for d in docs] == [
        ("a1", "Volcanoes", "Volcanoes erupt lava.\nAsh follows.", {"lang": "en"}, 2),
        ("a2", "Bread", "Knead the dough and bake it.", {"lang": "en"}, 5),  # the user's own line
    ]


def test_without_title_or_id_rows_are_named_by_their_line_and_defaults_not_chosen_become_metadata(
    tmp_path: Path,
) -> None:
    data = b"id,title,notes\r\n7,Row seven,First note\r\n8,Row eight,Second note\r\n"
    mapping = CsvMapping(text="notes")  # the file's 'id' and 'title' are not wanted
    assert renamed_columns(["id", "title", "notes"], mapping) == ["original_id", "original_title", "text"]
    mapped = apply_mapping(data, mapping)
    assert mapped.startswith(b"original_id,original_title,text\r\n7,")
    docs, issues = read_as_uploads(tmp_path, "notes.csv", mapped)
    assert issues == []
    assert [(d.doc_id, d.title, d.metadata) for d in docs] == [
        ("notes.csv#L2", "", {"original_id": "7", "original_title": "Row seven"}),
        ("notes.csv#L3", "", {"original_id": "8", "original_title": "Row eight"}),
    ]
    assert renamed_columns(["text", "original_text", "t"], CsvMapping(text="t")) == [
        "original_text_2", "original_text", "text"]


def test_gzip_utf16_and_quoted_names_survive_the_rename(tmp_path: Path) -> None:
    data = codecs.BOM_UTF16_LE + 'Überschrift,"Inhalt, lang"\nKäse,Käse reift im Keller.\n'.encode("utf-16-le")
    assert csv_columns(data) == ["Überschrift", "Inhalt, lang"]
    mapped = apply_mapping(gzip.compress(data), CsvMapping(text="Inhalt, lang", title="Überschrift"))
    assert gzip.decompress(mapped).decode("utf-8") == "title,text\nKäse,Käse reift im Keller.\n"
    docs, issues = read_as_uploads(tmp_path, "käse.csv.gz", mapped)
    assert issues == [] and [(d.title, d.text) for d in docs] == [("Käse", "Käse reift im Keller.")]
    assert csv_columns(b"a,\"b\nc\",d\n1,2,3\n") == ["a", "b\nc", "d"], "a quoted newline in the header"
    assert apply_mapping(b"a,\"b\nc\",d\n1,x,3\n", CsvMapping(text="d")) == b"a,\"b\nc\",text\n1,x,3\n"


def test_needs_mapping_only_without_a_text_column() -> None:
    assert needs_mapping(["name", "bio"]) and needs_mapping(["Text"])
    assert not needs_mapping(["text"]) and not needs_mapping(["id", "text", "title"])
    assert is_csv("people.csv") and is_csv("People.CSV.gz") and not is_csv("notes.txt")
    assert csv_columns(b"\x89PNG\r\n\x1a\n\x00") is None and csv_columns(b"") is None


def test_suggest_mapping_takes_the_longest_column_as_text_and_named_title_and_id() -> None:
    data = b"ID,Name,Bio,Age\n1,Ada,Wrote the first program for an engine.,36\n2,Alan,Broke codes.,41\n"
    assert suggest_mapping(data, csv_columns(data) or []) == CsvMapping(text="Bio", title="Name", id="ID")
    plain = b"a,b\nshort,a much longer value\n"
    assert suggest_mapping(plain, ["a", "b"]) == CsvMapping(text="b")
    with pytest.raises(ValueError, match="names no columns; put the column names in its first row"):
        suggest_mapping(b",\n1,2\n", ["", ""])


def test_a_mapping_that_does_not_fit_says_what_the_file_needs() -> None:
    data = b"name,bio,empty\nAda,wrote programs,\nAlan,, \n"
    assert mapping_problem(data, CsvMapping(text="bio", title="name")) is None
    assert mapping_problem(data, CsvMapping(text="body"), "people.csv") == (
        "people.csv has no column 'body' for the text (its columns: 'name', 'bio', 'empty'); "
        "choose one of them."
    )
    with pytest.raises(ValueError, match="has no column 'nom' for the title"):
        apply_mapping(data, CsvMapping(text="bio", title="nom"), "people.csv")
    with pytest.raises(ValueError, match=r"Column 'empty' of people\.csv is blank in every row, so "
                       "there is no text to index; choose the column that holds each document's text"):
        apply_mapping(data, CsvMapping(text="empty"), "people.csv")
    with pytest.raises(ValueError, match="Column 'b' of The CSV is blank in every row"):
        apply_mapping(b"a,b", CsvMapping(text="b"))  # a header and no rows
    with pytest.raises(ValueError, match="cannot be read as CSV; save it as UTF-8 text"):
        apply_mapping(b"body\n\xc3\x28 not UTF-8\n", CsvMapping(text="body"))
    with pytest.raises(ValueError, match="One column cannot be two things .* choose a different column"):
        CsvMapping(text="bio", title="bio")


def test_a_semicolon_or_tab_separated_upload_is_split_as_the_indexer_splits_it(tmp_path: Path) -> None:
    """Excel writes semicolons where the decimal mark is a comma; the indexer tells the separator by
    the header (readers.csv_delimiter), and so do the upload's columns, its reading and its rename."""
    data = b"Betreff;Nummer;Beschreibung\nDrucker klemmt;7;Der Drucker im dritten Stock klemmt bei jeder zweiten Seite.\n"
    assert csv_columns(data) == ["Betreff", "Nummer", "Beschreibung"]
    assert csv_columns(data.replace(b";", b"\t")) == ["Betreff", "Nummer", "Beschreibung"]
    assert record_reading(data) == csv_records.Reading(text=("Beschreibung",), title=None, id=None)
    mapped = apply_mapping(data, CsvMapping(text="Beschreibung", title="Betreff", id="Nummer"))
    assert mapped.split(b"\n", 1)[0] == b"title;id;text"
    docs, issues = read_as_uploads(tmp_path, "tickets.csv", mapped)
    assert issues == [] and [(d.doc_id, d.title) for d in docs] == [("7", "Drucker klemmt")]
