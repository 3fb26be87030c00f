"""An upload in the app, from the click to its notice: a build child that keeps the model, against
a fresh child per upload.

The app indexes uploads in a child process (`ui.background_build`). A child started for each
upload loaded the bi-encoder each time; a `BuildWorker` serves one build after another and keeps
the models it loaded. This script builds a small index, then indexes a batch of small files into
it `--uploads` times each way, in alternating order, through `BackgroundBuild` as the app does:

- *kept child*: the builds share one child, as in the app (its first build, which loads the
  model, is left out: in the app that is the demo's first build or the first upload);
- *fresh child* (the peer, as before): every build child is ended before each upload, so each
  starts Python, imports the libraries and loads the model.

Reported: the median seconds from `BackgroundBuild(...)` to its last report, and the build's own
model-loading time, all-MiniLM-L6-v2 unless --model names another. Records "Uploads in the app:
a build child that keeps the model" in BENCHMARKS.md.

Usage: python bench/bench_upload.py [--uploads 5] [--model PATH] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from ui.background_build import BackgroundBuild, BuildStatus, stop_workers  # noqa: E402

BASE_DOCUMENTS = 40
FILES_PER_UPLOAD = 2


def _write(folder: Path, name: str, paragraphs: int, seed: int) -> None:
    text = "\n\n".join(f"Note {seed}.{i}: the survey of site {seed} mapped the ridge, the stream and the "
                       f"meadow below the {1000 + 10 * i} metre mark; the crew logged weather and soil."
                       for i in range(paragraphs))
    (folder / name).write_text(f"# Field notes {seed}\n\n{text}\n", encoding="utf-8")


def _wait(build: BackgroundBuild, timeout: float = 600) -> BuildStatus:
    deadline = time.monotonic() + timeout
    while (status := build.status()).running:
        if time.monotonic() > deadline:
            build.stop()
            raise TimeoutError("an upload did not end within 10 minutes")
        time.sleep(0.05)
    if status.error:
        raise RuntimeError(status.error)
    return status


def _upload(source: Path, index_dir: Path, model: str | None, seed: int) -> tuple[float, float]:
    """Add FILES_PER_UPLOAD new files and index them as the app's upload does: (seconds, model seconds)."""
    for i in range(FILES_PER_UPLOAD):
        _write(source, f"upload-{seed}-{i}.md", 6, seed * 10 + i)
    started = time.perf_counter()
    status = _wait(BackgroundBuild(IndexConfig(source=source, index_dir=index_dir, model=model, prune=False,
                                               show_progress=False)))
    seconds = time.perf_counter() - started
    assert status.counts is not None and status.counts.documents_added == FILES_PER_UPLOAD
    return seconds, status.counts.model_seconds


def run(uploads: int, model: str | None, workdir: Path) -> dict[str, list[tuple[float, float]]]:
    source, index_dir = workdir / "source", workdir / "index"
    source.mkdir()
    for i in range(BASE_DOCUMENTS):
        _write(source, f"base-{i}.md", 3, i)
    build_index(IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False))
    stop_workers()
    _upload(source, index_dir, model, seed=1000)  # the kept child's first build loads the model
    times: dict[str, list[tuple[float, float]]] = {"kept child": [], "fresh child": []}
    for round_ in range(uploads):
        order = ["kept child", "fresh child"] if round_ % 2 == 0 else ["fresh child", "kept child"]
        for way in order:
            if way == "fresh child":
                stop_workers()
            # After a fresh child's upload that child has the model: it is the kept child of the next.
            times[way].append(_upload(source, index_dir, model, seed=2000 + 2 * round_ + (way == "fresh child")))
    stop_workers()
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uploads", type=int, default=5, help="uploads measured each way")
    parser.add_argument("--model", default=None, help="bi-encoder folder (default: all-MiniLM-L6-v2)")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        times = run(args.uploads, args.model, Path(tmp))
    rows = []
    for way, pairs in times.items():
        seconds, model_seconds = [s for s, _ in pairs], [m for _, m in pairs]
        rows.append([way, len(pairs), f"{statistics.median(seconds):.1f}", f"{min(seconds):.1f}",
                     f"{max(seconds):.1f}", f"{statistics.median(model_seconds):.1f}"])
    table = markdown_table(["build child", "uploads", "click to notice, median s", "fastest s", "slowest s",
                            "of which loading the model, median s"], rows)
    print(table)
    body = (f"Each upload adds {FILES_PER_UPLOAD} Markdown files of about 6 passages to an index of "
            f"{BASE_DOCUMENTS} documents, through `ui.background_build.BackgroundBuild` as the app's "
            "upload panel does; the two ways alternate, order rotating. *kept child*: the app's "
            "`BuildWorker`, which keeps the model it loaded (its first build, which loads it, not counted); "
            "*fresh child*: a new child per upload, as before. The model is "
            f"{args.model or 'all-MiniLM-L6-v2'} (fp32 or the CPU's default encoding, as the app builds).\n\n"
            + table)
    if not args.no_record:
        record("bench_upload", "Uploads in the app: a build child that keeps the model", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
