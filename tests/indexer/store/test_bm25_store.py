"""The BM25 store on its own: ids in, ids out, stemming and stop words, atomic save and reload."""

from __future__ import annotations

import json

import numpy as np
import pytest

from indexer.sources.passage_text import passage_text
from indexer.store.bm25_store import (
    LEGACY_STOPWORDS,
    META_FILE,
    STOPWORDS,
    TITLE_REPEATS,
    BM25Store,
    bm25_document,
)

TEXTS = {
    7: "Volcano eruptions ground flights across Europe",
    3: "Bread dough rises before baking",
    12: "The volcano erupted again; ash fell on the village",
    5: "Interest rates and share prices",
}


def build() -> BM25Store:
    return BM25Store.build(list(TEXTS), list(TEXTS.values()))


def test_search_returns_passage_ids_of_term_matches_best_first():
    store = build()
    scores, ids = store.search("volcanic eruption", 10)
    # "eruption"/"erupted" stem to "erupt"; "volcanic" shares no stem with "volcano".
    assert set(ids.tolist()) == {7, 12}
    assert list(scores) == sorted(scores, reverse=True) and np.all(scores > 0)
    scores, ids = store.search("volcano", 1)
    assert len(ids) == 1 and ids[0] in (7, 12)


def test_stop_words_and_unknown_words_match_nothing():
    store = build()
    for query in ("the and of", "zzzyx", ""):
        scores, ids = store.search(query, 5)
        assert len(ids) == 0 and len(scores) == 0


@pytest.mark.parametrize("mapped", [False, True])
def test_save_and_load_round_trip(tmp_path, mapped):
    """Loaded whole or memory-mapped (what a searcher opens), the store answers as the one saved."""
    store = build()
    path = store.save(tmp_path / "bm25-abc")
    assert not list(tmp_path.glob(".*.tmp")), "the temp folder was renamed, not left behind"
    loaded = BM25Store.load(path, mapped=mapped)
    assert isinstance(loaded.term_counts, np.memmap) == mapped
    assert sorted(loaded.ids().tolist()) == sorted(TEXTS)
    for query in ("volcano ash", "baking bread", "share prices"):
        expected = store.search(query, 4)
        got = loaded.search(query, 4)
        assert got[1].tolist() == expected[1].tolist()
        np.testing.assert_allclose(got[0], expected[0])
    assert loaded.rows(np.array([0, 2])).ntotal == 2  # a shard's rows cut from a mapped store


def test_empty_store_saves_loads_and_finds_nothing(tmp_path):
    store = BM25Store.build([], [])
    loaded = BM25Store.load(store.save(tmp_path / "bm25-empty"))
    assert loaded.ntotal == 0
    assert len(loaded.search("anything", 3)[1]) == 0


def test_missing_folder_and_bad_input_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="--rebuild"):
        BM25Store.load(tmp_path / "bm25-gone")
    with pytest.raises(ValueError, match="2 ids for 1 texts"):
        BM25Store.build([1, 2], ["one text"])
    with pytest.raises(ValueError, match="passage ids must be unique"):
        BM25Store.build([1, 1], ["a b", "c d"])


@pytest.mark.parametrize("title, text", [
    ("Volcanoes", "Lava flows downhill."),
    ("", "Lava flows downhill."),
    ("Volcanoes", ""),
    ("Volcanoes", "# Volcanoes\n\nLava flows downhill."),  # a Markdown file's own heading
])
def test_bm25_document_writes_the_title_n_times_in_all(title, text):
    assert bm25_document(title, text, 1) == passage_text(title, text)
    assert bm25_document(title, text, 0) == text
    document = bm25_document(title, text, 3)
    assert document.count("Volcanoes") == (3 if title else 0)
    assert document.endswith(text)


def test_bm25_document_refuses_a_negative_count():
    with pytest.raises(ValueError, match="0 or more"):
        bm25_document("Title", "text", -1)


