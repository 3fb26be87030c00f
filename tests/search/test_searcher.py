from __future__ import annotations

import warnings

import pytest

from indexer import IndexConfig, IndexMismatchError, build_index
from search import (
    EmptyQueryError,
    IndexNotFoundError,
    ModelNotReadyError,
    QueryTruncatedWarning,
    SearchConfig,
    Searcher,
    SearchParams,
)


@pytest.fixture()
def real_index(topic_corpus, tmp_path):
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, show_progress=False))
    return index_dir


@pytest.mark.integration
def test_known_query_finds_its_passage_with_the_real_model(real_index):
    searcher = Searcher(real_index)
    hits = searcher.search("volcanic eruption grounded air travel", k=3)
    assert hits[0].doc_id == "volcano.txt"
    assert hits[0].title == "volcano"
    assert "Iceland" in hits[0].text
    assert hits[0].score > hits[1].score
    assert searcher.search("the goal in the final", k=1)[0].title == "Cup final"
    assert searcher.search("interest rates and stocks", k=1)[0].doc_id == "markets.txt"


@pytest.mark.integration
def test_stats_and_one_hit_per_document(real_index):
    searcher = Searcher(real_index)
    stats = searcher.stats()
    assert (stats.documents, stats.passages, stats.dimension) == (4, 4, 384)
    assert stats.model == "default:all-MiniLM-L6-v2"
    hits = searcher.search("anything", k=10)
    assert len(hits) == 4 and len({h.doc_id for h in hits}) == 4
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.integration
def test_refresh_picks_up_a_new_build(real_index, topic_corpus):
    searcher = Searcher(real_index)
    assert searcher.refresh() is False
    (topic_corpus / "comet.txt").write_text("A comet with a bright tail passed close to the Sun.")
    build_index(IndexConfig(source=topic_corpus, index_dir=real_index, show_progress=False))
    assert searcher.refresh() is True
    assert searcher.search("comet tail near the sun", k=1)[0].doc_id == "comet.txt"


@pytest.mark.parametrize("query", ["", "   \n\t"])
def test_empty_query_is_an_error(real_index, query):
    with pytest.raises(EmptyQueryError, match="The query is empty"):
        Searcher(real_index).search(query)


def test_bad_k_and_type(real_index):
    searcher = Searcher(real_index)
    with pytest.raises(ValueError, match=r"k \(0\) must be at least 1"):
        searcher.search("x", k=0)
    with pytest.raises(TypeError, match="query must be a string, not int"):
        searcher.search(42)
    with pytest.raises(ValueError, match=r"k \(0\) must be at least 1"):
        SearchParams(k=0)


def test_over_long_query_is_truncated_with_a_warning(real_index):
    searcher = Searcher(real_index)
    with pytest.warns(QueryTruncatedWarning, match="the model reads 256"):
        hits = searcher.search("volcano ash " * 300, k=1)
    assert hits[0].doc_id == "volcano.txt"
    with warnings.catch_warnings():
        warnings.simplefilter("error", QueryTruncatedWarning)
        searcher.search("volcano", k=1)


def test_missing_index_says_how_to_build_one(tmp_path):
    with pytest.raises(IndexNotFoundError, match="python -m indexer build --source PATH --index"):
        Searcher(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexNotFoundError, match="No index found"):
        Searcher(tmp_path / "empty")


def test_other_model_than_the_index_was_built_with_is_refused(real_index, tiny_model):
    with pytest.raises(IndexMismatchError, match="would compare unrelated vectors"):
        Searcher(real_index, model=tiny_model)


def test_deleted_vector_file_is_a_search_error_with_the_fix(real_index):
    from search import IndexUnreadableError

    for path in real_index.glob("vectors-*.faiss"):
        path.unlink()
    with pytest.raises(IndexUnreadableError, match=f"is damaged.*python -m indexer repair --index {real_index}"):
        Searcher(real_index)


# --- modes, reranking and their errors (tiny models) --------------------------------------------


