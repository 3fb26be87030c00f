"""Records as documents: a JSON export's records, a CSV's rows, a workbook sheet's rows.

One place names them. A record of a file is `FILE#<its id>`, else `FILE#L<the line where it
starts>`; a row of a workbook's sheet is `FILE#<sheet>!<its id>`, else `FILE#<sheet>!R<its row>`
(the sheet as a spreadsheet's own references name it, `Tickets!R5` its row 5 in R1C1 notation),
so two sheets that number their rows 1, 2, 3 stay apart, and adding a sheet renames no other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from indexer.sources import json_records
from indexer.sources.documents import Document, InputIssue, has_visible_text, one_line

IssueHandler = Callable[[InputIssue], None]


def record_name(label: str, record_id: str | None, line: int, sheet: str | None = None) -> str:
    """The document id of a record of the file `label` (see the module's docstring)."""
    if sheet is None:
        return f"{label}#{record_id}" if record_id is not None else f"{label}#L{line}"
    return f"{label}#{sheet}!{record_id}" if record_id is not None else f"{label}#{sheet}!R{line}"


def record_documents(label: str, records: Iterator[json_records.Record | json_records.NotAnObject],
                     on_issue: IssueHandler, sheet: str | None = None) -> Iterator[Document]:
    """The records of a JSON export, a CSV or a sheet (`sheet`) as documents, named by
    `record_name`; one without text is skipped and named. Raises `NotRecords`, before any
    document, when no record holds text (a JSON Patch, a table of codes: read as text, as before)."""
    held: list[InputIssue] | None = []  # the issues before the first record with text
    for record in records:
        if isinstance(record, json_records.NotAnObject):
            issue = InputIssue(label, record.line, f"{record.kind} in the list of records, where each record "
                               "is an object; it is skipped")
        else:
            doc_id = record_name(label, record.record_id, record.line, sheet)
            if has_visible_text(record.text):
                if held is not None:
                    for issue in held:
                        on_issue(issue)
                    held = None
                yield _record_document(label, doc_id, record, sheet)
                continue
            fields = ", ".join(json_records.TEXT_FIELDS_SHOWN)
            issue = InputIssue(label, record.line, f"empty record: no title and no text (a field named {fields}, "
                               "..., or a string of four words or more); it is skipped", doc_id=doc_id)
        if held is None:
            on_issue(issue)
        else:
            held.append(issue)
    if held is not None:
        raise json_records.NotRecords("no record holds text")


def _record_document(label: str, doc_id: str, record: json_records.Record, sheet: str | None) -> Document:
    name = label.rsplit("/", 1)[-1] if sheet is None else f"{label.rsplit('/', 1)[-1]}, {sheet}"
    where = "row" if sheet is not None else "line"
    title = record.title or (f"{name} #{record.record_id}" if record.record_id is not None
                             else f"{name}, {where} {record.line:,}")
    return Document(doc_id=doc_id, title=one_line(title), text=record.text, source=label,
                    metadata=record.metadata, line=record.line, outline=record.outline)
