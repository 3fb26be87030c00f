"""Turn a source path into documents: a folder of .txt/.md, .jsonl, .csv, or a BEIR corpus.

Bad records never stop a build by default: each is reported through `on_issue`
with its file and line and skipped. The caller decides whether an issue is fatal
(`--strict`).
"""

from __future__ import annotations

import csv
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

from indexer.documents import Document, InputIssue

logger = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md")
RECORD_SUFFIXES = (".jsonl", ".csv")
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + RECORD_SUFFIXES
_SNIFF_BYTES = 8192

IssueHandler = Callable[[InputIssue], None]


def _log_issue(issue: InputIssue) -> None:
    logger.warning("skipped %s", issue)


def _decode(path: Path, raw: bytes, on_issue: IssueHandler, label: str) -> str | None:
    if b"\x00" in raw[:_SNIFF_BYTES]:
        on_issue(InputIssue(label, None, "binary file (it holds NUL bytes); only text is indexed"))
        return None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        on_issue(
            InputIssue(
                label,
                line,
                f"invalid UTF-8 at byte {err.start}; re-save the file as UTF-8",
            )
        )
        return None


def _read_text(path: Path, label: str, on_issue: IssueHandler) -> str | None:
    try:
        raw = path.read_bytes()
    except OSError as err:
        on_issue(InputIssue(label, None, f"unreadable ({err.strerror or err})"))
        return None
    return _decode(path, raw, on_issue, label)


def _title_from_text(text: str, fallback: str) -> str:
    """A Markdown file's first heading, else the file name."""
    for line in text.splitlines()[:20]:
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip() or fallback
    return fallback


def read_text_file(path: Path, label: str, on_issue: IssueHandler) -> Iterator[Document]:
    text = _read_text(path, label, on_issue)
    if text is None:
        return
    if not text.strip():
        on_issue(InputIssue(label, None, "empty document"))
        return
    title = _title_from_text(text, path.stem) if path.suffix == ".md" else path.stem
    yield Document(doc_id=label, title=title, text=text, source=label)


def read_jsonl_file(path: Path, label: str, on_issue: IssueHandler) -> Iterator[Document]:
    """Lines of {id, title, text, ...}; BEIR's `_id` works as the id, other fields become metadata."""
    text = _read_text(path, label, on_issue)
    if text is None:
        return
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            on_issue(InputIssue(label, line_no, f"malformed JSON ({err.msg})"))
            continue
        if not isinstance(row, dict):
            on_issue(InputIssue(label, line_no, "a JSON line must be an object with a 'text' field"))
            continue
        body = row.get("text")
        if not isinstance(body, str) or not body.strip():
            on_issue(InputIssue(label, line_no, "empty document (no 'text' field or it is blank)"))
            continue
        raw_id = row.get("id", row.get("_id"))
        doc_id = str(raw_id) if raw_id is not None else f"{label}#L{line_no}"
        title = str(row.get("title") or "")
        metadata = {k: v for k, v in row.items() if k not in ("id", "_id", "title", "text")}
        nested = metadata.pop("metadata", None)
        if isinstance(nested, dict):
            metadata.update(nested)
        yield Document(doc_id=doc_id, title=title, text=body, source=label, metadata=metadata)


def read_csv_file(
    path: Path,
    label: str,
    on_issue: IssueHandler,
    id_column: str = "id",
    title_column: str = "title",
    text_column: str = "text",
) -> Iterator[Document]:
    text = _read_text(path, label, on_issue)
    if text is None:
        return
    reader = csv.DictReader(text.splitlines())
    columns = reader.fieldnames or []
    if text_column not in columns:
        on_issue(
            InputIssue(
                label,
                1,
                f"missing CSV column '{text_column}' (columns: {', '.join(columns) or 'none'}); "
                "map yours with --csv-text/--csv-title/--csv-id",
            )
        )
        return
    for row_no, row in enumerate(reader, start=2):
        body = row.get(text_column) or ""
        if not body.strip():
            on_issue(InputIssue(label, row_no, f"empty document (column '{text_column}' is blank)"))
            continue
        raw_id = row.get(id_column)
        doc_id = raw_id if raw_id else f"{label}#L{row_no}"
        title = row.get(title_column) or ""
        metadata = {
            k: v for k, v in row.items() if k not in (id_column, title_column, text_column) and k
        }
        yield Document(doc_id=doc_id, title=title, text=body, source=label, metadata=metadata)


def _is_beir_folder(folder: Path) -> bool:
    return (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file()


def list_source_files(source: Path) -> list[Path]:
    """The files a source stands for; a BEIR folder stands for its corpus.jsonl only."""
    if not source.exists():
        raise FileNotFoundError(
            f"Source {source} does not exist. Pass a folder of .txt/.md files, a .jsonl, "
            "a .csv, or a BEIR folder holding corpus.jsonl."
        )
    if source.is_file():
        return [source]
    if _is_beir_folder(source):
        return [source / "corpus.jsonl"]
    return sorted(p for p in source.rglob("*") if p.is_file() and not p.name.startswith("."))


def read_documents(
    source: Path,
    on_issue: IssueHandler = _log_issue,
    csv_columns: tuple[str, str, str] = ("id", "title", "text"),
) -> Iterator[Document]:
    """Yield every usable document under `source`, reporting the rest through `on_issue`."""
    source = Path(source)
    root = source if source.is_dir() else source.parent
    seen: dict[str, str] = {}
    for path in list_source_files(source):
        label = path.relative_to(root).as_posix() if source.is_dir() else path.name
        suffix = path.suffix.lower()
        if suffix in TEXT_SUFFIXES:
            docs = read_text_file(path, label, on_issue)
        elif suffix == ".jsonl":
            docs = read_jsonl_file(path, label, on_issue)
        elif suffix == ".csv":
            docs = read_csv_file(path, label, on_issue, *csv_columns)
        else:
            on_issue(
                InputIssue(
                    label,
                    None,
                    f"unsupported file type '{suffix or path.name}'; "
                    f"supported: {', '.join(SUPPORTED_SUFFIXES)}",
                )
            )
            continue
        for doc in docs:
            if doc.doc_id in seen:
                on_issue(
                    InputIssue(
                        label,
                        None,
                        f"duplicate document id '{doc.doc_id}' (first seen in {seen[doc.doc_id]}); "
                        "kept the first",
                    )
                )
                continue
            seen[doc.doc_id] = label
            yield doc