def test_bad_mode_rerank_and_candidates_are_clear_errors(tiny_index, tiny_cross_encoder):
    from search import CrossEncoderReranker

    plain = Searcher(tiny_index)
    with pytest.raises(ValueError, match=r"Unknown mode 'x'\. Valid: dense, bm25, hybrid\."):
        plain.search("bread", mode="x")
    with pytest.raises(ValueError, match=r"Unknown mode 'sparse'\. Valid: dense, bm25, hybrid\."):
        SearchConfig(mode="sparse")
    with pytest.raises(ValueError, match=r"rerank=True needs a reranker.*CrossEncoderReranker\(PATH\)"):
        plain.search("bread", rerank=True)
    reranking = Searcher(tiny_index, reranker=CrossEncoderReranker(tiny_cross_encoder))
    with pytest.raises(
        ValueError,
        match=r"k \(60\) is greater than candidates \(50\); raise candidates or lower k\.",
    ):
        reranking.search("bread", k=60)
    with pytest.raises(ValueError, match=r"candidates \(0\) must be at least 1"):
        reranking.search("bread", candidates=0)
    assert len(reranking.search("bread", k=60, rerank=False)) == 5, "k > candidates is fine unreranked"
    with pytest.raises(ValueError, match=r"rrf_k \(-1\) must not be negative"):
        SearchConfig(rrf_k=-1)


def test_rerank_reorders_candidates_by_cross_encoder_score(tiny_index, tiny_cross_encoder):
    from indexer.sources.passage_text import passage_text
    from search import CrossEncoderReranker

    reranker = CrossEncoderReranker(tiny_cross_encoder)
    searcher = Searcher(tiny_index, reranker=reranker)
    query = "bread and volcanoes"
    plain = searcher.search_detailed(query, k=5, mode="dense", rerank=False)
    assert plain.reranked == 0 and plain.timings.rerank_s == 0.0
    assert all(h.rerank_score is None and h.retriever_score == h.score for h in plain.hits)
    assert [h.score for h in plain.hits] == sorted((h.score for h in plain.hits), reverse=True)

    result = searcher.search_detailed(query, k=3, mode="dense", candidates=5)
    assert result.reranked == 5 and len(result.hits) == 3
    # The reranker reads each passage behind its document title, as in training (passage_text).
    direct = reranker.model.predict([(query, passage_text(h.title, h.text)) for h in plain.hits])
    by_cross_encoder = [plain.hits[i].doc_id for i in sorted(range(5), key=lambda i: -direct[i])]
    assert [h.doc_id for h in result.hits] == by_cross_encoder[:3]
    assert [h.rerank_score for h in result.hits] == pytest.approx(sorted(direct, reverse=True)[:3], rel=1e-5)
    retriever_scores = {h.doc_id: h.score for h in plain.hits}
    assert {h.doc_id: h.retriever_score for h in result.hits} == pytest.approx(
        {h.doc_id: retriever_scores[h.doc_id] for h in result.hits}
    )
    assert by_cross_encoder != [h.doc_id for h in plain.hits], "the example must actually reorder"
    assert searcher.search_detailed(query, k=2, candidates=3).reranked == 3, "exactly `candidates`"
    # Reranking is the default when a reranker was given; rerank=False is the retriever's order.
    assert [h.doc_id for h in searcher.search(query, k=3, mode="dense", candidates=5)] == by_cross_encoder[:3]
    unreranked = searcher.search(query, k=5, mode="dense", rerank=False)
    assert [h.doc_id for h in unreranked] == [h.doc_id for h in plain.hits]


def test_search_detailed_reports_mode_and_stage_timings(tiny_index):
    searcher = Searcher(tiny_index)
    assert searcher.search_detailed("bread", k=2).mode == "hybrid"  # the default
    dense = searcher.search_detailed("bread", k=2, mode="dense")
    assert dense.mode == "dense" and dense.timings.encode_s > 0 and dense.timings.retrieve_s > 0
    lexical = searcher.search_detailed("bread", k=2, mode="bm25")
    assert lexical.mode == "bm25" and lexical.timings.encode_s == 0.0  # no query embedding
    hybrid = searcher.search_detailed("bread", k=2, mode="hybrid")
    assert hybrid.timings.total_s == pytest.approx(
        hybrid.timings.encode_s + hybrid.timings.retrieve_s + hybrid.timings.rerank_s
    )
    config_default = Searcher(tiny_index, config=SearchConfig(mode="bm25"))
    assert config_default.search_detailed("bread").mode == "bm25"


def test_bm25_query_without_known_words_finds_nothing(tiny_index):
    searcher = Searcher(tiny_index)
    assert searcher.search("the of and", mode="bm25") == []
    assert len(searcher.search("the of and", mode="hybrid", k=3)) == 3  # dense still ranks


