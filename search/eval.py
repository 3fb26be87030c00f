"""CLI: `python -m search.eval --beir DIR --index DIR [--split test] [--mode dense|bm25|hybrid]
[--fusion rrf|minmax|tmm|zscore] [--fusion-weight W] [--rerank | --no-rerank] [--rerank-model PATH]
[--candidates N] [--build] [--json]`.

Evaluates the search pipeline on a BEIR-format dataset: nDCG@10, MRR@10,
recall@100, and the latency of `Searcher.search_detailed` per query, end to end
and per stage (encode the query, retrieve, rerank), as p50 and p95. Whether to
rerank is decided as in the app and `python -m search` (`resolve_reranker`).
When reranking, the retriever's top `candidates` documents (default 50) are
reranked by the searcher itself and the rest of the top 100 keep the
retriever's order (`keep_tail`), so recall@100 is the retriever's.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from data.beir import load_beir_qrels, load_beir_queries
from indexer import IndexConfig, IndexerError, build_index
from search.config import SHIPPED_RERANKER, RerankConfig, SearchConfig
from search.errors import SearchError
from search.fusion import FUSIONS
from search.hits import SearchResult
from search.metrics import evaluate_rankings, percentile_ms
from search.params import MODES, SearchParams
from search.rerank import resolve_reranker
from search.searcher import Searcher

logger = logging.getLogger(__name__)

# How deep each query is ranked: recall@100 reads the top 100.
EVAL_DEPTH = 100


@dataclass(frozen=True)
class EvalConfig:
    beir_dir: Path
    index_dir: Path
    split: str = "test"
    model: str | None = None
    db_url: str | None = None
    build: bool = False
    depth: int = EVAL_DEPTH
    show_progress: bool = True
    mode: str | None = None
    rerank: bool | None = None
    rerank_model: str | None = None
    candidates: int | None = None
    rerank_config: RerankConfig | None = None
    fusion: str | None = None
    fusion_weight: float | None = None
    # A metadata filter (`SearchParams.filter`): every query searches only the documents it
    # matches, and is judged against the relevant documents among them.
    filter: dict[str, Any] | str | None = None

    def __post_init__(self) -> None:
        if self.depth < 100:
            raise ValueError(f"depth ({self.depth}) must be at least 100 for recall@100.")
        self.search_params()  # checks mode, candidates and fusion as every search does
        if self.candidates is not None and not 1 <= self.candidates <= self.depth:
            raise ValueError(f"candidates ({self.candidates}) must lie between 1 and the ranking depth ({self.depth}).")

    def search_params(self) -> SearchParams:
        """What every query asks: the top `depth`, in `mode`, fused as asked; whether to rerank is
        the searcher's (`evaluate` gives it a reranker only when `resolve_reranker` says so)."""
        return SearchParams(k=self.depth, mode=self.mode, candidates=self.candidates, fusion=self.fusion,
                            fusion_weight=self.fusion_weight, filter=self.filter)

    @property
    def rerank_candidates(self) -> int:
        return SearchConfig().rerank_candidates if self.candidates is None else self.candidates


def evaluate(config: EvalConfig) -> dict[str, float]:
    """Build the index if asked, run every judged query, return metrics and latency."""
    qrels = load_beir_qrels(config.beir_dir, config.split)
    queries = load_beir_queries(config.beir_dir)
    missing = [qid for qid in qrels if qid not in queries]
    if missing:
        raise ValueError(f"{len(missing)} qrels query ids are not in queries.jsonl, e.g. {missing[0]}.")
    choice = resolve_reranker(config.rerank, config.rerank_model)  # decides only; loads nothing
    if config.candidates is not None and not choice.enabled:
        raise ValueError(
            f"candidates ({config.candidates}) only matters when reranking; add --rerank or --rerank-model PATH."
        )
    if config.rerank_config is not None:
        choice = replace(choice, config=config.rerank_config)
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
    reranker = choice.load() if choice.enabled else None
    searcher = Searcher(config.index_dir, model=config.model, db_url=config.db_url, reranker=reranker,
                        rerank_by_default=choice.enabled)
    params = config.search_params()
    if params.filter is not None:
        qrels = within_filter(searcher, qrels, params)
    return evaluate_searcher(searcher, queries, qrels, params, show_progress=config.show_progress)


def within_filter(searcher: Searcher, qrels: dict[str, dict[str, int]], params: SearchParams) -> dict[str, dict[str, int]]:
    """The judgements of documents the filter keeps, for the queries that still have a relevant one:
    a filtered search cannot find the others, and counting them would measure the filter."""
    subset = searcher.index.matching_passages(params.filter)  # type: ignore[arg-type]
    kept = {record.doc_id for record in searcher.index.passages(subset.ids().tolist()).values()}
    judged = {qid: {doc: grade for doc, grade in docs.items() if doc in kept} for qid, docs in qrels.items()}
    judged = {qid: docs for qid, docs in judged.items() if any(grade > 0 for grade in docs.values())}
    if not judged:
        raise ValueError("No judged query has a relevant document that the filter keeps; loosen the filter.")
    return judged


