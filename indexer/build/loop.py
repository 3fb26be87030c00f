"""The one build loop: read -> plan -> chunk -> embed -> commit, chunk by chunk.

    documents = read_source(config, report)                # a SourceStream: windows of the source
    commit_in_chunks(config, report, started, embedder)   # opens the index, says how to resume
        for each window, each commit in one `index.transaction()`:
            meta = embedder.settle(tx, meta)            # the index's settings, checked
            changes = plan_commit(tx, ...)              # plan.py, pure
            chunk = next_chunk(changes, embedder.passages, size)
            vectors = embedder.embed(chunk documents, their passages)
            tx.commit(chunk, ..., vectors, meta)

How passages and vectors are made is the `Embedder`'s: the local model (`build.ModelEmbedder`,
on Ray with `--ray`), a table of precomputed vectors (`ingest.TableEmbedder`), or one that
refuses to embed (`build.NoModelEmbedder`), so that a build with nothing to embed never loads
the model. Every commit takes the next chunk of a plan made against what is stored (once a
window, and again after another writer's commit), so an interrupted build, run again, resumes
after its last commit. A source larger than one window (`source_stream.py`) is planned window by
window; what no window held is removed at the end.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from tqdm.auto import tqdm

from indexer.build.config import DEFAULT_COMMIT_PASSAGES, IndexConfig
from indexer.build.report import BuildReport, ProgressCallback
from indexer.build.source_stream import MAX_ISSUES_SHOWN, SourceStream, log_skipped
from indexer.errors import BuildInterrupted
from indexer.index import Index
from indexer.sources.documents import Document, InputIssue, PassageSpan
from indexer.store.bm25_store import TokenizedTexts
from indexer.store.plan import Plan, Skipped, after_commit, plan
from indexer.store.records import BuildMeta
from indexer.store.transaction import WriteTransaction

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    """How a build turns the documents it adds or changes into passages and vectors.

    The loop calls `settle` at the start of every commit (the build's settings against the
    index's, in `tx`), `passages` for exactly the documents a commit looks at, `begin` once
    with the first plan's documents, and `embed` with each chunk's documents and passages,
    which must return one unit vector per passage, in order. An implementation subclasses it
    to take the defaults: nothing to check, nothing to begin, nothing to close.
    """

    unit: str  # what the progress bar counts: "passage" or "doc"
    embeds: bool = True  # False: the vectors come precomputed (`BuildReport.passages_embedded` stays 0)
    first_commit: int | None  # passages in a new index's first commit; None: the commit cap (`commit_cap`)
    warnings: list[str]  # said by `passages`, moved into the report after each chunk

    def settle(self, tx: WriteTransaction, meta: BuildMeta) -> BuildMeta: ...

    def check(self, changes: Plan) -> None:
        """Refuse (raise) a plan this embedder cannot serve; the default serves any."""

    def passages(self, doc: Document) -> list[PassageSpan]: ...

    def estimate(self, to_embed: Sequence[Document]) -> int:
        """Passages of `to_embed`, for the progress bar: counted where cut, else estimated."""
        ...

    def begin(self, to_embed: Sequence[Document]) -> None:
        """Prepare for the whole plan (the Ray stream starts here); the default does nothing."""

    def embed(self, docs: Sequence[Document], spans: Sequence[Sequence[PassageSpan]],
              step: ProgressCallback) -> np.ndarray: ...

    def bm25_tokens(self, docs: Sequence[Document]) -> Sequence[TokenizedTexts] | None:
        """The BM25 tokens of `docs`' passages (`WriteTransaction.commit`), when the embedder made
        them as it cut the passages; the default has none (the commit tokenizes the texts)."""
        return None

    def close(self) -> None:
        """Release what `begin` started; the default holds nothing."""


# A build left to size its own commits (`IndexConfig.commit_passages` None) lets one hold what it
# commits in this many seconds at its rate so far, when that is more than `DEFAULT_COMMIT_PASSAGES`:
# on a GPU 4,096 passages are a fraction of a second of embedding, and each commit rewrites the
# index's BM25 and vector files (a 31k-passage build made 14 commits); on a CPU, whose commits of
# 4,096 take minutes, nothing changes. An interruption loses at most one commit either way.
COMMIT_SECONDS = 10.0


def commit_cap(config: IndexConfig, committed: int, seconds: float) -> int:
    """The most passages the next commit holds while the index is small (`next_commit_size`):
    `config.commit_passages` when set, else `DEFAULT_COMMIT_PASSAGES` or, when more, the
    passages committed per second so far times `COMMIT_SECONDS`."""
    if config.commit_passages is not None:
        return config.commit_passages
    rate = committed / seconds if seconds > 0 else 0.0
    return max(DEFAULT_COMMIT_PASSAGES, int(rate * COMMIT_SECONDS))


# The longest a commit of a large index makes the build wait, at its rate so far: the work a Ctrl-C
# or a crash loses, and how long searches wait for new documents. Without it, a quarter of the
# index (`next_commit_size`) came to 24,050 passages at 120k, 6 minutes of embedding on a 2-core
# CPU, and would reach 137,000 (37 minutes) at 550k, in a build of /usr/share/doc.
MAX_COMMIT_SECONDS = 300.0


def commit_ceiling(config: IndexConfig, committed: int, seconds: float) -> int | None:
    """The most passages a commit holds however large the index: what the build commits in
    `MAX_COMMIT_SECONDS` at its rate so far (never under the cap, `next_commit_size`); None when
    `config.commit_passages` is set or nothing is committed yet."""
    if config.commit_passages is not None or committed <= 0 or seconds <= 0:
        return None
    return int(committed / seconds * MAX_COMMIT_SECONDS)


def next_commit_size(current: int, stored_passages: int, cap: int, ceiling: int | None = None) -> int:
    """Passages in the next commit: twice the last, up to `cap`, or up to a quarter of what the
    index already holds when that is more, but not past `ceiling` (unless `cap` is).

    A commit once rewrote the vector file and BM25 over all stored passages, so a fixed cap made
    a large build quadratic; commits that grow with the index keep the total rewrite cost within
    a few times one final write. Delta segments (`indexer.store.segments`) make most commits of a
    large index cost seconds, and the merges come with growth, not with commits, so `ceiling`
    keeps a slow embedder's commits minutes apart, while a fast one's still grow with the index.
    """
    grown = max(cap, stored_passages // 4)
    if ceiling is not None:
        grown = max(cap, min(grown, ceiling))
    return min(2 * current, grown)


def read_source(config: IndexConfig, report: BuildReport,
                transform: Callable[[Document], Document] | None = None) -> SourceStream:
    """The source's documents as a stream of windows (`SourceStream`): its first window read now,
    so that a source with nothing to index fails before the index is touched; skipped input goes
    into `report` (an error with --strict)."""
    return SourceStream(config, report, transform)


def plan_commit(tx: WriteTransaction, config: IndexConfig, documents: Sequence[Document], origin: str,
                report: BuildReport, whole: bool = True) -> Plan:
    """The plan of one commit: `documents` against what `tx` stores, keeping what the read skipped.
    A window of a larger source (`whole` False) is planned against its own ids only, without
    pruning: what no window holds is removed after the last one (`BuildLoop.remove_unseen`)."""
    prune = config.prune and whole
    stored = tx.stored_documents([d.doc_id for d in documents], origin if prune else None)
    return plan(stored, documents, origin, prune=prune, skipped=Skipped.of(report.issues))


def count_plan(report: BuildReport, changes: Plan) -> None:
    """A window's first plan's counts added to the report, and its warnings: moved ids, kept documents."""
    report.documents_added += len(changes.add)
    report.documents_updated += len(changes.change)
    report.documents_removed += len(changes.remove)
    report.documents_unchanged += len(changes.unchanged)
    for moved in changes.moved:
        logger.warning("%s", moved)
        report.warnings.append(str(moved))
    if changes.kept:
        shown = ", ".join(changes.kept[:MAX_ISSUES_SHOWN])
        more = f" and {len(changes.kept) - MAX_ISSUES_SHOWN} more" if len(changes.kept) > MAX_ISSUES_SHOWN else ""
        warning = (f"kept the stored version of {len(changes.kept)} document(s) whose input was "
                   f"skipped this time ({shown}{more}); fix the input named above and build again, "
                   "or delete it from the source to remove it from the index")
        logger.warning("%s", warning)
        report.warnings.append(warning)


def next_chunk(changes: Plan, passages_of: Callable[[Document], Sequence[PassageSpan]],
               passages: int) -> Plan:
    """The part of `changes` one commit takes: the removals, and the first documents to embed
    up to `passages` passages (at least one document).

    `passages_of` gives a document's passages (cutting it if needed); it is asked for exactly
    the documents this function looks at, so no caller has to guess ahead which documents
    those are.
    """
    take: set[str] = set()
    count = 0
    for doc in changes.to_embed:
        size = len(passages_of(doc))
        if take and count + size > passages:
            break
        take.add(doc.doc_id)
        count += size
    return Plan(
        add=[d for d in changes.add if d.doc_id in take],
        change=[d for d in changes.change if d.doc_id in take],
        remove=changes.remove,
        unchanged=changes.unchanged,
        moved=[m for m in changes.moved if m.doc_id in take],
        kept=changes.kept,
    )


def estimated_passages(to_embed: Sequence[Document], spans: Mapping[str, Sequence[PassageSpan]],
                       sample: Collection[str] = ()) -> int:
    """Passages of `to_embed`: counted where cut, else estimated from passages per character, over
    the `sample` of documents cut when given (spread over the whole plan, so the rate is not that of
    the first documents, which a source in order may not share), else over every one cut."""
    cut = [d for d in to_embed if d.doc_id in spans]
    counted = sum(len(spans[d.doc_id]) for d in cut)
    rest = sum(len(d.text) for d in to_embed if d.doc_id not in spans)
    basis = [d for d in cut if d.doc_id in sample] or cut
    chars = sum(len(d.text) for d in basis)
    per_char = sum(len(spans[d.doc_id]) for d in basis) / chars if chars else 0.0
    return counted + round(rest * per_char)


def nothing_to_embed(doc: Document) -> InputIssue:
    return InputIssue(doc.source, doc.line, "nothing the model can read (the tokenizer drops every "
                      "character: invisible, control or private-use ones); give it visible text",
                      doc_id=doc.doc_id)


def commit_in_chunks(config: IndexConfig, report: BuildReport, started: float, documents: SourceStream,
                     embedder: Embedder, meta: BuildMeta,
                     progress: ProgressCallback | None = None) -> BuildReport:
    """Open (or create) the index and commit the build chunk by chunk: Ctrl-C says what was
    committed and how to resume; `report` gets the total time."""
    index = Index.create(config.index_dir, config.db_url)
    try:
        BuildLoop(config, index, documents, str(config.source.resolve()), embedder, meta, report,
                  progress).run()
    except KeyboardInterrupt:
        raise BuildInterrupted(interrupted_message(config, report)) from None
    finally:
        index.close()
        embedder.close()
    report.seconds = time.perf_counter() - started
    logger.debug("build finished: %s", report.summary())
    return report


class BuildLoop:
    """One build's commits, each one `index.transaction()`, window by window (`SourceStream`) until
    the plan of each is done; then, for a source read in several windows, the removals.

    A document the embedder cuts into no passage is reported as skipped input when its chunk
    comes: it is not stored, and a stored version of it is kept (`plan.Skipped`).
    """

    def __init__(self, config: IndexConfig, index: Index, stream: SourceStream, origin: str,
                 embedder: Embedder, meta: BuildMeta, report: BuildReport,
                 progress: ProgressCallback | None) -> None:
        self.config, self.index, self.stream, self.origin = config, index, stream, origin
        self.embedder, self.meta, self.report, self.progress = embedder, meta, report, progress
        self.documents: list[Document] = []  # the window being built
        self.bar: tqdm | None = None
        self.total = self.offset = 0
        self.rebuild, self.first = config.rebuild, True  # the build's first commit is still to come
        self.began = time.perf_counter()
        cap = self.cap()
        self.size = min(embedder.first_commit or cap, cap)
        self.held_lock = False
        # The window's plan after this build's last commit, and that commit's build id: the next
        # commit re-plans only when another writer committed meanwhile (`plan_next`).
        self.planned: tuple[Plan, str] | None = None
        self.skipped_empty = False
        self.said_kept = False  # `say_kept`

    def cap(self) -> int:
        return commit_cap(self.config, self.report.passages_committed, time.perf_counter() - self.began)

    def ceiling(self) -> int | None:
        return commit_ceiling(self.config, self.report.passages_committed, time.perf_counter() - self.began)

    def step(self, done: int, _chunk_total: int) -> None:
        """One bar and one callback over the whole build, not one per chunk."""
        if self.bar is not None:
            self.bar.n = self.offset + done
            self.bar.refresh()
        if self.progress is not None:
            self.progress(self.offset + done, max(self.total, self.offset + done))

    def run(self) -> None:
        try:
            for window in self.stream.windows():
                self.documents = window.documents
                self.run_window(window.whole)
            if not self.stream.whole and self.config.prune:
                self.remove_unseen()
        finally:
            if self.held_lock:  # a run that never got the lock (another build holds it) leaves that build's file
                self.index.layout.progress_file.unlink(missing_ok=True)
            if self.bar is not None:
                self.bar.close()

    def run_window(self, whole: bool) -> None:
        """Commit one window's plan, chunk by chunk: planned at its first commit, and again only
        after another writer's commit (`plan_next`)."""
        window_first = True
        self.planned = None
        while True:
            with self.index.transaction(rebuild=self.rebuild) as tx:
                self.held_lock = True
                self.meta = self.embedder.settle(tx, self.meta)
                tx.check_compatible(self.meta)  # before minutes of embedding, not after
                changes = self.plan_next(tx, whole)
                self.embedder.check(changes)
                if self.first and tx.info is not None:  # an index that answers already: no small first commit
                    self.size = self.cap()
                if self.first and tx.replaces is not None:
                    # A --rebuild of an index people search: one commit, so that until it lands
                    # they search the previous build whole, and a crash leaves that one served.
                    self.size = sys.maxsize
                taken, result, embedded = self.commit_one(tx, changes, self.size, window_first)
            self.planned = None if self.skipped_empty else (after_commit(changes, taken), result.build_id)
            self.report.passages_committed += embedded
            if self.embedder.embeds:
                self.report.passages_embedded += embedded
            self.report.documents_committed += len(taken.to_embed)
            self.report.add_commit(result)
            if self.progress is not None:
                self.progress(self.report.passages_committed, max(self.total, self.report.passages_committed))
            self.rebuild, self.first, window_first = False, False, False
            self.size = next_commit_size(self.size, result.passages, self.cap(), self.ceiling())
            window_done = len(taken.to_embed) == len(changes.to_embed)
            if not window_done or self.stream.documents_after():  # not the build's last commit,
                # even when a window went in whole (a 10M ingest's progress had stopped at window 1)
                write_progress(self.index.layout.progress_file, self.report.passages_committed,
                               max(self.total, self.report.passages_committed))
            if window_done:
                return

    def plan_next(self, tx: WriteTransaction, whole: bool) -> Plan:
        """This commit's plan: the window's, planned against what `tx` stores at the window's first
        commit (or after another writer's), else what is left of it after this build's last commit
        (`after_commit`): re-planning every commit read every document's stored row again (2 s of
        a 31k-passage build's 12 commits on this project's 2-core machine)."""
        if self.planned is not None and tx.info is not None and tx.info.build_id == self.planned[1]:
            return self.planned[0]
        return plan_commit(tx, self.config, self.documents, self.origin, self.report, whole)

    def remove_unseen(self) -> None:
        """After the last window of a source read in several: remove in one commit the stored
        documents of this source that no window held, keeping those whose input was skipped."""
        with self.index.transaction() as tx:
            self.meta = self.embedder.settle(tx, self.meta)
            stale: list[tuple[str, str]] = []
            for page in tx.documents_of_origin(self.origin):
                unseen = self.stream.unseen([key for key, _ in page])
                stale += [entry for entry, gone in zip(page, unseen.tolist(), strict=True) if gone]
            skipped = Skipped.of(self.report.issues)
            kept = sorted(key for key, source in stale if skipped.covers(key, source))
            changes = Plan(remove=sorted(key for key, source in stale if not skipped.covers(key, source)),
                           kept=kept)
            # Nothing to remove: no commit (an empty one would load and verify every file).
            result = tx.commit(changes, self.origin, [], np.empty((0, self.meta.dimension), np.float32),
                               self.meta) if changes.remove else None
        count_plan(self.report, changes)
        if result is not None:
            self.report.add_commit(result)

    def commit_one(self, tx: WriteTransaction, changes: Plan, size: int, window_first: bool):
        """Embed and commit the next chunk of `changes`: (what it took, the commit, its passages).
        `window_first`: the window's first commit, whose plan is the window's whole plan."""
        if window_first:
            self.embedder.begin(changes.to_embed)
        taken = next_chunk(changes, self.embedder.passages, size)
        empty = {doc.doc_id: doc for doc in taken.to_embed if not self.embedder.passages(doc)}
        chunk = taken if not empty else Plan(
            add=[d for d in taken.add if d.doc_id not in empty],
            change=[d for d in taken.change if d.doc_id not in empty],
            remove=taken.remove, unchanged=taken.unchanged, moved=taken.moved, kept=taken.kept)
        if window_first:
            count_plan(self.report, changes)
            self.say_kept(changes)
        self.skipped_empty = bool(empty)  # the next commit re-plans: these leave the window
        if empty:
            self.skip_empty(list(empty.values()), changes)
        rest = [d for d in changes.to_embed if d.doc_id not in empty]
        known = self.report.passages_committed + self.embedder.estimate(rest)  # this window and those before
        # Windows still to read: as many passages per document read as so far (new and changed
        # ones; unchanged documents count as none), so the total holds from the first window on.
        self.total = known + round(self.stream.documents_after() * known / max(self.stream.read, 1))
        if self.bar is None:
            self.bar = tqdm(total=self.total, unit=self.embedder.unit, desc="embedding", dynamic_ncols=True,
                            disable=not self.config.show_progress or not self.total)
        else:
            self.bar.total = self.total
        docs = chunk.to_embed
        spans = [self.embedder.passages(d) for d in docs]
        for warning in self.embedder.warnings:
            logger.warning("%s", warning)
        self.report.warnings.extend(self.embedder.warnings)
        self.embedder.warnings.clear()
        self.offset = self.report.passages_committed
        embedding = time.perf_counter()
        vectors = self.embedder.embed(docs, spans, self.step) if docs else \
            np.empty((0, self.meta.dimension), np.float32)
        self.report.embed_seconds += time.perf_counter() - embedding
        tokens = self.embedder.bm25_tokens(docs) if docs else None
        return taken, tx.commit(chunk, self.origin, spans, vectors, self.meta, tokens), sum(map(len, spans))

    def say_kept(self, changes: Plan) -> None:
        """Say once, when a build first finds documents the index holds already and unchanged, that
        they are kept without embedding: a build run again after Ctrl-C or a crash resumes, and its
        bar counts only what is left, which otherwise read as starting over."""
        if self.said_kept or not changes.unchanged:
            return
        self.said_kept = True
        todo = ", ".join(f"{n:,} {what}" for n, what in ((len(changes.add), "new"), (len(changes.change), "changed"),
                                                         (len(changes.remove), "removed")) if n)
        logger.info("%s documents already in %s are unchanged: kept, not embedded again; %s%s",
                    f"{len(changes.unchanged):,}", self.config.index_dir,
                    f"to do: {todo}" if todo else "nothing else to do",
                    "" if self.stream.whole else " (in the part of the source read so far)")

    def skip_empty(self, empty: list[Document], changes: Plan) -> None:
        """Documents with no passage: skipped input, out of the counts and of later plans."""
        added = {doc.doc_id for doc in changes.add}
        for doc in empty:
            issue = nothing_to_embed(doc)
            log_skipped(self.report, issue)
            self.report.issues.append(issue)
            if doc.doc_id in added:
                self.report.documents_added -= 1
            else:
                self.report.documents_updated -= 1
        gone = {doc.doc_id for doc in empty}
        self.documents = [doc for doc in self.documents if doc.doc_id not in gone]


def write_progress(path: Path, done: int, total: int) -> None:
    """Say how far a build that commits in chunks has got, for readers of the index meanwhile
    (`Index.build_progress`): passages committed of those it will commit. Written after each
    commit but the build's last, windows' last commits included (atomically: a temp file
    renamed), removed when the build ends."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"done": done, "total": total, "pid": os.getpid()}))
    os.replace(tmp, path)


def interrupted_before_writing(config: IndexConfig) -> BuildInterrupted:
    return BuildInterrupted(f"Interrupted before anything was written to {config.index_dir}; run the "
                            "same command again to build it.")


def interrupted_message(config: IndexConfig, report: BuildReport) -> str:
    if not report.commits:
        done = f"nothing new was committed to {config.index_dir}; it is as it was before"
    else:
        done = (f"{report.documents_committed:,} documents ({report.passages_committed:,} passages) of "
                f"this build are committed to {config.index_dir}, which now holds "
                f"{report.total_documents:,} documents and can be searched")
    return f"Interrupted: {done}. Run the same command again to resume where it stopped."
