from __future__ import annotations

from indexer.__main__ import main


def test_cli_builds_and_prints_a_summary(topic_corpus, tmp_path, tiny_model, capsys):
    code = main(["build", "--source", str(topic_corpus), "--index", str(tmp_path / "idx"), "--model", tiny_model, "--quiet"])
    assert code == 0
    out = capsys.readouterr().out
    assert "4 documents, 4 passages in the index (+4 new" in out
    assert "passages/s" in out
    # each phase on its own: loading the model is not charged to embedding
    assert "s in all: reading " in out and ", loading the model " in out and ", embedding " in out


def test_cli_reports_errors_without_a_traceback(tmp_path, tiny_model, capsys):
    code = main(["build", "--source", str(tmp_path / "missing"), "--index", str(tmp_path / "idx"), "--model", tiny_model])
    assert code == 2
    assert "error: Source" in capsys.readouterr().err
    code = main(["build", "--source", str(tmp_path), "--index", str(tmp_path / "idx"), "--model", str(tmp_path / "no_model")])
    assert code == 2
    err = capsys.readouterr().err
    assert "Model folder" in err and "Models load offline" in err


def test_library_info_lines_stay_out_of_the_console(topic_corpus, tmp_path, tiny_model):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "indexer", "build", "--source", str(topic_corpus), "--index",
                           str(tmp_path / "idx"), "--model", tiny_model, "--quiet"],
                          capture_output=True, text=True, timeout=300, check=True)
    assert "documents" in done.stdout
    for library in ("INFO faiss.loader", "INFO sentence_transformers"):
        assert library not in done.stderr, done.stderr[-800:]
