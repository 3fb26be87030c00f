"""Mark query terms in a result passage and trim it to the part that matches best.

Words are matched as BM25 matches them (`indexer.bm25_terms`: the same token
pattern, stop words and Snowball stemmer), so a marked word is one a BM25
search counted, whatever mode ran. Dense retrieval matches meaning, not words,
so a passage may hold none of the query's words; the snippet then shows the
passage's start unmarked. Output is Streamlit Markdown with every other
character escaped, so passages that hold Markdown, LaTeX dollars or HTML show
as plain text. Two kinds of docstring markup are read rather than shown
literally: reST emphasis (`*opener*` in italics, `**strong**` in bold, the
backticks of ``literals`` dropped), and doctest examples (`>>> ...` and their
output), which the full passage shows as code blocks and a snippet as inline code, both in
monospace. A Markdown heading line that
opens a passage is not shown as `# ...` in its snippet (`strip_leading_heading`).
"""

from __future__ import annotations

import re
import string

from search.matches import TermMatch, find_matches, query_terms  # noqa: F401  (re-exported)

_MD_ESCAPE = {ch: "\\" + ch for ch in string.punctuation}
# reST inline markup, as docutils recognises it: the start-string follows a space or an opening
# bracket and precedes a non-space; the end-string follows a non-space. So `f(*args, **kw)`
# and `2*x*y` are left alone. Private-use characters stand in for the Markdown markers until
# the text is escaped: they are not word characters, so BM25 terms and escaping skip them.
_STRONG = re.compile(r"(?<![\w*\\])\*\*(?=\S)([^*\n]*?\S)\*\*(?![\w*])")
_EMPHASIS = re.compile(r"(?<![\w*\\])\*(?=\S)([^*\n]*?\S)\*(?![\w*])")
_LITERAL = re.compile(r"``(?=\S)(.+?)(?<=\S)``|(?<![\w`])`(?=[^`\s])([^`\n]*?[^`\s])`(?![\w`])")
_ITALIC_MARK, _BOLD_MARK = "\ue000", "\ue001"
_MARKERS = {_ITALIC_MARK: "*", _BOLD_MARK: "**"}
# Around a doctest example flattened into a snippet: shown as inline code, unescaped and unmarked.
_CODE_MARK = "\ue002"
# A doctest prompt cut in two where a passage begins or ends: ">>" or ">" alone at the edge.
_CUT_PROMPT_END = re.compile(r"(?:^|\s)>{1,2}\s*$")
_CUT_PROMPT_START = re.compile(r"^\s*>{1,2}(?=\s)")
# A Markdown ATX heading line opening a passage (after blank lines): up to three spaces, then
# one to six #. CommonMark wants a space or the line's end after them; `rest` is the line after.
_LEADING_HEADING = re.compile(r"(?:[ \t]*\r?\n)*(?P<marks> {0,3}#{1,6})(?P<rest>[^\n]*)(?:\n|\Z)")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
HEADING_SEPARATOR = " · "
# Bold coloured text: a background chip adds padding that reads as extra spaces.
HIGHLIGHT = ":orange[**{}**]"
ELLIPSIS = "…"