# --- input checks, keep_tail, and builds committed by other processes (tiny models) ---------------


BAD_COUNTS = [
    (float("nan"), TypeError, r"must be a whole number between 1 and 1000, not nan \(float\)"),
    (float("inf"), TypeError, r"must be a whole number between 1 and 1000, not inf \(float\)"),
    (2.5, TypeError, r"must be a whole number between 1 and 1000, not 2\.5 \(float\)"),
    (True, TypeError, r"must be a whole number between 1 and 1000, not True \(bool\)"),
    ("5", TypeError, r"must be a whole number between 1 and 1000, not '5' \(str\)"),
    (0, ValueError, r"\(0\) must be at least 1 and at most 1000\."),
    (-3, ValueError, r"\(-3\) must be at least 1 and at most 1000\."),
    (1001, ValueError, r"\(1001\) must be at least 1 and at most 1000\."),
]


@pytest.mark.parametrize(("value", "error", "message"), BAD_COUNTS)
@pytest.mark.parametrize("name", ["k", "candidates"])
def test_k_and_candidates_are_checked_before_anything_is_retrieved(tiny_index, name, value, error, message):
    searcher = Searcher(tiny_index)

    def no_retrieval(*args, **kwargs):
        raise AssertionError("retrieval ran before the arguments were checked")

    searcher._retrieve_hits = no_retrieval  # type: ignore[method-assign]
    searcher.refresh = no_retrieval  # type: ignore[method-assign]
    with pytest.raises(error, match=rf"^{name} {message}"):
        searcher.search_detailed("bread", **{name: value})
    with pytest.raises(error, match=message):
        SearchParams(**{name: value})
    if name == "candidates":
        with pytest.raises(error, match=message):
            SearchConfig(rerank_candidates=value)


def test_largest_k_is_allowed(tiny_index):
    from search.config import MAX_K

    assert MAX_K == 1000
    assert len(Searcher(tiny_index).search("bread", k=MAX_K)) == 5


def test_keep_tail_reranks_the_top_candidates_and_keeps_the_rest_in_retriever_order(tiny_index, tiny_cross_encoder):
    from search import CrossEncoderReranker

    reranker = CrossEncoderReranker(tiny_cross_encoder)
    searcher = Searcher(tiny_index, reranker=reranker)
    query = "bread and volcanoes"
    plain = searcher.search_detailed(query, k=5, mode="dense", rerank=False)
    result = searcher.search_detailed(query, k=5, mode="dense", candidates=3, keep_tail=True)
    assert result.reranked == 3 and len(result.hits) == 5 and result.timings.rerank_s > 0
    head = reranker.rerank(query, plain.hits[:3])
    assert [h.doc_id for h in result.hits] == [h.doc_id for h in head + plain.hits[3:]]
    assert [h.rerank_score for h in result.hits[3:]] == [None, None]
    assert [h.score for h in result.hits[3:]] == [h.score for h in plain.hits[3:]]
    cut = searcher.search_detailed(query, k=2, mode="dense", candidates=3, keep_tail=True)
    assert [h.doc_id for h in cut.hits] == [h.doc_id for h in head[:2]] and cut.reranked == 3
    with pytest.raises(ValueError, match=r"k \(5\) is greater than candidates \(3\)"):
        searcher.search_detailed(query, k=5, mode="dense", candidates=3)


def test_a_build_committed_elsewhere_is_searched_without_reopening(tiny_index, topic_corpus, tiny_model):
    from indexer import IndexConfig, build_index

    searcher = Searcher(tiny_index)
    frozen = Searcher(tiny_index, config=SearchConfig(auto_refresh=False))
    before = searcher.search_detailed("comet", k=5, mode="bm25")
    assert before.hits == [] and before.stats.documents == 5
    (topic_corpus / "comet.txt").write_text("A comet with a bright tail passed close to the Sun.")
    build_index(IndexConfig(source=topic_corpus, index_dir=tiny_index, model=tiny_model, show_progress=False))

    after = searcher.search_detailed("comet", k=5, mode="bm25")  # auto_refresh: no refresh() call
    assert [h.doc_id for h in after.hits] == ["comet.txt"]
    assert after.stats.documents == 6 and after.stats.build_id != before.stats.build_id
    assert searcher.stats() == after.stats, "the figures shown are those of the build answered"
    assert frozen.search("comet", k=5, mode="bm25") == [], "auto_refresh=False keeps the loaded build"
    assert frozen.stats().documents == 5
    assert frozen.refresh() is True and frozen.refresh() is False
    assert [h.doc_id for h in frozen.search("comet", k=5, mode="bm25")] == ["comet.txt"]
    assert frozen.stats() == after.stats


