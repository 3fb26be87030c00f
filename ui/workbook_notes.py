"""What the upload panel says of a workbook (.xlsx, .ods, .xls) before it is indexed: how each of
its sheets will be read (`indexer.sources.workbooks.sheet_readings`), as it says of a CSV of
records, so that a sheet left out or a workbook that gives nothing is known before the build."""

from __future__ import annotations

import tempfile
from pathlib import Path

from indexer.sources import formats, workbooks
from indexer.sources.formats import UnreadableDocument
from ui.highlight import escape_markdown
from ui.results import plural

WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".ods", ".xls")


def workbook_readings(name: str, data: bytes) -> list[workbooks.SheetReading] | str | None:
    """How a build reads the uploaded file `name` when it is a workbook (told by content, as the
    build tells it), a sheet at a time; why it cannot be read, for a file named as a workbook (a
    damaged one); None for any other file (the build reports it, if need be)."""
    if not formats.may_be_workbook(data[:8]):
        return None
    with tempfile.TemporaryDirectory(prefix="semsearch-workbook-") as folder:
        path = Path(folder) / (Path(name).name or "upload")
        path.write_bytes(data)
        try:
            kind = formats.detect(path, data[:8])
            if kind not in formats.WORKBOOKS:
                return None
            return workbooks.sheet_readings(path, kind)
        except UnreadableDocument as err:
            return str(err) if path.suffix.lower() in WORKBOOK_SUFFIXES else None


def workbook_note(name: str, readings: list[workbooks.SheetReading]) -> tuple[str, bool]:
    """The note on an uploaded workbook (Markdown), and whether any of its sheets gives documents."""
    lines, read = [], False
    for sheet in readings:
        shown, rows = f"*{escape_markdown(sheet.name)}*", plural(sheet.rows, "row")
        how = sheet.how
        if how.refused is not None:
            lines.append(f"- {shown} is left out: no `text` column, and not a table of tickets "
                         f"({escape_markdown(how.refused)}).")
            continue
        read = read or sheet.rows > 0
        if how.records is None:
            lines.append(f"- {shown}: {rows}, a document each by its `text` column.")
            continue
        text = ", ".join(f"*{escape_markdown(c)}*" for c in how.records.text)
        title = f", titled by *{escape_markdown(how.records.title)}*" if how.records.title else ""
        named = (f"named by *{escape_markdown(how.records.id)}*" if how.records.id
                 else "named by its row")
        lines.append(f"- {shown}: {rows}, a document each, its text from {text}{title}; {named}.")
    shown = f"**{escape_markdown(name)}** is a workbook"
    head = (f"{shown}; its sheets are read as tables:" if read
            else f"{shown}, but none of its sheets gives a document: name a column `text` in a sheet's header "
                 "row, or make it a table of tickets (a description or comment a row), and upload it again." if lines
            else f"{shown} with no filled cell.")
    return "\n".join([head, *lines]), read
