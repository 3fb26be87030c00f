"""Index a source in a child process while the app serves what is already committed.

`make run` starts the app at once and hands it the demo corpus to index: the build
commits in growing chunks (`indexer.build_index`), the first within seconds, and the
Searcher loads each new build on the next query. So the first search is answered
from the documents committed so far, in every mode, while a bar shows the rest.

A child process (`python -m ui.background_build --serve`), not a thread: the build and the
searcher would share one tokenizer, which is not safe across threads, and a crash in
the build cannot take the app down. Not `multiprocessing`: its spawn start method
re-imports the main module, which under Streamlit is app.py itself. The child reads one
build request a line on stdin, reports JSON lines on stdout and, on Linux, is ended with
the app; an interrupted build resumes at its last commit the next time. The same children
index the app's uploads (`ui.uploads.start_upload`), so the page stays usable while an
upload indexes.

A child serves one build after another and keeps the models it loaded (`BuildWorker`):
started afresh for every upload, it loaded the bi-encoder each time: 16.8 s of the 18.7 s
that a three-page PDF took in tests/test_browser.py on a 2-core AMD EPYC (bench/bench_upload.py
measures both ways). A child left idle for `IDLE_EXIT_S` ends, giving its
memory back; a second build asked for while one runs gets a child of its own.

The indexer's total of passages was an estimate until the last document was cut, and moved
(1,518 -> 1,717 -> 1,600) as the build went. The indexer now counts them in a thread beside the
build (`indexer.build.pipeline.PassageCutter.count_all`), so a source counted within a couple of
seconds, the demo corpus among them, reports its exact total from the start; for a larger one the
page keeps the first total it showed (`steady_total`), so a person does not see it jump.
"""

from __future__ import annotations

import _thread
import argparse
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from data.paths import PROJECT_ROOT
from indexer import BuildInterrupted, BuildReport, IndexConfig, IndexerError, build_index

PROGRESS_EVERY_S = 0.5
PARENT_CHECK_S = 2.0
# A build child left without work this long ends, giving back the memory of the models it holds.
IDLE_EXIT_S = 600.0


@dataclass(frozen=True)
class BuildCounts:
    """What a finished build did, as the child reports it: the counts a notice names, the
    one-line summary, and the skipped inputs as (path, what was wrong) pairs."""

    summary_line: str
    documents_added: int = 0
    documents_updated: int = 0
    documents_unchanged: int = 0
    passages_embedded: int = 0
    total_documents: int = 0
    model_seconds: float = 0.0  # loading the bi-encoder: about 0 where the child held it already
    finished_at: float = 0.0  # when the build returned, seconds since the epoch (after its last commit)
    issues: tuple[tuple[str, str], ...] = ()
    # Input left out on purpose: (the files it stands for, what the build said of them).
    left_out: tuple[tuple[tuple[str, ...], str], ...] = ()
    # The files of issues about one record or message in them (a line): their other documents stand.
    files_with_records: tuple[str, ...] = ()
    # (file, warning) of documents indexed with a caveat: pages without text, a sheet left out.
    caveats: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, report: BuildReport) -> BuildCounts:
        return cls(report.summary(), report.documents_added, report.documents_updated,
                   report.documents_unchanged, report.passages_embedded, report.total_documents,
                   report.model_seconds, time.time(), tuple((issue.path, str(issue)) for issue in report.issues),
                   tuple((issue.files, issue.problem) if issue.files else
                         ((issue.path,), f"{issue.path} left out: {issue.problem}")
                         for issue in report.left_out),
                   tuple(sorted({issue.path for issue in report.issues if issue.line is not None})),
                   tuple((issue.path, str(issue)) for issue in report.caveats))

    def summary(self) -> str:
        return self.summary_line

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, fields: dict) -> BuildCounts:
        return cls(**{**fields, "issues": tuple(tuple(pair) for pair in fields.get("issues", ())),
                      "left_out": tuple((tuple(files), note) for files, note in fields.get("left_out", ())),
                      "files_with_records": tuple(fields.get("files_with_records", ())),
                      "caveats": tuple(tuple(pair) for pair in fields.get("caveats", ()))})


@dataclass(frozen=True)
class BuildStatus:
    """What the page shows: passages embedded of those to embed, and how it ended.
    `error_kind` names the exception's class (`BadInputError`: nothing in the source could be read)."""

    source: Path
    started: float = field(default_factory=time.monotonic)
    embedded: int = 0
    total: int = 0
    running: bool = True
    error: str | None = None
    error_kind: str | None = None
    summary: str | None = None
    counts: BuildCounts | None = None

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    @property
    def fraction(self) -> float:
        return min(self.embedded / self.total, 1.0) if self.total else 0.0


