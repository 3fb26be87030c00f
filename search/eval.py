"""CLI: `python -m search.eval --beir DIR --split test --index DIR [--build] [--json]`.

Evaluates the current search pipeline on a BEIR-format dataset: nDCG@10,
MRR@10, recall@100 and per-query latency of `Searcher.search`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from data.beir import load_beir_qrels, load_beir_queries
from indexer import IndexConfig, build_index
from search.errors import SearchError
from search.metrics import evaluate_rankings, percentile_ms
from search.searcher import Searcher

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalConfig:
    beir_dir: Path
    index_dir: Path
    split: str = "test"
    model: str | None = None
    db_url: str | None = None
    build: bool = False
    depth: int = 100
    show_progress: bool = True

    def __post_init__(self) -> None:
        if self.depth < 100:
            raise ValueError(f"depth ({self.depth}) must be at least 100 for recall@100.")


def evaluate(config: EvalConfig) -> dict[str, float]:
    """Build the index if asked, run every judged query, return metrics and latency."""
    qrels = load_beir_qrels(config.beir_dir, config.split)
    queries = load_beir_queries(config.beir_dir)
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise ValueError(f"{len(missing)} qrels query ids are not in queries.jsonl, e.g. {missing[0]}.")
    if config.build:
        build_index(
            IndexConfig(
                source=config.beir_dir,
                index_dir=config.index_dir,
                model=config.model,
                db_url=config.db_url,
                show_progress=config.show_progress,
            )
        )
    searcher = Searcher(config.index_dir, model=config.model, db_url=config.db_url)
    searcher.search(queries[next(iter(qrels))], k=10)  # warm-up, not timed
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid in tqdm(list(qrels), desc="queries", unit="query", disable=not config.show_progress):
        t0 = time.perf_counter()
        hits = searcher.search(queries[qid], k=config.depth)
        latencies.append(time.perf_counter() - t0)
        rankings[qid] = [hit.doc_id for hit in hits]
    metrics = evaluate_rankings(rankings, qrels)
    metrics["latency_p50_ms"] = percentile_ms(latencies, 50)
    metrics["latency_p95_ms"] = percentile_ms(latencies, 95)
    metrics["queries"] = float(len(latencies))
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search.eval", description=__doc__)
    parser.add_argument("--beir", type=Path, required=True, help="BEIR folder (corpus, queries, qrels)")
    parser.add_argument("--index", type=Path, required=True, help="index folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", default=None)
    parser.add_argument("--db", default=None)
    parser.add_argument("--build", action="store_true", help="build or update the index from the BEIR corpus first")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = EvalConfig(
        beir_dir=args.beir,
        index_dir=args.index,
        split=args.split,
        model=args.model,
        db_url=args.db,
        build=args.build,
        show_progress=not args.json,
    )
    try:
        metrics = evaluate(config)
    except (SearchError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{'metric':<16}value")
    for name, value in metrics.items():
        print(f"{name:<16}{value:.4f}" if "latency" not in name else f"{name:<16}{value:.2f}")
    if args.json:
        print(json.dumps({name: round(value, 6) for name, value in metrics.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
