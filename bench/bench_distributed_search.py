"""The HTTP API on Ray Serve against one uvicorn process, on the same index, in the same run.

    python bench/bench_distributed_search.py [--index indexes/scifact] [--clients 1 4 16]
                                             [--duration 12] [--rounds 3] [--no-record]

Two phases, each with its own Ray Serve server beside one plain `python -m search.api` process
(one uvicorn worker, the peer), all on 127.0.0.1: first `--ray local --replicas 1` (what the
Ray Serve proxy's extra hop costs), then `--replicas 2` (read throughput from a second copy of
the searcher). In each phase the two servers take turns, `--rounds` times per client count, so
both see the same load from other jobs on these shared cores. Clients are bench_api's closed
loop (each posts its next SciFact test query, k=10, when the last is answered). Reported:
requests/s, client p50/p95, the server's own search time p50, errors (must be 0), and the RSS of
each replica process. Shards (one index split across deployments) are not built yet: no row.

The SciFact index is reused from indexes/scifact (`python -m search.eval --beir DATA/scifact
--index indexes/scifact --build`); it is not modified.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx2 as httpx

from bench.bench_api import HOST, Level, free_port, load, stop, wait_ready
from bench.record import markdown_table, record
from data.beir import load_beir_qrels, load_beir_queries
from data.paths import PROJECT_ROOT, shared_data_dir

RAY_START_S = 600  # a Ray cluster, Serve and its replicas loading the model on 2 busy cores


@contextlib.contextmanager
def server(index_dir: Path, log_dir: Path, extra: Sequence[str], name: str) -> Iterator[str]:
    """`python -m search.api` over `index_dir` with `extra` flags, on a free port; its base URL once
    the index is ready (and a few warm-up searches done)."""
    port = free_port()
    log_path = log_dir / f"{name}-{port}.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "search.api", "--index", str(index_dir), "--host", HOST, "--port", str(port),
             "--log-level", "warning", "--no-rerank", *extra],
            cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
        base = f"http://{HOST}:{port}"
        try:
            wait_ready(process, log_path, lambda: _ready(base), timeout_s=RAY_START_S)
            for _ in range(8):  # each replica warms up (Ray Serve spreads these over them)
                httpx.post(f"{base}/search", json={"q": "protein folding", "k": 10}, timeout=120)
            yield base
        finally:
            stop(process)


def _ready(base: str) -> bool:
    """Whether the server at `base` answers /health with its index ready (a proxy still starting
    may answer something else first)."""
    response = httpx.get(f"{base}/health", timeout=5)
    try:
        return response.status_code == 200 and response.json().get("index") == "ready"
    except ValueError:
        return False


def replica_rss_mb() -> list[float]:
    """RSS of each Ray Serve replica process of this machine (its command line names the
    deployment), in MB."""
    rss = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "ServeReplica:semsearch" not in command:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        rss.append(kb / 1024)
    return sorted(rss)


def phase(index_dir: Path, queries: list[str], replicas: int, args: argparse.Namespace, work: Path
          ) -> tuple[list[Level], list[float]]:
    """The plain process and a Ray Serve server of `replicas` taking turns at each client count."""
    plain_label = f"one process (uvicorn, 1 worker), beside {replicas} replica(s)"
    ray_label = f"Ray Serve, {replicas} replica(s) of 1 CPU"
    levels: list[Level] = []
    with server(index_dir, work, (), "plain") as plain, \
            server(index_dir, work, ("--ray", "local", "--replicas", str(replicas), "--replica-cpus", "1"),
                   f"ray{replicas}") as on_ray:
        rss = replica_rss_mb()
        for clients in args.clients:
            pair = [Level(plain_label, clients), Level(ray_label, clients)]
            for _ in range(args.rounds):
                for base, level in zip((plain, on_ray), pair, strict=True):
                    asyncio.run(load(base, queries, level, args.duration / args.rounds, args.max_requests))
            for level in pair:
                print(level.row(), level.first_error, flush=True)
            levels += pair
    return levels, rss


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--duration", type=float, default=12.0, help="seconds per client count and server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-requests", type=int, default=2000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = " ".join(["python bench/bench_distributed_search.py", *(argv if argv is not None else sys.argv[1:])])
    if not (args.index / "index.json").is_file():
        print(f"error: no index in {args.index}; see this script's docstring", file=sys.stderr)
        return 2
    beir = args.data / "scifact"
    all_queries = load_beir_queries(beir)
    queries = [all_queries[qid] for qid in sorted(load_beir_qrels(beir, "test")) if qid in all_queries]
    rows: list[list[object]] = []
    memory: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench_distributed_search_") as tmp:
        for replicas in (1, 2):
            levels, rss = phase(args.index, queries, replicas, args, Path(tmp))
            rows += [level.row() for level in levels]
            memory.append(f"{replicas} replica(s): " + ", ".join(f"{mb:,.0f} MB" for mb in rss))
    header = ["server", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms", "search p50 ms",
              "load avg"]
    table = markdown_table(header, rows)
    print(table)
    print("\n".join(memory))
    if not args.no_record:
        hop = [r for r in rows if r[1] == 1]
        body = (
            f"{table}\n\n"
            f"SciFact ({args.index.name}), {len(queries)} test queries in turn, k=10, default mode (hybrid), "
            "reranking off. Each pair of rows ran side by side: the plain process and the Ray Serve server "
            f"took turns, {args.rounds} rounds of {args.duration / args.rounds:.0f} s per client count, so both saw "
            "the same load. The 1-client rows give the Ray Serve proxy's hop (client p50 against the same "
            "search time); more clients show what a second replica adds on this machine's 2 cores, where "
            "each search already uses both. RSS of each replica process (model, vectors, BM25, Ray's "
            f"worker): {'; '.join(memory)}. "
            f"Rows at 1 client: {', '.join(f'{r[0]} p50 {r[5]} ms' for r in hop)}. Shards: not built yet."
        )
        record("bench_distributed_search", "The HTTP API on Ray Serve against one process", body, command=command)
    errors = sum(int(row[3]) for row in rows)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
