"""Retrievers on a tiny index: BM25 catches exact terms, hybrid is exactly RRF of the two; the
query is embedded once per search; the mode map and the fallback to dense without BM25."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer import IndexConfig, build_index
from search import IndexUnreadableError, SearchConfig, Searcher
from search.fusion import reciprocal_rank_fusion
from search.retrieve import ModeChoice, Query, Retriever, choose_mode, retrievers_for
from tests.search.helpers import CODE_DOC, CODE_QUERY, without_bm25


def test_bm25_finds_an_exact_code_the_tiny_dense_model_misses(tiny_index):
    searcher = Searcher(tiny_index)
    dense = searcher.search(CODE_QUERY, k=5, mode="dense")
    assert dense[0].doc_id != "minutes.txt", "the random-weight bi-encoder does not rank it first"
    bm25 = searcher.search(CODE_QUERY, k=5, mode="bm25")
    assert [h.doc_id for h in bm25] == ["minutes.txt"], "only the passage holding the code matches"
    assert bm25[0].score > 0 and bm25[0].retriever_score == bm25[0].score
    assert searcher.search(CODE_QUERY, k=5, mode="hybrid")[0].doc_id == "minutes.txt"


def test_retrievers_follow_the_protocol(tiny_index):
    searcher = Searcher(tiny_index)
    assert searcher.modes == ("dense", "bm25", "hybrid")
    query = searcher.query("bread dough")
    for mode in ("dense", "bm25", "hybrid"):
        retriever: Retriever = searcher.retriever(mode)
        found = retriever.retrieve(query, 3)
        assert 1 <= len(found) <= 3
        assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)


def test_hybrid_is_reciprocal_rank_fusion_of_dense_and_bm25(tiny_index):
    searcher = Searcher(tiny_index, config=SearchConfig(fusion="rrf"))
    text, n = "volcano ash over Europe and the bank's interest rates", 5
    query = searcher.query(text)
    dense = [c.passage_id for c in searcher.retriever("dense").retrieve(query, n)]
    lexical = [c.passage_id for c in searcher.retriever("bm25").retrieve(query, n)]
    assert len(lexical) == 2  # only the volcano and markets passages share a term
    expected = reciprocal_rank_fusion([dense, lexical], k=60)[:n]
    got = searcher.retriever("hybrid").retrieve(query, n)
    assert [(c.passage_id, c.score) for c in got] == expected
    hits = searcher.search(text, k=n, mode="hybrid")
    assert [h.passage_id for h in hits] == [pid for pid, _ in expected]  # one passage per document


class _CountingModel:
    """Wraps a SentenceTransformer and counts `encode` calls."""

    def __init__(self, model) -> None:
        self._model = model
        self.encodes = 0

    def __getattr__(self, name):
        return getattr(self._model, name)

    def encode(self, *args, **kwargs):
        self.encodes += 1
        return self._model.encode(*args, **kwargs)


@pytest.fixture()
def split_index(topic_corpus, tmp_path, tiny_model) -> Path:
    """The topic documents cut into 16-token passages, so documents have several passages each."""
    (topic_corpus / "minutes.txt").write_text(CODE_DOC, encoding="utf-8")
    index_dir = tmp_path / "split_idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, passage_tokens=16,
                            overlap_tokens=4, show_progress=False))
    return index_dir


@pytest.mark.parametrize(("mode", "encodes"), [("hybrid", 1), ("dense", 1), ("bm25", 0)])
def test_the_query_is_embedded_once_per_search(split_index, mode: str, encodes: int):
    searcher = Searcher(split_index, config=SearchConfig(fusion_depth=1))
    assert searcher.stats().passages > searcher.stats().documents, "documents of several passages"
    counting = _CountingModel(searcher.model)
    searcher.model = counting
    fetches: list[int] = []
    retriever = searcher.retriever(mode)
    original = retriever.retrieve

    def counted(query: Query, n: int, within=None):
        fetches.append(n)
        return original(query, n, within)

    retriever.retrieve = counted  # type: ignore[method-assign]
    result = searcher.search_detailed("bread dough and volcanoes", k=5, mode=mode)
    assert counting.encodes == encodes
    if mode != "bm25":
        # The first 5 passages hold fewer than 5 documents, so the searcher widened and fetched again.
        assert len(result.hits) == 5 and len(fetches) > 1 and fetches == sorted(fetches)
    assert (result.timings.encode_s > 0) is (encodes == 1)
    again = searcher.search_detailed("bread dough and volcanoes", k=5, mode=mode)
    assert counting.encodes == 2 * encodes, "each search embeds its own query, once"
    assert [h.doc_id for h in again.hits] == [h.doc_id for h in result.hits]


def test_query_embeds_on_first_use_and_keeps_it(tiny_index):
    searcher = Searcher(tiny_index)
    counting = _CountingModel(searcher.model)
    query = Query("bread", counting)
    assert counting.encodes == 0 and query.encode_s == 0.0, "nothing is encoded until a retriever asks"
    first = query.embedding
    assert query.embedding is first and counting.encodes == 1 and query.encode_s > 0
    assert first.shape == (1, 32) and np.linalg.norm(first) == pytest.approx(1.0, abs=1e-5)


class _Vectors:
    ntotal = 0

    def search(self, queries, k):  # pragma: no cover - never called on an empty store
        raise AssertionError


def test_mode_map_has_every_mode_with_bm25_and_only_dense_without():
    assert list(retrievers_for(_Vectors(), bm25=object())) == ["dense", "bm25", "hybrid"]
    assert list(retrievers_for(_Vectors(), bm25=None)) == ["dense"]


def test_choose_mode_falls_back_only_when_no_mode_was_named(tmp_path: Path):
    everything, dense_only = ("dense", "bm25", "hybrid"), ("dense",)
    assert choose_mode(None, "hybrid", everything, tmp_path) == ModeChoice("hybrid")
    assert choose_mode("bm25", "hybrid", everything, tmp_path) == ModeChoice("bm25")
    assert choose_mode(None, "dense", dense_only, tmp_path) == ModeChoice("dense")
    fallback = choose_mode(None, "hybrid", dense_only, tmp_path)
    assert fallback.mode == "dense"
    assert "has no BM25 index, so it is searched in dense mode instead of hybrid" in fallback.fallback_reason
    assert f"python -m indexer repair --index {tmp_path}" in fallback.fallback_reason
    with pytest.raises(IndexUnreadableError, match=r"has no BM25 index, so mode 'hybrid' cannot run\. Run `python -m indexer repair.*mode='dense'"):
        choose_mode("hybrid", "hybrid", dense_only, tmp_path)
    with pytest.raises(ValueError, match=r"Unknown mode 'x'\. Valid: dense, bm25, hybrid\."):
        choose_mode("x", "hybrid", everything, tmp_path)


def test_choose_mode_answers_bm25_while_the_model_loads(tmp_path: Path):
    everything, dense_only = ("dense", "bm25", "hybrid"), ("dense",)
    for requested, asked in ((None, "hybrid"), ("hybrid", "hybrid"), ("dense", "dense")):
        waiting = choose_mode(requested, "hybrid", everything, tmp_path, model_ready=False)
        assert waiting.mode == "bm25"
        assert waiting.fallback_reason == (
            "The semantic model is still loading, so these are keyword (BM25) results; searches run "
            f"in {asked} mode as soon as it has loaded."
        )
    assert choose_mode("bm25", "hybrid", everything, tmp_path, model_ready=False) == ModeChoice("bm25")
    no_bm25 = choose_mode(None, "hybrid", dense_only, tmp_path, model_ready=False)
    assert no_bm25.mode == "dense" and "has no BM25 index" in no_bm25.fallback_reason, "waits for the model"


def test_index_without_bm25_searches_dense_and_says_so(tiny_index, caplog, monkeypatch):
    without_bm25(monkeypatch)
    searcher = Searcher(tiny_index)
    assert searcher.modes == ("dense",)
    with caplog.at_level("WARNING", logger="search.searcher"):
        result = searcher.search_detailed("bread", k=2)  # the default mode is hybrid
        searcher.search_detailed("bread", k=2)
    assert result.mode == "dense" and len(result.hits) == 2
    assert "searched in dense mode" in result.fallback_reason
    assert [r.message for r in caplog.records].count(result.fallback_reason) == 1, "logged once"
    dense = searcher.search_detailed("bread", k=2, mode="dense")
    assert dense.mode == "dense" and dense.fallback_reason is None
    assert [h.doc_id for h in dense.hits] == [h.doc_id for h in result.hits]
    for mode in ("bm25", "hybrid"):
        with pytest.raises(IndexUnreadableError, match=rf"mode '{mode}' cannot run.*repair --index {tiny_index}"):
            searcher.search("bread", mode=mode)


@pytest.mark.parametrize("which", ["tiny", "default"])
def test_token_counts_in_one_batch_equal_the_tokenizer_per_text(which, tiny_model, default_model):
    from indexer.embedding import load_bi_encoder
    from search.retrieve import token_counts, unreadable_counts

    model = load_bi_encoder(tiny_model) if which == "tiny" else default_model
    texts = ["", "a cat", "🐧🐧🐧", "a 🐧 sat on the mat", "漢字 and words", " ".join(["long"] * 300)]
    expected = []
    for text in texts:
        ids = model.tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        expected.append((len(ids), ids.count(model.tokenizer.unk_token_id)))
    assert token_counts(texts, model) == expected
    assert expected[-1][0] > model.max_seq_length  # the long one is counted whole, not truncated
    assert [unreadable_counts(c, model) for c in expected] == [False, False, True, False, False, False]
