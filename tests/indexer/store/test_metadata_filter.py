"""The filter language: what parses, what it parses to, and the errors that name the fix."""

from __future__ import annotations

import pytest

from indexer.store.metadata_filter import (
    All,
    AnyOf,
    Condition,
    FilterError,
    Not,
    fields_of,
    filter_key,
    parse_filter,
    to_json,
)


def test_shapes_parse_to_their_conditions():
    assert parse_filter({"tag": "billing"}) == Condition("tag", "eq", ("billing",))
    assert parse_filter('{"year": {"$gte": 2020, "$lt": 2025}}') == All(
        (Condition("year", "gte", (2020,)), Condition("year", "lt", (2025,))))
    assert parse_filter({"tag": {"$ne": "spam"}}) == Not(Condition("tag", "eq", ("spam",)))
    assert parse_filter({"tag": {"$nin": ["a", "b", "a"]}}) == Not(Condition("tag", "in", ("a", "b")))
    assert parse_filter({"a": {"$exists": False}}) == Not(Condition("a", "exists", ()))
    assert parse_filter({"$or": [{"a": 1}, {"b": True}]}) == AnyOf(
        (Condition("a", "eq", (1,)), Condition("b", "eq", (True,))))


@pytest.mark.parametrize("empty", [None, {}, "", "  ", "{}", {"$and": [{}]}, {"$or": [{"a": 1}, {}]}])
def test_empty_filters_match_everything(empty):
    assert parse_filter(empty) is None


def test_the_canonical_key_ignores_key_order_and_round_trips():
    one = parse_filter({"a": 1, "b": {"$in": ["x", "y"]}})
    two = parse_filter({"b": {"$in": ["x", "y"]}, "a": 1})
    assert parse_filter(to_json(one)) == one
    assert filter_key(parse_filter({"$and": [{"a": 1}, {"b": 2}]})) == filter_key(parse_filter({"$and": [{"a": 1}, {"b": 2}]}))
    assert fields_of(one) == fields_of(two) == {"a", "b"}


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{tag: 1}", "not valid JSON"),
        ([{"a": 1}], "must be a JSON object"),
        ({"tag": {"$regex": "x"}}, r"Unknown operator '\$regex'.*\$prefix"),
        ({"$nor": [{"a": 1}]}, r"Unknown operator '\$nor'"),
        ({"tag": ["a", "b"]}, r"is a list; to match any of several values write \{\"\$in\""),
        ({"tag": {"$in": "a"}}, "list of 1 to 1000 values"),
        ({"tag": {"$in": []}}, "list of 1 to 1000 values"),
        ({"year": {"$gt": "soon"}}, "not an ISO 8601 date"),
        ({"year": {"$gt": True}}, "must be a number or an ISO 8601 date"),
        ({"a": {"$exists": 1}}, "must be true or false"),
        ({"a": {"$prefix": ""}}, "non-empty string"),
        ({"a": None}, "must be a string, a number or true/false, not null"),
        ({"a": float("nan")}, "must be a string, a number"),
        ({"a": {}}, "empty object"),
        ({"$and": []}, "list of 1 to 1000 filters"),
        ({"a": {"$not": {"$eq": 1}}}, r"\$not goes outside the field"),
        ({"a": {"$in": list(range(1001))}}, "list of 1 to 1000 values"),
        ({"$and": [{"a": {"$in": list(range(600))}}, {"b": {"$in": list(range(600))}}]}, "more than 1000 conditions"),
        ({"": 1}, "empty key"),
    ],
)
def test_bad_filters_name_the_part_and_the_fix(bad, message):
    with pytest.raises(FilterError, match=message):
        parse_filter(bad)


def test_a_filter_error_is_a_value_error_and_deep_nesting_is_refused():
    deep: dict = {"a": 1}
    for _ in range(20):
        deep = {"$not": deep}
    with pytest.raises(ValueError, match="nests deeper"):
        parse_filter(deep)


def test_not_of_an_empty_filter_matches_nothing():
    assert parse_filter({"$not": {}}) == Not(Condition("_id", "exists", ()))
