"""Negative miners: BM25 over an in-memory pool, and an existing index (tiny models only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.sources.passage_text import passage_text
from training.negatives import (
    BM25NegativeMiner,
    DenseNegativeMiner,
    IndexNegativeMiner,
    index_miner,
    mine_negatives,
)

POSITIVE = "Lava flows from the volcano in Iceland."
# Related to the query "volcano lava ash eruption", best match first under BM25.
RELATED = [
    "The volcano erupted lava and ash over the island.",
    "Black lava cooled near the volcano.",
    "Ash covered the roofs.",
]
UNRELATED = [
    "Knead the bread dough for ten minutes.",
    "The striker scored twice in the cup final.",
    "Share prices fell after the bank raised interest rates.",
    "Glaciers are melting in the warming climate.",
    "Knitting patterns for wool scarves.",
    "The orchestra tuned its violins.",
    "Tomatoes need sun and steady watering.",
]
POOL = [POSITIVE, *RELATED, *UNRELATED]
QUERY = "volcano lava ash eruption"


def _rngs(count: int = 25):
    return (np.random.default_rng(seed) for seed in range(count))


def test_bm25_miner_prefers_lexically_related_passages() -> None:
    miner = BM25NegativeMiner(POOL)
    for rng in _rngs():
        negatives = miner.mine(QUERY, {POSITIVE}, 3, rng)
        assert sorted(negatives) == sorted(RELATED), "the three passages sharing words with the query, not random ones"
    # With random negatives the three related passages would all come up only 1 time in 120.


def test_bm25_miner_tops_up_with_random_passages_when_few_match() -> None:
    miner = BM25NegativeMiner(POOL)
    picked: set[str] = set()
    for rng in _rngs():
        negatives = miner.mine(QUERY, {POSITIVE}, 5, rng)
        assert len(negatives) == 5 and len(set(negatives)) == 5
        assert set(RELATED) <= set(negatives), "every lexical match comes before any random passage"
        assert set(negatives) <= set(POOL) - {POSITIVE}
        picked |= set(negatives) - set(RELATED)
    assert len(picked) > 2, "the top-up is random, not always the same passages"
    everything = miner.mine(QUERY, {POSITIVE}, 50, np.random.default_rng(0))
    assert sorted(everything) == sorted(set(POOL) - {POSITIVE}), "never more than the pool holds, no repeats"
    assert miner.mine(QUERY, {POSITIVE}, 0, np.random.default_rng(0)) == []
    unknown = miner.mine("zzz qqq", {POSITIVE}, 2, np.random.default_rng(0))
    assert len(unknown) == 2 and POSITIVE not in unknown, "a query matching nothing still gets random negatives"


def test_bm25_miner_samples_within_depth() -> None:
    # Best first for QUERY without the positive: RELATED[0], RELATED[1], RELATED[2].
    top = BM25NegativeMiner(POOL, depth=1)
    assert {top.mine(QUERY, {POSITIVE}, 1, rng)[0] for rng in _rngs()} == {RELATED[0]}
    two = BM25NegativeMiner(POOL, depth=2)
    assert {two.mine(QUERY, {POSITIVE}, 1, rng)[0] for rng in _rngs()} == set(RELATED[:2]), (
        "sampled among the top two, both drawn over 25 seeds, the third never")
    with pytest.raises(ValueError, match=r"depth \(0\) must be at least 1"):
        BM25NegativeMiner(POOL, depth=0)


def test_bm25_miner_skips_substrings_and_superstrings_of_positives() -> None:
    document = "The volcano erupted lava and ash over the island. Flights were grounded for a week."
    piece = "lava and ash"
    pool = [document, RELATED[0], RELATED[1], piece, *UNRELATED]
    miner = BM25NegativeMiner(pool)
    for rng in _rngs():
        # The document holding the positive and a piece of it both match the query better than RELATED[1].
        assert miner.mine(QUERY, {RELATED[0]}, 1, rng) == [RELATED[1]]
    unrelated_positive = miner.mine(QUERY, {"something else"}, 4, np.random.default_rng(0))
    assert set(unrelated_positive) == {document, RELATED[0], RELATED[1], piece}, "all four match the query"


def test_bm25_miner_top_up_also_skips_pieces_of_positives() -> None:
    # The positive shares no word with the query, so neither does the document holding it: it is
    # not among the BM25 matches and can only come back through the random top-up.
    positive = "Knead the bread dough."
    holder = "Knead the bread dough. Let it rise for an hour."
    miner = BM25NegativeMiner([positive, holder, *RELATED, *UNRELATED[1:]])
    for rng in _rngs():
        negatives = miner.mine(QUERY, {positive}, 8, rng)
        assert holder not in negatives, "a superstring of the positive must not be a negative"


@pytest.fixture()
def topic_index(topic_corpus: Path, tmp_path: Path, tiny_model: str) -> Path:
    from indexer import IndexConfig, build_index

    build_index(IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    return tmp_path / "idx"


def test_index_miner_titles_negatives_and_samples_within_depth(topic_corpus: Path, topic_index: Path) -> None:
    positive = (topic_corpus / "volcano.txt").read_text()
    query = "lava bread striker interest rates"  # BM25 matches all four topic documents
    in_order = IndexNegativeMiner(topic_index, mode="bm25").mine(query, {positive}, 3, np.random.default_rng(0))
    texts = {name.split(".")[0]: (topic_corpus / name).read_text() for name in ("baking.txt", "markets.txt")}
    assert len(in_order) == 3 and not any(positive in negative for negative in in_order)
    assert set(in_order) >= {passage_text(stem, text) for stem, text in texts.items()}, "title (the file name) in front"
    assert sum(negative.startswith("# Cup final") for negative in in_order) == 1, "a heading title is not repeated"

    top = IndexNegativeMiner(topic_index, mode="bm25", depth=1)
    assert top.mine(query, {positive}, 2, np.random.default_rng(0)) == in_order[:1], "depth 1: only the best"
    two = IndexNegativeMiner(topic_index, mode="bm25", depth=2)
    drawn = {tuple(two.mine(query, {positive}, 1, rng)) for rng in _rngs()}
    assert drawn == {(in_order[0],), (in_order[1],)}, "sampled among the top two, never the third"
    skipping = IndexNegativeMiner(topic_index, mode="bm25", skip=1, depth=1)
    assert skipping.mine(query, {positive}, 1, np.random.default_rng(0)) == in_order[1:2]
    assert two.mine(query, {positive}, 0, np.random.default_rng(0)) == []
    for depth in (0, -1):
        with pytest.raises(ValueError, match=rf"depth \({depth}\) must be at least 1"):
            IndexNegativeMiner(topic_index, depth=depth)


def test_index_miner_leaves_dense_mining_to_the_library(topic_corpus: Path, topic_index: Path) -> None:
    with pytest.raises(ValueError, match=r"mode 'dense' is not one of bm25, hybrid. Dense negatives come from DenseNegativeMiner"):
        IndexNegativeMiner(topic_index, mode="dense")
    miner = index_miner(topic_index, mode="dense", skip=1, depth=2)
    assert isinstance(miner, DenseNegativeMiner) and (miner.skip, miner.depth) == (1, 2)
    assert miner.model.get_embedding_dimension() == 32, "the index's own bi-encoder (the tiny model)"
    assert isinstance(index_miner(topic_index, mode="bm25"), IndexNegativeMiner)


# --- dense mining: sentence-transformers' mine_hard_negatives, checked against brute force ---------


@pytest.fixture(scope="module")
def tiny_encoder(tiny_model_dir: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_dir), device="cpu")


def _brute_force(model, query: str, candidates: list[str], positives: set[str]) -> list[str]:
    """Every candidate but the positives, most cosine-similar to the query first."""
    vectors = model.encode(candidates, normalize_embeddings=True)
    query_vector = model.encode([query], normalize_embeddings=True)[0]
    order = np.argsort(-(vectors @ query_vector), kind="stable")
    return [candidates[int(i)] for i in order if candidates[int(i)] not in positives]


def test_dense_miner_takes_the_nearest_non_positives(tiny_encoder) -> None:
    expected = _brute_force(tiny_encoder, QUERY, POOL, {POSITIVE})
    assert DenseNegativeMiner(tiny_encoder, POOL).mine(QUERY, {POSITIVE}, 3, np.random.default_rng(0)) == expected[:3]
    skipping = DenseNegativeMiner(tiny_encoder, POOL, skip=1)
    assert skipping.mine(QUERY, {POSITIVE}, 3, np.random.default_rng(0)) == expected[1:4]
    two = DenseNegativeMiner(tiny_encoder, POOL, depth=2)
    drawn = {tuple(two.mine(QUERY, {POSITIVE}, 1, rng)) for rng in _rngs()}
    assert drawn == {(expected[0],), (expected[1],)}, "sampled among the top two, never the third"
    everything = DenseNegativeMiner(tiny_encoder, POOL).mine(QUERY, {POSITIVE}, 50, np.random.default_rng(0))
    assert everything == expected, "never more than the pool holds, no repeats"
    assert DenseNegativeMiner(tiny_encoder, POOL).mine(QUERY, {POSITIVE}, 0, np.random.default_rng(0)) == []
    for kwargs, message in (({"depth": 0}, r"depth \(0\) must be at least 1"), ({"skip": -1}, r"skip \(-1\) must be 0")):
        with pytest.raises(ValueError, match=message):
            DenseNegativeMiner(tiny_encoder, POOL, **kwargs)


def test_dense_miner_mines_every_query_among_all_positives_and_skips_their_holders(tiny_encoder) -> None:
    holder = POSITIVE + " Flights across Europe were grounded."
    positives = {QUERY: {POSITIVE}, "bread dough and scarves": {UNRELATED[0], UNRELATED[4]}}
    pool = [holder, *RELATED, *UNRELATED[1:4], *UNRELATED[5:]]
    mined = DenseNegativeMiner(tiny_encoder, pool).mine_many(positives, 20, np.random.default_rng(0))
    candidates = list(dict.fromkeys(pool + [p for relevant in positives.values() for p in sorted(relevant)]))
    for query, relevant in positives.items():
        expected = [p for p in _brute_force(tiny_encoder, query, candidates, relevant) if p != holder or query != QUERY]
        assert mined[query] == expected, "the other query's positives are candidates too"
    assert holder not in mined[QUERY], "a passage holding the positive is not a negative"
    assert holder in mined["bread dough and scarves"]


def test_mine_negatives_mines_all_queries_in_one_pass_when_the_miner_can() -> None:
    class Batch:
        calls = 0

        def mine(self, query, positives, count, rng):
            raise AssertionError("mine_many is there: one pass, not one call per query")

        def mine_many(self, positives, count, rng):
            Batch.calls += 1
            return {query: [f"not {query}"] * count for query in positives}

    positives = {"q1": {"p1"}, "q2": {"p2"}}
    assert mine_negatives(Batch(), positives, 2, np.random.default_rng(0)) == {
        "q1": ["not q1", "not q1"], "q2": ["not q2", "not q2"]}
    assert Batch.calls == 1
    per_query = mine_negatives(BM25NegativeMiner(POOL), {QUERY: {POSITIVE}}, 3, np.random.default_rng(0))
    assert sorted(per_query[QUERY]) == sorted(RELATED)
