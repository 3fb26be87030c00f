"""Ways to run one bi-encoder on the CPU, each behind the same `encode` call.

Every variant is the index's own model (all-MiniLM-L6-v2 by default) computing the same
function in another runtime or precision; `bench/bench_encode.py` measures their speed and
what they cost in retrieval quality. A variant is a `SentenceTransformer` whose `encode` is
replaced (`as_bi_encoder`), so the indexer's re-embedding (`repair_index(model=...)`) and the
`Searcher` take it as they take the model itself.

- `fp32`: plain `SentenceTransformer.encode()`, the peer;
- `fp32-1thread`: the same on one of the cores;
- `bf16`: torch autocast to bfloat16 (oneDNN runs it on AMX tiles where the CPU has them, and
  emulates it slowly where it has not);
- `int8-torch`: torch's dynamic quantisation of every Linear layer (int8 weights, activations
  quantised per batch);
- `onnx-fp32`, `onnx-int8`: the transformer exported by `torch.onnx.export` and run by ONNX
  Runtime (on PyPI), int8 by ONNX Runtime's own `quantize_dynamic`;
- `openvino-fp32`, `openvino-bf16`: the product's own OpenVINO path (`indexer.encoding.
  openvino_model`, which `openvino-bf16`, the default encoding on CPUs with bf16, runs): the
  transformer converted by OpenVINO's `convert_model` and compiled for the CPU at that
  precision, inside the model's own `encode()`.

sentence-transformers' own `backend="onnx"`/`"openvino"` need optimum-onnx or optimum-intel,
which (checked 2026-11-26 with pip's resolver) pin transformers 4.57 and 5.5 and a CUDA torch,
against this project's transformers 5.23 and torch 2.13 CPU: so the runtimes are used directly.

Batches of 32 texts sorted by length, as `encode()` batches them, so padding costs the same in
every variant; for ONNX Runtime, mean pooling over the attention mask and L2 normalisation, as
the model's own modules do (`check_pooling`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from indexer.encoding import BF16_FLAGS, cpu_flags, openvino_model

BATCH = 32
Runner = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Variant:
    """A named way to run the model; `precision` names the matmul peak it is compared with."""

    name: str
    precision: str  # "fp32", "bf16" or "int8"
    description: str


VARIANTS = {v.name: v for v in (
    Variant("fp32", "fp32", "SentenceTransformer.encode(), fp32 (the peer)"),
    Variant("fp32-1thread", "fp32", "the same on one thread (torch.set_num_threads(1))"),
    Variant("bf16", "bf16", "torch autocast to bfloat16"),
    Variant("int8-torch", "int8", "torch dynamic quantisation of the Linear layers"),
    Variant("onnx-fp32", "fp32", "ONNX Runtime, model exported by torch.onnx.export"),
    Variant("onnx-int8", "int8", "ONNX Runtime, quantize_dynamic (int8 weights)"),
    Variant("openvino-fp32", "fp32", "OpenVINO convert_model, CPU, f32 precision"),
    Variant("openvino-bf16", "bf16", "OpenVINO convert_model, CPU, bf16 precision hint"),
)}


class _HiddenStates(torch.nn.Module):
    """The transformer as a function of its three inputs to its last hidden states, for exporters."""

    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: ANN001, ANN201
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state


def check_pooling(model: Any) -> None:
    """The runtimes below pool by the mask's mean and normalise, which is what the model's own
    modules must do for their vectors to be the same function."""
    pooling = model[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 6; older ones had flags
    mean = mode == "mean" if isinstance(mode, str) else getattr(pooling, "pooling_mode_mean_tokens", False)
    after = [type(module).__name__ for module in list(model)[2:]]
    if not mean or any(name != "Normalize" for name in after):
        raise ValueError(f"bench_encode's runtimes pool by the mean of the tokens and normalise; this model "
                         f"pools by {mode!r} and then applies {after}")


def batched(texts: Sequence[str], tokenizer: Any, max_length: int, run: Runner, dim: int) -> np.ndarray:
    """Normalised mean-pooled vectors of `texts` in input order, from batches sorted by length."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for start in range(0, len(texts), BATCH):
        idx = order[start:start + BATCH]
        enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=max_length,
                        return_tensors="np")
        types = enc.get("token_type_ids", np.zeros_like(enc["input_ids"]))
        hidden = np.asarray(run(enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64),
                                types.astype(np.int64)), dtype=np.float32)
        mask = enc["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    return out


def _example(model: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    enc = model.tokenizer(["an example passage", "a second, longer example passage to export"],
                          padding=True, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))


def onnx_runner(model: Any, work: Path, int8: bool) -> Runner:
    import onnxruntime as ort

    work.mkdir(parents=True, exist_ok=True)
    path = work / "model.onnx"
    names = ["input_ids", "attention_mask", "token_type_ids"]
    torch.onnx.export(_HiddenStates(model[0].auto_model).eval(), _example(model), str(path), input_names=names,
                      output_names=["hidden"], dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]},
                      opset_version=17, dynamo=False)
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantized = work / "model-int8.onnx"
        quantize_dynamic(str(path), str(quantized), weight_type=QuantType.QInt8)
        path = quantized
    options = ort.SessionOptions()
    options.intra_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return lambda ids, mask, types: session.run(None, {"input_ids": ids, "attention_mask": mask,
                                                       "token_type_ids": types})[0]


