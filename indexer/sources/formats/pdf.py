"""PDF: the text layer, page by page, with each page's place in the text.

pypdfium2 (Google's PDFium, the engine of Chromium's PDF viewer) was chosen by measurement on
real TeX Live manuals (BENCHMARKS.md, "Documents: choosing the readers"): it keeps as many of each
page's words as pdfminer.six does, at many times its speed, with exact page boundaries; pypdf
glued the words of LuaTeX PDFs together. PDFium marks a word hyphenated across a line end
(U+FFFE), so the word is joined again, and it reports a password-protected file as such. OCR is
not attempted: a page without a text layer is named in a warning.

A PDF's title is its Title field; where it has none (LaTeX writes none unless told to: 115 of the
322 PDFs under /usr/share/doc), the largest text of its first page, where that is larger than the
page's body text, as title extractors read a paper; else the file name is the title
(BENCHMARKS.md, "PDF titles").
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text, garbled
from indexer.sources.outline import Block, assemble, page_ranges

# PDFium's error code for a file that needs a password (FPDF_ERR_PASSWORD).
_PASSWORD_ERROR = 4
# PDF producers that put their own name, not the document's, in the Title field.
_NOT_TITLES = ("untitled", "microsoft word - ", "powerpoint presentation")
# ... or the name of the file it converted (TeX Live's samplepdf.pdf is titled "samplepdf.pdf").
_FILE_NAMES = (".dvi", ".tex", ".doc", ".docx", ".pdf", ".ps", ".odt", ".pptx")
# The first page's title: its largest font size with 3 letters or more, at least 1.15 times the
# size most of its letters have (a page set in one size has no title), read from its first
# character of that size to its last, up to 3 characters of other sizes between two of them (the
# lowered A and E of the LaTeX logo), at most 150 characters (longer is a paragraph). Chosen on the
# PDFs under /usr/share/doc that have a Title (bench/bench_pdf_titles.py).
_TITLE_SIZE_RATIO = 1.15
_TITLE_GAP = 3
_TITLE_MAX_CHARS = 150
_RARE_SCRIPT_SHARE = 0.02
_LETTERS = re.compile(r"[^\W\d_]+")


def _open(path: Path) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(path)
    except pdfium.PdfiumError as err:
        if getattr(err, "err_code", None) == _PASSWORD_ERROR:
            raise UnreadableDocument("encrypted PDF (it needs a password to open); save an unprotected copy "
                                     "(for example with qpdf --decrypt) and index that") from err
        reason = str(err).rstrip(".")
        raise UnreadableDocument(f"damaged or truncated PDF ({reason}); download or export it again") from err


def _page_text(pdf: pdfium.PdfDocument, index: int) -> tuple[str, bool]:
    """The page's text (a hyphen PDFium marks at a line end joins its word again), and whether
    the page holds an image (a page without text but with an image is a scan)."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_range().replace("\ufffe", "")
        finally:
            textpage.close()
        has_image = next(iter(page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=2)), None) is not None
    finally:
        page.close()
    return clean_text(text), has_image


def metadata_title(pdf: pdfium.PdfDocument) -> str:
    """The PDF's Title field, unless empty or a producer's placeholder."""
    title = " ".join(str(pdf.get_metadata_dict().get("Title") or "").split())
    lowered = title.lower()
    if not title or any(lowered.startswith(junk) for junk in _NOT_TITLES) or lowered.endswith(_FILE_NAMES):
        return ""
    return title


def _sized_chars(pdf: pdfium.PdfDocument, index: int) -> list[tuple[str, float]]:
    """Each character of page `index` with its font size, to half a point."""
    page = pdf[index]
    try:
        textpage = page.get_textpage()
        try:
            return [(chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, i) or 0xFFFE),
                     round(pdfium_c.FPDFText_GetFontSize(textpage.raw, i) * 2) / 2)
                    for i in range(textpage.count_chars())]
        finally:
            textpage.close()
    finally:
        page.close()


