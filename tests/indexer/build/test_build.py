"""Incremental builds, consistency of SQL rows with FAISS and BM25, and failure safety (tiny model)."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

from indexer import BadInputError, Index, IndexConfig, IndexMismatchError, build_index
from indexer.store.faiss_store import VectorStore


def store_state(index_dir):
    """(passage ids in SQL, ids in FAISS) for the committed state of an index.

    Also checks that the committed BM25 index holds exactly the SQL passage ids.
    """
    with sqlite3.connect(index_dir / "store.sqlite") as db:
        sql_ids = sorted(row[0] for row in db.execute("SELECT id FROM semsearch_passages"))
    db.close()
    with Index.open(index_dir) as index:
        snap = index.snapshot()
        faiss_ids = sorted(snap.vectors.ids().tolist())
        bm25_ids = sorted(snap.bm25.ids().tolist())
        assert snap.info.passages == len(sql_ids)
    assert bm25_ids == sql_ids, "BM25 must index exactly the committed passages"
    return sql_ids, faiss_ids


def committed_files(index_dir) -> tuple[str, str]:
    with Index.open(index_dir) as index:
        return index.info.vector_file, index.info.bm25_dir


def config(source, index_dir, model, **kw):
    return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False, **kw)


def test_incremental_add_change_delete_keeps_sql_and_faiss_equal(topic_corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    first = build_index(config(topic_corpus, index_dir, tiny_model))
    assert (first.documents_added, first.total_documents) == (4, 4)
    sql_ids, faiss_ids = store_state(index_dir)
    assert sql_ids == faiss_ids and len(sql_ids) == first.total_passages

    unchanged = build_index(config(topic_corpus, index_dir, tiny_model))
    assert unchanged.documents_unchanged == 4 and unchanged.passages_embedded == 0
    assert store_state(index_dir) == (sql_ids, faiss_ids), "an unchanged source touches nothing"

    (topic_corpus / "baking.txt").write_text("Sourdough needs a starter fed with flour and water.")
    (topic_corpus / "markets.txt").unlink()
    (topic_corpus / "new.txt").write_text("The orchestra played a symphony by Brahms.")
    third = build_index(config(topic_corpus, index_dir, tiny_model))
    assert (third.documents_added, third.documents_updated, third.documents_removed) == (1, 1, 1)
    assert third.documents_unchanged == 2
    assert third.passages_embedded == 2
    sql_after, faiss_after = store_state(index_dir)
    assert sql_after == faiss_after
    assert len(sql_after) == third.total_passages == 4
    assert len(list(index_dir.glob("vectors-*.faiss"))) == 1, "stale vector files are removed"
    assert [p.name for p in index_dir.glob("bm25-*")] == [committed_files(index_dir)[1]]


def test_bm25_follows_adds_changes_and_deletes(topic_corpus, tmp_path, tiny_model):
    from search import Searcher

    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    vector_file, bm25_dir = committed_files(index_dir)
    assert vector_file.removeprefix("vectors-").removesuffix(".faiss") == bm25_dir.removeprefix("bm25-")
    searcher = Searcher(index_dir)
    assert [h.doc_id for h in searcher.search("sourdough", mode="bm25")] == []

    (topic_corpus / "baking.txt").write_text("Sourdough needs a starter fed with flour and water.")
    (topic_corpus / "volcano.txt").unlink()
    (topic_corpus / "glacier.txt").write_text("The glacier retreated a kilometre in a decade.")
    build_index(config(topic_corpus, index_dir, tiny_model))
    store_state(index_dir)
    assert searcher.refresh() is True
    assert [h.doc_id for h in searcher.search("sourdough starter", mode="bm25")] == ["baking.txt"]
    assert [h.doc_id for h in searcher.search("glacier", mode="bm25")] == ["glacier.txt"]
    assert searcher.search("volcano Iceland", mode="bm25") == [], "deleted text is gone from BM25"
    assert searcher.search("knead dough", mode="bm25") == [], "changed text is replaced in BM25"
    assert not (index_dir / bm25_dir).exists(), "stale BM25 folders are removed"


def test_index_of_an_older_format_asks_for_a_rebuild_and_rebuild_works(topic_corpus, tmp_path, tiny_model):
    """An index whose info table predates the current format: opening and plain builds say to
    rebuild; --rebuild drops the old tables and starts afresh."""
    from search import Searcher

    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    with sqlite3.connect(index_dir / "store.sqlite") as db:
        db.execute("ALTER TABLE semsearch_index_info DROP COLUMN format")
    db.close()
    with pytest.raises(IndexMismatchError, match=r"older version of semsearch.*--rebuild"):
        Searcher(index_dir)
    with pytest.raises(IndexMismatchError, match=r"older version of semsearch.*--rebuild"):
        build_index(config(topic_corpus, index_dir, tiny_model))
    report = build_index(config(topic_corpus, index_dir, tiny_model, rebuild=True))
    assert report.documents_added == 4
    sql_ids, faiss_ids = store_state(index_dir)
    assert sql_ids == faiss_ids and len(sql_ids) == 4


def test_long_documents_are_split_not_truncated(tmp_path, tiny_model):
    source = tmp_path / "long.jsonl"
    text = " ".join(f"sentence number {i} talks about topic {i % 7}." for i in range(200))
    source.write_text(json.dumps({"id": "long", "title": "Long", "text": text}) + "\n")
    report = build_index(config(source, tmp_path / "idx", tiny_model, overlap_tokens=4))
    assert report.total_passages > 1
    with Index.open(tmp_path / "idx") as index:
        records = sorted(index.passages(index.vectors.ids()).values(), key=lambda r: r.start_char)
    assert len(records) == report.total_passages
    assert records[0].start_char == 0 and records[-1].end_char == len(text)
    for record in records:
        assert text[record.start_char : record.end_char] == record.text
        assert record.doc_id == "long"


def test_other_model_into_existing_index_suggests_rebuild(topic_corpus, tmp_path, tiny_model, tiny_model_dir):
    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    with pytest.raises(IndexMismatchError, match="it is another model, .*pass --rebuild"):
        build_index(config(topic_corpus, index_dir, str(tiny_model_dir)))
    rebuilt = build_index(config(topic_corpus, index_dir, str(tiny_model_dir), rebuild=True))
    assert rebuilt.documents_added == 4
    sql_ids, faiss_ids = store_state(index_dir)
    assert sql_ids == faiss_ids and len(sql_ids) == 4


def test_failed_write_leaves_previous_index_usable(topic_corpus, tmp_path, tiny_model, monkeypatch):
    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    before = store_state(index_dir)
    (topic_corpus / "extra.txt").write_text("A brand new document about glaciers.")

    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(VectorStore, "save", disk_full)
    with pytest.raises(OSError, match="No space left"):
        build_index(config(topic_corpus, index_dir, tiny_model))
    monkeypatch.undo()
    assert store_state(index_dir) == before, "a failed build must not change what is stored"
    after = build_index(config(topic_corpus, index_dir, tiny_model))
    assert after.documents_added == 1


def test_strict_turns_bad_input_into_an_error_before_anything_is_written(tmp_path, tiny_model):
    source = tmp_path / "src"
    source.mkdir()
    (source / "good.txt").write_text("fine text")
    (source / "bad.jsonl").write_text("{broken\n")
    with pytest.raises(BadInputError, match=r"bad.jsonl:1: malformed JSON .*--strict"):
        build_index(config(source, tmp_path / "idx", tiny_model, strict=True))
    assert not (tmp_path / "idx" / "index.json").exists()
    lenient = build_index(config(source, tmp_path / "idx", tiny_model))
    assert lenient.total_documents == 1
    assert [str(i) for i in lenient.issues] == ["bad.jsonl:1: malformed JSON (Expecting property name enclosed in double quotes)"]


def test_empty_source_is_an_error(tmp_path, tiny_model):
    (tmp_path / "src").mkdir()
    with pytest.raises(BadInputError, match="No documents found"):
        build_index(config(tmp_path / "src", tmp_path / "idx", tiny_model))


def test_source_with_nothing_indexable_fails_and_writes_no_index(tmp_path, tiny_model):
    source = tmp_path / "src"
    source.mkdir()
    (source / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (source / "blank.txt").write_text("  \n")
    with pytest.raises(BadInputError, match=r"Nothing in .*src can be indexed, so nothing was written: "
                       r"blank.txt: empty document; image.png: binary file \(a PNG image\)"):
        build_index(config(source, tmp_path / "idx", tiny_model))
    assert not (tmp_path / "idx").exists()


def test_prune_false_keeps_documents_the_source_lacks(topic_corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "note.txt").write_text("An uploaded note about comets.")
    report = build_index(config(uploads, index_dir, tiny_model, prune=False))
    assert (report.documents_added, report.documents_removed, report.total_documents) == (1, 0, 5)


def test_passage_tokens_that_do_not_fit_the_model_are_rejected(topic_corpus, tmp_path, tiny_model):
    with pytest.raises(ValueError, match=r"passage_tokens \(500\) does not fit the model's max sequence length \(128\)"):
        build_index(config(topic_corpus, tmp_path / "idx", tiny_model, passage_tokens=500))


def test_vectors_are_unit_norm(topic_corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    with Index.open(index_dir) as index:
        store = index.vectors
    scores, _ = store.search(np.eye(store.dim, dtype=np.float32)[:1], store.ntotal)
    assert np.all(np.abs(scores) <= 1.0 + 1e-5)


def test_a_build_with_nothing_to_embed_never_loads_the_model(topic_corpus, tmp_path, tiny_model, monkeypatch):
    """An unchanged source, and one with documents only removed, commit without the bi-encoder;
    anything to embed, or --rebuild, loads it."""
    import indexer.build.pipeline

    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    loads = []
    real_load = indexer.build.pipeline.load_bi_encoder
    monkeypatch.setattr(indexer.build.pipeline, "load_bi_encoder", lambda spec, **kw: loads.append(spec) or real_load(spec, **kw))

    unchanged = build_index(config(topic_corpus, index_dir, tiny_model))
    assert (unchanged.documents_unchanged, unchanged.passages_embedded) == (4, 0)
    assert unchanged.total_documents == 4 and unchanged.model == indexer.build.pipeline.ModelSpec.resolve(tiny_model).id
    (topic_corpus / "markets.txt").unlink()
    removed = build_index(config(topic_corpus, index_dir, tiny_model))
    assert (removed.documents_removed, removed.passages_removed, removed.total_documents) == (1, 1, 3)
    sql_ids, faiss_ids = store_state(index_dir)
    assert sql_ids == faiss_ids and len(sql_ids) == 3
    assert loads == [], "nothing was embedded, so the model was not loaded"

    (topic_corpus / "new.txt").write_text("The orchestra played a symphony by Brahms.")
    added = build_index(config(topic_corpus, index_dir, tiny_model))
    assert (added.documents_added, added.passages_embedded) == (1, 1) and len(loads) == 1
    build_index(config(topic_corpus, index_dir, tiny_model, rebuild=True))
    assert len(loads) == 2, "--rebuild re-embeds everything"


def test_a_build_with_nothing_to_embed_still_refuses_damaged_files_and_another_model(
    topic_corpus, tmp_path, tiny_model
):
    import shutil

    from indexer import IndexUnreadableError

    index_dir = tmp_path / "idx"
    build_index(config(topic_corpus, index_dir, tiny_model))
    other = shutil.copytree(tiny_model, tmp_path / "other_model")
    with pytest.raises(IndexMismatchError, match="it is another model.*--rebuild"):
        build_index(config(topic_corpus, index_dir, str(other)))
    vector_file = index_dir / committed_files(index_dir)[0]
    vector_file.write_bytes(vector_file.read_bytes()[:-8])
    with pytest.raises(IndexUnreadableError, match="damaged"):
        build_index(config(topic_corpus, index_dir, tiny_model))


# --- documents in other formats (issue 28) ------------------------------------------------------


def test_a_partly_scanned_pdf_is_indexed_with_a_warning_that_strict_makes_an_error(tmp_path, tiny_model):
    from tests.indexer.sources.formats.samples import PAGE_TEXTS, write_scanned_pdf

    source = tmp_path / "papers"
    source.mkdir()
    write_scanned_pdf(source / "scan.pdf", PAGE_TEXTS[:1], scanned=2)
    with pytest.raises(BadInputError, match=r"scan.pdf: no text layer on pages 1–2 of 3 .*--strict"):
        build_index(config(source, tmp_path / "idx", tiny_model, strict=True))
    assert not (tmp_path / "idx").exists()
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert report.total_documents == 1 and report.issues == []
    assert any("scan.pdf: no text layer on pages 1–2 of 3" in w for w in report.warnings)


def test_a_document_that_turns_unreadable_keeps_its_stored_version(tmp_path, tiny_model):
    from tests.indexer.sources.formats.samples import PAGE_TEXTS, truncate, write_docx, write_pdf

    source = tmp_path / "papers"
    source.mkdir()
    write_pdf(source / "a.pdf", PAGE_TEXTS)
    write_docx(source / "b.docx", [("h1", "Intro"), ("p", "A Word file about kayaks.")])
    (source / "notes.txt").write_text("Notes that stay readable.", encoding="utf-8")
    build_index(config(source, tmp_path / "idx", tiny_model))
    before = store_state(tmp_path / "idx")
    truncate(source / "a.pdf")
    truncate(source / "b.docx")
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert sorted(str(i) for i in report.issues) == [
        "a.pdf: damaged or truncated PDF (Failed to load document (PDFium: Data format error)); download or "
        "export it again",
        "b.docx: damaged or truncated Word file (File is not a zip file); download or save it again"]
    assert report.documents_removed == 0 and store_state(tmp_path / "idx") == before
    assert any("kept the stored version of 2 document(s)" in w for w in report.warnings)


def test_a_build_in_worker_processes_stores_what_a_build_without_them_stores(tmp_path, tiny_model, monkeypatch):
    """Cutting and BM25 tokens in 2 worker processes (every BM25 block in them): the same passages
    in SQL, the same BM25 answers, the same vectors."""
    from indexer.sources import workers
    from indexer.store import bm25_store

    source = tmp_path / "corpus"
    source.mkdir()
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
    for i in range(12):
        (source / f"doc{i}.md").write_text(
            f"# Title {i}\n\n" + " ".join(words[(i + k) % len(words)] for k in range(300 + 40 * i)), encoding="utf-8")
    built = {}
    for count in ("0", "2"):
        monkeypatch.setenv("SEMSEARCH_BUILD_WORKERS", count)
        monkeypatch.setattr(bm25_store, "WORKER_TEXTS", 1)
        build_index(IndexConfig(source=source, index_dir=tmp_path / f"index-{count}", model=tiny_model,
                                show_progress=False))
        with Index.open(tmp_path / f"index-{count}", use_gpu=False) as index:
            snap = index.snapshot()
            records = index.passages(sorted(snap.vectors.ids().tolist()))
            texts = [(records[i].title, records[i].text) for i in sorted(records)]
            ids = sorted(snap.vectors.ids().tolist())
            vectors = np.stack([snap.vectors.vector(i) for i in ids])
            answers = [snap.bm25.search(q, 5) for q in ("gamma delta", "title 7", "kappa")]
        built[count] = (texts, vectors, answers)
    workers.shutdown()
    assert built["2"][0] == built["0"][0] and len(built["0"][0]) > 12
    np.testing.assert_allclose(built["2"][1], built["0"][1], atol=1e-6)
    for (scores2, ids2), (scores0, ids0) in zip(built["2"][2], built["0"][2], strict=True):
        np.testing.assert_array_equal(ids2, ids0)
        np.testing.assert_allclose(scores2, scores0, rtol=1e-6)
