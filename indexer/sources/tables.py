"""A table of rows under a header (a CSV file, a workbook's sheet) as documents.

A table is read by its text column (`text`, or the one `--csv-text` names): a document a row, its
id from the `id` column (`--csv-id`), its title from `title` (`--csv-title`), its other cells
as metadata. A table without the default text column is read a record a row when its rows hold
prose (`csv_records`: a ticket export); otherwise it is refused, and the caller words why
(`read_table` returns the reason).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from indexer.sources import csv_records, json_records
from indexer.sources.documents import INVISIBLE, Document, InputIssue, has_visible_text
from indexer.sources.records import record_documents, record_name

IssueHandler = Callable[[InputIssue], None]

# The column a table's text is read from unless another is named (`--csv-text`); a table without
# it may be read a record a row (`csv_records`).
CSV_TEXT_COLUMN = "text"


@dataclass(frozen=True)
class Table:
    """A header's column names and its rows, read again on each call of `rows` (reading a record
    a row takes two passes, neither holding more than a row): each row as (the line or row number
    where it starts, its cells), its issues reported to the handler given. `sheet` names a
    workbook's sheet (None: a CSV file), which names its rows' documents (`records.record_name`)."""

    columns: list[str]
    rows: Callable[[IssueHandler], Iterator[tuple[int, list[str]]]]
    sheet: str | None = None


@dataclass(frozen=True)
class TableReading:
    """How a build reads a table: by its text column (both None), a record a row (`records`: the
    columns its text, title and id come from), or not at all (`refused`: why its rows are not
    records; "" when the text column was named, since nothing is guessed then)."""

    records: csv_records.Reading | None = None
    refused: str | None = None


def table_reading(table: Table, id_column: str = "id", title_column: str = "title",
                  text_column: str = CSV_TEXT_COLUMN, on_issue: IssueHandler | None = None) -> TableReading:
    """How `table` is read (what `read_table` does, and what the app tells a person before a build);
    a table read a record a row is parsed once here, its rows' issues given to `on_issue`."""
    if text_column in table.columns:
        return TableReading()
    if text_column != CSV_TEXT_COLUMN:
        return TableReading(refused="")
    try:
        return TableReading(records=csv_records.reading(_rows(table, on_issue or (lambda issue: None)),
                                                        table.columns, id_column, title_column))
    except json_records.NotRecords as err:
        return TableReading(refused=str(err))


def read_table(table: Table, label: str, on_issue: IssueHandler, id_column: str = "id",
               title_column: str = "title", text_column: str = CSV_TEXT_COLUMN) -> Iterator[Document] | str:
    """The documents of `table`'s rows from the file `label`, read as `table_reading` says, or why
    they are not read, to end the refusal's message ("" when the text column was named)."""
    held: list[InputIssue] = []
    how = table_reading(table, id_column, title_column, text_column, held.append)
    if how.refused is not None:
        return how.refused and f"; nor is it read a record a row, as a ticket export is: {how.refused}"
    if how.records is None:
        return _by_text_column(table, label, on_issue, id_column, title_column, text_column)
    return _records(table, label, on_issue, how.records, title_column, held)


def _records(table: Table, label: str, on_issue: IssueHandler, found: csv_records.Reading,
             title_column: str, held: list[InputIssue]) -> Iterator[Document]:
    """The second pass of a table read a record a row: the first pass's issues (`held`, kept until
    the rows proved records) are reported, and this pass's same issues dropped."""
    for issue in held:
        on_issue(issue)
    records = csv_records.read_records(_rows(table, lambda issue: None), table.columns, found, title_column)
    yield from record_documents(label, records, on_issue, table.sheet)


def _rows(table: Table, report: IssueHandler) -> Iterator[csv_records.Row]:
    return (csv_records.Row(line, values) for line, values in table.rows(report))


def _by_text_column(table: Table, label: str, on_issue: IssueHandler, id_column: str, title_column: str,
                    text_column: str) -> Iterator[Document]:
    columns = table.columns
    at = columns.index(text_column)
    for row_no, values in table.rows(on_issue):
        if at >= len(values):
            on_issue(InputIssue(label, row_no, f"row has {len(values)} field{'s' if len(values) != 1 else ''} "
                                f"but the header has {len(columns)}: it ends before column '{text_column}'"))
            continue
        row: dict[str, str | None] = dict.fromkeys(columns)
        row.update(zip(columns, values, strict=False))
        body = row.get(text_column) or ""
        raw_id = row.get(id_column)
        doc_id = raw_id if raw_id else record_name(label, None, row_no, table.sheet)
        if not has_visible_text(body):
            blank = f"empty document (column '{text_column}' is blank)" if not body.strip() else INVISIBLE
            on_issue(InputIssue(label, row_no, blank, doc_id=doc_id))
            continue
        title = row.get(title_column) or ""
        metadata = {k: v for k, v in row.items() if k not in (id_column, title_column, text_column) and k}
        yield Document(doc_id=doc_id, title=title, text=body, source=label, metadata=metadata, line=row_no)
