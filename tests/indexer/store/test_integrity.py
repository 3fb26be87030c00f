"""Digests of an index's files (indexer/store/integrity.py): the stat-keyed cache that spares a
reader rehashing a large index, and never trusts a file that changed."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from indexer.store import integrity


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache that persists every file (PERSIST_BYTES 0) into a file under tmp_path, and
    treats files as settled at once (SETTLED_NS 0) unless a test says otherwise."""
    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path))
    fresh = integrity._DigestCache()
    monkeypatch.setattr(fresh, "PERSIST_BYTES", 0)
    monkeypatch.setattr(fresh, "SETTLED_NS", 0)
    monkeypatch.setattr(integrity, "_DIGESTS", fresh)
    return fresh


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_digest_is_hashed_once_and_persisted_for_a_new_process(tmp_path, cache, monkeypatch):
    f = tmp_path / "vectors.faiss"
    f.write_bytes(b"x" * 1000)
    assert integrity.file_digest(f) == sha(f)
    saved = json.loads((tmp_path / "digests.json").read_text())
    assert saved[str(f.resolve())][1] == sha(f)
    calls = []
    monkeypatch.setattr(integrity, "_sha256", lambda p: calls.append(p) or "rehashed")
    assert integrity.file_digest(f) == sha(f) and calls == []  # this process: no rehash
    new_process = integrity._DigestCache()
    monkeypatch.setattr(new_process, "PERSIST_BYTES", 0)
    monkeypatch.setattr(integrity, "_DIGESTS", new_process)
    assert integrity.file_digest(f) == sha(f) and calls == []  # from the cache file


def test_a_changed_file_is_hashed_again_even_with_its_size_and_mtime_put_back(tmp_path, cache):
    f = tmp_path / "vectors.faiss"
    f.write_bytes(b"x" * 1000)
    before = integrity.file_digest(f)
    stat = os.stat(f)
    with open(f, "r+b") as fh:  # same size, a flipped byte, mtime restored: ctime still moves
        fh.seek(10)
        fh.write(b"y")
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert integrity.file_digest(f) == sha(f) != before


def test_a_file_written_just_now_is_not_kept(tmp_path, cache, monkeypatch):
    """Within SETTLED_NS of its last change a file could change again in the same clock tick, which
    would leave its ctime as it was: such a digest is computed every time."""
    monkeypatch.setattr(cache, "SETTLED_NS", 10**12)
    f = tmp_path / "vectors.faiss"
    f.write_bytes(b"x" * 1000)
    assert integrity.file_digest(f) == sha(f)
    assert not (tmp_path / "digests.json").exists() and cache._known == {}


def test_an_unwritable_cache_file_only_costs_the_persistence(tmp_path, cache, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("SEMSEARCH_CACHE", str(blocker))
    f = tmp_path / "vectors.faiss"
    f.write_bytes(b"z" * 100)
    assert integrity.file_digest(f) == sha(f)
    (tmp_path / "digests.json").write_text("{not json")
    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path))
    fresh = integrity._DigestCache()
    monkeypatch.setattr(fresh, "PERSIST_BYTES", 0)
    monkeypatch.setattr(fresh, "SETTLED_NS", 0)
    assert fresh.digest(f) == sha(f)  # a damaged cache file is ignored, then replaced
    assert json.loads((tmp_path / "digests.json").read_text())[str(f.resolve())][1] == sha(f)
