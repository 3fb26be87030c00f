"""The HTTP API under load: 1, 4, 16 and 64 concurrent clients against `python -m search.api`.

Each level runs for a fixed time (`--duration`) and at most `--max-requests` requests, from an
async httpx loop in this process to a server process on 127.0.0.1 (never another address).
Every client posts the next query of a fixed list to /search (k=10, the server's default mode
and reranking) and waits for the answer before sending another. Reported: requests/s, client
latency p50/p95/p99 (queueing included), the server's own search time p50 (`timings.total_ms`,
the Searcher alone) and the error count, which must be 0.

The peer, measured in the same run, is the same queries through `Searcher.search_detailed`
in this process, one after another: what a search costs without HTTP, JSON or queueing.
Then the load runs once more while `python -m indexer build` commits a few new documents into
a copy of the demo index that the server is serving; the new build must be picked up (its
build id, and a search for a word only the new documents hold) with no failed request.

Usage: python bench/bench_api.py [--duration 10] [--levels 1 4 16 64] [--workers 1]
       [--compare-workers 2] [--skip-scifact] [--no-record]
       python bench/bench_api.py --mixed [--duration 60] [--rounds 3]: reads beside writes and a kill -9,
       its own section (bench/api_mixed.py)
The demo index is reused from indexes/demo (`make demo-index` builds it), SciFact's from
indexes/scifact (`python -m search.eval --beir DATA/scifact --index indexes/scifact --build`);
neither is modified.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import httpx2 as httpx  # noqa: E402
import numpy as np  # noqa: E402

from bench import api_mixed  # noqa: E402
from bench.record import markdown_table, record  # noqa: E402
from data.beir import load_beir_qrels, load_beir_queries  # noqa: E402
from data.paths import PROJECT_ROOT, shared_data_dir  # noqa: E402

HOST = "127.0.0.1"  # the only address this benchmark sends traffic to
DEMO_QUERIES = [
    "how do I read a file line by line", "context managers and the with statement",
    "sort a list of dictionaries by a key", "open a file for appending", "regular expression groups",
    "parse command line arguments", "run a subprocess and capture its output", "join paths portably",
    "format a date as a string", "thread pool for parallel tasks", "decorators with arguments",
    "what does yield do", "compare floating point numbers", "read a csv file", "serialize to json",
    "default values in a dictionary", "exception chaining raise from", "iterate over two lists at once",
    "temporary files and directories", "async await coroutines", "unicode normalisation of strings",
    "hash a password securely", "copy a directory tree", "logging to a file", "os.path.join",
]
NEW_DOCS = 5  # documents the background build adds during the rebuild run


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class Level:
    label: str
    clients: int
    latencies_s: list[float] = field(default_factory=list)
    server_ms: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0  # summed over the rounds it ran in
    load_avgs: list[float] = field(default_factory=list)  # the 1-minute load average as each round began

    @property
    def requests(self) -> int:
        return len(self.latencies_s) + self.errors

    def row(self) -> list[object]:
        lat = np.array(self.latencies_s) * 1000 if self.latencies_s else np.array([np.nan])
        return [
            self.label, self.clients, self.requests, self.errors,
            f"{len(self.latencies_s) / self.elapsed_s:.1f}" if self.elapsed_s else "—",
            f"{np.percentile(lat, 50):.0f}", f"{np.percentile(lat, 95):.0f}", f"{np.percentile(lat, 99):.0f}",
            f"{statistics.median(self.server_ms):.0f}" if self.server_ms else "—",
            f"{statistics.mean(self.load_avgs):.1f}" if self.load_avgs else "—",
        ]


async def load(base: str, queries: list[str], level: Level, duration_s: float, max_requests: int,
               until: asyncio.Event | None = None, path: str = "/search",
               headers: dict[str, str] | None = None) -> Level:
    """`level.clients` clients, each POSTing its next search to `path` once the last one is answered,
    for `duration_s` seconds (or until `until` is set, when given) and at most `max_requests` requests.
    Adds to what `level` holds, so a level can run in several rounds."""
    level.load_avgs.append(os.getloadavg()[0])
    sent, first = 0, level.requests
    limits = httpx.Limits(max_connections=level.clients, max_keepalive_connections=level.clients)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits, headers=headers) as client:
        started = time.perf_counter()
        deadline = started + duration_s

        def running() -> bool:
            within = time.perf_counter() < deadline
            wanted = until is None or not until.is_set()
            return within and wanted and sent < max_requests

        async def one_client() -> None:
            nonlocal sent
            while running():
                query = queries[(first + sent) % len(queries)]
                sent += 1
                t0 = time.perf_counter()
                try:
                    response = await client.post(path, json={"q": query, "k": 10})
                    ok = response.status_code == 200
                    detail = "" if ok else f"{response.status_code} {response.text[:200]}"
                except httpx.HTTPError as err:
                    ok, detail = False, repr(err)
                if ok:
                    level.latencies_s.append(time.perf_counter() - t0)
                    level.server_ms.append(response.json()["timings"]["total_ms"])
                else:
                    level.errors += 1
                    level.first_error = level.first_error or detail

        await asyncio.gather(*(one_client() for _ in range(level.clients)))
        level.elapsed_s += time.perf_counter() - started
    return level


def wait_ready(process: subprocess.Popen, log_path: Path, ready, timeout_s: float = 300) -> None:
    """Poll `ready()` (False or a transport error: not yet) until it is True; raise with the
    server's log when the process exits or `timeout_s` passes first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log_path.read_text()[-2000:]}")
        with contextlib.suppress(httpx.TransportError):
            if ready():
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the server was not ready within {timeout_s:.0f} s: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)


