from __future__ import annotations

import json

import pytest

from search.eval import EvalConfig, evaluate, main


@pytest.fixture()
def tiny_beir(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = [
        ("d1", "Volcano", "Lava erupted from the volcano."),
        ("d2", "Bread", "Knead the dough and bake it."),
        ("d3", "Football", "The striker scored a goal."),
    ]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x, "metadata": {}}) + "\n" for i, t, x in docs)
    )
    queries = [("q1", "volcanic eruption"), ("q2", "baking bread"), ("q3", "unjudged query")]
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries))
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return folder


@pytest.mark.integration
def test_eval_builds_and_scores_the_real_pipeline(tiny_beir, tmp_path, capsys):
    code = main(["--beir", str(tiny_beir), "--index", str(tmp_path / "idx"), "--build", "--json"])
    assert code == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    metrics = json.loads(last)
    assert set(metrics) >= {"ndcg@10", "mrr@10", "recall@100", "latency_p50_ms", "latency_p95_ms"}
    assert metrics["ndcg@10"] == pytest.approx(1.0)  # both queries find their document first
    assert metrics["recall@100"] == 1.0
    assert metrics["queries"] == 2
    assert 0 < metrics["latency_p50_ms"] <= metrics["latency_p95_ms"]


def test_eval_without_index_asks_for_build(tiny_beir, tmp_path, capsys):
    code = main(["--beir", str(tiny_beir), "--index", str(tmp_path / "none")])
    assert code == 2
    assert "No index found" in capsys.readouterr().err


def test_unknown_split_lists_the_available_ones(tiny_beir, tmp_path):
    with pytest.raises(FileNotFoundError, match="No qrels for split 'dev'.*Available splits: test"):
        evaluate(EvalConfig(beir_dir=tiny_beir, index_dir=tmp_path / "idx", split="dev"))
