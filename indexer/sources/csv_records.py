"""CSV exports of records read without a `text` column: each row a record, as a JSON export's is.

A CSV whose header names the text column (`text`, or the one `--csv-text` names) is read by it
(`readers.read_csv_file`). A ticket system's CSV export names its columns otherwise: Jira's has
`Summary`, `Issue key`, `Description` and one `Comment` column per comment; Zendesk's and a
spreadsheet of tickets have `Subject` and `Description`. Before, such a file was refused until
its text column was named, and one column could hold only part of a ticket's text. When the
header has no `text` column, each row is read as a record of a JSON export is
(`json_records.record_of`):

- **text**: the row's cells of a column named for text (`description`, `body`, `comment`, ...)
  or that read as prose (four words or more, or several lines), in column order, each under its
  column's name as a heading (`Description`, `Comment[2]`), which a hit shows as its location;
- **title**: the `title` column (or the one `--csv-title` names), else the first column named
  title, subject, summary, headline or name;
- **id**: `FILE#<value>` of the `id` column (or `--csv-id`'s), else of the first column named
  for an id (`key`, `number`, `id`, `uuid`, or a name ending in ` key`, ` id` or `_id`: Jira's
  `Issue key`, Zendesk's `Ticket ID`) whose cells are filled and distinct in every row, else
  `FILE#L<line>`, as a JSON export's records are named (the file in the id keeps two exports
  that number their rows 1, 2, 3 apart);
- **metadata**: the other cells by column name; a column the header repeats (Jira's `Comment`,
  `Labels`, `Watchers`) gives one list of its filled cells; empty cells are left out.

A table fewer than half of whose rows hold prose (a list of codes, a data table of names and
numbers, a registry with an occasional note) is not records: the reader refuses it as before,
saying which column to name as the text.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from indexer.sources import json_records

# The share of rows that must hold prose for a CSV to read as records. A ticket export's rows mostly
# have a description; a table with an occasional note (TeX Live's l3prefixes.csv: 8 of 276 rows)
# would otherwise index those few rows and name the rest as skipped.
MIN_PROSE_SHARE = 0.5
# Endings of a column name that names an id (lower case): `Issue key`, `Ticket ID`, `issue_id`.
ID_SUFFIXES = (" key", " id", "_id", "_key", "-id")


@dataclass(frozen=True)
class Row:
    """One CSV row: the line where it starts and its cells, in the header's order."""

    line: int
    values: list[str]


@dataclass(frozen=True)
class Reading:
    """How a CSV's rows read as records: the columns that give text (in some row), the column that
    titles them (the first title-named column; a row without it takes the next), and the id column
    (None: rows go by their line)."""

    text: tuple[str, ...]
    title: str | None
    id: str | None


def read_records(rows: Iterable[Row], columns: list[str], id_column: str = "id",
                 title_column: str = "title") -> Iterator[json_records.Record]:
    """Each row of a CSV without a text column as a record (see the module's docstring), in file
    order. Raises `json_records.NotRecords`, before any record, when fewer than half of the rows
    hold prose (`MIN_PROSE_SHARE`)."""
    yield from _read(rows, columns, id_column, title_column)[1]


def reading(rows: Iterable[Row], columns: list[str], id_column: str = "id",
            title_column: str = "title") -> Reading:
    """Which columns `read_records` takes as text, title and id, to tell a person before a build.
    Raises `json_records.NotRecords` as `read_records` does."""
    id_field, records = _read(rows, columns, id_column, title_column)
    text = dict.fromkeys(re.sub(r"\[\d+\]$", "", heading.title)
                         for record in records for heading in record.outline.headings)
    lowered = {name.strip().lower(): name for name in reversed(columns)}  # the first of a name
    title = next((lowered[name] for name in _title_fields(title_column) if name in lowered), None)
    return Reading(tuple(text), title, id_field)


def _read(rows: Iterable[Row], columns: list[str], id_column: str,
          title_column: str) -> tuple[str | None, list[json_records.Record]]:
    repeated = {name for name, count in Counter(columns).items() if count > 1}
    cells = [(row.line, _cells(columns, row.values, repeated)) for row in rows]
    id_field = _id_column(cells, columns, id_column, repeated)
    records = [json_records.record_of(item, line, id_fields=(id_field,) if id_field else (),
                                      title_fields=_title_fields(title_column)) for line, item in cells]
    with_prose = sum(1 for record in records if record.outline.headings)
    if not with_prose or with_prose < MIN_PROSE_SHARE * len(records):
        raise json_records.NotRecords(f"{with_prose} of {len(records)} rows hold prose")
    return id_field, records


def _title_fields(title_column: str) -> tuple[str, ...]:
    return (title_column.strip().lower(), *json_records.TITLE_FIELDS)


def _cells(columns: list[str], values: list[str], repeated: set[str]) -> dict[str, Any]:
    """A row as a record's fields: filled cells by column name (a blank name is no field), a
    repeated column's filled cells as one list."""
    item: dict[str, Any] = {}
    for name, value in zip(columns, values, strict=False):
        if not name.strip() or not value.strip():
            continue
        if name in repeated:
            item.setdefault(name, []).append(value)
        else:
            item[name] = value
    return item


def _id_column(cells: list[tuple[int, dict[str, Any]]], columns: list[str], id_column: str,
               repeated: set[str]) -> str | None:
    """The column that names each row: `id_column` when the header has it, else the first column
    named for an id whose cells are filled and distinct in every row; None: rows go by their line."""
    if id_column in columns:
        return id_column
    for name in dict.fromkeys(columns):
        lowered = name.strip().lower()
        if name in repeated or not (lowered in json_records.ID_FIELDS or lowered.endswith(ID_SUFFIXES)):
            continue
        values = [item.get(name) for _, item in cells]
        if all(values) and len(set(values)) == len(values):
            return name
    return None
