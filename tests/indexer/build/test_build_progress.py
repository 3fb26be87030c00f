"""A build's feedback and its survival: progress every few seconds, chunked atomic commits, Ctrl-C."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import indexer.build.pipeline as build_module
from indexer import BuildInterrupted, Index, IndexConfig, build_index
from indexer.__main__ import main as cli_main
from indexer.build.loop import (
    MAX_COMMIT_SECONDS,
    commit_cap,
    commit_ceiling,
    next_chunk,
    next_commit_size,
)
from indexer.build.pipeline import embed
from indexer.sources.documents import Document, PassageSpan
from indexer.store.plan import plan


def config(source, index_dir, model, **kw):
    return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False, **kw)


def doc(doc_id: str) -> Document:
    return Document(doc_id=doc_id, title="", text=f"text of {doc_id}", source=f"{doc_id}.txt")


def test_next_chunk_takes_whole_documents_up_to_the_passage_budget_and_all_removals():
    changes = plan({}, [doc("a"), doc("b"), doc("c")], "src")
    spans = {d: [PassageSpan(i, 0, 1) for i in range(n)] for d, n in (("a", 2), ("b", 2), ("c", 5))}
    asked: list[str] = []

    def passages_of(d: Document) -> list[PassageSpan]:
        asked.append(d.doc_id)
        return spans[d.doc_id]

    first = next_chunk(changes, passages_of, 3)
    assert [d.doc_id for d in first.to_embed] == ["a"], "b would pass the budget"
    assert asked == ["a", "b"], "only the documents it looks at are cut, c is not"
    assert [d.doc_id for d in next_chunk(changes, passages_of, 4).to_embed] == ["a", "b"]
    assert [d.doc_id for d in next_chunk(changes, passages_of, 1).to_embed] == ["a"], "at least one document"
    assert next_chunk(changes, passages_of, 100).to_embed == changes.to_embed


def test_a_first_document_longer_than_the_commit_followed_by_others_builds(tmp_path, tiny_model):
    """The crash of issue 36: a long document first (more passages than the 16-passage first
    commit), then others, raised KeyError in next_chunk for the document after it."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "01-long.txt").write_text(" ".join(f"word{i} lorem ipsum" for i in range(2000)))
    (source / "02-short.txt").write_text("a short note about glaciers")
    (source / "03-short.txt").write_text("another short note, about tea")
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert report.total_documents == 3 and report.commits >= 2
    with Index.open(tmp_path / "idx") as index:
        assert index.info.documents == 3


def test_build_commits_in_chunks_and_the_result_equals_one_commit(topic_corpus, tmp_path, tiny_model):
    report = build_index(config(topic_corpus, tmp_path / "idx", tiny_model, commit_passages=1))
    assert report.commits == 4 and report.total_documents == 4 and report.passages_embedded == 4
    with Index.open(tmp_path / "idx") as index:
        snap = index.snapshot()
        assert sorted(snap.vectors.ids().tolist()) == sorted(snap.bm25.ids().tolist())
        assert index.info.passages == 4
    again = build_index(config(topic_corpus, tmp_path / "idx", tiny_model, commit_passages=1))
    assert (again.commits, again.passages_embedded, again.documents_unchanged) == (0, 0, 4)  # wrote nothing


def test_ctrl_c_keeps_the_committed_chunks_and_a_rerun_resumes(topic_corpus, tmp_path, tiny_model,
                                                              monkeypatch, caplog):
    real_encode = build_module.encode_texts
    calls = {"n": 0}

    def encode_then_interrupt(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(build_module, "encode_texts", encode_then_interrupt)
    index_dir = tmp_path / "idx"
    with pytest.raises(BuildInterrupted, match=(
            r"^Interrupted: 2 documents \(2 passages\) of this build are committed to .*idx, which "
            r"now holds 2 documents and can be searched\. Run the same command again to resume")):
        build_index(config(topic_corpus, index_dir, tiny_model, commit_passages=1))
    with Index.open(index_dir) as index:
        assert index.info.documents == 2
    monkeypatch.setattr(build_module, "encode_texts", real_encode)
    with caplog.at_level(logging.INFO, logger="indexer.build.loop"):
        resumed = build_index(config(topic_corpus, index_dir, tiny_model, commit_passages=1))
    assert (resumed.documents_added, resumed.documents_unchanged) == (2, 2)
    assert resumed.passages_embedded == 2 and resumed.total_documents == 4
    # The rerun says it resumes, before its bar (which counts only what is left) starts from 0.
    said = [r.getMessage() for r in caplog.records if "unchanged" in r.getMessage()]
    assert said == [f"2 documents already in {index_dir} are unchanged: kept, not embedded again; to do: 2 new"]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="indexer.build.loop"):
        build_index(config(topic_corpus, index_dir, tiny_model, commit_passages=1))
    assert [r.getMessage() for r in caplog.records if "unchanged" in r.getMessage()] == [
        f"4 documents already in {index_dir} are unchanged: kept, not embedded again; nothing else to do"]


