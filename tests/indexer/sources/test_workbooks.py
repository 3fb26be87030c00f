"""Spreadsheets (.xlsx, .ods, .xls) read as their sheets' tables (`indexer.sources.workbooks`).

Workbooks are written here by openpyxl (.xlsx) and odfdo (.ods); .xls, which no maintained Python
library writes, comes from the real files Debian ships (libspreadsheet-parseexcel-perl)."""

from __future__ import annotations

import datetime
import gzip
import shutil
from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from indexer.sources import workbooks
from indexer.sources.readers import read_documents
from search import Searcher

# A ticket list as a support team keeps it: a title line and a date over the table, Jira's
# columns, typed cells (a date, a number, a boolean), a second comment column; beside it, a lookup
# sheet of codes, Excel's empty third sheet, and a notes sheet with a `text` column.
HEADER = ["Summary", "Issue key", "Status", "Created", "Story Points", "Escalated", "Description", "Comment",
          "Comment"]
TICKETS = [
    ["Password reset email never arrives", "SUP-12", "Open", datetime.datetime(2024, 1, 3, 10, 15), 3, True,
     "Customers report that the reset email does not arrive after they request it.\nIt started after the "
     "mail relay change.", "Checked the relay logs, the messages are queued but never sent.",
     "Relay restarted; the queue is draining now."],
    ["Export to PDF cuts the last page", "SUP-13", "Done", datetime.date(2024, 1, 4), 2.5, False,
     "When a report has more than ten pages, the exported PDF stops before the final page.", None, None],
]
LOOKUP = [["Code", "Points"], ["S", 1], ["M", 3], ["L", 8]]
NOTES = [["text", "owner"], ["Rotate the relay credentials every quarter, before the audit.", "ops"],
         [None, "ops"], ["Keep the status page linked from every outage ticket.", None]]


def write_xlsx(path: Path, title_rows: bool = True) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Tickets"
    if title_rows:
        sheet.append(["Support tickets, exported from the tracker"])
        sheet.append([datetime.date(2024, 1, 5)])
    sheet.append(HEADER)
    for row in TICKETS:
        sheet.append(row)
    lookup = book.create_sheet("Lookup")
    for row in LOOKUP:
        lookup.append(row)
    book.create_sheet("Sheet3")
    notes = book.create_sheet("Notes")
    for row in NOTES:
        notes.append(row)
    book.save(path)
    return path


def write_ods(path: Path) -> Path:
    from odfdo import Document, Table

    document = Document("spreadsheet")
    document.body.clear()
    for name, rows in (("Tickets", [HEADER, *TICKETS]), ("Lookup", LOOKUP), ("Notes", NOTES)):
        table = Table(name)
        table.set_values([[("" if cell is None else cell) for cell in row] for row in rows])
        document.body.append(table)
    document.save(path)
    return path


def read(path: Path, **columns: str) -> tuple[list, list]:
    issues: list = []
    if columns:
        docs = list(workbooks.read_workbook(path, path.name, issues.append, workbooks.XLSX, **columns))
    else:
        docs = list(read_documents(path, on_issue=issues.append))
    return docs, issues


def test_a_ticket_list_in_a_workbook_is_a_document_a_row_named_by_sheet_and_key(tmp_path: Path) -> None:
    docs, issues = read(write_xlsx(tmp_path / "support.xlsx"))
    assert [(d.doc_id, d.title, d.line) for d in docs] == [
        ("support.xlsx#Tickets!SUP-12", "Password reset email never arrives", 4),
        ("support.xlsx#Tickets!SUP-13", "Export to PDF cuts the last page", 5),
        # a sheet with a `text` column is read by it; a row without an id goes by its row (R1C1)
        ("support.xlsx#Notes!R2", "", 2), ("support.xlsx#Notes!R4", "", 4),
    ]
    first = docs[0]
    assert [h.title for h in first.outline.headings] == ["Description", "Comment[1]", "Comment[2]"]
    assert "the queue is draining" in first.text and "mail relay change" in first.text
    # each cell as the text a person sees in it: no "3.0", a date without a midnight, TRUE
    assert first.metadata == {"Status": "Open", "Created": "2024-01-03 10:15:00", "Story Points": "3",
                              "Escalated": "TRUE"}
    assert docs[1].metadata == {"Status": "Done", "Created": "2024-01-04", "Story Points": "2.5",
                                "Escalated": "FALSE"}
    assert docs[2].metadata == {"owner": "ops"}
    # warnings about a file indexed all the same (partial), and a skipped row
    assert [(i.line, i.problem, i.partial) for i in issues] == [
        (3, "sheet 'Tickets': 2 filled rows above the header row (a title over the table) not read as rows",
         True),
        (3, "sheet 'Notes': empty document (column 'text' is blank)", False),
        (1, "sheet 'Lookup' is left out: no column 'text' in its header row 1 (Code, Points); nor is it read a "
            "record a row, as a ticket export is: 0 of its 3 rows hold prose (a description, a comment), under "
            "half", True),
    ]
    assert issues[1].doc_id == "support.xlsx#Notes!R3", "a skipped row keeps its stored document"
    assert str(issues[1]) == "support.xlsx:3: sheet 'Notes': empty document (column 'text' is blank)"


