"""`python -m search`: modes, reranking and errors on the command line (tiny models)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from search import Searcher
from search.__main__ import main, no_hits_line
from tests.search.helpers import CODE_QUERY, without_bm25


def test_cli_searches_in_each_mode(tiny_index, capsys):
    assert main([CODE_QUERY, "--index", str(tiny_index), "--mode", "bm25", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(h["doc_id"], h["mode"]) for h in lines] == [("minutes.txt", "bm25")]
    assert main(["bread", "--index", str(tiny_index), "--mode", "hybrid", "-k", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(" 1. ") and "(hybrid; " in captured.err


def test_a_search_without_hits_says_why_where_the_hits_would_be(tiny_index, capsys):
    """An empty answer printed nothing but its mode and time."""
    assert main(["zyzzogeton quux", "--index", str(tiny_index), "--mode", "bm25"]) == 0
    assert capsys.readouterr().out.startswith("No hits: no document contains any of the query's words")
    assert main(["bread", "--index", str(tiny_index), "--mode", "bm25", "--offset", "50"]) == 0
    assert capsys.readouterr().out.startswith("No hits: the ranking ends before rank 51")
    with Searcher(tiny_index) as searcher:  # a dense search comes back empty only when cut by relevance
        cut = dataclasses.replace(searcher.search_detailed("bread", mode="dense"), hits=[])
    assert no_hits_line(cut, 0).startswith("No hits: none reaches the relevance --min-relevance asks for")
    assert main(["zyzzogeton quux", "--index", str(tiny_index), "--mode", "bm25", "--json"]) == 0
    assert capsys.readouterr().out == ""  # JSON lines stay one object per hit


def test_cli_reranks_and_reports_both_scores(tiny_index, tiny_cross_encoder, capsys):
    argv = ["bread", "--index", str(tiny_index), "-k", "2", "--rerank-model", tiny_cross_encoder]
    assert main([*argv, "--candidates", "4"]) == 0
    captured = capsys.readouterr()
    first = captured.out.splitlines()[0]
    assert "rerank " in first and ", fused " in first and "reranked the top 4" in captured.err
    assert main([*argv, "--candidates", "1"]) == 2
    assert "k (2) is greater than candidates (1); raise candidates or lower k." in capsys.readouterr().err


def test_cli_reranker_choice_and_bad_k(tiny_index, tiny_cross_encoder, capsys):
    argv = ["bread", "--index", str(tiny_index), "-k", "2"]
    assert main([*argv, "--rerank-model", tiny_cross_encoder, "--no-rerank"]) == 0
    assert "reranked" not in capsys.readouterr().err
    assert main([*argv, "--rerank-model", "none"]) == 0
    assert "reranked" not in capsys.readouterr().err
    assert main([*argv, "--rerank", "--rerank-model", "none"]) == 2
    assert "Reranking needs a reranker, but the reranker is turned off ('none')" in capsys.readouterr().err
    assert main(["bread", "--index", str(tiny_index), "-k", "1001"]) == 2
    assert "k (1001) must be at least 1 and at most 1000." in capsys.readouterr().err


def test_cli_on_an_index_without_bm25(tiny_index, monkeypatch, capsys):
    without_bm25(monkeypatch)
    assert main(["bread", "--index", str(tiny_index), "--json"]) == 0
    assert {json.loads(line)["mode"] for line in capsys.readouterr().out.splitlines()} == {"dense"}
    assert main(["bread", "--index", str(tiny_index), "--mode", "bm25"]) == 2
    assert f"mode 'bm25' cannot run. Run `python -m indexer repair --index {tiny_index}`" in capsys.readouterr().err


def test_cli_fusion_flags(tiny_index, capsys):
    argv = ["volcano ash and interest rates", "--index", str(tiny_index), "--json", "-k", "3"]
    assert main([*argv, "--fusion", "minmax", "--fusion-weight", "1"]) == 0
    fused = [json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()]
    assert main([*argv, "--mode", "dense"]) == 0
    assert fused == [json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()]
    assert main([*argv, "--fusion-weight", "1.5"]) == 2
    assert "fusion weight (1.5) must lie between 0 (BM25 alone) and 1 (dense alone)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--fusion", "sum"])
    assert "invalid choice: 'sum'" in capsys.readouterr().err


def test_cli_filters_by_metadata_and_names_a_bad_filter(tiny_index, capsys):
    argv = ["bread", "--index", str(tiny_index), "--json", "--rerank-model", "none"]
    assert main([*argv, "--filter", '{"_type": "md"}']) == 0
    assert [json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()] == ["football.md"]
    assert main([*argv, "--filter", '{"_path": {"$prefix": "ba"}}', "--mode", "bm25"]) == 0
    assert [json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()] == ["baking.txt"]
    assert main([*argv, "--filter", "{_type: md}"]) == 2
    assert "The filter is not valid JSON" in capsys.readouterr().err
    assert main([*argv, "--filter", '{"_tpye": "md"}']) == 0  # valid, and keeps nothing: the note says why
    out = capsys.readouterr()
    assert out.out == "" and "no document of this index has the field '_tpye'. Did you mean '_type'?" in out.err


def test_a_bm25_search_never_imports_torch_and_verbose_names_each_stage(tiny_index):
    import subprocess
    import sys

    code = ("import sys; from search.__main__ import main; "
            f"main(['bread', '--index', {str(tiny_index)!r}, '--mode', 'bm25', '--verbose', '--rerank-model', 'none']); "
            "print('torch imported' if 'torch' in sys.modules else 'no torch')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip().splitlines()[-1] == "no torch", done.stdout
    assert "BM25 " in done.stdout.splitlines()[0]
    assert "open the index " in done.stderr and "retrieve " in done.stderr and "bi-encoder" not in done.stderr


def test_verbose_times_the_model_load_of_a_dense_search(tiny_index, capsys):
    assert main(["bread", "--index", str(tiny_index), "--mode", "dense", "--verbose", "--rerank-model", "none"]) == 0
    captured = capsys.readouterr()
    assert "cosine " in captured.out.splitlines()[0]
    assert "load the bi-encoder " in captured.err and "encode the query " in captured.err
