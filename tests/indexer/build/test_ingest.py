"""Builds from vectors computed elsewhere (indexer/build/ingest.py).

Most tests use a weightless model folder (`fake_model`): an ingest never loads the model, so they
need no torch. One test encodes with the tiny model and compares with a normal build.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from indexer import (
    BadInputError,
    BuildInterrupted,
    Index,
    IndexConfig,
    IndexMismatchError,
    ModelSpec,
    build_index,
)
from indexer.build.ingest import ingest_embeddings
from tests.indexer.helpers import assert_consistent
from tests.indexer.sources.test_vector_input import (
    DIM,
    IDS,
    bad_rows,
    fake_model,
    unit_rows,
    write_vectors,
)

TOPIC_IDS = ["baking.txt", "football.md", "markets.txt", "volcano.txt"]


def config(source, index_dir, model, **kw) -> IndexConfig:
    return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False, **kw)


def state(index_dir) -> tuple:
    """What a search sees: the build, its passages, a BM25 lookup and a dense lookup."""
    with Index.open(index_dir, use_gpu=False) as index:
        snap = index.snapshot()
        bm25 = snap.bm25.search("bread dough", 4)[1].tolist()
        dense = snap.vectors.search(unit_rows(1, seed=9), 4)[1].tolist()
        return snap.build_id, snap.info.passages, bm25, dense


@pytest.fixture()
def model(tmp_path) -> str:
    return fake_model(tmp_path / "m")  # named "m", as the messages of `bad_rows` expect


@pytest.fixture()
def ingested(topic_corpus, tmp_path, model):
    """An index of the topic corpus from vectors in an .npz: (index folder, vectors by id)."""
    vectors = dict(zip(TOPIC_IDS, unit_rows(4), strict=True))
    path = write_vectors(tmp_path / "vecs.npz", list(vectors), list(vectors.values()))
    ingest_embeddings(config(topic_corpus, tmp_path / "idx", model), path)
    return tmp_path / "idx", vectors


def test_each_document_is_one_passage_with_its_vector(ingested, topic_corpus):
    index_dir, vectors = ingested
    assert_consistent(index_dir)
    with Index.open(index_dir, use_gpu=False) as index:
        snap = index.snapshot()
        assert (snap.info.documents, snap.info.passages, snap.info.dimension) == (4, 4, DIM)
        records = index.passages(snap.vectors.ids().tolist())
        for record in records.values():
            assert (record.start_char, record.end_char) == (0, len(record.text))
            assert record.text == (topic_corpus / record.doc_id).read_text()
            scores, ids = snap.vectors.search(vectors[record.doc_id][None], 1)
            assert ids[0, 0] == record.passage_id and scores[0, 0] == pytest.approx(1, abs=1e-5)
        top = records[int(snap.bm25.search("bread dough", 1)[1][0])]
        assert top.doc_id == "baking.txt"


def test_an_unchanged_rerun_writes_nothing_and_a_change_needs_only_its_vectors(ingested, topic_corpus,
                                                                                tmp_path, model):
    index_dir, vectors = ingested
    before = state(index_dir)
    again = ingest_embeddings(config(topic_corpus, index_dir, model), tmp_path / "vecs.npz")
    assert (again.commits, again.passages_embedded, again.documents_unchanged) == (0, 0, 4)
    assert state(index_dir) == before
    (topic_corpus / "baking.txt").write_text("Sourdough needs a starter fed with flour and water.")
    (topic_corpus / "markets.txt").unlink()
    (topic_corpus / "new.txt").write_text("The orchestra played a symphony by Brahms.")
    path = write_vectors(tmp_path / "delta.jsonl", ["new.txt", "baking.txt"], unit_rows(2, seed=3))
    report = ingest_embeddings(config(topic_corpus, index_dir, model), path)
    assert (report.documents_added, report.documents_updated, report.documents_removed) == (1, 1, 1)
    assert (report.total_documents, report.passages_committed, report.commits) == (4, 2, 1)
    assert report.passages_embedded == 0, "precomputed vectors are ingested, not embedded"
    assert "ingested 2 precomputed vectors" in report.summary()
    assert_consistent(index_dir)


@pytest.mark.parametrize("problem", ["dimension", "nan", "inf", "zero", "duplicate", "unknown", "not unit"])
def test_a_bad_file_leaves_the_index_as_it_was(problem, ingested, topic_corpus, tmp_path, model):
    index_dir, _ = ingested
    before = state(index_dir)
    (topic_corpus / "new.txt").write_text("A new document, so the build has work to do.")
    ids, rows, message = bad_rows(problem, "parquet")  # row 3 is bad
    as_topic = dict(zip(IDS, [*TOPIC_IDS, "new.txt"], strict=True))
    ids = [as_topic.get(i, i) for i in ids]
    message = message.replace("'c'", "'markets.txt'").replace("'a'", "'baking.txt'")
    path = write_vectors(tmp_path / "vecs.parquet", ids, rows)
    with pytest.raises(BadInputError, match=f"vecs.parquet, {message}"):
        ingest_embeddings(config(topic_corpus, index_dir, model), path)
    assert state(index_dir) == before


def test_documents_to_add_without_a_vector_are_named_and_nothing_is_written(ingested, topic_corpus,
                                                                           tmp_path, model):
    index_dir, _ = ingested
    before = state(index_dir)
    (topic_corpus / "new.txt").write_text("A new document without a vector.")
    (topic_corpus / "baking.txt").write_text("Changed too, and no vector either.")
    path = write_vectors(tmp_path / "only_old.npz", ["volcano.txt"], unit_rows(1))
    with pytest.raises(BadInputError, match=r"no vector for 2 document\(s\) of .* that this build must add "
                                            r"or change: 'new.txt' \(new.txt\), 'baking.txt'"):
        ingest_embeddings(config(topic_corpus, index_dir, model), path)
    assert state(index_dir) == before


def test_a_first_ingest_missing_vectors_fails_before_creating_the_folder(topic_corpus, tmp_path, model):
    path = write_vectors(tmp_path / "v.jsonl", TOPIC_IDS[:3], unit_rows(3))
    with pytest.raises(BadInputError, match=r"no vector for 1 document\(s\) .*'volcano.txt' \(volcano.txt\)"):
        ingest_embeddings(config(topic_corpus, tmp_path / "idx", model), path)
    assert not (tmp_path / "idx").exists()


def test_normalize_embeddings_scales_vectors_that_would_be_refused(topic_corpus, tmp_path, model):
    rows = unit_rows(4)
    path = write_vectors(tmp_path / "v.npy", TOPIC_IDS, rows * 3)
    with pytest.raises(BadInputError, match=r"row 1 \(id 'baking.txt'\): the vector's norm is 3.*--normalize-embeddings"):
        ingest_embeddings(config(topic_corpus, tmp_path / "idx", model), path)
    ingest_embeddings(config(topic_corpus, tmp_path / "idx", model), path, normalize=True)
    with Index.open(tmp_path / "idx", use_gpu=False) as index:
        scores, _ = index.vectors.search(rows[:1], 1)
    assert scores[0, 0] == pytest.approx(1, abs=1e-5)


def test_vectors_of_another_model_are_refused_by_the_index(ingested, topic_corpus, tmp_path):
    index_dir, _ = ingested
    before = state(index_dir)
    wide = fake_model(tmp_path / "wide", dim=16)
    path = write_vectors(tmp_path / "wide.npz", TOPIC_IDS, unit_rows(4, dim=16))
    with pytest.raises(BadInputError, match=r"wide.npz, row 1 \(id 'baking.txt'\): the vectors have 16 "
                                            r"values .* the index in .* holds vectors of 8"):
        ingest_embeddings(config(topic_corpus, index_dir, wide), path, normalize=True)
    other = fake_model(tmp_path / "other", pooling={"embedding_dimension": 8, "pooling_mode": ["mean"]})
    with pytest.raises(IndexMismatchError, match="it is another model"):
        ingest_embeddings(config(topic_corpus, index_dir, other), tmp_path / "vecs.npz")
    assert state(index_dir) == before


def test_a_jsonl_source_carries_its_own_vectors_and_an_interrupted_ingest_resumes(tmp_path, model):
    rows = unit_rows(40)
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(
        json.dumps({"id": f"d{i}", "title": f"Doc {i}", "text": f"text number {i}", "lang": "en",
                    "embedding": rows[i].tolist()}) + "\n" for i in range(40)))
    cfg = config(source, tmp_path / "idx", model, commit_passages=4)

    def stop_after_two_commits(done: int, total: int) -> None:
        if done >= 8:
            raise KeyboardInterrupt

    with pytest.raises(BuildInterrupted, match=r"8 documents \(8 passages\) of this build are committed"):
        ingest_embeddings(cfg, source, progress=stop_after_two_commits)
    assert len(assert_consistent(tmp_path / "idx")) == 8
    report = ingest_embeddings(cfg, source)
    assert (report.documents_added, report.documents_unchanged, report.total_documents) == (32, 8, 40)
    with Index.open(tmp_path / "idx", use_gpu=False) as index:
        record = next(iter(index.passages(index.vectors.ids()[:1].tolist()).values()))
        assert record.metadata == {"lang": "en"}, "the vector is not kept as metadata"
        scores, ids = index.vectors.search(rows[[17]], 1)
        assert index.passages(ids[0].tolist())[int(ids[0, 0])].doc_id == "d17"


PROBE = """
import sys
from pathlib import Path
from indexer import IndexConfig
from indexer.build.ingest import ingest_embeddings
config = IndexConfig(source=Path(sys.argv[1]), index_dir=Path(sys.argv[2]), model=sys.argv[3],
                     show_progress=False)
