"""Metadata fields as in-memory columns, and filters (`metadata_filter`) evaluated on them.

Why not evaluate filters in SQL. A new filter must cost a search little: the target is p95 at
most twice an unfiltered search (issue 29). Measured on 1M documents in SQLite 3.40 on this
2-core machine, a JSON predicate took 0.41-0.66 s as a table scan, and 0.24 s with an
expression index when half the rows matched (fetching 500k ids), against 5-150 ms for an
unfiltered search. So SQL picks each field out of every document once (`sql_store.
document_field_rows`, with the database's JSON functions), and the columns stay in memory
while the base build lives, like `DocumentMap`: a filter is then a few vector operations over
them, about a millisecond per condition at 1M documents. This is the payload index of the
vector databases (Qdrant, for one), kept beside SQL rather than instead of it.

A column holds, per document, whether the field is present, and its value as entries: one for
a scalar, one per scalar element for an array (so equality on an array means "any element",
as in MongoDB). Each entry has a text code (into the column's sorted distinct strings), a
number (JSON numbers, and text that reads as a decimal number) and a boolean, each or none.
Columns are built on first use of a field and extended with the documents later commits add
(row ids only grow). Metadata of a stored row never changes, except by `repair`, which writes
back what was stored; a base build (a merge or a rebuild) starts new columns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from indexer.store import sql_store
from indexer.store.metadata_filter import All, AnyOf, Condition, Filter, Not, is_iso_date
from indexer.store.sql_store import Connection

_BLOCK = 200_000  # rows per round trip while loading a column
# A numeric range that keeps at most 1 entry in this many is found in the column's sorted numbers
# (two binary searches, then one store per match) instead of by comparing every entry: at 1M
# entries, 0.05 ms for 1% against 0.7 ms; scattering more than about an eighth costs more than the
# comparison (measured in bench/bench_filters.py's new-filter rows).
_SPARSE_RANGE = 8
_BOUND_OPS = {"gt": (True, False), "gte": (True, True), "lt": (False, False), "lte": (False, True)}  # lower?, inclusive?
Bound = tuple[float, bool]  # a range's number, and whether the range includes it
_NUMBER_TEXT = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*")


@dataclass(frozen=True)
class FieldColumn:
    """One field over the documents of a `FieldIndex` (its `doc_ids`, position by position)."""

    present: np.ndarray  # bool per document
    row: np.ndarray  # int64: the document position of each entry
    text: np.ndarray  # int32 code into `texts`, -1 for an entry that is not a string
    number: np.ndarray  # float64, NaN for an entry that is not a number
    flag: np.ndarray  # int8: 1 true, 0 false, -1 not a boolean
    texts: np.ndarray  # the distinct strings, sorted (object array)
    single: bool = False  # every document has exactly one scalar entry, entry i for document i

    @classmethod
    def of(cls, values: Sequence[tuple[bool, Any]], first_row: int = 0) -> FieldColumn:
        """A column over len(values) documents from (present, value) pairs. One pass in Python
        sorts the entries by kind; the rest is numpy (1M documents in about a second)."""
        present = np.fromiter((p for p, _ in values), dtype=bool, count=len(values))
        rows: list[int] = []
        kinds = bytearray()  # per entry: 0 string, 1 number, 2 boolean
        strings: list[str] = []
        numbers: list[float] = []
        flags: list[int] = []
        for position, (found, value) in enumerate(values):
            if not found or value is None:
                continue
            for item in value if type(value) is list else (value,):
                kind = type(item)
                if kind is str:
                    strings.append(item)
                    kinds.append(0)
                elif kind is int or kind is float:
                    numbers.append(item)
                    kinds.append(1)
                elif kind is bool:
                    flags.append(item)
                    kinds.append(2)
                else:
                    continue  # null, objects, nested arrays: only $exists sees them
                rows.append(first_row + position)
        kind_of = np.frombuffer(bytes(kinds), dtype=np.uint8)
        texts, codes = np.unique(np.array(strings, dtype=object), return_inverse=True) if strings else (
            np.empty(0, dtype=object), np.empty(0, dtype=np.int64))
        text = np.full(len(kind_of), -1, dtype=np.int32)
        text[kind_of == 0] = codes
        # Numbers, and text that reads as a decimal number (decided once per distinct string).
        number = np.full(len(kind_of), np.nan, dtype=np.float64)
        number[kind_of == 1] = np.asarray(numbers, dtype=np.float64)
        if len(texts):
            number[kind_of == 0] = np.fromiter((_number(t) for t in texts.tolist()), np.float64, len(texts))[codes]
        flag = np.full(len(kind_of), -1, dtype=np.int8)
        flag[kind_of == 2] = np.asarray(flags, dtype=np.int8)
        row = np.asarray(rows, dtype=np.int64)
        single = len(row) == len(values) and bool(np.array_equal(row, np.arange(first_row, first_row + len(row))))
        return cls(present, row, text, number, flag, texts, single)

    def extended(self, more: FieldColumn) -> FieldColumn:
        """This column followed by `more` (whose rows already count from this one's end)."""
        texts = np.array(sorted(set(self.texts.tolist()) | set(more.texts.tolist())), dtype=object)

        def recode(codes: np.ndarray, old: np.ndarray) -> np.ndarray:
            if not len(old):
                return codes
            mapped = np.searchsorted(texts, old).astype(np.int32) if len(texts) else np.empty(0, np.int32)
            return np.where(codes >= 0, mapped[np.maximum(codes, 0)], -1).astype(np.int32)

        return FieldColumn(
            np.concatenate([self.present, more.present]),
            np.concatenate([self.row, more.row]),
            np.concatenate([recode(self.text, self.texts), recode(more.text, more.texts)]),
            np.concatenate([self.number, more.number]),
            np.concatenate([self.flag, more.flag]),
            texts,
            self.single and more.single,
        )

    def matches(self, condition: Condition, documents: int) -> np.ndarray:
        """A bool per document: does its value satisfy `condition`."""
        if condition.op == "exists":
            return self.present.copy()
        entries = self._entries(condition)
        if self.single:  # entry i is document i: no scatter (at 1M, 0.5 ms instead of 5)
            return entries
        hit = np.zeros(documents, dtype=bool)
        hit[self.row[entries]] = True
        return hit

    def in_range(self, low: Bound | None, high: Bound | None, documents: int) -> np.ndarray:
        """A bool per document: does any of its numbers lie between `low` and `high` (each a
        (number, inclusive) pair, or None for no bound)."""
        entries = self._numbers_between(low, high)
        if self.single:
            return entries
        hit = np.zeros(documents, dtype=bool)
        hit[self.row[entries]] = True
        return hit

    @cached_property
    def _sorted_numbers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(numbers ascending, the entry of each, each entry's place in that order): made on the
        first range over this column, about 0.1 s at 1M entries, then kept with it. An entry that
        is not a number is placed after every number, so no range reaches it."""
        numbered = np.flatnonzero(~np.isnan(self.number))
        order = numbered[np.argsort(self.number[numbered], kind="stable")]
        place = np.full(len(self.number), len(order), dtype=np.uint32)
        place[order] = np.arange(len(order), dtype=np.uint32)
        return self.number[order], order, place

    def _numbers_between(self, low: Bound | None, high: Bound | None) -> np.ndarray:
        values, order, place = self._sorted_numbers
        start = 0 if low is None else int(np.searchsorted(values, low[0], "left" if low[1] else "right"))
        end = len(values) if high is None else int(np.searchsorted(values, high[0], "right" if high[1] else "left"))
        width = max(0, end - start)
        if width <= len(self.number) // _SPARSE_RANGE:
            found = np.zeros(len(self.number), dtype=bool)
            found[order[start:start + width]] = True
            return found
        # start <= place < end as one comparison: below start, place - start wraps past any width.
        return (place - np.uint32(start)) < np.uint32(width)

    def _entries(self, condition: Condition) -> np.ndarray:
        op, values = condition.op, condition.values
        if op in ("eq", "in"):
            found = np.zeros(len(self.row), dtype=bool)
            strings = [v for v in values if isinstance(v, str)]
            numbers = [float(v) for v in values if not isinstance(v, (str, bool))]
            for flag in {int(v) for v in values if isinstance(v, bool)}:
                found |= self.flag == flag
            if strings:
                found |= np.isin(self.text, self._codes(strings))
            if numbers:
                found |= np.isin(self.number, numbers)
            return found
        value = values[0]
        if op == "prefix":
            low = int(np.searchsorted(self.texts, value, "left"))
            high = int(np.searchsorted(self.texts, _after_prefix(value), "left"))
            return (self.text >= low) & (self.text < high)
        if isinstance(value, str):  # an ISO date: compared with date-like strings, as text
            return self._date_range(op, value)
        is_low, inclusive = _BOUND_OPS[op]
        bound = (float(value), inclusive)
        return self._numbers_between(bound, None) if is_low else self._numbers_between(None, bound)

    def _codes(self, strings: list[str]) -> np.ndarray:
        if not len(self.texts):
            return np.empty(0, dtype=np.int32)
        at = np.searchsorted(self.texts, np.array(strings, dtype=object))
        return np.array([i for i, s in zip(at.tolist(), strings, strict=True)
                         if i < len(self.texts) and self.texts[i] == s], dtype=np.int32)

    def _date_range(self, op: str, bound: str) -> np.ndarray:
        left = int(np.searchsorted(self.texts, bound, "left"))
        right = int(np.searchsorted(self.texts, bound, "right"))
        low, high = {"gt": (right, len(self.texts)), "gte": (left, len(self.texts)),
                     "lt": (0, left), "lte": (0, right)}[op]
        dated = np.fromiter((is_iso_date(t) for t in self.texts[low:high].tolist()), dtype=bool, count=high - low)
        allowed = np.zeros(len(self.texts) + 1, dtype=bool)  # the last slot stands for "not a string"
        allowed[low:high] = dated
        return allowed[self.text]


@dataclass(frozen=True)
class FieldSummary:
    """What one field holds, for a page that offers filters on it."""

    name: str
    documents: int  # documents that have the field
    strings: tuple[str, ...]  # its most common string values, most common first
    distinct_strings: int
    number_range: tuple[float, float] | None  # the least and greatest number, if any
    booleans: bool  # whether any value is true/false


def summarise(column: FieldColumn, name: str, top: int = 50) -> FieldSummary:
    strings = column.text[column.text >= 0]
    counts = np.bincount(strings, minlength=len(column.texts)) if len(strings) else np.zeros(0, int)
    order = np.argsort(-counts, kind="stable")[:top]
    numbers = column.number[~np.isnan(column.number)]
    return FieldSummary(
        name=name,
        documents=int(np.count_nonzero(column.present)),
        strings=tuple(str(column.texts[i]) for i in order.tolist() if counts[i] > 0),
        distinct_strings=len(column.texts),
        number_range=(float(numbers.min()), float(numbers.max())) if len(numbers) else None,
        booleans=bool(np.any(column.flag >= 0)),
    )


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return float("nan")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and len(value) < 64 and _NUMBER_TEXT.fullmatch(value):
        return float(value)
    return float("nan")


def _after_prefix(prefix: str) -> str:
    """The least string greater than every string that starts with `prefix`."""
    last = ord(prefix[-1])
    return prefix[:-1] + chr(last + 1) if last < 0x10FFFF else prefix + "\U0010ffff"


class FieldIndex:
    """Columns of the fields filters have asked for, over every document up to `max_id`.

    Immutable: `with_fields` and `extended` return a new one, so a search holding it keeps a
    consistent view while another thread extends it.
    """

    def __init__(self, base: str, doc_ids: np.ndarray, columns: dict[str, FieldColumn]) -> None:
        self.base = base  # the base build's vector file: a new base starts new columns
        self.doc_ids = doc_ids
        self.columns = columns
        self.max_id = int(doc_ids[-1]) if len(doc_ids) else 0

    @classmethod
    def empty(cls, base: str) -> FieldIndex:
        return cls(base, np.empty(0, np.int64), {})

    def extended(self, conn: Connection) -> FieldIndex:
        """This index plus the documents stored since, every loaded column extended too."""
        new_ids = sql_store.document_ids_after(conn, self.max_id)
        if not len(new_ids):
            return self
        upto = int(new_ids[-1])
        columns = {name: column.extended(_load(conn, name, self.max_id, upto, new_ids, len(self.doc_ids)))
                   for name, column in self.columns.items()}
        return FieldIndex(self.base, np.concatenate([self.doc_ids, new_ids]), columns)

    def with_fields(self, conn: Connection, fields: set[str]) -> FieldIndex:
        """This index with a column for each of `fields` (loaded now for those it lacks)."""
        missing = sorted(fields - set(self.columns))
        if not missing:
            return self
        columns = dict(self.columns)
        for name in missing:
            columns[name] = _load(conn, name, 0, self.max_id, self.doc_ids, 0)
        return FieldIndex(self.base, self.doc_ids, columns)

    def evaluate(self, flt: Filter) -> np.ndarray:
        """A bool per document (`doc_ids` order): does it satisfy `flt`. Every field it names must
        have a column (`with_fields`)."""
        n = len(self.doc_ids)
        if isinstance(flt, Condition):
            return self.columns[flt.field].matches(flt, n)
        if isinstance(flt, Not):
            return ~self.evaluate(flt.part)
        assert isinstance(flt, (All, AnyOf))
        if isinstance(flt, All):
            return self._all(flt.parts, n)
        out = self.evaluate(flt.parts[0])
        for part in flt.parts[1:]:
            np.logical_or(out, self.evaluate(part), out=out)
        return out

    def _all(self, parts: Sequence[Filter], n: int) -> np.ndarray:
        """`All(parts)`, with the numeric bounds on one field (`{"u": {"$gte": a, "$lt": b}}`)
        taken as one range: found in the sorted numbers when it keeps few documents. Only on a
        column of one value per document: with arrays, as in MongoDB, each bound may be met by
        another element, which one range would not find."""
        ranges: dict[str, tuple[Bound | None, Bound | None]] = {}
        rest: list[Filter] = []
        for part in parts:
            if isinstance(part, Condition) and part.op in _BOUND_OPS and not isinstance(part.values[0], str) \
                    and self.columns[part.field].single:
                low, high = ranges.get(part.field, (None, None))
                is_low, inclusive = _BOUND_OPS[part.op]
                bound = (float(part.values[0]), inclusive)
                ranges[part.field] = (_tighter(low, bound, True), high) if is_low else (low, _tighter(high, bound, False))
            else:
                rest.append(part)
        found = [self.columns[field].in_range(low, high, n) for field, (low, high) in ranges.items()]
        found += [self.evaluate(part) for part in rest]
        out = found[0]
        for more in found[1:]:
            np.logical_and(out, more, out=out)
        return out


def _tighter(current: Bound | None, bound: Bound, lower: bool) -> Bound:
    """The tighter of two lower (or upper) bounds; at the same number, the exclusive one."""
    if current is None or current[0] != bound[0]:
        if current is None or (bound[0] > current[0]) == lower:
            return bound
        return current
    return (bound[0], current[1] and bound[1])


def _load(conn: Connection, field: str, after: int, upto: int, doc_ids: np.ndarray, first_row: int) -> FieldColumn:
    """The column of `field` over the documents `doc_ids` (ids after `after`, up to `upto`); a
    document SQL no longer holds (deleted since) reads as not having the field."""
    source = "_path" if field == "_type" else field
    found: dict[int, tuple[bool, Any]] = {}
    cursor = after
    while cursor < upto:
        rows = sql_store.document_field_rows(conn, source, cursor, _BLOCK, upto)
        if not rows:
            break
        found.update((row_id, (present, value)) for row_id, present, value in rows)
        cursor = rows[-1][0]
        if len(rows) < _BLOCK:
            break
    if field == "_type":
        found = {i: (True, _extension(v)) for i, (_, v) in found.items()}
    missing = (False, None)
    return FieldColumn.of([found.get(i, missing) for i in doc_ids.tolist()], first_row)


def _extension(source: Any) -> str | None:
    """A source's file extension in lower case, without the dot ("" for none)."""
    if not isinstance(source, str):
        return None
    return PurePosixPath(source.replace("\\", "/")).suffix.lower().lstrip(".")
