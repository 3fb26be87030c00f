"""The PostgreSQL path for real, against the server on 127.0.0.1:5432 (skipped if none answers)."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from indexer import IndexConfig, build_index
from search import Searcher

PG_URL = os.environ.get("SEMSEARCH_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


@pytest.fixture()
def pg_schema_url():
    """A private schema per test, so runs never see each other's rows; dropped afterwards."""
    engine = create_engine(PG_URL)
    try:
        with engine.connect() as conn:
            conn.execute(text("select 1"))
    except OperationalError:
        engine.dispose()
        pytest.skip(f"no PostgreSQL server answers at {PG_URL}")
    schema = f"semsearch_test_{uuid.uuid4().hex[:8]}"
    with engine.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield f"{PG_URL}?options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


def test_build_update_and_search_on_postgres(topic_corpus, tmp_path, tiny_model, pg_schema_url):
    index_dir = tmp_path / "idx"
    cfg = IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, db_url=pg_schema_url, show_progress=False)
    first = build_index(cfg)
    assert first.total_documents == 4
    assert not (index_dir / "store.sqlite").exists(), "rows must go to PostgreSQL, not SQLite"

    (topic_corpus / "volcano.txt").unlink()
    second = build_index(cfg)
    assert (second.documents_removed, second.total_documents) == (1, 3)

    searcher = Searcher(index_dir)  # finds the database through the manifest
    stats = searcher.stats()
    assert (stats.documents, stats.passages) == (3, searcher.index.vectors.ntotal)
    hits = searcher.search("bread", k=10)
    assert {h.doc_id for h in hits} == {"baking.txt", "football.md", "markets.txt"}


def test_a_second_folder_on_the_same_schema_is_refused_even_with_rebuild(topic_corpus, tmp_path, tiny_model, pg_schema_url):
    import re

    from indexer import Index, IndexMismatchError
    from tests.indexer.helpers import assert_consistent, sql_passage_ids

    first, second = tmp_path / "first", tmp_path / "second"
    build_index(IndexConfig(source=topic_corpus, index_dir=first, model=tiny_model, db_url=pg_schema_url, show_progress=False))
    rows = sql_passage_ids(pg_schema_url)
    refused = (rf"holds the index of another folder \({re.escape(str(first.resolve()))}, index id \w{{32}}\), "
               rf"not of {re.escape(str(second))}\. Point --db at another database or PostgreSQL schema "
               r"\(for example \?options=-csearch_path%3Dmy_schema\), or use that folder\. Nothing was changed\.")
    for rebuild in (False, True):
        cfg = IndexConfig(source=topic_corpus, index_dir=second, model=tiny_model, db_url=pg_schema_url,
                          rebuild=rebuild, show_progress=False)
        with pytest.raises(IndexMismatchError, match=refused):
            build_index(cfg)
        assert sql_passage_ids(pg_schema_url) == rows, f"rebuild={rebuild} touched the first folder's rows"
    assert not (second / "index.json").exists(), "a refused build writes nothing"
    with pytest.raises(IndexMismatchError, match=refused):
        Index.open(second, db_url=pg_schema_url)
    assert assert_consistent(first) == rows


def test_advisory_lock_held_by_another_connection_makes_a_build_busy(topic_corpus, tmp_path, tiny_model, pg_schema_url):
    from indexer import IndexBusyError
    from tests.indexer.helpers import assert_consistent

    cfg = IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model, db_url=pg_schema_url, show_progress=False)
    build_index(cfg)
    (topic_corpus / "extra.txt").write_text("A document that waits for the lock.")
    other = create_engine(pg_schema_url)
    try:
        with other.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(hashtext(current_schema() || '.semsearch_build'))"))
            with pytest.raises(IndexBusyError, match=r"Another build is writing the index tables in "
                               r"postgresql\+psycopg://.* \(it holds their PostgreSQL advisory lock\)\. Wait "
                               r"for it to finish and run this build again; the lock is released when that "
                               r"build ends, so there is nothing to remove\.") as err:
                build_index(cfg)
            assert "delete" not in str(err.value)
    finally:
        other.dispose()  # closing the session releases its advisory lock
    assert build_index(cfg).documents_added == 1
    assert len(assert_consistent(tmp_path / "idx")) == 5


