"""The build's SQL on SQLite and PostgreSQL: rows inserted with reserved ids, looked up by long key lists."""

from __future__ import annotations

import pytest

from indexer.sources.documents import Document, PassageSpan
from indexer.store import sql_store
from tests.indexer.test_postgres import pg_schema_url  # noqa: F401  the fixture, for the PostgreSQL case

KEYS = 40_000  # past SQLite's 32,766 bound parameters: the keys travel as one value


@pytest.fixture(params=["sqlite", "postgresql"])
def session(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'store.sqlite'}" if request.param == "sqlite" else \
        request.getfixturevalue("pg_schema_url")
    engine = sql_store.make_engine(url, for_build=True)
    with engine.begin() as conn:
        sql_store.create_schema(conn)
    with engine.begin() as conn:
        yield sql_store.open_session(conn)
    engine.dispose()


def documents(count: int, start: int = 0) -> list[Document]:
    return [Document(f"doc-{i}-'quoted' ünï", f"Title {i}", f"text of {i}", f"d{i}.txt", metadata={"i": i})
            for i in range(start, start + count)]


def test_ids_are_given_in_order_and_never_given_again(session):
    docs = documents(3)
    ids, _ = sql_store.insert_documents(session, docs, "origin", [[PassageSpan(0, 0, 4), PassageSpan(1, 5, 7)]] * 3)
    assert ids.tolist() == sorted(ids.tolist()) and len(set(ids.tolist())) == 6
    rows = sql_store.stored_document_rows(session, [d.doc_id for d in docs], None)
    assert sorted(key for key, *_ in rows) == sorted(d.doc_id for d in docs)
    assert {content for _, _, content, _, _ in rows} == {d.content_hash() for d in docs}
    last = max(row_id for _, row_id, *_ in rows)
    removed = sql_store.delete_documents(session, [last])
    assert sorted(removed.tolist()) == ids.tolist()[-2:]
    again, _ = sql_store.insert_documents(session, documents(1, start=3), "origin", [[PassageSpan(0, 0, 4)]])
    assert again.tolist()[0] > ids.max(), "a deleted passage's id is never given again"
    (_, doc_row, *_), = sql_store.stored_document_rows(session, ["doc-3-'quoted' ünï"], None)
    assert doc_row > last, "nor a deleted document's"


def test_lookups_and_deletes_take_any_number_of_keys(session):
    docs = documents(KEYS)
    sql_store.insert_documents(session, docs, "origin", [[PassageSpan(0, 0, 4)]] * KEYS, keep_texts=False)
    wanted = [d.doc_id for d in docs[::2]] + ["missing", "doc-1-'quoted' unï"]
    rows = sql_store.stored_document_rows(session, wanted, None)
    assert sorted(key for key, *_ in rows) == sorted(d.doc_id for d in docs[::2])
    removed = sql_store.delete_documents(session, [row_id for _, row_id, *_ in rows])
    assert len(removed) == KEYS // 2
    assert len(sql_store.stored_document_rows(session, None, None)) == KEYS // 2
