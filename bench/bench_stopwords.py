"""Stop words for BM25, measured on the dev sets: the 33-word English list the index uses (Lucene's
classic set, bm25s "en") against fuller lists, and the question words of everyday queries.

A query such as "where can I leave my bike" is matched by BM25 on "where", "can" and "leaving"
with the 33-word list. Each candidate list builds a BM25 store in memory over each dev index's
stored passages (the indexer's own `bm25_document`, title weight included), then ranks every judged
query with BM25 alone and with the default hybrid, from the same dense lists, by the searcher's own
ranking (`bench_relevance.rank`). The dev sets: SciFact train queries held out, Wikipedia lead
questions, Wikinews headlines (`data.dev_sets`); never a test split. A list replaces the index's
only if it helps BM25 and the default hybrid on every set.

    python bench/bench_stopwords.py [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS  # noqa: E402

from bench.bench_relevance import Setting, dev_index, fetch_lists, relisted, score  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.dev_sets import DEV_SETS, load_dev_sets  # noqa: E402
from data.paths import PROJECT_ROOT, shared_data_dir  # noqa: E402
from indexer.store.bm25_store import TITLE_REPEATS, BM25Store, bm25_document  # noqa: E402
from search import SearchConfig, Searcher  # noqa: E402

# Words that ask rather than say: what people type before the words that matter.
QUESTION_WORDS = ("how", "what", "when", "where", "which", "who", "whom", "whose", "why", "can", "could",
                  "do", "does", "did", "should", "would", "will", "i", "me", "my", "you", "your", "we", "our")


def stopword_lists() -> dict[str, tuple[str, ...]]:
    """The candidate lists, by name: the index's, it plus question words, NLTK's 179 (bm25s "en_plus"),
    and scikit-learn's 318."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    base = tuple(STOPWORDS_EN)
    return {
        "en (33, the index's)": base,
        "en + question words": tuple(sorted(set(base) | set(QUESTION_WORDS))),
        "NLTK (179)": tuple(STOPWORDS_EN_PLUS),
        "scikit-learn (318)": tuple(sorted(ENGLISH_STOP_WORDS)),
    }


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


def measure(dev_dir: Path, data_dir: Path, scifact_index: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """(BM25 nDCG@10, default hybrid nDCG@10) per list and dev set."""
    lists = stopword_lists()
    bm25_setting = Setting("bm25", second=SearchConfig().second_passage_weight)
    hybrid = default_hybrid()
    out: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in lists}
    for name, dev in load_dev_sets(dev_dir, data_dir).items():
        with Searcher(dev_index(dev, dev_dir, scifact_index)) as searcher:
            started = time.perf_counter()
            fetched = fetch_lists(searcher, dev.queries)
            total = searcher.stats().passages
            for label, words in lists.items():
                relist = relisted(searcher, fetched, dev.queries, store_with(searcher, words))
                out[label][name] = (score(relist, dev.qrels, bm25_setting, total)["ndcg@10"],
                                    score(relist, dev.qrels, hybrid, total)["ndcg@10"])
            print(f"{name}: {len(dev.queries)} queries in {time.perf_counter() - started:.0f} s", flush=True)
    return out


def verdict(results: dict[str, dict[str, tuple[float, float]]], baseline: str) -> dict[str, bool]:
    """Whether each list beats the baseline's BM25 and default hybrid on every dev set."""
    return {label: all(by_set[s][0] > results[baseline][s][0] and by_set[s][1] > results[baseline][s][1]
                       for s in by_set)
            for label, by_set in results.items() if label != baseline}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--dev-dir", type=Path, default=PROJECT_ROOT / ".cache" / "dev")
    parser.add_argument("--scifact-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    results = measure(args.dev_dir, args.data, args.scifact_index)
    baseline = next(iter(results))
    helps = verdict(results, baseline)
    sets = list(DEV_SETS)
    rows = [[label, len(stopword_lists()[label]),
             *[f"{by_set[s][0]:.3f} / {by_set[s][1]:.3f}" for s in sets],
             "baseline" if label == baseline else ("helps on every set" if helps[label] else "does not help on every set")]
            for label, by_set in results.items()]
    table = markdown_table(["stop words", "words", *[f"{s}: BM25 / default hybrid nDCG@10" for s in sets], "verdict"], rows)
    body = (f"{table}\n\nBM25 stores built in memory over each dev index's stored passages (title written "
            f"{TITLE_REPEATS} times, as indexed); the dense lists are the same for every row. Question words: "
            f"{', '.join(QUESTION_WORDS)}.")
    print(body)
    if not args.no_record:
        record("bench_stopwords", "BM25 stop words on the dev sets", body, command="python bench/bench_stopwords.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
