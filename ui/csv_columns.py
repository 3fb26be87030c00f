"""Let an uploaded CSV name which of its columns holds the text, the title and the id.

Every upload lands in one folder that each later upload rebuilds with one
`IndexConfig`, whose CSV columns are the defaults (id, title, text). So a mapping
cannot live in that config: the next upload, or a rebuild from the CLI, would read
the file with the defaults again. Instead the saved file's header row is rewritten
to the default names (`apply_mapping`); its rows are left byte for byte, so line
numbers, ids made from them and issues still point at the user's rows. Each CSV of
a batch keeps its own mapping, and the file reads the same in every later build.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer import IndexConfig
from indexer.sources import csv_records, json_records
from indexer.sources.readers import content_name, csv_delimiter, csv_lines

# The columns an upload's build reads (IndexConfig's defaults; ui/uploads.py changes none).
ID_COLUMN: str = IndexConfig.csv_id_column
TITLE_COLUMN: str = IndexConfig.csv_title_column
TEXT_COLUMN: str = IndexConfig.csv_text_column
# Rows read to guess which column holds the text; the guess only preselects a choice.
GUESS_ROWS = 50
_TITLE_NAMES = ("title", "name", "headline", "subject", "heading")
_ID_NAMES = ("id", "_id", "doc_id", "docid", "key", "uid")
# UTF-32 first: its little-endian BOM begins with UTF-16's (as indexer/sources/readers.py decodes).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True)
class CsvMapping:
    """Which column of one CSV holds the text (required), the title and the id (None: none)."""

    text: str
    title: str | None = None
    id: str | None = None

    def __post_init__(self) -> None:
        chosen = [c for c in (self.text, self.title, self.id) if c is not None]
        if len(set(chosen)) < len(chosen):
            raise ValueError(
                f"One column cannot be two things (text {self.text!r}, title {self.title!r}, id "
                f"{self.id!r}); choose a different column for each, or none for the title or id."
            )


def is_csv(name: str) -> bool:
    """Whether the indexer reads `name` as CSV records (`.csv`, or `.csv.gz`)."""
    return content_name(Path(name)).lower().endswith(".csv")


def _decode(data: bytes) -> str | None:
    """The text of an upload as the indexer reads it (gzip, then UTF-8/16/32 by its BOM);
    None when it is not text, which the indexer then reports with the reason."""
    if data.startswith(b"\x1f\x8b"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return None
    encoding, bom = next(((enc, bom) for bom, enc in _BOMS if data.startswith(bom)), ("utf-8", b""))
    try:
        return data[len(bom):].decode(encoding)
    except UnicodeDecodeError:
        return None


def _split_header(text: str) -> tuple[list[str], str, str] | None:
    """(header columns, the header's line ending, the text after the header), or None when the
    first row is not CSV. The rows are fed line by line, so the reader stops right after the header."""
    consumed: list[str] = []

    def lines() -> Iterator[str]:
        for line in io.StringIO(text, newline=""):
            consumed.append(line)
            yield line

    try:
        columns = next(csv.reader(lines(), delimiter=csv_delimiter(text)), None)
    except csv.Error:
        return None
    if not columns:
        return None
    last = consumed[-1]
    ending = last[len(last.rstrip("\r\n")):]
    return columns, ending, text[sum(len(line) for line in consumed):]


def csv_columns(data: bytes) -> list[str] | None:
    """The column names in an uploaded CSV's first row; None when the file cannot be read as CSV
    (the indexer then skips it and says why)."""
    text = _decode(data)
    split = _split_header(text) if text is not None else None
    return split[0] if split is not None else None


def needs_mapping(columns: list[str]) -> bool:
    """A CSV without the default text column is read a record a row when its rows hold prose
    (`record_reading`), else only once its text column is named: either way the app asks."""
    return TEXT_COLUMN not in columns


def _rows(data: bytes, limit: int | None = None) -> Iterator[dict[str, str]]:
    """The first `limit` rows (all when None) as {column: value}, as the indexer pairs them."""
    text = _decode(data)
    if text is None:
        return
    reader = csv.reader(csv_lines(text), delimiter=csv_delimiter(text))
    try:
        columns = next(reader, [])
        for count, values in enumerate(reader):
            if limit is not None and count >= limit:
                return
            if values:
                yield dict(zip(columns, values, strict=False))
    except csv.Error:
        return  # a malformed row: the indexer reports it with its line


def record_reading(data: bytes) -> csv_records.Reading | None:
    """How the indexer reads an upload without a text column a record a row (`csv_records`: which
    columns give its text, title and id), or None when its rows hold no prose and a text column
    must be chosen."""
    text = _decode(data)
    if text is None:
        return None
    reader = csv.reader(csv_lines(text), delimiter=csv_delimiter(text))
    try:
        columns = next(reader, [])
        rows = [csv_records.Row(line, values) for line, values in enumerate(reader, start=2) if values]
        return csv_records.reading(rows, columns, ID_COLUMN, TITLE_COLUMN)
    except (csv.Error, json_records.NotRecords):
        return None


def suggest_mapping(data: bytes, columns: list[str]) -> CsvMapping:
    """A first guess to preselect: the text is the column with the most characters in the first
    rows; the title and the id are columns named like one ("Title", "name", "ID"), else none."""
    names = [c for c in dict.fromkeys(columns) if c]
    if not names:
        raise ValueError("The CSV's first row names no columns; put the column names in its first row.")
    sizes = dict.fromkeys(names, 0)
    for row in _rows(data, GUESS_ROWS):
        for name in names:
            sizes[name] += len(row.get(name) or "")
    text = max(names, key=lambda name: sizes[name])  # the first of equals: ties keep file order

    def named(candidates: tuple[str, ...], taken: set[str]) -> str | None:
        return next((n for n in names if n.strip().lower() in candidates and n not in taken), None)

    title = named(_TITLE_NAMES, {text})
    return CsvMapping(text=text, title=title, id=named(_ID_NAMES, {text, title or ""}))


def mapping_problem(data: bytes, mapping: CsvMapping, name: str = "The CSV") -> str | None:
    """What stops `mapping` from indexing this CSV, said with what the file needs; None if nothing."""
    columns = csv_columns(data)
    if columns is None:
        return f"{name} cannot be read as CSV; save it as UTF-8 text with the column names in its first row."
    for role, column in (("text", mapping.text), ("title", mapping.title), ("id", mapping.id)):
        if column is not None and column not in columns:
            return (f"{name} has no column {column!r} for the {role} (its columns: "
                    f"{', '.join(repr(c) for c in columns)}); choose one of them.")
    if not any((row.get(mapping.text) or "").strip() for row in _rows(data)):
        return (f"Column {mapping.text!r} of {name} is blank in every row, so there is no text to "
                "index; choose the column that holds each document's text, or fill it in.")
    return None


def _unused_name(name: str, taken: set[str]) -> str:
    candidate, number = f"original_{name}", 2
    while candidate in taken:
        candidate, number = f"original_{name}_{number}", number + 1
    return candidate


def renamed_columns(columns: list[str], mapping: CsvMapping) -> list[str]:
    """The header that makes the default columns read as `mapping` says: the chosen columns take
    the default names, and a column already named like a default but not chosen for it becomes
    `original_<name>` (kept as metadata)."""
    targets = {mapping.text: TEXT_COLUMN}
    if mapping.title is not None:
        targets[mapping.title] = TITLE_COLUMN
    if mapping.id is not None:
        targets[mapping.id] = ID_COLUMN
    defaults = {TEXT_COLUMN, TITLE_COLUMN, ID_COLUMN}
    taken = set(columns) | defaults
    renamed: list[str] = []
    spare: dict[str, str] = {}
    for column in columns:
        if column in targets:
            renamed.append(targets[column])
        elif column in defaults:
            if column not in spare:
                spare[column] = _unused_name(column, taken)
                taken.add(spare[column])
            renamed.append(spare[column])
        else:
            renamed.append(column)
    return renamed


def apply_mapping(data: bytes, mapping: CsvMapping, name: str = "The CSV") -> bytes:
    """The upload with its header row renamed for `mapping` (see `renamed_columns`), in UTF-8,
    gzip-compressed again if it was; raises ValueError saying what the file needs."""
    problem = mapping_problem(data, mapping, name)
    if problem:
        raise ValueError(problem)
    text = _decode(data)
    split = _split_header(text) if text is not None else None
    if split is None:  # mapping_problem has read both already
        raise ValueError(f"{name} cannot be read as CSV; save it as UTF-8 text.")
    columns, ending, rest = split
    header = io.StringIO()
    csv.writer(header, lineterminator=ending, delimiter=csv_delimiter(text)).writerow(renamed_columns(columns, mapping))
    out = (header.getvalue() + rest).encode("utf-8")
    return gzip.compress(out, mtime=0) if data.startswith(b"\x1f\x8b") else out
