"""Building an index with the local bi-encoder: how passages are cut and embedded.

    documents = read_source(config, report)                   # build_loop.py (readers.py)
    commit_in_chunks(config, ..., ModelEmbedder(model, ...))  # build_loop.py: plan, chunk, commit
        -> embedder.passages(doc)   split_into_sections, the index's chunking settings
        -> embedder.embed(...)      the model (or Ray) reads passage_text(title, passage)

A build with nothing to embed (an unchanged source, or removals only) first runs the same loop
with `NoModelEmbedder`, which gives up as soon as anything needs the model, so it never
imports torch. `indexer.build.repair.repair_index` rebuilds an index's derived files from its SQL rows.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import functools
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from indexer.build.background_embed import BackgroundStream
from indexer.build.config import DEFAULT_OVERLAP_TOKENS, IndexConfig
from indexer.build.loop import (
    Embedder,
    commit_in_chunks,
    estimated_passages,
    interrupted_before_writing,
    read_source,
)
from indexer.build.report import BuildReport, ProgressCallback
from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.encoding import FP32, choose_encoding
from indexer.layout import IndexLayout
from indexer.model_spec import ModelSpec
from indexer.sources import workers
from indexer.sources.chunking import left_out, short_tail_tokens, split_into_sections
from indexer.sources.documents import Document, PassageSpan
from indexer.sources.passage_text import (  # noqa: F401  embedded_title: imported from here by tests and benches
    bi_encoder_inputs,
    bi_encoder_inputs_of,
    embedded_title,
    title_token_budget,
)
from indexer.store.bm25_store import TokenizedTexts, tokenized_passages
from indexer.store.plan import Plan
from indexer.store.records import BuildMeta, IndexInfo
from indexer.store.transaction import WriteTransaction

logger = logging.getLogger(__name__)

# The embedding bar moves about this often; its first step is small, then sized by the rate.
PROGRESS_SECONDS = 2.0
FIRST_PROGRESS_STEP = 8
MAX_PROGRESS_STEP = 4096
# The first commit of a new index's first build holds this many passages, each next one twice as
# many (see `build_loop.next_commit_size`): a search sees the first documents within seconds. A
# build into an index that already answers starts at `commit_passages`: fewer commits, fewer segments.
FIRST_COMMIT_PASSAGES = 16
# How long the build's first total of passages waits for the count (`PassageCutter.count_all`)
# on a CPU: a source counted by then shows its exact total from the start; a larger one, an
# estimate until it is counted, then the count. On a GPU the build does not wait (`count_wait`).
COUNT_WAIT_SECONDS = 2.0
# Documents cut before the build starts, spread over its plan, for the estimate until the count
# is done: about 0.2 s of tokenizing, against minutes of embedding.
ESTIMATE_SAMPLE = 200
# A commit's passages whose BM25 tokens the workers did not make (cut by the build first) are
# tokenized in the build's thread up to this many; past it, the merge tokenizes them in the
# workers, as it does every passage in a build without them (`PassageCutter.bm25_tokens`).
LOCAL_BM25_PASSAGES = 2048


@dataclass(frozen=True)
class Chunking:
    """How a build cuts and embeds passages: what the index records as its settings."""

    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool


def chunking_for(config: IndexConfig, model, info: IndexInfo | None) -> Chunking:
    """The build's chunking: each setting as `config` gives it, else the index's (`info`), else
    the default; `passage_tokens` fitted so that [CLS] + title prefix + passage + [SEP] fit
    the model. A setting that differs from the index's is refused later, by
    `WriteTransaction.check_compatible`, naming --rebuild."""
    embed_titles = config.embed_titles if config.embed_titles is not None else (
        info.embed_titles if info is not None else True)
    overlap = config.overlap_tokens if config.overlap_tokens is not None else (
        info.overlap_tokens if info is not None else DEFAULT_OVERLAP_TOKENS)
    wanted = config.passage_tokens if config.passage_tokens is not None else (
        info.passage_tokens if info is not None else None)
    model_max = int(model.max_seq_length)
    room = model_max - 2 - (title_token_budget(model_max) + 1 if embed_titles else 0)
    if wanted is None:
        budget = room
    elif wanted > room:
        raise ValueError(
            f"passage_tokens ({wanted}) does not fit the model's max sequence "
            f"length ({model_max}) with its special and title tokens; use at most {room}."
        )
    else:
        budget = wanted
    if overlap >= budget:
        raise ValueError(
            f"overlap_tokens ({overlap}) must be smaller than the passage length "
            f"({budget} tokens); lower --overlap."
        )
    return Chunking(budget, overlap, embed_titles)


def encoding_for(config: IndexConfig, info: IndexInfo | None) -> str:
    """The build's encoding: as `config` gives it, else the index's, else `choose_encoding` (by the
    CPU). One that differs from the index's is refused later, by `WriteTransaction.check_compatible`."""
    if config.encoding is not None:
        return config.encoding
    if info is not None:
        return info.vector_encoding
    # On Ray, the workers' CPUs (or GPUs) are not this machine's: fp32 computes the same everywhere.
    return FP32 if config.ray is not None else choose_encoding()


