"""The sidebar's "Add documents": upload files, map a CSV's columns, see how a workbook's sheets
will read, choose the collection they go into (`ui.collections.upload_target`), and index them
there in the background."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from indexer import IndexerError
from indexer.build.collections import CollectionSettings
from indexer.sources.csv_records import Reading
from ui.background_build import BuildStatus
from ui.collections import open_after_upload, upload_target
from ui.commit_watch import rerun_when_a_commit_lands
from ui.csv_columns import (
    CsvMapping,
    csv_columns,
    is_csv,
    mapping_problem,
    needs_mapping,
    record_reading,
    suggest_mapping,
)
from ui.highlight import escape_markdown
from ui.results import plural
from ui.uploads import ACCEPTED_TYPES, UploadBuild, UploadResult, start_upload
from ui.workbook_notes import workbook_note, workbook_readings

# The "none" choice for a CSV's title or id column (a column without a name is never offered).
NO_COLUMN = ""
# Session state: the batch of uploads indexing in the background, or the last one, for its notice.
UPLOAD_BUILD = "upload_build"
UPLOAD_POLL_SECONDS = 1.0


def upload_section(folder: Path) -> None:
    """The uploader, where the files go, and its button; a batch indexes in the background
    (`ui.uploads.start_upload`) with a bar that moves with the passages embedded, then a notice of
    what it added and skipped. `folder` is the collection the page shows."""
    sidebar = st.sidebar
    sidebar.subheader("Add documents")
    files = sidebar.file_uploader(
        "Files to index",
        type=ACCEPTED_TYPES,
        accept_multiple_files=True,
        key="uploads",
        help="A PDF (its text layer), Word file (.docx), OpenDocument text or slides (.odt, .odp), "
        "PowerPoint deck (.pptx), RTF file, saved mail (.eml), web page (.html) or e-book (.epub) "
        "becomes one document, each hit showing its page, slide or section; so does any text file "
        "(.txt, .md, .rst, a README), and a .gz of any of these. Each message of a mail folder (mbox) "
        "is one document; so is each record of a JSON export of tickets or issues (a list of objects: "
        "its prose is the text, its other fields metadata to filter on), each .jsonl line (read "
        "alike where it has no `text` field) and each .csv row. A .csv names its columns in its "
        "first row; one without a `text` column is read a record a row when most rows hold prose "
        "(a ticket export: its prose columns as the text), else it asks which column holds the text. "
        "A spreadsheet (.xlsx, .ods, .xls) is read a sheet at a time, each sheet as such a .csv.",
    )
    mappings, mapped = csv_mapping_controls(files or [])
    workbook_notes(files or [])
    target = upload_target(folder)
    job: UploadBuild | None = st.session_state.get(UPLOAD_BUILD)
    busy = upload_running()
    if sidebar.button("Index these files", disabled=not files or not mapped or busy or target is None,
                      key="index_uploads", help="Wait for the files being indexed to finish." if busy else None):
        assert target is not None  # the button is disabled without one
        try:
            job = start_upload([(f.name, f.getvalue()) for f in files], target, csv_mappings=mappings,
                               settings=CollectionSettings.load(target))
        except (IndexerError, ValueError) as err:
            st.session_state[UPLOAD_BUILD] = None
            sidebar.error(f"Nothing was added to the index. {err}")
            return
        st.session_state[UPLOAD_BUILD] = job
    if job is None:
        return
    if job.status().running:
        with sidebar:
            upload_progress(job, folder)
    else:
        show_upload_outcome(job)


def upload_running(folder: Path | None = None) -> bool:
    """Whether this session's batch of uploads is still indexing (into `folder`, when named)."""
    job: UploadBuild | None = st.session_state.get(UPLOAD_BUILD)
    if job is None or (folder is not None and job.target != folder):
        return False
    return job.status().running


@st.fragment(run_every=UPLOAD_POLL_SECONDS)
def upload_progress(job: UploadBuild, folder: Path) -> None:
    """The batch's bar, moved every second by the passages embedded; the whole page runs again
    when a commit lands (its counters and hits follow) and when the batch is done (its notice)."""
    status = job.status()
    if not status.running:
        st.rerun()
    into = None if job.target == folder else job.target.name
    st.progress(status.fraction, text=upload_progress_text(status, len(job.prepared.saved), into))
    rerun_when_a_commit_lands(folder)


def upload_progress_text(status: BuildStatus, files: int, into: str | None = None) -> str:
    """The bar's text; `into` names the collection when it is not the one the page shows."""
    where = f" into {escape_markdown(into)}" if into else ""
    if not status.total:
        # The build child keeps its model between uploads (ui.background_build): loaded only the first time.
        return f"Indexing {plural(files, 'file')}{where} in the background: reading the files (and the model, if not yet loaded)…"
    return (f"Embedded {status.embedded:,} of {status.total:,} passages{where} ({status.elapsed_s:.0f} s); "
            "searching goes on meanwhile.")


def show_upload_outcome(job: UploadBuild) -> None:
    """The notice of a batch that has ended: what it added and skipped, or why nothing was added."""
    status, result = job.status(), job.result()
    if status.error is not None or result is None:
        st.sidebar.error(f"Nothing was added to the index. {status.error or 'The indexing ended without a report.'}")
        return
    st.sidebar.success(upload_message(result, job.target.name))
    open_after_upload(job.target)
    st.sidebar.caption(result.report.summary())
    for issue in result.issues:
        st.sidebar.warning(f"Skipped {issue}. Fix the file and upload it again.")
    for note in result.left_out:
        st.sidebar.info(escape_markdown(note))
    for note in result.caveats:  # indexed, with a warning: pages without text, a sheet left out
        st.sidebar.info(escape_markdown(note))


