"""RTF: the text among the formatting codes, as striprtf reads it.

striprtf follows the RTF specification's reader: font and colour tables, style sheets, pictures,
headers and footers and other ignorable destinations are left out; `\\'xx` bytes are decoded in
the code page the file declares (`\\ansicpg`, or a font's charset), and `\\uN` as Unicode. RTF
marks headings only by style names, which writers spell as they like, so an RTF document has no
outline; its title comes from its `\\info` group when it has one.
"""

from __future__ import annotations

import re
from pathlib import Path

from striprtf.striprtf import rtf_to_text

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text

_TITLE = re.compile(r"\{\\title\s*((?:[^{}\\]|\\.|\\[a-z]+-?\d* ?)*)\}")
_CODE_PAGE = re.compile(rb"\\ansicpg(\d+)")


def _source(raw: bytes) -> str:
    """The RTF source as text. RTF is 7-bit by the specification (other bytes escaped as `\\'xx`);
    a file that holds raw 8-bit bytes is read as UTF-8 when it decodes so, else in its declared
    code page (Windows-1252 when it declares none)."""
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        declared = _CODE_PAGE.search(raw[:4096])
        try:
            return raw.decode(f"cp{declared.group(1).decode()}" if declared else "cp1252", errors="replace")
        except LookupError:
            return raw.decode("cp1252", errors="replace")


def read_rtf(path: Path) -> Extracted:
    """The text of an RTF file, paragraphs as lines; its title from `\\info`'s `\\title`."""
    try:
        source = _source(path.read_bytes())
    except OSError as err:
        raise UnreadableDocument(f"unreadable RTF file ({err.strerror or err})") from err
    try:
        text = clean_text(rtf_to_text(source, errors="replace"))
    except (ValueError, IndexError, LookupError) as err:  # a damaged escape or code page
        raise UnreadableDocument(f"damaged RTF file ({type(err).__name__}: {err}); open and save it again in "
                                 "a word processor") from err
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    if not text:
        raise UnreadableDocument("RTF file without text (only pictures or formatting, or empty); nothing to index")
    found = _TITLE.search(source[:65536])
    title = " ".join(rtf_to_text("{\\rtf1 " + found.group(1) + "}", errors="replace").split()) if found else ""
    return Extracted(text=text, title=title)
