"""Short tails: a document's last few tokens as a passage of their own, or read with the text before.

Issue 38 saw the query "hosts" rank three man pages by their last passage, an author's address
a few tokens long whose embedding the title prefix dominates. By default the indexer now reads
a tail of under a quarter of a passage with the text before it (`indexer.sources.chunking`,
`IndexConfig.merge_short_tails`); `--keep-short-tails` cuts it as before. This script builds
each dev set both ways and measures both, in every retrieval mode, on the dev queries only
(`data.dev_sets.ALL_DEV_SETS`: SciFact train queries held out, Wikipedia lead questions, Wikinews
headlines, the questions of Debian's FAQs); never on a test split.

The default build (tails merged) is the index the other dev benchmarks read
(`bench_relevance.dev_index`: indexes/scifact and .cache/dev/index-*), so it is built once for
all of them; the peer (tails kept) goes to .cache/short-tail/. Both are reused when present.
Reported per set and mode: nDCG@10 and recall@100 both ways, the change, and a paired bootstrap
95% interval of the change in nDCG@10 over the queries.

Usage: python bench/bench_short_tail.py [--dev-dir .cache/dev] [--sets ...] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from bench.bench_relevance import add_dev_arguments, dev_index, open_dev_sets  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from bench.stats import BOOTSTRAP, paired_interval  # noqa: E402
from data.dev_sets import ALL_DEV_SETS, DevSet  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from search import Searcher, SearchParams  # noqa: E402
from search.eval import EVAL_DEPTH, run_queries  # noqa: E402
from search.metrics import ndcg_at_k, recall_at_k  # noqa: E402

MODES = ("dense", "bm25", "hybrid")


def merged_index(dev: DevSet, dev_dir: Path, scifact_index: Path) -> Path:
    """The default build, where the other dev benchmarks read it (built here when missing)."""
    index_dir = dev_index(dev, dev_dir, scifact_index)
    if not (index_dir / "index.json").is_file():
        build_index(IndexConfig(source=dev.corpus_dir, index_dir=index_dir))
    return index_dir


def kept_index(dev: DevSet, out: Path) -> Path:
    """The peer: the same corpus with short tails cut as passages of their own."""
    index_dir = out / f"index-{dev.name}-kept"
    if not (index_dir / "index.json").is_file():
        build_index(IndexConfig(source=dev.corpus_dir, index_dir=index_dir, merge_short_tails=False))
    return index_dir


def per_query(searcher: Searcher, dev: DevSet, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """nDCG@10 and recall@100 of every judged dev query, in `mode`."""
    qids = sorted(dev.qrels)
    rankings, _ = run_queries(searcher, dev.queries, qids, SearchParams(k=EVAL_DEPTH, mode=mode))
    ndcg = np.array([ndcg_at_k(rankings[q], dev.qrels[q], 10) for q in qids])
    recall = np.array([recall_at_k(rankings[q], dev.qrels[q], 100) for q in qids])
    return ndcg, recall


def passages_of(index_dir: Path) -> int:
    with Searcher(index_dir) as searcher:
        return searcher.stats().passages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dev_arguments(parser)
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / ".cache" / "short-tail")
    parser.add_argument("--sets", nargs="+", default=list(ALL_DEV_SETS), choices=ALL_DEV_SETS)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    sets = open_dev_sets(args.dev_dir, args.data, tuple(args.sets))
    rows: list[list[object]] = []
    changes: list[float] = []
    notes: list[str] = []
    for name in args.sets:
        dev = sets[name]
        merged_dir, kept_dir = merged_index(dev, args.dev_dir, args.scifact_index), kept_index(dev, args.out)
        notes.append(f"{name}: {len(dev.qrels)} queries; {passages_of(kept_dir):,} passages with tails kept, "
                     f"{passages_of(merged_dir):,} with short tails merged")
        with Searcher(kept_dir) as kept, Searcher(merged_dir) as merged:
            for mode in MODES:
                (k_ndcg, k_rec), (m_ndcg, m_rec) = per_query(kept, dev, mode), per_query(merged, dev, mode)
                low, high = paired_interval(m_ndcg - k_ndcg)
                changes.append(float((m_ndcg - k_ndcg).mean()))
                rows.append([name, mode, f"{k_ndcg.mean():.4f}", f"{m_ndcg.mean():.4f}",
                             f"{(m_ndcg - k_ndcg).mean():+.4f}", f"[{low:+.4f}, {high:+.4f}]",
                             f"{k_rec.mean():.4f}", f"{m_rec.mean():.4f}",
                             int((m_ndcg > k_ndcg).sum()), int((m_ndcg < k_ndcg).sum())])
                print(rows[-1], flush=True)
    header = ["dev set", "mode", "nDCG@10 kept", "nDCG@10 merged", "change", "95% interval",
              "R@100 kept", "R@100 merged", "queries better", "queries worse"]
    table = markdown_table(header, rows)
    worst = min(changes)
    verdict = (f"Mean change in nDCG@10 over the {len(changes)} set × mode cells: {np.mean(changes):+.4f}; "
               f"the worst cell {worst:+.4f}.")
    print(table, *notes, verdict, sep="\n")
    if not args.no_record:
        body = (f"{table}\n\n"
                "*kept*: `--keep-short-tails`, a document's last tokens cut as a passage of their own as before; "
                "*merged*: the default, a tail under a quarter of a passage read with the text before it "
                "(the last passage ends at the document's end and starts as far back as the passage length "
                "allows). Same model (all-MiniLM-L6-v2), no reranker, default fusion; dev queries only. "
                f"The interval is a paired bootstrap ({BOOTSTRAP} resamples of the queries) of the change.\n\n"
                + "\n".join(f"- {line}" for line in notes) + f"\n\n{verdict}")
        record("bench_short_tail", "Short tails read with the text before them (bench_short_tail)", body,
               command=" ".join(["python bench/bench_short_tail.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
