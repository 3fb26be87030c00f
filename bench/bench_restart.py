"""Restart to ready: how long `python -m search.api` refuses connections, and how long until it
answers searches, when it listens at once (the default) and when it loads first (`--load-first`,
the peer: how the server started before), measured side by side in one run.

Each start is timed from the process's launch: "first answer" is the first HTTP response of any
status (503 "loading" counts: the client is told to retry instead of being refused), "ready" the
first /health that says the index is ready. Clients asking meanwhile are polled every 50 ms.

    python bench/bench_restart.py [--index DIR] [--runs 3] [--no-record]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx2 as httpx  # noqa: E402

from bench.bench_api import HOST, free_port  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402

POLL_S = 0.05
WAYS = (("listens at once (default)", ()), ("--load-first (the peer)", ("--load-first",)))


def time_start(index_dir: Path, extra: tuple[str, ...], timeout_s: float = 300.0) -> tuple[float, float, int]:
    """(seconds to the first HTTP answer, seconds to ready, connections refused meanwhile)."""
    port = free_port()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "search.api", "--index", str(index_dir), "--host", HOST,
                                "--port", str(port), "--log-level", "warning", *extra],
                               cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = None
    refused = 0
    try:
        while time.perf_counter() - started < timeout_s:
            if process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                answer = httpx.get(f"http://{HOST}:{port}/health", timeout=5)
            except httpx.TransportError:
                refused += 1
            else:
                first = first if first is not None else time.perf_counter() - started
                if answer.status_code == 200 and answer.json().get("index") == "ready":
                    return first, time.perf_counter() - started, refused
            time.sleep(POLL_S)
        raise RuntimeError(f"not ready within {timeout_s} s")
    finally:
        process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
        if process.poll() is None:
            process.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "demo")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    if not (args.index / "index.json").is_file():
        parser.error(f"{args.index} holds no index; build one (make demo-index) or pass --index DIR")
    results: dict[str, list[tuple[float, float, int]]] = {label: [] for label, _ in WAYS}
    for _ in range(args.runs):  # alternated, so load on the machine falls on both alike
        for label, extra in WAYS:
            results[label].append(time_start(args.index, extra))
    rows = [[label, f"{statistics.median(r[0] for r in runs):.2f}", f"{statistics.median(r[1] for r in runs):.2f}",
             f"{statistics.median(r[2] for r in runs):.0f}"] for label, runs in results.items()]
    table = markdown_table(["start", "first answer, s (median)", "ready, s (median)", "connections refused (median)"],
                           rows)
    body = (f"{table}\n\n{args.runs} starts each, alternated, over `{args.index.name}` (its model and, when "
            f"shipped, the reranker loading); a client polls /health every {POLL_S * 1000:.0f} ms from the launch. "
            "Before ready, the default answers 503 'loading' with Retry-After: 1.")
    print(body)
    if not args.no_record:
        record("bench_restart", "API restart to ready", body, command="python bench/bench_restart.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
