"""The app's background build: a child process that reports progress, its end, or its error."""

from __future__ import annotations

import time

import pytest

from indexer import Index, IndexConfig
from ui.background_build import BackgroundBuild, BuildStatus


def wait_until_done(build: BackgroundBuild, timeout: float = 180) -> list[BuildStatus]:
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = build.status()
        seen.append(status)
        if not status.running:
            return seen
        time.sleep(0.2)
    build.stop()
    raise AssertionError(f"the background build did not end within {timeout} s: {seen[-1]}")


def test_background_build_commits_and_reports_its_summary(topic_corpus, tmp_path, tiny_model):
    stamp = tmp_path / "built"
    build = BackgroundBuild(IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model,
                                        show_progress=False, commit_passages=1), stamp)
    final = wait_until_done(build)[-1]
    assert final.error is None and final.summary.startswith("4 documents, 4 passages in the index")
    assert final.fraction == 1.0 and stamp.exists()
    with Index.open(tmp_path / "idx") as index:
        assert index.info.documents == 4


def test_background_build_failure_is_reported_not_raised(tmp_path, tiny_model):
    empty = tmp_path / "empty"
    empty.mkdir()
    build = BackgroundBuild(IndexConfig(source=empty, index_dir=tmp_path / "idx", model=tiny_model,
                                        show_progress=False), tmp_path / "built")
    final = wait_until_done(build)[-1]
    assert final.error is not None and "No documents found" in final.error
    assert not (tmp_path / "built").exists()


def test_a_build_process_that_dies_is_an_error(topic_corpus, tmp_path, tiny_model):
    build = BackgroundBuild(IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model,
                                        show_progress=False))
    build._process.kill()  # as the OOM killer would
    final = wait_until_done(build)[-1]
    assert final.error is not None and "stopped unexpectedly" in final.error


@pytest.mark.parametrize("embedded,total,fraction", [(0, 0, 0.0), (5, 10, 0.5)])
def test_status_fraction(tmp_path, embedded, total, fraction):
    assert BuildStatus(source=tmp_path, embedded=embedded, total=total).fraction == fraction


def test_a_build_started_from_a_thread_that_ends_keeps_running(topic_corpus, tmp_path, tiny_model):
    """Streamlit starts it from a script thread that ends after each run; the build must not end
    with that thread (as it did with Linux's parent-death signal, which follows the thread)."""
    import threading

    started: list[BackgroundBuild] = []
    config = IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model,
                         show_progress=False)
    thread = threading.Thread(target=lambda: started.append(BackgroundBuild(config)))
    thread.start()
    thread.join()
    final = wait_until_done(started[0])[-1]
    assert final.error is None and final.summary is not None
