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
numbers, a registry with an occasional note), or whose first row holds data rather than the
names of columns (a number, a sentence: STS Benchmark's pairs have no header), is not records:
the reader refuses it as before, saying why and which column to name as the text.
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
# A header cell that is a number, or a sentence (prose ending as one does), is data: a file without
# a header (STS Benchmark's sentence pairs), whose first row would otherwise name its columns. A
# long name is not: Jira's `Custom field (Story Points)`.
_NUMBER = re.compile(r"[-+]?\d[\d.,]*")
_SENTENCE_ENDS = (".", "!", "?")


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


def read_records(rows: Iterable[Row], columns: list[str], found: Reading,
                 title_column: str = "title") -> Iterator[json_records.Record]:
    """Each row of a CSV without a text column as a record (see the module's docstring), in file
    order, named by the id column `reading` found in a first pass over the same rows: a record at a
    time, so no more than one row's record is held."""
    repeated = _repeated(columns)
    for row in rows:
        yield _record(row, columns, repeated, found.id, title_column)


def reading(rows: Iterable[Row], columns: list[str], id_column: str = "id",
            title_column: str = "title") -> Reading:
    """Which columns the rows' records take as text, title and id (what `read_records` names them
    by, and what the app tells a person before a build), in one pass over `rows`. Raises
    `json_records.NotRecords` when they are not records: a first row of data, or fewer than half
    of the rows holding prose (`MIN_PROSE_SHARE`)."""
    data = [name for name in columns if _NUMBER.fullmatch(name.strip())
            or json_records.is_prose(name) and name.rstrip().endswith(_SENTENCE_ENDS)]
    if data:
        shown = ", ".join(f"'{name[:40]}'" for name in data[:2])
        raise json_records.NotRecords(f"its first row holds data ({shown}), not the names of columns")
    repeated = _repeated(columns)
    ids = _IdColumns(columns, id_column, repeated)
    text: dict[str, None] = {}
    count = with_prose = 0
    for row in rows:
        ids.see(row.values)
        record = _record(row, columns, repeated, None, title_column)
        count += 1
        with_prose += bool(record.outline.headings)
        text.update(dict.fromkeys(re.sub(r"\[\d+\]$", "", heading.title) for heading in record.outline.headings))
    if not with_prose or with_prose < MIN_PROSE_SHARE * count:
        raise json_records.NotRecords(f"{with_prose:,} of its {count:,} rows hold prose (a description, a "
                                      "comment), under half")
    id_field = ids.chosen()
    text.pop(id_field or "", None)  # read as the id, not as text, once it is chosen
    lowered = {name.strip().lower(): name for name in reversed(columns)}  # the first of a name
    title = next((lowered[name] for name in _title_fields(title_column) if name in lowered), None)
    return Reading(tuple(text), title, id_field)


def _record(row: Row, columns: list[str], repeated: set[str], id_field: str | None,
            title_column: str) -> json_records.Record:
    return json_records.record_of(_cells(columns, row.values, repeated), row.line,
                                  id_fields=(id_field,) if id_field else (), title_fields=_title_fields(title_column))


def _repeated(columns: list[str]) -> set[str]:
    return {name for name, count in Counter(columns).items() if count > 1}


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


class _IdColumns:
    """The column that names each row, found in one pass: `id_column` when the header has it, else
    the first column named for an id whose cells are filled and distinct in every row (None: rows go
    by their line). Holds the values of the candidates still standing."""

    def __init__(self, columns: list[str], id_column: str, repeated: set[str]) -> None:
        self.named = id_column if id_column in columns else None
        candidates = [] if self.named else [
            name for name in dict.fromkeys(columns) if name not in repeated
            and (name.strip().lower() in json_records.ID_FIELDS or name.strip().lower().endswith(ID_SUFFIXES))]
        self.seen: dict[str, set[str]] = {name: set() for name in candidates}
        self.at = {name: columns.index(name) for name in candidates}

    def see(self, values: list[str]) -> None:
        for name in list(self.seen):
            at = self.at[name]
            value = values[at].strip() if at < len(values) else ""
            if not value or value in self.seen[name]:
                del self.seen[name]  # blank or repeated: not an id
            else:
                self.seen[name].add(value)

    def chosen(self) -> str | None:
        return self.named or next(iter(self.seen), None)