def test_an_ods_reads_as_the_same_xlsx_does(tmp_path: Path) -> None:
    excel, _ = read(write_xlsx(tmp_path / "support.xlsx", title_rows=False))
    calc, issues = read(write_ods(tmp_path / "support.ods"))
    assert [(d.doc_id.replace(".ods", ".xlsx"), d.title, d.text, d.metadata, d.line) for d in calc] == [
        (d.doc_id, d.title, d.text, d.metadata, d.line) for d in excel]
    assert [i.problem.split(":")[0] for i in issues] == ["sheet 'Notes'", "sheet 'Lookup' is left out"]


def test_a_workbook_without_a_table_of_text_is_refused_naming_each_sheet(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Codes"
    for row in LOOKUP:
        book.active.append(row)
    book.create_sheet("Empty")
    path = tmp_path / "codes.xlsx"
    book.save(path)
    docs, issues = read(path)
    assert docs == [] and len(issues) == 1 and issues[0].retains_stored and issues[0].line is None
    assert issues[0].problem.startswith("no sheet of this Excel workbook (.xlsx) holds a table of text (sheet "
                                        "'Codes': no column 'text' in its header row 1 (Code, Points); nor is it")
    assert issues[0].problem.endswith("its header row must name the columns, one of them 'text' for the text")
    assert issues[0].cli_hint == "or map your columns with --csv-text/--csv-title/--csv-id"
    empty = tmp_path / "empty.xlsx"
    openpyxl.Workbook().save(empty)
    assert [i.problem for i in read(empty)[1]] == ["empty Excel workbook (.xlsx): no sheet holds a filled cell"]


def test_the_columns_named_on_the_command_line_read_every_sheet_that_has_them(tmp_path: Path) -> None:
    path = write_xlsx(tmp_path / "support.xlsx", title_rows=False)
    docs, issues = read(path, id_column="Issue key", title_column="Summary", text_column="Description")
    assert [(d.doc_id, d.title) for d in docs] == [("SUP-12", "Password reset email never arrives"),
                                                   ("SUP-13", "Export to PDF cuts the last page")]
    assert docs[0].metadata["Comment"] == "Relay restarted; the queue is draining now.", "a named text is one column"
    assert [i.problem.split(":")[0] for i in issues] == ["sheet 'Lookup' is left out", "sheet 'Notes' is left out"]
    assert issues[0].problem.endswith("(Code, Points)"), "a column named on the command line is never guessed"


def test_a_header_cell_left_blank_is_named_by_its_column_letter(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["Subject", "Description", None, "Status"])
    sheet.append(["Printer offline", "The third floor printer drops off the network every morning.",
                  "asked facilities", "Open"])
    path = tmp_path / "t.xlsx"
    book.save(path)
    docs, _ = read(path)
    assert docs[0].metadata == {"C": "asked facilities", "Status": "Open"}


def test_damaged_and_packed_workbooks(tmp_path: Path) -> None:
    whole = write_xlsx(tmp_path / "whole.xlsx").read_bytes()
    (tmp_path / "cut.xlsx").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "packed.xlsx.gz").write_bytes(gzip.compress(whole))
    (tmp_path / "whole.xlsx").unlink()
    docs, issues = read(tmp_path)
    assert issues[0].path == "cut.xlsx" and issues[0].problem.startswith("damaged or truncated Excel workbook")
    assert [d.doc_id for d in docs][:2] == ["packed.xlsx.gz#Tickets!SUP-12", "packed.xlsx.gz#Tickets!SUP-13"]


def test_cells_read_as_a_person_sees_them() -> None:
    assert [workbooks.cell_text(v) for v in (None, 10015.0, 2.5, -3.0, True, "  kept  ",
                                             datetime.datetime(2024, 1, 2), datetime.datetime(2024, 1, 2, 3, 4),
                                             datetime.time(9, 30), 1e20)] == [
        "", "10015", "2.5", "-3", "TRUE", "  kept  ", "2024-01-02", "2024-01-02 03:04:00", "09:30:00", "1e+20"]
    assert [workbooks.column_letter(i) for i in (0, 25, 26, 701, 702)] == ["A", "Z", "AA", "ZZ", "AAA"]


