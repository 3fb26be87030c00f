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


def test_eval_in_bm25_mode_reports_latency_per_stage(tiny_beir, tmp_path, tiny_model, capsys):
    argv = ["--beir", str(tiny_beir), "--index", str(tmp_path / "idx"), "--model", tiny_model]
    assert main([*argv, "--build", "--mode", "bm25", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert "bm25" in out[1]
    metrics = json.loads(out[-1])
    assert metrics["ndcg@10"] == pytest.approx(1.0)  # "eruption"/"erupted", "baking"/"bake" stem alike
    for stage in ("", "encode_", "retrieve_", "rerank_"):
        assert f"latency_{stage}p50_ms" in metrics and f"latency_{stage}p95_ms" in metrics
    assert metrics["latency_encode_p50_ms"] == 0.0 and metrics["latency_rerank_p95_ms"] == 0.0
    assert metrics["latency_retrieve_p50_ms"] > 0

    assert main([*argv, "--mode", "hybrid", "--json"]) == 0
    hybrid = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert hybrid["latency_encode_p50_ms"] > 0 and hybrid["recall@100"] == 1.0


def test_eval_rerank_with_tiny_cross_encoder(tiny_beir, tmp_path, tiny_model, tiny_cross_encoder, capsys):
    argv = ["--beir", str(tiny_beir), "--index", str(tmp_path / "idx"), "--model", tiny_model]
    assert main([*argv, "--build", "--rerank-model", tiny_cross_encoder, "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["latency_rerank_p50_ms"] > 0 and metrics["recall@100"] == 1.0


def test_eval_rejects_bad_mode_and_candidates(tiny_beir, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"Unknown mode 'x'\. Valid: dense, bm25, hybrid\."):
        EvalConfig(beir_dir=tiny_beir, index_dir=tmp_path, mode="x")
    with pytest.raises(ValueError, match=r"candidates \(150\) must lie between 1 and the ranking depth \(100\)"):
        EvalConfig(beir_dir=tiny_beir, index_dir=tmp_path, rerank_model="ce", candidates=150)
    assert EvalConfig(beir_dir=tiny_beir, index_dir=tmp_path, rerank_model="ce").rerank_candidates == 50
    assert main(["--beir", str(tiny_beir), "--index", str(tmp_path), "--candidates", "20"]) == 2
    assert "only matters when reranking; add --rerank or --rerank-model PATH" in capsys.readouterr().err
