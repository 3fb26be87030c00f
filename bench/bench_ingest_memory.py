"""Peak memory of a large ingest by source window size, with the default vector index.

    python -m bench.bench_ingest_memory [--size 1000000] [--windows 1000000 250000] [--no-record]

Each run is `python -m indexer build --embeddings` of `bench.scale_data`'s corpus of `--size`
passages (run that first) into a new index with the default vector index (`auto`: IVF with SQ8
at 1M) and commits of up to 1M passages, in its own process, with `source_stream.WINDOW_DOCUMENTS`
set to each of `--windows`; this script samples the process's RSS every 0.25 s. Reported: the
build's time and commits, its peak RSS, and when the peak came. The window sizes take turns in one
run, so they see the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.record import markdown_table, record
from bench.scale_data import DEFAULT_CACHE

TARGET_MB = 3 * 1024  # issue 31: 1M passages at peak RSS <= 3 GB


def child(index_dir: str, corpus: str, embeddings: str, window: int) -> None:
    """The build itself (in the measured process)."""
    import indexer.build.source_stream as source_stream
    from indexer import IndexConfig, build_index
    from indexer.store.ann import VectorIndexConfig

    source_stream.WINDOW_DOCUMENTS = window
    started = time.perf_counter()
    report = build_index(IndexConfig(source=Path(corpus), index_dir=Path(index_dir), embeddings=Path(embeddings),
                                     vector_index=VectorIndexConfig(kind="auto"), show_progress=False,
                                     commit_passages=1_000_000))
    print(json.dumps({"seconds": time.perf_counter() - started, "commits": report.commits,
                      "vector_index": report.vector_index}), flush=True)


def rss_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) / 1024 for line in status.splitlines() if line.startswith("VmRSS:")), None)


def measure(corpus: Path, embeddings: Path, window: int, work: Path) -> dict:
    index_dir = work / f"idx-{window}"
    shutil.rmtree(index_dir, ignore_errors=True)
    process = subprocess.Popen([sys.executable, "-m", "bench.bench_ingest_memory", "--child", str(index_dir),
                                str(corpus), str(embeddings), str(window)], stdout=subprocess.PIPE, text=True)
    started, peak, peak_at = time.perf_counter(), 0.0, 0.0
    while process.poll() is None:
        now = rss_mb(process.pid)
        if now is not None and now > peak:
            peak, peak_at = now, time.perf_counter() - started
        time.sleep(0.25)
    out = process.stdout.read() if process.stdout else ""
    if process.returncode != 0:
        raise RuntimeError(f"the build with windows of {window:,} failed: {out[-2000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    shutil.rmtree(index_dir, ignore_errors=True)
    return {"window": window, "peak_mb": peak, "peak_at_s": peak_at, **result}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--windows", type=int, nargs="+", default=[1_000_000, 250_000])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.child[2], int(args.child[3]))
        return 0
    corpus, embeddings = args.cache / f"corpus-{args.size}.jsonl", args.cache / f"embeddings-{args.size}.npy"
    if not corpus.is_file() or not embeddings.is_file():
        print(f"error: no scale data of {args.size:,} passages in {args.cache}: run "
              f"python -m bench.scale_data --sizes {args.size} first", file=sys.stderr)
        return 2
    command = " ".join(["python -m bench.bench_ingest_memory", *(argv if argv is not None else sys.argv[1:])])
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench_ingest_memory_", dir=args.cache) as tmp:
        results = [measure(corpus, embeddings, window, Path(tmp)) for window in args.windows]
    rows = [[f"{r['window']:,}", r["commits"], f"{r['seconds']:.0f}", f"{r['peak_mb']:,.0f}",
             f"{r['peak_at_s']:.0f}", "yes" if r["peak_mb"] <= TARGET_MB else "no", r["vector_index"]]
            for r in results]
    table = markdown_table(["window (documents)", "commits", "build s", "peak RSS MB", "peak at s",
                            "<= 3 GB (issue 31)", "vector index"], rows)
    print(table)
    if not args.no_record:
        body = (f"{table}\n\n`python -m indexer build --embeddings` of `bench.scale_data`'s {args.size:,} passages "
                "(real Wikipedia/Wikinews text, MiniLM-like vectors) into a new index, default vector index, commits "
                "of up to 1M passages, one process per row, RSS sampled every 0.25 s by this script; the source read "
                "in windows of the given number of documents (`indexer/build/source_stream.py`, WINDOW_DOCUMENTS). "
                f"Load average {load:.1f} when the run began.")
        record("bench_ingest_memory", f"Peak memory of a {args.size:,}-passage ingest by source window", body,
               command=command)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