def test_a_search_finds_a_row_of_a_sheet_and_filters_on_its_cells(tmp_path: Path, tiny_model) -> None:
    """End to end, and a row deleted from the workbook is deleted from the index at the next build,
    although a sheet of it is left out (its warning keeps nothing stored), and the build's report
    says so."""
    source = tmp_path / "support"
    source.mkdir()
    write_xlsx(source / "support.xlsx")
    index = tmp_path / "idx"
    config = IndexConfig(source=source, index_dir=index, model=tiny_model, show_progress=False)
    report = build_index(config)
    assert report.documents_added == 4 and report.left_out == [] and len(report.issues) == 1
    assert [w.split(":")[2] for w in report.warnings] == [" sheet 'Tickets'", " sheet 'Lookup' is left out"]
    with Searcher(index, model=tiny_model) as searcher:
        hits = searcher.search("relay restarted draining", k=5, mode="bm25", filter={"Status": "Open"})
        assert hits[0].doc_id == "support.xlsx#Tickets!SUP-12"
        assert hits[0].location.section == ("Description",), "the one passage of a short ticket opens there"
    import openpyxl

    book = openpyxl.load_workbook(source / "support.xlsx")
    book["Tickets"].delete_rows(5)  # SUP-13
    book.save(source / "support.xlsx")
    build_index(config)
    with Searcher(index, model=tiny_model) as searcher:
        assert searcher.search("exported PDF final page", k=5, mode="bm25", filter={"Status": "Done"}) == []


REAL_XLS = Path("/usr/share/doc/libspreadsheet-parseexcel-perl/examples/sample/Excel")


def test_real_excel_95_and_97_workbooks_read_as_excel_shows_them(tmp_path: Path) -> None:
    """Debian's real .xls samples, Excel 95 (BIFF5) and 97, Western and Japanese: xlrd decodes
    them in their code page (python-calamine gave a NUL after each character of the Excel 95 ones,
    bench_spreadsheets). Their sheets are small data tables, so each file is refused, naming its
    sheets and columns in the text a person sees."""
    if not REAL_XLS.is_dir():
        pytest.skip("needs Debian's libspreadsheet-parseexcel-perl (apt-get install libspreadsheet-parseexcel-perl)")
    sheets = list(workbooks.sheets(REAL_XLS / "Test95J.xls", workbooks.XLS))
    assert [s.name for s in sheets] == ["Sheet1-ASC", "漢字名"]
    assert sheets[0].columns == ["ASC", "This Data is 'ASC Only'"]
    assert ["漢字も入る", "漢字のデータ"] in [cells for _, cells in sheets[1].rows]
    assert [cells for _, cells in sheets[0].rows][0] == ["Date", "1964-03-23"]
    for path in sorted(REAL_XLS.glob("*.xls")):
        shutil.copy(path, tmp_path / path.name)
    docs, issues = read(tmp_path)
    assert docs == [] and sorted(i.path for i in issues) == sorted(p.name for p in REAL_XLS.glob("*.xls"))
    assert all("\x00" not in i.problem for i in issues)
    assert all(i.problem.startswith(("no sheet of this Excel 97-2003 workbook (.xls) holds a table of text",
                                     "empty Excel 97-2003 workbook")) for i in issues), [str(i) for i in issues]


def test_a_builds_progress_counts_an_xlsx_by_its_rows(tmp_path: Path) -> None:
    """Excel declares each sheet's extent; openpyxl's write-only mode does not, and its rows are
    counted as the part unpacks. Both without reading a cell."""
    import openpyxl

    from indexer.sources.readers import count_documents

    write_xlsx(tmp_path / "support.xlsx")  # declared: Tickets A1:I5, Lookup A1:B4, Sheet3 A1, Notes A1:B4
    streamed = openpyxl.Workbook(write_only=True)
    sheet = streamed.create_sheet("Rows")
    for number in range(51):
        sheet.append([f"row {number}", number])
    streamed.save(tmp_path / "streamed.xlsx")
    assert workbooks.xlsx_rows(tmp_path / "support.xlsx") == 4 + 3 + 0 + 3
    assert workbooks.xlsx_rows(tmp_path / "streamed.xlsx") == 50
    assert count_documents(tmp_path) == 60


def test_a_sheet_read_by_its_text_column_whose_rows_are_blank_is_no_empty_workbook(tmp_path: Path) -> None:
    """Its rows' own issues say why it gave no document; the file is not called empty."""
    import openpyxl

    book = openpyxl.Workbook()
    for row in (["id", "text"], ["a", " "], ["b", None]):
        book.active.append(row)
    book.save(tmp_path / "blank.xlsx")
    docs, issues = read(tmp_path / "blank.xlsx")
    assert docs == [] and [(i.line, i.problem) for i in issues] == [
        (row, "sheet 'Sheet': empty document (column 'text' is blank)") for row in (2, 3)]


def test_sheet_readings_say_how_a_build_reads_each_sheet(tmp_path: Path) -> None:
    readings = workbooks.sheet_readings(write_xlsx(tmp_path / "support.xlsx"), workbooks.XLSX)
    assert [(r.name, r.rows, r.how.records is not None, r.how.refused is not None) for r in readings] == [
        ("Tickets", 2, True, False), ("Lookup", 3, False, True), ("Notes", 3, False, False)]
    records = readings[0].how.records
    assert records is not None and (records.text, records.title, records.id) == (
        ("Description", "Comment"), "Summary", "Issue key")