def first_page_title(pdf: pdfium.PdfDocument) -> str:
    """The first page's title by its type size (see `_TITLE_SIZE_RATIO`), or "" when none stands out."""
    if len(pdf) == 0:
        return ""
    chars = _sized_chars(pdf, 0)
    letters: dict[float, int] = {}
    for char, size in chars:
        if char.isalpha():
            letters[size] = letters.get(size, 0) + 1
    if not letters:
        return ""
    body = max(letters, key=lambda size: letters[size])
    larger = [size for size, count in letters.items() if count >= 3 and size >= _TITLE_SIZE_RATIO * body]
    if not larger:
        return ""
    at = [i for i, (_, size) in enumerate(chars) if size == max(larger)]
    last = at[0]
    for i in at[1:]:
        if i - last - 1 > _TITLE_GAP:
            break
        last = i
    title = " ".join("".join(char for char, _ in chars[at[0]: last + 1]).replace("\ufffe", "").split())
    if len(title) > _TITLE_MAX_CHARS or _misread(title, chars):
        return ""
    return title


def _script(char: str) -> str:
    """A letter's script, as the first word of its Unicode name (LATIN, GREEK, CJK, HIRAGANA...)."""
    return unicodedata.name(char, "?").split(" ", 1)[0]


def _misread(title: str, chars: list[tuple[str, float]]) -> bool:
    """Whether a run of letters in `title` joins two scripts, one of them rare on the page (under
    `_RARE_SCRIPT_SHARE` of its letters): a glyph decoded as the wrong character, as a ligature
    read as a CJK ideograph ("吀e" for "The" in TeX Live's luatex-hyphen.pdf). Runs of one script
    ("ε-TEX" and "LATEX 2ε" are runs of one each), or of two that are both common on the page
    (Japanese beside Latin), are kept."""
    scripts = Counter(_script(char) for char, _ in chars if char.isalpha())
    total = sum(scripts.values())
    for run in _LETTERS.findall(title):
        used = {_script(char) for char in run}
        if len(used) > 1 and any(scripts[s] < _RARE_SCRIPT_SHARE * total for s in used):
            return True
    return False


def _title(pdf: pdfium.PdfDocument) -> str:
    return metadata_title(pdf) or first_page_title(pdf)


def read_pdf(path: Path) -> Extracted:
    """The PDF's text, one block per page, with page starts in its outline. Pages without a text
    layer, and pages whose text is garbled, are left out and named in a warning."""
    pdf = _open(path)
    try:
        pages = len(pdf)
        blocks: list[Block] = []
        scanned: list[int] = []
        garbage: dict[str, list[int]] = {}
        for index in range(pages):
            text, has_image = _page_text(pdf, index)
            number = index + 1
            problem = garbled(text)
            if problem:
                garbage.setdefault(problem, []).append(number)
                text = ""
            elif not text.strip() and has_image:
                scanned.append(number)
            blocks.append(Block(text, page=number))
        title = _title(pdf)
    finally:
        pdf.close()
    text, outline = assemble(blocks)
    warnings = []
    if scanned:
        warnings.append(f"no text layer on {'page' if len(scanned) == 1 else 'pages'} {page_ranges(scanned)} "
                        f"of {pages} (scanned images); OCR is not supported, so their text is not indexed")
    for problem, numbers in garbage.items():
        warnings.append(f"the text of {'page' if len(numbers) == 1 else 'pages'} {page_ranges(numbers)} "
                        f"of {pages} is garbled ({problem}), so it is not indexed; re-export the PDF "
                        "with its fonts embedded, or extract its text another way")
    if not text.strip():
        reason = "; ".join(warnings) if warnings else f"no text on any of its {pages} pages"
        raise UnreadableDocument(f"PDF without text to index: {reason}")
    return Extracted(text=text, outline=outline, title=title, warnings=tuple(warnings))
