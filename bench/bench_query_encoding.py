"""Query encoding latency on the CPU, by index encoding: what a search waits for before retrieval.

An index records its encoding, and its queries are encoded the same way (`Index.load_model`), so
the encoding `choose_encoding` gives a new index also sets the latency of every dense or hybrid
search on it. bench_encode.py chose the default on passages/s in batches of 64; a query is one
short text, where a runtime's per-call overhead weighs more than its arithmetic. This measures
that case through the product's own path: `load_bi_encoder(encoding=...)` and `encode_query`
(the function `search.retrieve.Query` calls), one query at a time, the encodings in turn per
query with the order rotating, so load from other work falls on all of them alike. The peer is
`fp32`, the model's own `SentenceTransformer.encode()`.

Queries: the dev sets' (`data/dev_sets.py`: SciFact train claims held out, Wikipedia lead
questions, Wikinews headlines), taken in turn from each set; never a test split.

Usage: python bench/bench_query_encoding.py [--queries 300] [--encodings fp32 openvino-fp32 openvino-bf16]
       [--dev-dir .cache/dev] [--no-record]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.encode_variants import cpu_model, cpu_vendor, matrix_units  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.dev_sets import load_dev_sets  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer.embedding import encode_query, encode_texts, load_bi_encoder  # noqa: E402
from indexer.encoding import ENCODINGS, FP16, FP32, OPENVINO_BF16, OPENVINO_FP32, choose_encoding  # noqa: E402
from indexer.model_spec import ModelSpec  # noqa: E402

PEER = FP32
ALL_THREADS = "fp32-all-threads"  # the peer's model on every thread, as a batch is encoded
WARMUP = 10  # queries per encoding before timing: first-call costs (compilation, allocation)


def dev_queries(dev_dir: Path, n: int) -> list[str]:
    """`n` queries, taken in turn from each dev set (each set's in sorted id order)."""
    sets = load_dev_sets(dev_dir)
    per_set = [[s.queries[q] for q in sorted(s.qrels)] for s in sets.values()]
    mixed = [q for group in itertools.zip_longest(*per_set) for q in group if q is not None]
    return mixed[:n]


Encoder = Callable[[str], np.ndarray]


def encoders_of(models: dict[str, object]) -> dict[str, Encoder]:
    """Each encoding as the searcher runs it (`encode_query`), and `fp32` once more on all threads
    (`encode_texts`, as `SentenceTransformer.encode()` runs a batch): is one thread the better choice?"""
    found: dict[str, Encoder] = {name: functools.partial(encode_query, model) for name, model in models.items()}
    found[ALL_THREADS] = lambda query: encode_texts(models[PEER], [query])
    return found


def latencies(encoders: dict[str, Encoder], queries: list[str]) -> dict[str, np.ndarray]:
    """Milliseconds per query and encoder; each query is encoded by every encoder, in an order
    that turns with each query."""
    names = list(encoders)
    for name in names:
        for query in queries[:WARMUP]:
            encoders[name](query)
    ms: dict[str, list[float]] = {name: [] for name in names}
    for i, query in enumerate(queries):
        for name in names[i % len(names):] + names[:i % len(names)]:
            start = time.perf_counter()
            encoders[name](query)
            ms[name].append(1000 * (time.perf_counter() - start))
    return {name: np.array(values) for name, values in ms.items()}


def agreement(encoders: dict[str, Encoder], queries: list[str]) -> dict[str, float]:
    """The lowest cosine between each encoder's query vector and the peer's, over `queries`."""
    peer = np.vstack([encoders[PEER](q) for q in queries])
    return {name: float(np.min(np.sum(np.vstack([encode(q) for q in queries]) * peer, axis=1)))
            for name, encode in encoders.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--encodings", nargs="+", default=[FP32, OPENVINO_FP32, OPENVINO_BF16],
                        choices=[e for e in ENCODINGS if e != FP16])
    parser.add_argument("--dev-dir", type=Path, default=PROJECT_ROOT / ".cache" / "dev")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    spec = ModelSpec.resolve("default")
    names = [PEER, *[e for e in args.encodings if e != PEER]]
    models = {name: load_bi_encoder(spec, device="cpu", encoding=name) for name in names}
    queries = dev_queries(args.dev_dir, args.queries)
    tokens = [len(ids) for ids in models[PEER].tokenizer(queries)["input_ids"]]
    encoders = encoders_of(models)
    ms = latencies(encoders, queries)
    checked = queries[:50]
    lowest = agreement(encoders, checked)
    default = choose_encoding("cpu")
    peer_p50 = float(np.percentile(ms[PEER], 50))
    rows: list[list[object]] = []
    for name in [*names, ALL_THREADS]:
        p50, p95 = np.percentile(ms[name], 50), np.percentile(ms[name], 95)
        rows.append([(f"`{PEER}` on {torch.get_num_threads()} threads" if name == ALL_THREADS else f"`{name}`")
                     + (" (the peer)" if name == PEER else "")
                     + (" (this CPU's default)" if name == default else ""),
                     f"{p50:.1f}", f"{p95:.1f}", f"{ms[name].mean():.1f}", f"{peer_p50 / p50:.2f}x",
                     f"{lowest[name]:.5f}"])
    table = markdown_table(["encoding", "p50 ms", "p95 ms", "mean ms", "p50 speed-up vs fp32",
                            f"lowest cosine to fp32 ({len(checked)} queries)"], rows)
    notes = (f"{len(queries)} dev-set queries (median {int(np.median(tokens))} tokens, longest {max(tokens)}), one "
             f"at a time through `encode_query` (the last row: `encode_texts`), after {WARMUP} warm-up queries per encoding; the encodings take "
             f"turns per query. `fp32` runs on one torch thread, as `encode_query` runs it (so that concurrent "
             f"searches do not wait on each other's threads); the OpenVINO encodings on the "
             f"{torch.get_num_threads()} threads they were compiled for, as does the last row. CPU matrix units: {matrix_units()}. `choose_encoding` gives a new index "
             f"`{default}` on this CPU.")
    print(table, notes, sep="\n\n")
    if not args.no_record:
        record(f"bench_query_encoding-{cpu_vendor()}", f"Query encoding latency on the CPU: {cpu_model()}",
               f"{table}\n\n{notes}",
               command=" ".join(["python bench/bench_query_encoding.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
