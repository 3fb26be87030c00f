"""Indexing throughput: the whole indexer next to sentence-transformers `encode()` alone.

Issue 31's two figures, at about 250, 1,000 and 10,000 passages: the indexer in fp32 keeps at
least 0.95x of plain `encode()` (what the pipeline around the model costs: reading, cutting,
SQL rows, FAISS, BM25, its atomic chunked commits), and the indexer with the default encoding
this CPU gets (`indexer/encoding.py`; OpenVINO bf16 where the CPU has bf16 matrix instructions)
reaches at least 2x plain `encode()`. All three embed exactly the same passage texts (the
indexer's own "title\\npassage" inputs) with the same model and batch size, in alternating
runs in the same process, so load from other work falls on all of them alike.

Usage: python bench/bench_indexing.py [--passages 250 1000 10000] [--repeats 2] [--no-record]
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

from bench.encode_variants import cpu_model, cpu_vendor
from bench.record import markdown_table, record
from data.beir import iter_beir_corpus
from data.paths import shared_data_dir
from indexer import Index, IndexConfig, build_index, passage_text
from indexer.build.pipeline import embedded_title
from indexer.embedding import load_bi_encoder
from indexer.encoding import FP32, OPENVINO_BF16, choose_encoding


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


SIZES = (250, 1000, 10000)
PASSAGES_PER_DOC = 2.0  # SciFact: 10,342 passages from 5,183 documents
SMALL_REPEATS = 5  # runs under 1,000 passages: a few seconds each, and the noisiest


def rate(seconds: list[float], passages: int) -> float:
    return passages / statistics.median(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--passages", type=int, nargs="+", default=list(SIZES),
                        help="about how many passages each size indexes (SciFact's first documents)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2,
                        help=f"runs per size (at least {SMALL_REPEATS} under 1,000 passages, 1 at 10,000 and over)")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    beir_dir = args.data / "scifact"
    if not beir_dir.is_dir():
        print(f"SciFact not found at {beir_dir}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    chosen = choose_encoding()
    model = load_bi_encoder(None)
    load_bi_encoder(None, encoding=chosen).encode(["warm-up"] * 8)  # converted and compiled before timing
    model.encode(["warm-up"] * 8, batch_size=args.batch_size)
    work = Path(tempfile.mkdtemp(prefix="bench_indexing_"))
    rows = []
    try:
        for wanted in args.passages:
            rows.append(measure_size(beir_dir, wanted, model, chosen, args, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    table = markdown_table(
        ["passages", "`encode()` fp32, passages/s", "indexer fp32, passages/s", "indexer / encode() (target >= 0.95)",
         f"indexer default ({chosen}), passages/s",
         "default / encode()" + (" (target >= 2)" if chosen == OPENVINO_BF16 else "")], rows)  # bf16's target
    body = (
        f"SciFact's first documents, all-MiniLM-L6-v2 on the CPU, batch size {args.batch_size}; per size, "
        f"`encode()` of the indexer's own passage texts (the peer), `python -m indexer build --encoding fp32`, and "
        f"the build with the default encoding this CPU gets (`{chosen}`, `indexer/encoding.py`), in alternating runs "
        f"({args.repeats} per size, {SMALL_REPEATS} under 1,000 passages, 1 at 10,000 and over), order rotating, median shown; each build is end to end (read, "
        "split, SQL, FAISS, BM25, its atomic chunked commits). Both encodings' models are loaded and compiled "
        f"beforehand, so no timing includes loading.\n\n{table}"
    )
    print(body)
    if not args.no_record:
        # One block per kind of CPU, as bench_encode: the default encoding is chosen by what the CPU has.
        record(f"bench_indexing-{cpu_vendor()}", f"Indexing throughput on {cpu_model()}", body,
               command=" ".join(["python bench/bench_indexing.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


def measure_size(beir_dir: Path, wanted: int, model, chosen: str, args: argparse.Namespace, work: Path) -> list:
    """One table row: the three pipelines over the same documents, in an order that rotates each
    run (no pipeline always first after the previous size), medians of the runs."""
    source = write_subset(beir_dir, max(1, round(wanted / PASSAGES_PER_DOC)), work / f"subset-{wanted}.jsonl")
    repeats = 1 if wanted >= 10000 else max(args.repeats, SMALL_REPEATS if wanted < 1000 else 0)
    order = list(dict.fromkeys([FP32, chosen, "encode"]))  # the first run builds first: its texts feed encode()
    seconds: dict[str, list[float]] = {name: [] for name in order}
    passages, texts = 0, []
    for rep in range(repeats):
        for name in order[rep % len(order):] + order[:rep % len(order)]:
            began = time.perf_counter()
            if name == "encode":
                model.encode(texts, batch_size=args.batch_size, normalize_embeddings=True, convert_to_numpy=True)
                seconds[name].append(time.perf_counter() - began)
                continue
            index_dir = work / f"idx-{wanted}-{name}-{rep}"
            report = build_index(IndexConfig(source=source, index_dir=index_dir, batch_size=args.batch_size,
                                             show_progress=False, encoding=name))
            seconds[name].append(time.perf_counter() - began)
            passages = report.passages_embedded
            if not texts:
                texts = embed_inputs(index_dir, model)
            shutil.rmtree(index_dir)
        print(f"{passages} passages, run {rep + 1}: "
              + ", ".join(f"{name} {passages / values[-1]:.1f}/s" for name, values in seconds.items()), flush=True)
    peer = rate(seconds["encode"], passages)
    fp32, default = rate(seconds[FP32], passages), rate(seconds[chosen], passages)
    return [f"{passages:,}", f"{peer:.1f}", f"{fp32:.1f}", f"**{fp32 / peer:.2f}x**", f"{default:.1f}",
            f"**{default / peer:.2f}x**"]


if __name__ == "__main__":
    sys.exit(main())
