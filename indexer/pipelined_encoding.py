"""Encoding with the tokenizer running ahead of the model, for plain text bi-encoders.

`SentenceTransformer.encode()` tokenizes a batch, runs it, copies it back, then tokenizes the
next: the model waits for the tokenizer and the tokenizer for the model. Measured on a 2-core
CPU (transformers 5.23, tokenizers 0.23) over 10,000 Wikipedia sentences, the tokenizer call
through transformers took 0.95 s (batches of 64), the Rust tokenizer alone 0.26 s and the arrays
0.08 s; on an H100 the same 10,000 sentences took 2.8 to 6.8 s to encode with MiniLM in fp16,
for 0.03 s of scoring (BENCHMARKS.md, bench_gpu-allpairs). The GPU waited on the CPU.

So, for a model made of a torch `Transformer` with a fast tokenizer followed by `Pooling` and
`Normalize` only (what the bi-encoders here and all-MiniLM-L6-v2 are), this module:
- tokenizes with the model's own Rust tokenizer (`backend_tokenizer`, truncating and padding as
  `Transformer.preprocess` sets them), straight into arrays, in a thread that stays two batches
  ahead (the Rust call releases the GIL);
- runs the model's own modules (`SentenceTransformer.forward`) and normalises on the device;
- copies the vectors back once per flush, not once per batch.

The vectors equal `encode(normalize_embeddings=True)`'s (tests/indexer/test_pipelined_encoding.py).
Any other model (ONNX/OpenVINO backends, prompts, lower-casing, other modules, an `encode`
replaced on the instance) gets `None` from `PipelinedEncoder.of` and goes through `encode()`.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexer.rust_tokenizer import bare_tokenizer

_PLAIN_MODULES = frozenset({"Pooling", "Normalize"})
PREFETCH = 2  # batches tokenized ahead of the one the model runs
# One per model: copying a Rust tokenizer takes milliseconds, a query's whole encoding about as long.
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class TokenizerWaits:
    """How long a model's loop waited for its tokenizer thread, over an encoder's life: a GPU that
    waits on a tokenizer short of CPU shows here (`tokenizer_wait_seconds`; bench/bench_gpu.py)."""

    seconds: float = 0.0
    batches: int = 0


# Every encoder's waits together, this process's life long (an encoder goes with its model).
_ALL_WAITS = TokenizerWaits()


def tokenizer_wait_seconds() -> float:
    """Seconds the model's loop of every encoder so far waited for its tokenizer."""
    return _ALL_WAITS.seconds


