"""Streaming readers for raw text: plain .txt, JSON lines and WikiExtractor <doc> blocks.

Every reader yields `Document`s one at a time so a multi-GB corpus never sits in
memory; `.gz` files are read transparently. Malformed rows are skipped with a
warning naming the file and line, so one bad record does not end a long run.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from data.jsonl import iter_json_objects

logger = logging.getLogger(__name__)

_DOC_OPEN = re.compile(r'^<doc\s+(?P<attrs>[^>]*)>\s*$')
_ATTR = re.compile(r'(\w+)="([^"]*)"')
# A sentence ends at . ! or ? followed by whitespace and an upper-case letter, digit or quote.
_SENTENCE_END = re.compile(r'(?<=[.!?])\s+(?=["\'(\[]?[A-Z0-9])')

_ABBREVIATION = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|No|vs|etc|Inc|Ltd|Co|Gen|Col|Lt|Sgt|Rev)|\b[A-Z])\.$")

FORMATS = ("txt", "jsonl", "wikiextractor")


@dataclass(frozen=True)
class Document:
    """One document: `text` holds its paragraphs separated by newlines."""

    id: str
    title: str
    text: str


def open_text(path: Path, newline: str | None = None) -> io.TextIOBase:
    """Open a text file, decompressing `.gz` on the fly.

    `newline` is `open`'s: None splits lines on "\\n", "\\r\\n" and a lone "\\r"; JSON lines
    need "\\n" (a lone "\\r" is whitespace inside a JSON line), CSV needs "".
    """
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", errors="replace", newline=newline)
    return path.open("r", encoding="utf-8", errors="replace", newline=newline)


def detect_format(path: Path) -> str:
    """Guess the corpus format from the file name and, for text files, the first line."""
    path = Path(path)
    name = path.name.removesuffix(".gz")
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    with open_text(path) as handle:
        for line in handle:
            if line.strip():
                return "wikiextractor" if _DOC_OPEN.match(line.strip()) else "txt"
    return "txt"


def iter_documents(path: Path | str, fmt: str | None = None) -> Iterator[Document]:
    """Stream the documents of a corpus file in any of FORMATS (guessed when `fmt` is None)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(
            f"Corpus file {str(path)!r} does not exist. Pass a .txt, .jsonl or WikiExtractor "
            "file (optionally .gz), e.g. ../shared/data/corpus/enwiki_slice.txt.gz."
        )
    fmt = fmt or detect_format(path)
    if fmt == "txt":
        yield from iter_txt(path)
    elif fmt == "jsonl":
        yield from iter_jsonl(path)
    elif fmt == "wikiextractor":
        yield from iter_wikiextractor(path)
    else:
        raise ValueError(f"Unknown corpus format {fmt!r}. Valid: {', '.join(FORMATS)}.")


def iter_txt(path: Path) -> Iterator[Document]:
    """Plain text: documents are separated by one or more blank lines (the BERT corpus layout)."""
    lines: list[str] = []
    count = 0
    with open_text(path) as handle:
        for line in handle:
            stripped = line.strip()
            if stripped:
                lines.append(stripped)
            elif lines:
                yield Document(id=f"{path.name}:{count}", title="", text="\n".join(lines))
                count += 1
                lines = []
    if lines:
        yield Document(id=f"{path.name}:{count}", title="", text="\n".join(lines))


def iter_jsonl(path: Path) -> Iterator[Document]:
    """JSON lines with a `text` field and optional `id`/`_id` and `title` (Wikinews, BEIR corpora)."""
    with open_text(path, newline="\n") as handle:
        for line_number, record in iter_json_objects(handle, path):
            if not isinstance(record.get("text"), str):
                logger.warning("%s:%d: skipping record without a string 'text' field", path, line_number)
                continue
            doc_id = str(record.get("id", record.get("_id", line_number)))
            yield Document(id=doc_id, title=str(record.get("title") or ""), text=record["text"])


def iter_wikiextractor(path: Path) -> Iterator[Document]:
    """WikiExtractor output: `<doc id=.. url=.. title=..>` blocks whose first line repeats the title."""
    attrs: dict[str, str] | None = None
    body: list[str] = []
    start_line = 0
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            stripped = line.strip()
            opening = _DOC_OPEN.match(stripped)
            if opening:
                if attrs is not None:
                    logger.warning("%s:%d: <doc> opened at line %d was never closed; skipping it",
                                   path, line_number, start_line)
                attrs = dict(_ATTR.findall(opening.group("attrs")))
                body, start_line = [], line_number
            elif stripped == "</doc>":
                if attrs is None:
                    logger.warning("%s:%d: </doc> without an opening <doc>; ignoring it", path, line_number)
                    continue
                title = attrs.get("title", "")
                if body and body[0] == title:
                    body = body[1:]
                yield Document(id=attrs.get("id", str(start_line)), title=title, text="\n".join(body))
                attrs = None
            elif attrs is not None and stripped:
                body.append(stripped)
    if attrs is not None:
        logger.warning("%s:%d: <doc> opened at line %d was never closed; skipping it", path, start_line, start_line)


def split_sentences(text: str) -> list[str]:
    """Split on newlines, then on sentence-final punctuation; a heuristic good enough for NSP segments."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        paragraph = paragraph.strip()
        if paragraph:
            merged: list[str] = []
            for part in _SENTENCE_END.split(paragraph):
                if merged and _ABBREVIATION.search(merged[-1]):
                    merged[-1] = f"{merged[-1]} {part.strip()}"
                elif part.strip():
                    merged.append(part.strip())
            sentences.extend(merged)
    return sentences
