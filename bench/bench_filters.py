"""Filtered search at scale: latency and recall@10 of metadata filters of known selectivity.

    python -m bench.bench_filters [--size 1000000] [--variants flat auto] [--queries 100]
                                  [--modes dense hybrid] [--no-record]

Data: the synthetic scale corpus of `bench.scale_data` (run it first) with two metadata fields
added per row: `u`, an integer drawn uniformly from [0, 1,000,000) with a fixed seed, and
`tag`, "t" + (u mod 100). A filter `{"u": {"$gte": a, "$lt": a + s * 1e6}}` then keeps a share
s of the documents (one passage each): 50%, 10%, 1% and 0.01%. "new" draws a fresh `a` for
every query (so no cached subset helps: the columns are read once, then each filter is
evaluated anew); "repeated" uses a = 0 for every query (computed once per build, then cached).
Beside them, in the same run and process, the same queries unfiltered.

Per row: p50/p95 of the search through `Searcher` (k=10, the retrieve stage: filter evaluation,
FAISS/BM25 and grouping; query encoding is left out, it does not depend on the filter), the p95
as a multiple of the unfiltered p95, and, for dense, recall@10 against brute force (the exact
top 10 of the matching documents, scored with the stored vectors: filter first, then search
exactly). Each index type runs in its own process: the ingest (exact flat), then its conversion
to the default type at this size (auto: IVF4096,SQ8) and the same measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.scale_data import DEFAULT_CACHE, load_embeddings

SEED = 29
U_RANGE = 1_000_000
SELECTIVITIES = (0.5, 0.1, 0.01, 0.0001)
VARIANTS = {"flat": {"kind": "flat"}, "auto": {"kind": "ivf", "storage": "sq8"}, "hnsw": {"kind": "hnsw", "hnsw_m": 32}}
WARMUP = 5


def metadata_corpus(cache: Path, size: int) -> Path:
    """corpus-<size>.jsonl with `u` and `tag` added to every row (cached)."""
    path = cache / f"filters-corpus-{size}.jsonl"
    if path.is_file():
        return path
    u = np.random.default_rng(SEED).integers(0, U_RANGE, size=size)
    tmp = path.with_suffix(".tmp")
    with open(cache / f"corpus-{size}.jsonl") as src, open(tmp, "w") as out:
        for i, line in enumerate(src):
            row = json.loads(line)
            row.update(u=int(u[i]), tag=f"t{int(u[i]) % 100}")
            out.write(json.dumps(row) + "\n")
    tmp.rename(path)
    return path


def step_ingest(index_dir: str, corpus: str, embeddings: str) -> dict:
    from bench.bench_scale import step_ingest as ingest

    return ingest(index_dir, corpus, embeddings)


def step_convert(index_dir: str, corpus: str, embeddings: str, variant: str) -> dict:
    from indexer import IndexConfig, build_index
    from indexer.store.ann import VectorIndexConfig

    started = time.perf_counter()
    report = build_index(IndexConfig(source=Path(corpus), index_dir=Path(index_dir), embeddings=Path(embeddings),
                                     vector_index=VectorIndexConfig(**VARIANTS[variant]), show_progress=False))
    return {"seconds": time.perf_counter() - started, "vector_index": report.vector_index}


def _filter(share: float, start: int) -> dict:
    width = max(1, round(share * U_RANGE))
    return {"u": {"$gte": start, "$lt": start + width}}


def _exact_scores(vectors: np.ndarray, query_vectors: np.ndarray, block: int = 65_536) -> np.ndarray:
    """Every stored vector's score for every query, (queries, rows) float32, computed in blocks."""
    out = np.empty((len(query_vectors), len(vectors)), dtype=np.float32)
    for begin in range(0, len(vectors), block):
        out[:, begin:begin + block] = query_vectors @ np.asarray(vectors[begin:begin + block], dtype=np.float32).T
    return out


def _brute_top(scores: np.ndarray, allowed: np.ndarray, k: int = 10) -> np.ndarray:
    """The rows of the exact top k among the rows `allowed` marks (filter first, then exact search)."""
    rows = np.flatnonzero(allowed)
    if len(rows) <= k:
        return rows
    picked = scores[rows]
    top = np.argpartition(-picked, k - 1)[:k]
    return rows[top]


