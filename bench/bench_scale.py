"""Scale on one machine: each FAISS index type at 100k, 300k and 1M passages.

    python -m bench.bench_scale [--sizes 100000 300000 1000000] [--variants flat auto ivf hnsw ivfpq]
                                [--hnsw-max 300000] [--queries 200] [--no-record]

Data comes from `bench.scale_data` (run it first): real Wikipedia/Wikinews text, real
all-MiniLM-L6-v2 vectors for the first rows and synthetic ones drawn around their k-means
centroids after that. Per size, one ingest (`python -m indexer build --embeddings`, exact
flat) stores the text in SQLite and BM25; every other index type is then built from it by
asking for that type (`--vector-index X` on an unchanged source: a merge that rebuilds only
the vectors). Each step runs in its own process, so its peak RSS is its own.

Per row: the build time (for `flat`, the whole ingest; for the others, the conversion),
peak RSS of that build and of a loaded `Searcher` after its searches, the index files on disk,
recall@10 of the FAISS index against exact search over the same stored vectors (real MiniLM
query vectors, by document id), single-query latency through `Searcher` (p50/p95 at k=10:
query encoding, and the retrieve stage for dense and hybrid), the retrieve stage's parts
measured alone on the same queries (FAISS at depth 100, BM25 at depth 100, the SQL fetch of
100 passages), and an incremental add of 1,000 passages (a delta segment), next to the same
add forced through a full merge (what every commit did before delta segments: the peer).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from bench.scale_data import DEFAULT_CACHE, load_embeddings

# The index types compared; "auto" is what a user gets by default (IVF with SQ8 storage at these sizes).
VARIANTS = {
    "flat": {"kind": "flat"},
    "auto": {"kind": "auto"},
    "ivf": {"kind": "ivf", "storage": "float32"},
    "hnsw": {"kind": "hnsw", "hnsw_m": 32},
    "ivfpq": {"kind": "ivfpq", "pq_m": 48},
}
ADD = 1000
LEGEND = (
    "Recall columns. *Held-out vectors*: 200 fresh draws of the same vector model as the stored "
    "rows, held out of the index, searched through the build's FAISS index and compared with exact "
    "search over the stored vectors: the issue's \"held-out queries drawn from the index's own "
    "vectors\", apart from the calibration sample that chose nprobe (shown in the vector index "
    "column). *Text queries*: real MiniLM query vectors searched through the `Searcher`; at these "
    "sizes almost every stored vector is synthetic, and a real query's neighbours among Gaussian "
    "draws are near-ties (they do not cluster as real embeddings do), so this column is a stress "
    "figure for synthetic data; the table below measures real queries on real vectors. *dense total*: "
    "query encoding plus the retrieve stage of one dense search, per query."
)
HELDOUT_START = 10**9  # synthetic row numbers of the held-out queries: past every stored row
DEPTH = 100  # the candidates each retriever returns for fusion (SearchConfig.fusion_depth)


@dataclass(frozen=True)
class ScaleBenchConfig:
    sizes: tuple[int, ...] = (100_000, 300_000, 1_000_000)
    variants: tuple[str, ...] = ("flat", "auto", "ivf", "hnsw", "ivfpq")
    hnsw_max: int = 300_000  # HNSW32 over 1M x 384 takes too long to build on 2 cores for one run
    queries: int = 200
    cache_dir: Path = DEFAULT_CACHE
    record: bool = True

    def __post_init__(self) -> None:
        unknown = set(self.variants) - set(VARIANTS)
        if unknown:
            raise ValueError(f"unknown variants {sorted(unknown)}; choose from {sorted(VARIANTS)}.")
        if self.queries < 10:
            raise ValueError(f"queries ({self.queries}) must be at least 10 for a p95.")


# --- steps, each in its own process ------------------------------------------------------------

def peak_rss_mb() -> float:
    """This process's own peak RSS (VmHWM). Not `getrusage`'s ru_maxrss: Linux carries that over
    exec from the forked parent, so a child of a large orchestrator would report its size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return 1000 * statistics.median(ordered), 1000 * ordered[int(0.95 * (len(ordered) - 1))]