def test_fusion_settings_and_their_errors(tiny_index):
    from search.config import FUSION_WEIGHTS
    from search.fusion import Fusion

    config = SearchConfig(fusion="zscore", fusion_weight=0.7)
    assert config.fusion_for() == Fusion("zscore", 0.7)
    assert config.fusion_for("zscore", 0.2) == Fusion("zscore", 0.2)
    assert config.fusion_for("rrf") == Fusion("rrf", FUSION_WEIGHTS["rrf"]), "another method: its own weight"
    assert SearchConfig(fusion="minmax").fusion_for() == Fusion("minmax", FUSION_WEIGHTS["minmax"])
    with pytest.raises(ValueError, match=r"Unknown fusion 'sum'\. Valid: rrf, minmax, tmm, zscore"):
        SearchConfig(fusion="sum")
    with pytest.raises(ValueError, match=r"fusion weight \(1\.2\) must lie between 0 \(BM25 alone\) and 1"):
        SearchConfig(fusion_weight=1.2)
    with pytest.raises(ValueError, match=r"second_passage_weight \(-0\.1\) must lie between 0 and 1"):
        SearchConfig(second_passage_weight=-0.1)
    with pytest.raises(ValueError, match=r"fusion_depth \(0\) must be at least 1"):
        SearchConfig(fusion_depth=0)
    searcher = Searcher(tiny_index)
    with pytest.raises(ValueError, match=r"Unknown fusion 'max'\. Valid: rrf, minmax, tmm, zscore"):
        searcher.search("bread", fusion="max")
    with pytest.raises(ValueError, match=r"fusion weight \(-1\) must lie between 0 \(BM25 alone\) and 1"):
        searcher.search("bread", fusion="minmax", fusion_weight=-1)
    with pytest.raises(ValueError, match=r"fusion weight \(2\) must lie between"):
        searcher.search("bread", mode="dense", fusion_weight=2)  # checked in every mode, used in hybrid


def test_fusion_decides_the_hybrid_order(tiny_index):
    from search.fusion import Fusion

    searcher = Searcher(tiny_index)
    text = "volcano ash over Europe and the bank's interest rates"
    query = searcher.query(text)
    dense = [(c.passage_id, c.score) for c in searcher.retriever("dense").retrieve(query, 100)]
    lexical = [(c.passage_id, c.score) for c in searcher.retriever("bm25").retrieve(query, 100)]
    for method, weight in (("rrf", 0.5), ("minmax", 0.3), ("zscore", 0.9), ("tmm", 0.8)):
        expected = Fusion(method, weight).fuse(dense, lexical)  # one passage per document here
        hits = searcher.search(text, k=5, mode="hybrid", fusion=method, fusion_weight=weight)
        assert [(h.passage_id, h.score) for h in hits] == [
            (pid, pytest.approx(score)) for pid, score in expected[:5]
        ]
    # A dense share of 1 is dense alone and 0 BM25 alone, exactly, under every fusion method
    # (RRF at 1 once ranked otherwise than dense mode: no second-passage share, reciprocal ranks).
    dense, bm25 = searcher.search_detailed(text, k=5, mode="dense"), searcher.search_detailed(text, k=5, mode="bm25")
    for method in ("rrf", "minmax", "tmm", "zscore"):
        for weight, alone in ((1.0, dense), (0.0, bm25)):
            ends = searcher.search_detailed(text, k=5, mode="hybrid", fusion=method, fusion_weight=weight)
            assert (ends.mode, ends.hits) == (alone.mode, alone.hits), (method, weight)


# --- when the model loads: eager (default), background, lazy (tiny models) -----------------------


@pytest.fixture()
def gated_model_load(monkeypatch):
    """Every `Index.load_model` from here on waits for the returned event: a slow model load,
    released by the test, not by a sleep. Released at the end in any case."""
    import threading

    from indexer.index import Index

    gate = threading.Event()
    calls = []
    real = Index.load_model

    def slow(self, device=None):
        calls.append(threading.current_thread().name)
        assert gate.wait(60), "the test never released the model load"
        return real(self, device)

    monkeypatch.setattr(Index, "load_model", slow)
    gate.calls = calls  # type: ignore[attr-defined]
    yield gate
    gate.set()


