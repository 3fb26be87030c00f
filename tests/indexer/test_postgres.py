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
    assert (stats.documents, stats.passages) == (3, searcher.store.ntotal)
    hits = searcher.search("bread", k=10)
    assert {h.doc_id for h in hits} == {"baking.txt", "football.md", "markets.txt"}
