"""Stop words for BM25, measured on the dev sets: Lucene's classic 33 English words (bm25s "en",
the index's list until 2026-11-28) against fuller lists, and the question words of everyday queries.

A query such as "where can I leave my bike" is matched by BM25 on "where", "can" and "leaving"
with the 33-word list. Each candidate list builds a BM25 store in memory over each dev index's
stored passages (the indexer's own `bm25_document`, title weight included), then ranks every judged
query with BM25 alone and with the default hybrid, from the same dense lists, by the searcher's own
ranking (`bench_relevance.rank`). The dev sets (`data.dev_sets.ALL_DEV_SETS`): SciFact train
queries held out, Wikipedia lead questions, Wikinews headlines, and the questions of Debian's
FAQs, whose "How do I ...?" wording is where question words weigh most; never a test split.

The rule (`verdict`), against the 33 words: a list qualifies when, in BM25 and in the default
hybrid alike, it raises nDCG@10 on the mean of the sets and loses on no set beyond chance (no
set's paired bootstrap 95% interval of the change lies wholly below 0); of those, the largest
mean gain of the default hybrid is chosen, and the index's `STOPWORDS` should name it. (On three
sets the rule was "helps both on every set", under which one Wikinews query moving down, -0.0007
on the mean, vetoed a list that gained 0.015 on the FAQs; a change that small is a tie.)

    python bench/bench_stopwords.py [--sets ...] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from bench.bench_relevance import (  # noqa: E402
    Setting,
    add_dev_arguments,
    dev_index,
    fetch_lists,
    open_dev_sets,
    per_query_ndcg,
    relisted,
)
from bench.record import markdown_table, record  # noqa: E402
from bench.stats import BOOTSTRAP, paired_interval  # noqa: E402
from data.dev_sets import ALL_DEV_SETS  # noqa: E402
from indexer.store.bm25_store import (  # noqa: E402
    STOPWORD_LISTS,
    STOPWORDS,
    TITLE_REPEATS,
    BM25Store,
    bm25_document,
)
from search import SearchConfig, Searcher  # noqa: E402

# Words that ask rather than say: what people type before the words that matter.
QUESTION_WORDS = ("how", "what", "when", "where", "which", "who", "whom", "whose", "why", "can", "could",
                  "do", "does", "did", "should", "would", "will", "i", "me", "my", "you", "your", "we", "our")


REFERENCE = "Lucene classic (33, bm25s \"en\")"


def stopword_lists() -> dict[str, tuple[str, ...]]:
    """The candidate lists, by name: Lucene's 33 (the reference), it plus question words, NLTK's 179
    (bm25s "en_plus"), and scikit-learn's 318."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    base = tuple(STOPWORD_LISTS["en"])
    return {
        REFERENCE: base,
        "Lucene's 33 + question words": tuple(sorted(set(base) | set(QUESTION_WORDS))),
        "NLTK (179, bm25s \"en_plus\")": tuple(STOPWORD_LISTS["en_plus"]),
        "scikit-learn (318)": tuple(sorted(ENGLISH_STOP_WORDS)),
    }


def index_list() -> str:
    """The candidate the index is built with (`STOPWORDS`)."""
    return next(label for label, words in stopword_lists().items() if words == STOPWORD_LISTS[STOPWORDS])


def store_with(searcher: Searcher, stopwords: tuple[str, ...]) -> BM25Store:
    """A BM25 store over the index's passages, as the indexer writes them, with `stopwords`."""
    ids = searcher.index.snapshot().bm25.ids()
    records = searcher.index.passages([int(i) for i in ids])
    texts = [bm25_document(records[int(p)].title, records[int(p)].text, TITLE_REPEATS) for p in ids]
    return BM25Store.build(ids, texts, title_repeats=TITLE_REPEATS, stopwords=list(stopwords))


def default_hybrid() -> Setting:
    config = SearchConfig()
    fusion = config.fusion_for()
    return Setting("hybrid", fusion.method, fusion.weight, config.second_passage_for("hybrid", fusion.method),
                   config.fusion_depth)


# Per list, per dev set: each judged query's nDCG@10 with BM25 alone and with the default hybrid.
Scores = dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]