def test_background_loading_answers_bm25_until_the_model_is_ready_then_the_mode_asked(tiny_index, gated_model_load):
    searcher = Searcher(tiny_index, model_loading="background")
    assert searcher.model_loading
    keyword = Searcher(tiny_index, model_loading="lazy").search_detailed("bread dough", k=3, mode="bm25")
    early = searcher.search_detailed("bread dough", k=3)  # no mode named: the default may fall back
    assert early.mode == "bm25" and early.timings.encode_s == 0.0
    assert early.fallback_reason is not None and "model is still loading" in early.fallback_reason
    assert "searches run in hybrid mode as soon as it has loaded" in early.fallback_reason
    assert early.hits == keyword.hits
    for mode in ("hybrid", "dense"):  # a mode named is served, or waited for up to model_wait
        with pytest.raises(ModelNotReadyError, match=f"mode '{mode}' needs it"):
            searcher.search_detailed("bread dough", k=3, mode=mode, model_wait=0.05)
    assert searcher.search_detailed("bread dough", mode="bm25").fallback_reason is None, "BM25 asked: no fallback"

    gated_model_load.set()
    searcher.wait_for_model(timeout=60)
    assert not searcher.model_loading and gated_model_load.calls == ["semsearch-model-load"]
    ready = searcher.search_detailed("bread dough", k=3)
    assert ready.mode == "hybrid" and ready.fallback_reason is None and ready.timings.encode_s > 0
    assert ready.hits == Searcher(tiny_index).search_detailed("bread dough", k=3).hits


def test_background_loading_without_bm25_waits_for_the_model(tiny_index, gated_model_load, monkeypatch):
    import threading

    from tests.search.helpers import without_bm25

    without_bm25(monkeypatch)
    searcher = Searcher(tiny_index, model_loading="background")
    threading.Timer(0.2, gated_model_load.set).start()
    result = searcher.search_detailed("bread dough", k=3)  # returns only once the model has loaded
    assert result.mode == "dense" and "has no BM25 index" in result.fallback_reason
    assert not searcher.model_loading


def test_wait_for_model_times_out_with_the_fix(tiny_index, gated_model_load):
    searcher = Searcher(tiny_index, model_loading="background")
    with pytest.raises(TimeoutError, match=r"The model did not load within 0\.05 s; wait longer"):
        searcher.wait_for_model(timeout=0.05)


def test_lazy_loading_loads_on_the_first_search_that_needs_the_model(tiny_index, monkeypatch):
    from indexer.index import Index

    loads = []
    real = Index.load_model
    monkeypatch.setattr(Index, "load_model", lambda self, device=None: loads.append(1) or real(self, device))
    searcher = Searcher(tiny_index, model_loading="lazy")
    assert searcher.search_detailed("bread", mode="bm25").mode == "bm25" and not searcher.model_loading
    assert loads == [], "a BM25 search never loads the model"
    result = searcher.search_detailed("bread")
    assert result.mode == "hybrid" and result.fallback_reason is None and loads == [1]
    searcher.search("bread", mode="dense")
    assert loads == [1], "loaded once"


def test_a_model_that_cannot_load_fails_each_search_that_needs_it_with_the_fix(tiny_index, tiny_model):
    import shutil

    from search import IndexUnreadableError

    shutil.rmtree(tiny_model)
    with pytest.raises(IndexUnreadableError, match="model folder .* is gone.*--rebuild"):
        Searcher(tiny_index)  # eager, the default: as before, from the constructor
    for loading in ("background", "lazy"):
        searcher = Searcher(tiny_index, model_loading=loading)
        assert [h.doc_id for h in searcher.search("bread dough", mode="bm25")] == ["baking.txt"]
        if loading == "background":
            # Until its thread has failed, a search answers with BM25 (the point of loading in the
            # background); wait for the failure, or the assertions below race the thread.
            with pytest.raises(IndexUnreadableError, match="model folder .* is gone"):
                searcher.wait_for_model()
        for mode in (None, "dense", "hybrid"):
            with pytest.raises(IndexUnreadableError, match="model folder .* is gone.*--rebuild"):
                searcher.search("bread dough", mode=mode)
        with pytest.raises(IndexUnreadableError, match="model folder .* is gone"):
            searcher.wait_for_model()
        assert [h.doc_id for h in searcher.search("bread dough", mode="bm25")] == ["baking.txt"]


