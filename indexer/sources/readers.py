"""Turn a source path into documents: a folder of files, .jsonl, .csv, or a BEIR corpus.

Files are read by content, not by extension: a PDF or RTF file by its header, and a Word,
PowerPoint or OpenDocument file or an e-book by what its ZIP container holds, whatever their
names (`indexer.sources.formats`); HTML by its name or its opening tag; a manual page, an Info
manual or a mail message by how its text opens; and a README, `.rst`, `.log` or a file without
an extension is one document when its bytes decode as text (binary is told by NUL bytes, as
`_decode` does). A gzip-compressed file is read as what it holds (`notes.txt.gz`,
`corpus.jsonl.gz`, `manual.pdf.gz`). `.jsonl` and `.csv` are read as records, one document
each (a CSV as a table: `tables`), a workbook (.xlsx, .ods, .xls) as its sheets' tables
(`workbooks`), and an mbox file (a mail folder or archive) as its messages, one document each,
read as they come. Each whole-file document keeps its outline (pages, headings: `indexer.sources.outline`),
from which every passage is located.

Bad records never stop a build by default: each is reported through `on_issue`
with its file and line and skipped. The caller decides whether an issue is fatal
(`--strict`).
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import io
import itertools
import json
import logging
import math
import os
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from indexer.layout import MANIFEST, SQLITE_FILE, VECTOR_PREFIX, VECTOR_SUFFIX
from indexer.sources import formats, generated, json_records, tables, workbooks
from indexer.sources.documents import (
    DEFAULT_MAX_DOCUMENT_CHARS,
    INVISIBLE,
    Document,
    InputIssue,
    document_too_long,
    has_visible_text,
    one_line,
    path_problem,
    validate_document,
)
from indexer.sources.formats import Extracted, UnreadableDocument
from indexer.sources.front_matter import split_front_matter
from indexer.sources.json_records import json_kind
from indexer.sources.legacy_text import decode_legacy
from indexer.sources.outline import outline_of_text
from indexer.sources.records import record_documents
from indexer.sources.tables import CSV_TEXT_COLUMN

logger = logging.getLogger(__name__)

RECORD_SUFFIXES = (".jsonl", ".csv")
JSON_SUFFIX = ".json"  # an export of records (`json_records`) is told by its content; this is its usual name
MARKDOWN_SUFFIXES = (".md", ".markdown", ".rmd", ".qmd")  # R Markdown and Quarto: Markdown with code chunks
# Suffixes that only say "text": the title drops them ("notes.txt" -> "notes"); any other
# name is kept whole as the title ("README.Debian", "MPL-1.1").
PLAIN_TEXT_SUFFIXES = (".txt", ".text", ".rst", *MARKDOWN_SUFFIXES)
GZIP_SUFFIX = ".gz"
_GZIP_MAGIC = b"\x1f\x8b"
# Generous for UTF-8 text: a decompressed file larger than this many bytes per allowed
# character cannot hold an acceptable document, so it is refused before it fills memory.
_MAX_BYTES_PER_CHAR = 4
# A PDF, Word file or e-book compressed with gzip (Debian ships manuals so: bzip2's manual.pdf.gz)
# is unpacked into a temporary file of at most this many bytes (a gzip bomb never fills the disk).
_MAX_UNPACKED_BYTES = 1 << 30
# A JSON export of records (`json_records`) is read whole up to this size, records and all: each
# record is then a document under the size limit. Most APIs export in pages well under it.
_MAX_RECORDS_BYTES = 512 * 2**20
_SNIFF_BYTES = 8192
_MAIL_HEAD_BYTES = 65536
# The csv module refuses fields over 128 KiB by default; a document's size is limited
# by `max_document_chars` instead, with a message that says how to raise it.
_CSV_FIELD_LIMIT = 2**31 - 1

# UTF-32 first: its little-endian BOM begins with UTF-16's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16"),
)

# Formats that are not read, told by their first bytes, each with what to do instead. PostScript
# is printable, but its words are drawing operators: Debian ships manuals as manual.ps.gz beside
# manual.pdf.gz (EPS figures open the same way), and TeX's DVI output as refcard.dvi.gz.
# Microsoft's binary Office formats before 2007 and password-protected .docx/.pptx/.xlsx files are
# OLE compound files; of them, an Excel 97-2003 workbook (.xls) is told apart before
# (`formats.detect`) and read, as RTF is.
_UNREAD_SIGNATURES = (
    (b"%!PS", "a PostScript file (the program that draws its pages, not their text); convert it to PDF "
              "(ps2pdf FILE) and index the PDF"),
    (b"\xf7\x02", "a DVI file (TeX's typeset pages, not text); convert it to PDF (dvipdf FILE) and index the PDF"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an older Word or PowerPoint file (.doc, .ppt: Microsoft's formats "
     "before 2007) or a password-protected Office file, which is not read; save it as .docx, .pptx, .xlsx or PDF, "
     "without a password, and index that"),
)
# Formats whose first bytes may all be printable, so the NUL test alone could miss them.
_BINARY_SIGNATURES = (
    (b"%PDF-", "a PDF"),
    (b"PK\x03\x04", "a ZIP archive, or a .docx/.xlsx/.odt inside one"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "an executable"),
)

IssueHandler = Callable[[InputIssue], None]

_EMPTY = "empty document"


def _log_issue(issue: InputIssue) -> None:
    logger.warning("%s %s", "indexed, but" if issue.partial else "skipped", issue)


def _looks_like_utf16(head: bytes) -> bool:
    """NUL bytes in nearly every other position: ASCII-range text saved as UTF-16 without a BOM."""
    even, odd = head[0::2], head[1::2]
    if not even or not odd:
        return False
    even_nul, odd_nul = even.count(0) / len(even), odd.count(0) / len(odd)
    return max(even_nul, odd_nul) >= 0.5 and min(even_nul, odd_nul) <= 0.05


def _without_texinfo_marks(head: bytes) -> bytes:
    """`head` less the markers makeinfo writes into Info manuals (`\\0\\b[index\\0\\b]`): the
    only NUL bytes of a text file that is still text (`formats.info` drops them)."""
    return head.replace(b"\x00\x08[", b"").replace(b"\x00\x08]", b"")


def _decode(raw: bytes, on_issue: IssueHandler, label: str) -> str | None:
    """Text of a file in UTF-8, or UTF-16/UTF-32 with a byte-order mark."""
    kind = next((kind for magic, kind in _BINARY_SIGNATURES if raw.startswith(magic)), None)
    if kind is not None:
        on_issue(InputIssue(label, None, f"binary file ({kind}); only text is indexed: extract "
                            "its text to a .txt file first"))
        return None
    unread = next((problem for magic, problem in _UNREAD_SIGNATURES if raw.startswith(magic)), None)
    if unread is not None:
        on_issue(InputIssue(label, None, unread))
        return None
    bom, encoding, name = next(
        ((bom, enc, name) for bom, enc, name in _BOMS if raw.startswith(bom)), (b"", "utf-8", "UTF-8")
    )
    if not bom and b"\x00" in _without_texinfo_marks(raw[:_SNIFF_BYTES]):
        problem = "binary file (it holds NUL bytes); only text is indexed"
        if _looks_like_utf16(raw[:_SNIFF_BYTES]):
            problem += "; if this is UTF-16, re-save as UTF-8"
        on_issue(InputIssue(label, None, problem))
        return None
    body = memoryview(raw)[len(bom) :]
    try:
        return codecs.decode(body, encoding)
    except UnicodeDecodeError as err:
        line = codecs.decode(body[: err.start], encoding, errors="replace").count("\n") + 1
        where = f"byte {len(bom) + err.start}"
        legacy = None if bom else decode_legacy(raw)
        if legacy is None:
            on_issue(InputIssue(label, line, f"invalid {name} at {where}; re-save the file as UTF-8"))
            return None
        text, legacy_name = legacy
        on_issue(InputIssue(label, line, f"not UTF-8 (at {where}); read as {legacy_name}: if its accented "
                            "letters look wrong, re-save the file as UTF-8", partial=True))
        return text


def _damaged_gzip(label: str, err: Exception) -> InputIssue:
    return InputIssue(label, None, f"damaged gzip file ({err}); re-compress it or index it uncompressed")


def _gunzip(raw: bytes, label: str, on_issue: IssueHandler, limit: int | None) -> bytes | None:
    """The bytes a gzip file holds, refused past `limit` bytes (a gzip bomb never fills memory)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            data = fh.read(-1 if limit is None else limit + 1)
    except (OSError, EOFError, zlib.error) as err:
        on_issue(_damaged_gzip(label, err))
        return None
    if limit is not None and len(data) > limit:
        on_issue(InputIssue(label, None, f"gzip file holds more than {limit:,} bytes, more than a "
                            "document may hold; split it or raise --max-document-chars"))
        return None
    return data


