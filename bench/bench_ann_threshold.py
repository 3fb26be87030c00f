"""Where exact search stops being fast enough, and what approximate indexes cost in recall.

Part 1 (sets `indexer.store.ann.EXACT_MAX_PASSAGES`): single-query search latency, one OpenMP thread
as the app searches, k = 100 (the retrievers' fusion depth), of the exact index the app builds
(`IndexIDMap2(IndexFlatIP)`) against its peer, the IVF,SQ8 index `ann.resolve` picks above the
threshold, at each size, the two taking turns query by query so both see the same load. The
IVF's nprobe is calibrated by `ann.calibrate` to recall@10 >= 0.95. Flat latency does not
depend on the vectors; IVF latency does (through nprobe), so both run on clustered synthetic
embeddings. Each IVF is trained once per nlist, on the largest size that uses it (smaller sizes
remove the extra ids), and with nlist >= 2048 on 4 k-means iterations instead of faiss's 10,
to keep the run short. Rule: EXACT_MAX_PASSAGES is the largest size whose flat CPU-time p95 <= 5 ms, a
third of the 15 ms p95 budget of the whole hybrid retrieve stage.

Part 2: recall@10 of the memory options at 100k vectors (IVF over float32, float16, sq8 and PQ
codes), all sharing one coarse quantizer so only the codes differ: the nprobe that
`ann.calibrate` picks for 0.95, the held-out recall there, at the float32 index's nprobe, and
with every list scanned (the ceiling the codes allow), with bytes per vector. PQ96 (4-dim
sub-vectors) is left out: faiss 1.15.1 trains it 30x slower than PQ48 (103 s against 3.4 s
for 16k vectors on one core here).

Synthetic embeddings: 50 broad areas, 1000 topics around them, and points on a random
16-dimensional patch of their topic plus isotropic noise, normalised; the nearest neighbour's
cosine is about 0.64, the 10th's 0.41, a random pair's 0.00 +- 0.09. Queries are held-out
draws from the same distribution.

Usage: python bench/bench_ann_threshold.py [--sizes 10000 25000 ...] [--queries 300] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import faiss  # noqa: E402
import numpy as np  # noqa: E402

from bench.record import markdown_table, record  # noqa: E402
from indexer.store import ann  # noqa: E402

DIM = 384
DEPTH = 100  # the dense retriever asks for SearchConfig.fusion_depth candidates
FLAT_P95_BUDGET_MS = 5.0
TARGET = 0.95
FEW_KMEANS_ITERATIONS = 4  # for nlist >= 2048 only, to keep the run short


def clustered_unit_vectors(n: int, rng: np.random.Generator, areas: int = 50, topics: int = 1000,
                           topic_spread: float = 0.5, local_dim: int = 16, local_std: float = 0.35,
                           noise: float = 0.25) -> np.ndarray:
    """Unit vectors with structure at several scales, as text embeddings have: broad areas,
    topics around them, and points spread over a low-dimensional patch of their topic."""
    def unit(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    area_centres = unit(rng.standard_normal((areas, DIM)))
    centres = unit(area_centres[rng.integers(areas, size=topics)]
                   + rng.standard_normal((topics, DIM)) * topic_spread / np.sqrt(DIM))
    bases = rng.standard_normal((topics, local_dim, DIM)).astype(np.float32) / np.sqrt(DIM)  # (T, l, D)
    labels = rng.integers(topics, size=n)
    out = rng.standard_normal((n, DIM)).astype(np.float32) * (noise / np.sqrt(DIM))
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(topics + 1))
    for topic in range(topics):
        rows = order[bounds[topic]:bounds[topic + 1]]
        z = rng.standard_normal((len(rows), local_dim)).astype(np.float32) * local_std
        out[rows] += centres[topic] + z @ bases[topic]
    return unit(out)


def percentiles(times_s: list[float]) -> tuple[float, float]:
    ms = np.asarray(times_s) * 1000
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def timed_turns(indexes: list[faiss.Index], queries: np.ndarray) -> list[tuple[list[float], list[float]]]:
    """(wall, cpu) seconds of single-query searches on one thread, the indexes taking turns
    on each query. With one OpenMP thread the search runs on this thread, so thread_time is
    its CPU time, which the other jobs on a shared machine do not inflate."""
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in indexes]
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        for query in queries[:20]:  # warm-up
            for index in indexes:
                index.search(query[None], DEPTH)
        for query in queries:
            for (wall, cpu), index in zip(times, indexes, strict=True):
                start, start_cpu = time.perf_counter(), time.thread_time()
                index.search(query[None], DEPTH)
                cpu.append(time.thread_time() - start_cpu)
                wall.append(time.perf_counter() - start)
    finally:
        faiss.omp_set_num_threads(previous)
    return times


def build_ivf(plan: ann.VectorIndexPlan, vectors: np.ndarray, trained: dict[int, faiss.Index]) -> faiss.Index:
    """An IVF over `vectors` (ids are row numbers). Indexes with the same nlist share the first
    one's centroids (faiss skips the coarse k-means when the quantizer is full), so variants
    differ only in their codes and the run stays short."""
    index = ann.create(plan, DIM)
    ivf = faiss.extract_index_ivf(index)
    if plan.nlist in trained:
        source = faiss.extract_index_ivf(trained[plan.nlist]).quantizer
        ivf.quantizer.add(source.reconstruct_n(0, source.ntotal))
    elif plan.nlist >= 2048:
        ivf.cp.niter = FEW_KMEANS_ITERATIONS
    ann.train(index, vectors, ann.training_sample_size(plan, len(vectors)))
    trained.setdefault(plan.nlist, index)
    index.add_with_ids(vectors, np.arange(len(vectors), dtype=np.int64))
    return index


def latency_part(vectors: np.ndarray, queries: np.ndarray, sizes: list[int],
                 trained: dict[int, faiss.Index]) -> tuple[list[list[object]], int]:
    ivf_config = ann.VectorIndexConfig(kind="ivf", storage="sq8")  # what auto picks above the threshold
    plans = {n: ann.resolve(ivf_config, n, DIM) for n in sizes}
    rows: dict[int, list[object]] = {}
    for nlist in sorted({plan.nlist for plan in plans.values()}):
        group = sorted((n for n in sizes if plans[n].nlist == nlist), reverse=True)
        ivf = build_ivf(plans[group[0]], vectors[: group[0]], trained)
        for n in group:
            ann.remove_ids(ivf, np.arange(n, group[0], dtype=np.int64))  # shrink to n
            calibration = ann.calibrate(ivf, vectors[:n], np.arange(n), TARGET)
            flat = ann.create(ann.resolve(ann.VectorIndexConfig(kind="flat"), n, DIM), DIM)
            flat.add_with_ids(vectors[:n], np.arange(n, dtype=np.int64))
            load = os.getloadavg()[0]
            (flat_wall, flat_cpu), (ivf_wall, ivf_cpu) = timed_turns([flat, ivf], queries)
            (f50, f95), (i50, i95) = percentiles(flat_cpu), percentiles(ivf_cpu)
            note = f" [{FEW_KMEANS_ITERATIONS} k-means iterations]" if nlist >= 2048 else ""
            rows[n] = [f"{n:,}", f"{f50:.2f}", f"{f95:.2f}", f"{percentiles(flat_wall)[1]:.2f}",
                       ann.describe(plans[n], calibration) + note, f"{i50:.2f}", f"{i95:.2f}",
                       f"{percentiles(ivf_wall)[1]:.2f}", f"{load:.1f}"]
            print(" | ".join(map(str, rows[n])), flush=True)
    fast = [n for n in sizes if float(rows[n][2]) <= FLAT_P95_BUDGET_MS]
    return [rows[n] for n in sizes], max(fast) if fast else 0


def held_out_recall(index: faiss.Index, queries: np.ndarray, exact: np.ndarray, nprobe: int) -> float:
    ann.set_search_param(index, "nprobe", nprobe)
    return ann.recall_at_k(exact, index.search(queries, 10)[1], 10)


def memory_part(vectors: np.ndarray, queries: np.ndarray, trained: dict[int, faiss.Index]) -> list[list[object]]:
    n = len(vectors)
    _, exact = faiss.knn(queries, vectors, 10, metric=faiss.METRIC_INNER_PRODUCT)
    configs = [("float32", ann.VectorIndexConfig(kind="ivf", storage="float32")),
               ("float16", ann.VectorIndexConfig(kind="ivf", storage="float16")),
               ("sq8 (auto's choice)", ann.VectorIndexConfig(kind="ivf", storage="sq8")),
               ("PQ48 (ivfpq default, dim // 8)", ann.VectorIndexConfig(kind="ivfpq", pq_m=48))]
    rows: list[list[object]] = [["exact (Flat, today's index)", "Flat", DIM * 4 + 8, "—", "1.000", "1.000", "1.000", "—"]]
    reference_nprobe = None
    for label, config in configs:
        plan = ann.resolve(config, n, DIM)
        index = build_ivf(plan, vectors, trained)
        calibration = ann.calibrate(index, vectors, np.arange(n), TARGET)
        reference_nprobe = reference_nprobe or calibration.value
        ivf = faiss.extract_index_ivf(index)
        at_calibrated = held_out_recall(index, queries, exact, calibration.value)
        p50, _ = percentiles(timed_turns([index], queries[:100])[0][1])
        at_reference = held_out_recall(index, queries, exact, reference_nprobe)
        ceiling = held_out_recall(index, queries, exact, ivf.nlist)
        rows.append([label, plan.factory, ivf.code_size + 8, f"{calibration.value} ({calibration.recall:.3f})",
                     f"{at_calibrated:.3f}", f"{at_reference:.3f}", f"{ceiling:.3f}", f"{p50:.2f}"])
        print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 25_000, 35_000, 50_000, 100_000, 200_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--memory-size", type=int, default=100_000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(0)
    vectors = clustered_unit_vectors(max(args.sizes) + args.queries, rng)
    queries, vectors = vectors[-args.queries:], vectors[: -args.queries]

    header = ["passages", "flat p50 ms", "flat p95 ms", "flat wall p95 ms", "IVF,SQ8 peer (calibrated)",
              "IVF p50 ms", "IVF p95 ms", "IVF wall p95 ms", "load"]
    trained: dict[int, faiss.Index] = {}  # nlist -> the first IVF trained with it
    memory_header = ["storage", "factory", "bytes/vector", f"nprobe for {TARGET} (calibrate's recall)",
                     "held-out recall@10 there", "recall@10 at float32's nprobe", "recall@10, all lists",
                     "p50 ms (CPU)"]
    print(" | ".join(memory_header), flush=True)
    memory_rows = memory_part(vectors[: args.memory_size], queries, trained)
    print(" | ".join(header), flush=True)
    latency_rows, exact_max = latency_part(vectors, queries, sorted(args.sizes), trained)
    print(f"EXACT_MAX_PASSAGES = {exact_max} (largest size with flat p95 <= {FLAT_P95_BUDGET_MS} ms)")
    elapsed = time.perf_counter() - started
    print(f"done in {elapsed:.0f} s")
    if not args.no_record:
        body = (
            f"Single-query latency, one OpenMP thread, k = {DEPTH}, {args.queries} held-out queries, "
            f"dim {DIM}; the exact index and its IVF,SQ8 peer take turns on each query. p50/p95 are "
            "per-query CPU time (the search thread's own); the wall-clock p95 beside them also counts "
            "the time other jobs on these shared cores held the CPU. "
            f"Rule: `EXACT_MAX_PASSAGES` is the largest size whose flat CPU p95 <= {FLAT_P95_BUDGET_MS} ms: "
            f"**{exact_max:,}** in this run.\n\n"
            + markdown_table(header, latency_rows)
            + f"\n\nMemory options at {args.memory_size:,} vectors, one shared IVF coarse quantizer, "
            f"nprobe calibrated by `ann.calibrate` to recall@10 >= {TARGET} on the index's own vectors; "
            f"recall columns are {args.queries} held-out queries against exact search. Bytes per vector "
            "count the code and the 8-byte id (the flat row's IndexIDMap2 also keeps an id hash map).\n\n"
            + markdown_table(memory_header, memory_rows)
            + f"\n\nWhole run: {elapsed:.0f} s."
        )
        record("bench_ann_threshold", "Exact vs approximate vector index (bench_ann_threshold)", body,
               command=" ".join(["python bench/bench_ann_threshold.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
