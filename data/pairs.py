"""Reader for user-supplied training pairs and triplets in .jsonl or .csv.

Accepted column sets (first match wins):
- anchor, positive[, negative]        -> retrieval pairs / triplets
- sentence1, sentence2, score         -> scored pairs (any numeric range)
- sentence1, sentence2, label         -> labelled pairs (int class id)
- query, passage[, label]             -> cross-encoder pairs (label 1 = relevant)
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Iterator
from pathlib import Path

from data.jsonl import iter_json_objects
from data.raw_text import open_text

logger = logging.getLogger(__name__)

SCHEMAS: tuple[tuple[str, ...], ...] = (
    ("anchor", "positive", "negative", "margin"),  # a teacher's score(positive) - score(negative)
    ("anchor", "positive", "negative"),
    ("anchor", "positive"),
    ("sentence1", "sentence2", "score"),
    ("sentence1", "sentence2", "label"),
    ("query", "passage", "label"),
    ("query", "passage"),
)


def detect_schema(columns: list[str] | set[str], path: Path | str = "") -> tuple[str, ...]:
    """The first schema in SCHEMAS whose columns all appear in `columns`."""
    for schema in SCHEMAS:
        if all(column in columns for column in schema):
            return schema
    valid = "; ".join(", ".join(schema) for schema in SCHEMAS)
    raise ValueError(
        f"{path}: columns {sorted(columns)} match no pair schema. Valid column sets: {valid}. "
        "Rename the columns of your file to one of these."
    )


def _iter_raw_rows(path: Path) -> Iterator[tuple[int, dict]]:
    name = path.name.removesuffix(".gz")
    # csv needs newline="" (quoted newlines stay in their field); JSON lines split on "\n" only.
    with open_text(path, newline="" if name.endswith((".csv", ".tsv")) else "\n") as handle:
        if name.endswith(".csv") or name.endswith(".tsv"):
            reader = csv.DictReader(handle, delimiter="\t" if name.endswith(".tsv") else ",")
            for row in reader:
                yield reader.line_num, row
        elif name.endswith((".jsonl", ".json")):
            yield from iter_json_objects(handle, path)
        else:
            raise ValueError(f"Unsupported pair file {str(path)!r}. Valid extensions: .jsonl, .csv, .tsv (optionally .gz).")


def peek_columns(path: Path | str) -> list[str]:
    """The column names of the first row of a pair file."""
    for _, row in _iter_raw_rows(Path(path)):
        return list(row)
    raise ValueError(f"Pair file {str(path)!r} holds no rows. Add at least one pair.")


def iter_pairs(path: Path | str) -> Iterator[dict]:
    """Stream rows as dicts restricted to the detected schema's columns; numeric columns become float/int."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"Pair file {str(path)!r} does not exist.")
    schema = detect_schema(set(peek_columns(path)), path)
    for line_number, row in _iter_raw_rows(path):
        try:
            out = {column: row[column] for column in schema}
            for column in schema:
                if column in ("score", "margin"):
                    out[column] = float(out[column])
                elif column == "label":
                    out[column] = int(float(out[column]))
                elif not isinstance(out[column], str) or not out[column].strip():
                    raise ValueError(f"column {column!r} is empty or not text")
        except (KeyError, TypeError, ValueError) as err:
            logger.warning("%s:%d: malformed row (%s); skipping", path, line_number, err)
            continue
        yield out
