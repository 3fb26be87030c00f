"""Commit cadence of a large build on a CPU: commits that grow to a quarter of the index against
commits held to `MAX_COMMIT_SECONDS` of embedding (`indexer.build.loop.next_commit_size`).

A build commits in chunks: what a Ctrl-C or a crash loses is the chunk in flight, and searches
see new documents only when it lands. Chunks grew to a quarter of the index so that a large
build stayed linear when every commit rewrote the whole index; with delta segments most
commits of a large index cost seconds, and on a CPU a quarter of a 550k-passage index is 37
minutes of embedding. The ceiling keeps chunks to `MAX_COMMIT_SECONDS` at the build's rate; it
costs more commits and more merges (a merge comes at every 10% of growth instead of with every
quarter-sized commit).

How it is measured: each rule ingests the same `bench.scale_data` corpus (real Wikipedia and
Wikinews text, MiniLM-like vectors) into a new index with `python -m indexer build
--embeddings`, so the time is the build's own work (SQL, BM25, FAISS, merges, calibration,
atomic commits) without the model's; the commit sizes are those a CPU embedding `--rate`
passages/s gets (`commit_cap` 4,096 as at any rate under 410/s; the ceiling at that rate).
Every commit is timed (`WriteTransaction.commit`), and whether it rebuilt the base (a merge)
is read from its reason (`WriteTransaction._merge_reason`). The embedding itself is added as passages / rate, the same for both.

Usage: python -m bench.bench_commit_cadence [--passages 300000] [--rate 60] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.encode_variants import cpu_model  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from bench.scale_data import DEFAULT_CACHE  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from indexer.build import loop  # noqa: E402
from indexer.build.config import DEFAULT_COMMIT_PASSAGES  # noqa: E402
from indexer.store.transaction import WriteTransaction  # noqa: E402

RULES = ("quarter", "ceiling")


def run_rule(rule: str, corpus: Path, embeddings: Path, index_dir: Path, rate: float) -> dict:
    """Ingest `corpus` with the commit sizes `rule` gives a CPU at `rate`; each commit's size,
    seconds and whether it merged."""
    commits: list[dict] = []
    merged: list[bool] = []
    real_commit, real_merge = WriteTransaction.commit, WriteTransaction._merge_reason
    real_cap, real_ceiling = loop.commit_cap, loop.commit_ceiling

    def timed(self, changes, *args, **kwargs):
        began = time.perf_counter()
        result = real_commit(self, changes, *args, **kwargs)
        commits.append({"passages": result.passages_added, "stored": result.passages,
                        "seconds": time.perf_counter() - began})
        return result

    def merge_reason(self, meta, added, removed):
        why = real_merge(self, meta, added, removed)
        merged.append(why is not None)
        return why

    ceiling = None if rule == "quarter" else int(rate * loop.MAX_COMMIT_SECONDS)
    setattr(loop, "commit_cap", lambda config, committed, seconds: DEFAULT_COMMIT_PASSAGES)  # noqa: B010
    setattr(loop, "commit_ceiling", lambda config, committed, seconds: ceiling)  # noqa: B010
    setattr(WriteTransaction, "commit", timed)  # noqa: B010
    setattr(WriteTransaction, "_merge_reason", merge_reason)  # noqa: B010
    try:
        shutil.rmtree(index_dir, ignore_errors=True)
        began = time.perf_counter()
        report = build_index(IndexConfig(source=corpus, index_dir=index_dir, embeddings=embeddings,
                                         model="default", show_progress=False))
        seconds = time.perf_counter() - began
    finally:
        setattr(WriteTransaction, "commit", real_commit)  # noqa: B010
        setattr(WriteTransaction, "_merge_reason", real_merge)  # noqa: B010
        setattr(loop, "commit_cap", real_cap)  # noqa: B010
        setattr(loop, "commit_ceiling", real_ceiling)  # noqa: B010
    for commit, was_merge in zip(commits, merged, strict=False):
        commit["merge"] = was_merge
    return {"commits": commits, "seconds": seconds, "passages": report.total_passages,
            "vector_index": report.vector_index}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=300_000, help="a bench.scale_data corpus size")
    parser.add_argument("--rate", type=float, default=60.0,
                        help="passages/s the CPU embeds (the default model end to end on /usr/share/doc here: 45-62)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--work", type=Path, default=PROJECT_ROOT / ".cache" / "commit-cadence")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    corpus = args.cache / f"corpus-{args.passages}.jsonl"
    embeddings = args.cache / f"embeddings-{args.passages}.npy"
    if not corpus.is_file() or not embeddings.is_file():
        raise SystemExit(f"No scale corpus of {args.passages} passages in {args.cache}: write it with "
                         f"python -m bench.scale_data --sizes {args.passages} --real-count 2048")
    rows = []
    for rule in RULES:
        found = run_rule(rule, corpus, embeddings, args.work / rule, args.rate)
        commits = found["commits"]
        largest = max(c["passages"] for c in commits)
        commit_s = sum(c["seconds"] for c in commits)
        embed_s = found["passages"] / args.rate
        late = [c for c in commits if c["stored"] > found["passages"] // 2]
        print(rule, [(c["passages"], round(c["seconds"], 1), c["merge"]) for c in commits], flush=True)
        rows.append([rule, f"{len(commits)}", f"{sum(c['merge'] for c in commits)}", f"{largest:,}",
                     f"{largest / args.rate / 60:.1f}", f"{max(c['seconds'] for c in commits):.1f}",
                     f"{sum(c['seconds'] for c in late):.1f}", f"{commit_s:.1f}", f"{found['seconds']:.1f}",
                     f"{(embed_s + found['seconds']) / 3600:.2f}", found["vector_index"]])
    header = ["commit sizes", "commits", "merges", "largest commit (passages)",
              f"its embedding at {args.rate:g}/s (min): lost to a Ctrl-C", "slowest commit s",
              "commit s in the second half", "commit s in all", "ingest s in all (no model)",
              f"build h with embedding at {args.rate:g}/s", "vector index"]
    table = markdown_table(header, rows)
    notes = (f"{found['passages']:,} passages of `bench.scale_data` ingested with `--embeddings` into a new index, "
             f"once per rule; commit sizes as a CPU embedding {args.rate:g} passages/s gets them: `quarter` grows each "
             f"commit to a quarter of the index (before this change), `ceiling` holds it to "
             f"{loop.MAX_COMMIT_SECONDS:.0f} s of embedding ({int(args.rate * loop.MAX_COMMIT_SECONDS):,} passages). "
             f"Build hours add passages / rate to the ingest. CPU: {cpu_model()}.")
    print(table, notes, sep="\n\n")
    if not args.no_record:
        record("bench_commit_cadence", "Commit cadence of a large build on a CPU", f"{table}\n\n{notes}",
               command=" ".join(["python -m bench.bench_commit_cadence", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
