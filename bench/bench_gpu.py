"""The GPU path, measured on one lent H100/H200 in one call (issue 34), with the CPU beside it.

Stages, each in its own process with its own time limit, each writing OUT/<stage>.json as it
ends (a stage that fails or runs out of time leaves the others' figures):
- env: the GPU, the library versions, and the card's measured bf16 matrix peak;
- tests: tests/indexer/store/test_gpu.py (the `gpu` tests) on the card;
- faiss: flat and IVF over 1M x 384 synthetic unit vectors, CPU and GPU in the same process:
  build time, single-query latency, 1,000-query batches, recall@10 against exact search, the
  GPU's answers against the CPU's, and GPU memory per vector (so the largest index that fits);
- encode: the indexer end to end on the GPU over all of SciFact plus the head of the Wikipedia
  slice, next to `SentenceTransformer.encode()` of the same passage texts, at two batch sizes;
  then a cProfile of one indexer run (where its time goes);
- allpairs: `top_pairs` over 10,000 sentences (encode and mining);
- pretrain: our loop (bf16, SDPA, MLM head on masked positions) against plain
  `BertForPreTraining` (fp32, eager attention), base size, the same data; tokens/s and MFU.

The bi-encoder is all-MiniLM-L6-v2's architecture and tokenizer with random weights (its 90 MB
of weights exceed what a call may carry, `bench/gpu/payload.sh`): throughput is the same, the
vectors are not meaningful, so no quality figure comes from them.

Usage (on the device machine, after bench/gpu/payload.sh; see that file for the environment):
    python -m bench.bench_gpu run --payload .gpu --out $OUT
    python -m bench.bench_gpu record --out DIR     # re-record BENCHMARKS.md from the JSON files
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

# Each stage's time limit in seconds, in the order they run (the most needed first); `run --deadline`
# caps the whole.
STAGES = {"env": 60, "tests": 150, "faiss": 200, "encode": 200, "allpairs": 60, "pretrain": 120}
H100_BF16_DENSE_TFLOPS = 989.0  # NVIDIA's datasheet figure for the H100 SXM (dense, no sparsity)
DIM = 384
# SEMSEARCH_BENCH_GPU_SMOKE=1: a small run on a machine without a GPU, to try the script before a lease.
SMOKE = os.environ.get("SEMSEARCH_BENCH_GPU_SMOKE") == "1"
N_VECTORS = 20_000 if SMOKE else 1_000_000
N_QUERIES = 100 if SMOKE else 1000
SINGLE_QUERIES = 20 if SMOKE else 200


# ---------------------------------------------------------------- helpers

def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _device() -> str:
    return "cuda" if _cuda() else "cpu"


def _sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _ms(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return 1000 * statistics.median(ordered), 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _write(out: Path, name: str, result: dict) -> None:
    (out / f"{name}.json").write_text(json.dumps(result, indent=1, default=float))


# ---------------------------------------------------------------- env

def stage_env(payload: Path, out: Path) -> dict:
    import faiss
    import sentence_transformers
    import torch
    import transformers

    from indexer.store.gpu import gpu_count

    name = torch.cuda.get_device_name(0) if _cuda() else "no GPU (smoke run)"
    size = 1024 if SMOKE else 8192
    a = torch.randn(size, size, device=_device(), dtype=torch.bfloat16)
    b = torch.randn(size, size, device=_device(), dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    _sync()
    times = []
    for _ in range(10):
        start = time.perf_counter()
        a @ b
        _sync()
        times.append(time.perf_counter() - start)
    peak = 2 * size**3 / statistics.median(times) / 1e12
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip() if shutil.which("nvidia-smi") else ""
    free, total = torch.cuda.mem_get_info(0) if _cuda() else (0, 0)
    return {"gpu": name, "nvidia_smi": smi, "torch": torch.__version__, "cuda": torch.version.cuda,
            "faiss": faiss.__version__, "faiss_gpus": gpu_count(), "cagra": hasattr(faiss, "GpuIndexCagra"),
            "transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
            "bf16_matmul_tflops": peak, "gpu_free_gb": free / 1e9, "gpu_total_gb": total / 1e9,
            "cpu_cores": os.cpu_count()}


# ---------------------------------------------------------------- tests

# CPU tests of code that runs differently on a GPU, run there too: a build that embeds ahead of
# its commits, the pipelined encoder (the real model's weights do not travel: "real_model" skipped).
CUDA_CHECKED_TESTS = ("tests/indexer/build/test_background_embed.py", "tests/indexer/test_pipelined_encoding.py",
                      # worker processes on a machine with cores to spare (where they are on by default)
                      "tests/indexer/sources/test_workers.py",
                      "tests/indexer/build/test_build.py::test_a_build_in_worker_processes_stores_what_a_build_without_them_stores",
                      "tests/indexer/build/test_build_progress.py::test_embed_returns_the_vectors_of_encode_texts_and_reports_up_to_the_end")


def stage_tests(payload: Path, out: Path) -> dict:
    log = out / "tests.log"
    with log.open("w") as fh:
        code = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                               "tests/indexer/store/test_gpu.py", *CUDA_CHECKED_TESTS, "-k", "not real_model"],
                              stdout=fh, stderr=subprocess.STDOUT).returncode
    lines = log.read_text().splitlines()  # the log stays: a stage that runs out of time leaves it alone
    return {"returncode": code, "summary": lines[-1] if lines else "", "log_tail": lines[-60:],
            "passed": [line.split(" ", 1)[1] for line in lines if line.startswith("PASSED")],
            "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))]}


# ---------------------------------------------------------------- faiss

def synthetic_vectors(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors around 4,096 random centres (cosine about 0.6 to their centre), made on the GPU."""
    import torch

    device = _device()
    generator = torch.Generator(device=device).manual_seed(seed)
    centres = torch.randn(4096, dim, device=device, generator=torch.Generator(device=device).manual_seed(1))
    centres /= centres.norm(dim=1, keepdim=True)
    rows = []
    for start in range(0, n, 250_000):
        count = min(250_000, n - start)
        pick = torch.randint(0, 4096, (count,), device=device, generator=generator)
        block = centres[pick] + 0.068 * torch.randn(count, dim, device=device, generator=generator)
        rows.append((block / block.norm(dim=1, keepdim=True)).cpu().numpy())
    return np.ascontiguousarray(np.concatenate(rows), dtype=np.float32)


