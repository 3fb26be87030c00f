"""The bi-encoder: loading it once per model identity, and encoding passages in length order."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from indexer import settings
from indexer.encoding import FP32, check_encoding, with_encoding
from indexer.model_spec import ModelSpec
from indexer.pipelined_encoding import PipelinedEncoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]


def load_bi_encoder(model: str | os.PathLike | ModelSpec | None = None, device: str | None = None,
                    encoding: str = FP32):
    """Load a SentenceTransformer once per process for each model, its files' fingerprint, device
    and encoding (`indexer.encoding`: fp32, the model as it is; openvino-bf16, its transformer
    compiled by OpenVINO, converted once per fingerprint into the cache folder).

    Keyed by the fingerprint, so weights replaced in a folder are loaded anew, never served
    from the cache under the old identity. A cross-encoder's folder is refused: loaded as a
    bi-encoder, its BERT would be given mean pooling in silence and score nonsense.
    """
    spec = ModelSpec.resolve(model)
    _refuse_cross_encoder(spec.path)
    return _load(spec.id, str(spec.path), spec.fingerprint(), device, check_encoding(encoding))


def is_loaded_bi_encoder(model: object) -> bool:
    """Whether `model` is a loaded SentenceTransformer (without importing the library for the question).
    The library may be half imported by another thread (the app preloads the model): until it
    defines the class, no instance of it exists."""
    model_class = getattr(sys.modules.get("sentence_transformers"), "SentenceTransformer", None)
    return model_class is not None and isinstance(model, model_class)


def check_model_argument(model: object, name: str = "model") -> None:
    """Refuse a `model` argument that is none of: None, a folder (str or os.PathLike), a loaded
    SentenceTransformer."""
    if model is None or isinstance(model, (str, os.PathLike)) or is_loaded_bi_encoder(model):
        return
    raise TypeError(f"{name} must be a model folder (a str or os.PathLike), a loaded SentenceTransformer, or "
                    f"None for the default; got {type(model).__name__}.")


def _refuse_cross_encoder(folder: Path) -> None:
    if (folder / "modules.json").is_file():
        return  # a SentenceTransformer folder
    try:
        architectures = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return
    if any(str(a).endswith("ForSequenceClassification") for a in architectures):
        raise ValueError(
            f"{folder} holds a cross-encoder (it scores pairs of texts: a reranker), not a bi-encoder that "
            "embeds one text. Use it as the reranker (--rerank-model, CrossEncoderReranker), and pass a "
            "SentenceTransformer folder as the model.")


def quiet_model_loading() -> None:
    """No "Loading weights" bar from transformers per model load: the app, the API and the
    indexer load models while their own progress shows, and the bar buried the app's URL."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


@functools.lru_cache(maxsize=4)
def _load(model_id: str, path: str, fingerprint: str, device: str | None, encoding: str):
    if encoding != FP32:
        model = _load(model_id, path, fingerprint, device, FP32)
        logger.info("compiling bi-encoder %s as %s", model_id, encoding)
        return with_encoding(model, encoding, settings.cache_dir() / encoding / fingerprint[:32])
    from sentence_transformers import SentenceTransformer

    quiet_model_loading()

    logger.info("loading bi-encoder %s (%s) from %s", model_id, fingerprint[:12], path)
    return SentenceTransformer(path, device=device, local_files_only=True)


def embedding_dimension(model) -> int:
    return int(model.get_embedding_dimension())


CPU_BATCH, GPU_BATCH = 64, 256


def default_batch_size(model) -> int:
    """Texts per forward pass: 64 on a CPU; 256 on a GPU, where a batch of 64 short sentences
    costs about as much Python and kernel launching as its arithmetic."""
    return GPU_BATCH if getattr(getattr(model, "device", None), "type", None) == "cuda" else CPU_BATCH


def encode_texts(
    model,
    texts: Sequence[str],
    batch_size: int | None = None,
    progress: ProgressCallback | None = None,
    chunk_size: int = 512,
) -> np.ndarray:
    """Normalised float32 embeddings in input order; `batch_size` by default 64, 256 on a GPU
    (`default_batch_size`).

    Texts are sorted by length once over the whole input (as `encode` does
    within one call) and fed in chunks, so the caller can report progress
    without paying for extra padding.
    """
    n = len(texts)
    out = np.empty((n, embedding_dimension(model)), dtype=np.float32)
    if n == 0:
        return out
    batch_size = batch_size or default_batch_size(model)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    pipelined = PipelinedEncoder.of(model)
    if pipelined is not None:  # the tokenizer runs ahead of the model (indexer.pipelined_encoding)
        def flush(start: int, vectors: np.ndarray) -> None:
            out[order[start:start + len(vectors)]] = vectors
            if progress is not None:
                progress(start + len(vectors), n)

        pipelined.encode([texts[i] for i in order], batch_size, chunk_size, flush)
        return out
    done = 0
    for begin in range(0, n, chunk_size):
        idx = order[begin : begin + chunk_size]
        vectors = model.encode(
            [texts[i] for i in idx],
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        out[idx] = vectors.astype(np.float32, copy=False)
        done += len(idx)
        if progress is not None:
            progress(done, n)
    return out


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run a block with `n` intra-op threads, then restore the previous setting."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def encode_query(model, query: str) -> np.ndarray:
    """One query's embedding, (1, dim), on one thread.

    A ten-token query gains nothing from intra-op parallelism, and on a busy
    CPU the extra threads wait on each other.
    """
    with torch_threads(1):
        return encode_texts(model, [query])
