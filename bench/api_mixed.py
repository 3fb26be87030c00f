"""`bench_api.py --mixed`: searches while a writer upserts, then a kill -9 of the service mid-write.

A copy of the demo index is the collection `demo` under a fresh root, served by
`python -m search.api --root ROOT --api-keys FILE` (one worker; readers send a read key, the
writer a write key). Three runs:

1. **read-only** (the peer) and **mixed** take turns in rounds, so both see the same load from
   other jobs: 16 closed-loop readers POST /collections/demo/search (k=10, the default mode and
   reranking); in the mixed slices one writer also POSTs batches of 16 new documents to
   /collections/demo/documents, back to back (each sent when the last is answered).
2. **kill -9**: readers and the writer again; halfway through, once a batch has been sent and not
   yet answered, the service gets SIGKILL. It is started again on the same root.
3. **Read back**: every id of every acknowledged batch (a 200) is fetched with
   GET /collections/demo/documents/{id}; a missing one is a lost acknowledged write. The batch the
   kill cut is all there or not there at all (one commit), and a search for a word that only the
   last acknowledged batch holds finds it.

Reported: reads/s and read latency (client side, queueing included) for each run, the write rate
reached (batches/s, documents/s, write p50/p95), and the lost acknowledged writes, which must be 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2 as httpx
import numpy as np

from data.paths import PROJECT_ROOT

HOST = "127.0.0.1"
COLLECTION = "demo"
BATCH = 16  # documents per write, as the issue asks
READERS = 16


@dataclass
class Writes:
    """What the writer sent and what the service acknowledged."""

    acknowledged: list[str] = field(default_factory=list)
    latencies_s: list[float] = field(default_factory=list)
    unanswered: list[list[str]] = field(default_factory=list)  # batches whose answer never came
    errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    in_flight: asyncio.Event = field(default_factory=asyncio.Event)

    def rates(self) -> tuple[float, float]:
        batches = len(self.latencies_s)
        return (batches / self.elapsed_s, batches * BATCH / self.elapsed_s) if self.elapsed_s else (0.0, 0.0)


def document(run: str, n: int) -> dict:
    """Document n of a run: a word only it holds (`quokka<run>x<n>`), so a search can find it."""
    return {"id": f"mixed-{run}-{n}", "title": f"Field note {run}-{n}",
            "text": f"quokka{run}x{n} was seen near the river bank at dawn; note {n} of run {run} records "
                    "the weather, the tide and the birds that sang while the survey went on.",
            "metadata": {"run": run, "n": n}}


async def writer(client: httpx.AsyncClient, run: str, writes: Writes, running) -> None:
    """Batches of BATCH new documents, each sent when the last was answered, while `running()`."""
    started, n = time.perf_counter(), 0
    try:
        while running():
            docs = [document(run, n + i) for i in range(BATCH)]
            n += BATCH
            ids = [d["id"] for d in docs]
            t0 = time.perf_counter()
            writes.in_flight.set()
            try:
                response = await client.post(f"/collections/{COLLECTION}/documents", json={"documents": docs})
            except httpx.HTTPError as err:
                writes.unanswered.append(ids)
                writes.first_error = writes.first_error or repr(err)
                return  # the service is gone: this batch is unacknowledged
            finally:
                writes.in_flight.clear()
            if response.status_code == 200:
                writes.acknowledged += ids
                writes.latencies_s.append(time.perf_counter() - t0)
            else:
                writes.errors += 1
                writes.first_error = writes.first_error or f"{response.status_code} {response.text[:200]}"
    finally:
        writes.elapsed_s += time.perf_counter() - started


def key_file(folder: Path) -> tuple[Path, str, str]:
    """A keys file with one read and one write key: (the file, the read key, the write key)."""
    read, write = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    path = folder / "api-keys"
    path.write_text(f"read {read}\nwrite {write}\n")
    path.chmod(0o600)
    return path, read, write


@contextlib.contextmanager
def serve_root(root: Path, keys: Path, log: Path, read_key: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`python -m search.api --root ROOT` on a free port, ready and warmed up: (base URL, process)."""
    from bench.bench_api import DEMO_QUERIES, free_port, stop, wait_ready

    port = free_port()
    with log.open("a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "search.api", "--root", str(root), "--api-keys", str(keys), "--host", HOST,
             "--port", str(port), "--log-level", "warning"],
            cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://{HOST}:{port}"
    headers = {"Authorization": f"Bearer {read_key}"}

    def answers() -> bool:
        return httpx.post(f"{base}/collections/{COLLECTION}/search", json={"q": "warm up", "k": 10},
                          headers=headers, timeout=120).status_code == 200

    try:
        wait_ready(process, log, answers)
        for query in DEMO_QUERIES[:5]:
            httpx.post(f"{base}/collections/{COLLECTION}/search", json={"q": query, "k": 10}, headers=headers,
                       timeout=120)
        yield base, process
    finally:
        stop(process)


