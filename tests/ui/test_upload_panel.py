from __future__ import annotations

from streamlit.testing.v1 import AppTest

from ui.background_build import BuildCounts, BuildStatus
from ui.upload_panel import upload_message, upload_progress_text
from ui.uploads import UploadResult


def test_the_upload_message_counts_read_and_skipped_files_apart() -> None:
    report = BuildCounts("summary", documents_added=1, passages_embedded=3, total_documents=7)
    result = UploadResult(report, saved=["a.txt", "b.png", "c.pdf", "d.zip"],
                          issues=["b.png: binary file (a PNG image)", "c.pdf: encrypted PDF",
                                  "d.zip: a ZIP archive that is not a Word file"])
    assert upload_message(result, "notes") == (
        "Added 1 new document and updated 0 documents from 1 of 4 files; 3 skipped (below) (3 passages "
        "embedded). Collection notes now holds 7 documents.")
    clean = UploadResult(report, saved=["a.txt"], issues=[])
    assert "from 1 file (3 passages embedded)" in upload_message(clean, "notes")


def test_the_upload_bar_counts_passages_embedded_once_the_build_has_a_total(tmp_path) -> None:
    starting = BuildStatus(source=tmp_path)
    assert upload_progress_text(starting, 2) == "Indexing 2 files in the background: reading the files (and the model, if not yet loaded)…"
    embedding = BuildStatus(source=tmp_path, embedded=120, total=314)
    assert upload_progress_text(embedding, 1).startswith("Embedded 120 of 314 passages (")
    assert upload_progress_text(embedding, 1, "my_notes").startswith(
        "Embedded 120 of 314 passages into my\\_notes ("), "another collection is named, escaped"


def test_the_upload_message_counts_files_left_out_on_purpose_apart() -> None:
    report = BuildCounts("summary", documents_added=1, passages_embedded=3, total_documents=7)
    result = UploadResult(report, saved=["paper.pdf", "paper.tex", "data.json", "b.png"],
                          issues=["b.png: binary file (a PNG image)"],
                          left_out=["data.json left out: minified or machine-written code or data"],
                          left_out_files=["data.json", "paper.tex"])
    assert "from 1 of 4 files; 1 skipped and 2 left out (below)" in upload_message(result, "notes")


def test_the_upload_message_counts_a_file_whose_records_were_skipped_as_read() -> None:
    """A workbook with an empty row was read, its other rows indexed: it was counted as a skipped
    file ("from 0 of 1 file; 1 skipped"), seen in a browser."""
    report = BuildCounts("summary", documents_added=4, passages_embedded=4, total_documents=9,
                         files_with_records=("support.xlsx",))
    result = UploadResult(report, saved=["support.xlsx"],
                          issues=["support.xlsx:3: sheet 'Notes': empty document (column 'text' is blank)"])
    assert "from 1 file, 1 record in it skipped (below) (4 passages" in upload_message(result, "notes")
    both = UploadResult(report, saved=["support.xlsx", "b.png"],
                        issues=["b.png: binary file (a PNG image)", "support.xlsx:3: empty", "support.xlsx:4: empty"])
    assert "from 1 of 2 files; 1 skipped; 2 records in it skipped (below)" in upload_message(both, "notes")


TICKETS = (b"Subject,Ticket ID,Description\n"
           b"Printer jams,101,The printer on the third floor jams on every second page.\n"
           b"VPN drops,102,The VPN connection drops every hour since the update.\n")


def _mapping_panel(data: bytes) -> None:
    """The upload panel's CSV boxes for one upload (AppTest runs this as a script)."""
    import streamlit as st

    from ui.upload_panel import csv_mapping_controls

    class Upload:
        name = "tickets.csv"

        def getvalue(self) -> bytes:
            return data

    mappings, fits = csv_mapping_controls([Upload()])
    st.write(f"mappings={sorted((name, m.text) for name, m in mappings.items())} fits={fits}")


def test_a_csv_of_tickets_is_read_as_records_unless_the_person_chooses_a_column() -> None:
    at = AppTest.from_function(_mapping_panel, args=(TICKETS,), default_timeout=30).run()
    assert not at.exception
    note = at.sidebar.markdown[0].value
    assert note == ("**tickets\\.csv** has no `text` column, so each row is read as a record: its text from "
                    "*Description* (each under its column's name); titled by *Subject*; named by *Ticket ID*. "
                    "The other columns become metadata to filter on.")
    assert not at.sidebar.selectbox, "nothing to choose while it is read as records"
    assert at.main.markdown[-1].value == "mappings=[] fits=True"
    at.sidebar.checkbox[0].check().run()
    assert [box.label for box in at.sidebar.selectbox] == ["Text (required)", "Title", "Id"]
    assert at.main.markdown[-1].value == "mappings=[('tickets.csv', 'Description')] fits=True"


def test_a_csv_without_prose_asks_for_its_text_column() -> None:
    at = AppTest.from_function(_mapping_panel, args=(b"code,name\nFR,France\nDE,Germany\n",),
                               default_timeout=30).run()
    assert not at.exception and not at.sidebar.checkbox
    assert "has no `text` column. Choose which of its columns" in at.sidebar.markdown[0].value
    assert at.main.markdown[-1].value == "mappings=[('tickets.csv', 'name')] fits=True"
