"""Rerankers: the optional second stage, which rescores a retriever's candidates jointly with the query.

A cross-encoder (Nogueira & Cho 2019, "Passage Re-ranking with BERT") reads
query and passage together, which is slower but sharper than comparing two
independent embeddings.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

from search.hits import Hit


class Reranker(Protocol):
    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """`hits` reordered best first, with `score` and `rerank_score` set to the reranker's score
        and `retriever_score` keeping the score the retriever gave."""
        ...


class CrossEncoderReranker:
    """Scores (query, passage) pairs in batches with a sentence-transformers `CrossEncoder`."""

    def __init__(self, model_path: str, batch_size: int = 32, device: str | None = None) -> None:
        from sentence_transformers import CrossEncoder

        try:
            self.model = CrossEncoder(str(model_path), device=device, local_files_only=True)
        except OSError as err:
            raise OSError(
                f"Cannot load a cross-encoder from {model_path}: {err}. Pass the folder a "
                "CrossEncoder was saved to (it holds config.json and the weights)."
            ) from err
        self.model_path = str(model_path)
        self.batch_size = batch_size

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        if not hits:
            return []
        scores = self.model.predict(
            [(query, hit.text) for hit in hits],
            batch_size=self.batch_size,
            show_progress_bar=False,
        )
        rescored = [
            replace(
                hit,
                score=float(score),
                rerank_score=float(score),
                retriever_score=hit.score if hit.retriever_score is None else hit.retriever_score,
            )
            for hit, score in zip(hits, scores, strict=True)
        ]
        return sorted(rescored, key=lambda hit: hit.score, reverse=True)
