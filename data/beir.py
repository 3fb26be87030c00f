"""Readers for the BEIR format (Thakur et al. 2021): corpus.jsonl, queries.jsonl, qrels/*.tsv."""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from pathlib import Path

from data.jsonl import iter_json_objects

logger = logging.getLogger(__name__)


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(
            f"BEIR {what} not found at {path}. A BEIR dataset folder holds corpus.jsonl, "
            "queries.jsonl and qrels/<split>.tsv; pass that folder."
        )
    return path


def iter_beir_corpus(folder: Path | str) -> Iterator[dict]:
    """Yield {_id, title, text, metadata} per document of `folder/corpus.jsonl`."""
    path = _require(Path(folder) / "corpus.jsonl", "corpus.jsonl")
    with path.open(encoding="utf-8", newline="\n") as fh:  # JSON lines split on "\n" only
        for _, row in iter_json_objects(fh, path):
            yield {
                "_id": str(row["_id"]),
                "title": row.get("title") or "",
                "text": row.get("text") or "",
                "metadata": row.get("metadata") or {},
            }


def load_beir_queries(folder: Path | str) -> dict[str, str]:
    """Query id -> query text."""
    path = _require(Path(folder) / "queries.jsonl", "queries.jsonl")
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8", newline="\n") as fh:
        for _, row in iter_json_objects(fh, path):
            queries[str(row["_id"])] = row["text"]
    return queries


def load_beir_qrels(folder: Path | str, split: str = "test") -> dict[str, dict[str, int]]:
    """Query id -> {corpus id: graded relevance} for `qrels/<split>.tsv` (header row skipped)."""
    path = Path(folder) / "qrels" / f"{split}.tsv"
    if not path.exists():
        available = sorted(p.stem for p in (Path(folder) / "qrels").glob("*.tsv"))
        raise FileNotFoundError(
            f"No qrels for split '{split}' at {path}. Available splits: {', '.join(available) or 'none'}."
        )
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header and header[0].strip().isdigit():  # no header row after all
            qrels.setdefault(header[0], {})[header[1]] = int(header[2])
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels
