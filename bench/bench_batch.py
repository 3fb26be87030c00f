"""Queries per second of `Searcher.search_batch` (what POST /search/batch runs) against the same
queries one at a time through `Searcher.search_detailed`, in the same run, over the same index.

The index is the first `--docs` SciFact documents with the default model; the queries are
SciFact's test queries. Runs alternate (one by one, then batched, repeated), and the table gives
the median of the repeats. Every batched answer is checked against the one-by-one answer.

    python bench/bench_batch.py [--docs 1000] [--batch 32] [--repeats 3] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.bench_indexing import write_subset  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.beir import load_beir_qrels, load_beir_queries  # noqa: E402
from data.paths import shared_data_dir  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from search import Searcher, SearchParams  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32, help="queries per batch (the API takes up to 64)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    beir = args.data / "scifact"
    if not beir.is_dir():
        print(f"SciFact not found in {args.data}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    queries = load_beir_queries(beir)
    texts = [queries[qid] for qid in load_beir_qrels(beir, "test")]
    work = Path(tempfile.mkdtemp(prefix="bench_batch_"))
    rows = []
    try:
        build_index(IndexConfig(source=write_subset(beir, args.docs, work / "docs.jsonl"), index_dir=work / "idx",
                                show_progress=False))
        searcher = Searcher(work / "idx")
        for mode in ("dense", "hybrid", "bm25"):
            params = SearchParams(k=10, mode=mode)
            searcher.search_batch(texts[: args.batch], params)  # warm-up
            single, batched = [], []
            for _ in range(args.repeats):
                started = time.perf_counter()
                alone = [searcher.search_detailed(text, params) for text in texts]
                single.append(len(texts) / (time.perf_counter() - started))
                started = time.perf_counter()
                together = [result for start in range(0, len(texts), args.batch)
                            for result in searcher.search_batch(texts[start:start + args.batch], params)]
                batched.append(len(texts) / (time.perf_counter() - started))
                same = all([h.doc_id for h in a.hits] == [h.doc_id for h in b.hits]
                           for a, b in zip(alone, together, strict=True))
            ratio = statistics.median(batched) / statistics.median(single)
            rows.append([mode, f"{statistics.median(single):.1f}", f"{statistics.median(batched):.1f}",
                         f"**{ratio:.2f}**", "yes" if same else "**no**"])
            print(" | ".join(rows[-1]), flush=True)
        searcher.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = markdown_table(["mode", "one by one (queries/s)", f"batches of {args.batch} (queries/s)",
                            "batched / one by one", "same hits"], rows)
    body = (f"{len(texts)} SciFact test queries over the first {args.docs} SciFact documents, all-MiniLM-L6-v2 "
            f"on the CPU, k=10; median of {args.repeats} alternating repeats. One by one is "
            "`Searcher.search_detailed` per query (each query encoded alone, on one thread); batched is "
            f"`Searcher.search_batch` on {args.batch} queries at a time, what POST /search/batch runs "
            "(the queries encoded together, then searched one by one). BM25 encodes nothing, so it "
            f"shows what batching costs by itself.\n\n{table}")
    print(body)
    if not args.no_record:
        record("bench_batch", "Batch search: queries per second", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