def step_ingest(index_dir: str, corpus: str, embeddings: str) -> dict:
    import shutil

    from indexer import IndexConfig, build_index
    from indexer.store.ann import VectorIndexConfig

    shutil.rmtree(index_dir, ignore_errors=True)  # a fresh ingest every run
    started = time.perf_counter()
    report = build_index(IndexConfig(source=Path(corpus), index_dir=Path(index_dir), embeddings=Path(embeddings),
                                     vector_index=VectorIndexConfig(kind="flat"), show_progress=False,
                                     commit_passages=1_000_000))
    return {"seconds": time.perf_counter() - started, "passages": report.total_passages,
            "commits": report.commits, "bm25_seconds": report.bm25_seconds}


def step_convert(index_dir: str, corpus: str, embeddings: str, variant: str) -> dict:
    from indexer import IndexConfig, build_index
    from indexer.store.ann import VectorIndexConfig

    started = time.perf_counter()
    report = build_index(IndexConfig(source=Path(corpus), index_dir=Path(index_dir), embeddings=Path(embeddings),
                                     vector_index=VectorIndexConfig(**VARIANTS[variant]), show_progress=False))
    return {"seconds": time.perf_counter() - started, "vector_index": report.vector_index, "notes": report.notes}


def step_add(index_dir: str, extra: str, merge: bool) -> dict:
    from indexer import IndexConfig, build_index
    from indexer.store.segments import SegmentPolicy

    policy = SegmentPolicy(min_base_passages=10**12) if merge else SegmentPolicy()
    started = time.perf_counter()
    report = build_index(IndexConfig(source=Path(extra), index_dir=Path(index_dir), embeddings=Path(extra),
                                     prune=False, segments=policy, show_progress=False))
    return {"seconds": time.perf_counter() - started, "added": report.documents_added,
            "bm25_seconds": report.bm25_seconds}


def step_search(index_dir: str, queries: str, exact: str, heldout: str, heldout_exact: str) -> dict:
    """Latency through a loaded Searcher, the retrieve stage's parts alone, and recall@10 (text
    queries through the Searcher; held-out vectors through the build's vector index)."""
    from search import Searcher

    texts = json.loads(Path(queries).read_text())
    query_vectors = np.load(Path(queries).with_suffix(".npy"))
    exact_docs = json.loads(Path(exact).read_text())
    searcher = Searcher(index_dir)
    index = searcher.index
    snap = index.snapshot()
    # Searches at rest: the passage-to-document map read first (a large index's first searches
    # read it in a thread and ask SQL meanwhile: the open step of bench_scale_large times that).
    started = time.perf_counter()
    index.load_document_map()
    map_s = time.perf_counter() - started
    for text in texts[:5]:  # warm-up: first-touch page faults and lazy inits
        searcher.search_detailed(text, k=10, mode="hybrid")
    timings: dict[str, list[float]] = {name: [] for name in (
        "encode", "dense_total", "dense_retrieve", "hybrid_retrieve", "dense_retrieve_again",
        "hybrid_retrieve_again", "faiss", "bm25", "sql")}
    found_docs = []
    for text, vector in zip(texts, query_vectors, strict=True):
        for mode in ("dense", "hybrid"):
            result = searcher.search_detailed(text, k=10, mode=mode)
            timings[f"{mode}_retrieve"].append(result.timings.retrieve_s)
            if mode == "dense":
                timings["encode"].append(result.timings.encode_s)
                timings["dense_total"].append(result.timings.encode_s + result.timings.retrieve_s)
        t = time.perf_counter()
        _, ids = snap.vectors.search(vector[None, :], DEPTH)
        timings["faiss"].append(time.perf_counter() - t)
        t = time.perf_counter()
        snap.bm25.search(text, DEPTH)
        timings["bm25"].append(time.perf_counter() - t)
        top = [int(i) for i in ids[0] if i >= 0]
        t = time.perf_counter()
        records = index.passages(top)
        timings["sql"].append(time.perf_counter() - t)
        # Passages of the incremental adds (copies of real rows) are not in the exact lists: skip them.
        found_docs.append([records[i].doc_id for i in top if i in records
                           and not records[i].doc_id.startswith("add-")][:10])
    recall = statistics.mean(len(set(f) & set(e)) / len(e) for f, e in zip(found_docs, exact_docs, strict=True))
    # The same searches again: the index's files are memory-mapped, so the first pass also pays for
    # the pages its queries touch first (read from disk unless the page cache holds them).
    for text in texts:
        for mode in ("dense", "hybrid"):
            timings[f"{mode}_retrieve_again"].append(searcher.search_detailed(text, k=10, mode=mode).timings.retrieve_s)
    heldout_docs = []
    for vector in np.load(heldout):
        top = [int(i) for i in snap.vectors.search(vector[None, :], 10)[1][0] if i >= 0]
        records = index.passages(top)
        heldout_docs.append([records[i].doc_id for i in top if i in records])
    heldout_recall = statistics.mean(len(set(f) & set(e)) / len(e) for f, e in
                                     zip(heldout_docs, json.loads(Path(heldout_exact).read_text()), strict=True))
    stats = index.stats()
    out = {name: _ms(values) for name, values in timings.items()}
    out.update(map_s=map_s, recall=recall, heldout_recall=heldout_recall, vector_index=stats.vector_index, stored_recall=stats.recall_at_10,
               rss_mb=peak_rss_mb())
    searcher.close()
    return out


