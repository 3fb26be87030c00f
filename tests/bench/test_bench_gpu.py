"""bench/bench_gpu.py away from a GPU: its FLOP count, its tables, and a small run of its FAISS stage
(SEMSEARCH_BENCH_GPU_SMOKE), so the script a GPU session depends on keeps working between sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench.bench_gpu import model_flops_per_token, tables
from data.paths import PROJECT_ROOT


def test_model_flops_count_layers_attention_and_the_masked_head() -> None:
    # one layer, hidden 2, 4 positions, vocabulary 10, half the positions masked:
    # layer 2*(4*4 + 2*2*8) + 2*2*4*2 = 128, head 0.5*2*(2*2 + 2*10) = 24, training 3x
    assert model_flops_per_token(1, 2, 4, 10, 0.5) == 3 * (128 + 24)
    base = model_flops_per_token(12, 768, 128, 30522, 0.15)
    assert 6 * 85e6 < base < 6 * 100e6  # about 6 x BERT-base's 85M layer parameters, plus attention and head


def test_tables_say_what_was_not_measured(tmp_path: Path) -> None:
    (tmp_path / "env.json").write_text(json.dumps({"gpu": "H100", "bf16_matmul_tflops": 700.0}))
    (tmp_path / "faiss.json").write_text(json.dumps({
        "n": 10, "dim": 4, "queries": 2, "cores": 2, "rows": [], "note": "the stage ran out of time",
        "ivf_factory": "IVF4,Flat", "flat_same_ids": 1.0, "flat_max_score_diff": 0.0, "ivf16_gpu_vs_cpu_recall": 1.0,
        "ivf64_gpu_vs_cpu_recall": 1.0, "flat_gpu_used_gb": 0.1, "flat_gpu_bytes_per_vector": 16.0,
        "ivf_gpu_bytes_per_vector": 16.0, "gpu_free_gb": 1.0, "flat_max_vectors": 5, "ivf_max_vectors": 5,
        "cagra": False}))
    (tmp_path / "encode.json").write_text(json.dumps({"error": "timed out after 60 s"}))
    made = {name: body for name, _, body in tables(tmp_path)}
    assert "not recorded: the stage ran out of time" in made["bench_gpu-faiss"]
    assert "bench_gpu-encode" not in made  # a stage that failed makes no table
    run = {"batch": 256, "ahead": False, "workers": 8, "passages": 100, "indexer_pps": 50.0}
    (tmp_path / "encode.json").write_text(json.dumps({
        "documents": 10, "encoding": "fp16", "encode_pps": 40.0, "pipelined_pps": 200.0,
        "pipelined_tokenizer_wait_s": 0.25, "runs": [run, {**run, "tokenizer_wait_s": 1.5}]}))
    encode = {name: body for name, _, body in tables(tmp_path)}["bench_gpu-encode"]
    assert "| 256 | embed, then commit | 8 | 100 | 50 | 1.25 | not measured |" in encode  # a run from before
    assert "| 256 | embed, then commit | 8 | 100 | 50 | 1.25 | 1.50 |" in encode
    assert "| 40 | 200 | 0.25 |" in encode


def test_the_faiss_stage_runs_small_on_the_cpu(tmp_path: Path) -> None:
    env = {**os.environ, "SEMSEARCH_BENCH_GPU_SMOKE": "1"}
    done = subprocess.run([sys.executable, "-m", "bench.bench_gpu", "run", "--stages", "faiss", "--out", str(tmp_path)],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "faiss.json").read_text())
    assert "error" not in result, result.get("error")
    assert {row["device"] for row in result["rows"]} == {"CPU", "GPU"}
    flat_cpu = next(row for row in result["rows"] if row["index"] == "flat" and row["device"] == "CPU")
    assert flat_cpu["recall"] == 1.0 and result["flat_same_ids"] == 1.0
    assert "| flat | CPU |" in done.stdout
