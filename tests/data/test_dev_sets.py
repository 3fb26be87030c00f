"""Dev sets: the lead-sentence question, both general-domain builders on tiny inputs, the BEIR
files they write, and the SciFact split (the same as bench_rerank's) on the shared data."""

from __future__ import annotations

import numpy as np

from data.beir import load_beir_qrels, load_beir_queries
from data.dev_sets import (
    lead_question,
    scifact_dev,
    split_train_queries,
    wiki_lead,
    wikinews_headline,
    write_beir,
)
from data.raw_text import Document


def test_lead_question_drops_the_subject_and_asides():
    sentence = ("Jarred Shaw (born September 28, 1990) is an American professional basketball player "
                "for Trouville of the Liga Uruguaya.")
    assert lead_question(sentence) == (
        "What is an American professional basketball player for Trouville of the Liga Uruguaya?"
    )
    assert lead_question("Paris was the capital.") is None, "too short to point at one article"
    assert lead_question("In 1990 many things happened in the town and nearby.") is None, "no definition"


def _article(i: int) -> Document:
    lead = f"Town{i} is a small town in the north of the region number {i} with a river and a mill."
    body = " ".join(f"word{i}x{j}" for j in range(70))
    return Document(str(i), f"Town{i}", f"{lead}\n{body}.")


def test_wiki_lead_holds_the_lead_sentence_out_of_its_article():
    documents = [_article(i) for i in range(20)] + [Document("99", "Short", "Too short to use.")]
    corpus, queries, qrels = wiki_lead(documents, np.random.default_rng(0), articles=10, queries=4)
    assert len(corpus) == 10 and len(queries) == 4 and "99" not in {d.id for d in corpus}
    by_id = {d.id: d for d in corpus}
    for qid, question in queries.items():
        (doc_id,) = qrels[qid]
        assert question.startswith("What is a small town in the north") and question.endswith("?")
        assert "small town" not in by_id[doc_id].text and by_id[doc_id].title == f"Town{doc_id}"
    again = wiki_lead(documents, np.random.default_rng(0), articles=10, queries=4)
    assert again == (corpus, queries, qrels), "the same seed gives the same set"


def test_wikinews_headline_indexes_articles_without_their_headline():
    body = " ".join(f"w{j}" for j in range(100))
    documents = [Document(str(i), f"Headline number {i} here", f"Report {i}. {body}") for i in range(8)]
    documents.append(Document("dup", "Same report filed again", "Report 3. " + body))  # its opening is seen
    corpus, queries, qrels = wikinews_headline(documents, np.random.default_rng(1), articles=20, queries=3)
    assert {d.id for d in corpus} == {str(i) for i in range(8)} and all(d.title == "" for d in corpus)
    for qid, headline in queries.items():
        assert qrels[qid] == {qid.removeprefix("q"): 1} and headline == f"Headline number {qid[1:]} here"


def test_written_sets_read_back_as_beir(tmp_path):
    corpus, queries, qrels = wiki_lead([_article(i) for i in range(6)], np.random.default_rng(0), 6, 2)
    folder = write_beir(tmp_path / "set", corpus, queries, qrels)
    assert load_beir_queries(folder) == queries and load_beir_qrels(folder, "dev") == qrels


def test_scifact_dev_is_held_out_train_queries(shared_data):
    dev = scifact_dev(shared_data / "scifact")
    train_qrels = load_beir_qrels(shared_data / "scifact", "train")
    test_qrels = load_beir_qrels(shared_data / "scifact", "test")
    assert len(dev.queries) == 200 and set(dev.qrels) <= set(train_qrels)
    assert not set(dev.qrels) & set(test_qrels), "never a test query"
    train, held_out = split_train_queries(train_qrels, 200, 0)
    assert sorted(dev.qrels) == held_out and not set(train) & set(held_out)
