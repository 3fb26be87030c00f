"""Spreadsheets (.xlsx, .ods, .xls) as their sheets' tables: rows of text under a header row.

A workbook is told by its content, as every other format is (`formats.detect`): an Excel
workbook by the `xl/workbook.xml` part of its ZIP container, an OpenDocument spreadsheet by its
`mimetype`, an Excel 97–2003 workbook by the workbook stream of its OLE file (a `.doc` or `.ppt`
has none). Each sheet's table is read as a CSV's is (`tables.read_table`): by its `text`
column, else a record a row (`csv_records`: a ticket list kept in a spreadsheet).

Readers, chosen by measuring (bench/bench_spreadsheets.py, BENCHMARKS.md "Spreadsheets"):
- **python-calamine** (Rust's calamine) for .xlsx and .ods: on the same 10,000 ticket rows,
  19,250 rows/s against openpyxl's 3,073 (.xlsx) and 17,571 against odfdo's 3,118 (.ods). It
  holds a sheet whole (646 MB at 100,000 rows, against openpyxl's 116 MB streamed), as the CSV
  reader holds its file's text: the whole read peaked under the same rows as CSV (656 against
  700 MB);
- **xlrd** for .xls: python-calamine garbles the text of every Excel 5/95 workbook (BIFF5) among
  the 17 real .xls files Debian's packages ship (4 of them: a NUL after each character, Japanese
  text as mojibake), which xlrd reads as Excel shows them; on the other 13 they agree but for
  one duration cell.

Every cell is given as the text a person sees in it: a whole number without `.0` (an id
`10015`, not `10015.0`), a date or time in ISO 8601, a boolean as TRUE/FALSE, an error as its
code (`#N/A`). A row is numbered as the spreadsheet numbers it (from 1), so an issue or a hit
names the row a person finds there. A column without a name in the header row is named by its
letter (`H`), so no filled cell is dropped unnamed. Rows above the header row (a report's title
and date over its table) are not part of the table.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.sources.documents import Document, InputIssue
from indexer.sources.formats.extracted import UnreadableDocument
from indexer.sources.tables import CSV_TEXT_COLUMN, Table, TableReading, read_table, table_reading

IssueHandler = Callable[[InputIssue], None]

XLSX, ODS, XLS = "xlsx", "ods", "xls"
_NAMES = {XLSX: "Excel workbook (.xlsx)", ODS: "OpenDocument spreadsheet (.ods)",
          XLS: "Excel 97-2003 workbook (.xls)"}
_FIX = "open and save it again in Excel or LibreOffice"


@dataclass(frozen=True)
class Sheet:
    """One sheet's table: its name, its header row's number and column names (blank ones named by
    their letter), and its rows below the header that hold a filled cell, each as (its row number,
    its cells as text, as many as the columns); `above` counts the filled rows above the header."""

    name: str
    header_row: int
    columns: list[str]
    rows: list[tuple[int, list[str]]]
    above: int = 0


def read_workbook(path: Path, label: str, on_issue: IssueHandler, kind: str, id_column: str = "id",
                  title_column: str = "title", text_column: str = CSV_TEXT_COLUMN) -> Iterator[Document]:
    """The documents of every sheet of the workbook at `path` (`kind`: XLSX, ODS or XLS), each
    sheet read as a CSV is (`tables.read_table`), its issues naming the sheet and the row. A sheet
    read neither by its text column nor a record a row (a lookup list, a table of numbers) is left
    out with a warning when another sheet is read (`partial`: the file is indexed all the same, so
    the app keeps the upload and a build keeps nothing stored for it; `--strict` stops there);
    when none is, the file is refused, naming each sheet's columns and why."""
    tables_read, left_out = 0, list[tuple[Sheet, str]]()
    try:
        for sheet in sheets(path, kind):
            report = _in_sheet(on_issue, sheet.name)
            read = read_table(Table(sheet.columns, _rows_of(sheet), sheet=sheet.name), label, report,
                              id_column, title_column, text_column)
            if isinstance(read, str):
                left_out.append((sheet, f"no column '{text_column}' in its header row {sheet.header_row} "
                                        f"({_shown(sheet.columns)}){read}"))
                continue
            tables_read += 1
            if sheet.above:
                report(InputIssue(label, sheet.header_row, f"{sheet.above} filled row{'s' if sheet.above > 1 else ''} "
                                  "above the header row (a title over the table) not read as rows", partial=True))
            yield from read
    except UnreadableDocument as err:
        on_issue(InputIssue(label, None, str(err)))
        return
    for issue in _left_out_issues(label, kind, text_column, tables_read, left_out):
        on_issue(issue)


@dataclass(frozen=True)
class SheetReading:
    """How a build reads one sheet (`tables.table_reading`), and its rows below the header."""

    name: str
    rows: int
    how: TableReading


