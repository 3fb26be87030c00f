"""Domain adaptation on SciFact: `training adapt` on the corpus text only, then SciFact test.

Adapts all-MiniLM-L6-v2 with continued MLM and self-supervised mnrl on the
SciFact corpus (no queries, no qrels), indexes SciFact with the adapted model,
and evaluates it next to the default model's index in the same run (dense and
hybrid modes).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record
from data.beir import load_beir_qrels, load_beir_queries
from data.paths import PROJECT_ROOT, shared_data_dir
from indexer import IndexConfig, build_index
from search import Searcher, SearchParams
from search.eval import evaluate_searcher
from training.adapt import AdaptConfig, adapt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--out", type=Path, default=PROJECT_ROOT / "runs" / "adapt_scifact")
    parser.add_argument("--default-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--adapted-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact-adapted")
    parser.add_argument("--mlm-steps", type=int, default=200)
    parser.add_argument("--siamese-steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--reuse", action="store_true", help="reuse an adapted model already in --out")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    beir_dir = args.data / "scifact"
    if not beir_dir.is_dir():
        print(f"SciFact not found at {beir_dir}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    timings: dict[str, float] = {}
    model_dir = args.out / "model"
    if not (args.reuse and model_dir.is_dir()):
        t0 = time.perf_counter()
        adapt(
            AdaptConfig(
                corpus=beir_dir / "corpus.jsonl",
                out=args.out,
                mlm_steps=args.mlm_steps,
                mlm_batch_size=args.batch_size,
                siamese_steps=args.siamese_steps,
                siamese_batch_size=args.batch_size,
                max_seq_length=args.max_seq_length,
            )
        )
        timings["adapt"] = time.perf_counter() - t0
    for name, index_dir, model in (
        ("default", args.default_index, None),
        ("adapted", args.adapted_index, str(model_dir)),
    ):
        t0 = time.perf_counter()
        build_index(IndexConfig(source=beir_dir, index_dir=index_dir, model=model))
        timings[f"index {name}"] = time.perf_counter() - t0

    qrels = load_beir_qrels(beir_dir, "test")
    queries = load_beir_queries(beir_dir)
    rows = []
    for name, index_dir in (("default all-MiniLM-L6-v2", args.default_index), ("adapted on SciFact text", args.adapted_index)):
        searcher = Searcher(index_dir)
        for mode in ("dense", "hybrid"):
            m = evaluate_searcher(searcher, queries, qrels, SearchParams(k=100, mode=mode))
            rows.append([f"{mode}, {name}", f"{m['ndcg@10']:.3f}", f"{m['recall@100']:.3f}",
                         f"{m['latency_p50_ms']:.1f} / {m['latency_p95_ms']:.1f}"])
    table = markdown_table(["system", "nDCG@10", "recall@100", "p50 / p95 ms"], rows)
    body = (
        f"`python -m training adapt` on SciFact's corpus.jsonl only: {args.mlm_steps} MLM steps, then "
        f"{args.siamese_steps} mnrl steps on title->body and inverse-cloze pairs, batch {args.batch_size}, "
        f"max length {args.max_seq_length}. Wall times: "
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in timings.items())
        + f". 300 SciFact test queries.\n\n{table}"
    )
    print(body)
    if not args.no_record:
        record("bench_adapt", "SciFact: domain adaptation", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
