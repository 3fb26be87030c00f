"""JSON exports of records (tickets, issues, messages, cards): one document a record.

A ticket system exports one JSON file of records: a list of objects (`gh issue list --json ...`,
GitHub's REST API, Linear, a Slack channel's day), or an object that holds one such list beside
counters and paging fields (Jira's search, `{"startAt": 0, "total": 2, "issues": [...]}`;
Zendesk's `{"tickets": [...], "next_page": null, "count": 2}`). Read as text, such a file was one
document of JSON syntax whose passages ran across tickets. Here each record is a document:

- **text**: the record's prose, field by field in the record's own order, at any depth (the
  comments' bodies too): every string of a field named for text (`TEXT_FIELDS`: body,
  description, text, content, message, comment, ...) and every other string that reads as prose
  (`is_prose`: four words or more, or several lines). Each such field's path is a heading
  (`description`, `comments[2].body`), so a hit says where in the record it is. A field whose
  name says it holds a rendering (`body_html`, `renderedFields`, Slack's `blocks`) is left out: exports carry it
  beside the text it renders. A record whose prose lies mostly below its own fields
  (`nested_document`: an API reference's module, its methods described lists deep) is a document
  nested in JSON, not a ticket: all of its prose is its text.
- **title**: the record's first field named title, subject, summary, headline or name (Jira's
  `fields.summary` one level down). A record with a title and no prose is its title.
- **id**: `FILE#<value>` of its `key`, `number`, `id`, `_id` or `uuid` field (the first present,
  a string or an integer: Jira's `PROJ-12` before its numeric id, GitHub's issue number before
  its database id), else `FILE#L<line>` by the line where the record opens, as an mbox message
  or a JSONL record without an id is named; `line` is that line either way.
- **metadata**: every other value that is not prose, by dotted path (`state`, `user.login`,
  `fields.status.name`), the values of a list gathered into one list (`labels.name`:
  `["bug", "ui"]`), so the metadata filters select on them (`{"labels.name": "bug"}`).

A JSON file that holds no such list (a configuration, a schema, a notebook, an object of
objects, an object with a list of objects beside another object or list of them) is not records
and is read as text, as before; so is one whose records hold no text (a JSON Patch).

The file is checked whole by the standard library's decoder, then scanned with it
(`json.JSONDecoder.raw_decode`) a record at a time from where each opens, which is how each
record's line is known; no other parser gives positions without a dependency. The check holds
the whole list in memory for a moment: the reader takes files up to 512 MiB.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from indexer.sources.documents import RESERVED_FIELDS
from indexer.sources.outline import Heading, Outline, heading_title

# Names of fields that hold a record's text, whatever their length (lower case).
TEXT_FIELDS = frozenset({
    "text", "body", "description", "desc", "content", "message", "comment", "comments", "details", "abstract",
    "note", "notes", "description_text", "short_description", "body_text", "plain_body",
})
# Below the record's own fields (in a thread of comments, a label, a status), only these: what a
# person wrote, not what describes a label or a status (the same in every record that has it).
THREAD_FIELDS = frozenset({"body", "text", "content", "message", "comment", "plain_body", "body_text"})
# How a message names them: the commonest few.
TEXT_FIELDS_SHOWN = ("body", "description", "text", "content", "message", "comment")
# Names of fields that title a record, in order of preference (lower case).
TITLE_FIELDS = ("title", "subject", "summary", "headline", "name")
# One level down only these: a nested `name` is a person's or a label's, not the record's title.
NESTED_TITLE_FIELDS = ("title", "subject", "summary")
# Prose below a record's own fields of at least this many characters, and more than its own text,
# makes it a document nested in JSON, all of whose prose is its text (`nested_document`).
NESTED_PROSE_CHARS = 1000
ID_FIELDS = ("key", "number", "id", "_id", "uuid")
# A field whose name holds one of these is a rendering of another field (lower case): GitHub's
# `body_html`, Jira's `renderedFields`, Slack's `blocks` (its message's `text` as rich-text pieces).
RENDERING_MARKS = ("html", "rendered", "blocks")
# Metadata: a string longer than this, not prose, is an encoded blob (base64, a token), not a value.
MAX_VALUE_CHARS = 256
_RENDERING = re.compile("|".join(RENDERING_MARKS), re.IGNORECASE)
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_WORD = re.compile(r"[^\W\d_]{2,}")
_DECODER = json.JSONDecoder()


class NotRecords(Exception):  # noqa: N818 -- a verdict, not a failure: the file is read as text
    """The JSON is not a list of records (or not JSON at all)."""


@dataclass(frozen=True)
class Record:
    """One record as a document reads it (see the module's docstring); `text` may be empty
    (a record of no prose and no title), which the reader reports."""

    line: int
    record_id: str | None
    title: str
    text: str
    outline: Outline
    metadata: dict[str, Any] = field(default_factory=dict)


def is_prose(value: str) -> bool:
    """Whether a string reads as text a person wrote: several lines, or four words or more of
    which three hold letters (`Mon, 02 Jan 2024 10:00:00 +0000` and `In Progress` do not)."""
    value = value.strip()
    if "\n" in value:
        return True
    words = value.split()
    return len(words) >= 4 and sum(1 for word in words if _WORD.search(word)) >= 3


@dataclass(frozen=True)
class NotAnObject:
    """An element of the records' list that is not an object (it is skipped), at `line`."""

    line: int
    kind: str


def records(text: str) -> Iterator[Record | NotAnObject]:
    """Each record of a JSON export, as it is scanned. Raises `NotRecords` before the first one when
    `text` is not such an export: not one valid JSON value, or no list of records in it (a list
    that opens with an object, alone, or as the one such list among an object's values when the
    others are scalars, lists of scalars or empty)."""
    items = _items(text)
    lines = _LineCounter(text)
    for offset, item in items:
        line = lines.line_at(offset)
        yield record_of(item, line) if isinstance(item, dict) else NotAnObject(line, json_kind(item))


def _items(text: str) -> Iterator[tuple[int, Any]]:
    """The elements of the records' list with their offsets; raises `NotRecords` at once when
    `text` is not an export of records."""
    start = _skip(text, 1 if text.startswith("\ufeff") else 0)
    if text.startswith("[", start):
        _end_of_value(text, start)  # one valid JSON value, or the file is read as text
        first = next(_elements(text, start), None)
        if first is None or not isinstance(first[1], dict):
            raise NotRecords("a JSON list that does not open with an object")
        return _elements(text, start)
    if text.startswith("{", start):
        return _elements(text, _records_member(text, start))
    raise NotRecords("not a JSON array or object")


def count(text: str) -> int:
    """How many documents `records(text)` stands for at most: its list's elements, or 1 when `text`
    is not an export of records (it is then one document)."""
    try:
        return sum(1 for _ in _items(text))
    except NotRecords:
        return 1


def json_kind(value: Any) -> str:
    """How a JSON value's type reads in a message: "a boolean", "null", "a list", "an object", ..."""
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _end_of_value(text: str, start: int) -> None:
    """Raise `NotRecords` unless the JSON value at `start` is valid and all there is in `text`."""
    try:
        _, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError) as err:  # JSONDecodeError is a ValueError
        raise NotRecords(f"not valid JSON ({err})") from err
    if _skip(text, end) != len(text):
        raise NotRecords("more than one JSON value")


