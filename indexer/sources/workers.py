"""Worker processes for a build's per-text Python: cutting passages and tokenizing for BM25.

Both are pure functions of the text, and both are Python loops over tokens that hold the
interpreter lock: on a GPU the build's one process was bound by them, not by the model (the
indexer at 0.37 of `encode()` on an H100, BENCHMARKS.md bench_gpu-encode; on this project's
2-core machine, cutting and BM25 tokens took 9.4 of a 31k-passage build's 24 s of interpreter
time). Where the machine has cores to spare, they run in a pool of processes shared by every
build of the process; where it has not (fewer than `MIN_CORES`, where the model uses every core
and these are a few percent of a build), they run in the build's own process as before. The
answers are the same either way (tests/indexer/sources/test_workers.py).

The pool starts its processes with `spawn`, not `fork`: a build's process holds threads (torch,
the embedding thread), which a forked child would inherit half-stopped.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from indexer import settings
from indexer.sources.documents import Document

# Fewer cores than this: no worker processes (the model, or the build's threads, use them).
MIN_CORES = 6
# At most this many: past it the build's own process (SQL, FAISS, the GPU's feed) is the limit.
MAX_WORKERS = 8

T = TypeVar("T")
_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_pool_size = 0


def available_cores() -> int:
    """The cores this process may run on (its affinity, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_count() -> int:
    """How many worker processes a build uses: SEMSEARCH_BUILD_WORKERS when set, else none below
    `MIN_CORES` cores, else all cores but two (the build's process and the model's feed), at most
    `MAX_WORKERS`."""
    chosen = settings.build_workers()
    if chosen is not None:
        return chosen
    cores = available_cores()
    return 0 if cores < MIN_CORES else min(MAX_WORKERS, cores - 2)


def shared_pool() -> ProcessPoolExecutor | None:
    """The process's pool of `worker_count()` workers, started on first use; None for none."""
    global _pool, _pool_size
    count = worker_count()
    if count <= 0:
        return None
    with _lock:
        if _pool is None or _pool_size != count:
            if _pool is not None:
                _pool.shutdown(wait=False, cancel_futures=True)
            _pool = ProcessPoolExecutor(max_workers=count, mp_context=multiprocessing.get_context("spawn"))
            _pool_size = count
        return _pool


def submit(pool: ProcessPoolExecutor, fn: Callable[..., T], *args: Any) -> Future[T]:
    """`pool.submit(fn, *args)`, starting any worker it needs without the caller's main module
    (`_without_main`)."""
    with _without_main():
        return pool.submit(fn, *args)


def run_all(fn: Callable[..., T], calls: Sequence[tuple]) -> list[T] | None:
    """`[fn(*args) for args in calls]` in the workers, in order; None when there are none, or when
    the pool broke (a worker killed, say: it is let go and the next call starts another), so that
    the caller does the work itself."""
    pool = shared_pool()
    if pool is None:
        return None
    try:
        futures = [submit(pool, fn, *args) for args in calls]
        return [future.result() for future in futures]
    except BrokenProcessPool:
        discard(pool)
        return None


def discard(pool: ProcessPoolExecutor) -> None:
    """Let a broken pool go: the next `shared_pool()` starts a new one."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def _without_main() -> Iterator[None]:
    """While workers start: a `spawn` child runs its parent's main module again (as `__mp_main__`),
    so a build called from a script without `if __name__ == "__main__":` would run that script in
    every worker. The workers need nothing from it: they start with an empty one."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def shutdown() -> None:
    """Stop the pool's processes (at exit, or in a test)."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown(wait=True, cancel_futures=True)
            _pool = None


atexit.register(shutdown)


# ---------------------------------------------------------------- cutting passages
# Documents a worker cuts per task: large enough that the tokenizer travels with few of them,
# small enough that the build's first commits find their documents cut within milliseconds.
CUT_TASK_DOCUMENTS = 256


class _Tokenizer:
    """A Rust tokenizer rebuilt from its JSON in a worker, shaped as `bare_tokenizer` reads a
    transformers tokenizer (its `backend_tokenizer`)."""

    def __init__(self, backend) -> None:
        self.backend_tokenizer = backend


_TOKENIZERS: dict[str, _Tokenizer] = {}  # in a worker: by the JSON's hash, each parsed once


def _worker_tokenizer(tokenizer_json: str) -> _Tokenizer:
    import hashlib

    from tokenizers import Tokenizer

    key = hashlib.sha1(tokenizer_json.encode("utf-8")).hexdigest()
    if key not in _TOKENIZERS:
        _TOKENIZERS[key] = _Tokenizer(Tokenizer.from_str(tokenizer_json))
    return _TOKENIZERS[key]


def cut_task(tokenizer_json: str, passage_tokens: int, overlap_tokens: int, min_tail_tokens: int,
             documents: list[Document], tokenize: Callable[[list[tuple[str, str]]], T] | None = None,
             ) -> tuple[list[tuple[str, list[tuple[int, int, int]], bytes]], T | None]:
    """In a worker: (doc id, [(ordinal, start, end)], content digest) of each document, cut as
    `split_into_sections` cuts in the build's process and hashed as `Document.content_hash` hashes
    there (the hash was 1.3 s of an H100 build's main thread for 14,000 documents); and, with
    `tokenize` (a module function, such as `bm25_store.tokenized_passages`), what it makes of
    every passage's (title, text) in that order: the BM25 tokens a commit's merge then takes
    instead of reading the texts back and tokenizing them."""
    from indexer.sources.chunking import split_into_sections

    tokenizer = _worker_tokenizer(tokenizer_json)
    cut = [(doc, split_into_sections(doc.text, [h.start for h in doc.outline.headings], tokenizer,
                                     passage_tokens, overlap_tokens, min_tail_tokens)) for doc in documents]
    tokens = None if tokenize is None else tokenize(
        [(doc.title, doc.text[s.start_char:s.end_char]) for doc, spans in cut for s in spans])
    return ([(doc.doc_id, [(s.ordinal, s.start_char, s.end_char) for s in spans], doc.content_digest())
             for doc, spans in cut], tokens)


def tokenizer_json(tokenizer) -> str | None:
    """A fast tokenizer's Rust tokenizer as JSON, for workers; None for a slow one (cut in process)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return None if backend is None else backend.to_str()
