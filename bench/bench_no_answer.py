"""When may the app say "none of these passages is likely to answer"? Rules measured on the dev sets.

The search page warns when a result list holds nothing likely relevant, so a user whose question
the collection cannot answer is told so rather than shown its nearest noise. The warning reads
the hits' calibrated relevance (`search.relevance`). This script measures, per rule, how often
the warning is right:

1. **Lists.** For each dev set's index (`data.dev_sets.ALL_DEV_SETS`), its own judged queries
   (*answerable*: the answer is in the index) and `OFF_TOPIC` queries drawn from each other set
   (*off-topic*: news headlines against a FAQ, claims against an encyclopaedia; judged to have no
   answer there), searched through `Searcher.search_detailed` at k=10 in the default hybrid, dense,
   and the default hybrid reranked. Each list keeps its hits' relevance and whether each hit is
   judged relevant; the first `SCREEN_K` hits are the app's first page.
2. **Rules.** *best < t*: the best hit's relevance is under t (the app's rule, t =
   `search.relevance.NO_ANSWER_BELOW`, 0.2, its "weak match" cut). *sum < t*: the hits' relevances sum to under t. The sum is the expected
   number of relevant hits in the list, and, by the union bound, at least the chance that any of
   them is relevant, so under calibration "sum < t" means "the chance that any of these is
   relevant is at most t", whatever the hits' dependence.
3. **Measures.** A list is *answerless* when none of its hits is judged relevant (every off-topic
   list; an answerable one whose answer ranked lower). *Caught*: the share of answerless lists
   warned (higher is better); *false alarms*: the share of lists holding a relevant hit that were
   warned all the same (lower is better); *balanced*: the mean of caught and (1 - false alarms).
   Each figure is the mean over the four indexes. The rule kept has the highest balanced figure
   at the app's page size, averaged over the three rankings: one rule for every ranking.

Weaknesses: an off-topic query may be answered by another set's document after all (a headline
about a scientist against Wikipedia), and is still judged answerless, so a warning rightly left
out counts against "caught"; the relevance curves were
fitted on these same answerable lists (bench_calibration.py), so the answerable side is
in-sample; each answerable query has one judged answer, so a second relevant passage counts as
answerless.

Records "The no-answer warning" in BENCHMARKS.md; each index's lists are cached in
.cache/no_answer/ (`--reuse`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.bench_relevance import add_dev_arguments, dev_index, open_dev_sets
from bench.record import markdown_table, record
from data.dev_sets import ALL_DEV_SETS, DevSet
from data.paths import PROJECT_ROOT
from search.metrics import judged_queries
from search.params import SCREEN_K
from search.relevance import NO_ANSWER_BELOW

K = 10
OFF_TOPIC = 100  # queries drawn from each other set
SEED = 0
SETTINGS = {"hybrid": {"mode": "hybrid", "rerank": False}, "dense": {"mode": "dense", "rerank": False},
            "hybrid, reranked": {"mode": "hybrid", "rerank": True}}
CACHE_DIR = PROJECT_ROOT / ".cache" / "no_answer"


def any_relevant_bound(relevances: Sequence[float]) -> float:
    """At least the chance that one or more of these hits is relevant, given each one's calibrated
    relevance: their sum, at most 1 (the union bound, which holds however the hits depend on each
    other; it is also the number of relevant hits to expect among them)."""
    return min(1.0, float(sum(relevances)))


@dataclass(frozen=True)
class Rule:
    """Warn when the best hit's relevance ("best") or the sum of the hits' ("sum") is under `below`."""

    kind: str
    below: float

    @property
    def name(self) -> str:
        return f"{self.kind} < {self.below:g}"

    def warns(self, relevances: Sequence[float]) -> bool:
        if not relevances:
            return False
        value = max(relevances) if self.kind == "best" else any_relevant_bound(relevances)
        return value < self.below


RULES = (Rule("best", 0.2), Rule("best", 0.1),
         *(Rule("sum", t) for t in (0.1, 0.2, 0.3, 0.5)))


@dataclass(frozen=True)
class Scored:
    """One rule on a group of lists."""

    caught: float  # share of answerless lists warned
    false_alarms: float  # share of lists with a relevant hit warned
    answerless: int
    answered: int

    @property
    def balanced(self) -> float:
        return (self.caught + 1.0 - self.false_alarms) / 2.0


def score(rule: Rule, lists: Sequence[dict], k: int) -> Scored:
    """`lists`: each {"relevance": [...], "relevant": [...]}, truncated to their first `k` hits."""
    warned_answerless = warned_answered = answerless = answered = 0
    for item in lists:
        relevances, relevant = item["relevance"][:k], item["relevant"][:k]
        warned = rule.warns(relevances)
        if any(relevant):
            answered += 1
            warned_answered += warned
        else:
            answerless += 1
            warned_answerless += warned
    return Scored(warned_answerless / answerless if answerless else float("nan"),
                  warned_answered / answered if answered else float("nan"), answerless, answered)


def off_topic_queries(sets: dict[str, DevSet], name: str, per_set: int = OFF_TOPIC,
                      seed: int = SEED) -> dict[str, str]:
    """`per_set` judged queries of each set but `name`, drawn by `seed`, keyed "<set>/<query id>"."""
    chosen: dict[str, str] = {}
    for offset, (other, dev) in enumerate(sorted(sets.items())):
        if other == name:
            continue
        qids = [q for q in judged_queries(dev.qrels) if q in dev.queries]
        picked = np.random.default_rng(seed + offset).choice(len(qids), min(per_set, len(qids)), replace=False)
        chosen.update({f"{other}/{qids[int(i)]}": dev.queries[qids[int(i)]] for i in sorted(picked)})
    return chosen


def collect(searcher, dev: DevSet, off_topic: dict[str, str], log=print) -> dict[str, list[dict]]:
    """Per setting, each list: its query's kind, the hits' relevance and judged relevance."""
    answerable = {q: dev.queries[q] for q in judged_queries(dev.qrels) if q in dev.queries}
    out: dict[str, list[dict]] = {}
    for setting, params in SETTINGS.items():
        started = time.perf_counter()
        lists = []
        for kind, queries in (("answerable", answerable), ("off-topic", off_topic)):
            for qid, text in queries.items():
                result = searcher.search_detailed(text, k=K, **params)
                if any(hit.relevance is None for hit in result.hits):
                    raise SystemExit(f"{setting} hits carry no relevance ({result.relevance_note}); "
                                     "this measures the calibrated warning only")
                judged = dev.qrels.get(qid, {}) if kind == "answerable" else {}
                lists.append({"kind": kind, "relevance": [float(h.relevance) for h in result.hits],
                              "relevant": [judged.get(h.doc_id, 0) > 0 for h in result.hits]})
        out[setting] = lists
        log(f"  {dev.name} {setting}: {len(lists)} lists, {time.perf_counter() - started:.0f} s")
    return out


def report(data: dict[str, dict[str, list[dict]]], names: list[str]) -> tuple[str, Rule]:
    """(the BENCHMARKS.md body, the rule kept)."""
    rows = []
    balanced: dict[Rule, list[float]] = {r: [] for r in RULES}
    for setting in SETTINGS:
        for k in (SCREEN_K, K):
            for rule in RULES:
                per_set = [score(rule, data[n][setting], k) for n in names]
                caught = float(np.nanmean([s.caught for s in per_set]))
                alarms = float(np.nanmean([s.false_alarms for s in per_set]))
                both = (caught + 1 - alarms) / 2
                if k == SCREEN_K:
                    balanced[rule].append(both)
                rows.append([setting, k, f"`{rule.name}`", f"{caught:.3f}", f"{alarms:.3f}", f"{both:.3f}",
                             " · ".join(f"{s.caught:.2f}/{s.false_alarms:.2f}" for s in per_set)])
    kept = max(RULES, key=lambda r: (round(float(np.mean(balanced[r])), 4), -r.below))
    table = markdown_table(["ranking", "hits shown", "rule", "caught (answerless lists warned)",
                            "false alarms (lists with an answer warned)", "balanced",
                            "caught/false alarms per index: " + ", ".join(names)], rows)
    counts = []
    for n in names:
        lists = data[n]["hybrid"]
        answerable = sum(1 for item in lists if item["kind"] == "answerable")
        counts.append(f"{n}: {answerable} answerable, {len(lists) - answerable} off-topic")
    chosen = "; ".join(f"`{r.name}` {np.mean(balanced[r]):.3f}" for r in RULES)
    body = (
        f"When the app may say \"none of these passages is likely to answer\": each rule on each dev set's "
        f"index, with its own judged queries (answerable) and {OFF_TOPIC} queries drawn from each other set "
        f"(off-topic), searched at k={K} with the shipped calibration ({', '.join(counts)}). A list is "
        "answerless when none of its hits is judged relevant. *Caught*: answerless lists warned; *false "
        "alarms*: lists holding a relevant hit warned all the same; *balanced*: their mean, (caught + 1 - "
        f"false alarms) / 2; each the mean over the {len(names)} indexes. *best < t*: the best hit's "
        "relevance under t, the app's rule before this run (t = 0.2). *sum < t*: the hits' relevances "
        "sum to under t, which under calibration bounds the chance that any of them is relevant by t. "
        f"Hits shown {SCREEN_K} is the app's first page.\n\n{table}\n\n"
        f"Mean balanced figure at {SCREEN_K} hits over the three rankings: {chosen}. **Kept: `{kept.name}`** "
        f"(`search.relevance.NO_ANSWER_BELOW` = {NO_ANSWER_BELOW:g}"
        + ("" if kept.kind == "best" and abs(kept.below - NO_ANSWER_BELOW) < 1e-9 else
           "; **differs from the rule kept here: update it**") + ").")
    return body, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dev_arguments(parser)
    parser.add_argument("--reuse", action="store_true", help=f"read the lists cached in {CACHE_DIR}")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    names = list(ALL_DEV_SETS)
    sets = open_dev_sets(args.dev_dir, args.data)
    data: dict[str, dict[str, list[dict]]] = {}
    searched_s = 0.0
    for name in names:
        cache = CACHE_DIR / f"lists-{name}.json"
        if args.reuse and cache.is_file():
            cached = json.loads(cache.read_text())
            data[name], searched_s = cached["lists"], searched_s + cached["searched_s"]
            continue
        started = time.perf_counter()
        from search import Searcher, resolve_reranker

        reranker = resolve_reranker(rerank=True).load()
        with Searcher(dev_index(sets[name], args.dev_dir, args.scifact_index), reranker=reranker) as searcher:
            data[name] = collect(searcher, sets[name], off_topic_queries(sets, name),
                                 log=lambda line: print(line, flush=True))
        took = time.perf_counter() - started
        searched_s += took
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"searched_s": took, "lists": data[name]}))
    body, kept = report(data, names)
    body += f"\n\nSearching took {searched_s:.0f} s."
    print(body, flush=True)
    if not args.no_record:
        record("bench_no_answer", "The no-answer warning", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
