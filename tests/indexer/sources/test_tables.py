"""A table of rows under a header, whatever holds it (a CSV, a sheet), read by its text column,
else a record a row, else refused with the reason the caller words."""

from __future__ import annotations

from indexer.sources.tables import Table, read_table

PROSE = "The nightly backup stopped writing to the second disk after the kernel update."


def table(columns: list[str], rows: list[list[str]], sheet: str | None = None) -> Table:
    return Table(columns, lambda report: iter(enumerate(rows, start=2)), sheet=sheet)


def test_a_text_column_gives_a_document_a_row() -> None:
    issues: list = []
    read = read_table(table(["id", "title", "text", "team"], [["b1", "Backup", PROSE, "ops"], ["", "", " ", ""]]),
                      "t.csv", issues.append)
    assert not isinstance(read, str)
    docs = list(read)
    assert [(d.doc_id, d.title, d.text, d.metadata, d.line) for d in docs] == [
        ("b1", "Backup", PROSE, {"team": "ops"}, 2)]
    assert [(str(i), i.doc_id) for i in issues] == [("t.csv:3: empty document (column 'text' is blank)", "t.csv#L3")]


def test_without_a_text_column_rows_of_prose_are_records_named_by_their_sheet() -> None:
    read = read_table(table(["Ticket ID", "Subject", "Description"], [["7", "Backup", PROSE]], sheet="Ops"),
                      "t.xlsx", lambda issue: None)
    assert not isinstance(read, str)
    assert [(d.doc_id, d.title) for d in read] == [("t.xlsx#Ops!7", "Backup")]


def test_a_table_that_is_neither_says_why_and_a_named_column_is_never_guessed() -> None:
    codes = table(["code", "points"], [["S", "1"], ["M", "3"]])
    assert read_table(codes, "c.csv", lambda issue: None) == (
        "; nor is it read a record a row, as a ticket export is: 0 of its 2 rows hold prose (a description, "
        "a comment), under half")
    prose = table(["Subject", "Description"], [["Backup", PROSE]])
    assert read_table(prose, "p.csv", lambda issue: None, text_column="Body") == ""
