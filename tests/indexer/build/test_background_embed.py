"""Embedding ahead of the commits (a GPU's build): the same index as the loop's own, in order, stoppable."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import indexer.build.background_embed as ahead_module
import indexer.build.pipeline as build_module
from indexer import Index, build_index
from indexer.build.background_embed import BackgroundStream
from indexer.embedding import load_bi_encoder
from indexer.sources.chunking import split_into_sections
from indexer.sources.documents import Document
from tests.indexer.helpers import (
    assert_consistent,
    config,
    embedding_of,
    stored_vector,
    write_corpus,
)

DOCS = {f"{i:02d}-note.txt": f"Note {i}. " + " ".join(f"glacier{i} tea{i % 3} river{j}" for j in range(40 * (i % 4) + 5))
        for i in range(12)}


def _vectors(index_dir):
    with Index.open(index_dir, use_gpu=False) as index:
        snap = index.snapshot()
        ids = sorted(assert_consistent(index_dir))
        records = index.passages(ids)
        return {(r.doc_id, r.text): stored_vector(snap, pid) for pid, r in records.items()}, records


def test_a_build_that_embeds_ahead_stores_what_the_loop_stores(tmp_path, tiny_model, monkeypatch):
    source = write_corpus(tmp_path / "src", DOCS)
    plain = build_index(config(source, tmp_path / "plain", tiny_model, commit_passages=7))
    monkeypatch.setattr(build_module, "EMBED_AHEAD_DEVICES", frozenset({"cpu", "cuda"}))
    monkeypatch.setattr(ahead_module, "BLOCK_PASSAGES", 5)  # blocks that straddle the commits
    monkeypatch.setattr(ahead_module, "AHEAD_BLOCKS", 2)
    made: list[BackgroundStream] = []
    real = build_module.BackgroundStream

    def recorded(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(build_module, "BackgroundStream", recorded)
    steps: list[tuple[int, int]] = []
    ahead = build_index(config(source, tmp_path / "ahead", tiny_model, commit_passages=7),
                        progress=lambda done, total: steps.append((done, total)))
    assert len(made) == 1, "the build embedded through the stream"
    assert (ahead.passages_embedded, ahead.commits) == (plain.passages_embedded, plain.commits) and ahead.commits > 3
    assert steps[-1][0] == steps[-1][1] == ahead.passages_embedded
    expected, _ = _vectors(tmp_path / "plain")
    got, records = _vectors(tmp_path / "ahead")
    assert got.keys() == expected.keys()
    for key, vector in got.items():
        np.testing.assert_allclose(vector, expected[key], atol=1e-5)
    model = load_bi_encoder(tiny_model)
    some = next(iter(records.values()))
    np.testing.assert_allclose(got[(some.doc_id, some.text)], embedding_of(model, some), atol=1e-5)
    assert not made[0]._thread.is_alive(), "the thread ends with the plan"


def _docs(n: int) -> list[Document]:
    return [Document(doc_id=f"d{i}", title=f"Title {i}", text=f"text number {i} about rivers", source=f"d{i}.txt")
            for i in range(n)]


def _cut(doc, tokenizer):
    return split_into_sections(doc.text, [], tokenizer, 20, 0, 0)


def test_taking_passages_out_of_the_plans_order_raises(tiny_model):
    model = load_bi_encoder(tiny_model)
    docs = _docs(4)
    table: dict = {}
    stream = BackgroundStream(model, docs, _cut, table, True, 8)
    try:
        first = stream.take(docs[:1], [table.get("d0") or _cut(docs[0], model.tokenizer)])
        assert first.shape == (1, 32)
        with pytest.raises(RuntimeError, match="other than the next ones of its plan.*run the same command again"):
            stream.take(docs[2:3], [_cut(docs[2], model.tokenizer)])
    finally:
        stream.close()


def test_close_stops_a_thread_that_waits_on_a_full_queue(tiny_model, monkeypatch):
    monkeypatch.setattr(ahead_module, "BLOCK_PASSAGES", 1)
    monkeypatch.setattr(ahead_module, "AHEAD_BLOCKS", 2)
    model = load_bi_encoder(tiny_model)
    stream = BackgroundStream(model, _docs(50), _cut, {}, True, 8)
    deadline = time.monotonic() + 30
    while not stream._queue.full() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stream._queue.full(), "it ran ahead by AHEAD_BLOCKS and no further"
    time.sleep(0.3)
    assert stream._queue.qsize() == 2
    stream.close()
    assert not stream._thread.is_alive()
    assert "semsearch-embed-ahead" not in {t.name for t in threading.enumerate()}


def test_an_error_in_the_thread_is_raised_in_the_build(tiny_model):
    model = load_bi_encoder(tiny_model)

    def broken(doc, tokenizer):
        raise ValueError(f"cannot cut {doc.doc_id}")

    docs = _docs(2)
    stream = BackgroundStream(model, docs, broken, {}, True, 8)
    try:
        with pytest.raises(ValueError, match="cannot cut d0"):
            stream.take(docs[:1], [_cut(docs[0], model.tokenizer)])
    finally:
        stream.close()
