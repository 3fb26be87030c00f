"""SciFact test: this pipeline in each retrieval mode (BM25, dense, hybrid) next to a standalone BM25.

All systems run in the same process on the same corpus and qrels, through the
same `search.eval.evaluate_searcher` the eval CLI uses, so each row carries its
per-stage latency. BM25 is our indexer's BM25 (bm25s, Lucene scoring, k1=0.9
b=0.4, English stop words, Snowball stemmer) over title + passage, with one
hit per document (its best passage); the peer row is bm25s over whole
documents, as BEIR's Elasticsearch baseline indexes them. Matching the
published figures (dense ~0.645, BM25 ~0.665 nDCG@10) says the harness is right.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.record import markdown_table, record
from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries
from data.paths import PROJECT_ROOT, shared_data_dir
from indexer import IndexConfig, build_index
from indexer.encoding import FP32
from search import SearchConfig, Searcher, SearchParams, resolve_reranker
from search.eval import evaluate_searcher
from search.metrics import evaluate_rankings, percentile_ms

MODES = (
    ("bm25", "this pipeline, `--mode bm25`: passages, best passage per doc", "0.665 (BEIR, Elasticsearch)"),
    ("dense", "this pipeline, `--mode dense`: all-MiniLM-L6-v2, best passage per doc", "0.645 (SBERT/BEIR)"),
    ("hybrid", "this pipeline, `--mode hybrid`: the default fusion of the two over passages "
     f"({SearchConfig().fusion_for().method}, dense share {SearchConfig().fusion_for().weight:g}, "
     f"second passage {SearchConfig().second_passage_weight:g})", "—"),
)
RERANK_CANDIDATES = 50
RERANKED = (
    "hybrid+rerank",
    "this pipeline, `--mode hybrid --rerank`: the shipped reranker over the top 50, fused at its "
    "`rerank_config.json` weight (`search_detailed`, `keep_tail=True`)",
    "0.688 (BM25 + MS MARCO cross-encoder, BEIR)",
)


def run_bm25_peer(beir_dir: Path, queries: dict[str, str], qids: list[str], depth: int):
    """bm25s over whole documents, outside our indexer: the peer our BM25 mode should match."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    docs = list(iter_beir_corpus(beir_dir))
    ids = [d["_id"] for d in docs]
    tokens = bm25s.tokenize(
        [f"{d['title']} {d['text']}" for d in docs], stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(tokens, show_progress=False)
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    for qid in qids:
        t0 = time.perf_counter()
        q = bm25s.tokenize([queries[qid]], stopwords="en", stemmer=stemmer, show_progress=False)
        found, _ = retriever.retrieve(q, k=depth, show_progress=False, n_threads=1)
        latencies.append(time.perf_counter() - t0)
        rankings[qid] = [ids[i] for i in found[0]]
    return rankings, latencies


def ms(value: float) -> str:
    return f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    beir_dir = args.data / "scifact"
    if not beir_dir.is_dir():
        print(f"SciFact not found at {beir_dir}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    qrels = load_beir_qrels(beir_dir, "test")
    queries = load_beir_queries(beir_dir)
    qids = list(qrels)
    depth = 100

    t0 = time.perf_counter()
    # fp32: this index is the SciFact reference other benchmarks share, the same on every CPU;
    # bench_encode.py --scifact-test gives what the CPU's default encoding changes.
    report = build_index(IndexConfig(source=beir_dir, index_dir=args.index, encoding=FP32))
    build_s = time.perf_counter() - t0
    searcher = Searcher(args.index)
    results = {
        mode: evaluate_searcher(searcher, queries, qrels, SearchParams(k=depth, mode=mode))
        for mode, _, _ in MODES
    }
    # The shipped reranker, forced on, through the same Searcher.search_detailed the app calls.
    choice = resolve_reranker(rerank=True)
    if choice.path is not None:
        reranking = Searcher(args.index, reranker=choice.load())
        results[RERANKED[0]] = evaluate_searcher(
            reranking, queries, qrels, SearchParams(k=depth, mode="hybrid", rerank=True, candidates=RERANK_CANDIDATES)
        )
    rows = [*MODES, RERANKED] if RERANKED[0] in results else list(MODES)
    peer_rank, peer_lat = run_bm25_peer(beir_dir, queries, qids, depth)
    peer = evaluate_rankings(peer_rank, qrels)

    quality_rows = [
        [
            "BM25 peer: bm25s alone, whole documents (k1=0.9 b=0.4, stemmed)",
            f"{peer['ndcg@10']:.3f}", f"{peer['mrr@10']:.3f}", f"{peer['recall@100']:.3f}",
            f"{ms(percentile_ms(peer_lat, 50))} (— / {ms(percentile_ms(peer_lat, 50))})",
            "0.665 (BEIR, Elasticsearch)",
        ]
    ]
    for mode, label, published in rows:
        m = results[mode]
        quality_rows.append(
            [
                label, f"{m['ndcg@10']:.3f}", f"{m['mrr@10']:.3f}", f"{m['recall@100']:.3f}",
                f"{ms(m['latency_p50_ms'])} ({ms(m['latency_encode_p50_ms'])} / "
                f"{ms(m['latency_retrieve_p50_ms'])})",
                published,
            ]
        )
    quality = markdown_table(
        ["system", "nDCG@10", "MRR@10", "recall@100", "p50 ms (encode / retrieve)", "published nDCG@10"],
        quality_rows,
    )
    stats = searcher.stats()
    added = (
        f"{report.passages_embedded} passages embedded, BM25 built in {report.bm25_seconds:.1f} s"
    )
    quality_body = (
        f"{len(qids)} test queries, {stats.documents} documents in {stats.passages} passages "
        f"(index build {build_s:.0f} s this run: {added}).\n\n{quality}"
    )
    latency_rows = []
    for mode, _, _ in rows:
        m = results[mode]
        call = (f"mode=\"{mode}\"" if mode != RERANKED[0]
                else f"mode=\"hybrid\", rerank=True, candidates={RERANK_CANDIDATES}, keep_tail=True")
        latency_rows.append(
            [
                f"`Searcher.search_detailed(q, k=100, {call})`",
                f"{ms(m['latency_p50_ms'])} / {ms(m['latency_p95_ms'])}",
                f"{ms(m['latency_encode_p50_ms'])} / {ms(m['latency_encode_p95_ms'])}",
                f"{ms(m['latency_retrieve_p50_ms'])} / {ms(m['latency_retrieve_p95_ms'])}",
            ]
        )
    latency_rows.append(
        [
            "BM25 peer (bm25s) tokenize + retrieve, k=100, 1 thread",
            f"{ms(percentile_ms(peer_lat, 50))} / {ms(percentile_ms(peer_lat, 95))}",
            "—",
            f"mean {np.mean(peer_lat) * 1000:.1f}",
        ]
    )
    latency = markdown_table(
        ["system", "end to end p50 / p95 ms", "encode query p50 / p95", "retrieve p50 / p95"],
        latency_rows,
    )
    latency_body = (
        f"{len(qids)} SciFact test queries, one at a time, after one warm-up query per mode. "
        "Retrieve covers FAISS and/or BM25, fusion, the SQL fetch and grouping into documents; "
        "the reranked row adds the shipped cross-encoder over the top "
        f"{RERANK_CANDIDATES} (int8 on the CPU).\n\n"
        f"{latency}"
    )
    print(quality_body, "\n")
    print(latency_body)
    if not args.no_record:
        record("bench_scifact", "SciFact test: retrieval quality", quality_body)
        record("bench_scifact_latency", "SciFact test: query latency", latency_body, command="python bench/bench_scifact.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
