"""How the bi-encoder's arithmetic runs on this machine: an index's *encoding*.

- `fp32`: the model's own torch modules in float32 (`SentenceTransformer.encode()`), on the CPU
  or a GPU.
- `fp16`: the same modules in float16, the default on a GPU, where sentence-transformers users
  run it (`bench/bench_gpu.py` times it). An fp16 index searched on a CPU encodes its queries
  in fp16 there too, slower than fp32 but the same function.
- `openvino-bf16`: the transformer converted by OpenVINO's own `convert_model` and compiled for
  the CPU in bfloat16; tokenisation, pooling and normalisation stay the model's own modules, so
  only the matrix arithmetic changes.
- `openvino-fp32`: the same conversion compiled in float32: the model's function to float
  rounding, from OpenVINO's CPU kernels instead of torch's.

`bench/bench_encode.py` measured them against plain `encode()` on the three kinds of CPU these
machines have, with the retrieval quality each keeps on the dev sets (BENCHMARKS.md, "Encoding
variants on the CPU"): OpenVINO bf16 is the fastest variant within the issue's 0.005 nDCG@10 of
fp32 on every dev set, on the Intel Xeon with AMX and on the AMD EPYC with AVX-512 bf16; on an
AMD EPYC with AVX2 alone, where bf16 is emulated, OpenVINO f32 is (ONNX Runtime fp32 is not
faster than `encode()` there).

`choose_encoding` picks a new index's encoding at run time: `fp16` on a GPU; on a CPU,
`openvino-bf16` where it has AMX or AVX-512 bf16, `openvino-fp32` on other x86-64 CPUs with AVX2,
and `fp32` elsewhere (ARM, older x86: not measured) or where OpenVINO is not installed.
`SEMSEARCH_ENCODING` (or `--encoding`) chooses another.

An index records its encoding. Its queries are encoded the same way (`Index.load_model`), an
incremental build keeps it, and a build asking for another is refused like another model
(`WriteTransaction.check_compatible`): mixing them would put vectors of two slightly different
functions in one index. An index from before encodings were recorded is `fp32`.
"""

from __future__ import annotations

import copy
import importlib.util
import logging
import os
import shutil
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from indexer import settings

logger = logging.getLogger(__name__)

FP32 = "fp32"
FP16 = "fp16"
OPENVINO_BF16 = "openvino-bf16"
OPENVINO_FP32 = "openvino-fp32"
ENCODINGS = {
    FP32: "the model's torch modules in float32 (SentenceTransformer.encode())",
    FP16: "the model's torch modules in float16, the default on a GPU",
    OPENVINO_BF16: "the transformer compiled by OpenVINO for the CPU in bfloat16",
    OPENVINO_FP32: "the transformer compiled by OpenVINO for the CPU in float32",
}
_OPENVINO_PRECISIONS = {OPENVINO_BF16: "bf16", OPENVINO_FP32: "f32"}
# /proc/cpuinfo flags of the matrix instructions that make bf16 faster than fp32.
BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
# Where OpenVINO in f32 was measured faster than torch's fp32 (x86-64 with AVX2; the CPUs measured
# all had it): elsewhere (ARM, older x86) a new index stays with plain fp32.
F32_FLAGS = frozenset({"avx2"})
# The inputs a converted transformer takes, in this order, when its tokenizer produces them.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def check_encoding(name: str) -> str:
    """`name` if it is a known encoding, else a ValueError naming the choices."""
    if name not in ENCODINGS:
        raise ValueError(f"Unknown encoding {name!r}; choose one of: "
                         + "; ".join(f"{key} ({value})" for key, value in ENCODINGS.items()) + ".")
    return name


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def import_openvino() -> Any:
    """The `openvino` module, without its telemetry.

    OpenVINO's Python package sends usage events to Google Analytics on import and on every
    conversion, unless the user has opted out (its `openvino_telemetry` package, opt-out). A tool
    for people's own documents sends nothing: with that package blocked, OpenVINO falls back to
    its own no-op stub (`openvino/tools/ovc/telemetry_stub.py`), as where it is not installed.
    """
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]  # None: blocked
    import openvino

    return openvino


def openvino_installed() -> bool:
    return importlib.util.find_spec("openvino") is not None


def choose_encoding(device: str | None = None, flags: frozenset[str] | None = None) -> str:
    """A new index's encoding on this machine: `SEMSEARCH_ENCODING` when set, else `fp16` on a GPU
    (`device`, or the one torch sees when None); on a CPU `openvino-bf16` where it has bf16 matrix
    instructions, `openvino-fp32` where it has AVX2, else `fp32` (and `fp32` if OpenVINO is not
    installed)."""
    wanted = settings.encoding()
    if wanted:
        return check_encoding(wanted)
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not str(device).startswith("cpu"):
        return FP16
    flags = cpu_flags() if flags is None else flags
    wanted = OPENVINO_BF16 if BF16_FLAGS & flags else OPENVINO_FP32 if F32_FLAGS & flags else FP32
    if wanted != FP32 and not openvino_installed():
        logger.info("OpenVINO is not installed: encoding in fp32 (pip install -r requirements.txt installs it)")
        return FP32
    return wanted


