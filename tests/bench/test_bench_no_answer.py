"""The no-answer warning's bench: its rules, what it counts as caught and as a false alarm, and
the off-topic queries it draws from the other dev sets."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_no_answer import RULES, Rule, any_relevant_bound, off_topic_queries, report, score
from data.dev_sets import DevSet
from search.relevance import NO_ANSWER_BELOW


def test_rules_read_the_best_hit_or_the_bound_on_any_hit() -> None:
    weak_each = [0.15, 0.1, 0.05]
    assert Rule("best", 0.2).warns(weak_each), "every hit is weak"
    assert not Rule("sum", 0.2).warns(weak_each), "together they hold an answer with up to 30% chance"
    assert Rule("sum", 0.5).warns(weak_each)
    assert not Rule("best", 0.2).warns([]) and not Rule("sum", 0.2).warns([])
    assert any_relevant_bound(weak_each) == pytest.approx(0.3) and any_relevant_bound([0.9, 0.8]) == 1.0
    assert Rule("best", NO_ANSWER_BELOW) in RULES, "the app's rule is among those measured"


def test_score_counts_caught_answerless_lists_and_false_alarms() -> None:
    lists = [
        {"relevance": [0.05, 0.02], "relevant": [False, False]},  # answerless, warned: caught
        {"relevance": [0.6, 0.1], "relevant": [False, False]},  # answerless, not warned
        {"relevance": [0.1, 0.05], "relevant": [False, True]},  # an answer, warned: a false alarm
        {"relevance": [0.9, 0.1], "relevant": [True, False]},  # an answer, not warned
    ]
    scored = score(Rule("sum", 0.2), lists, k=2)
    assert (scored.caught, scored.false_alarms, scored.answerless, scored.answered) == (0.5, 0.5, 2, 2)
    assert scored.balanced == 0.5
    first = score(Rule("sum", 0.2), lists, k=1)  # the third list's answer is off the first page
    assert (first.caught, first.false_alarms, first.answerless, first.answered) == (2 / 3, 0.0, 3, 1)


def _dev(name: str, n: int) -> DevSet:
    queries = {f"{name}{i}": f"question {i} of {name}" for i in range(n)}
    return DevSet(name, Path("."), queries, {q: {"d": 1} for q in queries})


def test_off_topic_queries_come_from_every_other_set_and_repeat() -> None:
    sets = {"a": _dev("a", 5), "b": _dev("b", 50), "c": _dev("c", 3)}
    drawn = off_topic_queries(sets, "a", per_set=10, seed=0)
    assert sorted({k.split("/")[0] for k in drawn}) == ["b", "c"]
    assert sum(k.startswith("b/") for k in drawn) == 10 and sum(k.startswith("c/") for k in drawn) == 3
    assert all(drawn[k] == sets[k.split("/")[0]].queries[k.split("/")[1]] for k in drawn)
    assert off_topic_queries(sets, "a", per_set=10, seed=0) == drawn


def test_the_report_keeps_the_rule_that_balances_best_and_names_a_stale_app_rule() -> None:
    answered = {"kind": "answerable", "relevance": [0.09, 0.08, 0.08, 0.0, 0.0], "relevant": [True] + [False] * 4}
    offtopic = {"kind": "off-topic", "relevance": [0.08, 0.05, 0.02, 0.0, 0.0], "relevant": [False] * 5}
    data = {name: {s: [answered, offtopic] for s in ("hybrid", "dense", "hybrid, reranked")} for name in "xy"}
    body, kept = report(data, ["x", "y"])
    # Both "best" rules warn the answered list (its best hit reads 9%); sum < 0.1 misses the
    # off-topic one (15% in all) and sum < 0.3 warns the answered one (25%): only sum < 0.2 tells
    # them apart.
    assert kept == Rule("sum", 0.2), kept
    assert f"**Kept: `{kept.name}`**" in body and "x: 1 answerable, 1 off-topic" in body
    assert "differs from the rule kept here" in body, "the app warns by the best hit (NO_ANSWER_BELOW)"
