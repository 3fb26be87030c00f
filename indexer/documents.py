"""The units the indexer moves around: documents read from sources, and their passages."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Document:
    """One source document. `doc_id` is stable across runs so re-indexing can diff."""

    doc_id: str
    title: str
    text: str
    source: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def content_hash(self) -> str:
        """Hash of everything that ends up in the store, so any edit triggers a re-embed."""
        payload = json.dumps(
            {"title": self.title, "text": self.text, "metadata": self.metadata},
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class PassageSpan:
    """A slice of a document's text, by character offsets into `Document.text`."""

    ordinal: int
    start_char: int
    end_char: int


@dataclass(frozen=True)
class InputIssue:
    """A skipped file or record: where it is and why."""

    path: str
    line: int | None
    problem: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.problem}"