def stop(process: subprocess.Popen) -> None:
    """Ctrl-C the server (it drains its requests), killed after 60 s; nothing when it has exited."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def serve(index_dir: Path, workers: int, log_dir: Path, search_threads: int = 1) -> Iterator[str]:
    """`python -m search.api` over `index_dir` on a free port; yields its base URL once ready."""
    port = free_port()
    log_path = log_dir / f"server-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "search.api", "--index", str(index_dir), "--host", HOST,
             "--port", str(port), "--workers", str(workers), "--search-threads", str(search_threads),
             "--log-level", "warning"],
            cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT,
        )
        base = f"http://{HOST}:{port}"
        try:
            wait_ready(process, log_path, lambda: httpx.get(f"{base}/health", timeout=5).json()["index"] == "ready")
            for query in DEMO_QUERIES[:5]:  # warm-up: first-call allocations, lazy imports
                httpx.post(f"{base}/search", json={"q": query, "k": 10}, timeout=120)
            yield base
        finally:
            stop(process)


def open_peer(index_dir: Path):
    """The peer: a Searcher in this process, with the reranker the server decides on (same rule)."""
    from search import Searcher, resolve_reranker

    choice = resolve_reranker(None, os.environ.get("SEMSEARCH_RERANKER") or None)
    searcher = Searcher(index_dir, reranker=choice.load())
    for query in DEMO_QUERIES[:5]:
        searcher.search_detailed(query, k=10, rerank=choice.enabled)
    return searcher, choice.enabled


def in_process(searcher, rerank: bool, queries: list[str], level: Level, duration_s: float,
               max_requests: int) -> None:
    """One round of the same searches through the Searcher in this process, one at a time."""
    level.load_avgs.append(os.getloadavg()[0])
    started = time.perf_counter()
    done = 0
    while time.perf_counter() - started < duration_s and done < max_requests:
        t0 = time.perf_counter()
        result = searcher.search_detailed(queries[len(level.latencies_s) % len(queries)], k=10, rerank=rerank)
        level.latencies_s.append(time.perf_counter() - t0)
        level.server_ms.append(result.timings.total_s * 1000)
        done += 1
    level.elapsed_s += time.perf_counter() - started


def stats(base: str) -> dict:
    return httpx.get(f"{base}/stats", timeout=60).json()


def rebuild_run(demo_index: Path, queries: list[str], clients: int, max_s: float, max_requests: int,
                work: Path) -> tuple[Level, str]:
    """Load on a copy of the demo index while a build adds NEW_DOCS documents to that copy."""
    served = work / "demo-copy"
    shutil.copytree(demo_index, served, ignore=shutil.ignore_patterns(".lock"))
    extra = work / "extra.jsonl"
    extra.write_text("".join(
        json.dumps({"id": f"bench-new-{i}", "title": f"Zebracorn note {i}",
                    "text": f"zebracorn{i} is a word that only this added document holds."}) + "\n"
        for i in range(NEW_DOCS)
    ))
    with serve(served, 1, work) as base:
        before = stats(base)

        build_s: list[float] = []

        async def run() -> Level:
            done = asyncio.Event()
            build_started = time.perf_counter()
            build = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "indexer", "build", "--source", str(extra), "--index", str(served),
                cwd=PROJECT_ROOT, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
            )

            async def watch_build() -> None:
                _, err = await build.communicate()
                if build.returncode != 0:
                    raise RuntimeError(f"the background build failed: {err.decode()[-2000:]}")
                build_s.append(time.perf_counter() - build_started)
                await asyncio.sleep(3)  # keep loading a little after the commit
                done.set()

            level = Level("demo, build committing meanwhile", clients)
            await asyncio.gather(load(base, queries, level, max_s, max_requests, until=done), watch_build())
            return level

        level = asyncio.run(run())
        after = stats(base)
        probe = httpx.get(f"{base}/search", params={"q": "zebracorn3", "mode": "bm25", "k": 1}, timeout=60).json()
    picked_up = (after["build_id"] != before["build_id"] and after["documents"] == before["documents"] + NEW_DOCS
                 and probe["hits"][0]["doc_id"] == "bench-new-3")
    note = (f"the build (a new process: imports, model load, {NEW_DOCS} documents embedded, BM25 rebuilt, commit) "
            f"took {build_s[0]:.0f} s of the run's {level.elapsed_s:.0f} s; "
            f"build {before['build_id'][:8]} -> {after['build_id'][:8]}, documents {before['documents']} -> "
            f"{after['documents']}; the new documents {'were' if picked_up else 'were NOT'} found without restart")
    return level, note


def workers_label(name: str, workers: int) -> str:
    return f"{name}, {workers} worker{'s' if workers > 1 else ''}"


def comparison_note(rows: list[list[object]], default_label: str, others: list[tuple[str, str]]) -> str:
    """One sentence: the demo at 16 clients served as by default, and with each other setting (paired rows)."""
    by_label = {(row[0], row[1]): row for row in rows}

    def figures(row: list[object]) -> str:
        return f"{row[4]} req/s (p50 {row[5]} ms, search p50 {row[8]} ms)"

    base = by_label.get((default_label, 16))
    compared = [(what, by_label[(label, 16)]) for label, what in others if (label, 16) in by_label]
    if base is None or not compared:
        return ""
    best_other = max(float(row[4]) for _, row in compared)
    verdict = (
        "so the default stays at one worker: on these cores the alternatives add memory and per-search time, "
        "not throughput."
        if float(base[4]) >= 0.9 * best_other
        else "so on this machine more workers or threads paid: raise --workers or --search-threads."
    )
    return (f"Taking turns at 16 clients on the demo index, the default served {figures(base)}; "
            + "; ".join(f"{what}, {figures(row)}" for what, row in compared) + f"; {verdict}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--demo-index", type=Path, default=PROJECT_ROOT / "indexes" / "demo")
    parser.add_argument("--scifact-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16, 64])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per level")
    parser.add_argument("--max-requests", type=int, default=3000, help="requests per level at most")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers of the measured server")
    parser.add_argument("--compare-workers", type=int, default=2,
                        help="also run the demo at 16 clients with this many workers (0: skip)")
    parser.add_argument("--search-threads", type=int, default=1, help="searches a worker runs at once")
    parser.add_argument("--compare-threads", type=int, default=2,
                        help="also run the demo at 16 clients with this many search threads (0: skip)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="turns taken by the settings compared side by side (HTTP vs in-process; workers)")
    parser.add_argument("--rebuild-clients", type=int, default=16)
    parser.add_argument("--skip-scifact", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--mixed", action="store_true",
                        help="instead: 16 readers beside 1 writer, then a kill -9 mid-write (bench/api_mixed.py); "
                        "--duration is then the whole mixed run's length")
    args = parser.parse_args(argv)
    command = " ".join(["python bench/bench_api.py", *(argv if argv is not None else sys.argv[1:])])
    if args.mixed:
        with tempfile.TemporaryDirectory(prefix="bench_api_mixed_") as tmp:
            result = api_mixed.run_mixed(args.demo_index, Path(tmp), args.duration, args.rounds)
        return api_mixed.report(result, args.duration, args.rounds, command, not args.no_record)

    targets = [("demo", args.demo_index, DEMO_QUERIES)]
    if not args.skip_scifact:
        beir = args.data / "scifact"
        queries = load_beir_queries(beir)
        test_ids = sorted(load_beir_qrels(beir, "test"))
        targets.append(("SciFact", args.scifact_index, [queries[qid] for qid in test_ids if qid in queries]))
    for name, index_dir, _ in targets:
        if not (index_dir / "index.json").is_file():
            print(f"error: no {name} index in {index_dir}; see this script's docstring", file=sys.stderr)
            return 2

    rows: list[list[object]] = []
    notes: list[str] = []
    slice_s = args.duration / args.rounds
    with tempfile.TemporaryDirectory(prefix="bench_api_") as tmp:
        work = Path(tmp)
        for name, index_dir, queries in targets:
            searcher, rerank = open_peer(index_dir)
            with serve(index_dir, args.workers, work, args.search_threads) as base:
                figures = stats(base)
                notes.append(f"{name}: {figures['documents']} documents, {figures['passages']} passages, "
                             f"{figures['model_label']}, rerank by default: {figures['rerank_default']}")
                # One client over HTTP and the in-process peer take turns, so both see the same load.
                http = Level(workers_label(name, args.workers), 1)
                peer = Level(f"{name}, in-process Searcher, no HTTP (the peer, taking turns with the row above)", 1)
                for _ in range(args.rounds):
                    asyncio.run(load(base, queries, http, slice_s, args.max_requests))
                    in_process(searcher, rerank, queries, peer, slice_s, args.max_requests)
                rows += [http.row(), peer.row()]
                print(rows[-2], rows[-1], http.first_error, flush=True)
                for clients in [c for c in args.levels if c != 1]:
                    level = asyncio.run(load(base, queries, Level(workers_label(name, args.workers), clients),
                                             args.duration, args.max_requests))
                    rows.append(level.row())
                    print(rows[-1], level.first_error, flush=True)
            searcher.close()
        if args.compare_workers or args.compare_threads:
            # The settings compared take turns at 16 clients, each on its own server, all started first.
            settings = [(workers_label("demo", args.workers) + ", paired", args.workers, args.search_threads)]
            if args.compare_workers:
                settings.append((workers_label("demo", args.compare_workers), args.compare_workers,
                                 args.search_threads))
            if args.compare_threads:
                settings.append((f"demo, {args.workers} worker, {args.compare_threads} search threads", args.workers,
                                 args.compare_threads))
            with contextlib.ExitStack() as stack:
                bases = [stack.enter_context(serve(args.demo_index, workers, work, threads))
                         for _, workers, threads in settings]
                levels = [Level(label, 16) for label, _, _ in settings]
                for _ in range(args.rounds):
                    for base, level in zip(bases, levels, strict=True):
                        asyncio.run(load(base, DEMO_QUERIES, level, slice_s, args.max_requests))
            for level in levels:
                rows.append(level.row())
                print(rows[-1], level.first_error, flush=True)
        level, note = rebuild_run(args.demo_index, DEMO_QUERIES, args.rebuild_clients, 180.0,
                                  args.max_requests * 4, work)
        rows.append(level.row())
        notes.append(f"rebuild run: {note}")
        print(rows[-1], level.first_error, note, flush=True)

    header = ["server / peer", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms",
              "search p50 ms", "load avg"]
    table = markdown_table(header, rows)
    print(table)
    for line in notes:
        print(line)
    errors = sum(int(row[3]) for row in rows)
    workers_note = comparison_note(rows, workers_label("demo", args.workers) + ", paired", [
        (workers_label("demo", args.compare_workers), f"{args.compare_workers} workers (a copy of the models each)"),
        (f"demo, {args.workers} worker, {args.compare_threads} search threads",
         f"one worker running {args.compare_threads} searches at once"),
    ])
    print(workers_note)
    if not args.no_record:
        body = (
            f"{table}\n\n"
            f"Each row: {args.duration:.0f} s (at most {args.max_requests} requests) of closed-loop clients "
            "(each sends its next POST /search, k=10, default mode hybrid and default reranking, when the "
            "last is answered) from an async httpx loop on the same machine. Latency is the client's, "
            "queueing included; *search p50* is the server's own `timings.total_ms` (the Searcher alone). "
            "The in-process row is the peer: the same queries through `Searcher.search_detailed` in the "
            f"benchmark's process, one at a time. Rows compared with each other take turns in {args.rounds} "
            "rounds (the 1-client HTTP row with its peer; the three paired rows at 16 clients, each on its own "
            "server), because the load from other jobs on these shared cores changes from minute to minute "
            "(*load avg*: the 1-minute load average as each round began). The rebuild run lasts from the "
            "build's start until 3 s after its commit.\n\n"
            + "\n".join(f"- {line}" for line in notes) + "\n\n"
            f"**Workers.** The service runs {args.workers} uvicorn worker by default (`--workers 1`). Each worker "
            "holds its own bi-encoder, reranker, vectors and BM25 index, and torch already spreads one query's "
            f"encoding over both cores. Within a worker, searches run one at a time (`--search-threads 1`); "
            "the requests waiting for their turn hold no thread, so /health and /stats answer at once, and "
            f"latency grows with the queue (p50 ≈ clients × search time). {workers_note}"
        )
        record("bench_api", "HTTP API under load (bench_api)", body, command=command)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