def _read_text(path: Path, label: str, on_issue: IssueHandler, limit: int | None = None,
               html: bool = False) -> str | None:
    """The text of a file, decompressed first when it is gzip (by its magic bytes, not its name).
    `html`: a page not in UTF-8 is decoded by the charset it declares (`formats.decode_html`)."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        on_issue(InputIssue(label, None, f"unreadable ({err.strerror or err})"))
        return None
    if raw.startswith(_GZIP_MAGIC):
        unpacked = _gunzip(raw, label, on_issue, limit)
        if unpacked is None:
            return None
        raw = unpacked
    if html:
        return formats.decode_html(raw)
    if formats.is_email(raw[:_MAIL_HEAD_BYTES].decode("latin-1")):
        # Mail declares the charset of each part; `formats.extract_email` decodes them so, as
        # the email package reads bytes: ASCII, other bytes kept as surrogate escapes till then.
        return raw.decode("ascii", errors="surrogateescape")
    return _decode(raw, on_issue, label)


def content_name(path: Path) -> str:
    """The file's name without a trailing `.gz`: what the file holds ("notes.md.gz" -> "notes.md")."""
    name = path.name
    return name[: -len(GZIP_SUFFIX)] if name.lower().endswith(GZIP_SUFFIX) and len(name) > 3 else name


def _lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) split on "\\n" only, a trailing "\\r" dropped.

    `str.splitlines` also splits on U+2028, U+0085, \\x1c and others, which may stand
    unescaped inside a valid JSON string; it would also copy the whole text at once.
    """
    start, line_no = 0, 1
    while start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start:end]
        yield line_no, line[:-1] if line.endswith("\r") else line
        start, line_no = end + 1, line_no + 1


def _title_from_text(text: str, fallback: str) -> str:
    """A Markdown file's first heading, else the file name."""
    for line_no, line in _lines(text):
        if line_no > 20:
            break
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip() or fallback
    return fallback


def _rst_title(text: str, fallback: str) -> str:
    """A reStructuredText file's first title: a line underlined (and perhaps overlined) by = - ~ etc."""
    previous = ""
    for line_no, line in _lines(text):
        if line_no > 30:
            break
        stripped = line.strip()
        underline = len(stripped) >= 3 and len(set(stripped)) == 1 and stripped[0] in "=-~^*#+"
        if underline and previous and len(stripped) >= len(previous):
            return previous
        previous = "" if underline else stripped
    return fallback


def file_title(name: str, folder: str = "") -> str:
    """A file's title when the document names none: its name less a plain-text suffix
    ("notes.txt" -> "notes", "README.Debian" stays) after its parent folder within the source
    ("pkg/README"), since three hits titled "README" in a row tell a reader nothing."""
    suffix = Path(name).suffix.lower()
    base = Path(name).stem if suffix in PLAIN_TEXT_SUFFIXES else name
    parent = folder.rstrip("/").rsplit("/", 1)[-1] if folder else ""
    return one_line(f"{parent}/{base}" if parent else base) or "untitled"


def text_title(name: str, text: str, folder: str = "") -> str:
    """The title of a text document named `name` (without `.gz`) in `folder` (its parent within the
    source): a Markdown or reST heading, else `file_title`."""
    suffix = Path(name).suffix.lower()
    heading = ""
    if suffix in MARKDOWN_SUFFIXES:
        heading = _title_from_text(text, "")
    elif suffix == ".rst":
        heading = _rst_title(text, "")
    return one_line(heading) or file_title(name, folder)


