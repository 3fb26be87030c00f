"""The app's background build: a child process that reports progress, its end, or its error."""

from __future__ import annotations

import time

import pytest

from indexer import Index, IndexConfig
from ui.background_build import BackgroundBuild, BuildStatus, fold_message


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
    assert final.counts is not None and final.counts.summary() == final.summary
    assert (final.counts.documents_added, final.counts.passages_embedded, final.counts.total_documents) == (4, 4, 4)
    with Index.open(tmp_path / "idx") as index:
        assert index.info.documents == 4


def test_background_build_failure_is_reported_not_raised(tmp_path, tiny_model):
    empty = tmp_path / "empty"
    empty.mkdir()
    build = BackgroundBuild(IndexConfig(source=empty, index_dir=tmp_path / "idx", model=tiny_model,
                                        show_progress=False), tmp_path / "built")
    final = wait_until_done(build)[-1]
    assert final.error is not None and "No documents found" in final.error
    assert final.error_kind == "BadInputError"
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


def test_the_total_shown_stays_put_while_the_estimate_moves(tmp_path):
    """The indexer's total is an estimate until the last document is cut: a build reported
    1,518, then 1,717, then 1,600 passages. The page keeps the first, until a count passes it."""
    status = BuildStatus(source=tmp_path)
    shown = []
    for done, total in [(16, 1518), (500, 1717), (1095, 1600), (1518, 1600)]:
        status = fold_message(status, {"progress": [done, total]})
        shown.append(status.total)
    assert shown == [1518, 1518, 1518, 1518]
    status = fold_message(status, {"progress": [1560, 1600]})  # the estimate was low: it gives way
    assert (status.total, status.embedded) == (1600, 1560)
    status = fold_message(status, {"progress": [1590, 1650]})
    assert status.total == 1600 and status.fraction < 1.0


def test_each_commit_is_reported_at_once_whatever_the_interval(topic_corpus, tmp_path, tiny_model):
    """With an interval no build reaches, the child still reports each commit's count as it lands,
    so the page's bar never trails the counters a commit moves."""
    from indexer import build_index
    from ui.background_build import ThrottledProgress

    sent: list[dict] = []
    config = IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False,
                         commit_passages=2)
    report = build_index(config, progress=ThrottledProgress(sent.append, every_s=3600.0))
    reported = [message["progress"][0] for message in sent]
    final = report.passages_committed
    assert report.commits >= 2 and reported == sorted(reported) and reported[-1] == final, sent
    # After the first report only commits can pass the interval: the first commit's count is one.
    assert any(0 < count < final for count in reported[1:]), sent


def test_counts_carry_what_was_left_out_through_json(tmp_path):
    """The child process reports its counts as JSON: files left out on purpose come back as
    (the files, the note), one file's note naming it, a note about several as the build said it."""
    import json

    from indexer.build.report import BuildReport
    from indexer.sources.documents import InputIssue
    from ui.background_build import BuildCounts

    report = BuildReport(index_dir=tmp_path, model="m")
    report.left_out += [InputIssue("data.json", None, "minified", retains_stored=False),
                        InputIssue(".", None, "2 source files left out", retains_stored=False,
                                   files=("a.tex", "b.md"))]
    counts = BuildCounts.of(report)
    assert counts.left_out == ((("data.json",), "data.json left out: minified"),
                               (("a.tex", "b.md"), "2 source files left out"))
    assert BuildCounts.from_json(json.loads(json.dumps(counts.to_json()))) == counts
