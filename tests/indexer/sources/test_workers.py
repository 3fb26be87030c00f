"""Worker processes cut passages and tokenize for BM25 exactly as the build's own process does."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from indexer.build.pipeline import PassageCutter
from indexer.model_spec import default_model_path
from indexer.sources import workers
from indexer.sources.chunking import split_into_sections
from indexer.sources.documents import Document
from indexer.store import bm25_store
from indexer.store.bm25_store import BM25Store

LICENSES = Path("/usr/share/common-licenses")
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def fast_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(default_model_path()))


@pytest.fixture()
def two_workers(monkeypatch):
    monkeypatch.setenv("SEMSEARCH_BUILD_WORKERS", "2")
    yield
    workers.shutdown()


def real_documents() -> list[Document]:
    """Every license text (long ones: the GPL is 35,000 characters), plus a few edge cases."""
    docs = [Document(path.name, path.name, path.read_text(encoding="utf-8", errors="replace"), path.name)
            for path in sorted(LICENSES.iterdir()) if path.is_file()]
    assert len(docs) >= 10 and max(len(d.text) for d in docs) > 30_000
    return docs + [Document("empty", "", " \n ", "empty"), Document("one", "t", "word", "one"),
                   Document("blob", "", "a " + "x" * 5000 + " b", "blob")]


def test_workers_cut_real_long_files_as_the_process_does(fast_tokenizer, two_workers):
    docs = real_documents()
    cutter = PassageCutter(fast_tokenizer, 200, 20, 50)
    cutter.count_all(docs)
    cutter.wait_counted(120)
    assert cutter.counting is not None and not cutter.counting.is_alive()
    assert set(cutter.cut) == {d.doc_id for d in docs}
    for doc in docs:
        assert cutter.cut[doc.doc_id] == split_into_sections(doc.text, [], fast_tokenizer, 200, 20, 50), doc.doc_id
    assert sum(len(spans) for spans in cutter.cut.values()) > 100
    for doc in docs:  # hashed in the workers, as the build's process hashes
        assert doc._digest is not None
        assert doc.content_hash() == dataclasses.replace(doc).content_hash(), doc.doc_id


def test_passages_cut_in_the_workers_come_with_their_bm25_tokens(fast_tokenizer, two_workers):
    """The BM25 tokens a commit's merge takes instead of the texts: those of every passage, in
    order, whether a worker made them or the build's thread (documents it cut first)."""
    docs = real_documents()
    cutter = PassageCutter(fast_tokenizer, 200, 20, 50)
    for doc in docs[:2]:
        cutter(doc)  # cut by the build first, as its first commit does
    cutter.count_all(docs)
    cutter.wait_counted(120)
    assert len(cutter.tokens) == len(docs), "every document's tokens, those cut first too"
    cutter.tokens.pop(docs[3].doc_id)  # one the workers did not tokenize: tokenized here
    blocks = cutter.bm25_tokens(docs)
    assert blocks is not None and len(blocks) > 1
    titled = [(d.title, d.text[s.start_char:s.end_char]) for d in docs for s in cutter.cut[d.doc_id]]
    want = bm25_store.tokenized_passages(titled)
    assert sum(len(b) for b in blocks) == len(titled) > 100
    np.testing.assert_array_equal(np.concatenate([b.lengths for b in blocks]), want.lengths)
    got_terms = [b.terms[i] for b in blocks for i in b.flat.tolist()]
    assert got_terms == [want.terms[i] for i in want.flat.tolist()]
    assert not cutter.tokens, "handed out once, then let go"
    cutter._store_cut([docs[0]], ([(docs[0].doc_id, [(0, 0, 4)], bytes(32))], want))  # a task that finished late
    assert not cutter.tokens, "a committed document's tokens are not kept again"


def test_without_workers_the_thread_cuts(fast_tokenizer, monkeypatch):
    monkeypatch.setenv("SEMSEARCH_BUILD_WORKERS", "0")
    assert workers.shared_pool() is None
    docs = real_documents()[:3]
    cutter = PassageCutter(fast_tokenizer, 200, 20)
    cutter.count_all(docs)
    cutter.wait_counted(60)
    assert {d.doc_id: cutter.cut[d.doc_id] for d in docs} == \
        {d.doc_id: split_into_sections(d.text, [], fast_tokenizer, 200, 20) for d in docs}


def test_bm25_token_ids_from_workers_equal_one_pass(two_workers, monkeypatch):
    texts = [d.text[i:i + 800] for d in real_documents() for i in range(0, len(d.text), 800)]
    assert len(texts) > 300
    store = BM25Store(np.empty(0, np.int64), None)
    monkeypatch.setattr(bm25_store, "WORKER_TEXTS", 10**9)
    here_vocab: dict[str, int] = {"existing": 0}
    here = store._token_ids(texts, here_vocab)
    monkeypatch.setattr(bm25_store, "WORKER_TEXTS", 64)  # parts of 150-odd texts in 2 workers
    there_vocab: dict[str, int] = {"existing": 0}
    there = store._token_ids(texts, there_vocab)
    # The same terms for every token (bm25s numbers a block's terms in no fixed order, so the
    # columns may differ between runs of either kind; the old ones keep theirs).
    assert set(there_vocab) == set(here_vocab) and there_vocab["existing"] == here_vocab["existing"] == 0
    np.testing.assert_array_equal(there[0], here[0])
    here_terms = np.array(sorted(here_vocab, key=here_vocab.__getitem__), dtype=object)[here[1]]
    there_terms = np.array(sorted(there_vocab, key=there_vocab.__getitem__), dtype=object)[there[1]]
    assert there_terms.tolist() == here_terms.tolist() and len(here_terms) > 10_000
    assert workers._pool is not None  # the workers did run


def test_a_broken_pool_hands_the_work_back(two_workers):
    assert workers.run_all(_exit_worker, [(1,)]) is None
    assert workers.run_all(divmod, [(7, 2), (9, 4)]) == [(3, 1), (2, 1)]  # a new pool


def _exit_worker(code: int) -> None:
    os._exit(code)


def test_a_script_without_a_main_guard_is_not_run_again_in_the_workers(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent("""
        import os
        print("script ran", flush=True)
        from indexer.sources import workers
        print(workers.run_all(divmod, [(7, 2), (9, 4)]), flush=True)
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "SEMSEARCH_BUILD_WORKERS": "2",
                              "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["script ran", "[(3, 1), (2, 1)]"], out.stdout + out.stderr


def test_the_worker_count_follows_the_cores_and_the_setting(monkeypatch):
    monkeypatch.delenv("SEMSEARCH_BUILD_WORKERS", raising=False)
    monkeypatch.setattr(workers, "available_cores", lambda: 2)
    assert workers.worker_count() == 0
    monkeypatch.setattr(workers, "available_cores", lambda: 16)
    assert workers.worker_count() == workers.MAX_WORKERS
    monkeypatch.setattr(workers, "available_cores", lambda: 6)
    assert workers.worker_count() == 4
    monkeypatch.setenv("SEMSEARCH_BUILD_WORKERS", "3")
    assert workers.worker_count() == 3
    monkeypatch.setenv("SEMSEARCH_BUILD_WORKERS", "many")
    with pytest.raises(ValueError, match="SEMSEARCH_BUILD_WORKERS"):
        workers.worker_count()