def test_ctrl_c_before_the_first_commit_says_nothing_changed(topic_corpus, tmp_path, tiny_model,
                                                           monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "encode_texts", interrupt)
    with pytest.raises(BuildInterrupted, match="nothing new was committed to .*; it is as it was"):
        build_index(config(topic_corpus, tmp_path / "idx", tiny_model))


def test_cli_prints_one_line_on_ctrl_c_not_a_traceback(topic_corpus, tmp_path, tiny_model, monkeypatch,
                                                       capsys):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build_module, "encode_texts", interrupt)
    code = cli_main(["build", "--source", str(topic_corpus), "--index", str(tmp_path / "idx"),
                     "--model", tiny_model, "--quiet"])
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert [line for line in err.splitlines() if "Interrupted" in line] == [
        line for line in err.splitlines() if line.startswith("error:")]
    assert "Run the same command again to resume" in err


class SlowModel:
    """Encodes at a fixed rate, so the progress cadence can be checked without a real model."""

    def __init__(self, seconds_per_text: float) -> None:
        self.seconds_per_text = seconds_per_text
        self.clock = 0.0

    def get_embedding_dimension(self) -> int:
        return 4

    def encode(self, texts, **kwargs):
        self.clock += self.seconds_per_text * len(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_embedding_progress_moves_every_few_seconds_on_a_slow_cpu(monkeypatch):
    """At 5 passages/s, 200 passages take 40 s: the bar must move about every 2 s, not once."""
    model = SlowModel(0.2)
    monkeypatch.setattr(build_module.time, "perf_counter", lambda: model.clock)
    seen: list[tuple[int, float]] = []
    vectors = embed(model, [f"passage {i}" for i in range(200)], 64, False,
                    lambda done, total: seen.append((done, model.clock)))
    assert vectors.shape == (200, 4)
    assert seen[-1][0] == 200
    gaps = np.diff([0.0] + [clock for _, clock in seen])
    assert gaps.max() <= 2 * build_module.PROGRESS_SECONDS, gaps
    assert seen[0][1] <= 2.0, "the first update comes within seconds"


def test_only_what_the_next_commit_takes_is_cut_into_passages_before_it(tiny_model):
    """On a fresh demo build, cutting all 1 M characters first delayed the first commit."""
    from indexer.build.loop import estimated_passages
    from indexer.build.pipeline import PassageCutter
    from indexer.embedding import load_bi_encoder

    model = load_bi_encoder(tiny_model)
    cutter = PassageCutter(model.tokenizer, 20, 4)
    docs = [Document(doc_id=str(i), title="", text="word " * 30, source="s") for i in range(10)]
    chunk = next_chunk(plan({}, docs, "src"), cutter, 2)
    assert 1 <= len(cutter.cut) < len(docs)
    assert len(cutter.cut) == len(chunk.to_embed) + 1, "the documents taken and the one that ended the chunk"
    per_doc = len(cutter.cut["0"])
    assert estimated_passages(docs, cutter.cut) == per_doc * len(docs), "the rest is estimated by characters"


def test_the_estimate_before_the_count_comes_from_a_sample_of_the_whole_plan(tiny_model):
    """A source whose first documents are short: their rate of passages per character, the old
    estimate's, missed the total by a quarter (a newcomer saw it move 3,008 -> 4,081 -> 3,225)."""
    from indexer.build.loop import estimated_passages
    from indexer.build.pipeline import PassageCutter
    from indexer.embedding import load_bi_encoder

    model = load_bi_encoder(tiny_model)
    docs = [Document(doc_id=str(i), title="", text="word " * (12 if i < 300 else 200), source="s")
            for i in range(600)]
    exact = PassageCutter(model.tokenizer, 20, 4)
    total = sum(len(exact(doc)) for doc in docs)
    first = PassageCutter(model.tokenizer, 20, 4)
    for doc in docs[:40]:  # what the first commit and the counting thread cut first
        first(doc)
    assert abs(estimated_passages(docs, first.cut) - total) > 0.2 * total
    sampled = PassageCutter(model.tokenizer, 20, 4)
    sampled.cut_sample(docs, size=40)
    for doc in docs[:40]:
        sampled(doc)
    assert len(sampled.sample) == 40 and len(sampled.cut) < 80
    assert abs(estimated_passages(docs, sampled.cut, sampled.sample) - total) <= 0.05 * total


def test_the_rest_is_counted_in_a_thread_of_its_own_to_the_same_passages(tiny_model):
    from indexer.build.pipeline import PassageCutter
    from indexer.embedding import load_bi_encoder

    model = load_bi_encoder(tiny_model)
    docs = [Document(doc_id=str(i), title="", text="word " * (10 + 7 * i), source="s") for i in range(40)]
    counted = PassageCutter(model.tokenizer, 20, 4)
    counted.count_all(docs)
    counted.wait_counted(60)
    assert counted.counting is not None and not counted.counting.is_alive()
    alone = PassageCutter(model.tokenizer, 20, 4)
    assert counted.cut == {doc.doc_id: alone(doc) for doc in docs}, "the thread cuts as the build would"


def test_a_build_reports_its_exact_total_of_passages_from_the_first_report(tmp_path, tiny_model):
    """Estimated from the documents cut so far, the total moved during a build (3,008 -> 4,081
    -> 3,225); counted in a thread meanwhile, it is exact from the start for a source counted
    within `COUNT_WAIT_SECONDS`."""
    source = tmp_path / "src"
    source.mkdir()
    for i in range(30):  # lengths that make characters a poor guide to passages
        (source / f"d{i}.txt").write_text(("short words " if i % 2 else "antidisestablishmentarianism ") * (5 + 9 * i))
    seen: list[tuple[int, int]] = []
    report = build_index(config(source, tmp_path / "idx", tiny_model, commit_passages=8),
                         progress=lambda done, total: seen.append((done, total)))
    assert report.commits > 2 and seen
    assert {total for _, total in seen} == {report.passages_embedded}, seen


def test_commit_sizes_grow_with_the_index_so_a_large_build_stays_linear() -> None:
    """Each commit rewrites files over every stored passage: a fixed 4096 cap would take ~245
    commits and ~125M passages of rewriting for a 1M-passage build."""
    sizes, stored, rewritten, size = [], 0, 0, 16
    while stored < 1_000_000:
        sizes.append(size)
        stored += size
        rewritten += stored  # the commit writes the vectors and BM25 of everything stored
        size = next_commit_size(size, stored, 4096)
    assert sizes[:9] == [16, 32, 64, 128, 256, 512, 1024, 2048, 4096], "small first commits"
    assert len(sizes) <= 30 and rewritten < 5 * stored
    assert next_commit_size(4096, 10_000, 4096) == 4096, "the cap holds while the index is small"


def test_a_slow_embedders_commits_stay_minutes_apart_however_large_the_index(tmp_path) -> None:
    """A quarter of the index came to 24,050 passages at 120k in a CPU build of /usr/share/doc (6
    minutes of embedding between commits, lost to a Ctrl-C), and would have reached 137,000 at
    550k. At 60 passages/s the ceiling holds a commit to MAX_COMMIT_SECONDS of them; a GPU's rate
    leaves the quarter rule as it was, and the cap is never cut."""
    auto = IndexConfig(source=tmp_path, index_dir=tmp_path / "i")
    cpu = commit_ceiling(auto, 60 * 600, 600.0)  # 60 passages/s over ten minutes
    assert cpu == int(60 * MAX_COMMIT_SECONDS)
    sizes, stored, size = [], 0, 16
    while stored < 550_000:
        sizes.append(size)
        stored += size
        size = next_commit_size(size, stored, 4096, cpu)
    assert max(sizes) == cpu and max(sizes) / 60 <= MAX_COMMIT_SECONDS
    assert next_commit_size(4096, 10_000, 4096, cpu) == 4096, "small indexes as before"
    assert next_commit_size(16_384, 120_000, 4096, cpu) == 18_000
    gpu = commit_ceiling(auto, 5_000 * 600, 600.0)
    assert next_commit_size(100_000, 550_000, 4096, gpu) == 550_000 // 4, "a fast embedder's commits still grow"
    assert next_commit_size(4096, 550_000, 4096, 100) == 4096, "never under the cap"
    assert commit_ceiling(auto, 0, 10.0) is None
    assert commit_ceiling(IndexConfig(source=tmp_path, index_dir=tmp_path / "i", commit_passages=7), 10, 1.0) is None



def test_the_build_holds_its_commits_to_the_ceiling(tmp_path, tiny_model, monkeypatch) -> None:
    """The build loop asks `commit_ceiling` after every commit: with a cap of 2 and a ceiling of 3,
    no commit of 40 one-passage documents holds more than 3; without a ceiling, commits grow to a
    quarter of the index."""
    from indexer.build import loop
    from indexer.store.transaction import WriteTransaction

    source = tmp_path / "src"
    source.mkdir()
    for i in range(40):
        (source / f"doc{i:02}.txt").write_text(f"Short note number {i} about topic {i % 5}.")
    sizes: list[int] = []
    commit = WriteTransaction.commit

    def counted(self, *args, **kwargs):
        result = commit(self, *args, **kwargs)
        sizes.append(result.passages_added)
        return result

    monkeypatch.setattr(WriteTransaction, "commit", counted)
    monkeypatch.setattr(loop, "commit_cap", lambda config, committed, seconds: 2)
    found = {}
    for ceiling in (None, 3):
        sizes.clear()
        monkeypatch.setattr(loop, "commit_ceiling", lambda config, committed, seconds, c=ceiling: c)
        build_index(config(source, tmp_path / f"idx-{ceiling}", tiny_model))
        assert sum(sizes) == 40
        found[ceiling] = max(sizes)
    assert found[3] == 3 and found[None] > 3, found


def test_commits_left_to_the_build_hold_ten_seconds_of_a_fast_embedder(tmp_path):
    """A set commit_passages is the cap; left unset, 4096, or what the build commits in
    COMMIT_SECONDS when that is more (a GPU), never less."""
    chosen = IndexConfig(source=tmp_path, index_dir=tmp_path / "i", commit_passages=7)
    assert commit_cap(chosen, 100_000, 1.0) == 7
    auto = IndexConfig(source=tmp_path, index_dir=tmp_path / "i")
    assert commit_cap(auto, 0, 0.0) == 4096
    assert commit_cap(auto, 46 * 60, 60.0) == 4096  # a CPU's 46 passages/s
    assert commit_cap(auto, 30_000, 10.0) == 30_000  # a GPU build's 3,000/s: 10 s of them
    with pytest.raises(ValueError, match="commit_passages"):
        IndexConfig(source=tmp_path, index_dir=tmp_path / "i", commit_passages=0)


def test_embed_returns_the_vectors_of_encode_texts_and_reports_up_to_the_end(tiny_model):
    """On a CPU in steps sized by the rate; on a GPU in one `encode_texts` call, whose flushes (every
    512 passages) are the reports (bench_gpu runs this test there too)."""
    from indexer.build.pipeline import on_accelerator
    from indexer.embedding import encode_texts, load_bi_encoder

    model = load_bi_encoder(tiny_model)
    texts = [f"word{i} " * (1 + i % 40) for i in range(1100)]
    seen: list[tuple[int, int]] = []
    vectors = embed(model, texts, 32, False, lambda done, total: seen.append((done, total)))
    np.testing.assert_allclose(vectors, encode_texts(model, texts, batch_size=32),
                               atol=1e-2 if on_accelerator(model) else 1e-5)
    assert seen[-1] == (1100, 1100) and all(a[0] < b[0] for a, b in zip(seen, seen[1:], strict=False)), seen
    if on_accelerator(model):
        assert len(seen) <= 3, seen
