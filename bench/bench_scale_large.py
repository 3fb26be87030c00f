"""Scale on one machine past 1M: a build with every default, resumable across sittings, then its searcher.

    python -m bench.bench_scale_large [--sizes 10000000 1000000] [--queries 200] [--no-record]

Data comes from `bench.scale_data` (`--sizes 1000000 10000000` first). Per size, in its own
process each:

- build: `python -m indexer build --source corpus-N.jsonl --embeddings embeddings-N.npy --index DIR
  --quiet`, every other option at its default (the vector index `auto`), its RSS sampled every
  0.5 s by this script. An interrupted build (Ctrl-C, a kill, the machine going away) is run again
  and resumes after its last commit, as any build does; this script keeps each sitting's time and
  peak in `DIR.sittings.json` and adds them up. A finished build is not run again.
- open: a fresh process opens a `Searcher` and runs one hybrid search (the page cache is dropped
  first where this user may, and the table says whether it was);
- search: `bench_scale`'s search step (latency through the `Searcher`, the retrieve stage's parts,
  recall@10 of the FAISS index on held-out vectors against exact search over the stored vectors);
- add: 1,000 new passages with `--embeddings` (a delta segment), `bench_scale`'s add step.

The smaller size is the peer, measured the same way in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.bench_ingest_memory import rss_mb
from bench.bench_scale import (
    ScaleBenchConfig,
    _disk_mb,
    _exact,
    _extra,
    _heldout,
    _queries,
    peak_rss_mb,
    run_step,
)
from bench.scale_data import DEFAULT_CACHE

QUERY = "the history of the city and its people"  # the open step's one search


def build(index_dir: Path, corpus: Path, embeddings: Path, run: bool = True) -> dict:
    """This sitting of the build, added to the earlier ones (`DIR.sittings.json`); with `run` False,
    only the earlier ones (the index as they left it)."""
    state_file = index_dir.with_name(index_dir.name + ".sittings.json")
    sittings = json.loads(state_file.read_text()) if state_file.is_file() else []
    if run and not (sittings and sittings[-1]["finished"]):
        index_dir.parent.mkdir(parents=True, exist_ok=True)
        log = index_dir.with_name(index_dir.name + ".build.log").open("a")
        process = subprocess.Popen([sys.executable, "-m", "indexer", "build", "--source", str(corpus),
                                    "--embeddings", str(embeddings), "--index", str(index_dir)],
                                   stdout=log, stderr=subprocess.STDOUT)
        started, peak = time.perf_counter(), 0.0
        while process.poll() is None:
            peak = max(peak, rss_mb(process.pid) or 0.0)
            time.sleep(0.5)
        sittings.append({"seconds": time.perf_counter() - started, "peak_mb": peak,
                         "finished": process.returncode == 0, "returncode": process.returncode})
        state_file.write_text(json.dumps(sittings, indent=1) + "\n")
        if process.returncode != 0:
            raise RuntimeError(f"the build stopped ({process.returncode}); see {log.name}, and run this again "
                               "to resume it")
    if not sittings:
        raise FileNotFoundError(f"{state_file} records no sitting of this build: run without --no-build first")
    return {"seconds": sum(s["seconds"] for s in sittings), "peak_mb": max(s["peak_mb"] for s in sittings),
            "sittings": len(sittings), "finished": bool(sittings[-1]["finished"])}


def stored_passages(index_dir: Path) -> int:
    from indexer import Index

    index = Index.open(index_dir)
    try:
        return index.stats().passages
    finally:
        index.close()


def exact_prefix(config: ScaleBenchConfig, size: int, stored: int, queries: Path) -> Path:
    """`bench_scale._exact` over the first `stored` rows: what a build stopped part way holds (it
    commits the source in order; `measure` checks the count)."""
    if stored == size:
        return _exact(config, size, queries)
    import numpy as np

    from bench.scale_data import load_embeddings

    path = config.cache_dir / f"exact-{size}-first-{stored}-{queries.stem}.json"
    if not path.is_file():
        vectors, ids = load_embeddings(config.cache_dir / f"embeddings-{size}.npy")
        query_vectors = np.load(queries.with_suffix(".npy"))

        scores = np.full((len(query_vectors), 0), -np.inf, np.float32)
        rows = np.zeros((len(query_vectors), 0), np.int64)
        for start in range(0, stored, 65_536):
            block = np.asarray(vectors[start:min(stored, start + 65_536)], dtype=np.float32)
            both = np.concatenate([scores, query_vectors @ block.T], axis=1)
            both_rows = np.concatenate([rows, np.broadcast_to(np.arange(start, start + len(block)),
                                                              (len(query_vectors), len(block)))], axis=1)
            top = np.argpartition(-both, 9, axis=1)[:, :10]
            scores, rows = np.take_along_axis(both, top, 1), np.take_along_axis(both_rows, top, 1)
        order = np.argsort(-scores, axis=1, kind="stable")
        found = np.take_along_axis(rows, order, 1)
        path.write_text(json.dumps([[ids[r] for r in row] for row in found.tolist()]))
    return path


def drop_page_cache() -> bool:
    """Whether the kernel's page cache could be dropped (root only), so the open reads from disk."""
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def step_open(index_dir: str) -> dict:
    from search import Searcher

    started = time.perf_counter()
    searcher = Searcher(index_dir)
    searcher.index.snapshot()
    opened = time.perf_counter() - started
    searcher.search_detailed(QUERY, k=10, mode="hybrid")
    first = time.perf_counter() - started
    rss = rss_mb(os.getpid())
    searcher.close()
    return {"open_s": opened, "first_search_s": first, "rss_after_open_mb": rss}