def step_search(index_dir: str, embeddings: str, queries: str, modes: str, seed: int,
                exact_share: str = "default", postfilter_depth: str = "default") -> dict:
    """Every (mode, selectivity, new/repeated) row for the index in `index_dir`, plus unfiltered.
    `exact_share` overrides `ann.HNSW_EXACT_SHARE` (the share below which HNSW scores matches exactly),
    `postfilter_depth` `ann.HNSW_POSTFILTER_DEPTH` (how deep HNSW searches above HNSW_POSTFILTER_SHARE)."""
    from indexer.store import ann
    from search import Searcher

    if exact_share != "default":
        ann.HNSW_EXACT_SHARE = float(exact_share)
    if postfilter_depth != "default":
        ann.HNSW_POSTFILTER_DEPTH = float(postfilter_depth)

    texts = json.loads(Path(queries).read_text())
    vectors, ids = load_embeddings(Path(embeddings))
    exact = _exact_scores(vectors, np.load(Path(queries).with_suffix(".npy")))
    u = np.random.default_rng(SEED).integers(0, U_RANGE, size=len(ids))
    searcher = Searcher(index_dir)
    rng = np.random.default_rng(seed)
    rows: dict[str, dict] = {}
    for text in texts[:WARMUP]:
        searcher.search_detailed(text, k=10, mode="hybrid")
    started = time.perf_counter()
    searcher.search_detailed(texts[0], k=10, mode="dense", filter=_filter(0.5, 1))  # reads the `u` column
    column_s = time.perf_counter() - started
    for mode in modes.split(","):
        unfiltered, whole = [], []
        for qi, text in enumerate(texts):
            result = searcher.search_detailed(text, k=10, mode=mode)
            unfiltered.append(result.timings.retrieve_s)
            if mode == "dense":  # the index's own recall on these queries, beside the filtered rows'
                want = {ids[r] for r in _brute_top(exact[qi], np.ones(len(ids), dtype=bool)).tolist()}
                whole.append(len(want & {h.doc_id for h in result.hits}) / len(want))
        rows[f"{mode}|all|-"] = {"p50": _ms(unfiltered, 50), "p95": _ms(unfiltered, 95),
                                 "recall": statistics.mean(whole) if whole else None}
        for share in SELECTIVITIES:
            width = max(1, round(share * U_RANGE))
            for kind in ("new", "repeated"):
                starts = rng.integers(0, U_RANGE - width, size=len(texts)) if kind == "new" else np.zeros(len(texts), int)
                if kind == "repeated":
                    searcher.search_detailed(texts[0], k=10, mode=mode, filter=_filter(share, 0))  # computed once
                times, recalls = [], []
                for qi, (text, start) in enumerate(zip(texts, starts.tolist(), strict=True)):
                    result = searcher.search_detailed(text, k=10, mode=mode, filter=_filter(share, start))
                    times.append(result.timings.retrieve_s)
                    if mode == "dense":
                        want = {ids[r] for r in _brute_top(exact[qi], (u >= start) & (u < start + width)).tolist()}
                        if want:
                            recalls.append(len(want & {h.doc_id for h in result.hits}) / len(want))
                rows[f"{mode}|{share}|{kind}"] = {"p50": _ms(times, 50), "p95": _ms(times, 95),
                                                  "recall": statistics.mean(recalls) if recalls else None}
    stats = searcher.index.stats()
    searcher.close()
    shown = stats.vector_index
    if "HNSW" in shown:
        shown += f", exact below {ann.HNSW_EXACT_SHARE:.2%} of passages" if ann.HNSW_EXACT_SHARE else ", never exact"
        shown += f", post-filter depth {ann.HNSW_POSTFILTER_DEPTH:g}"
    return {"rows": rows, "vector_index": shown, "column_s": column_s}


def _ms(values: list[float], pct: int) -> float:
    return float(np.percentile(np.asarray(values) * 1000, pct))


STEPS = {"ingest": step_ingest, "convert": step_convert, "search": step_search}


