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
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.record import markdown_table, record
from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries
from data.paths import shared_data_dir
from indexer.chunking import split_into_passages
from indexer.embedding import encode_texts, load_bi_encoder
from indexer.passage_text import passage_text

PERCENTILES = (5, 10, 25, 50, 75, 90)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300, help="train queries sampled")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    folder = shared_data_dir() / "scifact"
    queries = load_beir_queries(folder)
    qrels = load_beir_qrels(folder, "train")
    rng = np.random.default_rng(args.seed)
    qids = sorted(q for q in qrels if q in queries)
    qids = [qids[i] for i in rng.choice(len(qids), min(args.queries, len(qids)), replace=False)]
    corpus = {d["_id"]: d for d in iter_beir_corpus(folder)}
    doc_ids = sorted(corpus)
    relevant = {q: [d for d, g in qrels[q].items() if g > 0 and d in corpus] for q in qids}
    unrelated = {q: doc_ids[rng.integers(len(doc_ids))] for q in qids}
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
        record("bench_relevance_labels", "Relevance labels: dense cosines on SciFact train", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
