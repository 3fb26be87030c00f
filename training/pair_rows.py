"""A pair file's rows, with their line numbers, and the rules for its `label` and `score` columns.

Read once, before any model loads, so a bad value fails with its `file:line` rather than as a
torch error mid-training:
- labels are class ids 0..K-1 (every id used) or class names, never both; names are numbered
  in sorted order and the map is saved beside the model (`LABELS_FILE`);
- scores lie on a known scale: `--score-range LOW HIGH`, else 0-1 (STSb and SICK have their
  own, applied by their readers); a score outside it is refused, never rescaled by the file's
  own maximum.
A row without the schema's text columns, or whose score is not a number, is skipped with a
warning, or fails under `--strict` (`training.input_files.report_issue`).
"""

from __future__ import annotations

import csv
import gzip
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from data.jsonl import iter_json_objects
from data.pairs import detect_schema, peek_columns
from indexer.sources.documents import InputIssue
from training.input_files import CheckedInput, report_issue

logger = logging.getLogger(__name__)

LABELS_FILE = "labels.json"  # {"labels": [name of class 0, name of class 1, ...]}
DEFAULT_SCORE_RANGE = (0.0, 1.0)


@dataclass(frozen=True)
class PairRow:
    line: int
    values: dict  # the schema's columns; `score` and `margin` as float, `label` as read


def _raw_rows(path: Path) -> Iterator[tuple[int, dict]]:
    name = path.name.removesuffix(".gz")
    opener = gzip.open if path.suffix == ".gz" else open
    if name.endswith((".csv", ".tsv")):
        with opener(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t" if name.endswith(".tsv") else ",")
            for row in reader:
                yield reader.line_num, row
    else:
        with opener(path, "rt", encoding="utf-8", newline="\n") as handle:
            yield from iter_json_objects(handle, path)


def read_pair_rows(source: CheckedInput, strict: bool = False) -> list[PairRow]:
    """The rows of a .jsonl/.csv/.tsv pair file restricted to its schema (data/pairs.py)."""
    if not source.path.is_file():
        raise ValueError(f"Pair file {str(source.shown)!r} does not exist.")
    schema = detect_schema(set(peek_columns(source.path)), source.shown)
    rows = []
    for line, raw in _raw_rows(source.path):
        values, problem = _schema_values(raw, schema)
        if problem is not None:
            report_issue(InputIssue(str(source.shown), line, f"malformed row ({problem})"), strict)
            continue
        rows.append(PairRow(line, values))
    return rows


def _schema_values(raw: dict, schema: tuple[str, ...]) -> tuple[dict, str | None]:
    values: dict[str, object] = {}
    for column in schema:
        value = raw.get(column)
        if column in ("score", "margin"):
            try:
                values[column] = float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                return values, f"{column} {value!r} is not a number"
        elif column == "label":
            if value is None or (isinstance(value, str) and not value.strip()):
                return values, "label is empty"
            values[column] = value.strip() if isinstance(value, str) else value
        elif not isinstance(value, str) or not value.strip():
            return values, f"column {column!r} is empty or not text"
        else:
            values[column] = value
    return values, None


def _as_id(value: object) -> int | None:
    """A label that is a class id (1, "1", 1.0), else None (a name)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return int(number) if number.is_integer() else None


def class_labels(rows: list[PairRow], shown: Path) -> tuple[list[int], tuple[str, ...] | None]:
    """(class id per row, class names or None): ids 0..K-1 as given, or names numbered in sorted order."""
    ids = [_as_id(row.values["label"]) for row in rows]
    named = [row for row, label_id in zip(rows, ids, strict=True) if label_id is None]
    if named and len(named) < len(rows):
        numbered = next(row for row, label_id in zip(rows, ids, strict=True) if label_id is not None)
        raise ValueError(
            f"{shown}:{named[0].line}: label {named[0].values['label']!r} is a name, but line {numbered.line} "
            f"has the class id {numbered.values['label']!r}. Use ids 0..K-1 or names, not both."
        )
    if named:
        names = tuple(sorted({str(row.values["label"]) for row in rows}))
        logger.info("%s: %d classes by name, numbered %s", shown, len(names),
                    ", ".join(f"{index}={name}" for index, name in enumerate(names)))
        return [names.index(str(row.values["label"])) for row in rows], names
    numbers = [int(label_id or 0) for label_id in ids]  # every label is an id here
    used = sorted(set(numbers))
    for row, label_id in zip(rows, numbers, strict=True):
        if label_id < 0 or label_id >= len(used):
            raise ValueError(
                f"{shown}:{row.line}: label {row.values['label']!r} is not a class id 0..{len(used) - 1}: the file "
                f"uses {len(used)} distinct ids ({', '.join(map(str, used[:10]))}{', ...' if len(used) > 10 else ''}), "
                "and ids must run 0..K-1 with every id used. Renumber them, or write the class names instead."
            )
    return numbers, None


def save_label_names(folder: Path, names: tuple[str, ...] | None) -> None:
    """Write the class names beside the model, so class id i reads as a name again."""
    if names is not None:
        (Path(folder) / LABELS_FILE).write_text(json.dumps({"labels": list(names)}, indent=2) + "\n")


def scaled_scores(rows: list[PairRow], shown: Path, score_range: tuple[float, float] | None) -> list[float]:
    """Each row's score mapped from its scale (`score_range`, else 0-1) to 0-1; a score outside
    the scale is refused with its line."""
    low, high = score_range or DEFAULT_SCORE_RANGE
    for row in rows:
        score = row.values["score"]
        if not low <= score <= high:
            hint = ("pass --score-range LOW HIGH with the scale of your file (e.g. --score-range 0 5)"
                    if score_range is None else "fix the score or widen --score-range")
            raise ValueError(f"{shown}:{row.line}: score {score:g} lies outside the scale {low:g}-{high:g}; {hint}.")
    origin = "--score-range" if score_range else "the default for a pair file; set another with --score-range"
    logger.info("scores in %s: scale %g-%g (%s), mapped to 0-1", shown, low, high, origin)
    return [(row.values["score"] - low) / (high - low) for row in rows]
