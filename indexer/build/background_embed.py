"""Embedding a window's plan in a thread, ahead of the commits that store it (on a GPU).

The build loop cuts, embeds and commits one chunk after another: while a commit writes SQL,
FAISS and BM25, the model waits, and while the model runs, the writes wait. On a CPU the model
takes nearly all the time and every core, so the loop stays as it is. On a GPU the writes are
the larger part: the indexer ran at a fraction of `encode()`'s rate on an H100 (BENCHMARKS.md,
bench_gpu-encode). On the devices in `pipeline.EMBED_AHEAD_DEVICES` `ModelEmbedder.begin` starts a
`BackgroundStream` over the plan (none by default: on an H100 the thread and the commits take turns
holding one interpreter lock, and it was slower in every run measured; the bench compares both):

    thread:  cut document -> bi-encoder inputs -> encode_texts -> queue (at most AHEAD_BLOCKS)
    build:   next_chunk -> stream.take(docs, spans) -> commit

The thread cuts with its own copy of the tokenizer (a tokenizer's settings change per call in
transformers, so one must not serve two threads) and puts each document's passages into the
cutter's shared table, where the build finds them already cut. `take` checks that the build
asks for exactly the next passages of the plan, by document and character span, and raises
otherwise rather than pair vectors with the wrong passages.
"""

from __future__ import annotations

import copy
import queue
import threading
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np

from indexer.build.report import ProgressCallback
from indexer.embedding import embedding_dimension, encode_texts
from indexer.sources.documents import Document, PassageSpan
from indexer.sources.passage_text import bi_encoder_inputs_of

BLOCK_PASSAGES = 2048  # passages per `encode_texts` call in the thread
AHEAD_BLOCKS = 8  # blocks embedded and not yet taken, at most (16,384 x 384 floats: 25 MB)

Key = tuple[str, int, int]  # a passage: its document's id and character span


class BackgroundStream:
    """The vectors of a fixed, ordered list of documents' passages, embedded in a thread and
    handed out in consecutive slices (`take`)."""

    def __init__(self, model: Any, docs: Sequence[Document], cut: Callable[[Document, Any], list[PassageSpan]],
                 cut_table: dict[str, list[PassageSpan]], embed_titles: bool, batch_size: int) -> None:
        self.model, self.docs, self.cut, self.cut_table = model, list(docs), cut, cut_table
        self.embed_titles, self.batch_size = embed_titles, batch_size
        self._queue: queue.Queue = queue.Queue(maxsize=AHEAD_BLOCKS)
        self._stop = threading.Event()
        self._leftover: tuple[list[Key], np.ndarray] | None = None
        self._thread = threading.Thread(target=self._run, name="semsearch-embed-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        tokenizer = copy.deepcopy(self.model.tokenizer)
        # What `embedded_title` reads of a model, with this thread's own tokenizer.
        view = SimpleNamespace(tokenizer=tokenizer, max_seq_length=self.model.max_seq_length)
        keys: list[Key] = []
        titles: list[str] = []
        passages: list[list[str]] = []
        try:
            for doc in self.docs:
                if self._stop.is_set():
                    return
                spans = self.cut_table.get(doc.doc_id)
                if spans is None:
                    spans = self.cut_table.setdefault(doc.doc_id, self.cut(doc, tokenizer))
                keys += [(doc.doc_id, s.start_char, s.end_char) for s in spans]
                titles.append(doc.title)
                passages.append([doc.text[s.start_char:s.end_char] for s in spans])
                if len(keys) >= BLOCK_PASSAGES:
                    self._put((keys, self._encoded(titles, passages, view)))
                    keys, titles, passages = [], [], []
            if keys:
                self._put((keys, self._encoded(titles, passages, view)))
        except BaseException as error:  # noqa: BLE001 -- handed to the build's thread, which raises it
            self._put(error)

    def _encoded(self, titles: list[str], passages: list[list[str]], view: SimpleNamespace) -> np.ndarray:
        texts = bi_encoder_inputs_of(titles, passages, view, self.embed_titles)
        return encode_texts(self.model, texts, batch_size=self.batch_size)

    def _put(self, item: object) -> None:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def _next_block(self) -> tuple[list[Key], np.ndarray]:
        if self._leftover is not None:
            block, self._leftover = self._leftover, None
            return block
        while True:
            try:
                item = self._queue.get(timeout=1.0)
                break
            except queue.Empty:
                if not self._thread.is_alive() and self._queue.empty():
                    raise RuntimeError("The embedding thread stopped before the plan's last passage.") from None
        if isinstance(item, BaseException):
            raise item
        return item

    def take(self, docs: Sequence[Document], spans: Sequence[Sequence[PassageSpan]],
             progress: ProgressCallback | None = None) -> np.ndarray:
        """The vectors of `docs`' passages (`spans`), which must be the plan's next ones."""
        wanted = [(doc.doc_id, s.start_char, s.end_char) for doc, doc_spans in zip(docs, spans, strict=True)
                  for s in doc_spans]
        parts: list[np.ndarray] = []
        have = 0
        while have < len(wanted):
            keys, vectors = self._next_block()
            room = len(wanted) - have
            if len(keys) > room:
                self._leftover = (keys[room:], vectors[room:])
                keys, vectors = keys[:room], vectors[:room]
            if keys != wanted[have:have + len(keys)]:
                raise RuntimeError(
                    "The build asked for passages other than the next ones of its plan; another build may have "
                    "written the index between commits. The commits so far are kept: run the same command again "
                    "to resume.")
            parts.append(vectors)
            have += len(keys)
            if progress is not None:
                progress(have, len(wanted))
        if not parts:
            return np.empty((0, embedding_dimension(self.model)), dtype=np.float32)
        return np.concatenate(parts)

    def close(self) -> None:
        """Stop the thread (it finishes the block in hand); safe to call twice."""
        self._stop.set()
        while not self._queue.empty():
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join(timeout=30)