def _folder_of(label: str) -> str:
    return label.rsplit("/", 1)[0] if "/" in label else ""


def _file_document(path: Path, label: str, extracted: Extracted, on_issue: IssueHandler) -> Document:
    """The one document of a whole file; each warning of its reading is reported as it is indexed."""
    for warning in extracted.warnings:
        on_issue(InputIssue(label, None, warning, doc_id=label, partial=True))
    title = one_line(extracted.title) or file_title(content_name(path), _folder_of(label))
    return Document(doc_id=label, title=title, text=extracted.text, source=label,
                    outline=extracted.outline)


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(8)
    except OSError:
        return b""  # reading it whole reports why


def read_formatted_file(path: Path, label: str, on_issue: IssueHandler, kind: str,
                        content: Path | None = None) -> Iterator[Document]:
    """The document of a PDF, office file, RTF or e-book (`formats.detect`'s `kind`); `content` is
    the file read when it is not `path` itself (what a gzip file at `path` held)."""
    try:
        extracted = formats.extract(content or path, kind)
    except UnreadableDocument as err:
        on_issue(InputIssue(label, None, str(err)))
        return
    except OSError as err:
        on_issue(InputIssue(label, None, f"unreadable ({err.strerror or err})"))
        return
    yield _file_document(path, label, extracted, on_issue)


def read_file(
    path: Path,
    label: str,
    on_issue: IssueHandler,
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS,
    csv_columns: tuple[str, str, str] = ("id", "title", CSV_TEXT_COLUMN),
) -> Iterator[Document]:
    """The documents of a file that is not a `.jsonl` or `.csv` file: one of a PDF, Word,
    PowerPoint, OpenDocument, RTF, EPUB, HTML or text file, each also gzip-compressed; a
    workbook's rows (`workbooks`: its sheets' tables, read as a CSV's by `csv_columns`, the id,
    title and text columns)."""
    head = _head(path)
    if head.startswith(_GZIP_MAGIC) and formats.is_container(_gzip_head(path)):
        yield from _read_packed_container(path, label, on_issue, csv_columns)
        return
    try:
        kind = formats.detect(path, head)
    except UnreadableDocument as err:
        on_issue(InputIssue(label, None, str(err)))
        return
    if kind in formats.WORKBOOKS:
        yield from workbooks.read_workbook(path, label, on_issue, kind, *csv_columns)
    elif kind is not None:
        yield from read_formatted_file(path, label, on_issue, kind)
    else:
        yield from read_text_file(path, label, on_issue, max_document_chars)


def _gzip_head(path: Path) -> bytes:
    try:
        with gzip.open(path, "rb") as fh:
            return fh.read(8)
    except (OSError, EOFError, zlib.error):
        return b""  # reading it as text reports the damage


def _read_packed_container(path: Path, label: str, on_issue: IssueHandler,
                           csv_columns: tuple[str, str, str]) -> Iterator[Document]:
    """The documents of a gzip-compressed PDF, office file, RTF, e-book or workbook
    (`manual.pdf.gz`), unpacked into a temporary file that is gone when this returns."""
    with tempfile.TemporaryDirectory(prefix="semsearch-unpacked-") as folder:
        unpacked = Path(folder) / (content_name(path) or "unpacked")
        try:
            with gzip.open(path, "rb") as packed, unpacked.open("wb") as out:
                size = 0
                while size <= _MAX_UNPACKED_BYTES and (block := packed.read(1 << 20)):
                    out.write(block)
                    size += len(block)
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            on_issue(_damaged_gzip(label, err))
            return
        except OSError as err:
            on_issue(InputIssue(label, None, f"unreadable ({err.strerror or err})"))
            return
        if size > _MAX_UNPACKED_BYTES:
            on_issue(InputIssue(label, None, f"gzip file holds more than {_MAX_UNPACKED_BYTES:,} bytes; "
                                "unpack it and index what it holds"))
            return
        try:
            kind = formats.detect(unpacked, _head(unpacked))
        except UnreadableDocument as err:
            on_issue(InputIssue(label, None, str(err)))
            return
        # None for text: an OLE file that is no workbook (refused, named), or a file changed since its
        # head was read.
        documents = list(workbooks.read_workbook(unpacked, label, on_issue, kind, *csv_columns)
                         if kind in formats.WORKBOOKS
                         else read_formatted_file(path, label, on_issue, kind, content=unpacked) if kind
                         else read_text_file(path, label, on_issue))
    yield from documents


