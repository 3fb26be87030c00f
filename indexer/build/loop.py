"""The one build loop: read -> plan -> chunk -> embed -> commit, chunk by chunk.

    documents = read_source(config, report)
    commit_in_chunks(config, report, started, embedder)   # opens the index, says how to resume
        each commit, in one `index.transaction()`:
            meta = embedder.settle(tx, meta)            # the index's settings, checked
            changes = plan_commit(tx, ...)              # plan.py, pure
            chunk = next_chunk(changes, embedder.passages, size)
            vectors = embedder.embed(chunk documents, their passages)
            tx.commit(chunk, ..., vectors, meta)

How passages and vectors are made is the `Embedder`'s: the local model (`build.ModelEmbedder`,
on Ray with `--ray`), a table of precomputed vectors (`ingest.TableEmbedder`), or one that
refuses to embed (`build.NoModelEmbedder`), so that a build with nothing to embed never loads
the model. Every commit re-plans against what is stored and takes the next chunk of that plan,
so an interrupted build, run again, resumes after its last commit.
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

from indexer.build.config import IndexConfig
from indexer.build.report import BuildReport, ProgressCallback
from indexer.errors import BadInputError, BuildInterrupted
from indexer.index import Index
from indexer.sources.documents import Document, InputIssue, PassageSpan
from indexer.sources.readers import read_documents
from indexer.store.plan import Plan, Skipped, plan
from indexer.store.records import BuildMeta
from indexer.store.transaction import WriteTransaction

logger = logging.getLogger(__name__)

# How many skipped inputs (or kept documents) a message names.
MAX_ISSUES_SHOWN = 5


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
    first_commit: int | None  # passages in a new index's first commit; None: config.commit_passages
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

    def close(self) -> None:
        """Release what `begin` started; the default holds nothing."""


def next_commit_size(current: int, stored_passages: int, cap: int) -> int:
    """Passages in the next commit: twice the last, up to `cap`, or up to a quarter of what the
    index already holds when that is more.

    Every commit rewrites the vector file and BM25 over all stored passages, so a fixed cap
    made a large build quadratic. Commits that grow with the index keep the total rewrite
    cost within a few times one final write, and an interruption still loses one commit.
    """
    return min(2 * current, max(cap, stored_passages // 4))


def read_source(config: IndexConfig, report: BuildReport) -> list[Document]:
    """The source's documents; skipped input goes into `report` (an error with --strict), and a
    source with nothing to index fails before the index is touched."""
    def on_issue(issue: InputIssue) -> None:
        if issue.partial:  # indexed, with a caveat (pages without text)
            if config.strict:
                raise BadInputError(f"{issue} (--strict turns these warnings into errors)")
            logger.warning("%s", issue)
            report.warnings.append(str(issue))
            return
        if not issue.retains_stored:  # left out on purpose (a second link to a file): a warning
            logger.warning("%s", issue)
            report.warnings.append(str(issue))
            return
        if config.strict:
            raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
        logger.warning("skipped %s%s", issue, f" ({issue.cli_hint})" if issue.cli_hint else "")
        report.issues.append(issue)

    documents = list(read_documents(
        config.source, on_issue=on_issue,
        csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
        max_document_chars=config.max_document_chars, exclude=config.index_dir))
    if not documents and not report.issues:
        raise BadInputError(
            f"No documents found in {config.source}. Supported inputs: a folder of text files "
            "(any name; gzip too), a .jsonl with a 'text' field, a .csv with a text column, or a "
            "BEIR folder."
        )
    if not documents:  # an index of nothing would only hide the problem
        shown = "; ".join(str(issue) for issue in report.issues[:MAX_ISSUES_SHOWN])
        more = len(report.issues) - MAX_ISSUES_SHOWN
        raise BadInputError(
            f"Nothing in {config.source} can be indexed, so nothing was written: "
            f"{shown}{f'; and {more} more' if more > 0 else ''}. Fix these and run the build again."
        )
    return documents


def plan_commit(tx: WriteTransaction, config: IndexConfig, documents: Sequence[Document], origin: str,
                report: BuildReport) -> Plan:
    """The plan of one commit: `documents` against what `tx` stores, keeping what the read skipped."""
    stored = tx.stored_documents([d.doc_id for d in documents], origin if config.prune else None)
    return plan(stored, documents, origin, prune=config.prune, skipped=Skipped.of(report.issues))


def count_plan(report: BuildReport, changes: Plan) -> None:
    """The first plan's counts into the report, and its warnings: moved ids, kept documents."""
    report.documents_added = len(changes.add)
    report.documents_updated = len(changes.change)
    report.documents_removed = len(changes.remove)
    report.documents_unchanged = len(changes.unchanged)
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