def measure(dev_dir: Path, data_dir: Path, scifact_index: Path, names: tuple[str, ...] = ALL_DEV_SETS) -> Scores:
    """Each list's per-query nDCG@10 (BM25, default hybrid) on the dev sets `names`."""
    lists = stopword_lists()
    bm25_setting = Setting("bm25", second=SearchConfig().second_passage_weight)
    hybrid = default_hybrid()
    out: Scores = {name: {} for name in lists}
    for name, dev in open_dev_sets(dev_dir, data_dir, names).items():
        with Searcher(dev_index(dev, dev_dir, scifact_index)) as searcher:
            started = time.perf_counter()
            fetched = fetch_lists(searcher, dev.queries)
            total = searcher.stats().passages
            for label, words in lists.items():
                relist = relisted(searcher, fetched, dev.queries, store_with(searcher, words))
                out[label][name] = (per_query_ndcg(relist, dev.qrels, bm25_setting, total),
                                    per_query_ndcg(relist, dev.qrels, hybrid, total))
            print(f"{name}: {len(dev.queries)} queries in {time.perf_counter() - started:.0f} s", flush=True)
    return out


@dataclass(frozen=True)
class Change:
    """One list against the reference on one set and ranking: the mean change and its interval."""

    mean: float
    low: float
    high: float


def changes(results: Scores, reference: str = REFERENCE) -> dict[str, dict[str, tuple[Change, Change]]]:
    """Each other list's (BM25, hybrid) change in nDCG@10 against `reference`, per set."""
    out: dict[str, dict[str, tuple[Change, Change]]] = {}
    for label, by_set in results.items():
        if label == reference:
            continue
        out[label] = {}
        for name, pair in by_set.items():
            cells = []
            for ours, theirs in zip(pair, results[reference][name], strict=True):
                diff = ours - theirs
                cells.append(Change(float(diff.mean()), *paired_interval(diff)))
            out[label][name] = (cells[0], cells[1])
    return out


def verdict(changed: dict[str, dict[str, tuple[Change, Change]]]) -> tuple[dict[str, bool], str | None]:
    """Which lists qualify (both rankings: a mean gain over the sets, and no set whose interval lies
    wholly below 0), and the chosen one, the largest mean hybrid gain among them (None: keep the
    reference)."""
    qualifies = {}
    for label, by_set in changed.items():
        means = [float(np.mean([cells[r].mean for cells in by_set.values()])) for r in (0, 1)]
        qualifies[label] = all(m > 0 for m in means) and not any(c.high < 0 for cells in by_set.values() for c in cells)
    chosen = max((label for label, ok in qualifies.items() if ok),
                 key=lambda label: np.mean([cells[1].mean for cells in changed[label].values()]), default=None)
    return qualifies, chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dev_arguments(parser)
    parser.add_argument("--sets", nargs="+", choices=ALL_DEV_SETS, default=list(ALL_DEV_SETS))
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    sets = [name for name in ALL_DEV_SETS if name in args.sets]
    results = measure(args.dev_dir, args.data, args.scifact_index, tuple(sets))
    changed = changes(results)
    qualifies, chosen = verdict(changed)
    shipped = index_list()
    rows = []
    for label, by_set in results.items():
        cells = [f"{by_set[s][0].mean():.3f} / {by_set[s][1].mean():.3f}" for s in sets]
        if label == REFERENCE:
            state = "the reference"
        else:
            state = ("chosen" if label == chosen else "qualifies" if qualifies[label] else "does not qualify")
            cells = [f"{cell} ({changed[label][s][0].mean:+.3f} [{changed[label][s][0].low:+.3f}, "
                     f"{changed[label][s][0].high:+.3f}] / {changed[label][s][1].mean:+.3f} "
                     f"[{changed[label][s][1].low:+.3f}, {changed[label][s][1].high:+.3f}])"
                     for cell, s in zip(cells, sets, strict=True)]
        rows.append([label + (" (the index's)" if label == shipped else ""), len(stopword_lists()[label]),
                     *cells, state])
    table = markdown_table(["stop words", "words", *[f"{s}: BM25 / default hybrid nDCG@10 (change [95% interval])"
                                                     for s in sets], "verdict"], rows)
    agrees = (f"The index's list (`STOPWORDS` = {STOPWORDS!r}) is the chosen one." if shipped == (chosen or REFERENCE)
              else f"DIFFERS: the rule chooses {chosen or REFERENCE}, the index reads {shipped}.")
    body = (f"{table}\n\nBM25 stores built in memory over each dev index's stored passages (title written "
            f"{TITLE_REPEATS} times, as indexed); the dense lists are the same for every row. Changes are against "
            f"Lucene's 33, with a paired bootstrap 95% interval ({BOOTSTRAP} resamples of each set's queries). The "
            "rule: a list qualifies when BM25 and the default hybrid both gain on the mean of the sets and no set's "
            "interval lies wholly below 0; the largest mean hybrid gain among them is chosen. "
            f"{agrees} Question words: {', '.join(QUESTION_WORDS)}.")
    print(body)
    if not args.no_record:
        record("bench_stopwords", "BM25 stop words on the dev sets", body,
               command=" ".join(["python bench/bench_stopwords.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
