"""Documents in other formats than plain text: PDF, Word (.docx), OpenDocument (.odt/.odp),
PowerPoint (.pptx), RTF, HTML, EPUB, manual pages, GNU Info manuals, mail messages, Jupyter
notebooks and LaTeX sources.

A file's format is told by its content, as text is: a PDF by its `%PDF-` header wherever its
name says otherwise, an office file or e-book by the parts its ZIP container holds, RTF by its
`{\\rtf` opening, HTML by its name or its opening tag, a manual page by its roff title and
section lines, an Info manual by makeinfo's first line, a mail message by its header block, a
notebook by its name or its JSON's `nbformat`, LaTeX by its name; a workbook (.xlsx, .ods, .xls)
by its parts or its OLE workbook stream, read as tables by `indexer.sources.workbooks`.
`detect` decides for files that are not read as text; `extract` reads the others. Each reader returns
an `Extracted` (text, outline of pages and headings, title, warnings) or raises
`UnreadableDocument`.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from indexer.sources.formats.extracted import Extracted, UnreadableDocument
from indexer.sources.legacy_text import decode_legacy

PDF, DOCX, EPUB, HTML = "pdf", "docx", "epub", "html"
ODF, PPTX, RTF = "odf", "pptx", "rtf"
# Workbooks: their sheets' tables are read as records are (`indexer.sources.workbooks`), not by `extract`.
XLSX, ODS, XLS = "xlsx", "ods", "xls"
WORKBOOKS = (XLSX, ODS, XLS)
HTML_SUFFIXES = (".html", ".htm", ".xhtml")
_PDF_MAGIC = b"%PDF-"
_ZIP_MAGIC = b"PK\x03\x04"
_RTF_MAGIC = b"{\\rtf"
_HTML_START = re.compile(r"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
# OpenDocument text and presentations (and their templates) are read; the other kinds are refused.
_ODF_READ = ("application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.presentation")
_ODS = "application/vnd.oasis.opendocument.spreadsheet"  # and its template's, -template
_ODF_OTHER = ("application/vnd.oasis.opendocument.", "an OpenDocument drawing, chart, formula or other file that "
              "is not text, a presentation or a spreadsheet; save its content as .odt or PDF and index that")
_XLSX = "xl/workbook.xml"
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _zip_kind(path: Path) -> str:
    """DOCX, PPTX, ODF, EPUB, XLSX or ODS by the parts the container holds; anything else is
    refused, saying what it is."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            mimetype = archive.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        suffix = path.suffix.lower()
        what = {".docx": "Word file", ".epub": "EPUB", ".pptx": "PowerPoint file", ".odt": "OpenDocument file",
                ".odp": "OpenDocument file", ".xlsx": "Excel workbook",
                ".ods": "OpenDocument spreadsheet"}.get(suffix, "ZIP archive (or office file inside one)")
        raise UnreadableDocument(f"damaged or truncated {what} ({err}); download or save it again") from err
    if "word/document.xml" in names:
        return DOCX
    if "ppt/presentation.xml" in names:
        return PPTX
    if mimetype.startswith(_ODF_READ):
        return ODF
    if mimetype == "application/epub+zip" or "META-INF/container.xml" in names and any(
            n.endswith(".opf") for n in names):
        return EPUB
    if _XLSX in names:
        return XLSX
    if mimetype.startswith(_ODS):
        return ODS
    if mimetype.startswith(_ODF_OTHER[0]):
        raise UnreadableDocument(_ODF_OTHER[1])
    raise UnreadableDocument("a ZIP archive that is not a Word, PowerPoint or OpenDocument file or an e-book "
                             "(.epub); unpack it and index the folder it holds")


def is_container(head: bytes) -> bool:
    """Whether a file opening with `head` is a PDF, RTF, a ZIP container (Word, PowerPoint,
    OpenDocument, EPUB, a workbook) or an OLE file (perhaps an .xls): what `detect` reads, rather
    than text."""
    return head.startswith((_PDF_MAGIC, _ZIP_MAGIC, _RTF_MAGIC, _OLE_MAGIC))


def may_be_workbook(head: bytes) -> bool:
    """Whether a file opening with `head` may be a workbook (a ZIP container, or an OLE file that
    may hold an .xls): what `detect` must open to tell."""
    return head.startswith((_ZIP_MAGIC, _OLE_MAGIC))


def is_zip(head: bytes) -> bool:
    """Whether a file opening with `head` is a ZIP container (an office file, an e-book, a workbook)."""
    return head.startswith(_ZIP_MAGIC)