def _elements(text: str, start: int) -> Iterator[tuple[int, Any]]:
    """The elements of the JSON array opening at `start` (checked valid), with their offsets."""
    at = _skip(text, start + 1)
    if text.startswith("]", at):
        return
    while True:
        value, end = _DECODER.raw_decode(text, at)
        yield at, value
        at = _skip(text, end)
        if not text.startswith(",", at):
            return
        at = _skip(text, at + 1)


def _records_member(text: str, start: int) -> int:
    """Where the list of records opens in the JSON object opening at `start`: its one value that is
    a list opening with an object, when every other value is a scalar, null, a list of scalars
    (Jira's `warningMessages`) or empty: one holding more would not be read. Checks that
    the object is valid and all there is in `text`; each value is decoded once, and let go."""
    found: list[tuple[str, int]] = []
    try:
        at = _skip(text, start + 1)
        closed = text.startswith("}", at)
        while not closed:
            key, at = _DECODER.raw_decode(text, at)
            at = _skip(text, at)
            if not isinstance(key, str) or not text.startswith(":", at):
                raise NotRecords("not valid JSON (an object's key)")
            at = _skip(text, at + 1)
            value, end = _DECODER.raw_decode(text, at)
            if isinstance(value, list) and value and isinstance(value[0], dict):
                found.append((key, at))
            elif isinstance(value, dict) and value or isinstance(value, list) and any(
                    isinstance(item, list | dict) for item in value):
                # the rest of the file would not be read: it is not an export but a document
                raise NotRecords(f"'{key}' holds an object or a list of lists beside the records")
            del value
            at = _skip(text, end)
            closed = text.startswith("}", at)
            if not closed:
                if not text.startswith(",", at):
                    raise NotRecords("not valid JSON (an object's members)")
                at = _skip(text, at + 1)
    except (ValueError, RecursionError, IndexError) as err:
        raise NotRecords(f"not valid JSON ({err})") from err
    if _skip(text, at + 1) != len(text):
        raise NotRecords("more than one JSON value")
    if len(found) != 1:
        raise NotRecords("no list of objects" if not found else "more than one list of objects")
    return found[0][1]


