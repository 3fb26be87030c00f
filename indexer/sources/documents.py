"""The units the indexer moves around: documents read from sources, and their passages."""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexer.sources.outline import Outline

# `semsearch_documents.doc_key` is VARCHAR(512): PostgreSQL refuses a longer id where
# SQLite would store it, so the reader refuses it on every backend.
MAX_ID_CHARS = 512

# A long novel is about 1-3 million characters (War and Peace: 3.2 million), so 10 million
# admits any single real document while a log dump or a whole corpus glued into one file is
# refused up front: 10 million characters are already about 11,500 passages of 256 tokens
# to embed (and about 7 s to chunk).
DEFAULT_MAX_DOCUMENT_CHARS = 10_000_000

_SURROGATE = re.compile("[\ud800-\udfff]")
# Unicode categories no tokenizer turns into a word: controls, format characters (zero-width
# spaces, soft hyphens, BOMs), private use, unassigned, separators, and marks that combine
# with nothing.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cn", "Cs", "Zs", "Zl", "Zp", "Mn", "Me"})


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def one_line(title: str) -> str:
    """A title is one line: control characters (a newline in a file name) become a space."""
    return _CONTROLS.sub(" ", title).strip()


# Why a document without a visible character is skipped.
INVISIBLE = ("empty document: it holds only invisible characters (zero-width spaces, byte-order "
             "marks, soft hyphens, control or private-use characters); give it visible text")


def has_visible_text(text: str) -> bool:
    """Whether `text` holds a character a reader can see (and a tokenizer keeps).

    `str.strip()` keeps zero-width spaces, BOMs, soft hyphens, control and private-use
    characters, which the tokenizer then drops, so such a text would be stored with no passage.
    """
    return any(unicodedata.category(char) not in _INVISIBLE_CATEGORIES for char in text)


def shown_name(label: str) -> str:
    """A file name as a person can read it: bytes that are not UTF-8 as \\x escapes."""
    return label.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def path_problem(label: str, names_document: bool = True) -> str | None:
    """Why a file's path cannot be read into the index, or None. The path is stored with each
    document it holds, and is the id of a text file's one document (`names_document`)."""
    if _SURROGATE.search(label):
        return (f"the file name {shown_name(label)!r} is not valid UTF-8; rename the file "
                "(for example with convmv -f latin1 -t utf8 --notest)")
    if names_document and len(label) > MAX_ID_CHARS:
        return (f"the path is {len(label):,} characters, over the limit of {MAX_ID_CHARS} for a "
                "document id (the path inside the source); move the file to a shallower folder or "
                "shorten its folder and file names")
    return None


def source_file(origin: str, source: str) -> Path:
    """The file a stored document was read from: `source` (its path within the source) inside
    `origin` (the folder or file a build read, resolved), or `origin` itself when that was a file."""
    root = Path(origin)
    return root / source if root.is_dir() else root


# Fields every document has for the metadata filters (`indexer.store.metadata_filter`): its id,
# the file it was read from and that file's extension; a reader never stores metadata under them.
RESERVED_FIELDS = ("_id", "_path", "_type")

# The outline of every document without pages or headings: one object, not one per document.
NO_OUTLINE = Outline()


@dataclass(frozen=True, slots=True)
class Document:
    """One source document. `doc_id` is stable across runs so re-indexing can diff.

    `line` is where the record starts in `source` (None for a whole-file document); it
    only locates the record for messages, so it is not part of `content_hash`. `outline` holds
    the pages and headings of a whole-file document (PDF, office files, HTML, EPUB, Markdown, reST),
    from which each passage's location is taken; it is hashed with the text when there is one.
    Slotted, with one shared empty outline: a build holds a window of up to a million of them.
    """

    doc_id: str
    title: str
    text: str
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)
    line: int | None = None
    outline: Outline = NO_OUTLINE
    # content_hash's digest, once computed (a build's every commit plans against the documents
    # stored so far, which hashed each committed document again per commit: 57,000 hashes, 1.3 s,
    # for a 30,000-document build); bytes, not hex: 65 bytes a document in a window of a million
    _digest: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def content_hash(self) -> str:
        """Hash of everything that ends up in the store, so any edit triggers a re-embed. A document
        without an outline hashes as it did before outlines existed."""
        return self.content_digest().hex()

    def content_digest(self) -> bytes:
        """`content_hash` as 32 bytes, computed once."""
        if self._digest is None:
            object.__setattr__(self, "_digest", self._computed_digest())
        assert self._digest is not None
        return self._digest

    def keep_content_digest(self, digest: bytes) -> None:
        """Take `content_digest` as computed elsewhere from this document's own fields (a build's
        worker process, `indexer.sources.workers.cut_task`), so that it is not computed again."""
        if len(digest) != 32:
            raise ValueError(f"a content digest is 32 bytes (SHA-256), not {len(digest)}")
        object.__setattr__(self, "_digest", digest)

    def _computed_digest(self) -> bytes:
        content: dict[str, Any] = {"title": self.title, "text": self.text, "metadata": self.metadata}
        if self.outline:
            content["outline"] = self.outline.to_json()
        payload = json.dumps(
            content,
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).digest()

    @property
    def location(self) -> str:
        """`source:line`, or `source` for a whole-file document."""
        return f"{self.source}:{self.line}" if self.line is not None else self.source


