"""Past one machine, measured on this one: torchrun pretraining on 1 vs 2 CPU processes, and indexing with
`--ray local` vs a single process (passages/s and peak memory).

Every run is its own subprocess, launched exactly as a user would (`python -m torch.distributed.run
--standalone --nproc_per_node N -m training pretrain ...`, `python -m indexer build ... [--ray local]`);
peak memory is the largest sum, over the run's whole process tree (Ray's GCS, raylet and workers
included), of each process's proportional set size (shared pages split between the processes
that map them), sampled every 0.2 s.
Usage: python bench/bench_distributed.py [--steps 60] [--documents 300] [--no-record]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import torch

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT as ROOT
from training.config import TokenizerConfig, default_data_dir
from training.tokenizer import train_tokenizer

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE",
       "TOKENIZERS_PARALLELISM": "false", "RAY_AUTH_MODE": "disabled"}


def run_measured(command: list[str], threads: int) -> tuple[subprocess.CompletedProcess, float, float]:
    """(finished process, wall seconds, peak PSS of its process tree in MiB)."""
    env = {**ENV, "OMP_NUM_THREADS": str(threads)}
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0.0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        parent = psutil.Process(process.pid)
        while not stop.is_set():
            total = 0
            try:
                tree = [parent, *parent.children(recursive=True)]
            except psutil.NoSuchProcess:
                break
            for member in tree:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):  # ended meanwhile
                    total += member.memory_full_info().pss
            peak = max(peak, total / 2**20)
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = process.communicate(timeout=3600)
    stop.set()
    sampler.join()
    seconds = time.perf_counter() - started
    done = subprocess.CompletedProcess(command, process.returncode, stdout, stderr)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{stderr[-4000:]}")
    return done, seconds, peak


def bench_pretraining(args: argparse.Namespace, work: Path) -> tuple[str, list[list[object]]]:
    tokenizer = work / "tokenizer"
    if not (tokenizer / "vocab.txt").is_file():
        train_tokenizer(TokenizerConfig(corpus=Path(args.corpus), out=tokenizer, vocab_size=8000,
                                        max_documents=args.max_documents))
    rows = []
    for processes, threads in ((1, 2), (2, 1)):
        out = work / f"pretrain-{processes}"
        shutil.rmtree(out, ignore_errors=True)
        flags = ["pretrain", "--corpus", args.corpus, "--tokenizer", str(tokenizer), "--out", str(out),
                 "--preset", "tiny", "--max-steps", str(args.steps), "--batch-size", str(args.batch_size // processes),
                 "--max-length", "128", "--max-documents", str(args.max_documents), "--eval-documents", "50",
                 "--eval-every", str(args.steps), "--save-every", str(args.steps), "--log-every", str(args.steps),
                 "--warmup-steps", str(args.steps // 10), "--learning-rate", "5e-4", "--precision", "fp32",
                 "--device", "cpu"]
        launcher = ([sys.executable, "-m", "training"] if processes == 1 else
                    [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
                     "-m", "training"])
        done, seconds, peak = run_measured(launcher + flags, threads)
        throughput = float(re.findall(r"\(([\d.]+) tokens/s over", done.stderr)[-1])
        state = torch.load(sorted((out / "checkpoints").glob("step-*.pt"))[-1], weights_only=True)
        losses = [state["losses"][step] for step in sorted(state["losses"])]
        last = sum(losses[-10:]) / 10
        rows.append([f"{processes} process{'es' if processes > 1 else ''} x {threads} thread{'s' if threads > 1 else ''}",
                     f"{args.batch_size // processes} x {processes}", f"{throughput:,.0f}", f"{seconds:.0f}",
                     f"{peak:,.0f}", f"{last:.3f}", f"{state['evals'][-1]['mlm_loss']:.3f}"])
    header = ["pretraining", "batch per process x processes", "tokens/s (training steps)", "wall s (incl. start-up)",
              "peak memory MiB", "train loss, last 10 steps", "held-out MLM loss"]
    return markdown_table(header, rows), rows


def bench_indexing(args: argparse.Namespace, work: Path) -> tuple[str, list[list[object]]]:
    source = work / "news.jsonl"
    with gzip.open(default_data_dir() / "corpus" / "enwikinews.jsonl.gz", "rt") as lines, source.open("w") as handle:
        for line in itertools.islice(lines, args.documents):
            handle.write(line if line.endswith("\n") else line + "\n")
    rows = []
    for name, extra in (("single process (2 threads)", []), ("--ray local (2 actors x 1 thread)", ["--ray", "local"])):
        index = work / f"index-{'ray' if extra else 'local'}"
        shutil.rmtree(index, ignore_errors=True)
        command = [sys.executable, "-m", "indexer", "build", "--source", str(source), "--index", str(index),
                   "--passage-tokens", "128", "--quiet", *extra]
        done, seconds, peak = run_measured(command, 2)
        summary = done.stdout.strip().splitlines()[-1]
        passages = int(re.search(r"embedded ([\d,]+) passages", summary).group(1).replace(",", ""))
        rate = float(re.search(r"\(([\d.]+) passages/s\)", summary).group(1))
        rows.append([name, passages, f"{rate:.1f}", f"{seconds:.0f}", f"{peak:,.0f}"])
    header = ["indexing (all-MiniLM-L6-v2)", "passages", "passages/s (whole build)", "wall s (incl. start-up)",
              "peak memory MiB"]
    return markdown_table(header, rows), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(default_data_dir() / "corpus" / "enwiki_slice.txt.gz"))
    parser.add_argument("--max-documents", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32, help="global batch: per process x processes")
    parser.add_argument("--documents", type=int, default=300, help="news articles to index")
    parser.add_argument("--work", default=str(ROOT / "runs" / "bench_distributed"))
    parser.add_argument("--no-record", action="store_true", help="print the tables only, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pretrain_table, pretrain_rows = bench_pretraining(args, work)
    print(pretrain_table)
    index_table, index_rows = bench_indexing(args, work)
    print(index_table)
    (work / "results.json").write_text(json.dumps({"pretrain": pretrain_rows, "index": index_rows}))
    speedup = float(pretrain_rows[1][2].replace(",", "")) / float(pretrain_rows[0][2].replace(",", ""))
    body = (
        pretrain_table
        + f"\n\nTiny preset (2 layers, hidden 128), WordPiece 8000 on the first {args.max_documents} documents of "
        f"`{Path(args.corpus).name}`, {args.steps} steps at a global batch of {args.batch_size} x 128 tokens, fp32; "
        "2 processes: torchrun, gloo, DDP, each rank on its own shard of the documents. 2-process / 1-process "
        f"throughput: {speedup:.2f}x. Both runs use both cores (threads x processes = 2), so the gain can only come "
        "from less threading overhead, and is paid for by the all-reduce of every gradient over gloo; the point on "
        "this machine is that the run is correct (tests/training/test_distributed.py), not faster.\n\n"
        + index_table
        + f"\n\nThe first {args.documents} articles of `enwikinews.jsonl.gz`, passages of up to 128 tokens, the "
        "default model, on CPU. passages/s is the build's own figure: embedded passages over the whole build, "
        "reading, chunking, Ray start-up and commits included. Peak memory sums the proportional set size of "
        "every process of the run; with Ray it counts the driver, Ray's GCS and raylet, and one model per actor. "
        "On one 2-core machine Ray adds start-up and a model copy per actor and cannot add cores; it pays off "
        "only across machines or GPUs."
    )
    if not args.no_record:
        record("bench_distributed", "Past one machine: torchrun pretraining and Ray indexing on 2 CPU cores", body)


if __name__ == "__main__":
    main()