def client(base: str, key: str, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base, timeout=300, limits=limits, headers={"Authorization": f"Bearer {key}"})


async def mixed_slice(base: str, keys: tuple[str, str], reads, writes: Writes | None, run: str,
                      duration_s: float) -> None:
    """READERS readers for `duration_s`, and the writer beside them when `writes` is given."""
    from bench.bench_api import DEMO_QUERIES, load

    deadline = time.perf_counter() + duration_s
    async with client(base, keys[1], 1) as writing:
        jobs = [load(base, DEMO_QUERIES, reads, duration_s, 10**9, path=f"/collections/{COLLECTION}/search",
                     headers={"Authorization": f"Bearer {keys[0]}"})]
        if writes is not None:
            jobs.append(writer(writing, run, writes, lambda: time.perf_counter() < deadline))
        await asyncio.gather(*jobs)


async def killed_slice(base: str, process: subprocess.Popen, keys: tuple[str, str], reads, writes: Writes,
                       run: str, duration_s: float) -> float:
    """Readers and the writer; after half of `duration_s`, SIGKILL the service while a batch is in
    flight. Returns how long into the batch the kill came (seconds)."""
    from bench.bench_api import DEMO_QUERIES, load

    stop = asyncio.Event()
    into = [0.0]

    async def killer() -> None:
        await asyncio.sleep(duration_s / 2)
        await writes.in_flight.wait()
        sent = time.perf_counter()
        await asyncio.sleep(0.3)  # into the batch's embedding or commit
        os.kill(process.pid, signal.SIGKILL)
        into[0] = time.perf_counter() - sent
        stop.set()

    async with client(base, keys[1], 1) as writing:
        await asyncio.gather(
            load(base, DEMO_QUERIES, reads, duration_s * 2, 10**9, until=stop,
                 path=f"/collections/{COLLECTION}/search", headers={"Authorization": f"Bearer {keys[0]}"}),
            writer(writing, run, writes, lambda: not stop.is_set()),
            killer(),
        )
    process.wait()
    return into[0]


def read_back(base: str, read_key: str, ids: list[str]) -> list[str]:
    """The ids GET /collections/demo/documents/{id} does not return (404)."""
    missing = []
    with httpx.Client(base_url=base, timeout=120, headers={"Authorization": f"Bearer {read_key}"}) as http:
        for doc_id in ids:
            answer = http.get(f"/collections/{COLLECTION}/documents/{doc_id}")
            if answer.status_code == 404:
                missing.append(doc_id)
            elif answer.status_code != 200 or answer.json()["id"] != doc_id:
                raise RuntimeError(f"GET {doc_id}: {answer.status_code} {answer.text[:300]}")
    return missing


def found_by_search(base: str, read_key: str, doc_id: str) -> bool:
    """Whether a BM25 search for the word only `doc_id` holds ranks it first."""
    run, n = doc_id.removeprefix("mixed-").rsplit("-", 1)
    answer = httpx.post(f"{base}/collections/{COLLECTION}/search", timeout=120,
                        json={"q": f"quokka{run}x{n}", "mode": "bm25", "k": 1},
                        headers={"Authorization": f"Bearer {read_key}"}).json()
    return bool(answer["hits"]) and answer["hits"][0]["doc_id"] == doc_id


@dataclass
class MixedResult:
    rows: list[list[object]]
    notes: list[str]
    lost: int
    torn: int


