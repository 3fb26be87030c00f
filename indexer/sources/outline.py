"""Where a passage is in its document: the pages and the headings of a document's text.

A reader that knows a document's structure (the pages of a PDF, the headings of a Word file,
an HTML page, an e-book or a Markdown/reST file) records it as an `Outline`: the character
offsets, in `Document.text`, where each page starts and where each heading stands. A passage
is located from its character span alone (`Outline.locate`), so the chunker needs to know
nothing of formats, and every surface (CLI, `Hit`, HTTP API, app) prints the one `Location`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# How a heading path reads: `Installation › Linux`.
SECTION_SEPARATOR = " › "
# A heading this long is a paragraph someone styled as a heading; a path shows its start.
MAX_HEADING_CHARS = 120


@dataclass(frozen=True)
class Heading:
    """A heading at character `start` of the text; `level` 1 is the outermost."""

    start: int
    level: int
    title: str


@dataclass(frozen=True)
class Location:
    """Where a passage sits: its first and last page (1-based, physical pages as a PDF viewer
    counts them; None where the format has no pages) and its heading path (outermost first;
    empty where there are no headings)."""

    page_first: int | None = None
    page_last: int | None = None
    section: tuple[str, ...] = ()

    @property
    def pages(self) -> str:
        """`p. 7`, `pp. 7–8`, or "" without pages."""
        if self.page_first is None:
            return ""
        if self.page_last is None or self.page_last == self.page_first:
            return f"p. {self.page_first}"
        return f"pp. {self.page_first}–{self.page_last}"

    @property
    def section_path(self) -> str:
        """`Installation › Linux`, or ""."""
        return SECTION_SEPARATOR.join(self.section)

    @property
    def label(self) -> str:
        """What a person reads beside a hit: `p. 7`, `Installation › Linux`, both joined by
        " · ", or "" when the document has no pages or headings."""
        return " · ".join(part for part in (self.pages, self.section_path) if part)

    def __bool__(self) -> bool:
        return self.page_first is not None or bool(self.section)

    def to_dict(self) -> dict[str, Any]:
        """`page` (the first page, or None), `page_last`, `section` (the path as a list) and `label`."""
        return {"page": self.page_first, "page_last": self.page_last, "section": list(self.section),
                "label": self.label}

    @classmethod
    def from_columns(cls, page_first: int | None, page_last: int | None, section: str | None) -> Location:
        """The location as the passages table stores it (`section` joined by the separator)."""
        return cls(page_first, page_last, tuple(section.split(SECTION_SEPARATOR)) if section else ())


@dataclass(frozen=True)
class Outline:
    """The structure of one document's text: `page_starts[i]` is where page i + 1 starts (empty:
    no pages), and `headings` in text order. Offsets index `Document.text`."""

    page_starts: tuple[int, ...] = ()
    headings: tuple[Heading, ...] = ()
    _heading_starts: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if any(b < a for a, b in zip(self.page_starts, self.page_starts[1:], strict=False)):
            raise ValueError("page starts must not decrease")
        starts = tuple(h.start for h in self.headings)
        if any(b < a for a, b in zip(starts, starts[1:], strict=False)):
            raise ValueError("headings must be in text order")
        object.__setattr__(self, "_heading_starts", starts)

    def __bool__(self) -> bool:
        return bool(self.page_starts or self.headings)

    def locate(self, start: int, end: int) -> Location:
        """The location of the span [start, end): the pages it overlaps, and the heading path in
        force where it starts, or at its first heading when that heading opens within the span's
        first quarter (a passage that begins with a section's last lines and then a new section
        belongs to the new one)."""
        first = last = None
        if self.page_starts:
            first = max(bisect.bisect_right(self.page_starts, start), 1)
            last = max(bisect.bisect_right(self.page_starts, max(start, end - 1)), first)
        return Location(first, last, self.section_at(start + max(0, end - start) // 4))

    def section_at(self, offset: int) -> tuple[str, ...]:
        """The heading path in force at `offset`: each heading before it, kept while no later
        heading of the same or an outer level closes it."""
        upto = bisect.bisect_right(self._heading_starts, offset)
        path: list[Heading] = []
        for heading in self.headings[:upto]:
            while path and path[-1].level >= heading.level:
                path.pop()
            path.append(heading)
        return tuple(h.title for h in path)

    def to_json(self) -> dict[str, Any]:
        return {"pages": list(self.page_starts), "headings": [[h.start, h.level, h.title] for h in self.headings]}


def heading_title(text: str) -> str:
    """A heading as a path shows it: one line, spaces collapsed, at most MAX_HEADING_CHARS."""
    title = " ".join(text.split()).replace(SECTION_SEPARATOR.strip(), ">")
    return title if len(title) <= MAX_HEADING_CHARS else title[: MAX_HEADING_CHARS - 1].rstrip() + "…"


@dataclass(frozen=True)
class Block:
    """One piece of a structured document, in reading order: a paragraph, a table row, a page's
    text, or a heading (`level` 1–6, None for body text); `page` is its 1-based page, if any."""

    text: str
    level: int | None = None
    page: int | None = None


def assemble(blocks: Iterable[Block], separator: str = "\n\n") -> tuple[str, Outline]:
    """The text of `blocks` joined by `separator` (blank ones left out), and its outline: a page
    starts where its first text does (a page without text starts where the next text does, so
    no character is ever placed on an empty page), and each heading where its text stands."""
    parts: list[str] = []
    headings: list[Heading] = []
    page_starts: list[int] = []
    offset = 0
    for block in blocks:
        text = block.text.strip()
        if not text:
            continue
        if parts:
            offset += len(separator)
        if block.page is not None:
            page_starts.extend([offset] * (block.page - len(page_starts)))
        if block.level is not None:
            headings.append(Heading(offset, block.level, heading_title(text)))
        parts.append(text)
        offset += len(text)
    return separator.join(parts), Outline(tuple(page_starts), tuple(headings))


# --- headings of plain-text formats --------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_RST_ADORNMENT = re.compile(r"^([=\-~^*#+`:'\"._])\1{2,}\s*$")


def lines_with_offsets(text: str) -> list[tuple[int, str]]:
    """Each line of `text` (without its line end) with the offset where it starts."""
    out: list[tuple[int, str]] = []
    start = 0
    for line in text.split("\n"):
        out.append((start, line.rstrip("\r")))
        start += len(line) + 1
    return out


def markdown_outline(text: str) -> Outline:
    """The headings of Markdown text: ATX (`## Linux`) and setext (a line underlined by === or
    ---), outside fenced code blocks."""
    headings: list[Heading] = []
    lines = lines_with_offsets(text)
    fenced = False
    for i, (start, line) in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        atx = _ATX.match(line)
        if atx:
            headings.append(Heading(start, len(atx.group(1)), heading_title(atx.group(2))))
            continue
        following = lines[i + 1][1] if i + 1 < len(lines) else ""
        if line.strip() and not line.startswith(("    ", "\t")) and re.fullmatch(r" {0,3}(=+|-+)\s*", following) \
                and not re.fullmatch(r"\s*[-*_=]+\s*", line):
            headings.append(Heading(start, 1 if following.strip()[0] == "=" else 2, heading_title(line)))
    return Outline(headings=tuple(headings))


def rst_outline(text: str) -> Outline:
    """The section titles of reStructuredText: a line underlined (and perhaps overlined) by a
    repeated punctuation character; levels follow the order in which adornment styles first
    appear, as docutils assigns them."""
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    lines = lines_with_offsets(text)
    i = 0
    while i < len(lines) - 1:
        start, line = lines[i]
        over = _RST_ADORNMENT.match(line)
        title_index = i + 1 if over else i
        if title_index + 1 >= len(lines):
            break
        title_start, title = lines[title_index]
        under = _RST_ADORNMENT.match(lines[title_index + 1][1])
        if (under and title.strip() and not _RST_ADORNMENT.match(title)
                and len(lines[title_index + 1][1].rstrip()) >= len(title.strip())
                and (not over or over.group(1) == under.group(1))):
            style = (under.group(1), bool(over))
            if style not in styles:
                styles.append(style)
            headings.append(Heading(start if over else title_start, styles.index(style) + 1,
                                    heading_title(title)))
            i = title_index + 2
            continue
        i += 1
    return Outline(headings=tuple(headings))


def outline_of_text(name: str, text: str) -> Outline:
    """The outline of a plain-text file by its name: Markdown and reST headings, else none."""
    suffix = name.lower().rsplit(".", 1)[-1] if "." in name else ""
    if suffix in ("md", "markdown", "rmd", "qmd"):  # R Markdown and Quarto are Markdown with code chunks
        return markdown_outline(text)
    if suffix == "rst":
        return rst_outline(text)
    return Outline()


def page_ranges(pages: Sequence[int]) -> str:
    """`1–3, 7, 9–12` for sorted page numbers: how a message names pages."""
    parts: list[str] = []
    run: list[int] = []
    for page in pages:
        if run and page == run[-1] + 1:
            run.append(page)
            continue
        if run:
            parts.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [page]
    if run:
        parts.append(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]))
    return ", ".join(parts)
