"""`python -m indexer shard`: an existing index split into shards, and back, without its source."""

from __future__ import annotations

import random

import numpy as np

from indexer import IndexConfig, build_index
from indexer.__main__ import main
from indexer.index import Index
from indexer.store.shards import load_shard
from tests.search.test_filters import write_corpus


def test_shard_and_unshard_an_index_without_its_source(tmp_path, tiny_model_dir, capsys):
    write_corpus(tmp_path / "src", random.Random(3), 40)
    build_index(IndexConfig(source=tmp_path / "src", index_dir=tmp_path / "idx", model=str(tiny_model_dir),
                            show_progress=False))
    with Index.open(tmp_path / "idx") as index:
        before = index.info
        ids = np.sort(index.snapshot().vectors.ids())
    (tmp_path / "src" / "docs.jsonl").unlink()  # the source is not needed
    assert main(["shard", "--index", str(tmp_path / "idx"), "--shards", "3"]) == 0
    assert "split into 3 shards" in capsys.readouterr().out
    assert main(["stats", "--index", str(tmp_path / "idx")]) == 0
    assert "shards: 3 (python -m search.api --ray ADDRESS --shards 3)" in capsys.readouterr().out
    with Index.open(tmp_path / "idx") as index:
        info = index.info
        assert info.build_id != before.build_id and info.passages == before.passages
        assert info.id_checksum == before.id_checksum and info.bm25_dir == before.bm25_dir  # BM25 kept
        held = [load_shard(tmp_path / "idx", info, s)[0].ids() for s in range(3)]
    assert np.array_equal(np.sort(np.concatenate(held)), ids)
    assert len(list((tmp_path / "idx").glob("shards-*"))) == 1
    assert main(["shard", "--index", str(tmp_path / "idx"), "--shards", "0"]) == 0
    assert not list((tmp_path / "idx").glob("shards-*"))
    assert main(["shard", "--index", str(tmp_path / "nothing"), "--shards", "2"]) == 2
    assert "error:" in capsys.readouterr().err
    assert main(["shard", "--index", str(tmp_path / "idx"), "--shards", "-1"]) == 2
    assert "must be a whole number from 1 to 256" in capsys.readouterr().err
