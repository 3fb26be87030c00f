"""`Index.document_ids` answers from memory (`DocumentMap`) exactly what SQL holds, across commits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import select

from indexer import Index, build_index
from indexer.store.document_map import DocumentMap
from indexer.store.schema import PassageRow
from indexer.store.segments import SegmentPolicy
from indexer.store.sql_store import make_engine
from tests.indexer.helpers import config, write_corpus

APPEND = SegmentPolicy(min_base_passages=0, merge_fraction=1.0, max_segments=8)
DOCS = {
    "bread.txt": "Bread dough rises when yeast ferments the sugars in flour.",
    "chess.txt": "A knight moves in an L shape on the chess board.",
    "rivers.txt": "Rivers carry sediment from the mountains down to the sea.",
}


def sql_pairs(index: Index) -> dict[int, int]:
    engine = make_engine(index.db_url)
    try:
        with engine.connect() as conn:
            return dict(conn.execute(select(PassageRow.id, PassageRow.document_id)).all())
    finally:
        engine.dispose()


def test_lookup_finds_held_ids_and_leaves_others_absent() -> None:
    pairs = DocumentMap("base", np.array([2, 5, 9], np.int64), np.array([1, 1, 4], np.int64))
    assert pairs.lookup([9, 2, 3, 100, 0]) == {9: 4, 2: 1}
    assert pairs.lookup([]) == {}
    assert pairs.covers([2, 9]) and not pairs.covers([10])
    assert DocumentMap("base", np.empty(0, np.int64), np.empty(0, np.int64)).lookup([1]) == {}


def test_document_ids_match_sql_after_delta_commits_and_a_merge(tmp_path: Path, tiny_model: str) -> None:
    source = write_corpus(tmp_path / "src", DOCS)
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    with Index.open(index_dir, use_gpu=False) as index:
        everything = sql_pairs(index)
        assert index.document_ids(list(everything)) == everything
        first = index._document_map

        # A delta commit (new passages, one document deleted): the map is extended, not reloaded.
        (source / "volcano.txt").write_text("Volcanoes erupt molten basalt lava from magma chambers.")
        (source / "chess.txt").unlink()
        build_index(config(source, index_dir, tiny_model, segments=APPEND))
        assert index.refresh()
        now = sql_pairs(index)
        new_ids = sorted(set(now) - set(everything))
        assert new_ids and index.document_ids(new_ids) == {pid: now[pid] for pid in new_ids}
        extended = index._document_map
        assert extended is not first and extended.base == first.base
        assert index.document_ids([max(now) + 1]) == {}  # never stored: absent

        # A merge writes a new base: the map is read afresh, and agrees with SQL again.
        (source / "stars.txt").write_text("Stars fuse hydrogen into helium in their cores.")
        build_index(config(source, index_dir, tiny_model))
        assert index.refresh()
        final = sql_pairs(index)
        assert index.document_ids(list(final)) == final
        assert index._document_map.base != first.base


def test_a_large_index_answers_from_sql_while_its_map_is_read_in_a_thread(tmp_path: Path, tiny_model: str,
                                                                          monkeypatch) -> None:
    """At BACKGROUND_MAP_PASSAGES and above, the first call does not wait for the whole map: it
    asks SQL for its own ids (the same answers), and the map read in a thread takes over."""
    import threading
    import time

    import indexer.index as index_module

    monkeypatch.setattr(index_module, "BACKGROUND_MAP_PASSAGES", 1)
    source = write_corpus(tmp_path / "src", DOCS)
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    release = threading.Event()
    real_load = DocumentMap.load

    def slow_load(conn, base):  # the map is held back until the first answers are in
        release.wait(30)
        return real_load(conn, base)

    monkeypatch.setattr(DocumentMap, "load", staticmethod(slow_load))
    with Index.open(index_dir, use_gpu=False) as index:
        everything = sql_pairs(index)
        ids = list(everything)
        assert index.document_ids(ids) == everything  # from SQL: the map is not in yet
        assert index._document_map is None
        assert index.document_ids(ids[:1] + [max(ids) + 1]) == {ids[0]: everything[ids[0]]}  # unknown: absent
        release.set()
        deadline = time.monotonic() + 30
        while index._document_map is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert index._document_map is not None and index._document_map_loading is None
        assert index.document_ids(ids) == everything  # from the map now


def test_load_document_map_reads_it_now_even_for_a_large_index(tmp_path: Path, tiny_model: str, monkeypatch) -> None:
    """`load_document_map` waits for the whole map, so later calls never ask SQL for their ids."""
    import indexer.index as index_module
    from indexer.store import sql_store

    monkeypatch.setattr(index_module, "BACKGROUND_MAP_PASSAGES", 1)
    source = write_corpus(tmp_path / "src", DOCS)
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    with Index.open(index_dir, use_gpu=False) as index:
        everything = sql_pairs(index)
        index.load_document_map()
        assert index._document_map is not None and index._document_map_loading is None

        def no_sql(conn, passage_ids):
            raise AssertionError("asked SQL although the map is in")

        monkeypatch.setattr(sql_store, "document_ids_of", no_sql)
        assert index.document_ids(list(everything)) == everything
