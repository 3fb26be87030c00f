"""SciFact test: this pipeline (dense, all-MiniLM-L6-v2) next to BM25, and query latency.

Both systems run in the same process on the same corpus and qrels. BM25 is
bm25s (Lucene scoring, English stop words, Snowball stemmer), over title + text,
as BEIR's Elasticsearch baseline indexes them. Matching the published figures
(dense ~0.645, BM25 ~0.665 nDCG@10) says the harness is right.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench.record import markdown_table, record  # noqa: E402
from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries  # noqa: E402
from data.paths import PROJECT_ROOT, shared_data_dir  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from search import Searcher  # noqa: E402
from search.metrics import evaluate_rankings, percentile_ms  # noqa: E402


def run_bm25(beir_dir: Path, queries: dict[str, str], qids: list[str], depth: int):
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


def run_dense(searcher: Searcher, queries: dict[str, str], qids: list[str], depth: int):
    searcher.search(queries[qids[0]], k=10)  # warm-up
    rankings: dict[str, list[str]] = {}
    latencies: list[float] = []
    encode_s: list[float] = []
    for qid in qids:
        t0 = time.perf_counter()
        hits = searcher.search(queries[qid], k=depth)
        latencies.append(time.perf_counter() - t0)
        rankings[qid] = [h.doc_id for h in hits]
        t1 = time.perf_counter()
        searcher.retriever.encode_query(queries[qid])
        encode_s.append(time.perf_counter() - t1)
    return rankings, latencies, encode_s


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
    report = build_index(IndexConfig(source=beir_dir, index_dir=args.index))
    build_s = time.perf_counter() - t0
    searcher = Searcher(args.index)
    dense_rank, dense_lat, encode_s = run_dense(searcher, queries, qids, depth)
    bm25_rank, bm25_lat = run_bm25(beir_dir, queries, qids, depth)
    dense = evaluate_rankings(dense_rank, qrels)
    bm25 = evaluate_rankings(bm25_rank, qrels)

    quality = markdown_table(
        ["system", "nDCG@10", "MRR@10", "recall@100", "published nDCG@10"],
        [
            ["BM25 (bm25s, Lucene, k1=0.9 b=0.4, stemmed)", f"{bm25['ndcg@10']:.3f}", f"{bm25['mrr@10']:.3f}", f"{bm25['recall@100']:.3f}", "0.665 (BEIR, Elasticsearch)"],
            ["this pipeline: dense all-MiniLM-L6-v2, passages, max-passage per doc", f"{dense['ndcg@10']:.3f}", f"{dense['mrr@10']:.3f}", f"{dense['recall@100']:.3f}", "0.645 (SBERT/BEIR)"],
        ],
    )
    stats = searcher.stats()
    quality_body = (
        f"{len(qids)} test queries, {stats.documents} documents in {stats.passages} passages "
        f"(index build {build_s:.0f} s this run, {report.passages_embedded} passages embedded).\n\n{quality}"
    )
    retrieve_ms = np.asarray(dense_lat) - np.asarray(encode_s)
    latency = markdown_table(
        ["system", "p50 ms", "p95 ms", "mean ms"],
        [
            ["`Searcher.search(q, k=100)` end to end", f"{percentile_ms(dense_lat, 50):.1f}", f"{percentile_ms(dense_lat, 95):.1f}", f"{np.mean(dense_lat) * 1000:.1f}"],
            ["  of which: encode query", f"{percentile_ms(encode_s, 50):.1f}", f"{percentile_ms(encode_s, 95):.1f}", f"{np.mean(encode_s) * 1000:.1f}"],
            ["  of which: FAISS + SQL + grouping", f"{percentile_ms(retrieve_ms, 50):.1f}", f"{percentile_ms(retrieve_ms, 95):.1f}", f"{np.mean(retrieve_ms) * 1000:.1f}"],
            ["BM25 (bm25s) tokenize + retrieve, k=100, 1 thread", f"{percentile_ms(bm25_lat, 50):.1f}", f"{percentile_ms(bm25_lat, 95):.1f}", f"{np.mean(bm25_lat) * 1000:.1f}"],
        ],
    )
    latency_body = f"{len(qids)} SciFact test queries, one at a time, after one warm-up query.\n\n{latency}"
    print(quality_body, "\n")
    print(latency_body)
    if not args.no_record:
        record("bench_scifact", "SciFact test: retrieval quality", quality_body)
        record("bench_scifact_latency", "SciFact test: query latency", latency_body, command="python bench/bench_scifact.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
