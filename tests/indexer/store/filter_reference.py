"""A second, plain-Python reading of the filter language (`indexer.store.metadata_filter`'s
docstring), one document at a time: the brute force that the columnar evaluation and filtered
searches are checked against."""

from __future__ import annotations

import random
import re
from typing import Any

NUMBER_TEXT = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")


def _scalars(value: Any) -> list[Any]:
    if value is None or isinstance(value, dict):
        return []
    items = value if isinstance(value, list) else [value]
    return [v for v in items if v is not None and not isinstance(v, (dict, list))]


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and len(value) < 64 and NUMBER_TEXT.fullmatch(value):
        return float(value)
    return None


DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:\d{2})?", re.ASCII)


def _is_date(text: Any) -> bool:
    return isinstance(text, str) and DATE.fullmatch(text) is not None


def _equal(entry: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return isinstance(entry, bool) and entry == value
    if isinstance(value, str):
        return isinstance(entry, str) and entry == value
    number = _number(entry)
    return number is not None and number == float(value)


def _compare(entry: Any, op: str, bound: Any) -> bool:
    if isinstance(bound, str):
        if not (isinstance(entry, str) and _is_date(entry)):
            return False
        left, right = entry, bound
    else:
        number = _number(entry)
        if number is None:
            return False
        left, right = number, float(bound)
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def _field(document: dict[str, Any], field: str, condition: Any) -> bool:
    present = field in document
    entries = _scalars(document.get(field))
    if not isinstance(condition, dict):
        return any(_equal(e, condition) for e in entries)
    for op, value in condition.items():
        if op == "$eq":
            ok = any(_equal(e, value) for e in entries)
        elif op == "$ne":
            ok = not any(_equal(e, value) for e in entries)
        elif op == "$in":
            ok = any(_equal(e, v) for e in entries for v in value)
        elif op == "$nin":
            ok = not any(_equal(e, v) for e in entries for v in value)
        elif op == "$exists":
            ok = present == value
        elif op == "$prefix":
            ok = any(isinstance(e, str) and e.startswith(value) for e in entries)
        else:
            ok = any(_compare(e, op, value) for e in entries)
        if not ok:
            return False
    return True


def matches(flt: dict[str, Any], document: dict[str, Any]) -> bool:
    """Does `document` (its metadata plus `_id`, `_path`, `_type`) satisfy the filter JSON `flt`."""
    for key, value in flt.items():
        if key == "$and":
            ok = all(matches(f, document) for f in value)
        elif key == "$or":
            ok = any(matches(f, document) for f in value)
        elif key == "$not":
            ok = not matches(value, document)  # {} matches everything, so {"$not": {}} nothing
        else:
            ok = _field(document, key, value)
        if not ok:
            return False
    return True


TAGS = ["billing", "refund", "bug", "Billing", "billing/eu"]
DATES = ["2024-12-31", "2025-01-15", "2025-03-01", "2025-03-01T12:00:00Z", "2025-07-04", "not a date"]


def random_metadata(rng: random.Random) -> dict[str, Any]:
    """Metadata of the kinds users have: strings, arrays, numbers (some as text), booleans,
    dates, nulls, nested objects, and fields that are sometimes missing."""
    meta: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.6:
        meta["tag"] = rng.choice(TAGS)
    elif roll < 0.85:
        meta["tag"] = rng.sample(TAGS, rng.randint(1, 3))
    elif roll < 0.9:
        meta["tag"] = None
    if rng.random() < 0.9:
        year = rng.choice([2022, 2023, 2024, 2025, 2026])
        meta["year"] = str(year) if rng.random() < 0.3 else (float(year) if rng.random() < 0.1 else year)
    if rng.random() < 0.8:
        meta["date"] = rng.choice(DATES)
    if rng.random() < 0.5:
        meta["urgent"] = rng.random() < 0.5
    if rng.random() < 0.3:
        meta["author"] = rng.choice(["ana", "bo", {"name": "cy"}])
    if rng.random() < 0.7:
        meta["score"] = round(rng.uniform(0, 10), 2)
    return meta


def random_filter(rng: random.Random, ids: list[str], depth: int = 0) -> dict[str, Any]:
    """A random filter over the fields of `random_metadata` and the document fields."""
    roll = rng.random()
    if depth < 2 and roll < 0.25:
        op = rng.choice(["$and", "$or"])
        return {op: [random_filter(rng, ids, depth + 1) for _ in range(rng.randint(2, 3))]}
    if depth < 2 and roll < 0.33:
        return {"$not": random_filter(rng, ids, depth + 1)}
    kind = rng.choice(["tag", "tag_in", "year", "year_range", "date", "urgent", "exists", "score",
                       "prefix", "path", "type", "ne", "nin"])
    if kind == "tag":
        return {"tag": rng.choice(TAGS)}
    if kind == "tag_in":
        return {"tag": {"$in": rng.sample(TAGS, rng.randint(1, 3))}}
    if kind == "year":
        return {"year": rng.choice([2023, 2025, 2025.0])}
    if kind == "year_range":
        low = rng.choice([2022, 2023, 2024, 2025])
        return {"year": {rng.choice(["$gt", "$gte"]): low, rng.choice(["$lt", "$lte"]): low + rng.randint(0, 3)}}
    if kind == "date":
        return {"date": {rng.choice(["$gt", "$gte", "$lt", "$lte"]): rng.choice(DATES[:5])}}
    if kind == "urgent":
        return {"urgent": rng.random() < 0.5}
    if kind == "exists":
        return {rng.choice(["author", "tag", "nothing"]): {"$exists": rng.random() < 0.5}}
    if kind == "score":
        return {"score": {"$lt": round(rng.uniform(0, 10), 1)}}
    if kind == "prefix":
        prefix = rng.choice(ids)[: rng.randint(1, 6)]
        return {"_id": {"$prefix": prefix}}
    if kind == "path":
        return {"_path": {"$prefix": rng.choice(["docs", "notes", "a"])}}
    if kind == "type":
        return {"_type": rng.choice(["jsonl", "csv", "md"])}
    if kind == "ne":
        return {"tag": {"$ne": rng.choice(TAGS)}}
    return {"tag": {"$nin": rng.sample(TAGS, 2)}}