def evaluate_searcher(
    searcher: Searcher,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    params: SearchParams | None = None,
    show_progress: bool = False,
) -> dict[str, float]:
    """Run every judged query through `searcher`; metrics plus latency per stage.

    Shared with the benchmarks in bench/, so they and this CLI measure the same
    thing: what `Searcher.search_detailed` returns, as the app and the API get it.
    `params` defaults to the top `EVAL_DEPTH` with the searcher's settings.
    """
    rankings, stages = run_queries(searcher, queries, list(qrels), params, show_progress=show_progress)
    metrics = evaluate_rankings(rankings, qrels)
    for stage, seconds in stages.items():
        prefix = f"latency_{stage}_" if stage else "latency_"
        metrics[f"{prefix}p50_ms"] = percentile_ms(seconds, 50)
        metrics[f"{prefix}p95_ms"] = percentile_ms(seconds, 95)
    metrics["queries"] = float(len(rankings))
    return metrics


def run_queries(
    searcher: Searcher,
    queries: dict[str, str],
    qids: list[str],
    params: SearchParams | None = None,
    show_progress: bool = False,
) -> tuple[dict[str, list[str]], dict[str, list[float]]]:
    """The ranked document ids of each query (its top `params.k`, default `EVAL_DEPTH`), and the
    seconds per stage per query.

    Stage "" is the whole `search_detailed` call. When reranking, the top
    `candidates` are reranked and the rest of the ranking keeps the retriever's
    order (`keep_tail`, always on here).
    """
    asked = replace(params or SearchParams(k=EVAL_DEPTH), keep_tail=True)

    def search(text: str) -> SearchResult:
        return searcher.search_detailed(text, asked)

    if qids:
        search(queries[qids[0]])  # warm-up (model, reranker, caches), not timed
    rankings: dict[str, list[str]] = {}
    stages: dict[str, list[float]] = {"": [], "encode": [], "retrieve": [], "rerank": []}
    for qid in tqdm(qids, desc="queries", unit="query", disable=not show_progress):
        started = time.perf_counter()
        result = search(queries[qid])
        stages[""].append(time.perf_counter() - started)
        stages["encode"].append(result.timings.encode_s)
        stages["retrieve"].append(result.timings.retrieve_s)
        stages["rerank"].append(result.timings.rerank_s)
        rankings[qid] = [hit.doc_id for hit in result.hits]
    return rankings, stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search.eval", description=__doc__)
    parser.add_argument("--beir", type=Path, required=True, help="BEIR folder (corpus, queries, qrels)")
    parser.add_argument("--index", type=Path, required=True, help="index folder")
    parser.add_argument("--split", default="test")
    parser.add_argument("--model", default=None)
    parser.add_argument("--db", default=None)
    parser.add_argument("--mode", choices=MODES, default=None, help="retriever (default: hybrid)")
    parser.add_argument("--fusion", choices=FUSIONS, default=None,
                        help="how hybrid fuses dense and BM25: reciprocal rank, or a convex combination of "
                        "min-max, theoretical min-max or z-score normalised scores (default: SearchConfig's)")
    parser.add_argument("--fusion-weight", type=float, default=None, metavar="W",
                        help="the dense list's share in hybrid, 0 (BM25 alone) to 1 (dense alone)")
    parser.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                        help=f"rerank (default: as the app, with the shipped reranker ({SHIPPED_RERANKER}) "
                        "when its rerank_config.json turns it on)")
    parser.add_argument("--rerank-model", default=None, metavar="PATH",
                        help="CrossEncoder folder to rerank with (turns reranking on; 'none' for none)")
    parser.add_argument("--candidates", type=int, default=None,
                        help="documents reranked per query (default 50; the rest of the top 100 keep their order)")
    parser.add_argument("--filter", default=None, metavar="JSON",
                        help="metadata filter: search only the documents it matches, judged on those")
    parser.add_argument("--build", action="store_true", help="build or update the index from the BEIR corpus first")
    parser.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        config = EvalConfig(
            beir_dir=args.beir,
            index_dir=args.index,
            split=args.split,
            model=args.model,
            db_url=args.db,
            build=args.build,
            show_progress=not args.json,
            mode=args.mode,
            rerank=args.rerank,
            rerank_model=args.rerank_model,
            candidates=args.candidates,
            fusion=args.fusion,
            fusion_weight=args.fusion_weight,
            filter=args.filter,
        )
        metrics = evaluate(config)
    except (IndexerError, SearchError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{'metric':<26}value")
    print(f"{'mode':<26}{args.mode or SearchConfig().mode}")
    fusion = SearchConfig().fusion_for(args.fusion, args.fusion_weight)
    print(f"{'fusion (hybrid)':<26}{fusion.method} w={fusion.weight:g}")
    for name, value in metrics.items():
        print(f"{name:<26}{value:.4f}" if "latency" not in name else f"{name:<26}{value:.2f}")
    if args.json:
        print(json.dumps({name: round(value, 6) for name, value in metrics.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