def read_text_file(
    path: Path,
    label: str,
    on_issue: IssueHandler,
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS,
) -> Iterator[Document]:
    """A text file's document; HTML (by name or opening tag) is read for its main content, a
    Jupyter notebook as its cells in Markdown, LaTeX as its document's body, Markdown's YAML front
    matter as the title and metadata, a manual page (roff) as groff typesets it, a GNU
    Info manual node by node, and a mail message as its sender, date and body; an mbox file of
    several messages, a document a message."""
    messages = _mbox_documents(path, label, on_issue, max_document_chars)
    if messages is not None:  # read as it comes: an archive may be larger than a document may be
        yield from messages
        return
    records = _opens_as_json(path)  # perhaps an export of records, each under the limit on its own
    if max_document_chars is not None and not records:
        # No encoding read here takes more than 4 bytes a character (plus a BOM), so a
        # larger file is refused without reading it into memory.
        try:
            size = path.stat().st_size
        except OSError:
            size = 0  # reading it reports why it is unreadable
        if size > _MAX_BYTES_PER_CHAR * max_document_chars + 4:
            size_text = f"{size:,} bytes (at least {(size - 4) // 4:,} characters)"
            on_issue(InputIssue(label, None, document_too_long(size_text, max_document_chars)))
            return
    limit = None if max_document_chars is None else _MAX_BYTES_PER_CHAR * max_document_chars + 4
    name = content_name(path)
    if records:
        limit = _MAX_RECORDS_BYTES if limit is None else max(limit, _MAX_RECORDS_BYTES)
    text = _read_text(path, label, on_issue, limit, html=name.lower().endswith(formats.HTML_SUFFIXES))
    if text is None:
        return
    if records and not formats.is_notebook(name, text):
        try:
            yield from record_documents(label, json_records.records(text), on_issue)
            return
        except json_records.NotRecords:
            pass  # a JSON document of another kind (a configuration, a schema): read as text
        if max_document_chars is not None and len(text) > max_document_chars:
            on_issue(InputIssue(label, None, document_too_long(f"{len(text):,} characters", max_document_chars)))
            return
    if not has_visible_text(text):
        on_issue(InputIssue(label, None, _EMPTY if not text.strip() else INVISIBLE, doc_id=label))
        return
    html = formats.is_html(name, text)
    left_out = None if html else generated.minified_note(name, text) or generated.markup_only_note(text)
    if left_out is not None:
        on_issue(InputIssue(label, None, left_out, doc_id=label, retains_stored=False))
        return
    reader = formats.extract_html if html else \
        formats.extract_notebook if formats.is_notebook(name, text) else \
        formats.extract_latex if formats.is_latex(name) else \
        formats.extract_manpage if formats.is_manpage(text) else \
        formats.extract_info if formats.is_info(text) else \
        formats.extract_email if formats.is_email(text) else None
    if reader is not None:
        try:
            extracted = reader(text)
        except UnreadableDocument as err:
            on_issue(InputIssue(label, None, str(err)))
            return
        yield _file_document(path, label, extracted, on_issue)
        return
    front = split_front_matter(text) if Path(name).suffix.lower() in MARKDOWN_SUFFIXES else None
    if front is not None:  # the block's fields are metadata, its title the title (front_matter.py)
        fields, text = front
        if not has_visible_text(text):
            on_issue(InputIssue(label, None, _EMPTY + " (front matter only)", doc_id=label))
            return
        title = fields.pop("title", None)
        title = one_line(title) if isinstance(title, str) else ""
        yield Document(doc_id=label, title=title or text_title(name, text, _folder_of(label)), text=text,
                       source=label, metadata=fields, outline=outline_of_text(name, text))
        return
    yield Document(doc_id=label, title=text_title(name, text, _folder_of(label)), text=text, source=label,
                   outline=outline_of_text(name, text))