def test_a_title_written_more_often_weighs_more():
    docs = {1: ("Volcanoes", "Lava flows downhill from the crater."),
            2: ("Bread", "Volcanoes are a popular theme for cakes made with dough.")}
    for repeats in (1, 3):
        store = BM25Store.build(list(docs), [bm25_document(t, x, repeats) for t, x in docs.values()],
                                title_repeats=repeats)
        scores, ids = store.search("volcanoes", 2)
        assert ids.tolist() == [1, 2]
        if repeats == 1:
            once = scores[0] - scores[1]
    assert scores[0] - scores[1] > once  # the title match pulls further ahead


def test_title_repeats_are_recorded_and_read_back(tmp_path):
    store = BM25Store.build(list(TEXTS), list(TEXTS.values()), title_repeats=TITLE_REPEATS)
    path = store.save(tmp_path / "bm25-titles")
    assert BM25Store.load(path).title_repeats == TITLE_REPEATS
    assert BM25Store.stats_of(path).title_repeats == TITLE_REPEATS
    # A folder from before the count was recorded was written with the title once.
    meta = json.loads((path / META_FILE).read_text())
    del meta["title_repeats"]
    (path / META_FILE).write_text(json.dumps(meta))
    assert BM25Store.load(path).title_repeats == 1
    assert BM25Store.stats_of(path).title_repeats == 1


def test_passages_all_of_stop_words_build_an_index_that_matches_nothing(tmp_path):
    """"Who are you?" and "the a of" hold no token BM25 keeps: their mean length is no divisor."""
    store = BM25Store.build([1, 2], ["Who are you?", "the a of"], title_repeats=TITLE_REPEATS)
    assert len(store.search("who are you", 5)[1]) == 0
    merged = BM25Store.merged(BM25Store.load(store.save(tmp_path / "base")), np.ones(2, bool),
                              [(np.array([3]), ["Who won the race?"])])
    assert merged.search("race", 5)[1].tolist() == [3]


def test_a_folder_keeps_the_stop_words_it_was_built_with(tmp_path):
    """A base records its list; its queries and its deltas read with it, so an index built with
    Lucene's 33 words ("en", before the list changed) still matches "where" and "can"."""
    texts = {1: "where can I leave my bike", 2: "bicycles go in the racks"}
    old = BM25Store.build(list(texts), list(texts.values()), stopwords=LEGACY_STOPWORDS).save(tmp_path / "old")
    new = BM25Store.build(list(texts), list(texts.values())).save(tmp_path / "new")
    assert STOPWORDS != LEGACY_STOPWORDS
    assert BM25Store.load(old).stopwords == LEGACY_STOPWORDS and BM25Store.load(new).stopwords == STOPWORDS
    assert BM25Store.load(old).search("where can", 2)[1].tolist() == [1]
    assert len(BM25Store.load(new).search("where can", 2)[1]) == 0
    delta = BM25Store.build_delta([3], ["where can I park"], BM25Store.stats_of(old), "old")
    assert delta.stopwords == LEGACY_STOPWORDS and delta.search("where", 1)[1].tolist() == [3]
    assert BM25Store.load(old).changed_rules(TITLE_REPEATS, STOPWORDS) == [
        "the title written 1 time(s), not 3", "the stop words 'en', not 'en_plus'"]
    with pytest.raises(ValueError, match="stop-word list"):
        BM25Store.merged(BM25Store.load(old), np.ones(2, bool), [], title_repeats=1, stopwords=STOPWORDS)
    meta = json.loads((old / META_FILE).read_text())
    meta["stopwords"] = "klingon"
    (old / META_FILE).write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="'klingon', which this version does not know.*--rebuild"):
        BM25Store.load(old)
    with pytest.raises(ValueError, match="in memory only"):
        BM25Store.build([1], ["bike"], stopwords=["bike"]).save(tmp_path / "own")