def run_mixed(demo_index: Path, work: Path, duration_s: float, rounds: int) -> MixedResult:
    """The three runs of the module docstring, on a copy of `demo_index`."""
    from bench.bench_api import Level

    root = work / "root"
    shutil.copytree(demo_index, root / COLLECTION, ignore=shutil.ignore_patterns(".lock", "uploads"))
    keys_path, read_key, write_key = key_file(work)
    log = work / "mixed-server.log"
    keys = (read_key, write_key)
    alone = Level("16 readers alone (the peer)", READERS)
    mixed = Level("16 readers + 1 writer", READERS)
    killed_reads = Level("16 readers + 1 writer, kill -9 halfway (until the kill)", READERS)
    writes, killed_writes = Writes(), Writes()
    slice_s = duration_s / rounds
    with serve_root(root, keys_path, log, read_key) as (base, _):
        for r in range(rounds):
            asyncio.run(mixed_slice(base, keys, alone, None, f"r{r}", slice_s))
            asyncio.run(mixed_slice(base, keys, mixed, writes, f"m{r}", slice_s))
            print(alone.row(), mixed.row(), writes.rates(), flush=True)
    with serve_root(root, keys_path, log, read_key) as (base, process):
        into = asyncio.run(killed_slice(base, process, keys, killed_reads, killed_writes, "k", duration_s / 2))
    with serve_root(root, keys_path, log, read_key) as (base, _):
        restarted = time.perf_counter()
        acknowledged = writes.acknowledged + killed_writes.acknowledged
        lost = read_back(base, read_key, acknowledged)
        cut = [doc_id for batch in killed_writes.unanswered for doc_id in batch]
        cut_missing = read_back(base, read_key, cut)
        torn = 0 if len(cut_missing) in (0, len(cut)) else 1
        last_found = found_by_search(base, read_key, killed_writes.acknowledged[-1]) if killed_writes.acknowledged else False
        checked_s = time.perf_counter() - restarted
    rows = [alone.row(), mixed.row(), killed_reads.row()]
    batches_s, docs_s = writes.rates()
    lat = np.array(writes.latencies_s or [np.nan]) * 1000
    kb, kd = killed_writes.rates()
    notes = [
        f"writer (mixed run): {len(writes.latencies_s)} batches of {BATCH} acknowledged, {batches_s:.2f} batches/s = "
        f"{docs_s:.1f} documents/s, write p50 {np.percentile(lat, 50):.0f} ms, p95 {np.percentile(lat, 95):.0f} ms, "
        f"{writes.errors} refused{' (' + writes.first_error + ')' if writes.first_error else ''}",
        f"kill -9 run: {len(killed_writes.latencies_s)} batches acknowledged before the kill ({kb:.2f} batches/s, "
        f"{kd:.1f} documents/s); the kill came {into:.1f} s into a batch that was never answered "
        f"({len(cut)} documents: {'none' if len(cut_missing) == len(cut) else 'all' if not cut_missing else 'SOME'} "
        f"of them stored after the restart); reads cut by the kill: {killed_reads.errors}",
        f"after the restart: {len(acknowledged)} acknowledged documents read back by id, {len(lost)} lost; "
        f"torn batches {torn}; the last acknowledged batch {'is' if last_found else 'is NOT'} found by a search "
        f"for its own word; checks took {checked_s:.0f} s",
    ]
    return MixedResult(rows, notes, len(lost), torn)


def report(result: MixedResult, duration_s: float, rounds: int, command: str, record_it: bool) -> int:
    """Print the table and notes, record them in BENCHMARKS.md; 1 when a write was lost or torn."""
    from bench.record import markdown_table, record

    header = ["run", "readers", "reads", "errors", "reads/s", "p50 ms", "p95 ms", "p99 ms", "search p50 ms",
              "load avg"]
    table = markdown_table(header, result.rows)
    alone_p95, mixed_p95 = float(result.rows[0][6]), float(result.rows[1][6])
    ratio = f"read p95 with the writer is {mixed_p95 / alone_p95:.1f}× the read-only run's (target: within 3×)"
    print(table, *result.notes, ratio, sep="\n")
    if record_it:
        body = (
            f"{table}\n\n"
            f"The read-only and mixed rows take turns in {rounds} rounds of {duration_s / rounds:.0f} s on one "
            "service (`--root`, one worker, API keys on), so both see the same load from other jobs. Readers "
            f"are {READERS} closed-loop clients posting /collections/demo/search (k=10, default mode and "
            f"reranking); the writer posts batches of {BATCH} new documents to /collections/demo/documents back "
            "to back, each answered 200 once committed. The kill -9 run lasts until the kill, halfway through "
            f"{duration_s / 2:.0f} s; its errors are the reads in flight when the service died. Every "
            "acknowledged id is then read back from a restarted service.\n\n"
            + "\n".join(f"- {line}" for line in [*result.notes, ratio]) + "\n\n"
            f"**Lost acknowledged writes: {result.lost}.** Torn batches: {result.torn}."
        )
        record("bench_api_mixed", "HTTP API: searches during writes, and a kill -9 (bench_api --mixed)", body,
               command=command)
    return 1 if result.lost or result.torn else 0