def upload_message(result: UploadResult, collection: str) -> str:
    """What a batch of uploads added to `collection`, counting the files read, those skipped and
    those left out on purpose apart. A file whose issues are about records in it (a line: an empty
    row of a CSV or a sheet, a bad record of a JSON export) was read: its skipped records are
    counted, not the file."""
    report = result.report
    with_records = set(report.files_with_records)
    named = [issue.split(":", 1)[0] for issue in result.issues]
    skipped = set(named) & set(result.saved) - with_records
    left_out = set(result.left_out_files) - skipped
    records = sum(name in with_records for name in named)
    read = len(result.saved) - len(skipped) - len(left_out)
    apart = [f"{len(skipped)} skipped"] * bool(skipped) + [f"{len(left_out)} left out"] * bool(left_out)
    files = (f"from {read} of {plural(len(result.saved), 'file')}; {' and '.join(apart)}" if apart
             else f"from {plural(len(result.saved), 'file')}")
    if records:
        files += f"{';' if apart else ','} {plural(records, 'record')} in {'them' if read > 1 else 'it'} skipped"
    if apart or records:
        files += " (below)"
    return (f"Added {plural(report.documents_added, 'new document')} and updated "
            f"{plural(report.documents_updated, 'document')} {files} "
            f"({plural(report.passages_embedded, 'passage')} embedded). "
            f"Collection {escape_markdown(collection)} now holds {plural(report.total_documents, 'document')}.")


# How a CSV reads as records, once per upload's content: the whole file is parsed (1 s for 35 MB
# on 2 cores), and the page runs again on every click while the upload waits.
_record_reading = st.cache_data(show_spinner=False, max_entries=16)(record_reading)


def csv_mapping_controls(files: list) -> tuple[dict[str, CsvMapping], bool]:
    """For each uploaded CSV without a `text` column, its columns and which of them hold the text,
    the title and the id, preselected by a guess. Returns the mappings by file name, and whether
    every one fits its file (else its box says what the file needs). Each CSV has its own."""
    mappings: dict[str, CsvMapping] = {}
    fits = True
    latest = {upload.name: upload for upload in files}  # the one saved when two share a name
    for upload in latest.values():
        if not is_csv(upload.name):
            continue
        data = upload.getvalue()
        columns = csv_columns(data)
        names = [c for c in dict.fromkeys(columns or []) if c]
        if columns is None or not needs_mapping(columns) or not names:
            continue  # nothing to choose: the build reads it as it is, or says why it cannot
        guess = suggest_mapping(data, columns)
        box = st.sidebar.container(border=True)
        reading = _record_reading(data)
        note = box.empty()  # above the checkbox, written once the checkbox says which applies
        if reading is not None and not box.checkbox("Choose one column for the text instead",
                                                    key=f"csv_own:{upload.name}"):
            note.markdown(records_note(upload.name, reading))
            continue  # read as records: nothing to rename
        note.markdown(
            f"**{escape_markdown(upload.name)}** has no `text` column. Choose which of its columns "
            f"({', '.join(escape_markdown(n) for n in names)}) holds each document's text; the "
            "others become metadata."
        )
        optional = [NO_COLUMN, *names]
        text = box.selectbox("Text (required)", names, index=names.index(guess.text),
                             key=f"csv_text:{upload.name}")
        title = box.selectbox("Title", optional, index=optional.index(guess.title or NO_COLUMN),
                              format_func=column_label, key=f"csv_title:{upload.name}")
        doc_id = box.selectbox("Id", optional, index=optional.index(guess.id or NO_COLUMN),
                               format_func=column_label, key=f"csv_id:{upload.name}",
                               help="None: each row is named by the file and its line.")
        try:
            mapping = CsvMapping(text=text, title=title or None, id=doc_id or None)
        except ValueError as err:
            box.error(str(err))
            fits = False
            continue
        problem = mapping_problem(data, mapping, upload.name)
        if problem:
            box.error(problem)
            fits = False
            continue
        mappings[upload.name] = mapping
    return mappings, fits


# How a workbook's sheets read, once per upload's content (every sheet is read: a page run on every click).
_workbook_readings = st.cache_data(show_spinner=False, max_entries=16)(workbook_readings)


def workbook_notes(files: list) -> None:
    """For each uploaded workbook, how its sheets will be read (`ui.workbook_notes`): a warning when
    none gives a document, an error when it cannot be opened; nothing to choose, so it never holds
    the upload back (the build says the same of it)."""
    for upload in {upload.name: upload for upload in files}.values():
        readings = _workbook_readings(upload.name, upload.getvalue())
        if readings is None:
            continue
        if isinstance(readings, str):
            st.sidebar.error(f"**{escape_markdown(upload.name)}** cannot be read: {escape_markdown(readings)}")
            continue
        note, read = workbook_note(upload.name, readings)
        (st.sidebar.info if read else st.sidebar.warning)(note)


def records_note(name: str, reading: Reading) -> str:
    """What a build makes of a CSV without a text column whose rows hold prose: a record a row."""
    text = ", ".join(f"*{escape_markdown(c)}*" for c in reading.text)
    title = f"; titled by *{escape_markdown(reading.title)}*" if reading.title else ""
    named = (f"named by *{escape_markdown(reading.id)}*" if reading.id
             else "named by its line (no column names each row once)")
    return (f"**{escape_markdown(name)}** has no `text` column, so each row is read as a record: its text "
            f"from {text} (each under its column's name){title}; {named}. The other columns become metadata "
            "to filter on.")


def column_label(column: str) -> str:
    return "none" if column == NO_COLUMN else column
