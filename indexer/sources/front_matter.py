"""YAML front matter at the top of a Markdown file: its fields become the document's metadata.

Jekyll, Hugo, MkDocs, Quarto and note-taking apps (Obsidian) open a Markdown file with a block
between `---` lines (closed by `---` or `...`):

    ---
    title: Refund policy
    tags: [billing, refunds]
    date: 2025-03-01
    ---

Its `title` is the document's title (the first heading was read instead, and the block's lines
were passages of their own); every other field is metadata, so a search can be filtered by it
(`{"tags": "billing"}`, `{"date": {"$gte": "2025-01-01"}}`: docs/search.md). Values keep their
YAML type where JSON has it (strings, numbers, booleans, lists and mappings of them); a date or
a time is written as ISO 8601 text, which is how filters compare dates. The text indexed is what
follows the block. A file whose first `---` opens no closed, parseable YAML mapping within
`MAX_LINES` lines (a horizontal rule, say) is read whole, as before.

PyYAML (`yaml.safe_load`: no object construction) reads the block; it was already installed for
transformers and huggingface_hub, and is pinned in requirements.txt.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from typing import Any

MAX_LINES = 200  # a block longer than this is not front matter
_OPEN = re.compile(r"\A---[ \t]*\r?\n")
_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def split_front_matter(text: str) -> tuple[dict[str, Any], str] | None:
    """(the block's fields as JSON-ready values, the text after the block), or None where `text`
    opens with no front matter."""
    opening = _OPEN.match(text)
    if opening is None:
        return None
    end = opening.end()  # the block is looked for in the next MAX_LINES + 1 lines only
    for _ in range(MAX_LINES + 1):
        end = text.find("\n", end) + 1 or len(text)
    closing = _CLOSE.search(text, opening.end(), end)
    if closing is None:
        return None
    import yaml

    try:
        fields = yaml.safe_load(text[opening.end():closing.start()])
    except yaml.YAMLError:
        return None
    if not isinstance(fields, dict):
        return None
    body = text[closing.end():]
    return {str(key): _json_value(value) for key, value in fields.items() if value is not None}, \
        body[1:] if body.startswith("\n") else body


def _json_value(value: Any) -> Any:
    """`value` as JSON holds it: dates and times as ISO 8601 text, other objects as their text."""
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date | dt.datetime | dt.time):
        return value.isoformat()
    if isinstance(value, list | tuple | set):
        return [_json_value(item) for item in value if item is not None]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items() if item is not None}
    return str(value)
