"""The app's background build: a child process that reports progress, its end, or its error."""

from __future__ import annotations

import time

import pytest

from indexer import Index, IndexConfig
from ui.background_build import BackgroundBuild, BuildStatus, fold_message, stop_workers


@pytest.fixture(autouse=True)
def own_build_children():
    """Each test starts with no build child of this process to reuse, and leaves none running."""
    stop_workers()
    yield
    stop_workers()


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
    report.issues += [InputIssue("tickets.json", 12, "empty record"), InputIssue("photo.txt", None, "binary")]
    counts = BuildCounts.of(report)
    assert counts.files_with_records == ("tickets.json",)  # its other records were indexed: the upload stays
    assert counts.left_out == ((("data.json",), "data.json left out: minified"),
                               (("a.tex", "b.md"), "2 source files left out"))
    assert BuildCounts.from_json(json.loads(json.dumps(counts.to_json()))) == counts


def test_one_child_serves_build_after_build_keeping_the_model_until_it_idles(topic_corpus, tmp_path, tiny_model,
                                                                          monkeypatch):
    """An upload once started a child that loaded the bi-encoder anew: 16.8 of its 18.7 s on 2 cores.
    Builds one after another run in one child, which survives a bad input, finds the model it
    loaded, and ends once left idle."""
    import ui.background_build as background

    monkeypatch.setattr(background, "IDLE_EXIT_S", 3.0)

    def build(source, name):
        started = BackgroundBuild(IndexConfig(source=source, index_dir=tmp_path / name, model=tiny_model,
                                              show_progress=False))
        return started, wait_until_done(started)[-1]

    empty = tmp_path / "empty"
    empty.mkdir()
    bad, bad_end = build(empty, "bad")
    first, first_end = build(topic_corpus, "a")
    first_ended = time.monotonic()
    time.sleep(1.0)  # idle, but under IDLE_EXIT_S
    second, second_end = build(topic_corpus, "b")
    # The first build's idle timer has fired by now; the child, idle only since the second, is kept.
    time.sleep(max(0.0, first_ended + 3.5 - time.monotonic()))
    assert not second._worker.retired and second._process.poll() is None
    assert bad_end.error_kind == "BadInputError" and first_end.error is None and second_end.error is None
    assert bad._process.pid == first._process.pid == second._process.pid
    assert first_end.counts is not None and second_end.counts is not None
    assert second_end.counts.model_seconds < first_end.counts.model_seconds
    with Index.open(tmp_path / "b") as index:
        assert index.info.documents == 4
    assert second._process.wait(timeout=60) == 0  # idle: its input closed, it ended
    assert second.status().error is None  # which is no error of the build it finished


def test_a_build_while_another_runs_or_under_other_settings_gets_a_child_of_its_own(topic_corpus, tmp_path,
                                                                                  tiny_model, monkeypatch):
    def start(name):
        return BackgroundBuild(IndexConfig(source=topic_corpus, index_dir=tmp_path / name, model=tiny_model,
                                           show_progress=False))

    builds = [start("a"), start("b")]
    assert builds[0]._process.pid != builds[1]._process.pid
    for build in builds:
        assert wait_until_done(build)[-1].error is None
    # The children inherited the settings of their day: under others, a new child, and the idle ones end.
    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path / "other-cache"))
    third = start("c")
    assert third._process.pid not in {build._process.pid for build in builds}
    assert [build._process.wait(timeout=60) for build in builds] == [0, 0]
    assert wait_until_done(third)[-1].error is None


def test_serve_ends_on_an_unexpected_failure_and_at_the_end_of_its_input(tmp_path, tiny_model, monkeypatch, capsys):
    import io
    import json

    import ui.background_build as background

    monkeypatch.setattr(background, "build_index", lambda config, progress: 1 / 0)
    request = json.dumps({"config": {"source": str(tmp_path), "index_dir": str(tmp_path / "i"), "model": tiny_model},
                          "stamp": None})
    assert background.serve(io.StringIO(f"{request}\n{request}\n")) == 1  # the second is never run
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines == [{"error": "ZeroDivisionError: division by zero"}]
    assert background.serve(io.StringIO("")) == 0
    # A request it cannot read is answered with what a request must be, and the next is served.
    monkeypatch.setattr(background, "build_index", lambda config, progress: 1 / 0)
    assert background.serve(io.StringIO('\n{"stamp": null}\nnot json\n' + request + "\n")) == 1
    lines = [json.loads(line)["error"] for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 3 and all(line.startswith("A build request must be one JSON object") for line in lines[:2])
    assert lines[2] == "ZeroDivisionError: division by zero"