def _opens_as_json(path: Path) -> bool:
    """Whether a file (gzip too) opens as a JSON array or object, and so may be an export of
    records; one over `_MAX_RECORDS_BYTES` is read as any text file is."""
    head = _unpacked_head(path, 64)
    if head.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n")[:1] not in (b"[", b"{"):
        return False
    try:
        return path.stat().st_size <= _MAX_RECORDS_BYTES
    except OSError:
        return False


def _mbox_documents(path: Path, label: str, on_issue: IssueHandler,
                    max_document_chars: int | None) -> Iterator[Document] | None:
    """The messages of an mbox file (`formats.mbox_messages`), read line by line, as documents;
    None for a file that is not an mbox of two messages or more (one saved message is read whole,
    as any mail)."""
    if not opens_as_mbox(path):  # every text file comes here: most stop at 5 bytes
        return None
    if not formats.is_email(_unpacked_head(path, _MAIL_HEAD_BYTES).decode("latin-1")):
        return None
    messages = formats.mbox_messages(_raw_lines(path))
    try:
        first = list(itertools.islice(messages, 2))
    except (OSError, EOFError, zlib.error):
        return None  # read whole, which names the damage
    if len(first) < 2:
        return None
    return _message_documents(label, itertools.chain(first, messages), on_issue, max_document_chars)


def _message_documents(label: str, messages: Iterator[tuple[int, str]], on_issue: IssueHandler,
                       max_document_chars: int | None) -> Iterator[Document]:
    """Each message as a document, named by the line of its "From " line as a record without an id
    is (`FILE#L12`): messages appended later leave the earlier names as they were. A message that
    cannot be read, or is over the size limit, is skipped and named; the others are read."""
    try:
        for line, message in messages:
            doc_id = f"{label}#L{line}"
            try:
                extracted = formats.extract_email(message)
            except UnreadableDocument as err:
                on_issue(InputIssue(label, line, str(err), doc_id=doc_id))
                continue
            if max_document_chars is not None and len(extracted.text) > max_document_chars:  # attachments unread
                on_issue(InputIssue(label, line, document_too_long(f"{len(extracted.text):,} characters",
                                                                   max_document_chars), doc_id=doc_id))
                continue
            for warning in extracted.warnings:
                on_issue(InputIssue(label, line, warning, doc_id=doc_id, partial=True))
            yield Document(doc_id=doc_id, title=one_line(extracted.title) or f"Message at line {line:,}",
                           text=extracted.text, source=label, line=line, outline=extracted.outline)
    except (OSError, EOFError, zlib.error) as err:  # a truncated .gz: the messages before it stand
        on_issue(_damaged_gzip(label, err))


def mbox_message_line(doc_id: str, source: str) -> int | None:
    """The line of an mbox message's "From " line, for a document named as `_message_documents`
    names one (`FILE#L<line>`, FILE not a record file or a JSON export); None for any other document."""
    number = doc_id.removeprefix(f"{source}#L")
    records = Path(content_name(Path(source))).suffix.lower() in (*RECORD_SUFFIXES, JSON_SUFFIX)
    return None if number == doc_id or not number.isdigit() or records else int(number)


def mbox_message(path: Path, line: int) -> bytes | None:
    """The message whose "From " line is at `line` of the mbox file at `path` (gzip too), as a saved
    message (`.eml`) holds it: its header and body, byte for byte, without the "From " line and with
    the body's ">From " quoting undone. None when the file holds no message there (it changed since
    it was indexed) or cannot be read. The file is read up to that message, line by line."""
    if not opens_as_mbox(path):
        return None
    try:
        for start, message in formats.mbox_messages(_raw_lines(path)):
            if start >= line:
                return message.encode("ascii", errors="surrogateescape") + b"\n" if start == line else None
    except (OSError, EOFError, zlib.error):
        return None
    return None


def opens_as_mbox(path: Path) -> bool:
    """Whether a file (gzip too) opens as an mbox does, with a "From " line: five bytes read."""
    return _unpacked_head(path, 5) == b"From "


def _unpacked_head(path: Path, size: int) -> bytes:
    """The first `size` bytes a file holds (a gzip file's unpacked); b"" when unreadable."""
    try:
        with _open_unpacked(path) as fh:
            return fh.read(size)
    except (OSError, EOFError, zlib.error):
        return b""


def _open_unpacked(path: Path) -> BinaryIO:
    """The file for reading its bytes: what it holds, when it is gzip (by its magic bytes)."""
    with path.open("rb") as raw:
        packed = raw.read(2) == _GZIP_MAGIC
    return cast(BinaryIO, gzip.open(path, "rb")) if packed else path.open("rb")


def _raw_lines(path: Path) -> Iterator[str]:
    """A file's lines without their "\\n", one at a time, its bytes kept as mail reads them (ASCII,
    other bytes as surrogate escapes: each part is decoded in the charset it declares)."""
    with _open_unpacked(path) as fh:
        for line in fh:
            yield line.decode("ascii", errors="surrogateescape").removesuffix("\n")


def _record_id(row: dict[str, Any], label: str, line_no: int) -> tuple[str | None, str | None]:
    """(id, None) for a usable id, else (None, problem); a record without one is named by its line.

    Only strings and integers are ids: `str()` of true, 1.5 or a list would silently make
    an id ("True", "1.5", "['a']") that the user never wrote.
    """
    key = "id" if "id" in row else "_id" if "_id" in row else None
    if key is None:
        return f"{label}#L{line_no}", None
    raw = row[key]
    if isinstance(raw, str):
        return raw, None
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw), None
    shown = json.dumps(raw)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    example = shown if isinstance(raw, bool | float) else "doc-1"
    return None, (
        f"'{key}' is {json_kind(raw)} ({shown}); an id must be a string or an integer: "
        f'write it as a string, e.g. "{key}": "{example}", or leave \'{key}\' out to name '
        "the record by its line"
    )


# A plain UTF-8 file is checked in pieces of this many bytes before its lines are read.
_CHECK_BYTES = 16 * 2**20


def _text_lines(path: Path, label: str, on_issue: IssueHandler) -> Iterator[tuple[int, str]] | None:
    """A text file's lines as `_lines` splits them, or None when it cannot be read (said through
    `on_issue`). A plain UTF-8 file (no gzip, no other byte-order mark, no NUL or binary signature
    at its start) is checked whole, a piece at a time, and then read a line at a time: a 700 MB
    .jsonl never sits in memory as one string (which takes up to four times its bytes). Any other
    file, or one that fails the check, is read whole by `_read_text`, which says what is wrong."""
    try:
        with path.open("rb") as file:
            head = file.read(_SNIFF_BYTES)
    except OSError as err:
        on_issue(InputIssue(label, None, f"unreadable ({err.strerror or err})"))
        return None
    plain = not head.startswith(_GZIP_MAGIC) and b"\x00" not in head and not any(
        head.startswith(magic) for magic, _ in _BINARY_SIGNATURES) and not any(
        head.startswith(bom) for bom, _, _ in _BOMS if bom != codecs.BOM_UTF8)
    if plain and _utf8_throughout(path):
        return _file_lines(path)
    text = _read_text(path, label, on_issue)
    return None if text is None else _lines(text)


def _utf8_throughout(path: Path) -> bool:
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with path.open("rb") as file:
            while piece := file.read(_CHECK_BYTES):
                decoder.decode(piece)
        decoder.decode(b"", final=True)
    except (OSError, UnicodeDecodeError):
        return False
    return True


def _file_lines(path: Path) -> Iterator[tuple[int, str]]:
    """`_lines` of a UTF-8 file (checked), read a line at a time; a UTF-8 byte-order mark dropped."""
    with path.open("rb") as file:
        line_no = 0
        for line_no, raw in enumerate(file, start=1):  # noqa: B007 -- the count is used after the loop
            if line_no == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            line = raw.decode("utf-8")
            line = line[:-1] if line.endswith("\n") else line
            yield line_no, line[:-1] if line.endswith("\r") else line
        if line_no == 0 or raw.endswith(b"\n"):
            yield line_no + 1, ""  # as `_lines` ends: the empty text after the last newline


def read_jsonl_file(path: Path, label: str, on_issue: IssueHandler) -> Iterator[Document]:
    """Lines of {id, title, text, ...}; BEIR's `_id` works as the id, other fields become metadata.
    A line without a `text` field is read as a record of a JSON export is (`json_records.record_of`:
    its prose as text, its title, its other fields as metadata by dotted path), with the same id."""
    lines = _text_lines(path, label, on_issue)
    if lines is None:
        return
    for line_no, line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            on_issue(InputIssue(label, line_no, f"malformed JSON ({err.msg})"))
            continue
        except (ValueError, RecursionError) as err:  # a 5,000-digit number, or nesting too deep
            on_issue(InputIssue(label, line_no, f"malformed JSON ({err})"))
            continue
        if not isinstance(row, dict):
            on_issue(InputIssue(label, line_no, "a JSON line must be an object with a 'text' field"))
            continue
        body = row.get("text")
        if body is not None and not isinstance(body, str):
            on_issue(
                InputIssue(label, line_no, f"'text' is {json_kind(body)}; it must be a string")
            )
            continue
        doc_id, problem = _record_id(row, label, line_no)
        if "text" not in row:  # a line of an export (`jq -c '.[]' tickets.json`): read as its records are
            record = json_records.record_of(row, line_no, id_fields=("id", "_id"))
            if doc_id is not None and has_visible_text(record.text):  # a ticket of a title alone too
                yield Document(doc_id=doc_id, title=record.title, text=record.text, source=label,
                               metadata=record.metadata, line=line_no, outline=record.outline)
                continue
        if not body or not has_visible_text(body):
            blank = "empty document (no 'text' field or it is blank)" if not body or not body.strip() \
                else INVISIBLE
            if "text" not in row:
                blank = ("empty document: no 'text' field, and no title or field of prose (body, description, "
                         "content, ..., or a string of four words or more)")
            on_issue(InputIssue(label, line_no, blank, doc_id=doc_id))
            continue
        if doc_id is None:
            on_issue(InputIssue(label, line_no, problem or "unusable id"))
            continue
        title = row.get("title")
        if title is not None and (isinstance(title, bool) or not isinstance(title, str | int | float)):
            on_issue(InputIssue(label, line_no, f"'title' is {json_kind(title)}; it must be a string",
                                doc_id=doc_id))
            continue
        title = "" if title is None else str(title)
        metadata = {k: v for k, v in row.items() if k not in ("id", "_id", "title", "text")}
        nested = metadata.pop("metadata", None)
        if isinstance(nested, dict):
            metadata.update(nested)
        yield Document(
            doc_id=doc_id, title=title, text=body, source=label, metadata=metadata, line=line_no
        )


_DELIMITERS = {",": "comma", "\t": "tab", ";": "semicolon"}


def csv_delimiter(text: str) -> str:
    """The CSV's field separator, told by its header line: the commonest of comma, tab and
    semicolon there (comma on a tie or when there is none), so a tab-separated file saved as
    .csv is read by its columns instead of as one column named by its whole header."""
    end = text.find("\n")
    header = text[: end if end >= 0 else len(text)]
    counts = {sep: header.count(sep) for sep in _DELIMITERS}
    best = max(counts, key=lambda sep: (counts[sep], sep == ","))
    return best if counts[best] else ","


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def csv_lines(text: str) -> Iterator[str]:
    """The lines of `text` with their endings untouched, one at a time, as the csv module needs
    them (so a quoted field spanning lines keeps its line breaks): split where
    `io.StringIO(text, newline="")` splits, without its copy of the text at four bytes a character
    (a 240 MB export held 1 GB more that way)."""
    return (match.group() for match in _LINE.finditer(text))


def read_csv_file(
    path: Path,
    label: str,
    on_issue: IssueHandler,
    id_column: str = "id",
    title_column: str = "title",
    text_column: str = CSV_TEXT_COLUMN,
) -> Iterator[Document]:
    """Rows under a header line, read as a table (`tables.read_table`: by the text column, else a
    record a row when its rows hold prose); a quoted field keeps its newlines, and an issue names
    the line where its record starts. A CSV read neither way is refused, naming its columns."""
    text = _read_text(path, label, on_issue)
    if text is None:
        return
    csv.field_size_limit(max(csv.field_size_limit(), _CSV_FIELD_LIMIT))
    delimiter = csv_delimiter(text)
    try:
        columns = next(csv.reader(csv_lines(text), delimiter=delimiter), [])
    except csv.Error as err:
        on_issue(InputIssue(label, 1, f"malformed CSV header ({err})"))
        return

    def rows(report: IssueHandler) -> Iterator[tuple[int, list[str]]]:
        reader = csv.reader(csv_lines(text), delimiter=delimiter)
        next(reader, None)  # the header, read already
        return _csv_rows(reader, columns, label, report)

    read = tables.read_table(tables.Table(columns, rows), label, on_issue, id_column, title_column, text_column)
    if not isinstance(read, str):
        yield from read
        return
    optional = " and ".join(f"'{c}'" for c in (id_column, title_column))
    on_issue(
        InputIssue(
            label,
            1,
            f"missing CSV column '{text_column}' (columns, {_DELIMITERS[delimiter]}-separated: "
            f"{', '.join(columns) or 'none'}){read}; "
            f"the first row must name the columns, one of them '{text_column}' for the text "
            f"(and optionally {optional})",
            cli_hint="or map your columns with --csv-text/--csv-title/--csv-id",
        )
    )


def _csv_rows(reader: Any, columns: list[str], label: str, on_issue: IssueHandler) -> Iterator[tuple[int, list[str]]]:
    """(the line where it starts, its fields) of each non-empty row after the header; a row with
    more filled fields than the header is reported and skipped, and a malformed one ends the file."""
    last_line = reader.line_num
    while True:
        row_no = last_line + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            on_issue(InputIssue(label, row_no, f"malformed CSV ({err}); the rest of the file is skipped"))
            return
        last_line = reader.line_num
        if not values:
            continue
        if len(values) > len(columns) and any(v.strip() for v in values[len(columns) :]):
            on_issue(
                InputIssue(
                    label,
                    row_no,
                    f"row has {len(values)} fields but the header has {len(columns)}; "
                    'put a field that holds commas in double quotes ("...")',
                )
            )
            continue
        yield row_no, values


def _is_beir_folder(folder: Path) -> bool:
    return (folder / "corpus.jsonl").is_file() and (folder / "queries.jsonl").is_file()


def _follow_symlink(link: Path, label: str, root_real: Path) -> tuple[Path | None, str | None]:
    """(the file a symlink stands for, None), or (None, why it is skipped) or (None, None)
    for a link to a folder inside the source, whose files are read where they lie."""
    try:
        target = Path(os.path.realpath(link, strict=True))
    except OSError as err:
        if err.errno == errno.ELOOP:
            return None, (
                f"symlink loop ({label} -> {os.readlink(link)} never reaches a file); "
                "fix or remove the link"
            )
        return None, f"broken symlink (its target {os.readlink(link)} does not exist); fix or remove the link"
    if target.is_dir() and Path(os.path.realpath(link.parent)).is_relative_to(target):
        return None, f"symlink loop ({label} -> {target}, a folder that holds the link); not followed"
    if not target.is_relative_to(root_real):
        what = "folder" if target.is_dir() else "file"
        fix = (
            "copy the file into the folder, or index its folder directly"
            if what == "file"
            else "copy the folder into the source, or index it directly"
        )
        return None, f"symlink to {target}, a {what} outside the source folder; not followed: {fix}"
    if target.is_dir():
        return None, None
    if not target.is_file():
        return None, f"symlink to {target}, which is not a regular file (a pipe, socket or device)"
    return target, None


def looks_like_index(folder: Path) -> bool:
    """Whether `folder` is a semsearch index folder: its manifest beside its store or vectors."""
    if not (folder / MANIFEST).is_file():
        return False
    return (folder / SQLITE_FILE).exists() or any(folder.glob(f"{VECTOR_PREFIX}*{VECTOR_SUFFIX}"))


def _beir_files(source: Path, on_issue: IssueHandler) -> list[Path]:
    """A BEIR folder's corpus.jsonl; any other file but its queries and qrels is named as ignored."""
    others = sorted(p.relative_to(source).as_posix() for p in source.rglob("*")
                    if p.is_file() and not p.name.startswith(".")
                    and p.name not in ("corpus.jsonl", "queries.jsonl")
                    and "qrels" not in p.relative_to(source).parts)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        on_issue(InputIssue(".", None, f"this is a BEIR folder (corpus.jsonl beside queries.jsonl), "
                            f"so only corpus.jsonl is indexed; {len(others)} other file(s) ignored: "
                            f"{shown}. Index them as a source of their own", retains_stored=False))
    return [source / "corpus.jsonl"]


def list_source_files(source: Path, on_issue: IssueHandler = _log_issue,
                      exclude: Path | None = None) -> list[Path]:
    """The files a source stands for; a BEIR folder stands for its corpus.jsonl only.

    A folder is walked without following links to folders (their files inside the source
    are read where they lie). A symlink that loops, is broken or leads outside the source is
    reported and skipped: indexing a file from elsewhere without saying so would surprise.
    A file reached by several paths (a symlink or a hard link to a file inside the source) is
    listed once, under the first of its paths that is not a symlink, and the others are named.
    Hidden files and folders (a name starting with "."; `.git`, `.venv`), `exclude` (the index
    being built) and any index folder are skipped; the source itself is read even when hidden.
    So are the source copies a Sphinx build keeps beside the pages it made from them
    (`_sources/`, named once per folder), and a LaTeX, Markdown or reST source beside the PDF or
    HTML made from it, not newer than it (named once), the index pages of a Sphinx build, and
    what web pages are drawn with: stylesheets, a page's pictures, the files of its asset folders
    (each named once): `indexer.sources.generated`.
    """
    source = Path(source)
    if not source.exists():
        raise FileNotFoundError(
            f"Source {source} does not exist. Pass a folder of documents (PDF, Word, HTML, Markdown, "
            "text and the other formats docs/indexing.md lists), one such file, a .jsonl, a .csv, or a "
            "BEIR folder holding corpus.jsonl."
        )
    if source.is_file():
        return [source]
    if _is_beir_folder(source):
        return _beir_files(source, on_issue)
    root_real = Path(os.path.realpath(source))
    excluded = Path(os.path.realpath(exclude)) if exclude is not None else None
    files: list[Path] = []
    folders = [source]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as err:
            label = folder.relative_to(source).as_posix()
            on_issue(InputIssue(label, None, f"unreadable folder ({err.strerror or err})"))
            continue
        for entry in entries:
            path = Path(entry.path)
            label = path.relative_to(source).as_posix()
            if entry.is_symlink():
                if entry.name.startswith("."):
                    continue
                target, problem = _follow_symlink(path, label, root_real)
                if problem:
                    on_issue(InputIssue(label, None, problem))
                if target is not None:
                    files.append(path)
            elif entry.is_dir(follow_symlinks=False):
                if entry.name.startswith("."):
                    continue  # .git, .venv, .cache: a tool's files, not the user's documents
                if Path(os.path.realpath(path)) == excluded or looks_like_index(path):
                    on_issue(InputIssue(label, None, "an index folder (the index being built, or "
                                        "another one); its files are not indexed",
                                        retains_stored=False))
                else:
                    folders.append(path)
            elif entry.name.startswith("."):
                continue
            elif entry.is_file(follow_symlinks=False):
                files.append(path)
            else:
                on_issue(InputIssue(label, None, "not a regular file (a pipe, socket or device)"))
    listed = _once_per_file(sorted(files), source, on_issue)
    return _without_sources_beside_documents(listed, source, on_issue)


def _without_sources_beside_documents(files: list[Path], source: Path, on_issue: IssueHandler) -> list[Path]:
    """`files` without the sources of documents beside them, Sphinx's copies included, Sphinx's
    index pages, module source pages and example downloads, and what web pages are drawn with
    (`indexer.sources.generated`)."""
    labels = {path.relative_to(source).as_posix(): path for path in files}
    left_out: set[str] = set()
    for folder, copies in generated.source_copies(labels).items():
        on_issue(InputIssue(folder, None, generated.source_copies_note(folder, copies),
                            retains_stored=False, files=tuple(copies)))
        left_out.update(copies)
    # Each rule with its warning; Sphinx's rules see every file (its inventory marks a build), what
    # pages are drawn with only the files no rule before it left out.
    rules: list[tuple[Callable[[], Any], Callable[[Any], str]]] = [
        (lambda: generated.sources_beside_documents(labels, lambda label: _mtime(labels[label])),
         generated.sources_beside_documents_note),
        (lambda: generated.sphinx_index_pages(labels), generated.sphinx_index_pages_note),
        (lambda: generated.sphinx_module_pages(labels), generated.sphinx_module_pages_note),
        (lambda: generated.sphinx_example_downloads(labels), generated.sphinx_example_downloads_note),
        (lambda: generated.page_assets(label for label in labels if label not in left_out),
         generated.page_assets_note),
    ]
    for find, note in rules:
        found = find()
        if found:
            on_issue(InputIssue(".", None, note(found), retains_stored=False, files=tuple(found)))
            left_out.update(found)
    return [path for label, path in labels.items() if label not in left_out]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return math.nan  # unknown: a pair with an unknown time is not told apart, so both are read


def _once_per_file(files: list[Path], source: Path, on_issue: IssueHandler) -> list[Path]:
    """`files` with each file once: the same file reached by several paths is one document."""
    by_file: dict[tuple[int, int], list[Path]] = {}
    for path in files:
        try:
            st = path.stat()
        except OSError:
            by_file[(-1, len(by_file))] = [path]  # reading it reports why
            continue
        by_file.setdefault((st.st_dev, st.st_ino), []).append(path)
    keep: set[Path] = set()
    for paths in by_file.values():
        first = min(paths, key=lambda p: (p.is_symlink(), p.as_posix()))
        keep.add(first)
        for other in paths:
            if other != first:
                on_issue(InputIssue(other.relative_to(source).as_posix(), None,
                                    f"the same file as {first.relative_to(source).as_posix()} (a "
                                    "link to it), which is indexed once, under that name",
                                    retains_stored=False))
    return [path for path in files if path in keep]


def read_labelled_file(
    path: Path,
    label: str,
    on_issue: IssueHandler = _log_issue,
    csv_columns: tuple[str, str, str] = ("id", "title", "text"),
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS,
) -> Iterator[Document]:
    """The documents of one file, read as a build of its source reads it: `label` is its path
    within the source (what documents of a text file take as their id), or its name."""
    suffix = Path(content_name(path)).suffix.lower()
    if suffix == ".jsonl":
        return read_jsonl_file(path, label, on_issue)
    if suffix == ".csv":
        return read_csv_file(path, label, on_issue, *csv_columns)
    return read_file(path, label, on_issue, max_document_chars, csv_columns)


def count_documents(source: Path, exclude: Path | None = None) -> int:
    """About how many documents `source` holds, without parsing any (a build's progress total over
    a source read in windows): a line per JSONL record, one per CSV line after the header (a
    quoted line break counts one more), one per "From " line after an empty line of an mbox
    (named `.mbox`, `.mbx` or without a suffix, as mail clients keep their folders), one per record
    of a JSON export (parsed: the JSON decoder's speed), one per row of an .xlsx's sheets, one per
    other file. Reads at the speed of the disk: about 8 s for 10M JSONL records."""
    total = 0
    for path in list_source_files(Path(source), lambda issue: None, exclude):
        suffix = Path(content_name(path)).suffix.lower()
        if suffix in _MBOX_SUFFIXES and opens_as_mbox(path):
            total += _count_separators(path)
            continue
        if suffix not in RECORD_SUFFIXES:
            total += _count_of_file(path)
            continue
        try:
            lines = _count_lines(path)
        except (OSError, EOFError, gzip.BadGzipFile):
            continue  # the read reports it
        total += max(0, lines - 1) if suffix == ".csv" else lines
    return total


def _count_of_file(path: Path) -> int:
    """A file's count other than a .jsonl's or .csv's: a JSON export's records, an .xlsx's rows
    (`workbooks.xlsx_rows`; an .ods or .xls counts one, its rows unknown until read), else one."""
    if _opens_as_json(path):
        return _count_json_records(path)
    head = _head(path)
    if formats.is_zip(head):  # an .xls (an OLE file) counts one: telling it opens its directory
        try:
            if formats.detect(path, head) == formats.XLSX:
                return workbooks.xlsx_rows(path)
        except UnreadableDocument:
            pass  # a ZIP of another kind: its read reports it
    return 1


def _count_json_records(path: Path) -> int:
    """How many records a JSON export holds (1 for any other JSON file): parsed, unlike the others."""
    text = _read_text(path, path.name, lambda issue: None, _MAX_RECORDS_BYTES)
    return 1 if text is None else json_records.count(text)


# The names an mbox goes by: Thunderbird's and mutt's folders have no suffix, archives `.mbox`.
_MBOX_SUFFIXES = frozenset({"", ".mbox", ".mbx"})


def _count_separators(path: Path) -> int:
    """About how many messages an mbox holds: its first line and each "From " line after an empty
    one (body lines that open so, unquoted, count too: an estimate)."""
    count, tail = 1, b""
    try:
        with _open_unpacked(path) as fh:
            while chunk := fh.read(1 << 20):
                seen = (tail + chunk).replace(b"\r\n", b"\n")
                count += seen.count(b"\n\nFrom ")
                tail = seen[-6:]  # a separator cut by the chunk's end is counted in the next
    except (OSError, EOFError, zlib.error):
        pass  # the read reports it
    return count


def _count_lines(path: Path) -> int:
    with _open_unpacked(path) as fh:
        count, last = 0, b"\n"
        while chunk := fh.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")  # a last line without its line break


def read_documents(
    source: Path,
    on_issue: IssueHandler = _log_issue,
    csv_columns: tuple[str, str, str] = ("id", "title", "text"),
    *,
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS,
    exclude: Path | None = None,
) -> Iterator[Document]:
    """Yield every usable document under `source`, reporting the rest through `on_issue`.

    `exclude` is a folder never read (the index being built, when it lies inside the source).
    Each document passes `validate_document` (the same rules on every database) and
    `max_document_chars` (None: no limit). Ids are unique within one read: the first
    occurrence wins, and a later one is skipped with an issue naming both places.
    """
    if max_document_chars is not None and max_document_chars < 1:
        raise ValueError(
            f"max_document_chars ({max_document_chars}) must be at least 1, or None for no limit."
        )
    source = Path(source)
    root = source if source.is_dir() else source.parent
    seen: dict[str, str] = {}
    for path in list_source_files(source, on_issue, exclude):
        label = path.relative_to(root).as_posix() if source.is_dir() else path.name
        suffix = Path(content_name(path)).suffix.lower()
        problem = path_problem(label, names_document=suffix not in RECORD_SUFFIXES)
        if problem:
            on_issue(InputIssue(label, None, problem))
            continue
        for doc in read_labelled_file(path, label, on_issue, csv_columns, max_document_chars):
            problem = validate_document(doc, max_document_chars)
            if problem:
                on_issue(InputIssue(label, doc.line, problem, doc_id=doc.doc_id))
                continue
            if doc.doc_id in seen:
                on_issue(
                    InputIssue(
                        label,
                        doc.line,
                        f"duplicate document id '{doc.doc_id}' (first seen at {seen[doc.doc_id]}); "
                        "kept the first",
                        doc_id=doc.doc_id,
                    )
                )
                continue
            seen[doc.doc_id] = doc.location
            yield doc
