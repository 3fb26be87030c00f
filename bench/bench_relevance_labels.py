"""Calibrate the app's relevance labels: dense cosines of relevant and of unrelated pairs.

The search page labels each hit by the cosine of the query and the hit's passage
under the index's bi-encoder, whatever mode ranked it (ui/results.py). This script
measures, on SciFact *train* queries (never test), the cosine of each query with
its relevant document's best passage, and with a random document of the corpus,
and prints the percentiles the labels are cut at:

- "strong" from the median relevant cosine up;
- "fair" from the 10th percentile of relevant cosines up;
- "weak" below it: nine relevant hits in ten score more, so a best hit there is
  marked as a weak match.

`--dev-set wiki-lead` or `wikinews-headline` (or `scifact-dev`) measures the same on a
dev set of `data.dev_sets` (written to `--dev-dir` first if it is not there), each
recorded under its own heading, so the cut points can be compared across domains.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.record import markdown_table, record
from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries
from data.dev_sets import DEV_SETS, build_dev_sets, load_dev_sets
from data.paths import PROJECT_ROOT, shared_data_dir
from indexer.embedding import encode_texts, load_bi_encoder
from indexer.sources.chunking import split_into_passages
from indexer.sources.passage_text import passage_text

PERCENTILES = (5, 10, 25, 50, 75, 90)
# The set the shipped cut points come from; its BENCHMARKS.md block keeps its name.
SCIFACT_TRAIN = "scifact-train"
SETS = (SCIFACT_TRAIN, *DEV_SETS)


def sample_pairs(
    queries: dict[str, str], qrels: dict[str, dict[str, int]], doc_ids: list[str], count: int,
    rng: np.random.Generator,
) -> tuple[list[str], dict[str, list[str]], dict[str, str]]:
    """(query ids, their relevant documents, one random document each): `count` judged queries
    drawn by `rng`, relevant meaning graded above 0 and present in `doc_ids` (sorted)."""
    qids = sorted(q for q in qrels if q in queries)
    qids = [qids[i] for i in rng.choice(len(qids), min(count, len(qids)), replace=False)]
    corpus = set(doc_ids)
    relevant = {q: [d for d, g in qrels[q].items() if g > 0 and d in corpus] for q in qids}
    unrelated = {q: doc_ids[rng.integers(len(doc_ids))] for q in qids}
    return qids, relevant, unrelated


def record_name(dev_set: str) -> tuple[str, str]:
    """(BENCHMARKS.md block, its heading) for one set; SciFact train keeps the block it always had."""
    if dev_set == SCIFACT_TRAIN:
        return "bench_relevance_labels", "Relevance labels: dense cosines on SciFact train"
    return (f"bench_relevance_labels_{dev_set.replace('-', '_')}",
            f"Relevance labels: dense cosines on the {dev_set} dev set")


def load_set(dev_set: str, dev_dir: Path) -> tuple[Path, dict[str, str], dict[str, dict[str, int]]]:
    """(BEIR folder, queries, qrels) of `dev_set`; the general dev sets are written first if missing."""
    if dev_set == SCIFACT_TRAIN:
        folder = shared_data_dir() / "scifact"
        return folder, load_beir_queries(folder), load_beir_qrels(folder, "train")
    try:
        dev = load_dev_sets(dev_dir)[dev_set]
    except FileNotFoundError:
        dev = build_dev_sets(dev_dir)[dev_set]
    return dev.corpus_dir, dev.queries, dev.qrels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev-set", choices=SETS, default=SCIFACT_TRAIN,
                        help="queries and corpus to measure on (default: SciFact train, as shipped)")
    parser.add_argument("--dev-dir", type=Path, default=PROJECT_ROOT / ".cache" / "dev",
                        help="where `python -m data.dev_sets` wrote (or will write) the dev sets")
    parser.add_argument("--queries", type=int, default=300, help="judged queries sampled")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    folder, queries, qrels = load_set(args.dev_set, args.dev_dir)
    rng = np.random.default_rng(args.seed)
    corpus = {d["_id"]: d for d in iter_beir_corpus(folder)}
    doc_ids = sorted(corpus)
    qids, relevant, unrelated = sample_pairs(queries, qrels, doc_ids, args.queries, rng)
    wanted = sorted({d for ds in relevant.values() for d in ds} | set(unrelated.values()))
    model = load_bi_encoder()
    budget = int(model.max_seq_length) - 2 - 33
    owners, texts = [], []
    for d in wanted:
        doc = corpus[d]
        for span in split_into_passages(doc["text"], model.tokenizer, budget, 32):
            owners.append(d)
            texts.append(passage_text(doc.get("title", ""), doc["text"][span.start_char : span.end_char]))
    print(f"encoding {len(qids)} queries and {len(texts)} passages", file=sys.stderr)
    passage_vectors = encode_texts(model, texts)
    query_vectors = encode_texts(model, [queries[q] for q in qids])
    best: dict[tuple[int, str], float] = {}
    for row, d in enumerate(owners):
        scores = query_vectors @ passage_vectors[row]
        for qi, score in enumerate(scores):
            key = (qi, d)
            best[key] = max(best.get(key, -1.0), float(score))
    rel = np.array([best[(qi, d)] for qi, q in enumerate(qids) for d in relevant[q]])
    neg = np.array([best[(qi, unrelated[q])] for qi, q in enumerate(qids) if unrelated[q] not in relevant[q]])
    rows = [["relevant (query, its document)", len(rel), *[f"{np.percentile(rel, p):.3f}" for p in PERCENTILES]],
            ["unrelated (query, a random document)", len(neg), *[f"{np.percentile(neg, p):.3f}" for p in PERCENTILES]]]
    body = markdown_table(["pairs", "n", *[f"p{p}" for p in PERCENTILES]], rows)
    body += (f"\n\nLabels (ui/results.py): strong >= {np.percentile(rel, 50):.2f} (median relevant), "
             f"fair >= {np.percentile(rel, 10):.2f} (10th percentile relevant), weak below.")
    print(body)
    if args.record:
        name, title = record_name(args.dev_set)
        command = "python bench/bench_relevance_labels.py" + (
            "" if args.dev_set == SCIFACT_TRAIN else f" --dev-set {args.dev_set}")
        record(name, title, body, command=command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
