"""The relevance-label calibration's sampling and naming, without the model or the data."""

from __future__ import annotations

import numpy as np

from bench.bench_relevance_labels import SCIFACT_TRAIN, SETS, record_name, sample_pairs


def test_sample_pairs_draws_judged_queries_and_keeps_only_relevant_documents_in_the_corpus() -> None:
    queries = {"q1": "one", "q2": "two", "q3": "three", "q4": "not judged"}
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d2": 2, "gone": 1}, "q3": {"d3": 1}, "q9": {"d1": 1}}
    doc_ids = ["d1", "d2", "d3", "d4"]
    qids, relevant, unrelated = sample_pairs(queries, qrels, doc_ids, 2, np.random.default_rng(0))
    assert len(qids) == 2 and set(qids) <= {"q1", "q2", "q3"}, "judged queries that have a text only"
    assert {q: relevant[q] for q in qids} == {q: {"q1": ["d1"], "q2": ["d2"], "q3": ["d3"]}[q] for q in qids}
    assert set(unrelated) == set(qids) and set(unrelated.values()) <= set(doc_ids)
    again = sample_pairs(queries, qrels, doc_ids, 2, np.random.default_rng(0))
    assert again == (qids, relevant, unrelated), "the seed decides the sample"
    every, _, _ = sample_pairs(queries, qrels, doc_ids, 10, np.random.default_rng(0))
    assert sorted(every) == ["q1", "q2", "q3"], "asking for more takes them all"


def test_each_set_records_under_its_own_heading_and_scifact_train_keeps_its_block() -> None:
    assert SETS == ("scifact-train", "scifact-dev", "wiki-lead", "wikinews-headline")
    assert record_name(SCIFACT_TRAIN) == ("bench_relevance_labels",
                                          "Relevance labels: dense cosines on SciFact train")
    assert record_name("wiki-lead") == ("bench_relevance_labels_wiki_lead",
                                        "Relevance labels: dense cosines on the wiki-lead dev set")
    assert len({record_name(s)[0] for s in SETS}) == len(SETS)