def test_postgres_ids_are_never_reused_and_stale_readers_read_their_own_text(topic_corpus, tmp_path, tiny_model, pg_schema_url):
    from indexer import Index
    from tests.indexer.helpers import assert_consistent

    index_dir = tmp_path / "idx"
    cfg = IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, db_url=pg_schema_url, show_progress=False)
    build_index(cfg)
    seen = assert_consistent(index_dir)
    index = Index.open(index_dir, use_gpu=False)
    try:
        ids = index.snapshot().vectors.ids()
        then = {pid: r.text for pid, r in index.passages(ids).items()}
        (topic_corpus / "markets.txt").unlink()
        (topic_corpus / "baking.txt").write_text("Sourdough needs a starter fed with flour and water.")
        (topic_corpus / "glacier.txt").write_text("The glacier retreated a kilometre in a decade.")
        build_index(cfg)
        now = index.passages(ids)  # no refresh: the previous build's ids
        assert {pid: r.text for pid, r in now.items()} == {pid: then[pid] for pid in now}
        assert len(now) == 2
        after = assert_consistent(index_dir)  # FAISS == BM25 == SQL ids, as sets
        assert not (after - seen) & seen
        assert index.refresh() is True and set(index.snapshot().vectors.ids().tolist()) == after
    finally:
        index.close()


def test_delta_segments_and_tombstones_on_postgres(topic_corpus, tmp_path, tiny_model, pg_schema_url):
    """The proportionate commit path (a delta segment, a tombstone) keeps PostgreSQL, FAISS and
    BM25 in step, and an older table of this format gains its layout column in place."""
    from sqlalchemy import text as sql

    from indexer.store.segments import SegmentPolicy
    from tests.indexer.helpers import assert_consistent

    index_dir = tmp_path / "idx"
    cfg = IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, db_url=pg_schema_url,
                      show_progress=False, segments=SegmentPolicy(min_base_passages=0, merge_fraction=1.0))
    build_index(cfg)
    engine = create_engine(pg_schema_url)
    with engine.begin() as conn:  # as a table from before index types: no layout column
        conn.execute(sql("ALTER TABLE semsearch_index_info DROP COLUMN layout"))
    engine.dispose()
    (topic_corpus / "volcano.txt").unlink()
    (topic_corpus / "glacier.txt").write_text("The glacier retreated a kilometre in a decade.")
    report = build_index(cfg)
    assert (report.documents_added, report.documents_removed, report.total_documents) == (1, 1, 4)
    assert len(assert_consistent(index_dir, pg_schema_url)) == report.total_passages
    searcher = Searcher(index_dir)
    stats = searcher.stats()
    assert (stats.delta_segments, stats.deleted_pending) == (1, 1)
    assert searcher.search("glacier retreated", k=1, mode="bm25")[0].doc_id == "glacier.txt"
    assert "volcano.txt" not in {h.doc_id for h in searcher.search("volcano", k=10, mode="bm25")}
    searcher.close()


def test_a_rebuild_on_postgres_is_served_whole_until_it_commits(tmp_path, tiny_model, pg_schema_url, monkeypatch):
    """Readers of a PostgreSQL index keep the previous build, all of it, while a --rebuild runs:
    it lands in one transaction, and MVCC shows the old rows until then."""
    from indexer import Index
    from indexer.store.transaction import WriteTransaction
    from tests.indexer.helpers import write_corpus

    docs = {f"doc{i:02d}.txt": f"Document {i} about " + " ".join(f"w{i}x{j}" for j in range(30)) for i in range(30)}
    source = write_corpus(tmp_path / "corpus", docs)
    index_dir = tmp_path / "idx"
    cfg = IndexConfig(source=source, index_dir=index_dir, model=tiny_model, db_url=pg_schema_url,
                      commit_passages=16, show_progress=False)
    assert build_index(cfg).commits > 1
    with Index.open(index_dir, use_gpu=False) as index:
        build_id = index.build_id
    seen = []
    commit = WriteTransaction.commit

    def watched(self, *args, **kwargs):
        with Index.open(index_dir, use_gpu=False) as reader:
            seen.append((reader.build_id, reader.stats().documents))
        return commit(self, *args, **kwargs)

    monkeypatch.setattr(WriteTransaction, "commit", watched)
    from dataclasses import replace

    assert build_index(replace(cfg, rebuild=True)).commits == 1
    assert seen == [(build_id, 30)]