def run_step(name: str, *args: object) -> dict:
    cmd = [sys.executable, "-m", "bench.bench_filters", "--step", name, *map(str, args)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@dataclass(frozen=True)
class FiltersBenchConfig:
    size: int = 1_000_000
    variants: tuple[str, ...] = ("flat", "auto")
    queries: int = 100
    modes: tuple[str, ...] = ("dense", "hybrid")
    cache_dir: Path = DEFAULT_CACHE
    record: bool = True
    reuse_index: bool = False
    hnsw_exact_shares: tuple[str, ...] = ("default",)  # ann.HNSW_EXACT_SHARE values to compare
    hnsw_postfilter_depths: tuple[str, ...] = ("default",)  # ann.HNSW_POSTFILTER_DEPTH values to compare


def queries_file(config: FiltersBenchConfig) -> Path:
    from bench.bench_scale import ScaleBenchConfig, _queries

    return _queries(ScaleBenchConfig(sizes=(config.size,), queries=config.queries, cache_dir=config.cache_dir))


def table(results: dict[str, dict]) -> str:
    lines = ["| index | mode | filter keeps | filter | p50 ms | p95 ms | p95 / unfiltered p95 | dense recall@10 vs brute force |",
             "|---|---|---|---|---|---|---|---|"]
    for found in results.values():
        rows = found["rows"]
        for key, row in rows.items():
            mode, share, kind = key.split("|")
            base = rows[f"{mode}|all|-"]["p95"]
            shown = "all (unfiltered)" if share == "all" else f"{float(share):.2%}"
            recall = "" if row["recall"] is None else f"{row['recall']:.3f}"
            lines.append(f"| {found['vector_index']} | {mode} | {shown} | {kind} | {row['p50']:.1f} | "
                         f"{row['p95']:.1f} | {row['p95'] / base:.2f} | {recall} |")
    return "\n".join(lines)


def verdict(results: dict[str, dict]) -> str:
    """Which filtered rows meet the issue's target: p95 at most twice the unfiltered p95 of the same
    index and mode, and (dense) recall@10 at least 0.95 against brute force."""
    met, missed = 0, []
    for found in results.values():
        for key, row in found["rows"].items():
            mode, share, kind = key.split("|")
            if share == "all":
                continue
            ratio = row["p95"] / found["rows"][f"{mode}|all|-"]["p95"]
            ok = ratio <= 2.0 and (row["recall"] is None or row["recall"] >= 0.95)
            met += ok
            if not ok:
                recall = "" if row["recall"] is None else f", recall {row['recall']:.3f}"
                missed.append(f"{found['vector_index'].split(' (')[0]} {mode} {float(share):.2%} {kind} "
                              f"({ratio:.2f}x{recall})")
    line = f"Target (p95 at most 2x unfiltered, recall@10 at least 0.95): met by {met} of {met + len(missed)} filtered rows"
    return line + (f"; missed by {'; '.join(missed)}." if missed else ".")


def run(config: FiltersBenchConfig) -> tuple[dict[str, dict], list[str]]:
    cache = config.cache_dir
    corpus = metadata_corpus(cache, config.size)
    embeddings = cache / f"embeddings-{config.size}.npy"
    queries = queries_file(config)
    index_dir = cache / f"filters-index-{config.size}"
    results: dict[str, dict] = {}
    notes = []
    if config.reuse_index and index_dir.is_dir():
        notes.append(f"the index in {index_dir} was reused (ingested by an earlier run)")
    else:
        ingest = run_step("ingest", index_dir, corpus, embeddings)
        notes.append(f"ingest of {ingest['passages']:,} passages with metadata: {ingest['seconds']:.0f} s")
    for variant in config.variants:
        converted = run_step("convert", index_dir, corpus, embeddings, variant)  # a no-op when it is that type
        if converted["seconds"] > 5:
            notes.append(f"{variant}: {converted['vector_index']} built in {converted['seconds']:.0f} s")
        shares = config.hnsw_exact_shares if variant == "hnsw" else ("default",)
        depths = config.hnsw_postfilter_depths if variant == "hnsw" else ("default",)
        for share, depth in [(share, depth) for share in shares for depth in depths]:
            key = variant + ("" if share == "default" else f"@{share}") + ("" if depth == "default" else f"~{depth}")
            results[key] = run_step("search", index_dir, embeddings, queries, ",".join(config.modes), 7, share, depth)
            notes.append(f"{results[key]['vector_index']}: the first filter read the `u` column of "
                         f"{config.size:,} documents out of SQLite in {results[key]['column_s']:.1f} s (once per base build)")
            print(table({key: results[key]}), flush=True)
    return results, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", nargs="+", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=FiltersBenchConfig.size)
    parser.add_argument("--variants", nargs="+", default=list(FiltersBenchConfig.variants), choices=list(VARIANTS))
    parser.add_argument("--queries", type=int, default=FiltersBenchConfig.queries)
    parser.add_argument("--modes", nargs="+", default=list(FiltersBenchConfig.modes))
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--hnsw-exact-shares", nargs="+", default=["default"],
                        help="for hnsw: search once per value of the share below which matches are scored exactly")
    parser.add_argument("--hnsw-postfilter-depths", nargs="+", default=["default"],
                        help="for hnsw: search once per depth of the unfiltered search above HNSW_POSTFILTER_SHARE")
    parser.add_argument("--record-as", default="bench_filters", help="the BENCHMARKS.md block to write")
    parser.add_argument("--reuse-index", action="store_true",
                        help="search the index an earlier run ingested instead of ingesting again")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.step:
        name, *rest = args.step
        result = STEPS[name](*(int(r) if r.isdigit() else r for r in rest))
        print(json.dumps(result))
        return 0
    config = FiltersBenchConfig(size=args.size, variants=tuple(args.variants), queries=args.queries,
                                modes=tuple(args.modes), record=not args.no_record,
                                reuse_index=args.reuse_index, hnsw_exact_shares=tuple(args.hnsw_exact_shares),
                                hnsw_postfilter_depths=tuple(args.hnsw_postfilter_depths))
    results, notes = run(config)
    body = table(results) + "\n\n" + verdict(results) + "\n\n" + "\n".join(f"- {n}" for n in notes)
    print(body)
    if config.record:
        from bench.record import record

        title = f"Metadata filters at {config.size:,} passages" + (f" ({', '.join(config.variants)})"
                                                                  if args.record_as != "bench_filters" else "")
        record(args.record_as, title, body,
               command="python -m bench.bench_filters " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
