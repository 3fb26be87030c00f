from __future__ import annotations

import json

import pytest

from data.beir import load_beir_queries
from indexer import IndexConfig, build_index
from search import CrossEncoderReranker, Searcher
from search.eval import EvalConfig, evaluate, evaluate_searcher, main, run_queries
from search.params import SearchParams


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


def test_eval_reranked_run_is_search_detailed_with_keep_tail(tiny_beir, tmp_path, tiny_model, tiny_cross_encoder):
    index = tmp_path / "idx"
    build_index(IndexConfig(source=tiny_beir, index_dir=index, model=tiny_model, show_progress=False))
    reranker = CrossEncoderReranker(tiny_cross_encoder)
    searcher = Searcher(index, reranker=reranker)
    queries = load_beir_queries(tiny_beir)
    rankings, stages = run_queries(searcher, queries, ["q1", "q2"], SearchParams(k=100, rerank=True, candidates=2))
    for qid in ("q1", "q2"):
        detailed = searcher.search_detailed(queries[qid], k=100, rerank=True, candidates=2, keep_tail=True)
        assert detailed.reranked == 2 and len(detailed.hits) == 3
        assert rankings[qid] == [hit.doc_id for hit in detailed.hits]
        # ...which is the retriever's ranking with its top 2 reranked and the rest left in order.
        plain = searcher.search_detailed(queries[qid], k=100, rerank=False).hits
        assert rankings[qid] == [hit.doc_id for hit in reranker.rerank(queries[qid], plain[:2]) + plain[2:]]
    assert all(seconds > 0 for seconds in stages["rerank"]) and len(stages[""]) == 2
    unreranked, stages = run_queries(searcher, queries, ["q1"], SearchParams(k=100, rerank=False))
    assert unreranked["q1"] == [hit.doc_id for hit in searcher.search("volcanic eruption", k=100, rerank=False)]
    assert stages["rerank"] == [0.0]
    metrics = evaluate_searcher(searcher, queries, {"q1": {"d1": 1}}, SearchParams(k=100, rerank=True, candidates=2))
    assert metrics["latency_rerank_p50_ms"] > 0 and metrics["queries"] == 1


def test_eval_follows_the_app_rule_for_reranking(tiny_beir, tmp_path, tiny_model, tiny_cross_encoder, capsys):
    argv = ["--beir", str(tiny_beir), "--index", str(tmp_path / "idx"), "--model", tiny_model, "--json"]
    assert main([*argv, "--build", "--rerank-model", tiny_cross_encoder, "--no-rerank"]) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["latency_rerank_p95_ms"] == 0.0, "--no-rerank wins over a named model"
    assert main([*argv, "--rerank-model", "none", "--candidates", "2"]) == 2
    assert "candidates (2) only matters when reranking" in capsys.readouterr().err
    assert main([*argv, "--rerank", "--rerank-model", "none"]) == 2
    assert "Reranking needs a reranker, but the reranker is turned off ('none')" in capsys.readouterr().err


def test_eval_passes_fusion_through(tiny_beir, tmp_path, tiny_model, capsys):
    index = tmp_path / "idx"
    build_index(IndexConfig(source=tiny_beir, index_dir=index, model=tiny_model, show_progress=False))
    searcher = Searcher(index)
    queries = load_beir_queries(tiny_beir)
    rankings, _ = run_queries(searcher, queries, ["q1", "q2"], SearchParams(k=100, fusion="minmax", fusion_weight=0.0))
    for qid in ("q1", "q2"):
        expected = searcher.search(queries[qid], k=100, fusion="minmax", fusion_weight=0.0)
        assert rankings[qid] == [hit.doc_id for hit in expected]
    argv = ["--beir", str(tiny_beir), "--index", str(index), "--model", tiny_model]
    assert main([*argv, "--fusion", "zscore", "--fusion-weight", "0.25"]) == 0
    assert "zscore w=0.25" in capsys.readouterr().out
    assert main([*argv, "--fusion-weight", "-0.5"]) == 2
    assert "fusion weight (-0.5) must lie between 0 (BM25 alone) and 1" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"Unknown fusion 'max'\. Valid: rrf, minmax, tmm, zscore"):
        EvalConfig(beir_dir=tiny_beir, index_dir=index, fusion="max")


def test_eval_with_a_filter_judges_only_the_documents_it_keeps(tiny_beir, tmp_path, tiny_model, capsys):
    argv = ["--beir", str(tiny_beir), "--index", str(tmp_path / "idx"), "--model", tiny_model, "--mode", "bm25",
            "--rerank-model", "none"]
    assert main([*argv, "--build", "--json"]) == 0
    capsys.readouterr()
    assert main([*argv, "--json", "--filter", '{"_id": {"$in": ["d1", "d3"]}}']) == 0
    metrics = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert metrics["ndcg@10"] == pytest.approx(1.0) and metrics["queries"] == 1  # q2's d2 is filtered out
    assert main([*argv, "--filter", '{"_id": "d3"}']) == 2
    assert "No judged query has a relevant document that the filter keeps" in capsys.readouterr().err