STEPS = {"ingest": step_ingest, "convert": step_convert, "add": step_add, "search": step_search}


def run_step(name: str, *args: object) -> dict:
    """Run one step in a child process; its JSON result plus its own peak RSS (MB)."""
    cmd = [sys.executable, "-m", "bench.bench_scale", "--step", name, *map(str, args)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# --- data for the steps ------------------------------------------------------------------------

def _queries(config: ScaleBenchConfig) -> Path:
    """Query texts (the opening words of real passages) and their real MiniLM vectors, cached."""
    path = config.cache_dir / f"queries-{config.queries}.json"
    if path.is_file():
        return path
    from indexer.embedding import encode_texts, load_bi_encoder

    corpus = config.cache_dir / f"corpus-{min(config.sizes)}.jsonl"
    texts = []
    with open(corpus) as fh:
        for i, line in enumerate(fh):
            if i % 97 == 0:
                texts.append(" ".join(json.loads(line)["text"].split()[:10]))
            if len(texts) == config.queries:
                break
    np.save(path.with_suffix(".npy"), encode_texts(load_bi_encoder(None), texts))
    path.write_text(json.dumps(texts))
    return path


def _heldout(config: ScaleBenchConfig) -> Path:
    """Held-out query vectors: fresh draws of the synthetic vector model (refitted, with the
    same seed, on the same real vectors), from rows far past any stored one, so no index holds
    them. They are the issue's "held-out queries drawn from the index's own vectors", measured
    apart from the calibration sample that chose nprobe."""
    path = config.cache_dir / f"heldout-{config.queries}.npy"
    if path.is_file():
        return path
    from bench.scale_data import fit_vector_model, real_embeddings, synthetic_vectors

    recipe = json.loads((config.cache_dir / f"embeddings-{max(config.sizes)}.json").read_text())
    real, _ = real_embeddings(config.cache_dir)
    model = fit_vector_model(real[: recipe["real"]])
    np.save(path, synthetic_vectors(model, HELDOUT_START, config.queries))
    return path


def _exact(config: ScaleBenchConfig, size: int, queries: Path) -> Path:
    """The exact top-10 documents of each query over the size's stored vectors (brute force);
    `queries` is the text queries' .json (their vectors beside it) or a held-out .npy."""
    path = config.cache_dir / f"exact-{size}-{queries.stem}.json"
    if path.is_file():
        return path
    vectors, ids = load_embeddings(config.cache_dir / f"embeddings-{size}.npy")
    query_vectors = np.load(queries.with_suffix(".npy"))
    best = np.full((len(query_vectors), 10), -np.inf, np.float32)
    rows = np.zeros((len(query_vectors), 10), np.int64)
    for start in range(0, len(vectors), 65_536):
        block = np.asarray(vectors[start:start + 65_536], dtype=np.float32)
        scores = query_vectors @ block.T
        both = np.concatenate([best, scores], axis=1)
        both_rows = np.concatenate([rows, np.arange(start, start + len(block))[None, :].repeat(len(scores), 0)], 1)
        top = np.argpartition(-both, 9, axis=1)[:, :10]  # the best 10 of each row, then in order
        best, rows = np.take_along_axis(both, top, 1), np.take_along_axis(both_rows, top, 1)
        order = np.argsort(-best, axis=1, kind="stable")
        best, rows = np.take_along_axis(best, order, 1), np.take_along_axis(rows, order, 1)
    path.write_text(json.dumps([[ids[r] for r in row] for row in rows.tolist()]))
    return path


def _extra(config: ScaleBenchConfig, size: int, tag: str) -> Path:
    """1,000 new documents for an incremental add: the last rows' text and vectors under new ids
    (the queries come from the first rows)."""
    path = config.cache_dir / f"add-{size}-{tag}.jsonl"
    vectors, _ = load_embeddings(config.cache_dir / f"embeddings-{size}.npy")
    with open(config.cache_dir / f"corpus-{size}.jsonl") as src, open(path, "w") as out:
        for i, line in enumerate(src):
            if i < size - ADD:
                continue
            row = json.loads(line)
            row.update(id=f"add-{tag}-{i}", embedding=np.asarray(vectors[i], dtype=float).tolist())
            out.write(json.dumps(row) + "\n")
    return path


def _disk_mb(index_dir: Path) -> tuple[float, float]:
    """(vector and BM25 files, SQLite file) in MB."""
    files = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file() and not p.name.startswith("store.sqlite"))
    sqlite = sum(p.stat().st_size for p in index_dir.glob("store.sqlite*"))
    return files / 2**20, sqlite / 2**20


