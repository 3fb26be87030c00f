"""A refactor's before and after, side by side in one run: `bench_scifact` and `bench_indexing`
on an earlier revision and on a later one (default HEAD), each checked out as a git worktree.

A pure refactor must give the same retrieval figures (nDCG@10, MRR@10 and recall@100 are
deterministic for one index) and the same speed within noise. Each script runs once per
tree, in its own process, the two trees alternating (before, after, before, after) so that
load from other work on the machine falls on both; each SciFact index is built afresh by
its own tree's code. The tables each script prints are put side by side; nothing is taken
from an earlier run.

    python bench/bench_before_after.py --rev 35385c4
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT, shared_data_dir

# The commit before issue 26's refactor began (the build loop, SearchParams, the store layout).
DEFAULT_REV = "35385c4"


def table_rows(output: str, first_header: str) -> list[list[str]]:
    """The rows of the markdown table in `output` whose header starts with `first_header`."""
    lines = output.splitlines()
    for at, line in enumerate(lines):
        if line.startswith(f"| {first_header} |"):
            rows = []
            for row in lines[at + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([cell.strip() for cell in row.strip().strip("|").split("|")])
            return rows
    raise ValueError(f"no table headed {first_header!r} in the output:\n{output[-2000:]}")


def run_script(tree: Path, script: str, args: list[str], log: Path) -> tuple[str, float]:
    """Run `bench/<script>` of `tree` with that tree's packages first on the path; (stdout, s)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, f"bench/{script}", "--no-record", *args], cwd=tree, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - started
    log.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{script} in {tree} failed ({done.returncode}); see {log}:\n{done.stderr[-2000:]}")
    return done.stdout, seconds


def side_by_side(before: list[list[str]], after: list[list[str]], columns: list[int]) -> list[list[str]]:
    """One row per system: its name, then each chosen column as "before → after"."""
    rows = []
    for old, new in zip(before, after, strict=True):
        if old[0] != new[0]:
            raise ValueError(f"the two runs list different rows: {old[0]!r} and {new[0]!r}")
        rows.append([old[0], *(f"{old[c]} → {new[c]}" for c in columns)])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default=DEFAULT_REV, help=f"the revision before (default {DEFAULT_REV})")
    parser.add_argument("--after", default="HEAD", help="the revision after (default HEAD: commit first)")
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--docs", type=int, default=300, help="SciFact documents bench_indexing indexes")
    parser.add_argument("--repeats", type=int, default=2, help="bench_indexing's alternating runs")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if not (args.data / "scifact").is_dir():
        print(f"SciFact not found in {args.data}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench_before_after_"))
    trees = {"before": work / "before", "after": work / "after"}
    for label, rev in (("before", args.rev), ("after", args.after)):
        subprocess.run(["git", "worktree", "add", "--detach", str(trees[label]), rev], cwd=PROJECT_ROOT,
                       check=True, capture_output=True)
    data = ["--data", str(args.data)]
    outputs: dict[tuple[str, str], str] = {}
    seconds: dict[tuple[str, str], float] = {}
    try:
        for script, extra in (("bench_scifact.py", lambda label: ["--index", str(work / f"scifact-{label}")]),
                              ("bench_indexing.py", lambda label: ["--docs", str(args.docs),
                                                                    "--repeats", str(args.repeats)])):
            for label, tree in trees.items():
                print(f"{script} on {label} ({tree})", flush=True)
                key = (script, label)
                outputs[key], seconds[key] = run_script(tree, script, [*data, *extra(label)],
                                                        work / f"{script}.{label}.log")
    finally:
        for tree in trees.values():
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=PROJECT_ROOT,
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)

    quality = side_by_side(table_rows(outputs["bench_scifact.py", "before"], "system"),
                           table_rows(outputs["bench_scifact.py", "after"], "system"), [1, 2, 3, 4])
    speed = side_by_side(table_rows(outputs["bench_indexing.py", "before"], "pipeline"),
                         table_rows(outputs["bench_indexing.py", "after"], "pipeline"), [1, 2, 3])
    body = (
        f"Before: {rev_line(args.rev)}. After: {rev_line(args.after)}. Each row reads before → after, both measured in this run, "
        "alternating, each tree's own code building its own SciFact index "
        f"(bench_scifact {seconds['bench_scifact.py', 'before']:.0f} s before, "
        f"{seconds['bench_scifact.py', 'after']:.0f} s after).\n\n"
        "SciFact test, 300 queries (`bench_scifact`):\n\n"
        + markdown_table(["system", "nDCG@10", "MRR@10", "recall@100", "p50 ms (encode / retrieve)"], quality)
        + f"\n\nIndexing throughput, first {args.docs} SciFact documents, {args.repeats} alternating runs "
        "(`bench_indexing`):\n\n"
        + markdown_table(["pipeline", "passages", "passages/s (median)", "each run"], speed)
    )
    print(body)
    if not args.no_record:
        record("bench_before_after", "Refactor check: before and after in one run", body,
               command=f"python bench/bench_before_after.py --rev {args.rev}")
    return 0


def rev_line(rev: str) -> str:
    line = subprocess.run(["git", "log", "-1", "--format=%h (%ad) %s", "--date=short", rev], cwd=PROJECT_ROOT,
                          capture_output=True, text=True).stdout.strip()
    return f"`{line[:110]}`" if line else f"`{rev}`"


if __name__ == "__main__":
    sys.exit(main())