def _metadata_values(value: Any, where: str) -> Iterator[tuple[str, Any]]:
    """Every key and leaf of a JSON-like value, with its path (`metadata.a[2].b`).

    Walked with a stack, not recursion: json.loads accepts nesting nearly as deep as
    Python's recursion limit.
    """
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, dict):
            for key, item in reversed(value.items()):
                stack.append((f"{where}.{key}", item))
                stack.append((f"{where} key", key))
        elif isinstance(value, list | tuple):
            stack.extend((f"{where}[{index}]", item) for index, item in reversed(list(enumerate(value))))
        else:
            yield where, value


def _string_problem(value: str, where: str) -> str | None:
    if "\x00" in value:
        return (
            f"{where} holds a NUL character (\\x00), which PostgreSQL cannot store; "
            "remove it from the file"
        )
    found = None if value.isascii() else _SURROGATE.search(value)
    if found:
        return (
            f"{where} holds a lone surrogate (U+{ord(found.group()):04X}), which is not valid "
            "Unicode text; fix the \\u escape in the file"
        )
    return None


def document_too_long(size: str, max_document_chars: int) -> str:
    """The one message for a document over the size limit, whether measured in characters or bytes."""
    return (
        f"document is {size}, over the limit of {max_document_chars:,} characters; "
        "split the file, or raise --max-document-chars"
    )


def validate_document(
    doc: Document, max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS
) -> str | None:
    """Why `doc` cannot be indexed, or None if it can.

    The same rules hold on every backend: SQLite would store a NUL, a NaN or a long id
    that PostgreSQL refuses mid-build, so a reader skips such a record up front and the
    index holds the same documents whichever database it uses.
    """
    if len(doc.doc_id) > MAX_ID_CHARS:
        return (
            f"id is {len(doc.doc_id):,} characters, over the limit of {MAX_ID_CHARS}; "
            "use a shorter id"
        )
    if max_document_chars is not None and len(doc.text) > max_document_chars:
        return document_too_long(f"{len(doc.text):,} characters", max_document_chars)
    for where, value in (("id", doc.doc_id), ("title", doc.title), ("text", doc.text)):
        problem = _string_problem(value, where)
        if problem:
            return problem
    for where, value in _metadata_values(doc.metadata, "metadata"):
        if isinstance(value, str):
            problem = _string_problem(value, where)
            if problem:
                return problem
        elif isinstance(value, float) and not math.isfinite(value):
            return (
                f"{where} is {value}, which JSON (and so PostgreSQL) cannot store; "
                "write null or a finite number"
            )
    return None


@dataclass(frozen=True)
class PassageSpan:
    """A slice of a document's text, by character offsets into `Document.text`."""

    ordinal: int
    start_char: int
    end_char: int


@dataclass(frozen=True)
class InputIssue:
    """A skipped file or record: where it is and why.

    `doc_id` is the skipped record's id when the reader knew it. `retains_stored` says
    whether what the index stored from this input stays (see `indexer.store.plan.Skipped`): true
    for input that could not be read this time, false for input left out on purpose (a
    second path to a file already read, an index folder inside the source). `partial` marks a
    caveat about a document that is indexed all the same (pages without a text layer): not a
    skip, but a warning that `--strict` turns into an error. `files` names the files an issue
    about several stands for (the source copies of a `_sources` folder), when `path` does not.
    """

    path: str
    line: int | None
    problem: str
    # What a command-line user may add (a flag); the app, which has no flags, leaves it out.
    cli_hint: str | None = None
    doc_id: str | None = None
    retains_stored: bool = True
    partial: bool = False
    files: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.path == "." and self.line is None:  # about the source as a whole, or files across it
            return self.problem
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.problem}"