def detect(path: Path, head: bytes) -> str | None:
    """PDF, RTF, DOCX, PPTX, ODF, EPUB or a workbook (XLSX, ODS, XLS: `WORKBOOKS`) for a file
    whose first bytes are `head`, or None for any other file (text, perhaps HTML: see `is_html`;
    an OLE file that holds no workbook, which the text reader refuses, naming it). Raises
    `UnreadableDocument` for a ZIP that is none of these."""
    if head.startswith(_OLE_MAGIC):
        from indexer.sources.workbooks import is_xls

        return XLS if is_xls(path) else None
    if head.startswith(_PDF_MAGIC):
        return PDF
    if head.startswith(_RTF_MAGIC):
        return RTF
    if head.startswith(_ZIP_MAGIC):
        return _zip_kind(path)
    return None


def is_html(name: str, text: str) -> bool:
    """Whether a text file is HTML: by its name (.html, .htm, .xhtml), or by an opening
    `<!DOCTYPE html>` or `<html>` tag (a saved page without an extension)."""
    return name.lower().endswith(HTML_SUFFIXES) or _HTML_START.match(text[:4096]) is not None


def extract(path: Path, kind: str) -> Extracted:
    """The document in the file at `path`, read as `kind` (one of `detect`'s)."""
    if kind == PDF:
        from indexer.sources.formats.pdf import read_pdf
        return read_pdf(path)
    if kind == DOCX:
        from indexer.sources.formats.word import read_docx
        return read_docx(path)
    if kind == ODF:
        from indexer.sources.formats.opendocument import read_opendocument
        return read_opendocument(path)
    if kind == PPTX:
        from indexer.sources.formats.powerpoint import read_pptx
        return read_pptx(path)
    if kind == RTF:
        from indexer.sources.formats.rtf import read_rtf
        return read_rtf(path)
    if kind == EPUB:
        from indexer.sources.formats.epub import read_epub
        return read_epub(path)
    raise ValueError(f"unknown document format {kind!r}")


_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def decode_html(raw: bytes) -> str:
    """An HTML file's text: by its byte-order mark, else UTF-8, else the charset its <meta> tag
    declares, else the legacy encoding a text file would be read in (`legacy_text.decode_legacy`:
    Windows-1252 for a Western page, as browsers assume), else Windows-1252 with replacements."""
    for bom, encoding in ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        if raw.startswith(bom):
            return raw[len(bom):].decode(encoding, errors="replace")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    declared = _CHARSET.search(raw[:4096])
    if declared:
        try:
            return raw.decode(declared.group(1).decode("ascii"), errors="replace")
        except LookupError:
            pass
    legacy = decode_legacy(raw)
    return legacy[0] if legacy is not None else raw.decode("cp1252", errors="replace")


def extract_html(text: str) -> Extracted:
    from indexer.sources.formats.html_page import read_html
    return read_html(text)


def is_info(text: str) -> bool:
    """Whether a text file is a GNU Info manual (see `info.is_info`)."""
    from indexer.sources.formats.info import is_info as info
    return info(text)


def extract_info(text: str) -> Extracted:
    from indexer.sources.formats.info import read_info
    return read_info(text)


def is_email(text: str) -> bool:
    """Whether a text file is one mail message (see `mail.is_email`)."""
    from indexer.sources.formats.mail import is_email as mail
    return mail(text)


def extract_email(text: str) -> Extracted:
    from indexer.sources.formats.mail import read_email
    return read_email(text)


def mbox_messages(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """An mbox file's messages, read line by line: each (line of its "From " line, its text)
    (see `mail.mbox_messages`)."""
    from indexer.sources.formats.mail import mbox_messages as messages
    return messages(lines)


def is_notebook(name: str, text: str) -> bool:
    """Whether a text file is a Jupyter notebook (see `notebook.is_notebook`)."""
    from indexer.sources.formats.notebook import is_notebook as jupyter
    return jupyter(name, text)


def extract_notebook(text: str) -> Extracted:
    from indexer.sources.formats.notebook import read_notebook
    return read_notebook(text)


def is_latex(name: str) -> bool:
    """Whether a text file is LaTeX source (see `latex.is_latex`)."""
    from indexer.sources.formats.latex import is_latex as latex
    return latex(name)


def extract_latex(text: str) -> Extracted:
    from indexer.sources.formats.latex import read_latex
    return read_latex(text)


def is_manpage(text: str) -> bool:
    """Whether a text file is a manual page in roff (see `manpage.is_manpage`)."""
    from indexer.sources.formats.manpage import is_manpage as roff
    return roff(text)


def extract_manpage(text: str) -> Extracted:
    from indexer.sources.formats.manpage import read_manpage
    return read_manpage(text)


__all__ = ["DOCX", "EPUB", "HTML", "HTML_SUFFIXES", "ODF", "PDF", "PPTX", "RTF", "Extracted", "UnreadableDocument",
           "decode_html", "detect", "extract", "extract_email", "extract_html", "extract_info", "extract_manpage",
           "extract_latex", "extract_notebook", "is_email", "is_html", "is_info", "is_latex", "is_manpage",
           "is_notebook", "mbox_messages"]