def _skip(text: str, at: int) -> int:
    """The offset of the first character at or after `at` that is not JSON whitespace."""
    match = _WHITESPACE.match(text, at)
    assert match is not None  # `*` matches the empty string
    return match.end()


class _LineCounter:
    """Line numbers of increasing offsets, counting each stretch of text once."""

    def __init__(self, text: str) -> None:
        self.text, self.offset, self.line = text, 0, 1

    def line_at(self, offset: int) -> int:
        self.line += self.text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line


def record_of(item: dict[str, Any], line: int, id_fields: tuple[str, ...] = ID_FIELDS,
              title_fields: tuple[str, ...] = TITLE_FIELDS) -> Record:
    """One record's id (by the first of `id_fields` present), title (the first of `title_fields`
    present, matched in lower case), text (with a heading per prose field) and metadata. A record
    whose prose lies mostly below its own fields (`nested_document`) has all of it as its text."""
    record_id, id_key = _record_id(item, id_fields)
    title, title_path = _title(item, title_fields)
    # The record's own fields: its top level, and the object its title is in (Jira's `fields`).
    own = {"", title_path.rpartition(".")[0] if title_path else ""}
    leaves = [(*leaf, _kind_of_string(leaf, own)) for leaf in _leaves(item)
              if leaf[1] != title_path and not (leaf[1] == id_key and not leaf[4])]
    deep = nested_document(leaves)
    parts: list[str] = []
    headings: list[Heading] = []
    metadata: dict[str, Any] = {}
    offset = 0
    for _, path, _, value, listed, kind in leaves:
        if kind == _TEXT or deep and kind == _DEEP_PROSE:
            prose = value.replace("\r\n", "\n").strip()
            if prose:
                offset += 2 if parts else 0
                headings.append(Heading(offset, 1, heading_title(path)))
                parts.append(prose)
                offset += len(prose)
            continue
        if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            continue  # NaN and Infinity: Python's JSON reads them, PostgreSQL's JSON cannot store them
        name = _field_name(path)
        if name in RESERVED_FIELDS:
            continue
        if listed:
            metadata.setdefault(name, [])
            if isinstance(metadata[name], list):
                metadata[name].append(value)
        else:
            metadata[name] = value
    text = "\n\n".join(parts)
    if not text and title:
        text = title  # a ticket of a title alone
    return Record(line, record_id, title, text, Outline((), tuple(headings)) if parts else Outline(), metadata)


