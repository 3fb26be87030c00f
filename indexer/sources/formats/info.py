"""GNU Info manuals (`/usr/share/info/*.info.gz`): the nodes' text, headings from their underlines.

makeinfo writes a manual as plain text in nodes, each after a `\\x1f` line and a header line
(`File: coreutils.info,  Node: Backup options,  Next: ...`). A node's title is underlined by
`*` (chapter), `=` (section), `-` (subsection) or `.` (subsubsection), which give the outline. Left
out, as navigation or furniture a passage should not hold: the preamble (which the Top node
repeats), node header lines, menus (`* Menu:` to the node's end: they list the nodes that follow),
index nodes (marked `\\0\\b[index\\0\\b]`, whose NUL bytes no database stores), the tag table and
the Emacs local variables. A manual split into parts (`find.info-1.gz`, `find.info-2.gz`) is read
part by part; its first file, which holds only the table of the parts, has no text of its own.
The title is the Top node's ("GNU Coreutils"); a part without the Top node, or a Top node without
a title, leaves the file name to title it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text
from indexer.sources.outline import Block, assemble

_PREAMBLE = re.compile(r"This is [^\n]+,\s+produced\s+by\s+[Mm]akeinfo")
_SEPARATOR = "\x1f\n"
_NODE_HEADER = re.compile(r"\A\s*File: [^\n]*?Node: ?([^,\t\n]+)[^\n]*\n")
_UNDERLINE = {"*": 1, "=": 2, "-": 3, ".": 4}
_INDEX_MARK = "\x00\x08[index\x00\x08]"
# Texinfo's other in-text markers (`\0\b[image src="..."\0\b]`): what they stand for is not text.
_MARKER = re.compile(r"\x00\x08\[[^\x00]*\x00\x08\]")
_MENU = re.compile(r"^\* Menu:", re.MULTILINE)


def is_info(text: str) -> bool:
    """Whether a text is a GNU Info file: makeinfo's "This is X.info, produced by makeinfo" first
    line and a node separator."""
    return _PREAMBLE.match(text) is not None and _SEPARATOR in text


def _heading(lines: list[str], i: int) -> int | None:
    """The level of line `i` when the next line underlines it (one character repeated, as long)."""
    if i + 1 >= len(lines):
        return None
    title, under = lines[i].rstrip(), lines[i + 1].rstrip()
    level = _UNDERLINE.get(under[:1])
    if level is None or not title.strip() or len(under) < 3 or under != under[0] * len(under):
        return None
    return level if abs(len(under) - len(title)) <= 2 else None


def _node_blocks(body: str) -> Iterator[Block]:
    """A node's headings and the text between them, its menu left out."""
    menu = _MENU.search(body)
    lines = _MARKER.sub("", body[:menu.start()] if menu else body).split("\n")
    paragraph: list[str] = []
    i = 0
    while i < len(lines):
        level = _heading(lines, i)
        if level is None:
            paragraph.append(lines[i])
            i += 1
            continue
        yield Block(clean_text("\n".join(paragraph)))
        paragraph = []
        yield Block(clean_text(lines[i].strip()), level=level)
        i += 2
    yield Block(clean_text("\n".join(paragraph)))


def _nodes(text: str) -> Iterator[tuple[str, str]]:
    """(node name, body) of each node in file order; the preamble, the tag table, the table of a
    split manual's parts and the local variables are not nodes."""
    for chunk in text.split(_SEPARATOR)[1:]:
        header = _NODE_HEADER.match(chunk)
        if header is not None:
            yield header.group(1).strip(), chunk[header.end():]


def read_info(text: str) -> Extracted:
    """The text of an Info file's nodes in file order, their titles in the outline; index nodes
    and menus left out."""
    every = list(_nodes(text))
    nodes = [(name, body) for name, body in every if _INDEX_MARK not in body]
    text_out, outline = assemble(block for _, body in nodes for block in _node_blocks(body))
    if not text_out.strip():
        raise UnreadableDocument(
            "an Info file of index nodes only (lists of entries pointing into the manual's other nodes): "
            "nothing to index here" if every else
            "an Info file without nodes (the table of a manual's parts, which are in the files named "
            "NAME.info-1, NAME.info-2, ...): nothing to index here")
    top = next((body for name, body in nodes if name == "Top"), "")
    title = next((block.text for block in _node_blocks(top) if block.level is not None), "")
    return Extracted(text=text_out, outline=outline, title=" ".join(title.split()))
