"""A source read in windows (indexer/build/source_stream.py) builds what one window builds: the
same documents, the same counts, removals after the last window, and a rerun that resumes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from indexer import BadInputError, BuildInterrupted, Index, IndexConfig, build_index
from indexer.build import loop, source_stream
from indexer.build.report import BuildReport
from indexer.build.source_stream import SourceStream
from tests.indexer.helpers import assert_consistent

WORDS = ["river", "glacier", "valley", "mountain", "forest", "ocean", "desert", "island"]


def write_corpus(path: Path, ids: list[int], revised: frozenset[int] = frozenset()) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i in ids:
            text = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(12 + i % 5)) + f" number {i}"
            fh.write(json.dumps({"id": f"d{i}", "text": text + (" revised" if i in revised else "")}) + "\n")


def stored(index_dir: Path) -> dict[str, str]:
    with Index.open(index_dir, use_gpu=False) as index:
        records = index.passages(index.snapshot().vectors.ids().tolist()).values()
        return {record.doc_id: record.text for record in records}


def counts(report: BuildReport) -> tuple[int, int, int, int]:
    return (report.documents_added, report.documents_updated, report.documents_removed,
            report.documents_unchanged)


@pytest.mark.parametrize("window", [1, 3, 4])
def test_builds_in_windows_equal_one_window_in_documents_and_counts(window, tiny_model, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.jsonl"

    def builds(index_dir: Path) -> list[tuple[tuple[int, int, int, int], dict[str, str]]]:
        config = IndexConfig(source=corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                             commit_passages=2)
        out = []
        write_corpus(corpus, list(range(10)))
        out.append((counts(build_index(config)), stored(index_dir)))
        write_corpus(corpus, [0, 2, 3, 5, 6, 7, 9, 10, 11], revised=frozenset({3, 9}))  # 1, 4, 8 gone
        out.append((counts(build_index(config)), stored(index_dir)))
        out.append((counts(build_index(config)), stored(index_dir)))  # unchanged: nothing to embed
        assert_consistent(index_dir)
        return out

    whole = builds(tmp_path / "whole")
    monkeypatch.setattr(source_stream, "WINDOW_DOCUMENTS", window)
    windowed = builds(tmp_path / "windowed")
    assert windowed == whole
    assert [c for c, _ in whole] == [(10, 0, 0, 0), (2, 2, 3, 5), (0, 0, 0, 9)]


def test_an_interrupted_build_in_windows_resumes_and_removes_at_the_end(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setattr(source_stream, "WINDOW_DOCUMENTS", 2)
    corpus, index_dir = tmp_path / "corpus.jsonl", tmp_path / "index"
    config = IndexConfig(source=corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                         commit_passages=1)
    write_corpus(corpus, list(range(8)))
    build_index(config)
    write_corpus(corpus, list(range(2, 12)))

    def stop_after_two(done: int, _total: int) -> None:
        if done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(BuildInterrupted):
        build_index(config, progress=stop_after_two)
    assert {"d0", "d1"} <= set(stored(index_dir))  # the removals wait for the last window
    report = build_index(config)
    assert sorted(stored(index_dir)) == sorted(f"d{i}" for i in range(2, 12))
    assert report.documents_removed == 2
    assert_consistent(index_dir)


def test_a_stream_reads_windows_by_documents_and_characters(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(corpus, list(range(7)))
    config = IndexConfig(source=corpus, index_dir=tmp_path / "index")
    stream = SourceStream(config, BuildReport(index_dir=config.index_dir, model="m"), window_documents=3)
    sizes = [len(window.documents) for window in stream.windows()]
    assert (sizes, stream.whole, stream.read) == ([3, 3, 1], False, 7)
    by_chars = SourceStream(config, BuildReport(index_dir=config.index_dir, model="m"), window_chars=200)
    assert all(sum(len(d.text) for d in w.documents) <= 200 or len(w.documents) == 1 for w in by_chars.windows())
    assert by_chars.read == 7 and not by_chars.whole
    assert SourceStream(config, BuildReport(index_dir=config.index_dir, model="m")).whole
    # A rebuild reads one window: it commits once, and readers keep the previous build until then.
    assert SourceStream(dataclasses.replace(config, rebuild=True), BuildReport(index_dir=config.index_dir, model="m"),
                        window_documents=3).whole


def test_a_consumer_that_stops_inside_a_window_leaves_it_to_the_next(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(corpus, list(range(5)))
    config = IndexConfig(source=corpus, index_dir=tmp_path / "index")
    stream = SourceStream(config, BuildReport(index_dir=config.index_dir, model="m"), window_documents=2)
    windows = stream.windows()
    next(windows)
    second = next(windows)  # the first is finished; the second is where this consumer stops
    assert [w.documents for w in stream.windows()][0] == second.documents
    assert stream.unseen(["d0", "d4", "d9"]).tolist() == [False, False, True]


def test_an_empty_source_fails_before_the_index_is_touched(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("")
    config = IndexConfig(source=corpus, index_dir=tmp_path / "index")
    with pytest.raises(BadInputError, match="No documents found"):
        SourceStream(config, BuildReport(index_dir=config.index_dir, model="m"))
    assert not config.index_dir.exists()


def test_many_skipped_inputs_are_counted_past_the_first_few_warnings(tiny_model: str, tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """A source with thousands of empty records (a Wikipedia dump's redirects) logs the first
    MAX_SKIPS_LOGGED of them and one line for the rest; the report keeps every one."""
    source = tmp_path / "corpus.jsonl"
    empty = source_stream.MAX_SKIPS_LOGGED + 15
    with source.open("w", encoding="utf-8") as fh:
        for i in range(empty):
            fh.write(json.dumps({"id": f"e{i}", "text": "  "}) + "\n")
        fh.write(json.dumps({"id": "real", "text": "A river runs through the valley below the glacier."}) + "\n")
    with caplog.at_level("WARNING"):
        report = build_index(IndexConfig(source=source, index_dir=tmp_path / "index", model=tiny_model,
                                         show_progress=False))
    skipped = [r.getMessage() for r in caplog.records if r.getMessage().startswith("skipped")]
    assert len(skipped) == source_stream.MAX_SKIPS_LOGGED + 1
    assert "counted, not listed" in skipped[-1]
    assert len(report.issues) == empty and report.documents_added == 1


def test_a_source_read_in_windows_shows_a_steady_progress_total(tiny_model: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The total covers the windows not read yet (the source's documents counted up front), so
    it does not climb window by window: from the first commit on it is near the final count."""
    monkeypatch.setattr(source_stream, "WINDOW_DOCUMENTS", 10)
    source = tmp_path / "corpus.jsonl"
    write_corpus(source, list(range(40)))
    totals: list[int] = []
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "index", model=tiny_model,
                                     show_progress=False), progress=lambda done, total: totals.append(total))
    final = report.passages_committed
    assert final >= 40 and totals[-1] == final
    assert 0.8 * final <= min(totals) and max(totals) <= 1.2 * final, totals