def _latency(store, queries: np.ndarray, single: int = SINGLE_QUERIES) -> dict:
    for query in queries[:5]:
        store.search(query[None, :], 10)
    times = []
    for query in queries[:single]:
        start = time.perf_counter()
        store.search(query[None, :], 10)
        times.append(time.perf_counter() - start)
    p50, p95 = _ms(times)
    start = time.perf_counter()
    _, ids = store.search(queries, 10)
    batch = time.perf_counter() - start
    start = time.perf_counter()
    _, ids = store.search(queries, 10)
    batch = min(batch, time.perf_counter() - start)
    return {"p50_ms": p50, "p95_ms": p95, "single_qps": len(times) / sum(times), "batch_s": batch,
            "batch_qps": len(queries) / batch, "ids": ids}


def _gpu_used() -> int:
    import torch

    if not torch.cuda.is_available():
        return 0
    free, total = torch.cuda.mem_get_info(0)
    return int(total - free)


def stage_faiss(payload: Path, out: Path) -> dict:
    import faiss

    from indexer.store import ann
    from indexer.store.faiss_store import VectorStore
    from indexer.store.gpu import index_bytes

    vectors = synthetic_vectors(N_VECTORS, DIM, 0)
    queries = synthetic_vectors(N_QUERIES, DIM, 7)
    ids = np.arange(N_VECTORS, dtype=np.int64)
    rows: list[dict] = []
    result: dict = {"n": N_VECTORS, "dim": DIM, "queries": N_QUERIES, "cores": os.cpu_count(), "rows": rows}

    start = time.perf_counter()
    flat = VectorStore.create(DIM)
    flat.add(ids, vectors)
    cpu_build = time.perf_counter() - start
    cpu = _latency(flat, queries, single=max(10, SINGLE_QUERIES // 5))  # about 0.1 s each: one thread scans 1.5 GB
    exact = cpu.pop("ids")
    exact_scores, _ = flat.search(queries, 10)
    before = _gpu_used()
    start = time.perf_counter()
    gpu_flat = flat.on_gpu()
    gpu_build = time.perf_counter() - start
    result["flat_gpu_used_gb"] = (_gpu_used() - before) / 1e9
    result["flat_gpu_bytes_per_vector"] = index_bytes(flat.faiss_index) / N_VECTORS
    assert gpu_flat.on_gpu_now or SMOKE, "the flat index did not move to the GPU"
    gpu = _latency(gpu_flat, queries)
    gpu_ids = gpu.pop("ids")
    gpu_scores, _ = gpu_flat.search(queries, 10)
    result["flat_same_ids"] = float((gpu_ids == exact).mean())
    result["flat_max_score_diff"] = float(np.abs(gpu_scores - exact_scores).max())
    rows.append({"index": "flat", "device": "CPU", "build_s": cpu_build, "recall": 1.0, **cpu})
    rows.append({"index": "flat", "device": "GPU", "build_s": gpu_build,
                 "recall": ann.recall_at_k(exact, gpu_ids, 10), **gpu})
    del gpu_flat

    plan = ann.resolve(ann.VectorIndexConfig(kind="ivf"), N_VECTORS, DIM)
    result["ivf_factory"] = plan.factory
    sample = ann.training_sample_size(plan, N_VECTORS)
    start = time.perf_counter()
    cpu_ivf_index = ann.create(plan, DIM)
    ann.train(cpu_ivf_index, vectors, sample)
    cpu_ivf = VectorStore(cpu_ivf_index)
    cpu_ivf.add(ids, vectors)
    cpu_ivf_build = time.perf_counter() - start
    # The same IVF trained and filled on the GPU (k-means and list assignment there), then searched.
    gpu_ivf_build = None
    try:  # the indexer's own path on a GPU machine: ann.train runs the k-means on the GPU
        start = time.perf_counter()
        gpu_trained = ann.create(plan, DIM)
        ann.train(gpu_trained, vectors, sample)
        VectorStore(gpu_trained).add(ids, vectors)
        gpu_ivf_build = time.perf_counter() - start
        del gpu_trained
    except Exception as error:  # noqa: BLE001 -- recorded; the CPU-trained copy is still searched on the GPU
        result["gpu_ivf_build_error"] = repr(error)[:300]
    result["ivf_gpu_bytes_per_vector"] = index_bytes(cpu_ivf_index) / N_VECTORS
    for nprobe in (16, 64):
        cpu_ivf.configure("nprobe", nprobe)
        cpu = _latency(cpu_ivf, queries)
        cpu_ids = cpu.pop("ids")
        gpu_ivf = cpu_ivf.on_gpu()
        assert (gpu_ivf.on_gpu_now or SMOKE) and gpu_ivf.search_param == ("nprobe", nprobe)
        gpu = _latency(gpu_ivf, queries)
        gpu_ids = gpu.pop("ids")
        result[f"ivf{nprobe}_gpu_vs_cpu_recall"] = ann.recall_at_k(cpu_ids, gpu_ids, 10)
        rows.append({"index": f"IVF{plan.nlist} nprobe {nprobe}", "device": "CPU", "build_s": cpu_ivf_build,
                     "recall": ann.recall_at_k(exact, cpu_ids, 10), **cpu})
        rows.append({"index": f"IVF{plan.nlist} nprobe {nprobe}", "device": "GPU", "build_s": gpu_ivf_build or 0.0,
                     "recall": ann.recall_at_k(exact, gpu_ids, 10), **gpu})
        del gpu_ivf
    free = _gpu_free()
    result["gpu_free_gb"] = free / 1e9
    from indexer.store.gpu import GPU_HEADROOM_BYTES

    for kind in ("flat", "ivf"):
        per = result[f"{kind}_gpu_bytes_per_vector"]
        result[f"{kind}_max_vectors"] = max(0, int((free - GPU_HEADROOM_BYTES) / per)) if per > 0 else 0
    result["cagra"] = hasattr(faiss, "GpuIndexCagra")
    return result


def _gpu_free() -> int:
    import torch

    return int(torch.cuda.mem_get_info(0)[0]) if torch.cuda.is_available() else 0


# ---------------------------------------------------------------- encode

def random_minilm(payload: Path, folder: Path) -> Path:
    """all-MiniLM-L6-v2's configuration, tokenizer and pooling with random transformer weights."""
    from transformers import BertConfig, BertModel

    if (folder / "model.safetensors").is_file():
        return folder
    shutil.copytree(payload / "data" / "minilm", folder, dirs_exist_ok=True)
    config = BertConfig.from_pretrained(str(folder))
    BertModel(config).save_pretrained(str(folder))
    return folder


def corpus_jsonl(payload: Path, work: Path) -> tuple[Path, int]:
    """All of SciFact and the Wikipedia head as one JSONL source; (path, documents)."""
    from itertools import islice

    from data.raw_text import iter_documents

    path, count = work / "corpus.jsonl", 0
    limit = 100 if SMOKE else int(os.environ.get("SEMSEARCH_BENCH_GPU_DOCS", "0")) or None
    with path.open("w", encoding="utf-8") as fh:
        with gzip.open(payload / "data" / "scifact.jsonl.gz", "rt", encoding="utf-8") as src:
            for line in islice(src, limit):
                row = json.loads(line)
                fh.write(json.dumps({"id": "s" + str(row["_id"]), "title": row.get("title", ""),
                                     "text": row.get("text", "")}) + "\n")
                count += 1
        for doc in islice(iter_documents(payload / "data" / "wiki_head.txt.gz"), limit):
            fh.write(json.dumps({"id": "w" + doc.id, "title": doc.title, "text": doc.text}) + "\n")
            count += 1
    return path, count


def _stamped(result: dict) -> dict:
    """`result` with the host, the time and the load, as the stage runner adds them (for figures
    written before a stage ends, which stand if it then runs out of time)."""
    from bench.record import machine_description

    return {**result, "host": machine_description(), "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "loadavg": os.getloadavg()[0]}


def stage_encode(payload: Path, out: Path) -> dict:
    import indexer.build.pipeline as build_pipeline
    from bench.bench_indexing import embed_inputs
    from indexer import IndexConfig, build_index
    from indexer.embedding import encode_texts, load_bi_encoder
    from indexer.encoding import FP16, choose_encoding
    from indexer.pipelined_encoding import tokenizer_wait_seconds
    from indexer.sources import workers

    work = Path(tempfile.mkdtemp(prefix="bench_gpu_encode_"))
    model_dir = random_minilm(payload, work / "minilm")
    source, documents = corpus_jsonl(payload, work)
    encoding = choose_encoding()
    model = load_bi_encoder(str(model_dir), encoding=encoding)
    model.encode(["warm-up"] * 64, batch_size=64)
    result: dict = {"documents": documents, "encoding": encoding, "fp16": encoding == FP16, "runs": []}
    batch = 256
    texts: list[str] | None = None
    # The indexer as it runs on a GPU (embedding ahead of the commits), then with the loop's own
    # order (embed, then commit) for comparison; then encode() and encode_texts over its passages.
    # The indexer embedding ahead of its commits in a thread (`background_embed.py`) with cutting
    # and BM25 tokens in worker processes, then without the workers, then as it runs by default:
    # each chunk embedded before its commit, with the workers.
    auto = str(workers.worker_count())
    for ahead, worker_setting in ((True, auto), (True, "0"), (False, auto)):
        os.environ["SEMSEARCH_BUILD_WORKERS"] = worker_setting
        build_pipeline.EMBED_AHEAD_DEVICES = frozenset({"cuda"} if ahead else ())
        index_dir = work / f"index-{ahead}-{worker_setting}"
        _sync()
        start, waited = time.perf_counter(), tokenizer_wait_seconds()
        report = build_index(IndexConfig(source=source, index_dir=index_dir, model=str(model_dir),
                                         batch_size=batch, show_progress=False))
        _sync()
        indexer_s = time.perf_counter() - start
        result["runs"].append({"batch": batch, "ahead": ahead, "workers": int(worker_setting),
                               "passages": report.passages_embedded,
                               "commits": report.commits, "indexer_s": indexer_s,
                               "indexer_pps": report.passages_embedded / indexer_s,
                               # how long the model's loop waited for its tokenizer thread (a GPU starved)
                               "tokenizer_wait_s": tokenizer_wait_seconds() - waited,
                               # the build's own split: embed_seconds is its wait for vectors
                               "phases": {k: getattr(report, k) for k in ("read_seconds", "model_seconds",
                                                                          "embed_seconds", "bm25_seconds")}})
        if texts is None:
            texts = embed_inputs(index_dir, model)
        shutil.rmtree(index_dir, ignore_errors=True)
        _write(out, "encode", _stamped(result))
    build_pipeline.EMBED_AHEAD_DEVICES = frozenset()
    os.environ["SEMSEARCH_BUILD_WORKERS"] = auto
    assert texts is not None
    for name, run in (("encode", lambda: model.encode(texts, batch_size=batch, convert_to_numpy=True,
                                                       normalize_embeddings=True)),
                      ("pipelined", lambda: encode_texts(model, texts, batch_size=batch))):
        _sync()
        start, waited = time.perf_counter(), tokenizer_wait_seconds()
        run()
        _sync()
        result[f"{name}_pps"] = len(texts) / (time.perf_counter() - start)
        result[f"{name}_tokenizer_wait_s"] = tokenizer_wait_seconds() - waited
        _write(out, "encode", _stamped(result))
    # Where an indexer run's time goes: which Python holds the interpreter lock, in every thread
    # (py-spy --gil, when carried), else the build thread's cProfile.
    profiled = IndexConfig(source=source, index_dir=work / "index-profiled", model=str(model_dir), batch_size=batch,
                           show_progress=False)
    spy = next((str(p) for p in (Path(entry) / "bin" / "py-spy" for entry in sys.path) if p.is_file()),
               shutil.which("py-spy"))
    if spy:
        raw = work / "gil.txt"
        recorder = subprocess.Popen([spy, "record", "--gil", "--threads", "-r", "200", "--format", "raw", "-o", str(raw),
                                     "--pid", str(os.getpid())], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        build_index(profiled)
        _sync()
        recorder.send_signal(2)
        recorder.wait(timeout=60)
        (out / "encode_profile.txt").write_text(gil_summary(raw.read_text(), 200) if raw.is_file() else "no samples")
    else:
        profiler = cProfile.Profile()
        profiler.enable()
        build_index(profiled)
        _sync()
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
        pstats.Stats(profiler, stream=text).sort_stats("cumtime").print_stats(40)
        (out / "encode_profile.txt").write_text(text.getvalue())
    shutil.rmtree(work, ignore_errors=True)
    return result


# ---------------------------------------------------------------- allpairs

def gil_summary(raw: str, rate: int) -> str:
    """py-spy's raw samples (`stack count` lines) as seconds holding the interpreter lock: per
    thread, per function with what it calls, and per function alone."""
    import collections

    threads: collections.Counter = collections.Counter()
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        threads[frames[0]] += int(count)
        own[frames[-1]] += int(count)
        for name in {frame.split(" (")[0] for frame in frames[1:]}:
            inclusive[name] += int(count)
    lines = [f"{sum(threads.values()) / rate:.2f} s holding the interpreter lock, sampled at {rate}/s", "", "by thread:"]
    lines += [f"{n / rate:8.2f} s  {name}" for name, n in threads.most_common(12)]
    lines += ["", "by function, with what it calls:"]
    lines += [f"{n / rate:8.2f} s  {name}" for name, n in inclusive.most_common(70)]
    lines += ["", "by function alone:"]
    lines += [f"{n / rate:8.2f} s  {name}" for name, n in own.most_common(40)]
    return "\n".join(lines) + "\n"


def stage_allpairs(payload: Path, out: Path) -> dict:
    from bench.scale_data import split_sentences
    from data.raw_text import iter_documents
    from indexer.embedding import encode_texts, load_bi_encoder
    from indexer.encoding import choose_encoding
    from search.sentence_similarity import top_pairs, top_pairs_from_embeddings

    work = Path(tempfile.mkdtemp(prefix="bench_gpu_pairs_"))
    model_dir = random_minilm(payload, work / "minilm")
    sentences: list[str] = []
    seen: set[str] = set()
    for doc in iter_documents(payload / "data" / "wiki_head.txt.gz"):
        for paragraph in doc.text.splitlines():
            for sentence in split_sentences(paragraph):
                if len(sentence.split()) >= 5 and sentence not in seen:
                    seen.add(sentence)
                    sentences.append(sentence)
        if len(sentences) >= (200 if SMOKE else 10_000):
            break
    sentences = sentences[:200 if SMOKE else 10_000]
    model = load_bi_encoder(str(model_dir), encoding=choose_encoding())
    top_pairs(sentences[:50 if SMOKE else 1000], k=10, model=model)  # warm-up
    _sync()
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        embeddings = encode_texts(model, sentences)
        _sync()
        encoded = time.perf_counter() - start
        top_pairs_from_embeddings(embeddings, 10)
        _sync()
        mined = time.perf_counter() - start - encoded
        start = time.perf_counter()
        pairs = top_pairs(sentences, k=10, model=model)
        _sync()
        runs.append({"encode_s": encoded, "mine_s": mined, "top_pairs_s": time.perf_counter() - start})
    shutil.rmtree(work, ignore_errors=True)
    return {"sentences": len(sentences), "pairs": len(pairs), "runs": runs,
            "median_top_pairs_s": statistics.median(r["top_pairs_s"] for r in runs)}


# ---------------------------------------------------------------- pretrain

def model_flops_per_token(layers: int, hidden: int, seq: int, vocab: int, mask_rate: float) -> float:
    """Training FLOPs per token of BERT's model (3x the forward pass): the layers' matrix products,
    attention scores and values, and the MLM head over the masked share of positions."""
    layer = 2 * (4 * hidden * hidden + 2 * hidden * 4 * hidden) + 2 * 2 * seq * hidden
    head = mask_rate * 2 * (hidden * hidden + hidden * vocab)
    return 3 * (layers * layer + head)


def stage_pretrain(payload: Path, out: Path) -> dict:
    from dataclasses import replace

    from bench.bench_pretrain import baseline
    from training.config import PRESETS, PretrainConfig
    from training.pretrain import pretrain

    work = Path(tempfile.mkdtemp(prefix="bench_gpu_pretrain_"))
    tokenizer = work / "tokenizer"
    shutil.copytree(payload / "data" / "minilm", tokenizer)
    steps, batch, length = (4, 4, 64) if SMOKE else (100, 128, 128)
    preset = "tiny" if SMOKE else "base"
    config = PretrainConfig(
        corpus=payload / "data" / "wiki_head.txt.gz", out=work / "ours", tokenizer=tokenizer, preset=preset,
        max_steps=steps, batch_size=batch, max_length=length, learning_rate=1e-4, warmup_steps=steps // 10,
        max_documents=200 if SMOKE else 1500, eval_documents=20 if SMOKE else 100, eval_batches=4,
        eval_every=steps, save_every=steps, log_every=50, precision="bf16", attention="sdpa", device=_device())
    ours = pretrain(config)
    plain = baseline(replace(config, out=work / "plain", precision="fp32", attention="eager"))
    size = PRESETS[preset]
    flops = model_flops_per_token(size.num_layers, size.hidden_size, length, 30522, config.mask_rate)
    shutil.rmtree(work, ignore_errors=True)
    last = ours.evals[-1]
    return {"preset": preset, "steps": steps, "batch": batch, "max_length": length,
            "flops_per_token": flops,
            "ours": {"tokens_per_second": ours.tokens_per_second, "mlm_loss": last.mlm_loss,
                     "mlm_accuracy": last.mlm_accuracy, "nsp_accuracy": last.nsp_accuracy,
                     "losses": {str(k): v for k, v in ours.losses.items() if k % 10 == 0}},
            "plain": plain}


# ---------------------------------------------------------------- tables

def tables(out: Path) -> list[tuple[str, str, str]]:
    """(name, title, body) of each table the JSON files in `out` make."""
    def load(name: str) -> dict | None:
        path = out / f"{name}.json"
        result = json.loads(path.read_text()) if path.is_file() else None
        return None if result is None or "error" in result else result

    from bench.record import markdown_table

    env, made = load("env") or {}, []
    gpu = env.get("gpu", "GPU")
    peak = env.get("bf16_matmul_tflops")
    tests = load("tests")
    if tests:
        rows = [[line.split("::", 1)[0].split(" ")[-1], line.split("::", 1)[-1], "passed"] for line in tests["passed"]]
        rows += [[line.split("::", 1)[0].split(" ")[-1], line.split("::", 1)[-1].split(" - ")[0], "failed"]
                 for line in tests["failed"] if "::" in line]
        body = markdown_table(["file", "test", "on the GPU"], rows)
        body += f"\n\npytest: {tests['summary']}." + (f" {tests['note']}" if tests.get("note") else "")
        made.append(("bench_gpu-tests", f"The `gpu` tests on {gpu}", body))
    faiss_result = load("faiss")
    if faiss_result and faiss_result.get("rows"):
        rows = [[r["index"], r["device"], f"{r['build_s']:.1f}", f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
                 f"{r['single_qps']:,.0f}", f"{r['batch_qps']:,.0f}", f"{r['recall']:.3f}"]
                for r in faiss_result["rows"]]
        body = markdown_table(["index", "device", "build s", "1 query p50 ms", "p95 ms", "1-query QPS",
                               f"{faiss_result['queries']:,}-query batch QPS", "recall@10 vs exact"], rows)
    elif faiss_result:
        body = f"Latency, QPS and build-time rows: not recorded: {faiss_result.get('note', 'none came back')}."
    if faiss_result:
        body += (
            f"\n\n{faiss_result['n']:,} synthetic unit vectors x {faiss_result['dim']} (4,096 random centres, cosine "
            f"about 0.6 to their centre), {faiss_result['queries']:,} queries from the same mixture; the project's "
            f"`VectorStore` on the CPU ({faiss_result['cores']} cores; one thread for a single query, all for a batch) "
            f"and its GPU copy (`indexer/store/gpu.py`). IVF is what `--vector-index ivf` builds at this size "
            f"(`{faiss_result['ivf_factory']}`, trained on the same sample); the GPU row's build is the indexer's on a "
            f"GPU machine: k-means on the GPU (`ann.train`), lists filled on the CPU. Flat on the GPU returns the CPU's ids for {faiss_result['flat_same_ids']:.4f} of the 10,000 slots "
            f"with scores within {faiss_result['flat_max_score_diff']:.1e}; IVF on the GPU finds "
            f"{faiss_result['ivf16_gpu_vs_cpu_recall']:.3f} (nprobe 16) and {faiss_result['ivf64_gpu_vs_cpu_recall']:.3f} "
            f"(nprobe 64) of the CPU IVF's top 10. GPU memory: the flat copy took "
            f"{faiss_result['flat_gpu_used_gb']:.2f} GB of the card (measured; its codes are "
            f"{faiss_result['flat_gpu_bytes_per_vector']:.0f} bytes per vector, the rest FAISS's scratch space), IVF "
            f"codes {faiss_result['ivf_gpu_bytes_per_vector']:.0f} bytes per vector, so with "
            f"{faiss_result['gpu_free_gb']:.0f} GB free and 2 GiB kept back the largest index a searcher moves to "
            f"this GPU is about {faiss_result['flat_max_vectors'] / 1e6:.0f}M vectors flat and "
            f"{faiss_result['ivf_max_vectors'] / 1e6:.0f}M IVF; a larger one stays on the CPU with a warning naming "
            f"both sizes (tested). CAGRA: {'measured' if faiss_result['cagra'] else 'not in this FAISS build (the PyPI faiss-gpu wheel has no cuVS; faiss-gpu-cuvs needs the RAPIDS wheels)'}."
        )
        made.append(("bench_gpu-faiss", f"FAISS on the GPU ({gpu}) and the CPU, 1M x 384", body))
    encode = load("encode")
    if encode and encode.get("runs"):
        plain = encode.get("encode_pps")
        def waited(seconds: float | None) -> str:
            return "not measured" if seconds is None else f"{seconds:.2f}"

        rows = [[r["batch"], "embedding ahead of the commits" if r.get("ahead") else "embed, then commit",
                 r.get("workers", 0), f"{r['passages']:,}", f"{r['indexer_pps']:,.0f}",
                 f"{r['indexer_pps'] / plain:.2f}" if plain else "not measured",
                 waited(r.get("tokenizer_wait_s"))] for r in encode["runs"]]
        body = markdown_table(["batch", "indexer", "worker processes", "passages", "indexer passages/s",
                               "indexer / encode() (target >= 0.9)", "model waited on its tokenizer s"], rows)
        body += "\n\n" + markdown_table(
            ["`encode()` passages/s", "`encode_texts` passages/s (tokenizer ahead of the model)",
             "`encode_texts`: model waited on its tokenizer s"],
            [[f"{plain:,.0f}" if plain else "not measured",
              f"{encode['pipelined_pps']:,.0f}" if encode.get("pipelined_pps") else "not measured",
              waited(encode.get("pipelined_tokenizer_wait_s"))]])
        body += (
            f"\n\nAll of SciFact and the first articles of the Wikipedia slice ({encode['documents']:,} "
            f"documents), encoding `{encode['encoding']}` (the GPU's default), all-MiniLM-L6-v2's architecture and "
            "tokenizer with random weights (the same arithmetic; the real weights exceed what a call to the lent "
            "machine may carry). The indexer is `build_index` end to end into a new index (read, split, SQL, FAISS, "
            "BM25, chunked commits): embedding ahead of the commits in a thread "
            "(`indexer/build/background_embed.py`) with and without the worker processes that cut passages and "
            "tokenize for BM25 (`indexer/sources/workers.py`, all cores but two, at most 8), then embedding each "
            "chunk before committing it (the default since this run) with them; "
            "`encode()` embeds the indexer's own passage texts, same model and batch size, right after, and "
            "`encode_texts` (the tokenizer two batches ahead of the model, `indexer/pipelined_encoding.py`) the same "
            "texts after that.")
        if encode.get("note"):
            body += f" {encode['note']}"
        made.append(("bench_gpu-encode", f"Indexing on the GPU ({gpu})", body))
    pairs = load("allpairs")
    if pairs and pairs.get("runs"):
        rows = [[f"{r['encode_s']:.2f}", f"{r['mine_s']:.2f}", f"{r['top_pairs_s']:.2f}"] for r in pairs["runs"]]
        body = markdown_table(["encode s", "mine s", "`top_pairs` s (target <= 1)"], rows)
        body += (f"\n\n`search.sentence_similarity.top_pairs` over {pairs['sentences']:,} distinct Wikipedia sentences "
                 "(5 words or more), top 10 pairs, three runs after a warm-up; encode and mine timed apart, then the "
                 "whole call. Mining scores all 50M pairs block by block on the GPU.")
        if pairs.get("note"):
            body += f" {pairs['note']}"
        made.append(("bench_gpu-allpairs", f"All-pairs similarity on the GPU ({gpu})", body))
    pre = load("pretrain")
    if pre and "ours" in pre:
        flops = pre["flops_per_token"]
        rows = []
        for name, result, how in (("ours", pre["ours"], "bf16 autocast, SDPA, MLM head on masked positions"),
                                  ("plain BertForPreTraining", pre["plain"], "fp32, eager attention, head on every position")):
            tflops = result["tokens_per_second"] * flops / 1e12
            rows.append([name, how, f"{result['tokens_per_second']:,.0f}", f"{tflops:.0f}",
                         f"{100 * tflops / H100_BF16_DENSE_TFLOPS:.1f}%",
                         f"{100 * tflops / peak:.1f}%" if peak else "n/a", f"{result['mlm_loss']:.3f}",
                         f"{result['mlm_accuracy']:.3f}"])
        speed = pre["ours"]["tokens_per_second"] / pre["plain"]["tokens_per_second"]
        body = markdown_table(["loop", "how", "tokens/s", "model TFLOP/s", "MFU (989 TFLOP/s datasheet)",
                               f"of measured peak ({peak:.0f} TFLOP/s)" if peak else "of measured peak",
                               "held-out MLM loss", "MLM accuracy"], rows)
        body += (f"\n\nBERT `{pre['preset']}` preset (`training/config.py`), vocabulary 30,522, {pre['steps']} steps of "
                 f"{pre['batch']} x {pre['max_length']} tokens from the Wikipedia head, the same examples, masks and "
                 f"schedule for both; MFU counts {flops / 1e6:.0f} MFLOPs per token (3x the forward pass: layers, "
                 f"attention, the MLM head over the 15% masked positions). Ours / plain: {speed:.2f}x.")
        if pre.get("note"):
            body += f" {pre['note']}"
        made.append(("bench_gpu-pretrain", f"Pretraining throughput on the GPU ({gpu})", body))
    return made


def record_all(out: Path) -> None:
    from bench.record import machine_description, record

    env = json.loads((out / "env.json").read_text()) if (out / "env.json").is_file() else {}
    gpu = f"{env.get('gpu', 'a GPU')} ({env.get('nvidia_smi', '')}; torch {env.get('torch')}, CUDA {env.get('cuda')})"
    for name, title, body in tables(out):
        stage = json.loads((out / f"{name.removeprefix('bench_gpu-')}.json").read_text())
        machine = f"{gpu}, host {stage.get('host') or machine_description()}"
        measured = (stage["measured_at"], stage.get("loadavg")) if "measured_at" in stage else None
        record(name, title, body, command="python -m bench.bench_gpu run --payload .gpu --out OUT", machine=machine,
               measured=measured)
        print(f"## {title}\n\n{body}\n")


# ---------------------------------------------------------------- main

RUNNERS = {"env": stage_env, "tests": stage_tests, "faiss": stage_faiss, "encode": stage_encode,
           "allpairs": stage_allpairs, "pretrain": stage_pretrain}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="every stage, each in its own process (record them with `record`)")
    run.add_argument("--stages", nargs="+", default=list(STAGES), choices=list(STAGES))
    run.add_argument("--deadline", type=float, default=500.0, help="seconds for all stages together")
    stage = sub.add_parser("stage", help="one stage in this process")
    stage.add_argument("name", choices=list(STAGES))
    rec = sub.add_parser("record", help="record BENCHMARKS.md from the JSON files in --out")
    for p in (run, stage, rec):
        p.add_argument("--out", type=Path, required=True)
        p.add_argument("--payload", type=Path, default=Path(".gpu"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.command == "stage":
        from bench.record import machine_description

        try:
            result = RUNNERS[args.name](args.payload, args.out)
        except Exception:  # noqa: BLE001 -- recorded for the caller, which carries on with the next stage
            result = {"error": traceback.format_exc()}
        result["host"] = machine_description()
        result["measured_at"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        result["loadavg"] = os.getloadavg()[0]
        _write(args.out, args.name, result)
        print(json.dumps({k: v for k, v in result.items() if k not in ("rows", "runs", "losses")}, default=float)[:1500],
              flush=True)
        # Straight out: tearing down a process that holds 1M-vector indexes on both devices outlasted a stage's
        # limit on the H100 (2026-11-27), and its figures are written already.
        sys.stderr.flush()
        os._exit(0 if "error" not in result else 1)
    if args.command == "run":
        began = time.perf_counter()
        for name in args.stages:
            started = time.perf_counter()
            limit = min(STAGES[name], args.deadline - (started - began))
            if limit < 10:
                _write(args.out, name, {"error": "skipped: the run's deadline had passed"})
                continue
            try:
                subprocess.run([sys.executable, "-m", "bench.bench_gpu", "stage", name, "--out", str(args.out),
                                "--payload", str(args.payload)], timeout=limit)
            except subprocess.TimeoutExpired:
                own = args.out / f"{name}.json"
                if not own.is_file() or own.stat().st_mtime < time.time() - (time.perf_counter() - started):
                    _write(args.out, name, {"error": f"timed out after {limit:.0f} s"})
                # else the stage wrote its figures and ran out of time while exiting: they stand
            print(f"[bench_gpu] {name}: {time.perf_counter() - started:.0f} s", flush=True)
    if args.command == "record":
        record_all(args.out)
        return 0
    for _, title, body in tables(args.out):  # the run's figures, for its log (SMOKE: a try, not figures)
        print(f"## {title}\n\n{body}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