def with_encoding(model: Any, encoding: str, cache_dir: Path | None = None) -> Any:
    """`model` (a loaded SentenceTransformer) computing its embeddings as `encoding`: the model itself
    for fp32, a float16 copy for fp16, else a shallow copy whose first module runs in OpenVINO.
    `cache_dir` keeps the converted model, so later loads skip the conversion (about 2 s for MiniLM)."""
    if check_encoding(encoding) == FP32:
        return model
    if encoding == FP16:
        return copy.deepcopy(model).half()
    if not openvino_installed():
        raise ImportError(f"This index's vectors were encoded as {encoding}, which runs in OpenVINO; install it "
                          "with: pip install -r requirements.txt")
    first = model[0]
    if getattr(first, "module_output_name", None) != "token_embeddings" or not hasattr(first, "auto_model"):
        raise ValueError(f"{encoding} runs a transformer module; this model's first module is "
                         f"{type(first).__name__}. Build with --encoding {FP32}.")
    return openvino_model(model, _OPENVINO_PRECISIONS[encoding], cache_dir)


def openvino_model(model: Any, precision: str, cache_dir: Path | None = None) -> Any:
    """A shallow copy of `model` whose first module runs in OpenVINO at `precision` ("bf16" for
    `openvino-bf16`; bench/encode_variants.py also times "f32")."""
    encoded = copy.copy(model)
    modules = type(model._modules)(model._modules)
    runner = copy.copy(model[0])
    runner.forward = OpenVINOForward(_compiled(model, cache_dir, precision))  # the instance's, not the class's
    modules["0"] = runner
    encoded.__dict__["_modules"] = modules
    return encoded


class OpenVINOForward:
    """The first module's forward pass, as OpenVINO computes it: the tokens' last hidden states
    under `token_embeddings`, as the transformer module writes them. One inference request per
    thread (a request is not safe to share), each result copied out of the request's buffer."""

    def __init__(self, compiled: Any) -> None:
        self._compiled = compiled
        self._names = [port.get_any_name() for port in compiled.inputs]
        self._local = threading.local()

    def __call__(self, features: dict[str, Any], **_: object) -> dict[str, Any]:
        import torch

        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self._compiled.create_infer_request()
        ids = features["input_ids"]
        inputs = {name: (features[name] if name in features else torch.zeros_like(ids)).numpy()
                  for name in self._names}
        request.infer(inputs)
        hidden = np.array(request.get_output_tensor(0).data, dtype=np.float32)  # a copy: the buffer is reused
        features["token_embeddings"] = torch.from_numpy(hidden)
        return features


def _compiled(model: Any, cache_dir: Path | None, precision: str) -> Any:
    ov = import_openvino()
    import torch

    converted = _read_cached(cache_dir)
    if converted is None:
        converted = _convert(model)
        _write_cache(converted, cache_dir)
    compiled = ov.Core().compile_model(converted, "CPU", {"INFERENCE_PRECISION_HINT": precision,
                                                          "INFERENCE_NUM_THREADS": torch.get_num_threads()})
    computed = str(compiled.get_property("INFERENCE_PRECISION_HINT"))
    if precision == "bf16" and "bf16" not in computed and "bfloat16" not in computed:  # no bf16 instructions
        logger.info("OpenVINO computes this model in %s on this CPU (it has no bf16 instructions)", computed)
    return compiled


def _convert(model: Any) -> Any:
    """The first module's transformer converted by OpenVINO, from the inputs the tokenizer makes
    (in `_INPUTS` order) to the last hidden states; its inputs named as the features are."""
    ov = import_openvino()
    import torch

    example = model.tokenizer(["an example passage", "a second, longer example passage to convert"],
                              padding=True, return_tensors="pt")
    names = [name for name in _INPUTS if name in example]
    bert = model[0].auto_model

    class HiddenStates(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.bert(**dict(zip(names, inputs, strict=True))).last_hidden_state

    from transformers.utils import logging as transformers_logging

    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()  # its notes on the config, read while tracing
    try:
        with torch.inference_mode(), warnings.catch_warnings():  # the tracer's notes on shapes it fixes:
            warnings.simplefilter("ignore")  # none that matter here (batch and length stay dynamic)
            converted = ov.convert_model(HiddenStates().eval(),
                                         example_input=tuple(example[name] for name in names))
    finally:
        transformers_logging.set_verbosity(verbosity)
    for port, name in zip(converted.inputs, names, strict=True):
        port.get_tensor().set_names({name})
    return converted


def _read_cached(cache_dir: Path | None) -> Any:
    if cache_dir is None or not (cache_dir / "model.xml").is_file():
        return None
    ov = import_openvino()

    try:
        return ov.Core().read_model(str(cache_dir / "model.xml"))
    except RuntimeError as err:  # a damaged cache: convert again
        logger.warning("could not read the converted model in %s (%s); converting again", cache_dir, err)
        return None


def _write_cache(converted: Any, cache_dir: Path | None) -> None:
    """Save the converted model into `cache_dir` whole or not at all: written beside it, then
    renamed into place (a process that loses the race to another keeps its own in memory)."""
    if cache_dir is None:
        return
    ov = import_openvino()

    partial = cache_dir.with_name(f".{cache_dir.name}.{os.getpid()}.partial")
    try:
        partial.mkdir(parents=True, exist_ok=True)
        ov.save_model(converted, str(partial / "model.xml"), compress_to_fp16=False)  # fp16 would change it
        if cache_dir.exists():  # a damaged one that could not be read
            shutil.rmtree(cache_dir)
        partial.rename(cache_dir)
    except OSError as err:  # a read-only or raced cache costs a conversion per load, nothing else
        logger.info("not caching the converted model in %s: %s", cache_dir, err)
        shutil.rmtree(partial, ignore_errors=True)