def real_recall(config: ScaleBenchConfig, queries: Path) -> str:
    """recall@10 against exact search on the real MiniLM vectors alone, with real query vectors,
    for each type as the build tunes it (`indexer.store.vector_merge`); the honest quality figure,
    since synthetic rows do not place real queries' neighbours as real embeddings do."""
    from indexer.store import ann
    from indexer.store.vector_merge import _calibrate
    from indexer.store.vector_parts import VectorParts

    reals = sorted(config.cache_dir.glob("real-*.npy"), key=lambda p: int(p.stem.split("-")[1]))
    vectors = np.load(reals[-1]).astype(np.float32)
    query_vectors = np.load(queries.with_suffix(".npy"))
    import faiss

    _, exact = faiss.knn(query_vectors, vectors, 10, metric=faiss.METRIC_INNER_PRODUCT)
    lines = ["| type | index | recall@10, stored-vector queries (calibration) | recall@10, real text queries |",
             "|---|---|---|---|"]
    for variant in ("auto", "ivf", "hnsw"):
        # at this size auto is exact: force the IVF,SQ8 it picks above EXACT_MAX_PASSAGES
        fields = {"kind": "ivf", "storage": "sq8"} if variant == "auto" else VARIANTS[variant]
        wanted = ann.VectorIndexConfig(**fields)
        plan = ann.resolve(wanted, len(vectors), vectors.shape[1])
        index = ann.create(plan, vectors.shape[1])
        ann.train(index, vectors, ann.training_sample_size(plan, len(vectors)))
        index.add_with_ids(vectors, np.arange(len(vectors)))
        calibration = _calibrate(index, VectorParts.of(np.arange(len(vectors)), vectors, vectors.shape[1]),
                                 wanted.target_recall)
        found = index.search(query_vectors, 10)[1]
        lines.append(f"| {variant} | {ann.describe(plan, calibration)} | {calibration.shown_recall:.3f} | "
                     f"{ann.recall_at_k(exact, found, 10):.3f} |")
    return (f"Real vectors only ({len(vectors):,} real all-MiniLM-L6-v2 passage vectors, "
            f"{len(query_vectors)} real text queries):\n\n" + "\n".join(lines))


# --- the run -----------------------------------------------------------------------------------

@dataclass
class Row:
    size: int
    variant: str
    vector_index: str
    build_s: float
    build_rss_mb: float
    searcher_rss_mb: float
    files_mb: float
    sqlite_mb: float
    heldout_recall: float
    recall: float
    encode_ms: tuple[float, float]
    dense_total_ms: tuple[float, float]
    dense_ms: tuple[float, float]
    hybrid_ms: tuple[float, float]
    faiss_ms: tuple[float, float]
    bm25_ms: tuple[float, float]
    sql_ms: tuple[float, float]
    add_s: float