def test_unknown_model_loading_is_an_error_naming_the_choices(tiny_index):
    with pytest.raises(ValueError, match=r"Unknown model_loading 'later'\. Valid: eager, background, lazy\."):
        Searcher(tiny_index, model_loading="later")


def test_rrf_never_scores_documents_by_a_second_passage():
    config = SearchConfig(second_passage_weight=0.1)
    assert config.second_passage_for("hybrid", "zscore") == 0.1
    assert config.second_passage_for("bm25", "rrf") == 0.1  # not fused: the mode's own scores
    assert config.second_passage_for("hybrid", "rrf") == 0.0


def test_a_search_that_a_rebuild_overtakes_answers_from_the_new_build(tiny_index, topic_corpus, tiny_model):
    """A rebuild replaces every passage. A search that loaded the previous build just before the
    rebuild committed finds none of its passages' rows any more: it answers from the new build,
    whole, rather than with the few (or no) hits it could still read."""
    from indexer import IndexConfig, build_index

    searcher = Searcher(tiny_index)
    everything = len(searcher.search("garden", k=10, mode="dense"))
    assert everything == 5
    refresh = searcher.refresh
    checks = []

    def late_refresh() -> bool:  # the first check runs before the rebuild commits
        checks.append(1)
        return False if len(checks) == 1 else refresh()

    searcher.refresh = late_refresh  # type: ignore[method-assign]
    build_index(IndexConfig(source=topic_corpus, index_dir=tiny_index, model=tiny_model, rebuild=True,
                            show_progress=False))
    hits = searcher.search("garden", k=10, mode="dense")
    assert len(hits) == everything and len(checks) >= 2
    searcher.close()


def test_a_batch_answers_each_query_as_search_detailed_does(tiny_index):
    searcher = Searcher(tiny_index)
    queries = ["bread dough", "volcano", "stock markets fell"]
    for mode in ("dense", "bm25", "hybrid"):
        batch = searcher.search_batch(queries, k=3, mode=mode)
        for query, result in zip(queries, batch, strict=True):
            alone = searcher.search_detailed(query, k=3, mode=mode)
            assert [h.doc_id for h in result.hits] == [h.doc_id for h in alone.hits]
            assert [h.score for h in result.hits] == pytest.approx([h.score for h in alone.hits], abs=1e-5)
    assert all(r.timings.encode_s == 0 for r in searcher.search_batch(queries, mode="bm25")), "BM25 never encodes"
    with pytest.raises(EmptyQueryError, match=r"Query queries\[1\] is empty"):
        searcher.search_batch(["fine", " "])
    with pytest.raises(TypeError, match="not a single string"):
        searcher.search_batch("one string")


def test_identical_passages_are_merged_before_the_top_k_cut(tmp_path, tiny_model):
    from search import Searcher

    source = tmp_path / "docs"
    source.mkdir()
    shared = "The try statement specifies exception handlers and cleanup code for a group of statements."
    for name in ("try.txt", "compound.txt", "again.txt"):
        (source / name).write_text(shared, encoding="utf-8")
    others = {"loops.txt": "The for statement iterates over the items of a sequence in order.",
              "errors.txt": "Exceptions raised by statements are caught by a handler clause.",
              "files.txt": "Open a file with open and read its lines in a for statement."}
    for name, text in others.items():
        (source / name).write_text(text, encoding="utf-8")
    build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    with Searcher(tmp_path / "idx", model=tiny_model) as searcher:
        for mode in ("bm25", "dense", "hybrid"):
            hits = searcher.search("try statement exception handlers", k=4, mode=mode)
            texts = [h.text for h in hits]
            assert len(hits) == 4 and len(set(texts)) == 4, (mode, texts)  # k distinct hits still come back
            first = next(h for h in hits if h.text == shared)
            assert sorted((first.doc_id, *first.merged)) == ["again.txt", "compound.txt", "try.txt"]
            assert all(not h.merged for h in hits if h is not first)
            for j in (1, 2, 3):
                assert searcher.search("try statement exception handlers", k=j, mode=mode) == hits[:j]