# What a string leaf is to its record (`_kind_of_string`): text, prose below the record's own
# fields that a ticket leaves out, or neither (a value: metadata). Not a string: None.
_TEXT, _DEEP_PROSE, _VALUE = "text", "deep prose", "value"


def _kind_of_string(leaf: tuple[str, str, str, Any, bool], own: set[str]) -> str | None:
    """Text: among the record's own fields, a string of a field named for text or one that reads
    as prose; deeper (a comment of a thread, a label, a status), only one of a field named for what
    a person wrote, since a label's or a status's description repeats in every record that has it.
    Other prose, or any string of a field named for text, deeper: deep prose."""
    parent, _, key, value, _ = leaf
    if not isinstance(value, str):
        return None
    key = key.lower()
    if parent in own:
        return _TEXT if key in TEXT_FIELDS or is_prose(value) else _VALUE
    if key in THREAD_FIELDS:
        return _TEXT
    return _DEEP_PROSE if key in TEXT_FIELDS or is_prose(value) else _VALUE


def nested_document(leaves: list[tuple[str, str, str, Any, bool, str | None]]) -> bool:
    """Whether a record is a document nested in JSON rather than a ticket: the prose below its own
    fields (that a ticket's text leaves out: a label's description) is at least
    `NESTED_PROSE_CHARS` and more than its own text (Node.js's API docs: a module's description,
    then its methods' and classes' descriptions, lists deep). `leaves` carry `_kind_of_string`."""
    taken = sum(len(leaf[3]) for leaf in leaves if leaf[5] == _TEXT)
    left = sum(len(leaf[3]) for leaf in leaves if leaf[5] == _DEEP_PROSE)
    return left >= NESTED_PROSE_CHARS and left > taken


def _record_id(item: dict[str, Any], id_fields: tuple[str, ...]) -> tuple[str | None, str | None]:
    for key in id_fields:
        value = item.get(key)
        if isinstance(value, str) and value.strip() or isinstance(value, int) and not isinstance(value, bool):
            return str(value).strip(), key
    return None, None


def _title(item: dict[str, Any], title_fields: tuple[str, ...]) -> tuple[str, str | None]:
    """The record's title and the path of the field it came from."""
    lowered = {key.lower(): key for key in item if isinstance(key, str)}
    for name in title_fields:
        key = lowered.get(name)
        if key is not None and isinstance(item[key], str) and item[key].strip():
            return " ".join(item[key].split()), key
    for outer, value in item.items():
        if isinstance(value, dict):
            inner = {key.lower(): key for key in value if isinstance(key, str)}
            for name in NESTED_TITLE_FIELDS:
                key = inner.get(name)
                if key is not None and isinstance(value[key], str) and value[key].strip():
                    return " ".join(value[key].split()), f"{outer}.{key}"
    return "", None


def _leaves(item: dict[str, Any]) -> Iterator[tuple[str, str, str, Any, bool]]:
    """(the path of the object or list that holds it, its path, its last field's name, value,
    whether a list lies on the path) of every scalar in `item`, in the record's order; fields that
    hold renderings are left out. Walked with a stack: a record may nest as deep as the JSON
    decoder allows."""
    stack: list[tuple[str, str, str, Any, bool]] = [("", "", "", item, False)]
    while stack:
        parent, path, key, value, listed = stack.pop()
        if isinstance(value, dict):
            children = [(path, f"{path}.{name}" if path else name, name, child, listed)
                        for name, child in value.items() if not _RENDERING.search(name)]
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(path, f"{path}[{index}]", key, child, True)
                                   for index, child in enumerate(value, start=1)]))
        elif value is not None:
            yield parent, path, key, value, listed


def _field_name(path: str) -> str:
    """A metadata field's name: the path without list positions (`labels[2].name` -> `labels.name`)."""
    return re.sub(r"\[\d+\]", "", path)
