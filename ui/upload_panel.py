"""The sidebar's "Add documents": upload files, map a CSV's columns, index them into the open index."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from indexer import IndexerError
from ui.csv_columns import (
    CsvMapping,
    csv_columns,
    is_csv,
    mapping_problem,
    needs_mapping,
    suggest_mapping,
)
from ui.highlight import escape_markdown
from ui.results import plural
from ui.uploads import ACCEPTED_TYPES, UploadResult, index_uploads

# The "none" choice for a CSV's title or id column (a column without a name is never offered).
NO_COLUMN = ""


def upload_section(folder: Path) -> None:
    sidebar = st.sidebar
    sidebar.subheader("Add documents")
    files = sidebar.file_uploader(
        "Files to index",
        type=ACCEPTED_TYPES,
        accept_multiple_files=True,
        key="uploads",
        help="A PDF (its text layer), Word file (.docx), web page (.html) or e-book (.epub) becomes one "
        "document, each hit showing its page or section; so does any text file (.txt, .md, .rst, a "
        "README, .gz of one). Each "
        ".jsonl line and .csv row is one, and needs a `text` field (and may have `id` and "
        "`title`). A .csv names its columns in its first row; one without a `text` column asks "
        "which of its columns holds the text.",
    )
    mappings, mapped = csv_mapping_controls(files or [])
    if sidebar.button("Index these files", disabled=not files or not mapped, key="index_uploads"):
        bar = sidebar.progress(0.0, text="Reading files…")

        def on_progress(done: int, total: int) -> None:
            bar.progress(
                done / total if total else 1.0, text=f"Embedded {done} of {total} passages"
            )

        try:
            result = index_uploads([(f.name, f.getvalue()) for f in files], folder, on_progress,
                                   csv_mappings=mappings)
        except (IndexerError, ValueError) as err:
            bar.empty()
            st.session_state.upload_result = None
            sidebar.error(f"Nothing was added to the index. {err}")
            return
        bar.progress(1.0, text="Done")
        st.session_state.upload_result = result  # the cached Searcher loads the new build itself
    result: UploadResult | None = st.session_state.get("upload_result")
    if result is not None:
        report = result.report
        sidebar.success(upload_message(result))
        sidebar.caption(report.summary())
        for issue in result.issues:
            sidebar.warning(f"Skipped {issue}. Fix the file and upload it again.")


def upload_message(result: UploadResult) -> str:
    """What a batch of uploads added, counting the files read and those skipped apart."""
    report = result.report
    skipped = {issue.split(":", 1)[0] for issue in result.issues} & set(result.saved)
    files = (f"from {len(result.saved) - len(skipped)} of {plural(len(result.saved), 'file')}; "
             f"{len(skipped)} skipped (below)" if skipped else f"from {plural(len(result.saved), 'file')}")
    return (f"Added {plural(report.documents_added, 'new document')} and updated "
            f"{plural(report.documents_updated, 'document')} {files} "
            f"({plural(report.passages_embedded, 'passage')} embedded). "
            f"The index now holds {plural(report.total_documents, 'document')}.")


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
        box.markdown(
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


def column_label(column: str) -> str:
    return "none" if column == NO_COLUMN else column
