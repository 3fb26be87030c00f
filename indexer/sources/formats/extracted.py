"""What a format reader hands back: a document's text, its outline and title, and its caveats.

A reader raises `UnreadableDocument` for a file that yields nothing (encrypted, damaged, no
text at all); the build skips it with that message. A file that yields text with parts missing
(scanned pages, garbled pages) comes back with `warnings`: the document is indexed and each
warning is reported, and `--strict` turns it into an error.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from indexer.sources.outline import Outline


class UnreadableDocument(Exception):
    """The file yields no text to index; the message names the problem and the fix."""


@contextmanager
def reading(what: str, fix: str, truncated: tuple[type[Exception], ...]) -> Iterator[None]:
    """Turn what a library raises while it reads a `what` ("Word file") into `UnreadableDocument`:
    `truncated` (a bad ZIP, a missing part) as "damaged or truncated", anything else (lxml's
    syntax errors, a library's bare exceptions from a damaged part) as "damaged"; `fix` says what
    to do ("open and save it again in Word or LibreOffice")."""
    try:
        yield
    except UnreadableDocument:
        raise
    except truncated as err:
        raise UnreadableDocument(f"damaged or truncated {what} ({err}); {fix}") from err
    except Exception as err:
        raise UnreadableDocument(f"damaged {what} ({type(err).__name__}: {err}); {fix}") from err


@dataclass(frozen=True)
class Extracted:
    text: str
    outline: Outline = field(default_factory=Outline)
    title: str = ""  # from the document's own metadata or first heading; "" when it has neither
    warnings: tuple[str, ...] = ()


# Ligatures that PDF fonts map to one code point; search needs the letters.
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
# Characters a text layer holds only when its font has no Unicode map: the replacement
# character, private-use code points, and control characters other than line breaks and tabs.
_UNDECODABLE = frozenset({"Co", "Cs", "Cn"})
_MIN_CHARS_TO_JUDGE = 80
# Dot leaders of a table of contents or an index ("Installation . . . . . 12"): punctuation that
# is layout, not text, and would otherwise make such a page read as "mostly symbols".
_LEADERS = re.compile(r"(?:[.·…_\-–—]\s?){3,}")


def clean_text(text: str) -> str:
    """Text as the model should read it: line ends as \\n, ligatures as their letters."""
    return text.replace("\r\n", "\n").replace("\r", "\n").translate(_LIGATURES)


def garbled(text: str) -> str | None:
    """Why `text` (a page, say) reads as garbage rather than words, or None.

    Three signs, each common in PDFs whose text layer is broken: glyphs without a Unicode map
    (replacement or private-use characters), text set letter by letter (most "words" one
    character long, as one character per line or letters spaced apart read), and mostly symbols
    instead of letters (a font whose encoding maps letters to other code points). Ordinary prose
    has a few percent of one-letter words, and formulas about half at most. Dot leaders (a table
    of contents, an index) are not counted. Text under `_MIN_CHARS_TO_JUDGE` visible characters
    is not judged.
    """
    text = _LEADERS.sub(" ", text)
    visible = [ch for ch in text if not ch.isspace()]
    if len(visible) < _MIN_CHARS_TO_JUDGE:
        return None
    bad = sum(1 for ch in visible if ch == "\ufffd" or unicodedata.category(ch) in _UNDECODABLE
              or (unicodedata.category(ch) == "Cc"))
    if bad / len(visible) > 0.1:
        return "undecodable glyphs (a font without a Unicode map)"
    words = text.split()
    if len(words) >= 30 and sum(1 for word in words if len(word) == 1 and word.isalpha()) / len(words) > 0.7:
        return "text set letter by letter: one character per line or word"
    wordlike = sum(1 for ch in visible if unicodedata.category(ch)[0] in "LN")
    if wordlike / len(visible) < 0.5:
        return "mostly symbols instead of letters (a broken font encoding)"
    return None
