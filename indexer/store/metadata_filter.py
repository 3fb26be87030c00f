"""The metadata filter language: a small JSON shape, in the style of MongoDB's query documents.

    {"tag": "billing"}                                  equals (an array field: any element)
    {"tag": {"$in": ["billing", "refund"]}}             one of
    {"tag": {"$ne": "spam"}}, {"tag": {"$nin": [...]}}  not equal / none of (a missing field passes)
    {"year": {"$gte": 2020, "$lt": 2025}}               range on numbers
    {"date": {"$gte": "2025-01-01"}}                    range on ISO 8601 dates
    {"author": {"$exists": true}}                       the field is present (false: absent)
    {"_id": {"$prefix": "tickets/"}}                    prefix of a string
    {"$and": [F, ...]}, {"$or": [F, ...]}, {"$not": F}  combinations; several keys in one
                                                         object are combined with $and

Fields are the top-level keys of a document's metadata (JSONL fields, CSV columns), and three
fields every document has: `_id` (its id), `_path` (the file it was read from, as hits show it
in `source`) and `_type` (that file's extension in lower case: "md", "jsonl", "csv", ...).

How values get their types. A field keeps the JSON type it was stored with: JSONL values as
written, CSV cells as text. A condition's value decides what it compares with:
- a string matches string values (and string elements of an array), exactly;
- a number matches numbers, and text that reads as a decimal number, so a CSV column of years
  filters as numbers: {"year": 2025} and {"year": {"$gte": 2020}} match "2025";
- true/false match booleans;
- a range bound is a number, or an ISO 8601 date (`YYYY-MM-DD`, optionally followed by a time
  `THH:MM`, `:SS`, fractions, and a zone `Z` or `+HH:MM`), which compares as text with string
  values written the same way (values that are not such dates never match a date range):
  dates written in one form (2025-03-01, or 2025-03-01T12:00:00Z) sort in time order as text.
Nothing else converts: {"year": "2025"} does not match the number 2025.

This module parses and checks; `indexer.store.field_index` evaluates. `parse_filter` refuses
anything else with a `FilterError` that names the part at fault and what to write instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from indexer.errors import SearchError
from indexer.sources.documents import RESERVED_FIELDS  # noqa: F401 -- the filter language names them; defined beside Document
from indexer.sources.json_records import json_kind

COMPARISONS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$prefix")
COMBINATIONS = ("$and", "$or", "$not")
RANGE_OPS = ("$gt", "$gte", "$lt", "$lte")
MAX_CONDITIONS = 1000  # atoms in one filter, `$in` values counted singly
MAX_LIST = 1000  # values in one `$in`/`$nin`, filters in one `$and`/`$or`
MAX_DEPTH = 16
MAX_FILTER_CHARS = 65_536
ISO_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]{1,9})?)?)?(Z|[+-][0-9]{2}:[0-9]{2})?"
_ISO_DATE = re.compile(ISO_DATE)

Scalar = str | int | float | bool


class FilterError(SearchError, ValueError):
    """A filter that is not valid JSON of the documented shape; the message says how to fix it."""


@dataclass(frozen=True)
class Condition:
    """One comparison of one field: `op` is "eq", "in", "gt", "gte", "lt", "lte", "exists" or
    "prefix" (`$ne` and `$nin` parse as `Not(Condition("eq"/"in"))`). `values` holds one value,
    or the `$in` list."""

    field: str
    op: str
    values: tuple[Scalar, ...]


@dataclass(frozen=True)
class All:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class AnyOf:
    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    part: Filter


Filter = Condition | All | AnyOf | Not


def parse_filter(value: object) -> Filter | None:
    """The filter `value` states (a mapping, or its JSON text); None for None or {}, which match
    every document. Raises FilterError."""
    if value is None or isinstance(value, (Condition, All, AnyOf, Not)):
        return value  # type: ignore[return-value]
    if isinstance(value, (str, bytes)):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        if len(text) > MAX_FILTER_CHARS:
            raise FilterError(f"The filter is {len(text):,} characters long; the limit is {MAX_FILTER_CHARS:,}.")
        try:
            value = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as err:
            raise FilterError(f"The filter is not valid JSON ({err.msg} at character {err.pos}). "
                              'Write an object such as {"tag": "billing"}.') from None
    counter = [0]
    parsed = _parse_object(value, "filter", 0, counter)
    return parsed


def _parse_object(value: object, where: str, depth: int, counter: list[int]) -> Filter | None:
    if depth > MAX_DEPTH:
        raise FilterError(f"The filter nests deeper than {MAX_DEPTH} levels at {where}; flatten it.")
    if not isinstance(value, Mapping):
        raise FilterError(f"{where} must be a JSON object such as {{\"tag\": \"billing\"}}, not "
                          f"{json_kind(value)}.")
    parts: list[Filter] = []
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            raise FilterError(f"{where} has an empty key; name a metadata field or one of "
                              f"{', '.join(COMBINATIONS)}.")
        here = f"{where}.{key}"
        if key in ("$and", "$or"):
            if not isinstance(item, list) or not item or len(item) > MAX_LIST:
                raise FilterError(f"{here} must be a list of 1 to {MAX_LIST} filters.")
            inner = [_parse_object(sub, f"{here}[{i}]", depth + 1, counter) for i, sub in enumerate(item)]
            kept = tuple(p for p in inner if p is not None)
            if key == "$or" and len(kept) < len(inner):
                continue  # one branch matches everything: so does the $or
            if kept:
                parts.append(kept[0] if len(kept) == 1 else (All(kept) if key == "$and" else AnyOf(kept)))
        elif key == "$not":
            inner_filter = _parse_object(item, here, depth + 1, counter)
            # Not of "everything" is "nothing": every document has an `_id`.
            parts.append(Not(inner_filter if inner_filter is not None else Condition("_id", "exists", ())))
        elif key.startswith("$"):
            raise FilterError(f"Unknown operator {key!r} at {where}. Combine filters with "
                              f"{', '.join(COMBINATIONS)}; compare a field with "
                              '{"FIELD": {"$gte": 1}}.')
        else:
            parts.extend(_parse_field(key, item, here, counter))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else All(tuple(parts))


def _parse_field(field: str, item: object, where: str, counter: list[int]) -> list[Filter]:
    if not isinstance(item, Mapping):
        return [_condition(field, "eq", (_scalar(item, where),), counter)]
    if not item:
        raise FilterError(f"{where} is an empty object; write a value, or an operator such as "
                          '{"$eq": "x"}.')
    out: list[Filter] = []
    for op, operand in item.items():
        here = f"{where}.{op}"
        if op not in COMPARISONS:
            hint = " ($not goes outside the field: {\"$not\": {FIELD: ...}})" if op == "$not" else ""
            raise FilterError(f"Unknown operator {op!r} at {where}; use one of {', '.join(COMPARISONS)}{hint}.")
        if op in ("$eq", "$ne"):
            condition = _condition(field, "eq", (_scalar(operand, here),), counter)
            out.append(condition if op == "$eq" else Not(condition))
        elif op in ("$in", "$nin"):
            if not isinstance(operand, list) or not operand or len(operand) > MAX_LIST:
                raise FilterError(f"{here} must be a list of 1 to {MAX_LIST} values, such as [\"a\", \"b\"].")
            values = tuple(dict.fromkeys(_scalar(v, f"{here}[{i}]") for i, v in enumerate(operand)))
            condition = _condition(field, "in", values, counter)
            out.append(condition if op == "$in" else Not(condition))
        elif op in RANGE_OPS:
            out.append(_condition(field, op[1:], (_bound(operand, here),), counter))
        elif op == "$exists":
            if not isinstance(operand, bool):
                raise FilterError(f"{here} must be true or false, not {json_kind(operand)}.")
            condition = _condition(field, "exists", (), counter)
            out.append(condition if operand else Not(condition))
        else:  # $prefix
            if not isinstance(operand, str) or not operand:
                raise FilterError(f"{here} must be a non-empty string, such as \"tickets/\".")
            out.append(_condition(field, "prefix", (operand,), counter))
    return out


def _condition(field: str, op: str, values: tuple[Scalar, ...], counter: list[int]) -> Condition:
    counter[0] += max(1, len(values))
    if counter[0] > MAX_CONDITIONS:
        raise FilterError(f"The filter has more than {MAX_CONDITIONS} conditions ($in values counted "
                          "one by one); split it, or give the documents a field to filter on.")
    return Condition(field, op, values)


def _scalar(value: object, where: str) -> Scalar:
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) or (isinstance(value, float) and value == value and abs(value) != float("inf")):
        return value
    if isinstance(value, list):
        raise FilterError(f"{where} is a list; to match any of several values write {{\"$in\": [...]}}.")
    raise FilterError(f"{where} must be a string, a number or true/false, not {json_kind(value)}.")


def _bound(value: object, where: str) -> Scalar:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FilterError(f"{where} must be a number or an ISO 8601 date such as \"2025-03-01\", "
                          f"not {json_kind(value)}.")
    if isinstance(value, str):
        if not is_iso_date(value):
            raise FilterError(f"{where} is {value!r}, which is not an ISO 8601 date; ranges compare numbers "
                              "or dates written like \"2025-03-01\" or \"2025-03-01T12:00:00Z\".")
        return value
    return _scalar(value, where)


def is_iso_date(text: str) -> bool:
    """True for a date written as the language reads one (`ISO_DATE`: `2025-03-01`,
    `2025-03-01T12:00Z`); the calendar is not checked, since dates compare as text."""
    return _ISO_DATE.fullmatch(text) is not None


def to_json(flt: Filter | None) -> dict[str, Any]:
    """The filter as JSON that `parse_filter` reads back to an equal filter."""
    if flt is None:
        return {}
    if isinstance(flt, All):
        return {"$and": [to_json(p) for p in flt.parts]}
    if isinstance(flt, AnyOf):
        return {"$or": [to_json(p) for p in flt.parts]}
    if isinstance(flt, Not):
        return {"$not": to_json(flt.part)}
    if flt.op == "exists":
        return {flt.field: {"$exists": True}}
    if flt.op == "in":
        return {flt.field: {"$in": list(flt.values)}}
    return {flt.field: {f"${flt.op}": flt.values[0]}}


def filter_key(flt: Filter | None) -> str:
    """A canonical text of `flt`, equal for equal filters: the key of cached matches."""
    return json.dumps(to_json(flt), sort_keys=True, separators=(",", ":"))


def fields_of(flt: Filter | None) -> set[str]:
    """The fields `flt` reads."""
    if flt is None:
        return set()
    if isinstance(flt, Condition):
        return {flt.field}
    if isinstance(flt, Not):
        return fields_of(flt.part)
    return set().union(*(fields_of(p) for p in flt.parts))


def json_schema(filter_ref: str, condition_ref: str) -> dict[str, dict[str, Any]]:
    """JSON Schemas of a filter and of one field's condition, each referring to the other by the
    given `$ref`s: what `parse_filter` accepts, less the limits a schema cannot state (at most
    MAX_DEPTH levels and MAX_CONDITIONS conditions)."""
    scalar = {"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]}
    values = {"type": "array", "items": scalar, "minItems": 1, "maxItems": MAX_LIST}
    bound = {"anyOf": [{"type": "number"}, {"type": "string", "pattern": f"^{ISO_DATE}$"}]}
    operators = {"$eq": scalar, "$ne": scalar, "$in": values, "$nin": values, "$gt": bound, "$gte": bound,
                 "$lt": bound, "$lte": bound, "$exists": {"type": "boolean"}, "$prefix": {"type": "string", "minLength": 1}}
    condition = {
        "title": "FieldCondition",
        "description": "A value (equals; on an array field, any element equals), or an object of operators, "
                       "all of which must hold.",
        "anyOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"},
                  {"type": "object", "properties": operators, "additionalProperties": False, "minProperties": 1}],
    }
    parts = {"type": "array", "items": {"$ref": filter_ref}, "minItems": 1, "maxItems": MAX_LIST}
    flt = {
        "title": "MetadataFilter",
        "description": "Keeps documents whose metadata matches, before ranking. Keys are metadata fields "
                       "(and _id, _path, _type) or $and/$or/$not; several keys must all hold. "
                       f"At most {MAX_DEPTH} levels and {MAX_CONDITIONS} conditions.",
        "type": "object",
        "properties": {"$and": parts, "$or": parts, "$not": {"$ref": filter_ref}},
        "patternProperties": {"^[^$]": {"$ref": condition_ref}},
        "additionalProperties": False,
        "examples": [{"tag": "billing", "year": {"$gte": 2025}},
                     {"$or": [{"_id": {"$prefix": "tickets/"}}, {"_type": {"$in": ["md", "txt"]}}]}],
    }
    return {"MetadataFilter": flt, "FieldCondition": condition}