def torch_encoder(model: Any, name: str) -> Callable[[Sequence[str]], np.ndarray]:
    """fp32, fp32-1thread, bf16, int8-torch: `encode()` of the model or of a modified copy."""
    if name == "int8-torch":
        model = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)
    base = model.encode

    def encode(texts: Sequence[str]) -> np.ndarray:
        threads = torch.get_num_threads()
        if name == "fp32-1thread":
            torch.set_num_threads(1)
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=name == "bf16"), torch.inference_mode():
                vectors = base(list(texts), batch_size=BATCH, convert_to_numpy=True, normalize_embeddings=True,
                               show_progress_bar=False)
        finally:
            torch.set_num_threads(threads)
        return np.asarray(vectors, dtype=np.float32)

    return encode


def make_encoder(model: Any, name: str, work: Path) -> Callable[[Sequence[str]], np.ndarray]:
    """A function from texts to normalised float32 vectors, computing `model` as variant `name`."""
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}; choose from {', '.join(VARIANTS)}")
    if name in ("fp32", "fp32-1thread", "bf16", "int8-torch"):
        return torch_encoder(model, name)
    if name.startswith("openvino"):  # the product's own OpenVINO path (indexer/encoding.py)
        return torch_encoder(openvino_model(model, "bf16" if name.endswith("bf16") else "f32"), name)
    check_pooling(model)
    run = onnx_runner(model, work / name, int8=name == "onnx-int8")
    dim = model.get_sentence_embedding_dimension()
    return lambda texts: batched(texts, model.tokenizer, model.max_seq_length, run, dim)


def as_bi_encoder(model: Any, encode: Callable[[Sequence[str]], np.ndarray]) -> Any:
    """A shallow copy of the SentenceTransformer `model` whose `encode` is the variant's, for the
    indexer and the Searcher, which call `encode(texts, batch_size=..., ...)` on it (a model whose
    `encode` is replaced is not run by its own modules: `indexer.pipelined_encoding`)."""
    variant = copy.copy(model)

    def encode_call(sentences, *args: object, **kwargs: object) -> np.ndarray:  # noqa: ANN001
        single = isinstance(sentences, str)
        vectors = encode([sentences] if single else list(sentences))
        return vectors[0] if single else vectors

    variant.encode = encode_call
    return variant


def _cpuinfo(key: str) -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cpu_model() -> str:
    """The CPU's model name, and "(no bf16 matrix instructions)" after it where it has none: parts
    sold under one name ("AMD EPYC") differ there, and so does the encoding a new index gets."""
    bf16 = BF16_FLAGS & cpu_flags()
    return (_cpuinfo("model name") or "unknown CPU") + ("" if bf16 else " (no bf16 matrix instructions)")


def cpu_vendor() -> str:
    """"intel", "amd" or "other", with "-no-bf16" where the CPU has no bf16 matrix instructions:
    each kind of CPU keeps its own table in BENCHMARKS.md."""
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(_cpuinfo("vendor_id"), "other")
    return vendor + ("" if BF16_FLAGS & cpu_flags() else "-no-bf16")


def matrix_units() -> str:
    """What the CPU offers for low-precision matrix arithmetic, for the table's heading."""
    flags = cpu_flags()
    named = [name for flag, name in (("amx_bf16", "AMX bf16"), ("amx_int8", "AMX int8"),
                                     ("avx512_bf16", "AVX-512 bf16"), ("avx512_vnni", "AVX-512 VNNI"),
                                     ("avx_vnni", "AVX-VNNI"), ("avx2", "AVX2")) if flag in flags]
    return ", ".join(named) or "none of AVX2, VNNI, AMX"
