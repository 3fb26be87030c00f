"""Training pairs read a passage as the indexer embeds it and the reranker reads it: `passage_text(title, text)`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from indexer.sources.passage_text import passage_text
from training.cross_encoder import load_cross_encoder_rows
from training.siamese_data import beir_rows

DOCUMENTS = [
    {"_id": "d1", "title": "Stem cells", "text": "Cells that divide and renew themselves for a lifetime."},
    {"_id": "d2", "title": "", "text": "Vitamin D deficiency is common in winter."},
    {"_id": "d3", "title": "Malaria", "text": "A parasite carried by mosquitoes causes the disease."},
]
QUERIES = {"q1": "do stem cells renew themselves", "q2": "is vitamin D low in winter"}
QRELS = {("q1", "d1"), ("q2", "d2")}


@pytest.fixture()
def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in DOCUMENTS))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (folder / "qrels" / "train.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in sorted(QRELS))
    )
    return folder


def _expected() -> dict[str, str]:
    """Query text -> the passage_text of its relevant document."""
    by_id = {doc["_id"]: doc for doc in DOCUMENTS}
    return {QUERIES[q]: passage_text(by_id[d]["title"], by_id[d]["text"]) for q, d in QRELS}


def test_beir_training_pairs_are_passage_text(beir_folder: Path) -> None:
    expected = _expected()
    assert expected[QUERIES["q1"]] == "Stem cells\nCells that divide and renew themselves for a lifetime."
    rng = np.random.default_rng(0)
    assert {row["anchor"]: row["positive"] for row in beir_rows(beir_folder, "mnrl", rng)} == expected
    every_document = {passage_text(doc["title"], doc["text"]) for doc in DOCUMENTS}
    assert {row["negative"] for row in beir_rows(beir_folder, "triplet", rng)} <= every_document
    rows = load_cross_encoder_rows(beir_folder, rng, negatives_per_query=1)
    assert {row["query"]: row["passage"] for row in rows if row["label"] == 1.0} == expected
    assert {row["passage"] for row in rows} <= every_document


def test_the_indexer_embeds_the_same_string(beir_folder: Path, tmp_path: Path, tiny_model: str) -> None:
    from indexer import IndexConfig, build_index
    from search import Searcher

    build_index(IndexConfig(source=beir_folder, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    searcher = Searcher(tmp_path / "idx")
    positives = {row["positive"] for row in beir_rows(beir_folder, "mnrl", np.random.default_rng(0))}
    for positive in positives:
        best = searcher.search(positive, k=1, mode="dense")[0]
        # Cosine 1: the training positive, embedded as a query, is the very vector the indexer stored.
        assert best.score == pytest.approx(1.0, abs=1e-5) and passage_text(best.title, best.text) == positive
    glued = "Stem cells. Cells that divide and renew themselves for a lifetime."  # the old training glue
    assert searcher.search(glued, k=1, mode="dense")[0].score < 1.0 - 1e-4