def embedding_inputs(
    documents: Sequence[Document], spans: Sequence[Sequence[PassageSpan]], model, embed_titles: bool
) -> list[str]:
    """What the bi-encoder reads for every passage, in order: `passage_text(title, passage)`."""
    return bi_encoder_inputs_of([doc.title for doc in documents],
                                [[doc.text[s.start_char : s.end_char] for s in doc_spans]
                                 for doc, doc_spans in zip(documents, spans, strict=True)], model, embed_titles)


def embed(
    model, texts: list[str], batch_size: int, show_progress: bool, progress: ProgressCallback | None
) -> np.ndarray:
    """Unit vectors for `texts`, with a tqdm bar in passages and an optional callback.

    Progress is reported about every `PROGRESS_SECONDS`: on a CPU the texts are fed longest
    first (as `encode_texts` orders them) in steps sized by the rate measured so far, so a slow
    CPU at 5 passages/s still moves the bar every few seconds; on an accelerator they go to
    `encode_texts` in one call, which reports every 512 passages (each step's call had started
    its tokenizer pipeline again, from a first step of 8 at every commit).
    """
    n = len(texts)
    bar = tqdm(total=n, unit="passage", desc="embedding",
               disable=not show_progress or not texts, dynamic_ncols=True)
    if on_accelerator(model):  # one call, its own progress every 512 passages: no restart per step
        def moved(done: int, total: int) -> None:
            bar.n = done
            bar.refresh()
            if progress is not None:
                progress(done, total)
        try:
            return encode_texts(model, texts, batch_size=batch_size, progress=moved)
        finally:
            bar.close()
    out = np.empty((n, embedding_dimension(model)), dtype=np.float32)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    done, step = 0, min(batch_size, FIRST_PROGRESS_STEP)
    try:
        while done < n:
            idx = order[done : done + step]
            began = time.perf_counter()
            out[idx] = encode_texts(model, [texts[i] for i in idx], batch_size=batch_size)
            rate = len(idx) / max(time.perf_counter() - began, 1e-3)
            done += len(idx)
            bar.update(len(idx))
            if progress is not None:
                progress(done, n)
            step = int(min(max(rate * PROGRESS_SECONDS, 1), MAX_PROGRESS_STEP))
    finally:
        bar.close()
    return out