def measure(config: ScaleBenchConfig, size: int, queries: Path, heldout: Path, run: bool = True) -> dict:
    corpus = config.cache_dir / f"corpus-{size}.jsonl"
    embeddings = config.cache_dir / f"embeddings-{size}.npy"
    if not corpus.is_file() or not embeddings.is_file():
        raise FileNotFoundError(f"{corpus} or {embeddings} is missing: run python -m bench.scale_data "
                                f"--sizes {size} first.")
    index_dir = config.cache_dir / "indexes" / f"large-{size}"
    built = build(index_dir, corpus, embeddings, run)
    print(json.dumps({"size": size, "build": built}), flush=True)
    stored = stored_passages(index_dir)
    if stored > size or (built["finished"] and stored != size):
        raise RuntimeError(f"{index_dir} holds {stored:,} passages, not {size:,}: delete it and run again")
    exact = exact_prefix(config, size, stored, queries)
    heldout_exact = exact_prefix(config, size, stored, heldout)
    files_mb, sqlite_mb = _disk_mb(index_dir)
    dropped = drop_page_cache()
    opened = run_step_here("open", index_dir)  # hashes the files the build wrote, once
    again = run_step_here("open", index_dir)  # a new process: their digests come from the cache
    found = run_step("search", index_dir, queries, exact, heldout, heldout_exact)
    add = run_step("add", index_dir, _extra(config, size, "large"), False)
    return {"size": size, "stored": stored, "build": built, "files_mb": files_mb, "sqlite_mb": sqlite_mb, "cache_dropped": dropped,
            "open": opened, "open_again": again, "search": found, "add": add}