report = ingest_embeddings(config, Path(sys.argv[4]))
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
print(report.total_passages, ",".join(heavy) or "none")
"""


def test_the_ingest_path_imports_no_torch(topic_corpus, tmp_path, model):
    path = write_vectors(tmp_path / "v.parquet", TOPIC_IDS, unit_rows(4))
    out = subprocess.run([sys.executable, "-c", PROBE, str(topic_corpus), str(tmp_path / "idx"), model,
                          str(path)], capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert out == ["4", "none"], f"{out[0]} passages; heavy modules imported: {out[1]}"


def test_ingested_vectors_of_the_model_search_like_a_normal_build(topic_corpus, tmp_path, tiny_model):
    from indexer.build.pipeline import embedded_title
    from indexer.embedding import encode_texts, load_bi_encoder
    from indexer.sources.passage_text import passage_text
    from indexer.sources.readers import read_documents
    from indexer.sources.vector_input import model_dimension
    from search.searcher import Searcher

    build_index(config(topic_corpus, tmp_path / "built", tiny_model))
    encoder = load_bi_encoder(tiny_model)
    docs = list(read_documents(topic_corpus))
    assert model_dimension(ModelSpec.resolve(tiny_model)) == encoder.get_embedding_dimension()
    rows = encode_texts(encoder, [passage_text(embedded_title(d.title, encoder), d.text) for d in docs])
    path = write_vectors(tmp_path / "encoded.parquet", [d.doc_id for d in docs], rows)
    ingest_embeddings(config(topic_corpus, tmp_path / "ingested", tiny_model), path)
    built, ingested = Searcher(tmp_path / "built"), Searcher(tmp_path / "ingested")
    try:
        for query in ("volcano ash over Iceland", "bread dough", "interest rates", "the striker scored"):
            a, b = built.search(query, k=4, mode="dense"), ingested.search(query, k=4, mode="dense")
            assert [h.doc_id for h in a] == [h.doc_id for h in b]
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
    finally:
        built.close()
        ingested.close()


def test_spilled_vectors_are_stored_as_vectors_in_memory_are(topic_corpus, tmp_path, model, monkeypatch):
    """A table over SPILL_BYTES waits in a file and reaches the index as rows read when sliced
    (`TakenRows`), through a first build's merge and a later commit's delta alike."""
    import numpy as np

    from indexer.sources import vector_input

    corpus = tmp_path / "docs"
    corpus.mkdir()
    for name in TOPIC_IDS:
        (corpus / name).write_text((topic_corpus / name).read_text())
    vectors = dict(zip(TOPIC_IDS, unit_rows(4, seed=3), strict=True))
    path = write_vectors(tmp_path / "vecs.npz", list(vectors), list(vectors.values()))

    def stored(index_dir) -> dict[str, np.ndarray]:
        with Index.open(index_dir, use_gpu=False) as index:
            snap = index.snapshot()
            records = index.passages(snap.vectors.ids().tolist())
            return {r.doc_id: snap.vectors.vector(r.passage_id) for r in records.values()}

    ingest_embeddings(config(corpus, tmp_path / "kept", model), path)
    monkeypatch.setattr(vector_input, "SPILL_BYTES", 4 * DIM)
    ingest_embeddings(config(corpus, tmp_path / "spilled", model), path)
    (corpus / "volcano.txt").write_text("Lava flows from the volcano again.")
    vectors["volcano.txt"] = unit_rows(1, seed=11)[0]
    path = write_vectors(tmp_path / "vecs2.npz", list(vectors), list(vectors.values()))
    for name in ("spilled", "kept"):
        first = stored(tmp_path / name)
        assert first.keys() == vectors.keys()
        ingest_embeddings(config(corpus, tmp_path / name, model), path)
        monkeypatch.setattr(vector_input, "SPILL_BYTES", 256 * 2**20)
    for name in ("spilled", "kept"):
        after = stored(tmp_path / name)
        assert after.keys() == vectors.keys()
        assert all(np.allclose(after[doc], vectors[doc], atol=1e-6) for doc in vectors), name
