"""LaTeX sources (`.tex`, `.ltx`): the document's body, outlined by its sectioning commands.

What is read is the text between `\\begin{document}` and `\\end{document}` (the whole file for
a chapter that another file `\\input`s, which has neither): the preamble before it sets up
packages and macros, and its command names would match a question's words in BM25 in every
paper. Whole-line
comments are left out (drafts and notes to co-authors). The markup stays in the passages (the
model reads `\\emph{alpine}` as the words it holds); the headings (`\\section{...}` and its kin,
their levels from `\\part` to `\\paragraph`) and the title (`\\title{...}`) are read as their
words, without the markup. Measured on texlive-latex-base-doc's own sources (tests).
"""

from __future__ import annotations

import re

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text
from indexer.sources.outline import Heading, Outline, heading_title, lines_with_offsets

LATEX_SUFFIXES = (".tex", ".ltx")
_BEGIN = re.compile(r"^[^%\n]*\\begin\s*\{document\}[^\n]*\n?", re.MULTILINE)
_END = re.compile(r"^[^%\n]*\\end\s*\{document\}", re.MULTILINE)
_COMMENT_ONLY = re.compile(r"^[ \t]*%[^\n]*\n?", re.MULTILINE)


def is_latex(name: str) -> bool:
    """Whether a text file is LaTeX source, by its name."""
    return name.lower().endswith(LATEX_SUFFIXES)


def latex_body(text: str) -> str:
    """The text of the document environment, whole-line comments left out; the whole text where
    there is no `\\begin{document}`."""
    begin = _BEGIN.search(text)
    body = text[begin.end():] if begin else text
    end = _END.search(body)
    body = body[: end.start()] if end else body
    return _COMMENT_ONLY.sub("", body)


def read_latex(text: str) -> Extracted:
    """The document's body, its outline and its title; raises `UnreadableDocument` when the body
    holds no text."""
    body = clean_text(latex_body(text)).strip()
    if not body:
        raise UnreadableDocument("a LaTeX file whose document has no text (only a preamble, or only comments)")
    return Extracted(text=body, outline=latex_outline(body), title=latex_title(text))


# LaTeX's sectioning commands, outermost first (a document uses some of them: an article starts
# at \section, a book at \chapter). A starred form and a short title in brackets read alike; a
# command after a `%` on its line is a comment.
_LATEX_LEVELS = {"part": 1, "chapter": 2, "section": 3, "subsection": 4, "subsubsection": 5, "paragraph": 6}
_LATEX_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection|paragraph)\*?\s*(?:\[[^\]\n]*\])?\s*\{")
_LATEX_TITLE = re.compile(r"\\title\s*(?:\[[^\]\n]*\])?\s*\{")
_LATEX_COMMENT = re.compile(r"(?<!\\)%")
_LATEX_COMMENT_LINE = re.compile(r"(?<!\\)%[^\n]*")
_LATEX_PARAMETER = re.compile(r"#\d")  # `\section{#1}` in a macro's definition: not a heading


def _braced(text: str, start: int, limit: int = 1000) -> str | None:
    """The text of the group whose `{` is just before `start`, up to its matching `}`; None when
    it does not close within `limit` characters."""
    depth = 1
    for i in range(start, min(len(text), start + limit)):
        if text[i] == "{" and text[i - 1] != "\\":
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[start:i]
    return None


# Commands in a title that say how it looks, not what it says; and notes whose argument is not
# the title's (a paper's `\thanks{Supported by ...}`).
_LATEX_LOOKS = frozenset([
    "tiny", "scriptsize", "footnotesize", "small", "normalsize", "large", "Large", "LARGE", "huge", "Huge",
    "bfseries", "itshape", "ttfamily", "rmfamily", "sffamily", "scshape", "mdseries", "upshape", "slshape",
    "em", "bf", "it", "tt", "rm", "sf", "sc", "centering", "raggedright", "newline", "linebreak", "protect",
    "relax", "hfill", "vfill", "noindent"])
_LATEX_NOTES = re.compile(r"\\(thanks|footnote|label|index|hspace|vspace)\*?\s*\{")


def latex_words(text: str) -> str:
    """A LaTeX heading's words: comments, notes (`\\thanks{...}`) and layout commands (`\\huge`)
    left out, a command's argument kept (`\\emph{x}`: x), a logo's name kept (`\\LaTeX{}`:
    LaTeX), braces, ties, dashes, quotes and escapes undone."""
    text = _LATEX_COMMENT_LINE.sub("", text)
    while (note := _LATEX_NOTES.search(text)) is not None:
        inner = _braced(text, note.end())
        text = text[: note.start()] + text[note.end() + (len(inner) + 1 if inner is not None else 0):]
    text = re.sub(r"\\(?:kern|hskip)\s*-?[\d.]+\s*[a-z]{2}", "", text.replace("\\\\", " "))  # a logo's spacing
    text = re.sub(r"\\([A-Za-z]+)\*?", lambda m: " " if m.group(1) in _LATEX_LOOKS else m.group(0), text)
    text = re.sub(r"\\([A-Za-z]+)\{\}", r"\1", text)
    text = re.sub(r"\\[A-Za-z]+\*?\s*(?:\[[^\]]*\])?\{", "{", text)
    text = re.sub(r"\\([A-Za-z]+)\*?", r"\1", text)
    text = re.sub(r"\\([^A-Za-z])", r"\1", text)
    text = text.replace("---", "\u2014").replace("--", "\u2013").replace("``", "\u201c").replace("''", "\u201d")
    return heading_title(text.replace("{", "").replace("}", "").replace("~", " "))


def latex_outline(text: str) -> Outline:
    """The sectioning commands of LaTeX source (`\\section{Installation}`), with their levels;
    commented-out ones, and those in a macro's definition (`\\section{#1}`), left out."""
    headings: list[Heading] = []
    for start, line in lines_with_offsets(text):
        comment = _LATEX_COMMENT.search(line)
        code = line[: comment.start()] if comment else line
        for match in _LATEX_HEADING.finditer(code):
            title = _braced(text, start + match.end())
            words = latex_words(title) if title is not None and not _LATEX_PARAMETER.search(title) else ""
            if words:
                headings.append(Heading(start + match.start(), _LATEX_LEVELS[match.group(1)], words))
    return Outline(headings=tuple(headings))


def latex_title(text: str) -> str:
    """A LaTeX document's `\\title{...}` (its words), or ""."""
    for match in _LATEX_TITLE.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if _LATEX_COMMENT.search(text, line_start, match.start()):
            continue
        title = _braced(text, match.end())
        if title is not None:
            return latex_words(title)
    return ""
