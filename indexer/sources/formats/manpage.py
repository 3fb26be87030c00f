"""Manual pages (roff, plain or `.gz`): read as groff typesets them, headings from .SH and .SS.

The roff markup is not parsed here: Debian's groff (groff-base, which `man` itself uses) renders
the page with its man and mdoc macros (`-mandoc`) to plain UTF-8, in one continuous page with
lines that never wrap, so no word is hyphenated and no page header repeats. In that output a
section heading (.SH) starts at the margin and a subsection heading (.SS) is indented three
columns, as man(7) lays them out; the body is indented further. The title is the NAME
section's line ("hosts - static table lookup for hostnames").
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator

from indexer.sources.formats.extracted import Extracted, UnreadableDocument, clean_text
from indexer.sources.outline import Block, assemble

_MACRO = re.compile(r"^[.'][ \t]*(TH|Dd|SH|Sh)\b", re.MULTILINE)
_GROFF_SECONDS = 60
# groff: man and mdoc macros, UTF-8 out, input through preconv as UTF-8, no colour, bold or
# underline escapes, one continuous page, lines long enough never to wrap, no hyphenation.
_GROFF = ("groff", "-mandoc", "-Tutf8", "-k", "-K", "utf-8", "-P-c", "-P-b", "-P-u", "-rcR=1",
          "-rLL=20000n", "-rHY=0")


def is_manpage(text: str) -> bool:
    """Whether a text is roff for the man or mdoc macros: a `.TH` (or `.Dd`) title line and a
    section heading (`.SH`/`.Sh`) among its first 200 lines."""
    head = "\n".join(text.split("\n", 200)[:200])
    found = {m.group(1) for m in _MACRO.finditer(head)}
    return bool(found & {"TH", "Dd"}) and bool(found & {"SH", "Sh"})


def render(text: str) -> str:
    """The page as groff typesets it, in plain UTF-8."""
    if shutil.which("groff") is None:
        raise UnreadableDocument("a manual page (roff), and groff is not installed to read it; install it "
                                 "(apt-get install groff-base) and build again")
    try:
        done = subprocess.run(_GROFF, input=text.encode("utf-8", "surrogateescape"), capture_output=True,
                              timeout=_GROFF_SECONDS, check=False)
    except subprocess.TimeoutExpired as err:
        raise UnreadableDocument(f"a manual page that groff did not finish typesetting in {_GROFF_SECONDS} s; "
                                 "check its roff markup") from err
    if done.returncode != 0 and not done.stdout.strip():
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
        raise UnreadableDocument(f"a manual page groff could not typeset ({'; '.join(reason) or done.returncode}); "
                                 "check its roff markup")
    return done.stdout.decode("utf-8", "replace")


def _blocks(rendered: str) -> Iterator[Block]:
    """Headings by their indentation, paragraphs between blank lines; the header and footer
    lines (the first and last, "hosts(5) File Formats Manual hosts(5)") left out."""
    lines = [line.rstrip() for line in clean_text(rendered).split("\n")]
    content = [i for i, line in enumerate(lines) if line.strip()]
    if len(content) < 3:
        return
    paragraph: list[str] = []
    for line in lines[content[0] + 1:content[-1]]:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            if paragraph:
                yield Block("\n".join(paragraph))
                paragraph = []
        elif indent in (0, 3) and not paragraph:
            yield Block(" ".join(line.split()), level=1 if indent == 0 else 2)
        else:
            paragraph.append(" ".join(line.split()))
    if paragraph:
        yield Block("\n".join(paragraph))


def read_manpage(text: str) -> Extracted:
    """The page's text as typeset, its .SH/.SS headings in the outline, its NAME line as title."""
    blocks = list(_blocks(render(text)))
    body, outline = assemble(blocks)
    if not body.strip():
        raise UnreadableDocument("a manual page without text once typeset; check its roff markup")
    title = ""
    for index, block in enumerate(blocks[:-1]):
        if block.level == 1 and block.text.upper() == "NAME" and blocks[index + 1].level is None:
            title = " ".join(blocks[index + 1].text.split())
            break
    return Extracted(text=body, outline=outline, title=title)
