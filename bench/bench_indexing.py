"""Indexing throughput: the whole indexer next to sentence-transformers `encode()` alone.

Both embed exactly the same passage texts (the indexer's own "title\\npassage"
inputs) with the same model and batch size in the same process. The indexer
side also reads the files, splits passages, writes SQL rows, adds to FAISS and
writes the index atomically; the ratio says how much of the raw encoder speed
survives all that. Runs alternate (build, encode, build, encode, ...); each
build is paired with the encode right after it, and the median of the paired
ratios is reported, which damps load from other work on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record
from data.beir import iter_beir_corpus
from data.paths import shared_data_dir
from indexer import Index, IndexConfig, build_index, passage_text
from indexer.build.pipeline import embedded_title
from indexer.embedding import load_bi_encoder


def write_subset(beir_dir: Path, n_docs: int, out: Path) -> Path:
    with out.open("w", encoding="utf-8") as fh:
        for i, doc in enumerate(iter_beir_corpus(beir_dir)):
            if i >= n_docs:
                break
            fh.write(json.dumps({"id": doc["_id"], "title": doc["title"], "text": doc["text"]}) + "\n")
    return out


def embed_inputs(index_dir: Path, model) -> list[str]:
    """The exact texts the indexer embedded, rebuilt from its rows with the indexer's own functions."""
    with Index.open(index_dir) as index:
        records = index.passages(index.vectors.ids())
    return [passage_text(embedded_title(r.title, model), r.text) for r in records.values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--docs", type=int, default=1000, help="SciFact documents to index")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    beir_dir = args.data / "scifact"
    if not beir_dir.is_dir():
        print(f"SciFact not found at {beir_dir}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    model = load_bi_encoder(None)
    work = Path(tempfile.mkdtemp(prefix="bench_indexing_"))
    try:
        source = write_subset(beir_dir, args.docs, work / "subset.jsonl")
        model.encode(["warm-up"] * 8, batch_size=args.batch_size)
        build_rates, encode_rates = [], []
        passages = 0
        texts: list[str] = []
        for rep in range(args.repeats):
            index_dir = work / f"idx{rep}"
            t0 = time.perf_counter()
            report = build_index(IndexConfig(source=source, index_dir=index_dir, batch_size=args.batch_size, show_progress=False))
            build_s = time.perf_counter() - t0
            passages = report.passages_embedded
            build_rates.append(passages / build_s)
            if not texts:
                texts = embed_inputs(index_dir, model)
            t0 = time.perf_counter()
            model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True)
            encode_rates.append(len(texts) / (time.perf_counter() - t0))
            print(f"repeat {rep}: indexer {build_rates[-1]:.1f} passages/s, encode() {encode_rates[-1]:.1f} passages/s")
        ratios = [b / e for b, e in zip(build_rates, encode_rates, strict=True)]
        table = markdown_table(
            ["pipeline", "passages", "passages/s (median)", "each run"],
            [
                ["`python -m indexer build` end to end (read, split, SQL, FAISS, BM25, atomic write)", passages, f"{statistics.median(build_rates):.1f}", ", ".join(f"{r:.1f}" for r in build_rates)],
                ["sentence-transformers `encode()` alone, same texts", len(texts), f"{statistics.median(encode_rates):.1f}", ", ".join(f"{r:.1f}" for r in encode_rates)],
                ["**ratio indexer / encode**, median of paired runs (target >= 0.9)", "", f"**{statistics.median(ratios):.2f}**", ", ".join(f"{r:.2f}" for r in ratios)],
            ],
        )
        body = (
            f"First {args.docs} SciFact documents, all-MiniLM-L6-v2 on the CPU, batch size {args.batch_size}, "
            f"{args.repeats} alternating runs each; the model is loaded once beforehand for both, so "
            f"neither timing includes loading it.\n\n{table}"
        )
        print(body)
        if not args.no_record:
            record("bench_indexing", "Indexing throughput", body)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