def run_step_here(name: str, *args: object) -> dict:
    cmd = [sys.executable, "-m", "bench.bench_scale_large", "--step", name, *map(str, args)]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def table(results: list[dict]) -> str:
    def pair(p: list[float]) -> str:
        return f"{p[0]:.1f} / {p[1]:.1f}"

    lines = ["| passages | vector index | build s (sittings) | build peak RSS MB | files MB (+SQLite) | "
             "open s, first / again (page cache dropped) | first search s | map read s | Searcher RSS MB after open / after 800 searches | "
             "recall@10, held-out vectors | dense retrieve ms | hybrid retrieve ms | the same again: dense / hybrid ms | FAISS@100 ms | BM25@100 ms | "
             "SQL ms | add 1k s |", "|" + "---|" * 17]
    for r in results:
        b, o, s = r["build"], r["open"], r["search"]
        passages = f"{r['size']:,}" if b["finished"] else f"{r['stored']:,} of {r['size']:,} (build stopped)"
        lines.append(
            f"| {passages} | {s['vector_index']} | {b['seconds']:,.0f} ({b['sittings']}) | {b['peak_mb']:,.0f} | "
            f"{r['files_mb']:,.0f} (+{r['sqlite_mb']:,.0f}) | {o['open_s']:.1f} / {r['open_again']['open_s']:.1f} "
            f"({'yes' if r['cache_dropped'] else 'no'}) | "
            f"{o['first_search_s']:.1f} | {s['map_s']:.1f} | {o['rss_after_open_mb']:,.0f} / {s['rss_mb']:,.0f} | "
            f"{s['heldout_recall']:.3f} | {pair(s['dense_retrieve'])} | {pair(s['hybrid_retrieve'])} | "
            f"{pair(s['dense_retrieve_again'])}, {pair(s['hybrid_retrieve_again'])} | "
            f"{pair(s['faiss'])} | {pair(s['bm25'])} | {pair(s['sql'])} | {r['add']['seconds']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--step", nargs="+", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-build", action="store_true",
                        help="measure each index as its earlier sittings left it (a build stopped part way included)")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.step:
        result = {"open": step_open}[args.step[0]](*args.step[1:])
        print(json.dumps({**result, "peak_rss_mb": peak_rss_mb()}))
        return 0
    config = ScaleBenchConfig(sizes=tuple(args.sizes), variants=("auto",), queries=args.queries,
                              cache_dir=args.cache, record=not args.no_record)
    load = os.getloadavg()[0]
    queries, heldout = _queries(config), _heldout(config)
    results = []
    for size in args.sizes:
        results.append(measure(config, size, queries, heldout, run=not args.no_build))
        print(json.dumps(results[-1]), flush=True)
    body = table(results)
    print(body)
    if config.record:
        from bench.record import record

        notes = (f"Each build: `python -m indexer build --source corpus-N.jsonl --embeddings embeddings-N.npy "
                 "--index DIR`, every option at its default, from an empty folder (bench.scale_data: real "
                 "Wikipedia/Wikinews text, 4,096 real MiniLM vectors and MiniLM-like synthetic ones after them); "
                 "build s adds up its sittings (a rerun resumes after the last commit), its peak RSS is the "
                 "largest sampled every 0.5 s. *open s*: a fresh process from `Searcher(DIR)` to a loaded "
                 "snapshot, the first time (each file the build wrote is hashed against its commit's digest) and "
                 "again in another new process (digests from the cache, `indexer.store.integrity`); *first search s* adds one hybrid search (a large index reads its passage-to-document map in a thread meanwhile). "
                 "*map read s*: that map read whole by `Index.load_document_map` before the latency rows, so they are "
                 "searches at rest. Latency: 200 real text queries at k=10 through "
                 "the `Searcher` (p50 / p95), then the same searches again (the files are memory-mapped: the first pass "
                 "also pays for the pages it touches first), the parts measured alone at depth 100 (after the "
                 "Searcher's search of the same query). Recall: 200 held-out draws "
                 "of the vector model, the FAISS index against exact search over every stored vector. *add 1k*: "
                 f"1,000 new passages through `--embeddings` (a delta segment). Load average {load:.1f} when the run "
                 "began.")
        record("bench_scale_large", f"Scale at {', '.join(f'{n:,}' for n in args.sizes)} passages", body + "\n\n" + notes,
               command="python -m bench.bench_scale_large " + " ".join(argv or sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
