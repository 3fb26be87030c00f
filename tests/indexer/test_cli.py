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


def test_a_short_tail_is_read_with_the_text_before_it_unless_the_cli_keeps_it(tmp_path, tiny_model):
    from indexer.index import Index

    source = tmp_path / "src"
    source.mkdir()
    # Words of one token each: passages of 32 words, 28 apart, so 60 words and 3 more leave a tail
    # of 3 new words (under a quarter of 32) after the second passage.
    words = ["river", "stone", "water", "house", "green", "light", "table", "music", "paper", "smile"]
    (source / "note.txt").write_text(" ".join(words[i % 10] for i in range(60)) + " last words here")
    tails = {}
    for flags in ([], ["--keep-short-tails"]):
        index = tmp_path / ("kept" if flags else "merged")
        code = main(["build", "--source", str(source), "--index", str(index), "--model", tiny_model, "--quiet",
                     "--passage-tokens", "32", "--overlap", "4", *flags])
        assert code == 0
        with Index.open(index) as opened:
            record = opened.document("note.txt")
        assert record is not None and record.text.endswith("last words here")
        assert record.passages[-1].text.endswith("last words here"), "the tail is searchable either way"
        tails[bool(flags)] = record.passages[-1].text
    assert len(tails[True].split()) == 4 + 3, f"kept: overlap and tail, a short passage: {tails[True]!r}"
    assert len(tails[False].split()) == 32, f"merged: the last passage is whole: {tails[False]!r}"


def test_stats_names_the_metadata_fields_a_filter_can_use(tmp_path, tiny_model, capsys):
    """A misspelt filter field keeps nothing; the command line had no list of fields to check it against."""
    import json

    (tmp_path / "src").mkdir()
    rows = [{"id": f"t{i}", "text": f"ticket {i} about the printer", "tag": "billing", **({"year": 2025} if i % 2 else {})}
            for i in range(4)]
    (tmp_path / "src" / "tickets.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "src" / "notes.txt").write_text("Plain notes.")
    assert main(["build", "--source", str(tmp_path / "src"), "--index", str(tmp_path / "idx"), "--model", tiny_model,
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["stats", "--index", str(tmp_path / "idx")]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "metadata fields:" in line)
    assert line.split(": ", 1)[1] == "tag (4), year (2); and _id, _path, _type on every document (search --filter)"
    assert main(["stats", "--index", str(tmp_path / "idx"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fields"] == {"tag": 4, "year": 2}


def test_stats_says_how_far_a_running_build_has_got(tmp_path, tiny_model, capsys):
    """The app and the API's /stats show a build growing the index; `stats` said nothing of it."""
    import json
    import os

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("A note about printers.")
    assert main(["build", "--source", str(tmp_path / "src"), "--index", str(tmp_path / "idx"), "--model", tiny_model,
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["stats", "--index", str(tmp_path / "idx")]) == 0
    assert "building" not in capsys.readouterr().out, "no build runs"
    progress = tmp_path / "idx" / ".build-progress.json"
    progress.write_text(json.dumps({"done": 4096, "total": 513271, "pid": os.getpid()}))  # a live process
    assert main(["stats", "--index", str(tmp_path / "idx")]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "building:" in line)
    assert line.split(": ", 1)[1].startswith("4,096 of 513,271 passages of the build running now are committed")
    assert main(["stats", "--index", str(tmp_path / "idx"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["building"] == {"done": 4096, "total": 513271}

