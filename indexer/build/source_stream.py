"""A build's source as a stream of windows, read, planned and committed one after another.

A build used to read its whole source into one list before planning, so its memory grew with the
source (issue 31). `SourceStream` reads it in windows of at most `WINDOW_DOCUMENTS` documents or
`WINDOW_CHARS` characters of text:

- a source that fits one window (a folder of files, a small .jsonl) builds exactly as before: one
  plan against the stored rows, pruning what the source no longer has;
- a larger one plans each window against the stored rows of that window's ids only, without
  pruning; after the last window, the build removes in one commit the stored documents of this
  source that no window held (`stale_keys`, read from SQL in pages), except those whose input
  the read skipped (`plan.Skipped`).

The first window is read when the stream is made, before the index is touched, so a missing or
empty source fails harmlessly. A consumer that stops inside a window (a build that finds it must
load the model) leaves that window to the next consumer: `windows()` starts from the first window
not finished. A `--rebuild` reads its source as one window: it commits once, so that people search
the previous build whole until the new one lands.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from indexer.build.config import IndexConfig
from indexer.build.report import BuildReport
from indexer.errors import BadInputError
from indexer.sources.documents import Document, InputIssue
from indexer.sources.readers import count_documents, read_documents

logger = logging.getLogger(__name__)

# A window holds at most this many documents, or this many characters of text, whichever comes
# first. Each window after the first commits at least once, and such a commit merges. Merges
# once re-tokenized every stored text for BM25 (1M synthetic documents in two windows of 500k:
# 583 s at 11.8 GB against 428 s at 16.4 GB in one); they now rescore the base from its term
# counts. The window's documents (their text, about 1 KB each) are the largest thing a build
# holds: the same 1M passages with vectors given, default index type, on 2 cores, peaked at
# 2.8 GB RSS in four windows of 250k against 4.0 GB in one, in about the same time (313 s
# against 343 s; `bench/bench_ingest_memory.py`, BENCHMARKS.md), so a window is 250k documents.
WINDOW_DOCUMENTS = 250_000
WINDOW_CHARS = 2**30
# How many skipped inputs (or kept documents) a message names.
MAX_ISSUES_SHOWN = 5
# How many skipped inputs are logged one by one; past that they are counted (the build's summary
# and `BuildReport.issues` have them all). 25,000 Wikipedia articles held about 5,300 empty ones: their
# warnings buried the progress bar and the summary (bench/bench_gpu.py on an H100, 2026-11-27).
MAX_SKIPS_LOGGED = 20


def log_skipped(report: BuildReport, issue: InputIssue, hint: str = "") -> None:
    """Log a skipped input while fewer than MAX_SKIPS_LOGGED were (call it before adding `issue`
    to `report.issues`), then say once that the rest are counted, not listed."""
    logged = len(report.issues)
    if logged < MAX_SKIPS_LOGGED:
        logger.warning("skipped %s%s", issue, hint)
    elif logged == MAX_SKIPS_LOGGED:
        logger.warning("skipped more inputs; they are counted, not listed (the build's summary gives the total, "
                       "and --strict stops at the first)")


@dataclass(frozen=True)
class Window:
    """The documents of one window, and whether they are the whole source."""

    documents: list[Document]
    whole: bool


class SourceStream:
    """The documents of `config.source`, in windows; skipped input goes into `report` (an error with
    --strict). `transform` rewrites each document as it is read (an ingest strips its vector field)."""

    def __init__(self, config: IndexConfig, report: BuildReport,
                 transform: Callable[[Document], Document] | None = None,
                 window_documents: int | None = None, window_chars: int | None = None) -> None:
        self.config, self.report = config, report
        # None: the module's sizes, read now (a test shrinks them); a --rebuild reads one window.
        self.window_documents = None if config.rebuild else window_documents or WINDOW_DOCUMENTS
        self.window_chars = window_chars or WINDOW_CHARS
        self._transform = transform
        self._reader = read_documents(
            config.source, on_issue=self._on_issue,
            csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
            max_document_chars=config.max_document_chars, exclude=config.index_dir)
        self._carry: Document | None = None
        self.read = 0  # documents read so far
        self._seen = array("q")  # hash() of each id read: 8 bytes a document, for `unseen`
        self._sorted: tuple[int, np.ndarray] | None = None
        first = self._read_window()
        if not first:
            raise self._nothing_error()
        self.whole = self._carry is None  # the source fits one window: the build plans it whole
        self._pending: list[Document] | None = first
        # A source read in several windows: about how many documents it holds, counted without
        # parsing, so the progress total covers the windows still to come (`documents_after`).
        self.source_documents = len(first) if self.whole else max(
            count_documents(config.source, config.index_dir), len(first))

    @classmethod
    def of(cls, documents: list[Document]) -> SourceStream:
        """A stream of one window over `documents` already read (an API upsert)."""
        stream = cls.__new__(cls)
        stream._pending, stream.whole, stream.read = documents, True, len(documents)
        stream._carry, stream._reader, stream._seen, stream._sorted = None, iter(()), array("q"), None
        return stream

    def unseen(self, keys: list[str]) -> np.ndarray:
        """A bool per key: no window held a document with this id. Ids are kept as 64-bit hashes, so
        a stale id that shares one with a read id (about 1 in 10^8 at 10M documents) is kept, never
        one read removed."""
        if self._sorted is None or self._sorted[0] != len(self._seen):
            self._sorted = (len(self._seen), np.unique(np.frombuffer(self._seen, dtype=np.int64)))
        seen = self._sorted[1]
        wanted = np.fromiter((hash(key) for key in keys), dtype=np.int64, count=len(keys))
        if not len(seen):
            return np.ones(len(keys), dtype=bool)
        # A binary search in the sorted hashes: np.isin sorted all 10M of them again for each page
        # of stored ids (about a second a page at 10M documents).
        at = np.minimum(np.searchsorted(seen, wanted), len(seen) - 1)
        return seen[at] != wanted

    def documents_after(self) -> int:
        """About how many documents the windows not read yet hold (0 once the source is read)."""
        # `_carry` holds the next window's first document until that window is asked for.
        return max(0, self.source_documents - self.read) if self._carry is not None else 0

    @property
    def first(self) -> list[Document]:
        """The window a build starts with (the first, before `windows()` moves past it)."""
        return self._pending or []

    def ids(self) -> set[str]:
        """Every document id of the source: the first window's when it is the whole source, else
        read in a pass of its own (its skipped input is reported by the build's read)."""
        if self.whole:
            return {doc.doc_id for doc in self.first}
        config = self.config
        return {doc.doc_id for doc in read_documents(
            config.source, on_issue=lambda issue: None,
            csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
            max_document_chars=config.max_document_chars, exclude=config.index_dir)}

    def windows(self) -> Iterator[Window]:
        """The windows from the first one not finished: a window is finished when the consumer
        asks for the next one."""
        while self._pending is not None:
            yield Window(self._pending, self.whole)
            following = self._read_window()
            self._pending = following or None

    def _read_window(self) -> list[Document]:
        window: list[Document] = []
        chars = 0
        while True:
            doc = self._carry if self._carry is not None else next(self._reader, None)
            self._carry = None
            if doc is None:
                return window
            if self._transform is not None:
                doc = self._transform(doc)
            full = self.window_documents is not None and (
                len(window) >= self.window_documents or chars + len(doc.text) > self.window_chars)
            if window and full:
                self._carry = doc
                return window
            window.append(doc)
            chars += len(doc.text)
            self.read += 1
            self._seen.append(hash(doc.doc_id))

    def _on_issue(self, issue: InputIssue) -> None:
        config, report = self.config, self.report
        if issue.partial:  # indexed, with a caveat (pages without text)
            if config.strict:
                raise BadInputError(f"{issue} (--strict turns these warnings into errors)")
            logger.warning("%s", issue)
            report.warnings.append(str(issue))
            report.caveats.append(issue)
            return
        if not issue.retains_stored:  # left out on purpose (a second link to a file): a warning
            logger.warning("%s", issue)
            report.warnings.append(str(issue))
            report.left_out.append(issue)
            return
        if config.strict:
            raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
        log_skipped(report, issue, f" ({issue.cli_hint})" if issue.cli_hint else "")
        report.issues.append(issue)

    def _nothing_error(self) -> BadInputError:
        config, report = self.config, self.report
        if not report.issues:
            return BadInputError(
                f"No documents found in {config.source}. Supported inputs: a folder of text files "
                "(any name; gzip too), a .jsonl with a 'text' field, a .csv with a text column, or a "
                "BEIR folder."
            )
        # An index of nothing would only hide the problem.
        shown = "; ".join(str(issue) for issue in report.issues[:MAX_ISSUES_SHOWN])
        more = len(report.issues) - MAX_ISSUES_SHOWN
        return BadInputError(
            f"Nothing in {config.source} can be indexed, so nothing was written: "
            f"{shown}{f'; and {more} more' if more > 0 else ''}. Fix these and run the build again."
        )