@dataclass(frozen=True)
class PipelinedEncoder:
    """A bi-encoder's modules and a copy of its Rust tokenizer set to truncate and pad."""

    model: Any
    tokenizer: Any  # tokenizers.Tokenizer, with truncation enabled and no padding (`tokenize` pads)
    counter: Any  # the same without truncation or padding, to count a text's tokens
    type_ids: bool  # whether the transformer takes token_type_ids
    max_length: int | None
    unknown_id: int | None
    pad_id: int = 0
    pad_type_id: int = 0
    waits: TokenizerWaits = field(default_factory=TokenizerWaits, compare=False)

    @classmethod
    def of(cls, model: Any) -> PipelinedEncoder | None:
        """The pipelined form of `model`, or None where `encode()` must do the work (see the module).
        Made once per model (and again if its max_seq_length changes). A model whose `encode` was
        replaced on the instance (a wrapper that computes the vectors otherwise, as bench/
        encode_variants.py's do) gets None: its `encode` is what it computes with."""
        if "encode" in getattr(model, "__dict__", {}):
            return None
        try:
            cached = _CACHE.get(model)
        except TypeError:  # not weakly referenceable: no SentenceTransformer
            return None
        if cached is not None and cached.max_length == getattr(model, "max_seq_length", None):
            return cached
        made = cls._make(model)
        _CACHE[model] = made
        return made

    @classmethod
    def _make(cls, model: Any) -> PipelinedEncoder | None:
        try:
            modules = list(model)
        except TypeError:  # not a SentenceTransformer (a wrapper around one, say)
            return None
        if not modules or type(modules[0]).__name__ != "Transformer":
            return None
        first = modules[0]
        if getattr(first, "backend", None) != "torch" or getattr(first, "do_lower_case", False):
            return None
        if any(type(module).__name__ not in _PLAIN_MODULES for module in modules[1:]):
            return None
        if getattr(model, "default_prompt_name", None) or getattr(model, "prompts", None) and any(
                model.prompts.values()):
            return None
        hf_tokenizer = getattr(first, "tokenizer", None)
        counter = bare_tokenizer(hf_tokenizer)  # a copy: the model's own tokenizer is left as it was
        if counter is None or hf_tokenizer.pad_token_id is None:
            return None
        tokenizer = copy.deepcopy(counter)
        max_length = first.max_seq_length
        if max_length:
            tokenizer.enable_truncation(int(max_length))
        else:
            tokenizer.no_truncation()
        tokenizer.no_padding()
        if any(tokenizer.encode("a b").type_ids):  # one text is one segment: type 0 throughout
            return None
        return cls(model, tokenizer, counter, "token_type_ids" in getattr(hf_tokenizer, "model_input_names", ()),
                   max_length, getattr(hf_tokenizer, "unk_token_id", None), int(hf_tokenizer.pad_token_id),
                   int(getattr(hf_tokenizer, "pad_token_type_id", 0) or 0))

    def token_counts(self, texts: Sequence[str]) -> list[tuple[int, int]]:
        """(tokens with the special ones, how many of them are the unknown token) for each text,
        untruncated, in one call of the Rust tokenizer."""
        unknown = self.unknown_id
        return [(len(ids), ids.count(unknown) if unknown is not None else 0)
                for ids in (e.ids for e in self.counter.encode_batch_fast(list(texts)))]

    def tokenize(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Int64 arrays for one batch, padded on the right to its longest text, as the Rust
        tokenizer's own padding gives them (runs in the prefetch thread). Only each text's ids are
        read from the tokenizer, as Python lists; the mask and the type ids (one segment: 0, and
        the tokenizer's pad type id after the text) are made here: reading all three lists, padded,
        held the interpreter lock for 1.8 s of an H100 build of 31k passages."""
        encodings = self.tokenizer.encode_batch_fast(list(texts))
        lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=len(encodings))
        width = int(lengths.max()) if len(lengths) else 0
        mask = np.arange(width) < lengths[:, None]
        ids = np.full(mask.shape, self.pad_id, dtype=np.int64)
        ids[mask] = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64,
                                count=int(lengths.sum()))
        arrays = {"input_ids": ids, "attention_mask": mask.astype(np.int64)}
        if self.type_ids:
            arrays["token_type_ids"] = np.where(mask, 0, self.pad_type_id).astype(np.int64)
        return arrays

    def encode(self, texts: Sequence[str], batch_size: int, flush_every: int,
               flush: Callable[[int, np.ndarray], None]) -> None:
        """Encode `texts` in order, calling `flush(start, vectors)` with float32 unit vectors for
        each run of about `flush_every` texts (rounded up to whole batches)."""
        import torch

        self.model.eval()  # as encode() does: no dropout, whatever a training run left set
        device = self.model.device
        batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
        pending: list[torch.Tensor] = []
        start = done = 0
        with contextlib.ExitStack() as stack:
            stack.enter_context(torch.inference_mode())
            if len(batches) == 1:  # a query: nothing to overlap, no thread to start
                tokenized: Iterator[dict[str, np.ndarray]] = iter([self.tokenize(batches[0])])
            else:
                pool = stack.enter_context(ThreadPoolExecutor(max_workers=1, thread_name_prefix="tokenize"))
                tokenized = _ahead(pool, self.tokenize, batches)
            while True:
                began = time.perf_counter()
                arrays = next(tokenized, None)
                waited = time.perf_counter() - began
                for waits in (self.waits, _ALL_WAITS):
                    waits.seconds += waited
                    waits.batches += arrays is not None
                if arrays is None:
                    break
                features = {name: torch.from_numpy(array).to(device, non_blocking=True)
                            for name, array in arrays.items()}
                vectors = self.model.forward(features)["sentence_embedding"].float()
                pending.append(torch.nn.functional.normalize(vectors, p=2, dim=1))
                done += len(arrays["input_ids"])
                if done - start >= flush_every or done == len(texts):
                    flush(start, torch.cat(pending).cpu().numpy())
                    pending, start = [], done


def _ahead(pool: ThreadPoolExecutor, work: Callable, items: list) -> Iterator:
    """`work(item)` for each item in order, computed in `pool` up to PREFETCH items ahead."""
    queued: list[Future] = [pool.submit(work, item) for item in items[:PREFETCH]]
    for index in range(len(items)):
        result = queued.pop(0).result()
        if index + PREFETCH < len(items):
            queued.append(pool.submit(work, items[index + PREFETCH]))
        yield result