def sheet_readings(path: Path, kind: str, id_column: str = "id", title_column: str = "title",
                   text_column: str = CSV_TEXT_COLUMN) -> list[SheetReading]:
    """How a build reads each sheet of the workbook at `path` that holds a filled cell (what the app
    tells a person before a build). Raises `UnreadableDocument` as `sheets` does."""
    return [SheetReading(sheet.name, len(sheet.rows),
                         table_reading(Table(sheet.columns, _rows_of(sheet), sheet=sheet.name),
                                       id_column, title_column, text_column))
            for sheet in sheets(path, kind)]


_HINT = "or map your columns with --csv-text/--csv-title/--csv-id"


def _left_out_issues(label: str, kind: str, text_column: str, tables_read: int,
                     left_out: list[tuple[Sheet, str]]) -> list[InputIssue]:
    """Warnings for the sheets left out of a workbook others of which were read as tables (their
    rows' own issues say why any gave no document); else one issue refusing the file."""
    if tables_read:
        return [InputIssue(label, sheet.header_row, f"sheet '{sheet.name}' is left out: {why}", cli_hint=_HINT,
                           partial=True) for sheet, why in left_out]
    if not left_out:
        return [InputIssue(label, None, f"empty {_NAMES[kind]}: no sheet holds a filled cell")]
    reasons = "; ".join(f"sheet '{sheet.name}': {why}" for sheet, why in left_out)
    return [InputIssue(label, None, f"no sheet of this {_NAMES[kind]} holds a table of text ({reasons}); its "
                       f"header row must name the columns, one of them '{text_column}' for the text", cli_hint=_HINT)]


def _shown(columns: list[str]) -> str:
    return ", ".join(columns[:12]) + (f", ... ({len(columns)} in all)" if len(columns) > 12 else "")


def _rows_of(sheet: Sheet) -> Callable[[IssueHandler], Iterator[tuple[int, list[str]]]]:
    return lambda report: iter(sheet.rows)


def _in_sheet(on_issue: IssueHandler, name: str) -> IssueHandler:
    """`on_issue` with each problem naming the sheet (the issue's line is the sheet's row)."""
    return lambda issue: on_issue(dataclasses.replace(issue, problem=f"sheet '{name}': {issue.problem}"))


_DIMENSION = re.compile(rb'<dimension ref="[A-Z]+(\d+)(?::[A-Z]+(\d+))?"')