def steady_total(shown: int, reported: int, done: int) -> int:
    """The total the page shows: the first one reported, kept while the passages done stay
    within it; only a count that passes it (an estimate that was low) takes the one reported."""
    if shown and done <= shown:
        return shown
    return max(reported, done)


def fold_message(status: BuildStatus, message: dict) -> BuildStatus:
    """`status` after one of the child's JSON lines: progress, its error, or its end."""
    if "progress" in message:
        done, total = message["progress"]
        return replace(status, embedded=done, total=steady_total(status.total, total, done))
    if "error" in message:
        return replace(status, running=False, error=message["error"], error_kind=message.get("kind"))
    if "done" in message:
        counts = BuildCounts.from_json(message["counts"]) if "counts" in message else None
        return replace(status, running=False, summary=message["done"], counts=counts,
                       embedded=max(status.embedded, status.total))
    return status


def _end_with_parent(parent: int) -> None:
    """Stop the build as Ctrl-C would (its current chunk rolls back) once the app has ended.

    A watchdog on `getppid`, not Linux's PR_SET_PDEATHSIG: that fires when the parent
    *thread* ends, and Streamlit starts this process from a script thread that ends
    after every run.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        _thread.interrupt_main()

    threading.Thread(target=watch, name="semsearch-parent-watch", daemon=True).start()


def _ends_a_build(message: dict) -> bool:
    return "done" in message or "error" in message


class BuildWorker:
    """A build child (`python -m ui.background_build --serve`) that runs the builds it is handed,
    one at a time, and keeps the models it loaded for the next. Its reader thread hands each
    JSON line to the build it runs; a worker idle for `idle_exit_s` is retired (its stdin
    closed, so it ends)."""

    def __init__(self, idle_exit_s: float | None = None) -> None:
        self.idle_exit_s = IDLE_EXIT_S if idle_exit_s is None else idle_exit_s
        self._lock = threading.Lock()
        self._build: BackgroundBuild | None = None
        self._idle_since = time.monotonic()
        self._retired = False
        self.environment = dict(os.environ)  # what the child inherits
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ui.background_build", "--serve", "--parent", str(os.getpid())],
            cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, text=True,
        )
        self.reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True,
                                       name="semsearch-build-reader")
        self.reader.start()

    def take(self, build: BackgroundBuild, request: dict) -> bool:
        """Start `build` here if this worker is alive and idle; False (nothing sent) otherwise."""
        with self._lock:
            if self._retired or self._build is not None or self.process.poll() is not None:
                return False
            self._build = build
            try:
                assert self.process.stdin is not None
                self.process.stdin.write(json.dumps(request) + "\n")
                self.process.stdin.flush()
            except OSError:  # it ended between the poll and the write
                self._build = None
                return False
            return True

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue  # a library printed to stdout; only our JSON lines count
            with self._lock:
                build = self._build
                if _ends_a_build(message):
                    self._build, self._idle_since = None, time.monotonic()
            if build is not None:
                build.receive(message)
                if _ends_a_build(message):
                    timer = threading.Timer(self.idle_exit_s, self.retire_if_idle, (self.idle_exit_s * 0.99,))
                    timer.daemon = True
                    timer.start()

    @property
    def retired(self) -> bool:
        return self._retired

    def retire_if_idle(self, after_s: float = 0.0) -> None:
        """Retire the worker if it has been idle `after_s` seconds or more (its idle timer asks
        with `idle_exit_s`: a build that came and went since the timer started keeps it)."""
        with self._lock:
            if self._build is None and not self._retired and time.monotonic() - self._idle_since >= after_s:
                self._retired = True
                if self.process.stdin is not None:
                    self.process.stdin.close()  # end of input: the child exits

    def stop(self) -> None:
        """End the child, and the build it runs (its current chunk rolls back)."""
        with self._lock:
            self._retired = True
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait(timeout=30)


_workers: list[BuildWorker] = []
_workers_lock = threading.Lock()


def _start_on_a_worker(build: BackgroundBuild, request: dict) -> BuildWorker:
    """An idle worker of this process takes the build, or a new one does. A worker whose process
    environment differs from this one's (the settings it inherited) is retired, not reused."""
    environment = dict(os.environ)
    with _workers_lock:
        for worker in _workers:
            if worker.environment != environment:
                worker.retire_if_idle()
        _workers[:] = [w for w in _workers if w.process.poll() is None and not w.retired]
        for worker in _workers:
            if worker.environment == environment and worker.take(build, request):
                return worker
        worker = BuildWorker()
        _workers.append(worker)
    if not worker.take(build, request):
        raise RuntimeError("A new build process could not be started; see the app's log.")
    return worker


