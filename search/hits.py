"""What a search returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hit:
    """One result: the document, its best passage and where that passage sits in it."""

    doc_id: str
    title: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    passage_id: int = -1
    start_char: int = 0
    end_char: int = 0
    source: str = ""
