"""The columnar evaluation of filters agrees with a per-document reading of the language."""

from __future__ import annotations

import random

import numpy as np
import pytest

from indexer.store.field_index import FieldColumn, FieldIndex, _extension
from indexer.store.metadata_filter import parse_filter
from tests.indexer.store.filter_reference import matches, random_filter, random_metadata

FIELDS = ("tag", "year", "date", "urgent", "author", "score", "nothing", "_id", "_path", "_type")


def documents(rng: random.Random, n: int) -> list[dict]:
    out = []
    for i in range(n):
        doc = random_metadata(rng)
        doc["_id"] = f"{rng.choice(['a', 'ab', 'b'])}/{i}"
        doc["_path"] = rng.choice(["docs/t.jsonl", "notes/n.csv", "a/readme.md", "a/B.MD"])
        out.append(doc)
    return out


def columns_of(docs: list[dict], first_row: int = 0) -> dict[str, FieldColumn]:
    def value(doc: dict, field: str):
        if field == "_type":
            return True, _extension(doc["_path"])
        return field in doc, doc.get(field)

    return {f: FieldColumn.of([value(d, f) for d in docs], first_row) for f in FIELDS}


def reference_doc(doc: dict) -> dict:
    return {**doc, "_type": _extension(doc["_path"])}


@pytest.mark.parametrize("seed", range(4))
def test_random_filters_match_the_per_document_reading(seed):
    rng = random.Random(seed)
    docs = documents(rng, 300)
    index = FieldIndex("base", np.arange(1, len(docs) + 1, dtype=np.int64), columns_of(docs))
    ids = [d["_id"] for d in docs]
    checked = 0
    for _ in range(150):
        flt = random_filter(rng, ids)
        got = index.evaluate(parse_filter(flt))
        want = np.array([matches(flt, reference_doc(d)) for d in docs])
        assert np.array_equal(got, want), flt
        checked += int(want.sum())
    assert checked > 0  # the filters matched something, so equality was not all-False


def test_a_column_extended_with_new_documents_equals_one_built_at_once():
    rng = random.Random(7)
    docs = documents(rng, 200)
    whole = columns_of(docs)
    first, rest = columns_of(docs[:120]), columns_of(docs[120:], first_row=120)
    doc_ids = np.arange(1, 201, dtype=np.int64)
    joined = FieldIndex("base", doc_ids, {f: first[f].extended(rest[f]) for f in FIELDS})
    at_once = FieldIndex("base", doc_ids, whole)
    for _ in range(100):
        flt = parse_filter(random_filter(rng, [d["_id"] for d in docs]))
        assert np.array_equal(joined.evaluate(flt), at_once.evaluate(flt))


def test_numbers_match_numeric_text_but_strings_do_not_match_numbers():
    docs = [{"year": 2025}, {"year": "2025"}, {"year": "2025.0"}, {"year": " 2025 "}, {"year": "MMXXV"},
            {"year": True}, {"year": [2024, "2025"]}]
    for doc, i in zip(docs, range(len(docs)), strict=True):
        doc["_id"], doc["_path"] = str(i), "x.jsonl"
    index = FieldIndex("base", np.arange(1, len(docs) + 1, dtype=np.int64), columns_of(docs))
    assert index.evaluate(parse_filter({"year": 2025})).tolist() == [True, True, True, True, False, False, True]
    assert index.evaluate(parse_filter({"year": "2025"})).tolist() == [False, True, False, False, False, False, True]
    assert index.evaluate(parse_filter({"year": True})).tolist() == [False] * 5 + [True, False]


def test_a_date_range_ignores_strings_that_are_not_dates():
    docs = [{"d": "2025-03-01"}, {"d": "2025-03-01T08:00:00Z"}, {"d": "open"}, {"d": "2024-12-31"}, {"d": 20250301}]
    for doc, i in zip(docs, range(len(docs)), strict=True):
        doc["_id"], doc["_path"] = str(i), "x.jsonl"
    columns = {"d": FieldColumn.of([(True, d["d"]) for d in docs])}
    index = FieldIndex("base", np.arange(1, 6, dtype=np.int64), columns)
    assert index.evaluate(parse_filter({"d": {"$gte": "2025-01-01"}})).tolist() == [True, True, False, False, False]
    assert index.evaluate(parse_filter({"d": {"$lt": "2025-03-01T00:00"}})).tolist() == [True, False, False, True, False]


def test_prefix_is_case_sensitive_and_exact_at_the_edges():
    values = ["tickets/1", "tickets/", "tickets", "Tickets/2", "tickets0", "tickets/\U0010ffff"]
    index = FieldIndex("b", np.arange(1, 7, dtype=np.int64), {"_id": FieldColumn.of([(True, v) for v in values])})
    assert index.evaluate(parse_filter({"_id": {"$prefix": "tickets/"}})).tolist() == [
        True, True, False, False, False, True]


def test_a_field_no_document_holds_as_text_matches_nothing():
    numbers_only = FieldIndex("b", np.arange(1, 3, dtype=np.int64), {"n": FieldColumn.of([(True, 1), (False, None)])})
    assert numbers_only.evaluate(parse_filter({"n": {"$in": ["a", 1]}})).tolist() == [True, False]
    assert numbers_only.evaluate(parse_filter({"n": "a"})).tolist() == [False, False]


@pytest.mark.parametrize("arrays", [False, True], ids=["one-number-each", "arrays-and-text"])
def test_numeric_ranges_agree_with_comparing_every_value_narrow_and_wide(arrays):
    """A range is found in the column's sorted numbers when it keeps few entries, else by comparing
    every entry: both paths, bounds merged across conditions on one field, ties at a bound, and
    values that are not numbers, against the per-document reading."""
    rng = random.Random(11)
    docs = []
    for i in range(2_000):
        value = rng.randint(0, 400)
        if arrays and i % 3 == 0:
            value = [value, str(rng.randint(0, 400)), "n/a"]  # any element may match; "n/a" never
        elif arrays and i % 7 == 0:
            value = "not a number"
        docs.append({"year": value, "_id": str(i), "_path": "x.jsonl"})
    index = FieldIndex("base", np.arange(1, len(docs) + 1, dtype=np.int64), columns_of(docs))
    kept = []
    for _ in range(200):
        low = rng.randint(-10, 410)
        width = rng.choice([0, 1, 3, 20, 200, 450])
        flt = {"year": {rng.choice(["$gt", "$gte"]): low, rng.choice(["$lt", "$lte"]): low + width}}
        if rng.random() < 0.3:  # one-sided, or a second lower bound on the same field
            flt = {"$and": [flt, {"year": {rng.choice(["$gt", "$gte"]): low + rng.randint(-2, 2)}}]}
        got = index.evaluate(parse_filter(flt))
        want = np.array([matches(flt, reference_doc(d)) for d in docs])
        assert np.array_equal(got, want), flt
        kept.append(want.mean())
    assert min(kept) == 0 and max(kept) > 0.5 and any(0 < k < 1 / 8 for k in kept)  # every path was taken