def run(config: ScaleBenchConfig) -> tuple[list[Row], list[str]]:
    queries = _queries(config)
    heldout = _heldout(config)
    rows, notes = [], []
    for size in config.sizes:
        corpus = config.cache_dir / f"corpus-{size}.jsonl"
        embeddings = config.cache_dir / f"embeddings-{size}.npy"
        if not corpus.is_file() or not embeddings.is_file():
            raise FileNotFoundError(f"{corpus} or {embeddings} is missing: run python -m bench.scale_data "
                                    f"--sizes {size} first.")
        exact = _exact(config, size, queries)
        heldout_exact = _exact(config, size, heldout)
        index_dir = config.cache_dir / "indexes" / str(size)
        ingest = run_step("ingest", index_dir, corpus, embeddings)
        notes.append(f"{size:,}: ingest of {ingest['passages']:,} passages (SQL, BM25, exact vectors) took "
                     f"{ingest['seconds']:.0f} s in {ingest['commits']} commits, peak RSS "
                     f"{ingest['peak_rss_mb']:.0f} MB")
        for variant in config.variants:
            if variant == "hnsw" and size > config.hnsw_max:
                notes.append(f"{size:,}: hnsw skipped (over --hnsw-max {config.hnsw_max:,})")
                continue
            build = ingest if variant == "flat" else run_step("convert", index_dir, corpus, embeddings, variant)
            notes.extend(f"{size:,} {variant}: {n}" for n in build.get("notes", []))
            found = run_step("search", index_dir, queries, exact, heldout, heldout_exact)
            files_mb, sqlite_mb = _disk_mb(index_dir)
            add = run_step("add", index_dir, _extra(config, size, variant), False)
            rows.append(Row(size, variant, found["vector_index"], build["seconds"], build["peak_rss_mb"],
                            found["rss_mb"], files_mb, sqlite_mb, found["heldout_recall"], found["recall"],
                            found["encode"], found["dense_total"],
                            found["dense_retrieve"], found["hybrid_retrieve"], found["faiss"], found["bm25"],
                            found["sql"], add["seconds"]))
            print(json.dumps(asdict(rows[-1])), flush=True)
        merge = run_step("add", index_dir, _extra(config, size, "merge"), True)
        notes.append(f"{size:,}: the same add of {ADD:,} passages forced through a full merge (every "
                     f"commit before delta segments): {merge['seconds']:.1f} s (BM25 rebuild "
                     f"{merge['bm25_seconds']:.1f} s), peak RSS {merge['peak_rss_mb']:.0f} MB")
        print(notes[-1], flush=True)
    return rows, notes


def table(rows: list[Row]) -> str:
    def pair(p: tuple[float, float]) -> str:
        return f"{p[0]:.1f} / {p[1]:.1f}"

    head = ("| passages | type | vector index | build s | build RSS MB | Searcher RSS MB | files MB "
            "(+SQLite) | recall@10, held-out vectors | recall@10, text queries | encode ms | dense total ms | dense retrieve ms | hybrid retrieve ms | FAISS@100 ms "
            "| BM25@100 ms | SQL ms | add 1k s |\n|" + "---|" * 17)
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r.size:,} | {r.variant} | {r.vector_index} | {r.build_s:.0f} | {r.build_rss_mb:.0f} | "
            f"{r.searcher_rss_mb:.0f} | {r.files_mb:.0f} (+{r.sqlite_mb:.0f}) | {r.heldout_recall:.3f} | {r.recall:.3f} | "
            f"{pair(r.encode_ms)} | {pair(r.dense_total_ms)} | {pair(r.dense_ms)} | {pair(r.hybrid_ms)} | {pair(r.faiss_ms)} | "
            f"{pair(r.bm25_ms)} | {pair(r.sql_ms)} | {r.add_s:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", nargs="+", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(ScaleBenchConfig.sizes))
    parser.add_argument("--variants", nargs="+", default=list(ScaleBenchConfig.variants))
    parser.add_argument("--hnsw-max", type=int, default=ScaleBenchConfig.hnsw_max)
    parser.add_argument("--queries", type=int, default=ScaleBenchConfig.queries)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--record-as", default="bench_scale",
                        help="the BENCHMARKS.md block to write (a partial run names its own, keeping the full table)")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.step:
        name, *rest = args.step
        result = STEPS[name](*(r if r not in ("True", "False") else r == "True" for r in rest))
        print(json.dumps({**result, "peak_rss_mb": peak_rss_mb()}))
        return 0
    config = ScaleBenchConfig(sizes=tuple(args.sizes), variants=tuple(args.variants), hnsw_max=args.hnsw_max,
                              queries=args.queries, record=not args.no_record)
    real = real_recall(config, _queries(config))
    print(real, flush=True)
    rows, notes = run(config)
    body = table(rows) + "\n\n" + LEGEND + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n\n" + real
    print(body)
    if config.record:
        from bench.record import record

        title = "Scale: index types at 100k, 300k and 1M passages"
        if args.record_as != "bench_scale":
            title = (f"Scale, re-run at {', '.join(f'{n:,}' for n in config.sizes)} passages "
                     f"({', '.join(config.variants)})")
        record(args.record_as, title, body,
               command="python -m bench.bench_scale " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
