"""The HTTP API on Ray Serve against one uvicorn process, on the same index, in the same run:
replicas, and shards behind a router.

    python bench/bench_distributed_search.py [--index indexes/scifact] [--scale-index DIR]
                                             [--clients 1 4 16] [--duration 12] [--rounds 3] [--no-record]

Three phases per index, each with its own Ray Serve server beside one plain `python -m search.api`
process (one uvicorn worker, the peer), all on 127.0.0.1: `--ray local --replicas 1` (what the Ray
Serve proxy's hop costs), `--replicas 2` (read throughput from a second copy of the searcher), and
`--shards 2` (the router and two shard deployments, each holding half the vectors and BM25 rows).
In each phase the two servers take turns, `--rounds` times per client count, so both see the
same load from other jobs on these shared cores. Clients are bench_api's closed loop (each posts
its next SciFact test query, k=10, when the last is answered). Reported: requests/s, client
p50/p95, the server's own search time p50, errors (must be 0), and the RSS of each replica process.

Then, in this process, what one shard costs (`ShardReader`, shard 0 of 2): its dense and BM25
search time per query and the passages it holds, from which a paper estimate for 100M passages
on 8 machines is worked out with its assumptions stated.

The indexes are used as they are, sharded in copies: SciFact from indexes/scifact (`python -m
search.eval --beir DATA/scifact --index indexes/scifact --build`) is copied into a temporary
folder and split there (`python -m indexer shard`); `--scale-index` (the 1M-passage index of
bench.scale_data, built with `python -m indexer build --source .cache/scale/corpus-1000000.jsonl
--embeddings .cache/scale/embeddings-1000000.npy --index DIR --shards 2`) must hold 2 shards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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


def replica_rss_mb() -> dict[str, list[float]]:
    """RSS of each Ray Serve replica process of this machine, in MB, by deployment (the process's
    command line names it: the app's, or a shard's)."""
    rss: dict[str, list[float]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if "ServeReplica:semsearch:" not in command:
                continue
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        # "ServeReplica:semsearch:shard-0", or with the task it runs: "...:semsearch.handle_request"
        deployment = command.split("ServeReplica:semsearch:", 1)[1].split()[0].split(".")[0]
        rss.setdefault(deployment, []).append(kb / 1024)
    return {name: sorted(sizes) for name, sizes in sorted(rss.items())}


# (label, flags) of the Ray Serve server of each phase. Sharded: the router and each shard reserve
# half a CPU, so the three fit on these 2 cores.
PHASES = (
    ("Ray Serve, 1 replica of 1 CPU", ("--replicas", "1", "--replica-cpus", "1")),
    ("Ray Serve, 2 replicas of 1 CPU", ("--replicas", "2", "--replica-cpus", "1")),
    ("Ray Serve, router + 2 shards of 0.5 CPU", ("--shards", "2", "--replicas", "1", "--replica-cpus", "0.5",
                                                   "--shard-cpus", "0.5")),
)


def phase(index_dir: Path, queries: list[str], ray_label: str, flags: Sequence[str], args: argparse.Namespace,
          work: Path) -> tuple[list[Level], dict[str, list[float]]]:
    """The plain process and a Ray Serve server with `flags` taking turns at each client count."""
    plain_label = f"one process (uvicorn, 1 worker), beside: {ray_label}"
    levels: list[Level] = []
    with server(index_dir, work, (), "plain") as plain, \
            server(index_dir, work, ("--ray", "local", *flags), "ray") as on_ray:
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


def sharded_copy(index_dir: Path, work: Path, shards: int = 2) -> Path:
    """`index_dir` copied into `work` and split into `shards` there (the original is not touched)."""
    copy = work / f"{index_dir.name}-shards{shards}"
    shutil.copytree(index_dir, copy, ignore=shutil.ignore_patterns(".lock", "shards-*"))
    subprocess.run([sys.executable, "-m", "indexer", "shard", "--index", str(copy), "--shards", str(shards)],
                   cwd=PROJECT_ROOT, check=True)
    return copy


def shard_cost(index_dir: Path, queries: list[str], repeats: int = 3) -> dict[str, float]:
    """One shard's own work, in this process: shard 0's dense and BM25 search (k=100, as the router
    asks for a hybrid search's first round) per query, median ms, and the passages it holds."""
    from indexer.embedding import encode_texts
    from indexer.index import Index
    from indexer.store.shards import ShardReader

    with Index.open(index_dir, use_gpu=False) as index:
        info = index.info
        model = index.load_model()
    embeddings = encode_texts(model, queries[:100])
    reader = ShardReader(index_dir, 0)
    passages = reader.passages(info)
    dense, lexical = [], []
    for _ in range(repeats):
        for row, query in enumerate(queries[:100]):
            started = time.perf_counter()
            reader.dense(info, embeddings[row:row + 1], 100, None)
            dense.append(time.perf_counter() - started)
            started = time.perf_counter()
            reader.bm25(info, query, 100, None)
            lexical.append(time.perf_counter() - started)
    return {"passages": passages, "dense_ms": statistics.median(dense) * 1000,
            "bm25_ms": statistics.median(lexical) * 1000, "index_passages": info.passages}


def run_index(index_dir: Path, name: str, queries: list[str], args: argparse.Namespace, work: Path
              ) -> tuple[list[list[object]], list[str], dict[str, float]]:
    """Every phase over one index (the sharded phase over a sharded copy or the index itself)."""
    from indexer.index import Index
    from indexer.store.integrity import layout_of

    with Index.open(index_dir, use_gpu=False) as index:
        sharded = index_dir if layout_of(index.info).shard_count == 2 else sharded_copy(index_dir, work)
    rows: list[list[object]] = []
    memory: list[str] = []
    for label, flags in PHASES:
        target = sharded if "--shards" in flags else index_dir
        levels, rss = phase(target, queries, label, flags, args, work)
        rows += [[name, *level.row()] for level in levels]
        memory.append(f"{name}, {label}: " + "; ".join(
            f"{deployment} {', '.join(f'{mb:,.0f}' for mb in sizes)} MB" for deployment, sizes in rss.items()))
    return rows, memory, shard_cost(sharded, queries)


def estimate(costs: dict[str, dict[str, float]], memory_per_shard_mb: dict[str, float]) -> str:
    """A paper estimate for 100M passages on 8 machines, from the measured per-shard costs."""
    name = max(costs, key=lambda n: costs[n]["passages"])
    small_name = min(costs, key=lambda n: costs[n]["passages"])
    cost, small = costs[name], costs[small_name]
    per_shard = 100_000_000 / 8
    grow = per_shard / cost["passages"]
    mb_per_passage = (memory_per_shard_mb[name] - memory_per_shard_mb[small_name]) / max(
        1.0, cost["passages"] - small["passages"])
    return (
        f"Paper estimate, 100M passages on 8 machines (one shard of {per_shard / 1e6:.1f}M passages each, a router "
        f"replica beside it, rows in PostgreSQL). Measured here: a shard of {cost['passages']:,.0f} passages "
        f"({name}) answers dense k=100 in {cost['dense_ms']:.1f} ms and BM25 k=100 in {cost['bm25_ms']:.1f} ms "
        f"(median, one core); its replica's RSS grows by {mb_per_passage * 1024:.2f} KB a passage "
        f"over the {small_name} shard's. Assumptions: the IVF's lists grow as n / nlist with nlist about 4 sqrt(n) "
        f"(`ann.default_nlist`), so dense time grows as sqrt(n): x{grow ** 0.5:.1f}, about "
        f"{cost['dense_ms'] * grow ** 0.5:.0f} ms; BM25 scores every passage holding a query term, so its time "
        f"grows as n: x{grow:.0f}, about {cost['bm25_ms'] * grow:,.0f} ms, which makes BM25 the cost to split "
        f"further (4 shards a machine of 3.1M: about {cost['bm25_ms'] * grow / 4:,.0f} ms each, in parallel on "
        f"4 cores); memory grows as n: about {mb_per_passage * per_shard / 1024:,.1f} GB a shard. The router's "
        f"merge is 8 lists of k and its hop a few ms (measured above); the passages' SQL read is the same as one "
        f"index's. Not measured: network between machines, PostgreSQL at 100M rows."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--scale-index", type=Path, default=None, help="the 1M index, built with --shards 2")
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--duration", type=float, default=12.0, help="seconds per client count and server")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-requests", type=int, default=2000)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    command = " ".join(["python bench/bench_distributed_search.py", *(argv if argv is not None else sys.argv[1:])])
    indexes = [(args.index, "SciFact")] + ([(args.scale_index, "1M")] if args.scale_index else [])
    for index_dir, _ in indexes:
        if not (index_dir / "index.json").is_file():
            print(f"error: no index in {index_dir}; see this script's docstring", file=sys.stderr)
            return 2
    beir = args.data / "scifact"
    all_queries = load_beir_queries(beir)
    queries = [all_queries[qid] for qid in sorted(load_beir_qrels(beir, "test")) if qid in all_queries]
    rows: list[list[object]] = []
    memory: list[str] = []
    costs: dict[str, dict[str, float]] = {}
    shard_rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench_distributed_search_") as tmp:
        for index_dir, name in indexes:
            index_rows, index_memory, costs[name] = run_index(index_dir, name, queries, args, Path(tmp))
            rows += index_rows
            memory += index_memory
            shard_rss[name] = _shard_rss(index_memory[-1])
    header = ["index", "server", "clients", "requests", "errors", "req/s", "p50 ms", "p95 ms", "p99 ms",
              "search p50 ms", "load avg"]
    table = markdown_table(header, rows)
    cost_table = markdown_table(
        ["index", "passages", "shard 0 of 2 holds", "dense k=100 ms", "BM25 k=100 ms", "shard replica RSS MB"],
        [[name, f"{c['index_passages']:,.0f}", f"{c['passages']:,.0f}", f"{c['dense_ms']:.2f}", f"{c['bm25_ms']:.2f}",
          f"{shard_rss[name]:,.0f}"] for name, c in costs.items()])
    paper = estimate(costs, shard_rss) if len(costs) > 1 else "Paper estimate: needs --scale-index."
    print(table, cost_table, "\n".join(memory), paper, sep="\n\n")
    if not args.no_record:
        hop = [r for r in rows if r[2] == 1]
        body = (
            f"{table}\n\n"
            f"{', '.join(n for _, n in indexes)}: {len(queries)} SciFact test queries in turn, k=10, default mode "
            "(hybrid), reranking off. Each pair of rows ran side by side: the plain process and the Ray Serve "
            f"server took turns, {args.rounds} rounds of {args.duration / args.rounds:.0f} s per client count, so "
            "both saw the same load. The 1-client rows give the hops: the Ray Serve proxy's (1 replica against "
            "one process), and the router's to its shards (2 shards against 1 replica). On these 2 cores this "
            "shows correctness and overhead, not speed-up: every search already uses both cores. RSS of each "
            f"replica process, by deployment: {'; '.join(memory)}. "
            f"Rows at 1 client: {', '.join(f'{r[0]} {r[1]} p50 {r[6]} ms' for r in hop)}.\n\n"
            f"What one shard costs, measured in this process (`ShardReader`, shard 0 of 2, 100 queries x 3):\n\n"
            f"{cost_table}\n\n{paper}"
        )
        record("bench_distributed_search", "The HTTP API on Ray Serve: replicas and shards against one process",
               body, command=command)
    errors = sum(int(row[4]) for row in rows)
    return 1 if errors else 0


def _shard_rss(line: str) -> float:
    """The largest shard replica's RSS in a phase's memory line ("shard-0 812 MB; ...")."""
    sizes = [float(part.split()[1].replace(",", "")) for part in line.split(": ", 1)[1].split("; ")
             if part.startswith("shard-")]
    return max(sizes) if sizes else float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