def test_the_private_bm25s_functions_a_delta_uses_still_score_as_bm25s_does(tmp_path):
    """`_FrozenStatsBM25` calls three private functions of bm25s (pinned in requirements.txt).
    A delta scored with its own base's statistics must score every passage exactly as bm25s'
    public `BM25.index` does, so an upgrade that changes them fails here, loudly, not in a search."""
    import inspect

    import bm25s
    from bm25s import scoring

    from indexer.store.bm25_store import BM25Store

    assert bm25s.__version__ == "0.3.16", "re-check _FrozenStatsBM25 against the new bm25s, then update this pin"
    for name, params in (("_calculate_doc_freqs", {"corpus_tokens", "unique_tokens", "show_progress"}),
                         ("_build_scores_and_indices_for_matrix", {"corpus_token_ids", "idf_array",
                                                                   "avg_doc_len", "doc_frequencies"}),
                         ("_score_idf_lucene", {"df", "N"})):
        assert params <= set(inspect.signature(getattr(scoring, name)).parameters), name
    texts = ["glaciers carve deep valleys", "the river carved a canyon", "valleys of ice and snow",
             "a canyon river of snow melt", "deep blue lakes"]
    base = BM25Store.build(np.arange(5), texts)
    base.save(tmp_path / "base")
    delta = BM25Store.build_delta(np.arange(5), texts, BM25Store.stats_of(tmp_path / "base"), "base")
    for query in ("carve valleys", "river canyon snow", "deep lakes"):
        assert delta.search(query, 5)[1].tolist() == base.search(query, 5)[1].tolist(), query
        np.testing.assert_allclose(delta.search(query, 5)[0], base.search(query, 5)[0], rtol=1e-5)


@pytest.mark.parametrize("block", [1, 7, 256, 100_000])
def test_a_base_built_in_blocks_equals_the_one_bm25s_builds_at_once(block, monkeypatch):
    """`build_streamed` keeps tokens as int32 arrays and scores block by block; the score matrix,
    vocabulary and mean length are those of bm25s's `BM25.index` over every text at once, empty
    texts (stop words only) included."""
    import random

    import bm25s

    from indexer.store import bm25_store

    rng = random.Random(block)
    words = ["river", "glacier", "valley", "mountain", "forest", "ocean", "the", "a", "of", "run", "runs",
             "running", "rivers", "Rivers"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 25))) for _ in range(700)]
    ids = np.arange(5, 705)
    monkeypatch.setattr(bm25_store, "STREAM_BLOCK", block)
    built = BM25Store.build(ids, texts)
    reference = bm25s.BM25(k1=bm25_store.K1, b=bm25_store.B, method=bm25_store.METHOD)
    tokens = BM25Store(ids, None)._tokenize(texts, return_ids=True)
    reference.index(tokens, show_progress=False)

    def matrix(index: bm25s.BM25, vocab: dict[str, int]) -> dict[tuple[int, str], float]:
        term_of = {column: term for term, column in vocab.items()}
        indptr, rows, data = index.scores["indptr"], index.scores["indices"], index.scores["data"]
        return {(int(rows[at]), term_of[column]): float(data[at])
                for column in range(len(indptr) - 1) for at in range(indptr[column], indptr[column + 1])}

    got, want = matrix(built._index, built._index.vocab_dict), matrix(reference, reference.vocab_dict)
    assert got.keys() == want.keys() and len(got) > 1000
    assert all(abs(got[key] - want[key]) < 1e-6 for key in want)
    indptr, rows = built._index.scores["indptr"], built._index.scores["indices"]
    assert all(np.all(np.diff(rows[indptr[c]:indptr[c + 1]]) > 0) for c in range(len(indptr) - 1))  # canonical
    assert set(built._index.vocab_dict) == set(reference.vocab_dict)
    assert built.avg_doc_len == pytest.approx(float(np.mean([len(t) for t in tokens.ids])))
    assert built.ids().tolist() == ids.tolist()