def best_window(text: str, matches: list[TermMatch], width: int) -> tuple[int, int]:
    """The `width`-character slice holding the most distinct terms (then the most matches).

    The slice starts a little before its first match for context and is snapped
    to whitespace so it does not cut words.
    """
    if width < 1:
        raise ValueError(f"width ({width}) must be at least 1.")
    if len(text) <= width:
        return 0, len(text)
    first = 0
    if matches:
        best_key: tuple[int, int] | None = None
        for i, anchor in enumerate(matches):
            inside = [m for m in matches[i:] if m.end <= anchor.start + width]
            key = (len({m.term for m in inside}), len(inside))
            if best_key is None or key > best_key:
                best_key, first = key, anchor.start
    start = min(max(0, first - width // 5), len(text) - width)
    end = start + width
    if start > 0:
        space = text.find(" ", start, min(start + 20, first))
        start = space + 1 if space != -1 else start
    if end < len(text):
        space = text.rfind(" ", max(start, end - 20), end)
        end = space if space != -1 else end
    return start, end


def escape_markdown(text: str) -> str:
    """Backslash-escape ASCII punctuation so Streamlit shows `text` literally."""
    return text.translate(str.maketrans(_MD_ESCAPE))


# C0 controls as their Unicode control pictures ("\n" -> "␊"), DEL as "␡".
_CONTROL_PICTURES = {code: 0x2400 + code for code in range(0x20)} | {0x7F: 0x2421}


def escape_name(text: str) -> str:
    """A name from the index (title, id, path) on one line, shown literally: a newline or tab
    in a file name is drawn as its control picture instead of breaking the page's layout."""
    return escape_markdown(text.translate(_CONTROL_PICTURES))


def read_inline_markup(text: str) -> str:
    """reST emphasis and literals as placeholders `_restore_markup` turns into Markdown."""
    text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    text = _STRONG.sub(lambda m: f"{_BOLD_MARK}{m.group(1)}{_BOLD_MARK}", text)
    return _EMPHASIS.sub(lambda m: f"{_ITALIC_MARK}{m.group(1)}{_ITALIC_MARK}", text)


def _restore_markup(markdown: str) -> str:
    return markdown.translate(str.maketrans(_MARKERS))


def trim_cut_prompts(text: str) -> str:
    """Drop a doctest prompt that the passage's edge cut to ">>" or ">"."""
    return _CUT_PROMPT_START.sub("", _CUT_PROMPT_END.sub("", text))


def _mark(text: str, matches: list[TermMatch], start: int, end: int) -> list[str]:
    pieces: list[str] = []
    pos = start
    for m in matches:
        if m.start < start or m.end > end:
            continue
        pieces.append(escape_markdown(text[pos : m.start]))
        pieces.append(HIGHLIGHT.format(escape_markdown(text[m.start : m.end])))
        pos = m.end
    pieces.append(escape_markdown(text[pos:end]))
    return pieces


def _heading_words(line: str) -> str:
    return " ".join(_CLOSING_HASHES.sub("", line.strip().lstrip("#")).split()).casefold()


def strip_leading_heading(text: str, title: str | None = None) -> str:
    """`text` less a Markdown heading line that opens it: dropped when it repeats `title` (the hit
    shows its title above the snippet already) or is empty; another keeps its words, without its
    `#` marks, followed by " · ". A passage that is only its title's heading keeps the words.
    Query words are then matched in what this returns, so highlights line up with it.

    The title is compared as the indexer took it from the file (`indexer.sources.readers.text_title`:
    the line without its leading #). "#hashtag" or "#include" (no space) is no heading.
    """
    match = _LEADING_HEADING.match(text)
    if match is None:
        return text
    line, after = match["marks"] + match["rest"], text[match.end():]
    if title is not None and _heading_words(line) == _heading_words(title) and after.strip():
        return strip_leading_heading(after)  # "# Title" then "## Section": the section shows
    if match["rest"] and match["rest"][0] not in " \t\r":
        return text
    words = " ".join(_CLOSING_HASHES.sub("", match["rest"]).split())
    if not words:
        return after
    return f"{words}{HEADING_SEPARATOR}{after}" if after.strip() else words


def snippet_markdown(text: str, query: str, width: int = 320, title: str | None = None) -> str:
    """One line of Markdown: the best-matching part of `text`, query terms highlighted; a
    heading line opening `text` that repeats `title` is left out (see `strip_leading_heading`).
    A doctest example shows as inline code, its lines run together, like the prose around it."""
    text = strip_leading_heading(text, title)
    flat = _flatten(trim_cut_prompts(text.strip("\n")))
    matches = find_matches(flat, query_terms(query))
    start, end = best_window(flat, matches, width)
    start, end = _outside_markup(flat, start, end)
    body = _restore_markup("".join(_render(flat, matches, start, end)))
    return f"{ELLIPSIS if start > 0 else ''}{body}{ELLIPSIS if end < len(flat) else ''}"


def _flatten(text: str) -> str:
    """`text` on one line: prose with its inline markup read, each doctest run between `_CODE_MARK`s."""
    parts = []
    for is_code, run in doctest_blocks(text.split("\n")):
        words = " ".join(" ".join(run).split())
        if words:
            parts.append(f"{_CODE_MARK}{words}{_CODE_MARK}" if is_code else read_inline_markup(words))
    return " ".join(parts)


def _render(flat: str, matches: list[TermMatch], start: int, end: int) -> list[str]:
    """`_mark` for prose; the code between `_CODE_MARK`s as inline code, unmarked. A window that
    opens or closes inside an example opens or closes the code span at its edge."""
    pieces: list[str] = []
    inside = flat.count(_CODE_MARK, 0, start) % 2 == 1
    pos = start
    while pos < end:
        stop = flat.find(_CODE_MARK, pos, end)
        stop = end if stop == -1 else stop
        if inside:
            pieces.append(_inline_code(flat[pos:stop]))
        else:
            pieces.extend(_mark(flat, matches, pos, stop))
        if stop < end:
            inside = not inside
        pos = stop + 1
    return pieces


def _inline_code(code: str) -> str:
    """A Markdown code span holding `code` as written (a longer backtick run than any inside)."""
    code = code.strip()
    if not code:
        return ""
    ticks = "`" * (1 + max((len(run) for run in re.findall(r"`+", code)), default=0))
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _outside_markup(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a window so it never holds one marker of a pair (an italic that never closes)."""
    for mark in _MARKERS:
        if text.count(mark, start, end) % 2:
            before = text.count(mark, 0, start)
            if before % 2:  # the window opens inside a pair: start at its opening marker
                start = text.rfind(mark, 0, start)
            else:  # it closes inside one: end after the closing marker
                end = text.find(mark, end) + 1
    return start, end


def doctest_blocks(lines: list[str]) -> list[tuple[bool, list[str]]]:
    """Split lines into (is_doctest, lines) runs: a doctest runs from a `>>>` line through its
    `...` lines and its output, up to a blank line or the next prose line after a blank."""
    runs: list[tuple[bool, list[str]]] = []
    in_code = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(">>>"):
            in_code = True
        elif not stripped:
            in_code = False
        if runs and runs[-1][0] == in_code:
            runs[-1][1].append(line)
        else:
            runs.append((in_code, [line]))
    return runs


def passage_markdown(text: str, query: str) -> str:
    """The whole passage as Markdown, line breaks and indentation kept, query terms highlighted;
    doctest examples as code blocks, in monospace and unmarked.

    Leading spaces of prose become no-break spaces: four plain ones would open a Markdown
    code block, where the escapes would show as backslashes.
    """
    terms = query_terms(query)
    blocks: list[str] = []
    for is_code, run in doctest_blocks(trim_cut_prompts(text.strip("\n")).split("\n")):
        if is_code:
            width = min(len(line) - len(line.lstrip()) for line in run if line.strip())
            code = "\n".join(line[width:] for line in run)
            fence = "~~~~" if "~~~" in code else "~~~"
            blocks.append(f"{fence}python\n{code}\n{fence}")
            continue
        lines = []
        for line in run:
            body = read_inline_markup(line.lstrip(" \t"))
            indent = "\u00a0" * (len(line) - len(line.lstrip(" \t")))
            matches = find_matches(body, terms)
            lines.append(indent + _restore_markup("".join(_mark(body, matches, 0, len(body)))))
        prose = "  \n".join(lines).strip()
        if prose:
            blocks.append(prose)
    return "\n\n".join(blocks)
