"""WriteTransaction.stored_documents (indexer/store/transaction.py): the rows a plan needs, read by
key in pages while the keys are a small part of the index, in one scan once they are half of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer import Index, IndexConfig, build_index
from indexer.store import transaction
from tests.indexer.helpers import write_corpus


def test_stored_documents_reads_the_keys_asked_for_until_they_are_half_the_index(
        tiny_model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = {f"doc{i}.txt": f"A river named {i} runs through valley {i}." for i in range(10)}
    build_index(IndexConfig(source=write_corpus(tmp_path / "src", docs), index_dir=tmp_path / "index",
                            model=tiny_model, show_progress=False))
    monkeypatch.setattr(transaction, "FULL_SCAN_KEYS", 2)  # a window of a large source, in small
    with Index.open(tmp_path / "index", use_gpu=False) as index, index.transaction() as tx:
        every = tx.stored_documents()
        assert len(every) == 10
        few = ["doc1.txt", "doc2.txt", "doc3.txt", "absent.txt"]  # more than FULL_SCAN_KEYS, under half
        assert sorted(tx.stored_documents(few)) == few[:3]
        assert {key: every[key] for key in few[:3]} == tx.stored_documents(few)
        half = [f"doc{i}.txt" for i in range(5)]
        assert len(tx.stored_documents(half)) == 10  # half the index: one scan of every row