@pytest.mark.parametrize("seed", range(4))
def test_a_merge_rescores_the_base_as_a_build_of_everything_would(seed, tmp_path, monkeypatch):
    """`merged` keeps the base's term counts and lengths, drops removed rows, tokenizes only the new
    texts, and gives the scores, vocabulary and mean length of a build over the result (saved and
    loaded, as a merge reads its committed base)."""
    import random

    from indexer.store import bm25_store

    rng = random.Random(seed)
    monkeypatch.setattr(bm25_store, "RESCORE_SLICE", 7 if seed % 2 else bm25_store.RESCORE_SLICE)
    words = ["river", "glacier", "valley", "mountain", "forest", "ocean", "the", "a", "run", "runs",
             "comet", "orbit", "planet", "rivers"]

    def texts(n: int) -> list[str]:
        return [" ".join(rng.choice(words[: 8 + seed]) for _ in range(rng.randint(0, 30))) for _ in range(n)]

    base_texts, new_texts = texts(300), [t + " comet orbit" * (i % 3) for i, t in enumerate(texts(120))]
    base_ids, new_ids = np.arange(10, 310), np.arange(400, 520)
    BM25Store.build(base_ids, base_texts, title_repeats=bm25_store.TITLE_REPEATS).save(tmp_path / "base")
    base = BM25Store.load(tmp_path / "base")
    assert base.rescorable
    keep = np.array([rng.random() > 0.3 or seed == 3 for _ in base_ids])  # seed 3: nothing removed
    monkey_block = 1 + seed * 17
    blocks = [(new_ids[i:i + monkey_block], new_texts[i:i + monkey_block]) for i in range(0, 120, monkey_block)]
    merged = BM25Store.merged(base, keep, blocks)
    whole = BM25Store.build(np.concatenate([base_ids[keep], new_ids]),
                            [t for t, k in zip(base_texts, keep, strict=True) if k] + new_texts,
                            title_repeats=bm25_store.TITLE_REPEATS)

    def entries(store: BM25Store) -> dict[tuple[int, str], float]:
        index = store._index
        term_of = {column: term for term, column in index.vocab_dict.items()}
        indptr, rows, data = index.scores["indptr"], index.scores["indices"], index.scores["data"]
        return {(int(store._ids[rows[at]]), term_of[column]): float(data[at])
                for column in range(len(indptr) - 1) for at in range(indptr[column], indptr[column + 1])}

    got, want = entries(merged), entries(whole)
    assert got.keys() == want.keys() and len(got) > 1000
    assert all(abs(got[key] - want[key]) < 1e-6 for key in want)
    assert merged.avg_doc_len == pytest.approx(whole.avg_doc_len)
    assert np.array_equal(merged.lengths, whole.lengths) and np.array_equal(merged.ids(), whole.ids())
    indptr, rows = merged._index.scores["indptr"], merged._index.scores["indices"]
    assert all(np.all(np.diff(rows[indptr[c]:indptr[c + 1]]) > 0) for c in range(len(indptr) - 1))
    for query in ("comet orbit", "river valley", "glacier"):
        np.testing.assert_allclose(merged.search(query, 20)[0], whole.search(query, 20)[0], rtol=1e-6)
        assert merged.search(query, 20)[1].tolist() == whole.search(query, 20)[1].tolist()
    # The same passages tokenized beforehand (as a build's workers tokenize them, in blocks cut
    # into parts, whose unused terms must not join the vocabulary): the same index.
    tokenized = bm25_store.tokenized_block(new_texts, bm25_store.STOPWORDS)
    cuts = [0, 1 + seed, 40, 41, 120]
    pretokenized = BM25Store.merged(BM25Store.load(tmp_path / "base"), keep,
                                    [(new_ids[a:b], tokenized.rows(a, b)) for a, b in zip(cuts, cuts[1:], strict=False)])
    assert entries(pretokenized) == pytest.approx(want)
    assert set(pretokenized._index.vocab_dict) == set(whole._index.vocab_dict)
    merged.save(tmp_path / "merged")  # and it merges again from its own counts
    again = BM25Store.merged(BM25Store.load(tmp_path / "merged"), np.ones(merged.ntotal, bool), [])
    assert entries(again) == pytest.approx(got)
    assert bm25_store.COUNTS_FILE in {p.name for p in (tmp_path / "merged").iterdir()}


@pytest.mark.parametrize("chosen", [None, "cuda"])
def test_bm25s_keeps_jax_off_the_gpu_unless_the_user_chose(chosen: str | None) -> None:
    """bm25s runs a JAX top-k when it is imported and JAX is installed; JAX's first use takes 75%
    of a GPU's memory (65 GB of an H100 in bench_gpu's first run). Importing the store pins JAX to
    the CPU first, and leaves a user's own JAX_PLATFORMS alone."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    if chosen:
        env["JAX_PLATFORMS"] = chosen
    shown = subprocess.run([sys.executable, "-c", "import os, indexer.store.bm25_store; print(os.environ['JAX_PLATFORMS'])"],
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert shown == (chosen or "cpu")