def commit_in_chunks(config: IndexConfig, report: BuildReport, started: float, documents: list[Document],
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
    """One build's commits, each one `index.transaction()`, until the plan is done.

    A document the embedder cuts into no passage is reported as skipped input when its chunk
    comes: it is not stored, and a stored version of it is kept (`plan.Skipped`).
    """

    def __init__(self, config: IndexConfig, index: Index, documents: list[Document], origin: str,
                 embedder: Embedder, meta: BuildMeta, report: BuildReport,
                 progress: ProgressCallback | None) -> None:
        self.config, self.index, self.documents, self.origin = config, index, documents, origin
        self.embedder, self.meta, self.report, self.progress = embedder, meta, report, progress
        self.bar: tqdm | None = None
        self.total = self.offset = 0

    def step(self, done: int, _chunk_total: int) -> None:
        """One bar and one callback over the whole build, not one per chunk."""
        if self.bar is not None:
            self.bar.n = self.offset + done
            self.bar.refresh()
        if self.progress is not None:
            self.progress(self.offset + done, max(self.total, self.offset + done))

    def run(self) -> None:
        config = self.config
        rebuild, first = config.rebuild, True
        size = min(self.embedder.first_commit or config.commit_passages, config.commit_passages)
        held_lock = False
        try:
            while True:
                with self.index.transaction(rebuild=rebuild) as tx:
                    held_lock = True
                    self.meta = self.embedder.settle(tx, self.meta)
                    tx.check_compatible(self.meta)  # before minutes of embedding, not after
                    changes = plan_commit(tx, config, self.documents, self.origin, self.report)
                    self.embedder.check(changes)
                    if first and tx.info is not None:  # an index that answers already: no small first commit
                        size = config.commit_passages
                    if first and tx.replaces is not None:
                        # A --rebuild of an index people search: one commit, so that until it lands
                        # they search the previous build whole, and a crash leaves that one served.
                        size = sys.maxsize
                    taken, result, embedded = self.commit_one(tx, changes, size, first)
                self.report.passages_committed += embedded
                if self.embedder.embeds:
                    self.report.passages_embedded += embedded
                self.report.documents_committed += len(taken.to_embed)
                self.report.add_commit(result)
                if self.progress is not None:
                    self.progress(self.report.passages_committed, max(self.total, self.report.passages_committed))
                if len(taken.to_embed) == len(changes.to_embed):
                    return
                write_progress(self.index.layout.progress_file, self.report.passages_committed,
                               max(self.total, self.report.passages_committed))
                rebuild, first = False, False
                size = next_commit_size(size, result.passages, config.commit_passages)
        finally:
            if held_lock:  # a run that never got the lock (another build holds it) leaves that build's file
                self.index.layout.progress_file.unlink(missing_ok=True)
            if self.bar is not None:
                self.bar.close()

    def commit_one(self, tx: WriteTransaction, changes: Plan, size: int, first: bool):
        """Embed and commit the next chunk of `changes`: (what it took, the commit, its passages)."""
        if first:
            self.embedder.begin(changes.to_embed)
        taken = next_chunk(changes, self.embedder.passages, size)
        empty = {doc.doc_id: doc for doc in taken.to_embed if not self.embedder.passages(doc)}
        chunk = taken if not empty else Plan(
            add=[d for d in taken.add if d.doc_id not in empty],
            change=[d for d in taken.change if d.doc_id not in empty],
            remove=taken.remove, unchanged=taken.unchanged, moved=taken.moved, kept=taken.kept)
        if first:
            count_plan(self.report, changes)
        if empty:
            self.skip_empty(list(empty.values()), changes)
        rest = [d for d in changes.to_embed if d.doc_id not in empty]
        self.total = self.report.passages_committed + self.embedder.estimate(rest)
        if first:
            self.bar = tqdm(total=self.total, unit=self.embedder.unit, desc="embedding", dynamic_ncols=True,
                            disable=not self.config.show_progress or not self.total)
        elif self.bar is not None:
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
        return taken, tx.commit(chunk, self.origin, spans, vectors, self.meta), sum(map(len, spans))

    def skip_empty(self, empty: list[Document], changes: Plan) -> None:
        """Documents with no passage: skipped input, out of the counts and of later plans."""
        added = {doc.doc_id for doc in changes.add}
        for doc in empty:
            issue = nothing_to_embed(doc)
            logger.warning("skipped %s", issue)
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
    commit but the last (atomically: a temp file renamed), removed when the build ends."""
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
        done = (f"{report.documents_committed} documents ({report.passages_committed} passages) of "
                f"this build are committed to {config.index_dir}, which now holds "
                f"{report.total_documents} documents and can be searched")
    return f"Interrupted: {done}. Run the same command again to resume where it stopped."