def test_filters_on_postgres_read_jsonb_fields_with_a_gin_index(tmp_path, tiny_model, pg_schema_url):
    """The filter columns come from PostgreSQL's JSONB functions, and agree with the plain-Python
    reading of every filter; users' own containment queries use the GIN index."""
    import json
    import random

    from indexer.store import sql_store
    from indexer.store.metadata_filter import parse_filter
    from tests.indexer.store.filter_reference import matches, random_filter, random_metadata

    rng = random.Random(5)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    rows = []
    for i in range(60):
        meta = random_metadata(rng)
        if i % 10 == 0:
            meta['odd "key"'] = "quoted"
        rows.append({"id": f"r{i % 3}/{i}", "title": f"row {i}", "text": f"ticket number {i} about printers", **meta})
    (corpus / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=corpus, index_dir=index_dir, model=tiny_model, db_url=pg_schema_url,
                            show_progress=False))
    searcher = Searcher(index_dir)
    records = searcher.index.passages(searcher.index.matching_passages(parse_filter({"_id": {"$exists": True}})).ids().tolist())
    fields = {pid: {**r.metadata, "_id": r.doc_id, "_path": r.source, "_type": "jsonl"} for pid, r in records.items()}
    assert len(fields) == 60
    filters = [random_filter(rng, [r["id"] for r in rows]) for _ in range(40)] + [{'odd "key"': "quoted"}]
    for flt in filters:
        want = {pid for pid, f in fields.items() if matches(flt, f)}
        assert set(searcher.index.matching_passages(parse_filter(flt)).ids().tolist()) == want, flt
    assert {h.doc_id for h in searcher.search("printers", k=10, filter={'odd "key"': "quoted"})} == {
        f"r{i % 3}/{i}" for i in range(0, 60, 10)}
    note = searcher.search_detailed("printers", k=5, filter={"tags": "bug"}).filter_note  # fields from JSONB keys
    assert "Did you mean 'tag'?" in note and f"'tag' ({sum('tag' in r for r in rows)} documents)" in note, note
    searcher.close()
    engine = sql_store.make_engine(pg_schema_url)
    with engine.connect() as conn:
        kind = conn.execute(text("SELECT data_type FROM information_schema.columns WHERE table_schema = "
                                 "current_schema() AND table_name = 'semsearch_documents' AND column_name = 'metadata'"))
        assert kind.scalar() == "jsonb"
        conn.execute(text("SET enable_seqscan = off"))
        plan = " ".join(r[0] for r in conn.execute(text(
            "EXPLAIN SELECT id FROM semsearch_documents WHERE metadata @> '{\"tag\": \"bug\"}'")))
        assert "ix_semsearch_documents_metadata" in plan, plan
    engine.dispose()


def test_a_json_metadata_column_from_before_filters_becomes_jsonb_in_place(tmp_path, tiny_model, pg_schema_url):
    from indexer.store import sql_store

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "t.jsonl").write_text('{"id": "a", "text": "some words here", "tag": "x"}\n', encoding="utf-8")
    config = IndexConfig(source=corpus, index_dir=tmp_path / "idx", model=tiny_model, db_url=pg_schema_url,
                         show_progress=False)
    build_index(config)
    engine = sql_store.make_engine(pg_schema_url)
    with engine.begin() as conn:  # what an index built before this change holds
        conn.execute(text("DROP INDEX ix_semsearch_documents_metadata"))
        conn.execute(text("ALTER TABLE semsearch_documents ALTER COLUMN metadata TYPE json USING metadata::json"))
    (corpus / "t.jsonl").write_text('{"id": "a", "text": "some words here", "tag": "x"}\n'
                                    '{"id": "b", "text": "more words here", "tag": "y"}\n', encoding="utf-8")
    build_index(config)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT pg_typeof(metadata)::text FROM semsearch_documents LIMIT 1")).scalar() == "jsonb"
    engine.dispose()
    searcher = Searcher(tmp_path / "idx")
    assert [h.doc_id for h in searcher.search("words", filter={"tag": "y"})] == ["b"]
    searcher.close()