def stop_workers() -> None:
    """End every build child of this process, and the builds they run."""
    with _workers_lock:
        workers, _workers[:] = list(_workers), []
    for worker in workers:
        worker.stop()


class BackgroundBuild:
    """One build of `config` in a build child (`BuildWorker`); `status()` says what it reported so far."""

    def __init__(self, config: IndexConfig, stamp: Path | None = None) -> None:
        fields = {k: str(v) if isinstance(v, Path) else v for k, v in dataclasses.asdict(config).items()}
        self._status = BuildStatus(source=config.source)
        self._lock = threading.Lock()
        self._worker = _start_on_a_worker(self, {"config": fields, "stamp": str(stamp) if stamp else None})

    @property
    def _process(self) -> subprocess.Popen:
        return self._worker.process

    def receive(self, message: dict) -> None:
        with self._lock:
            self._status = fold_message(self._status, message)

    def status(self) -> BuildStatus:
        """The latest report; a child that ended without its last word failed."""
        if self._worker.process.poll() is not None:
            self._worker.reader.join(timeout=5)  # what it wrote before it ended
            with self._lock:
                if self._status.running:
                    self._status = replace(
                        self._status, running=False,
                        error=f"The indexing process stopped unexpectedly (exit code "
                        f"{self._worker.process.returncode}); see the app's log.")
        with self._lock:
            return self._status

    def stop(self) -> None:
        self._worker.stop()


def _send(message: dict) -> None:
    print(json.dumps(message), flush=True)


class ThrottledProgress:
    """The build's progress callback, sent on (`send`) about every `every_s` seconds, and at
    once for a commit: the build reports the committed count again right after each commit
    (`indexer.build.loop`), a count that did not grow, so the bar never trails the Documents and
    Passages counters a commit moves (it once read 8 of 240 passages embedded under 16 committed)."""

    def __init__(self, send, every_s: float = PROGRESS_EVERY_S, clock=time.monotonic) -> None:
        self.send, self.every_s, self.clock = send, every_s, clock
        self.last_sent, self.last_done = float("-inf"), -1

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.last_sent >= self.every_s or done == total or done == self.last_done:
            self.last_sent = now
            self.send({"progress": [done, total]})
        self.last_done = done


def run_build(config: IndexConfig, stamp: Path | None) -> int:
    """The child: build, reporting progress about every half second and at each commit, then one
    last line."""
    try:
        report = build_index(config, progress=ThrottledProgress(_send))
    except BuildInterrupted as err:  # the app ended: nobody reads the message but the log
        print(err, file=sys.stderr)
        return 130
    except (IndexerError, ValueError, OSError) as err:
        _send({"error": str(err), "kind": type(err).__name__})
        return 2
    except Exception as err:  # an unexpected failure: the app shows it, the traceback goes to the log
        traceback.print_exc()
        _send({"error": f"{type(err).__name__}: {err}"})
        return 1
    if stamp is not None:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.touch()
    _send({"done": report.summary(), "counts": BuildCounts.of(report).to_json()})
    return 0


def serve(requests: IO[str]) -> int:
    """The child: one build a line of `requests` (`{"config": IndexConfig fields, "stamp": path or
    null}`), each reported as `run_build` does, until the input ends. A build that failed
    unexpectedly, or was interrupted, ends the child too: the next build gets a fresh one."""
    try:
        for line in requests:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                stamp = Path(request["stamp"]) if request.get("stamp") else None
                config = IndexConfig(**request["config"])
            except (ValueError, KeyError, TypeError, AttributeError) as err:
                _send({"error": f"A build request must be one JSON object with 'config' (IndexConfig fields) "
                                f"and 'stamp' (a path or null): {type(err).__name__}: {err}"})
                continue
            code = run_build(config, stamp)
            if code not in (0, 2):
                return code
    except KeyboardInterrupt:  # the app ended while this child waited for work
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ui.background_build", description=__doc__)
    parser.add_argument("--serve", action="store_true", required=True,
                        help="run the builds given on stdin, one JSON request a line, until it ends")
    parser.add_argument("--parent", type=int, default=None, help="end when this process ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        _end_with_parent(args.parent)
    return serve(sys.stdin)


if __name__ == "__main__":
    sys.exit(main())