def test_readers_see_progress_after_each_window_even_one_committed_whole(tiny_model: str, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each window here commits in one go (its commit cap exceeds it): the progress file readers
    poll (`Index.build_progress`) still moves with every window but the last, and is gone after."""
    monkeypatch.setattr(source_stream, "WINDOW_DOCUMENTS", 10)
    source, index_dir = tmp_path / "corpus.jsonl", tmp_path / "index"
    write_corpus(source, list(range(30)))
    seen: list[tuple[int, int] | None] = []
    write = loop.write_progress

    def write_and_read(path: Path, done: int, total: int) -> None:  # what a reader sees right after
        write(path, done, total)
        with Index.open(index_dir, use_gpu=False) as reader:
            seen.append(reader.build_progress())

    monkeypatch.setattr(loop, "write_progress", write_and_read)
    report = build_index(IndexConfig(source=source, index_dir=index_dir, model=tiny_model, show_progress=False,
                                     commit_passages=1000))
    assert report.commits == 3
    done = [found[0] for found in seen if found is not None]
    assert len(seen) == 2 and len(done) == 2 and 0 < done[0] < done[1] < report.passages_committed, seen
    with Index.open(index_dir, use_gpu=False) as reader:
        assert reader.build_progress() is None


def test_unseen_names_exactly_the_ids_no_window_held(tmp_path):
    """Binary search over the read ids' sorted hashes, past either end included."""
    corpus = tmp_path / "corpus.jsonl"
    write_corpus(corpus, list(range(50)))
    config = IndexConfig(source=corpus, index_dir=tmp_path / "index")
    stream = SourceStream(config, BuildReport(index_dir=config.index_dir, model="m"), window_documents=7)
    for _ in stream.windows():
        pass
    keys = [f"d{i}" for i in range(-20, 80)] + ["", "x" * 100]
    read = {f"d{i}" for i in range(50)}
    assert stream.unseen(keys).tolist() == [key not in read for key in keys]
    assert SourceStream.of([]).unseen(["d1", "d2"]).tolist() == [True, True]
