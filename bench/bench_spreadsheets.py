"""Reading spreadsheets (`indexer.sources.workbooks`): which library reads each format, measured.

1. **Speed and memory**: the same ticket list (Jira's columns, as bench_json_records writes it)
   saved as .xlsx (by openpyxl) and .ods (by odfdo), each read whole, every cell as text, by
   python-calamine and by its peer (openpyxl, read-only, for .xlsx; odfdo for .ods), in a fresh
   process each (rows/s, peak RSS); then `read_documents` over the .xlsx end to end (documents a
   row, `csv_records`) beside the same rows as a .csv (the CSV reader: the peer of the whole path).
2. **Correctness on real files**: every .xls Debian's packages put under /usr/share/doc
   (libspreadsheet-parseexcel-perl's samples: Excel 95 and 97, Japanese and Western text), read
   by python-calamine and by xlrd, cell by cell: a file whose text differs, or holds a NUL (text
   decoded two bytes a character), is counted against its reader, and the table names which.

    python bench/bench_spreadsheets.py [--sizes 1000 10000 100000] [--no-record]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_json_records import paragraphs, peak_rss_mb  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402

HEADER = ["Summary", "Issue key", "Status", "Labels", "Created", "Story Points", "Description", "Comment", "Comment"]
REAL_XLS = Path("/usr/share/doc")


def ticket_rows(size: int) -> tuple[list[list[object]], str]:
    import datetime

    texts, source = paragraphs(size)
    rows: list[list[object]] = [[f"Issue {n}: {' '.join(texts[n][:60].split())}", f"ACME-{n}", "Open", "bug",
                                 datetime.datetime(2025, 3, 1, 10, 0) + datetime.timedelta(minutes=n), n % 8,
                                 texts[n], texts[(n + 7) % size][:400], texts[(n + 11) % size][:400]]
                                for n in range(size)]
    return rows, source


def write_files(folder: Path, size: int, ods: bool) -> tuple[Path, Path | None, Path, str]:
    import openpyxl
    from odfdo import Document, Table

    rows, source = ticket_rows(size)
    xlsx = folder / "tickets.xlsx"
    book = openpyxl.Workbook(write_only=True)
    sheet = book.create_sheet("Tickets")
    sheet.append(HEADER)
    for row in rows:
        sheet.append(row)
    book.save(xlsx)
    table_file = folder / "tickets.csv"
    with table_file.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(HEADER)
        writer.writerows([[str(cell) for cell in row] for row in rows])
    spreadsheet = None
    if ods:
        spreadsheet = folder / "tickets.ods"
        document = Document("spreadsheet")
        document.body.clear()
        table = Table("Tickets")
        table.set_values([HEADER, *rows])
        document.body.append(table)
        document.save(spreadsheet)
    return xlsx, spreadsheet, table_file, source


def read_cells(reader: str, path: str) -> None:
    """Child process: every cell of `path` as text with `reader`; prints rows, seconds, peak RSS."""
    from indexer.sources.workbooks import ODS, XLSX, cell_text, sheets  # noqa: PLC0415

    start = time.perf_counter()
    count = 0
    if reader == "calamine":
        kind = XLSX if path.endswith(".xlsx") else ODS
        count = sum(len(sheet.rows) + 1 for sheet in sheets(Path(path), kind))
    elif reader == "openpyxl":
        import openpyxl  # noqa: PLC0415

        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
        for sheet in book.worksheets:
            count += sum(1 for row in sheet.iter_rows(values_only=True) if [cell_text(v) for v in row])
        book.close()
    elif reader == "odfdo":
        from odfdo import Document  # noqa: PLC0415

        for table in Document(path).body.tables:
            count += sum(1 for row in table.get_values() if [cell_text(v) for v in row])
    elif reader == "documents":
        from indexer.sources.readers import read_documents  # noqa: PLC0415

        count = sum(1 for _ in read_documents(Path(path), on_issue=lambda issue: None))
    print(json.dumps({"rows": count, "seconds": time.perf_counter() - start, "rss_mb": peak_rss_mb()}))


def measure(reader: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.bench_spreadsheets", "--read", reader, str(path)],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def speed_table(sizes: list[int], ods_max: int) -> tuple[str, str]:
    rows = []
    source = ""
    with tempfile.TemporaryDirectory(prefix="bench-sheets-") as tmp:
        for size in sizes:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            xlsx, ods, table_file, source = write_files(folder, size, ods=size <= ods_max)
            runs = [("xlsx", "calamine", xlsx), ("xlsx", "openpyxl", xlsx)]
            if ods is not None:
                runs += [("ods", "calamine", ods), ("ods", "odfdo", ods)]
            runs += [("xlsx", "documents", xlsx), ("csv", "documents", table_file)]
            for kind, reader, path in runs:
                run = measure(reader, path)
                expected = size if reader == "documents" else size + 1
                assert run["rows"] == expected, (reader, kind, run, expected)
                label = {"documents": "read_documents (our reader, end to end)"}.get(reader, reader)
                rows.append([f"{size:,}", kind, f"{path.stat().st_size / 2**20:,.1f}", label,
                             f"{run['rows'] / run['seconds']:,.0f}", f"{run['rss_mb']:,.0f}"])
                print(rows[-1], flush=True)
    table = markdown_table(["rows", "file", "file MB", "reader", "rows/s", "peak RSS MB"], rows)
    return table, source


def xls_cells(path: Path, reader: str) -> list[list[str]]:
    """Every sheet of a real .xls by `reader`: its name, then its filled rows, each cell as the text
    `workbooks.cell_text` gives (xlrd's values converted as the product converts them)."""
    from indexer.sources.workbooks import cell_text, xls_value  # noqa: PLC0415

    named: list[tuple[str, list[list[object]]]] = []
    if reader == "xlrd":
        import xlrd  # noqa: PLC0415

        book = xlrd.open_workbook(str(path))
        named = [(sheet.name, [[xls_value(cell, book.datemode) for cell in sheet.row(r)] for r in range(sheet.nrows)])
                 for sheet in book.sheets()]
    else:
        from python_calamine import CalamineWorkbook, SheetTypeEnum  # noqa: PLC0415

        workbook = CalamineWorkbook.from_path(str(path))
        named = [(meta.name, workbook.get_sheet_by_name(meta.name).to_python()) for meta in workbook.sheets_metadata
                 if meta.typ == SheetTypeEnum.WorkSheet]
    grids: list[list[str]] = []
    for name, grid in named:
        rows = [[cell_text(value).strip() for value in row] for row in grid]
        rows = [row[:max(i + 1 for i, cell in enumerate(row) if cell)] for row in rows if any(row)]
        grids += [[name], *rows] if rows else []
    return grids


def xls_table() -> tuple[str, int]:
    files = sorted(REAL_XLS.rglob("*.xls"))
    rows, differ = [], 0
    for path in files:
        ours, peer = xls_cells(path, "xlrd"), xls_cells(path, "calamine")
        nul = sum("\x00" in cell for row in peer for cell in row)
        same = ours == peer
        differ += not same
        sample = next((cell for row in peer for cell in row if "\x00" in cell), "")
        rows.append([path.relative_to(REAL_XLS).as_posix(), sum(map(len, ours)),
                     "same" if same else f"differs ({nul} cells with NULs{': ' + repr(sample[:24]) if sample else ''})"])
    table = markdown_table([".xls under /usr/share/doc", "cells (xlrd)", "python-calamine's text beside xlrd's"], rows)
    return table, differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--ods-max", type=int, default=10_000, help="largest size also written as .ods "
                        "(odfdo writes 100,000 rows in minutes)")
    parser.add_argument("--read", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.read:
        read_cells(*args.read)
        return
    xls, differ = xls_table()
    print(xls, flush=True)
    speed, source = speed_table(args.sizes, args.ods_max)
    print(speed)
    notes = (f"Rows: Jira's columns (a summary, a key, a status, a label, a date, a number, a description, two "
             f"comments), their text {source}. Each read in a fresh process (peak RSS of that process, the "
             "interpreter and the project's imports included); a library's read takes every cell as text "
             "(`workbooks.cell_text`); `read_documents` reads the .xlsx a record a row, and the same rows as "
             f".csv. On the real .xls files, {differ} of {len(list(REAL_XLS.rglob('*.xls')))} read otherwise "
             "by python-calamine than by xlrd.")
    if not args.no_record:
        record("bench_spreadsheets", "Spreadsheets: python-calamine beside openpyxl, odfdo and xlrd",
               f"{speed}\n\n{xls}\n\n{notes}", command=" ".join(["python bench/bench_spreadsheets.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
