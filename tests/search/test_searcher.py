from __future__ import annotations

import warnings

import pytest

from indexer import IndexConfig, IndexMismatchError, build_index
from search import (
    EmptyQueryError,
    IndexNotFoundError,
    QueryTruncatedWarning,
    SearchConfig,
    Searcher,
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
        SearchConfig(k=0)


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
    with pytest.raises(IndexUnreadableError, match="--rebuild"):
        Searcher(real_index)
