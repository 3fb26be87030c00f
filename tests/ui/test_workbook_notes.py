"""What the upload panel says of a workbook before it is indexed (`ui.workbook_notes`)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.indexer.sources.test_workbooks import LOOKUP, write_xlsx
from ui.workbook_notes import workbook_note, workbook_readings


def test_each_sheet_says_how_it_will_be_read(tmp_path: Path) -> None:
    data = write_xlsx(tmp_path / "support.xlsx").read_bytes()
    readings = workbook_readings("support.xlsx", data)
    assert not isinstance(readings, str) and readings is not None
    assert [(r.name, r.rows) for r in readings] == [("Tickets", 2), ("Lookup", 3), ("Notes", 3)]
    note, read = workbook_note("support.xlsx", readings)
    assert read
    assert note.splitlines() == [
        "**support\\.xlsx** is a workbook; its sheets are read as tables:",
        "- *Tickets*: 2 rows, a document each, its text from *Description*, *Comment*, titled by *Summary*; "
        "named by *Issue key*.",
        # the reason escaped for Markdown, as every text from a file is
        "- *Lookup* is left out: no `text` column, and not a table of tickets (0 of its 3 rows hold prose \\(a "
        "description\\, a comment\\)\\, under half).",
        "- *Notes*: 3 rows, a document each by its `text` column.",
    ]


def test_a_workbook_that_gives_nothing_says_what_to_change(tmp_path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    for row in LOOKUP:
        book.active.append(row)
    book.save(tmp_path / "codes.xlsx")
    readings = workbook_readings("codes.xlsx", (tmp_path / "codes.xlsx").read_bytes())
    assert isinstance(readings, list)
    note, read = workbook_note("codes.xlsx", readings)
    assert not read and note.startswith("**codes\\.xlsx** is a workbook, but none of its sheets gives a document: "
                                        "name a column `text` in a sheet's header row")


def test_other_files_have_no_note_and_a_damaged_workbook_says_why(tmp_path: Path) -> None:
    whole = write_xlsx(tmp_path / "support.xlsx").read_bytes()
    assert workbook_readings("notes.txt", b"plain text") is None
    assert workbook_readings("archive.zip", _zip(tmp_path)) is None
    broken = workbook_readings("cut.xlsx", whole[: len(whole) // 2])
    assert isinstance(broken, str) and broken.startswith("damaged or truncated Excel workbook")


def _zip(tmp_path: Path) -> bytes:
    import zipfile

    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("a.txt", "hello")
    return (tmp_path / "a.zip").read_bytes()


def _panel(data: bytes) -> None:
    from ui.upload_panel import workbook_notes

    class Upload:
        name = "support.xlsx"

        def getvalue(self) -> bytes:
            return data

    workbook_notes([Upload()])


def test_the_upload_panel_shows_the_note(tmp_path: Path) -> None:
    data = write_xlsx(tmp_path / "support.xlsx").read_bytes()
    at = AppTest.from_function(_panel, args=(data,), default_timeout=30).run()
    assert not at.exception
    assert at.sidebar.info[0].value.startswith("**support\\.xlsx** is a workbook; its sheets are read as tables:")