def xlsx_rows(path: Path) -> int:
    """About how many rows below their header rows an .xlsx's sheets hold (a build's progress
    total), without reading a cell: each sheet's declared dimension (`<dimension ref="A1:I5001"/>`,
    as Excel writes it), else its `<row` elements counted as the part unpacks (openpyxl's
    write-only mode declares none). 1 for a file that cannot be opened so: its read reports why."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = [name for name in archive.namelist() if name.startswith("xl/worksheets/") and name.endswith(".xml")]
            total = 0
            for name in parts:
                with archive.open(name) as part:
                    head = part.read(4096)
                    declared = _DIMENSION.search(head)
                    if declared:
                        total += int(declared.group(2) or declared.group(1)) - int(declared.group(1))
                        continue
                    count, tail = head.count(b"<row "), head[-5:]
                    while block := part.read(1 << 20):
                        count += (tail + block).count(b"<row ")
                        tail = block[-5:]
                    total += max(0, count - 1)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error):
        return 1
    return max(1, total)


def is_xls(path: Path) -> bool:
    """Whether an OLE compound file (what Office saved before 2007) holds an Excel workbook."""
    import xlrd

    try:
        _open_xls(path).release_resources()
    except xlrd.XLRDError as err:
        return "encrypted" in str(err).lower()  # a workbook still, refused when read
    except Exception:  # noqa: BLE001 -- xlrd's parser raises many kinds (CompDocError, struct.error, ...)
        return False  # on files that hold no workbook (a .doc) or a damaged one: read as before, refused
    return True


def _open_xls(path: Path) -> Any:
    """xlrd's workbook, sheets loaded when asked for; its warnings (a file size that is not a whole
    number of sectors) go nowhere rather than to stdout."""
    import xlrd

    with open(os.devnull, "w") as nowhere:
        return xlrd.open_workbook(str(path), on_demand=True, logfile=nowhere)


def sheets(path: Path, kind: str) -> Iterator[Sheet]:
    """The tables of the workbook at `path` (`kind`: XLSX, ODS or XLS), a sheet at a time, in the
    workbook's order; a sheet without a filled cell (Excel's empty Sheet2) and a chart sheet give
    none. Raises `UnreadableDocument` for a damaged or password-protected workbook."""
    grids = _xls_grids(path) if kind == XLS else _calamine_grids(path, kind)
    for name, first_row, first_column, grid in grids:
        sheet = _table(name, first_row, first_column, grid)
        del grid  # rewritten in place: the rows are the sheet's now
        if sheet is not None:
            yield sheet


def _calamine_grids(path: Path, kind: str) -> Iterator[tuple[str, int, int, list[list[Any]]]]:
    from python_calamine import CalamineError, CalamineWorkbook, PasswordError, SheetTypeEnum

    what = _NAMES[kind]
    try:
        workbook = CalamineWorkbook.from_path(str(path))
    except PasswordError as err:
        raise UnreadableDocument(f"a password-protected {what}; save it without a password and index "
                                 "that") from err
    except (CalamineError, zipfile.BadZipFile, OSError, ValueError) as err:
        raise UnreadableDocument(f"damaged {what} ({err}); {_FIX}") from err
    try:
        for meta in workbook.sheets_metadata:
            if meta.typ != SheetTypeEnum.WorkSheet:
                continue  # a chart sheet: a picture of other sheets' numbers
            try:
                sheet = workbook.get_sheet_by_name(meta.name)
                grid = sheet.to_python()  # from the first filled row and column: see `start`
            except (CalamineError, ValueError) as err:
                raise UnreadableDocument(f"damaged {what}: sheet '{meta.name}' ({err}); {_FIX}") from err
            start = sheet.start or (0, 0)
            del sheet  # its cells, held by calamine beside `grid`, are freed before the rows are read
            yield meta.name, start[0] + 1, start[1], grid
    finally:
        workbook.close()


def _xls_grids(path: Path) -> Iterator[tuple[str, int, int, list[list[Any]]]]:
    import xlrd

    what = _NAMES[XLS]
    try:
        workbook = _open_xls(path)
    except xlrd.XLRDError as err:
        if "encrypted" in str(err).lower():
            raise UnreadableDocument(f"a password-protected {what}; save it without a password and index "
                                     "that") from err
        raise UnreadableDocument(f"damaged {what} ({err}); {_FIX}") from err
    except OSError:
        raise
    except Exception as err:  # noqa: BLE001 -- as in is_xls: xlrd raises many kinds on damage
        raise UnreadableDocument(f"damaged {what} ({err}); {_FIX}") from err
    try:
        for index in range(workbook.nsheets):
            sheet = workbook.sheet_by_index(index)
            grid = [[xls_value(cell, workbook.datemode) for cell in sheet.row(r)] for r in range(sheet.nrows)]
            yield sheet.name, 1, 0, grid
            workbook.unload_sheet(index)
    finally:
        workbook.release_resources()


def xls_value(cell: Any, datemode: int) -> Any:
    """An xlrd cell's value as python-calamine gives it: a date as a datetime (xlrd gives its serial
    number), a boolean as a bool, an error as its code."""
    import xlrd

    if cell.ctype == xlrd.XL_CELL_DATE:
        try:
            return xlrd.xldate_as_datetime(cell.value, datemode)
        except (xlrd.XLDateError, ValueError, OverflowError):
            return cell.value
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    return cell.value


def cell_text(value: Any) -> str:
    """A cell's value as the text a person reads in it (see the module's docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, datetime.datetime):
        # midnight is a date alone: what a date cell holds (python-calamine gives it as a date, xlrd not)
        return (value.date().isoformat() if value.time() == datetime.time()
                else value.isoformat(sep=" ", timespec="seconds"))
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def column_letter(index: int) -> str:
    """A column's name as a spreadsheet shows it, from its 0-based index: 0 → A, 26 → AA."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


def _table(name: str, first_row: int, first_column: int, grid: list[list[Any]]) -> Sheet | None:
    """The table of a sheet's grid (its rows from `first_row`, cells from `first_column`): its
    header is the first row filled at least half as wide as the widest row (a title line above a
    table fills one cell)."""
    for offset, cells in enumerate(grid):  # in place: a row's values are freed as its text is made
        grid[offset] = [cell_text(value) for value in cells]
    rows = [(first_row + offset, cells) for offset, cells in enumerate(grid) if any(cell.strip() for cell in cells)]
    if not rows:
        return None
    widest = max(_filled(cells) for _, cells in rows)
    at = next(i for i, (_, cells) in enumerate(rows) if 2 * _filled(cells) >= widest)
    header_row, header = rows[at]
    width = max(len(cells) for _, cells in rows)
    columns = [header[i].strip() if i < len(header) and header[i].strip() else column_letter(first_column + i)
               for i in range(width)]
    body = [(number, cells + [""] * (width - len(cells))) for number, cells in rows[at + 1:]]
    return Sheet(name, header_row, columns, body, above=at)


def _filled(cells: list[str]) -> int:
    return sum(1 for cell in cells if cell.strip())
