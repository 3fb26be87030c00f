"""The checks on what callers pass in, shared by every public function: a query, a sentence, a
list of sentences, a count. Each refuses with the error the family promises (`TypeError` for
the wrong type, `EmptyQueryError` or `ValueError` for a wrong value), naming the argument and
the fix, before any model runs."""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Set
from typing import Any

from search.errors import EmptyQueryError


def text_input(value: object, name: str, empty: str) -> str:
    """`value` stripped of surrounding whitespace; `empty` is the message for one without words."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, not {type(value).__name__}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(
            f"{name} holds a lone surrogate ({value[err.start]!r} at character {err.start}), which is no "
            "character: text decoded with errors='surrogateescape' or a broken UTF-16 pair. Decode the "
            "input with errors='replace', or remove it.") from None
    text = value.strip()
    if not text:
        raise EmptyQueryError(empty)
    return text


def ordered(values: object, name: str) -> list[Any]:
    """`values` as a list, in its order. A single string, a set (no order), a mapping or None is
    refused with a TypeError."""
    if isinstance(values, str):
        raise TypeError(f"{name} must be a list of strings, not a single string; wrap it in [...].")
    if values is None or isinstance(values, (Set, Mapping)) or not isinstance(values, Iterable):
        kind = "a set, which has no order" if isinstance(values, Set) else type(values).__name__
        raise TypeError(f"{name} must be a list of strings, not {kind}; pass a list.")
    return list(values)


def text_list(values: object, name: str, empty: str) -> list[str]:
    """`values` as a list of checked texts (`text_input`), in their order (`ordered`); `empty` is
    the advice for an item without words."""
    items = ordered(values, name)
    return [text_input(item, f"{name}[{pos}]", f"{name}[{pos}] is empty; {empty}") for pos, item in enumerate(items)]


def whole_number(name: str, value: object, minimum: int = 1, maximum: int | None = None) -> int:
    """`value` as an int from `minimum` (to `maximum`); a bool, a float (2.5, nan) or a string is a
    TypeError, as `SearchParams` checks k."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number, not {value!r} ({type(value).__name__}).")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        upper = f" and at most {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} ({value}) must be at least {minimum}{upper}.")
    return number
