"""Query-time settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SearchConfig:
    """How a `Searcher` turns FAISS passage hits into document hits.

    Passages are grouped so each document appears once, with its best passage.
    `candidate_factor` × k passages are fetched first, doubling until k
    distinct documents are found or the index is exhausted.
    """

    k: int = 10
    candidate_factor: int = 4
    one_hit_per_document: bool = True

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k ({self.k}) must be at least 1.")
        if self.candidate_factor < 1:
            raise ValueError(f"candidate_factor ({self.candidate_factor}) must be at least 1.")