class PassageCutter:
    """Cuts documents into passages when first asked, and remembers them for the build.

    The build loop asks only for the documents a commit looks at (see `next_chunk`), so the
    first commit of a large build lands without cutting the whole source first. Meanwhile
    `count_all` cuts the rest in a thread with a tokenizer of its own (a tokenizer is not safe
    across threads), so the build's total of passages is counted rather than estimated: the
    estimate from the documents cut so far moved (3,008 -> 4,081 -> 3,225) during one build.
    Counting costs little beside embedding (about 1,500 passages/s against 15 on 2 cores).
    """

    def __init__(self, tokenizer, passage_tokens: int, overlap_tokens: int, min_tail_tokens: int = 0) -> None:
        self.tokenizer = tokenizer
        self.passage_tokens = passage_tokens
        self.overlap_tokens = overlap_tokens
        self.min_tail_tokens = min_tail_tokens
        self.cut: dict[str, list[PassageSpan]] = {}  # by doc id; the counting thread adds with setdefault
        # By doc id: its passages' BM25 tokens, rows [lo, hi) of a block a worker made (`cut_task`)
        self.tokens: dict[str, tuple[TokenizedTexts, int, int]] = {}
        self.handed: set[str] = set()  # documents whose tokens a commit took (`bm25_tokens`)
        self.warned: set[str] = set()
        self.warnings: list[str] = []  # stretches left out of passages, one line each
        self.counting: threading.Thread | None = None
        self.sample: set[str] = set()  # documents cut first, spread over the plan, for the estimate
        self._stop = threading.Event()

    def split(self, doc: Document, tokenizer) -> list[PassageSpan]:
        """`doc`'s passages, cut with `tokenizer` (each thread passes its own)."""
        return split_into_sections(doc.text, [h.start for h in doc.outline.headings], tokenizer,
                                   self.passage_tokens, self.overlap_tokens, self.min_tail_tokens)

    def __call__(self, doc: Document) -> list[PassageSpan]:
        spans = self.cut.get(doc.doc_id)
        if spans is None:
            spans = self.cut.setdefault(doc.doc_id, self.split(doc, self.tokenizer))
        if doc.doc_id not in self.warned:  # warned here, in the build's thread, once a document
            self.warned.add(doc.doc_id)
            for start, end in left_out(doc.text, spans):
                self.warnings.append(
                    f"{doc.location}: characters {start:,}-{end:,} ({end - start:,} characters "
                    "without a space, such as base64 or a minified line) are kept in the stored "
                    "text but left out of its passages: the model could only read them as one "
                    "unknown word")
        return spans

    def cut_sample(self, docs: Sequence[Document], size: int = ESTIMATE_SAMPLE) -> None:
        """Cut up to `size` of `docs`, evenly spaced, now: the passages per character of the whole
        plan until the count is done (a source's first documents may be shorter or longer)."""
        step = max(1, len(docs) // size)
        for doc in docs[::step]:
            self(doc)
            self.sample.add(doc.doc_id)

    def count_all(self, docs: Sequence[Document]) -> None:
        """Cut `docs` in a background thread, so that `cut` soon holds every one of them: in the
        worker processes where the machine has cores to spare (`indexer.sources.workers`), else in
        the thread itself."""
        pool, as_json = workers.shared_pool(), workers.tokenizer_json(self.tokenizer)
        if pool is not None and as_json is not None:
            target = functools.partial(self._count_in_workers, pool, as_json, docs)
        else:
            target = functools.partial(self._count_here, copy.deepcopy(self.tokenizer), docs)
        self.counting = threading.Thread(target=target, name="semsearch-count-passages", daemon=True)
        self.counting.start()

    def _count_here(self, tokenizer, docs: Sequence[Document]) -> None:
        for doc in docs:
            if self._stop.is_set():
                return
            if doc.doc_id not in self.cut:
                self.cut.setdefault(doc.doc_id, self.split(doc, tokenizer))

    def _count_in_workers(self, pool, as_json: str, docs: Sequence[Document]) -> None:
        """Cut `docs` in `pool`, a few tasks ahead at most, in order, each into `cut` as it comes
        (a document the build cut first keeps its own spans: both are the same). If the pool
        breaks (a worker killed), the thread cuts the rest itself."""
        pending: collections.deque = collections.deque()
        step, ahead = workers.CUT_TASK_DOCUMENTS, 2 * workers.worker_count()
        try:
            for start in range(0, len(docs), step):
                if self._stop.is_set():
                    return
                # Documents the build cut already are cut again, their BM25 tokens with the rest,
                # unless a commit has taken them (cut and tokenized in the build's thread).
                part = [d for d in docs[start:start + step] if d.doc_id not in self.tokens and d.doc_id not in self.handed]
                if part:
                    pending.append((part, workers.submit(pool, workers.cut_task, as_json, self.passage_tokens,
                                                         self.overlap_tokens, self.min_tail_tokens, part,
                                                         tokenized_passages)))
                while len(pending) > ahead or (pending and start + step >= len(docs)):
                    part, future = pending.popleft()
                    self._store_cut(part, future.result())
                    if self._stop.is_set():
                        return
        except BrokenProcessPool:
            workers.discard(pool)
            self._count_here(copy.deepcopy(self.tokenizer), docs)

    def _store_cut(self, docs: list[Document],
                   done: tuple[list[tuple[str, list[tuple[int, int, int]], bytes]], TokenizedTexts | None]) -> None:
        cut, tokens = done
        row = 0
        for doc, (doc_id, spans, digest) in zip(docs, cut, strict=True):
            doc.keep_content_digest(digest)
            self.cut.setdefault(doc_id, [PassageSpan(*span) for span in spans])
            if tokens is not None and doc_id not in self.handed:  # else its commit has come
                self.tokens[doc_id] = (tokens, row, row + len(spans))
            row += len(spans)

    def bm25_tokens(self, docs: Sequence[Document]) -> list[TokenizedTexts] | None:
        """The BM25 tokens of `docs`' passages, in order, as blocks (each document's passages once
        cut): the workers' where they made them, the rest tokenized here; None when more than
        `LOCAL_BM25_PASSAGES` would be (the merge then tokenizes them in the workers). A
        document's tokens are asked for once (by its commit), then let go, and the workers are
        not asked to cut it again."""
        where = [self.tokens.pop(doc.doc_id, None) for doc in docs]
        self.handed.update(doc.doc_id for doc in docs)
        if sum(len(self.cut[doc.doc_id]) for doc, at in zip(docs, where, strict=True) if at is None) > LOCAL_BM25_PASSAGES:
            return None
        blocks: list[TokenizedTexts] = []
        run: list[tuple[str, str]] = []  # passages of documents without tokens, tokenized together
        block, lo, hi = None, 0, 0
        for doc, at in zip(docs, where, strict=True):
            if at is not None and not run and block is at[0] and at[1] == hi:
                hi = at[2]  # the next rows of the same block
                continue
            if block is not None:
                blocks.append(block.rows(lo, hi))
                block = None
            if at is None:
                run += [(doc.title, doc.text[s.start_char:s.end_char]) for s in self.cut[doc.doc_id]]
                continue
            if run:
                blocks.append(tokenized_passages(run))
                run = []
            block, lo, hi = at
        if block is not None:
            blocks.append(block.rows(lo, hi))
        if run:
            blocks.append(tokenized_passages(run))
        return blocks

    def wait_counted(self, seconds: float) -> None:
        if self.counting is not None:
            self.counting.join(timeout=seconds)

    def stop(self) -> None:
        self._stop.set()

    def restart(self) -> None:
        """Forget every document cut so far (a new window of the source begins)."""
        self.stop()
        if self.counting is not None:
            self.counting.join()
        self.counting = None
        self._stop = threading.Event()
        self.cut, self.sample, self.warned, self.tokens, self.handed = {}, set(), set(), {}, set()


# Devices on which a build embeds in a thread ahead of its commits (`background_embed.py`): none.
# On a CPU the model already uses every core and the commits' share of the time is small; on an
# H100 the embedding thread and the commits contend for one interpreter lock, and embedding each
# chunk before its commit was faster in each of three runs on 2026-11-27 (1,915 / 2,411 / 2,124
# passages/s against 1,888 / 1,995 / 1,967 ahead; BENCHMARKS.md, bench_gpu-encode), so the thread
# waits until the commits hold the lock less. bench/bench_gpu.py measures both.
EMBED_AHEAD_DEVICES: frozenset[str] = frozenset()


def count_wait(model) -> float:
    """Seconds the first total waits for the count: `COUNT_WAIT_SECONDS` where the model runs on
    the CPU, whose build takes minutes; none on an accelerator, where a build of 31k passages
    takes about 15 s (BENCHMARKS.md, bench_gpu-encode) and the wait could hold the build's thread
    idle for 2 of them: there the total is the sample's estimate until the count lands."""
    return 0.0 if on_accelerator(model) else COUNT_WAIT_SECONDS


def on_accelerator(model) -> bool:
    """Whether the model runs on something other than the CPU (a GPU)."""
    return getattr(getattr(model, "device", None), "type", "cpu") != "cpu"


def embeds_ahead(model) -> bool:
    return getattr(getattr(model, "device", None), "type", None) in EMBED_AHEAD_DEVICES


class ModelEmbedder(Embedder):
    """The local bi-encoder as the build loop's `Embedder` (on Ray with `config.ray`).

    Its chunking settings are the index's where the build leaves them out (`chunking_for`,
    settled in the first commit); it cuts each document when the loop first asks, so the
    first commit of a large build lands without cutting the whole source first.
    """

    unit = "passage"
    first_commit = FIRST_COMMIT_PASSAGES

    def __init__(self, spec: ModelSpec, model, config: IndexConfig) -> None:
        self.spec, self.model, self.config = spec, model, config
        self.cutter: PassageCutter | None = None
        self.estimated = False  # the first estimate waits for the count
        self.embed_titles = True
        self.ray_stream = None  # with --ray: one Ray pipeline over the whole plan (ray_embed.py)
        self.ahead: BackgroundStream | None = None  # on a GPU: a thread embeds ahead of the commits
        self.encoding = FP32  # settled in the first commit
        self.warnings: list[str] = []

    def settle(self, tx: WriteTransaction, meta: BuildMeta) -> BuildMeta:
        if self.cutter is not None:
            return meta
        self.encoding = encoding = encoding_for(self.config, tx.info)
        if encoding != FP32:  # the model, loaded in fp32 before the transaction, runs as the index's
            self.model = load_bi_encoder(self.spec, encoding=encoding)
        chunking = chunking_for(self.config, self.model, tx.info)
        self.cutter = PassageCutter(self.model.tokenizer, chunking.passage_tokens, chunking.overlap_tokens,
                                    short_tail_tokens(chunking.passage_tokens, self.config.merge_short_tails))
        self.warnings = self.cutter.warnings
        self.embed_titles = chunking.embed_titles
        return dataclasses.replace(meta, passage_tokens=chunking.passage_tokens, overlap_tokens=chunking.overlap_tokens,
                                   embed_titles=chunking.embed_titles, encoding=encoding)

    def passages(self, doc: Document) -> list[PassageSpan]:
        assert self.cutter is not None, "settle() comes first"
        return self.cutter(doc)

    def estimate(self, to_embed: Sequence[Document]) -> int:
        assert self.cutter is not None, "settle() comes first"
        if not self.estimated:
            self.estimated = True
            self.cutter.wait_counted(count_wait(self.model))
        return estimated_passages(to_embed, self.cutter.cut, self.cutter.sample)

    def bm25_tokens(self, docs: Sequence[Document]) -> list[TokenizedTexts] | None:
        return None if self.cutter is None or not self.cutter.tokens else self.cutter.bm25_tokens(docs)

    def inputs(self, docs: Sequence[Document], spans: Sequence[Sequence[PassageSpan]]) -> list[str]:
        return embedding_inputs(docs, spans, self.model, self.embed_titles)

    def begin(self, to_embed: Sequence[Document]) -> None:
        """Start on a window's plan: the previous window's passages are forgotten."""
        if self.config.ray is None:
            assert self.cutter is not None, "settle() comes first"
            self.cutter.restart()
            self.estimated = False
            self.cutter.cut_sample(to_embed)
            self.cutter.count_all(to_embed)
            if self.ahead is not None:
                self.ahead.close()
                self.ahead = None
            if embeds_ahead(self.model):
                self.ahead = BackgroundStream(self.model, to_embed, self.cutter.split, self.cutter.cut,
                                              self.embed_titles, self.config.batch_size)
            return
        from indexer.build.ray_embed import RayStream

        if self.ray_stream is not None:
            self.ray_stream.close()
        self.ray_stream = RayStream(self.config.ray, self.spec, self.inputs(to_embed, [self.passages(d) for d in to_embed]),
                                    self.encoding)

    def embed(self, docs: Sequence[Document], spans: Sequence[Sequence[PassageSpan]],
              step: ProgressCallback) -> np.ndarray:
        if self.ahead is not None:
            return self.ahead.take(docs, spans, step)
        texts = self.inputs(docs, spans)
        run = self.ray_stream if self.ray_stream is not None else embed
        return run(self.model, texts, self.config.batch_size, False, step)

    def close(self) -> None:
        if self.cutter is not None:
            self.cutter.stop()
        if self.ahead is not None:
            self.ahead.close()
        if self.ray_stream is not None:
            self.ray_stream.close()


class NeedsModel(Exception):
    """Raised inside a build's transaction (rolling it back) when it must load the bi-encoder."""


class NoModelEmbedder(Embedder):
    """An `Embedder` that refuses to embed: a build with nothing to embed commits through it
    without loading the model (whose import and load cost seconds).

    It settles on the index's own settings, and gives up (`NeedsModel`, nothing committed) on a
    first build, another model or changed model files, other chunking settings, or anything to
    embed; the build then runs again with the model, which checks and says what differs.
    """

    unit = "passage"
    first_commit = None

    def __init__(self, spec: ModelSpec, config: IndexConfig) -> None:
        self.spec, self.config = spec, config
        self.warnings: list[str] = []

    def settle(self, tx: WriteTransaction, meta: BuildMeta) -> BuildMeta:
        info, config = tx.info, self.config
        if (info is None
                or (info.model, info.model_fingerprint) != (self.spec.id, self.spec.fingerprint())
                or config.overlap_tokens not in (None, info.overlap_tokens)
                or config.embed_titles not in (None, info.embed_titles)
                or config.passage_tokens not in (None, info.passage_tokens)
                or config.encoding not in (None, info.vector_encoding)):
            raise NeedsModel
        return dataclasses.replace(meta, dimension=info.dimension, passage_tokens=info.passage_tokens,
                                   overlap_tokens=info.overlap_tokens, embed_titles=info.embed_titles,
                                   encoding=info.vector_encoding)

    def check(self, changes: Plan) -> None:
        if changes.to_embed:
            raise NeedsModel

    def passages(self, doc: Document) -> list[PassageSpan]:
        raise NeedsModel

    def estimate(self, to_embed: Sequence[Document]) -> int:
        return 0

    def embed(self, docs, spans, step) -> np.ndarray:
        raise NeedsModel


def build_index(config: IndexConfig, progress: ProgressCallback | None = None) -> BuildReport:
    """Bring the index in `config.index_dir` in line with `config.source`; return what changed.

    The source is read before the index folder is touched, so a missing or empty source
    fails harmlessly. The changes commit in chunks (`build_loop`), each one atomic; Ctrl-C
    raises `BuildInterrupted`, whose message says what was committed and how to resume.
    """
    if config.embeddings is not None:  # vectors computed elsewhere: nothing to embed here
        from indexer.build.ingest import ingest_embeddings

        return ingest_embeddings(config, config.embeddings, config.normalize_embeddings, progress)
    started = time.perf_counter()
    spec = ModelSpec.resolve(config.model)
    report = BuildReport(index_dir=config.index_dir, model=spec.id)
    try:
        documents = read_source(config, report)
        report.read_seconds = time.perf_counter() - started
        meta = BuildMeta(spec, 0, 0, 0, False, started, config.vector_index, config.segments,
                         shards=config.shards)
        if not config.rebuild and IndexLayout(config.index_dir).manifest.is_file():
            try:  # nothing to embed: commit without the model
                return commit_in_chunks(config, report, started, documents, NoModelEmbedder(spec, config),
                                        meta, progress)
            except NeedsModel:
                pass
        loading = time.perf_counter()
        model = load_bi_encoder(spec)
        report.model_seconds = time.perf_counter() - loading
        chunking = chunking_for(config, model, None)  # explicit settings checked before mkdir
        meta = BuildMeta(spec, embedding_dimension(model), chunking.passage_tokens,
                         chunking.overlap_tokens, chunking.embed_titles, started,
                         config.vector_index, config.segments, shards=config.shards)
    except KeyboardInterrupt:
        raise interrupted_before_writing(config) from None
    return commit_in_chunks(config, report, started, documents, ModelEmbedder(spec, model, config), meta,
                            progress)
