"""The Streamlit pages, driven by AppTest over a small real index built with the default model."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from data.paths import PROJECT_ROOT
from indexer import IndexConfig, build_index, settings
from search import similarity
from search.config import SearchConfig, shipped_reranker
from search.rerank import load_rerank_config, resolve_reranker
from tests.search.helpers import build_tiny_cross_encoder, without_bm25
from ui.collections import NEW_COLLECTION
from ui.highlight import escape_markdown
from ui.search_page import DETAILS

pytestmark = pytest.mark.integration

APP = PROJECT_ROOT / "app.py"
# The Compare page's first pair, as app.py fills it in.
EXAMPLE_PAIR = ("How do I read a file line by line?", "Iterate over the lines of a text file.")
TIMEOUT = 60
DOCS = {
    "pasta.txt": "To cook spaghetti, bring a large pot of salted water to a rolling boil, add the "
    "pasta and boil it for about ten minutes until it is al dente, then drain it.",
    "jupiter.txt": "Jupiter is the largest planet in the solar system, a gas giant with a great red "
    "spot, dozens of moons and faint rings.",
    "tomatoes.txt": "Tomato plants need full sun, deep watering and a stake or cage to support the "
    "vines; pinch off suckers and mulch the soil in the garden.",
    "football.txt": "A football match has two halves of forty-five minutes; a team scores a goal when "
    "the ball crosses the goal line between the posts.",
}


@pytest.fixture(scope="session")
def demo_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("app_index")
    source = root / "source"
    source.mkdir()
    for name, text in DOCS.items():
        (source / name).write_text(text, encoding="utf-8")
    index = root / "index"
    report = build_index(IndexConfig(source=source, index_dir=index, show_progress=False))
    assert report.total_documents == len(DOCS) and not report.issues
    return index


@pytest.fixture(autouse=True)
def no_shipped_reranker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app offers models/reranker unless told otherwise; most tests here look at the retriever alone."""
    monkeypatch.setenv("SEMSEARCH_RERANKER", "none")


@pytest.fixture(autouse=True)
def model_loaded_before_the_first_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app loads its bi-encoder in the background and answers BM25 meanwhile; the tests
    here look at the mode asked, except the one about that wait."""
    monkeypatch.setenv("SEMSEARCH_MODEL_LOADING", "eager")


@pytest.fixture()
def private_index(demo_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the demo index that a test may change, opened by the app."""
    index = tmp_path / "index"
    shutil.copytree(demo_index, index)
    monkeypatch.setenv("SEMSEARCH_INDEX", str(index))
    return index


def run_app(query_params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(query_params or {})
    return at.run()


def index_uploads_and_wait(at: AppTest, timeout: float = 240) -> AppTest:
    """Press "Index these files", then run the page again until the batch, indexing in a child
    process, has ended with its notice (or its error)."""
    at.sidebar.button(key="index_uploads").click().run()
    deadline = time.monotonic() + timeout
    while not (at.sidebar.success or at.sidebar.error or at.exception):
        assert time.monotonic() < deadline, "the upload did not finish indexing in time"
        time.sleep(0.5)
        at.run()
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def result_titles(at: AppTest) -> list[str]:
    """Result headings read "**1. title** &nbsp; :gray[cosine 0.123]"."""
    return [
        m.value.split("**")[1].split(". ", 1)[1] for m in at.main.markdown if m.value.startswith("**")
    ]


def open_details(at: AppTest, hits: int = 10) -> AppTest:
    """Open the "Full passage and scores" of the first `hits` hits, as a click would: the page
    draws a hit's details only once they are open."""
    for rank in range(1, hits + 1):
        at.session_state[f"{DETAILS}{rank}"] = True
    return at.run()


def source_lines(at: AppTest) -> list[str]:
    """Each hit's source line, as its Markdown shows it in small grey under the title."""
    return [found.group(1) for m in at.main.markdown if (found := re.search(r"\n:small\[:gray\[(.*)\]\]\n", m.value))]


def relevance_badges(at: AppTest) -> dict[str, str]:
    """Title -> its relevance badge, e.g. "strong match ▰▰▰▱▱"."""
    badges = {}
    for m in at.markdown:
        found = re.match(r"\*\*\d+\. (.*?)\*\* &nbsp; :\w+-badge\[(.*?)\]  \n", m.value)
        if found:
            badges[found.group(1)] = found.group(2)
    return badges


def test_search_page_shows_stats_and_ranks_the_right_document_first(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    assert not at.exception
    stats = metrics(at)
    assert stats["Documents"] == "4"
    assert stats["Passages"] == "4"
    assert stats["Last build"].endswith(" s")
    assert at.main.caption[0].value.startswith(  # the label escaped as Markdown: it reads the same
        "Model **all\\-MiniLM\\-L6\\-v2** (384 dimensions, fp32) · vector index exact (Flat) · built "
    )
    assert at.info and "Type a question" in at.info[0].value  # nothing searched yet

    at.text_input(key="query").input("how long do I boil noodles").run()
    assert not at.exception
    titles = result_titles(at)
    assert titles[0] == "pasta"
    assert sorted(titles) == sorted(Path(n).stem for n in DOCS)  # k=5 > 4 documents: all, once
    assert any(":orange[**boil**]" in m.value for m in at.markdown)  # snippet highlight
    assert at.query_params["q"] == "how long do I boil noodles"  # shareable link

    at.number_input(key="k").set_value(2).run()
    assert result_titles(at)[:1] == ["pasta"] and len(result_titles(at)) == 2
    assert [e.label for e in at.expander if e.label != "Filter"] == ["Full passage and scores"] * 2
    assert at.query_params["k"] == "2"  # kept in the link, and restored from it if forgotten
    at.number_input(key="k").set_value(5).run()
    assert "k" not in at.query_params, "the default stays out of the link"


def test_query_in_the_url_searches_on_load(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "largest planet with moons", "k": "1"})
    assert not at.exception
    assert at.text_input(key="query").value == "largest planet with moons"
    assert result_titles(at) == ["jupiter"]


def test_mode_selector_switches_between_dense_bm25_and_hybrid(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    assert at.radio(key="mode").value == "hybrid"  # the default, as in SearchConfig
    assert list(at.radio(key="mode").options) == [
        "dense (meaning)", "BM25 (exact words)", "hybrid (both)"
    ]
    assert not at.toggle, "no rerank toggle with SEMSEARCH_RERANKER=none"

    at.text_input(key="query").input("noodles").run()
    at.radio(key="mode").set_value("dense").run()
    assert result_titles(at)[0] == "pasta"  # dense: noodles ~ spaghetti, pasta
    assert at.query_params["mode"] == "dense"
    at.radio(key="mode").set_value("bm25").run()
    assert not at.exception and result_titles(at) == []  # no passage says "noodles"
    assert "No passage contains any of the query's words" in at.info[0].value
    assert at.query_params["mode"] == "bm25"

    at.text_input(key="query").input("great red spot").run()
    assert result_titles(at) == ["jupiter"]  # only one passage has these words
    assert any("by BM25 (exact words)" in c.value for c in at.main.caption)
    at.radio(key="mode").set_value("hybrid").run()
    assert not at.exception
    assert result_titles(at)[0] == "jupiter" and len(result_titles(at)) == 4
    open_details(at)
    assert any(re.search(r" · fused -?\d+\.\d{3}", c.value) for c in at.main.caption)  # raw, in the details
    assert "mode" not in at.query_params  # the default mode stays out of the link

    at = run_app({"q": "spaghetti", "mode": "bm25"})  # a shared link keeps its mode
    assert at.radio(key="mode").value == "bm25"
    assert result_titles(at) == ["pasta"]


def test_rerank_toggle_shows_both_scores_and_the_candidates(
    demo_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    monkeypatch.setenv("SEMSEARCH_RERANKER", build_tiny_cross_encoder(tmp_path / "ce"))
    at = run_app({"q": "how long do I boil noodles"})
    assert not at.exception
    assert at.toggle(key="rerank").value is True
    open_details(at)
    details = [c.value for c in at.main.caption if c.value.startswith("relevance ")]
    assert len(details) == 4 and all(" · fused " in d and " · rerank " in d for d in details)
    assert any("the top 4 candidates were reranked" in c.value for c in at.main.caption)
    # Relevance comes from the score that ranks, through the reranked ranking's own curve: it follows
    # the order of the hits with the toggle on or off.
    for shown in (relevance_badges(at), None):
        if shown is None:
            at.toggle(key="rerank").set_value(False).run()
            details = [c.value for c in at.main.caption if c.value.startswith("relevance ")]
            assert details and not any("rerank" in d for d in details)
            assert result_titles(at)[0] == "pasta"
            shown = relevance_badges(at)
        values = [int(b.rsplit(" ", 1)[1].rstrip("%")) for b in shown.values()]
        assert values == sorted(values, reverse=True), shown


@pytest.mark.skipif(shipped_reranker() is None, reason="models/reranker is not in this checkout")
def test_shipped_reranker_is_offered_and_starts_as_its_config_says(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    monkeypatch.delenv("SEMSEARCH_RERANKER")
    at = run_app()
    assert not at.exception
    expected = load_rerank_config(shipped_reranker()).enabled_by_default
    assert expected is resolve_reranker().enabled is False, "the shipped config leaves it off"
    assert at.toggle(key="rerank").value is expected
    at.toggle(key="rerank").set_value(True).run()
    at.text_input(key="query").input("noodles").run()
    assert any("candidates were reranked" in c.value for c in at.main.caption)


def test_missing_reranker_folder_is_an_error_with_the_fix(
    demo_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    monkeypatch.setenv("SEMSEARCH_RERANKER", str(tmp_path / "no_such_model"))
    at = run_app()
    assert not at.exception
    assert at.error[0].value.startswith("The reranker (") and "SEMSEARCH_RERANKER=none" in at.error[0].value
    assert "Pass the folder a CrossEncoder was saved to" in at.error[0].value


def test_index_without_bm25_searches_dense_and_says_how_to_add_it(
    private_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = private_index
    without_bm25(monkeypatch)  # a build without its BM25 part; the Searcher's rule decides the mode
    at = run_app({"q": "how long do I boil noodles"})
    assert not at.exception and not at.error
    assert at.radio(key="mode").value == "hybrid"
    assert len(at.warning) == 1 and "searched in dense mode instead of hybrid" in at.warning[0].value
    assert f"python -m indexer repair --index {index}" in at.warning[0].value
    assert result_titles(at)[0] == "pasta"
    assert any("by dense (meaning)" in c.value for c in at.main.caption)
    at.radio(key="mode").set_value("bm25").run()  # exact words asked for by name: an error, not dense
    assert not at.exception and not at.warning
    assert "mode 'bm25' cannot run" in at.error[0].value and result_titles(at) == []


def test_blank_query_gives_a_friendly_message(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    at.text_input(key="query").input("   ").run()
    assert not at.exception
    assert not at.error
    assert [w.value for w in at.warning] == ["The query is empty. Type a few words to search for."]
    assert result_titles(at) == []


def test_overlong_query_warns_and_still_searches(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    # Over the model's 256 tokens, all of it about pasta: the truncated query still finds it.
    at.text_input(key="query").input("How long should I boil spaghetti pasta in salted water? " * 30).run()
    assert not at.exception
    assert len(at.warning) == 1 and "the rest was ignored" in at.warning[0].value
    assert result_titles(at)[0] == "pasta"


def test_missing_index_says_how_to_build_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(tmp_path))
    at = run_app()
    assert not at.exception
    assert not at.error
    message = at.info[0].value
    assert "No index" in message
    assert "make demo-index" in message
    assert f"python -m indexer build --source PATH --index {tmp_path}" in message
    assert not at.text_input  # no query box without an index


def test_compare_page_scores_two_sentences_and_a_list(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    at.sidebar.radio(key="page").set_value("Compare").run()
    assert not at.exception
    assert at.query_params == {"page": "compare"}

    at.text_input(key="first").input("A man plays a guitar on the stage tonight. " * 60)
    at.text_input(key="second").input("Someone plays an instrument.").run()
    assert any("the rest was ignored" in w.value for w in at.warning), [w.value for w in at.warning]
    at.text_input(key="first").input("A man is playing a guitar.")
    at.text_input(key="second").input("Someone plays an instrument.").run()
    close = float(metrics(at)["Cosine similarity"])
    at.text_input(key="second").input("The stock market fell sharply today.").run()
    far = float(metrics(at)["Cosine similarity"])
    assert -1.0 <= far < close <= 1.0
    at.text_input(key="first").input("🐧🐧🐧")
    at.text_input(key="second").input("😀🎉").run()
    assert not at.exception and "Cosine similarity" not in metrics(at)
    assert any("holds no word the model knows" in w.value for w in at.warning)
    at.text_input(key="first").input("A man is playing a guitar.")
    at.text_input(key="second").input("Someone plays an instrument.").run()

    sentences = [
        "The cat sits on the mat.",
        "A dog runs in the park.",
        "A kitten is sitting on a rug.",
        "Interest rates rose again.",
    ]
    at.text_area(key="sentences").input("\n".join(sentences) + "\n\n").run()
    assert not at.exception
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1
    spec = json.loads(charts[0].proto.spec)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["rect", "text"]
    pairs = at.table[0].value
    assert len(pairs) == 5
    assert pairs["Pair"].iloc[0] == "1 & 3"  # cat on the mat ~ kitten on a rug
    assert set(pairs.iloc[0][["Sentence", "Most similar to"]]) == {
        escape_markdown(sentences[0]),
        escape_markdown(sentences[2]),
    }
    assert pairs["Similarity"].astype(float).is_monotonic_decreasing

    at.text_area(key="sentences").input("only one sentence").run()
    assert not at.get("vega_lite_chart")
    assert any("at least two sentences" in i.value for i in at.info)


def test_upload_adds_documents_and_warns_about_a_bad_file(private_index: Path) -> None:
    index = private_index
    at = run_app()
    assert at.sidebar.button(key="index_uploads").disabled  # nothing chosen yet
    at.file_uploader(key="uploads").set_value(
        [
            ("violin.txt", b"The violin is a string instrument played with a bow.", "text/plain"),
            ("scan.txt", b"\x00\x01\x02binary\x00", "text/plain"),
        ]
    ).run()
    at.sidebar.button(key="index_uploads").click().run()
    # It indexes in the background: the bar shows, and a search answers meanwhile.
    assert not at.exception and not at.sidebar.success
    assert any("in the background" in bar.proto.text for bar in at.get("progress")), \
        [bar.proto.text for bar in at.get("progress")]
    at.text_input(key="query").input("largest planet").run()
    assert result_titles(at)[0] == "jupiter" and at.get("progress"), "a search while the upload indexes"
    deadline = time.monotonic() + 240
    while not at.sidebar.success and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    assert not at.exception
    assert not at.error
    assert at.sidebar.success[0].value == (
        "Added 1 new document and updated 0 documents from 1 of 2 files; 1 skipped (below) (1 passage embedded). "
        "Collection index now holds 5 documents."
    )
    warnings = [w.value for w in at.sidebar.warning]
    assert len(warnings) == 1 and warnings[0].startswith("Skipped scan.txt: binary file")
    assert not at.get("progress"), "the bar goes when the notice comes"
    assert metrics(at)["Documents"] == "5"
    assert not (index / "uploads" / "scan.txt").exists(), "a skipped whole-file upload is not kept"
    assert (index / "uploads" / "violin.txt").is_file()

    at.text_input(key="query").input("bowed string instrument").run()
    assert result_titles(at)[0] == "violin"  # the cached Searcher was refreshed


def test_upload_into_a_missing_index_starts_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(tmp_path / "new"))
    at = run_app()
    assert "No index" in at.info[0].value
    at.file_uploader(key="uploads").set_value(
        (
            "comets.md",
            b"# Comets\n\nComets are icy bodies that grow tails near the sun.",
            "text/markdown",
        )
    ).run()
    index_uploads_and_wait(at)
    assert not at.exception
    assert metrics(at)["Documents"] == "1"
    at.text_input(key="query").input("icy objects with tails").run()
    assert result_titles(at) == ["Comets"]
    snippet = next(m.value for m in at.main.markdown if "grow" in m.value).split("\n\n", 1)[1]
    assert snippet.startswith("Comets are :orange[**icy**]"), "its \"# Comets\" line is the title above"


def test_upload_while_another_build_runs_shows_the_error(private_index: Path) -> None:
    index = private_index
    at = run_app()
    at.file_uploader(key="uploads").set_value(("harp.txt", b"The harp has strings.", "text/plain"))
    at.run()
    with open(index / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a concurrent `indexer build` would
        index_uploads_and_wait(at)
    assert not at.exception
    assert re.match(  # indexer.index names the process holding the lock when it can
        r"Nothing was added to the index\. Another build (\(process \w+\) )?is writing ", at.sidebar.error[0].value
    )
    assert not at.sidebar.success
    assert metrics(at)["Documents"] == "4"  # the search page still works on the old index


def test_doc_id_and_source_show_literally(private_index: Path) -> None:
    record = {"id": "**x** [a](b)", "title": "Harp", "text": "The harp is a plucked string instrument."}
    at = run_app()
    at.file_uploader(key="uploads").set_value(
        ("strings_[1].jsonl", (json.dumps(record) + "\n").encode(), "application/json")
    ).run()
    index_uploads_and_wait(at)
    at.text_input(key="query").input("plucked harp").run()
    assert not at.exception and result_titles(at)[0] == "Harp"
    caption = next(line for line in source_lines(at) if "strings" in line)
    assert caption.startswith(f"{escape_markdown(record['id'])} · ")
    assert caption.startswith("\\*\\*x\\*\\* \\[a\\]\\(b\\) · ")
    assert "strings\\_\\[1\\]" in caption, "the source file name is escaped too"


def test_a_build_committed_by_another_process_is_searched_and_counted(private_index: Path, tmp_path: Path) -> None:
    at = run_app({"q": "bowed string instrument", "k": "5"})
    assert metrics(at)["Documents"] == "4" and "violin" not in result_titles(at)
    more = tmp_path / "more"
    more.mkdir()
    (more / "violin.txt").write_text("The violin is a string instrument played with a bow.")
    # Another writer (the CLI, say) commits a build while the app keeps its cached Searcher.
    build_index(IndexConfig(source=more, index_dir=private_index, prune=False, show_progress=False))
    at.run()
    assert not at.exception
    assert result_titles(at)[0] == "violin"
    assert (metrics(at)["Documents"], metrics(at)["Passages"]) == ("5", "5"), "the answering build's figures"


def test_compare_page_uses_the_index_model(
    tmp_path: Path, tiny_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    source.mkdir()
    (source / "pasta.txt").write_text(DOCS["pasta.txt"], encoding="utf-8")
    index = tmp_path / "tiny_index"
    build_index(IndexConfig(source=source, index_dir=index, model=tiny_model, show_progress=False))
    monkeypatch.setenv("SEMSEARCH_INDEX", str(index))
    at = run_app({"page": "compare"})
    assert not at.exception
    assert "by **model**, the index's model" in at.main.caption[0].value  # the tiny model's folder name
    with_index_model = similarity(*EXAMPLE_PAIR, model=tiny_model)
    assert metrics(at)["Cosine similarity"] == f"{with_index_model:.3f}"
    assert metrics(at)["Cosine similarity"] != f"{similarity(*EXAMPLE_PAIR):.3f}", "not the default model"

    monkeypatch.setenv("SEMSEARCH_INDEX", str(tmp_path / "none"))
    at = run_app({"page": "compare"})
    assert "by **all\\-MiniLM\\-L6\\-v2**, the default model, as there is no index yet" in at.main.caption[0].value
    assert metrics(at)["Cosine similarity"] == f"{similarity(*EXAMPLE_PAIR):.3f}"


def test_relevance_follows_the_ranking_and_raw_scores_sit_in_the_details(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fused 0.031 or a BM25 11.5 means nothing to a reader; a calibrated probability does, and it
    follows the order of the hits (the cosine labels once ranked a lower hit above a higher one)."""
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "boil spaghetti in salted water", "k": "5"})
    hybrid = relevance_badges(at)
    assert not any(c.value.startswith("relevance ") for c in at.main.caption), "details drawn when opened"
    open_details(at)
    assert hybrid["pasta"].startswith("strong match") and hybrid["pasta"].endswith("%")
    shown = [int(b.rsplit(" ", 1)[1].rstrip("%")) for b in hybrid.values()]  # in rank order
    assert len(shown) == len(DOCS) and shown == sorted(shown, reverse=True)
    assert not any("fused" in m.value for m in at.markdown), "no raw score in the headings"
    details = [c.value for c in at.main.caption if c.value.startswith("relevance ")]
    assert re.match(r"relevance 0\.\d{2} · fused \d+\.\d{3} · characters 0–\d+ of the document$", details[0])
    # Dense has a curve of its own: its labels follow its ranking too, the cosine beside them.
    at.radio(key="mode").set_value("dense").run()
    badges = relevance_badges(at)
    shown = [int(b.rsplit(" ", 1)[1].rstrip("%")) for b in badges.values()]
    assert all(b.endswith("%") for b in badges.values()) and shown == sorted(shown, reverse=True), badges
    open_details(at)
    details = [c.value for c in at.main.caption if c.value.startswith("relevance ")]
    assert re.match(r"relevance [01]\.\d{2} · cosine 0\.\d{3} · characters 0–\d+ of the document$", details[0])
    # BM25's scale grows with the collection, so it has no curve; a cosine label would contradict
    # its ranking (it did, before), so BM25 hits carry none: the BM25 score is in the details.
    at.radio(key="mode").set_value("bm25").run()
    assert relevance_badges(at) == {} and not at.warning
    open_details(at)
    details = [c.value for c in at.main.caption if c.value.startswith("BM25 ")]
    assert re.match(r"BM25 \d+\.\d{3} · characters 0–\d+ of the document$", details[0]), details
    assert not any(c.value.startswith("characters") or " · characters " in c.value
                   for c in at.main.caption if not c.value.startswith(("BM25 ", "relevance "))), \
        "where the passage sits is a detail, inside the expander"


def test_a_query_the_index_cannot_answer_is_marked_as_weak(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "configure a firewall"})
    assert not at.exception
    assert set(relevance_badges(at)) and all(b.startswith("weak match") for b in relevance_badges(at).values())
    assert any("None of these passages is likely to answer the query" in w.value for w in at.warning)
    at = run_app({"q": "the largest planet in the solar system"})
    assert not any("None of these passages" in w.value for w in at.warning)


def test_hybrid_offers_fusion_method_and_weight(demo_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "great red spot"})
    assert at.selectbox(key="fusion").value == SearchConfig().fusion_for().method
    assert at.slider(key="fusion_weight").value == SearchConfig().fusion_for().weight
    at.slider(key="fusion_weight").set_value(0.0).run()  # BM25 alone: only jupiter has the words
    assert not at.exception and result_titles(at)[0] == "jupiter"
    at.selectbox(key="fusion").set_value("minmax").run()
    assert not at.exception
    assert at.slider(key="fusion_weight").value == SearchConfig().fusion_for("minmax").weight
    at.radio(key="mode").set_value("dense").run()
    assert [s.key for s in at.main.selectbox] == ["filter_field"], "fusion only applies to hybrid"


def test_the_fusion_choice_survives_runs_that_do_not_draw_its_widgets(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ui.search_page import FUSION_CHOICE

    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    # A run cut short by a rerun between the two widgets leaves the method set and the share
    # forgotten; the slider then fell to its minimum, 0 (BM25 alone). It takes the method's default.
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["q"] = "great red spot"
    at.session_state["fusion"] = "minmax"
    at.run()
    assert not at.exception
    assert at.slider(key="fusion_weight").value == SearchConfig().fusion_for("minmax").weight
    # ... or the share last chosen for that method.
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params["q"] = "great red spot"
    at.session_state["fusion"] = "minmax"
    at.session_state[FUSION_CHOICE] = ("minmax", 0.3)
    at.run()
    assert at.slider(key="fusion_weight").value == 0.3
    # Dense mode draws neither widget, so Streamlit forgets both; back in hybrid they are as left.
    at = run_app({"q": "great red spot"})
    at.selectbox(key="fusion").set_value("zscore").run()
    at.slider(key="fusion_weight").set_value(0.25).run()
    at.radio(key="mode").set_value("dense").run()
    at.radio(key="mode").set_value("hybrid").run()
    assert not at.exception
    assert (at.selectbox(key="fusion").value, at.slider(key="fusion_weight").value) == ("zscore", 0.25)


def test_upload_of_a_csv_without_a_text_column_asks_which_columns_hold_text_title_and_id(
    private_index: Path,
) -> None:
    at = run_app()
    at.file_uploader(key="uploads").set_value(
        [("people.csv", b"ID,name,bio\nada,Ada,wrote the first programs for an engine\n", "text/csv"),
         ("plain.csv", b"text\nA csv with a text column is read as it is.\n", "text/csv"),
         ("README", b"A readme without an extension is text too.", "application/octet-stream")]
    ).run()
    assert not at.exception
    # Its rows hold prose, so it would be read a record a row; the person chooses a column instead.
    assert any("**people\\.csv** has no `text` column, so each row is read as a record: its text from *bio*"
               in m.value for m in at.sidebar.markdown)
    at.checkbox(key="csv_own:people.csv").check().run()
    assert any("**people\\.csv** has no `text` column. Choose" in m.value and "ID, name, bio" in m.value
               for m in at.sidebar.markdown)
    assert not any("plain" in m.value for m in at.sidebar.markdown), "its columns need no choice"
    # Preselected: the longest column as text, columns named like a title and an id.
    assert at.selectbox(key="csv_text:people.csv").value == "bio"
    assert at.selectbox(key="csv_title:people.csv").value == "name"
    assert at.selectbox(key="csv_id:people.csv").value == "ID"
    at.selectbox(key="csv_id:people.csv").set_value("").run()  # none: rows are named by their line
    assert at.selectbox(key="csv_id:people.csv").format_func("") == "none"
    index_uploads_and_wait(at)
    assert not at.exception and not at.sidebar.error and not at.sidebar.warning
    assert "Added 3 new documents" in at.sidebar.success[0].value
    at.text_input(key="query").input("who wrote the first programs").run()
    assert result_titles(at)[0] == "Ada"
    assert any(line.startswith("people\\.csv\\#L2") for line in source_lines(at))


def test_a_csv_column_mapping_that_cannot_index_says_what_the_file_needs(private_index: Path) -> None:
    at = run_app()
    at.file_uploader(key="uploads").set_value(
        ("people.csv", b"name,bio,notes\nAda,wrote programs,\nAlan,broke codes, \n", "text/csv")
    ).run()
    at.selectbox(key="csv_text:people.csv").set_value("notes").run()
    assert not at.exception
    assert at.sidebar.error[0].value == (
        "Column 'notes' of people.csv is blank in every row, so there is no text to index; choose "
        "the column that holds each document's text, or fill it in."
    )
    assert at.sidebar.button(key="index_uploads").disabled
    at.selectbox(key="csv_text:people.csv").set_value("name")
    at.selectbox(key="csv_title:people.csv").set_value("name").run()
    assert "One column cannot be two things" in at.sidebar.error[0].value
    assert at.sidebar.button(key="index_uploads").disabled
    at.selectbox(key="csv_text:people.csv").set_value("bio").run()
    assert not at.sidebar.error and not at.sidebar.button(key="index_uploads").disabled


def test_app_serves_while_it_builds_the_index_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run` on a fresh clone: the page is useful before the index is complete."""
    source = tmp_path / "source"
    source.mkdir()
    for name, text in DOCS.items():
        (source / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv("SEMSEARCH_INDEX", str(tmp_path / "index"))
    monkeypatch.setenv("SEMSEARCH_BUILD_SOURCE", str(source))
    monkeypatch.setenv("SEMSEARCH_BUILD_STAMP", str(tmp_path / "built"))
    at = run_app({"q": "how long do I boil noodles"})
    assert not at.exception
    assert at.get("progress") or any("being indexed" in i.value for i in at.info), \
        "a visible bar while nothing is committed"
    assert not any("No index found" in i.value for i in at.info)
    deadline = time.monotonic() + 240
    while not (tmp_path / "built").exists() and time.monotonic() < deadline:
        time.sleep(1)
    at.run()
    assert not at.exception
    assert metrics(at)["Documents"] == "4"
    assert result_titles(at)[0] == "pasta"
    assert any("Background indexing finished" in c.value for c in at.caption)
    # A later build (an upload, another process) commits: its counters stand alone, without the
    # first build's summary beneath them contradicting its figures.
    (source / "glacier.txt").write_text("Glaciers carve valleys as they creep downhill.", encoding="utf-8")
    build_index(IndexConfig(source=source, index_dir=tmp_path / "index", show_progress=False))
    at.run()
    assert metrics(at)["Documents"] == "5"
    assert not any("Background indexing finished" in c.value for c in at.caption)


def test_a_failed_background_build_is_shown_and_the_app_keeps_working(
    demo_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    monkeypatch.setenv("SEMSEARCH_BUILD_SOURCE", str(tmp_path / "missing"))
    at = run_app({"q": "largest planet"})
    deadline = time.monotonic() + 120
    while not at.error and time.monotonic() < deadline:
        time.sleep(1)
        at.run()
    assert at.error and "in the background failed" in at.error[0].value
    assert "does not exist" in at.error[0].value
    assert result_titles(at)[0] == "jupiter"


def test_a_restarted_app_answers_with_bm25_while_the_model_loads_then_in_the_mode_asked(
    private_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from indexer.index import Index

    monkeypatch.setenv("SEMSEARCH_MODEL_LOADING", "background")
    gate, real = threading.Event(), Index.load_model
    monkeypatch.setattr(Index, "load_model", lambda self, device=None: gate.wait(60) and real(self, device))
    try:
        at = run_app({"q": "how long do I boil noodles"})
        assert not at.exception and not at.error and not at.warning
        assert any("model is still loading, so these are keyword (BM25) results" in i.value for i in at.info)
        assert any("by BM25 (exact words)" in c.value for c in at.main.caption)
        assert result_titles(at)[0] == "pasta"
        assert relevance_badges(at) == {}, "BM25 hits carry no label"
        assert at.radio(key="mode").value == "hybrid", "the mode asked stays selected"
    finally:
        gate.set()
    for thread in threading.enumerate():
        if thread.name == "semsearch-model-load":
            thread.join(timeout=120)
    at.run()
    assert not at.exception and not any("still loading" in i.value for i in at.info)
    assert any("by hybrid (both)" in c.value for c in at.main.caption)
    assert result_titles(at)[0] == "pasta" and set(relevance_badges(at)) == set(result_titles(at))


@pytest.mark.skipif(shipped_reranker() is None, reason="models/reranker is not in this checkout")
def test_a_reranker_that_starts_off_loads_in_the_background_and_reranks_when_asked(
    private_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEMSEARCH_MODEL_LOADING", "background")
    monkeypatch.delenv("SEMSEARCH_RERANKER")
    at = run_app()
    assert not at.exception and at.toggle(key="rerank").value is False
    at.toggle(key="rerank").set_value(True).run()
    # Waits for the cross-encoder it asks for. Words BM25 finds too: while the bi-encoder still
    # loads, the search answers with BM25, and "noodles" there would leave nothing to rerank.
    at.text_input(key="query").input("boil the pasta").run()
    assert not at.exception and not at.error
    # BM25 alone (the bi-encoder may still be loading) finds one document, hybrid all four:
    # "the top 1 candidate was reranked" or "the top 4 candidates were reranked".
    assert any(re.search(r"the top [14] candidates? (was|were) reranked by the cross-encoder", c.value)
               for c in at.main.caption)


@pytest.mark.skipif(shipped_reranker() is None, reason="models/reranker is not in this checkout")
def test_a_background_reranker_that_cannot_load_is_an_error_with_the_fix(
    private_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import search.rerank

    def broken(path, config=None):
        raise OSError(f"Cannot load a cross-encoder from {path}: no weights.")

    monkeypatch.setenv("SEMSEARCH_MODEL_LOADING", "background")
    monkeypatch.delenv("SEMSEARCH_RERANKER")
    monkeypatch.setattr(search.rerank, "CrossEncoderReranker", broken)
    # Words BM25 finds too: while the bi-encoder still loads, the search answers with BM25, and a
    # query without hits there ("noodles") would leave the reranker nothing to fail on.
    at = run_app({"q": "boil the pasta"})
    assert not at.exception and not at.error, "the first search does not rerank, so it does not fail"
    at.toggle(key="rerank").set_value(True).run()
    assert not at.exception
    assert at.error[0].value.startswith("The reranker (models/reranker) cannot be loaded. Cannot load")
    assert "Set SEMSEARCH_RERANKER=none" in at.error[0].value


SEARCH_PAGE_IMPORTS = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=60)
at.query_params.update(q="boil the pasta", mode="bm25")
at.run()
titles = [m.value.split("  \\n")[0] for m in at.markdown if m.value.startswith("**1. ")]
print(titles[0] if titles else "no result", "pandas" in sys.modules, "altair" in sys.modules)
"""


def test_the_search_page_does_not_import_the_compare_pages_chart_libraries(demo_index: Path) -> None:
    """altair and pandas (most of a second) load on the Compare page only, not in front of the
    first answer after a restart. A fresh interpreter: this test process has imported both."""
    env = {**os.environ, "SEMSEARCH_INDEX": str(demo_index), "SEMSEARCH_RERANKER": "none",
           "SEMSEARCH_MODEL_LOADING": "background"}
    done = subprocess.run([sys.executable, "-c", SEARCH_PAGE_IMPORTS, str(APP)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-3:] == ["pasta**", "False", "False"], done.stdout


def test_a_build_growing_the_index_is_shown_with_how_far_it_has_got(private_index: Path) -> None:
    """Another process commits chunks of a growing index: the page says how many of its passages
    are in, while searches answer from them; a progress file left by a dead build says nothing.
    Where the index held passages before the build (a build run again after Ctrl-C resumes, an
    update adds files), the page gives both the build's count and the index's."""
    from indexer import Index

    with Index.open(private_index, use_gpu=False) as index:
        held = index.stats().passages
    assert held > 1
    progress = private_index / ".build-progress.json"
    progress.write_text(json.dumps({"done": held, "total": 1200, "pid": os.getpid()}))  # a first build
    at = run_app({"q": "open a file"})
    assert not at.exception
    assert any(f"Building: {held} of 1,200 passages committed" in info.value for info in at.info), \
        [info.value for info in at.info]
    progress.write_text(json.dumps({"done": 1, "total": 1200, "pid": os.getpid()}))  # it resumed
    at = run_app({"q": "open a file"})
    assert any(f"Building: 1 of the 1,200 passages this build adds are committed; the index holds {held:,} "
               "passages now." in info.value for info in at.info), [info.value for info in at.info]
    progress.write_text(json.dumps({"done": 48, "total": 1200, "pid": 2**22 + 12345}))  # no such process
    at = run_app({"q": "open a file"})
    assert not any("Building:" in info.value for info in at.info)


def test_a_filter_on_a_field_the_index_holds_keeps_only_its_documents(demo_index: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app()
    fields = at.selectbox(key="filter_field")
    assert fields.options[:4] == ["(no filter)", "_type (the file's extension)", "_path (the file it was read from)",
                                  "_id (the document's id)"]
    at.text_input(key="query").input("how long do I boil noodles").run()
    assert result_titles(at)[0] == "pasta"
    at.selectbox(key="filter_field").set_value("_id").run()
    at.multiselect(key="filter_values__id").set_value(["jupiter.txt", "football.txt"]).run()
    assert not at.exception
    assert sorted(result_titles(at)) == ["football", "jupiter"]
    assert any('"_id": {"$in": ["jupiter.txt", "football.txt"]}' in c.value for c in at.code)
    at.selectbox(key="filter_field").set_value("").run()
    assert result_titles(at)[0] == "pasta" and len(result_titles(at)) == 4


def test_a_hits_details_list_its_documents_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ticket's status and labels, which the Filter selects on, are shown with its passage."""
    source = tmp_path / "source"
    source.mkdir()
    (source / "tickets.csv").write_text(
        "Summary,Issue key,Status,Labels,Labels,Description\n"
        "Codes refused after travel,SUP-15,Open,auth,mobile,Users who fly across time zones find their "
        "authenticator codes refused until they resync the clock.\n"
        "Invoice total off by a cent,SUP-16,Done,billing,,The invoice total differs by one cent from the "
        "customer's own spreadsheet when a discount applies.\n", encoding="utf-8")
    index = tmp_path / "index"
    build_index(IndexConfig(source=source, index_dir=index, show_progress=False))
    monkeypatch.setenv("SEMSEARCH_INDEX", str(index))
    at = open_details(run_app({"q": "one-time codes rejected after a flight", "k": "1"}), hits=1)
    assert not at.exception and result_titles(at) == ["Codes refused after travel"]
    assert [c.value for c in at.caption if c.value.startswith("Fields")] == [
        "Fields (the Filter selects on them): **Status** Open · **Labels** auth\\, mobile"]


def test_next_and_previous_pages_show_the_same_ranking_in_slices(demo_index: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "how long do I boil noodles"})
    at.number_input(key="k").set_value(4).run()
    whole = result_titles(at)
    at.number_input(key="k").set_value(2).run()
    assert result_titles(at) == whole[:2] and at.button(key="page_previous").disabled
    assert not any("None of these passages" in w.value for w in at.warning)
    at.button(key="page_next").click().run()
    assert result_titles(at) == whole[2:4]
    assert any(m.value.startswith("**3. ") for m in at.main.markdown)  # ranks count on across pages
    # The hits below the best are weak by design: a later page does not say the index holds nothing.
    assert all(b.startswith("weak match") for b in relevance_badges(at).values())
    assert not any("None of these passages" in w.value for w in at.warning)
    at.button(key="page_previous").click().run()
    assert result_titles(at) == whole[:2]
    at.button(key="page_next").click().run()
    at.text_input(key="query").input("planets and moons").run()
    assert at.button(key="page_previous").disabled  # a new search starts at its first page


@pytest.mark.parametrize(("params", "k", "mode", "said"), [
    ({"k": "1000"}, 5, "hybrid", "k (1000) must be at least 1 and at most 50. Showing 5."),
    ({"k": "0"}, 5, "hybrid", "k (0) must be at least 1"),
    ({"k": "ten"}, 5, "hybrid", "k must be a whole number"),
    ({"mode": "foo"}, 5, "hybrid", "Unknown mode 'foo'. Valid: dense, bm25, hybrid. Searching in hybrid."),
    ({"mode": "BM25"}, 5, "hybrid", "Unknown mode 'BM25'"),  # the API refuses it too: one rule
])
def test_a_link_value_the_checks_refuse_is_replaced_and_the_page_says_so(
    demo_index: Path, monkeypatch: pytest.MonkeyPatch, params: dict, k: int, mode: str, said: str
) -> None:
    monkeypatch.setenv("SEMSEARCH_INDEX", str(demo_index))
    at = run_app({"q": "largest planet", **params})
    assert not at.exception
    assert (int(at.session_state["k"]), at.session_state["mode"]) == (k, mode)
    assert any(said in w.value for w in at.warning), [w.value for w in at.warning]


def test_the_sidebar_opens_any_collection_under_the_root_and_a_link_keeps_it(
    private_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "notes_source"
    source.mkdir()
    (source / "violin.txt").write_text("The violin is a string instrument played with a bow.", encoding="utf-8")
    build_index(IndexConfig(source=source, index_dir=tmp_path / "notes", show_progress=False))
    (tmp_path / "not-an-index").mkdir()  # a folder without an index is no collection
    monkeypatch.setenv("SEMSEARCH_ROOT", str(tmp_path))
    at = run_app()
    assert at.sidebar.selectbox(key="collection").options == ["index", "notes"]
    assert at.sidebar.selectbox(key="collection").value == "index", "SEMSEARCH_INDEX opens first"
    assert metrics(at)["Documents"] == "4"
    at.sidebar.selectbox(key="collection").select("notes").run()
    at.text_input(key="query").input("bowed string instrument").run()
    assert not at.exception and metrics(at)["Documents"] == "1"
    assert result_titles(at) == ["violin"]
    assert at.query_params["collection"] == "notes", "a shared link keeps the collection"

    linked = run_app({"collection": "notes", "q": "string instrument"})
    assert linked.sidebar.selectbox(key="collection").value == "notes"
    assert result_titles(linked) == ["violin"] and not linked.warning

    gone = run_app({"collection": "deleted-one"})
    assert gone.sidebar.selectbox(key="collection").value == "index"
    assert any("collection='deleted-one' was not used" in w.value for w in gone.warning)


def test_uploads_from_the_demo_go_to_a_collection_of_their_own(
    private_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "DEFAULT_INDEX", private_index)  # this copy plays the demo index
    at = run_app()
    assert at.sidebar.selectbox(key="upload_target").value == NEW_COLLECTION
    assert at.sidebar.text_input(key="new_collection_name").value == "my-documents"
    at.file_uploader(key="uploads").set_value(
        ("violin.txt", b"The violin is a string instrument played with a bow.", "text/plain")).run()
    at.sidebar.text_input(key="new_collection_name").input("../escape").run()
    assert "cannot name a collection" in at.sidebar.error[0].value
    assert at.sidebar.button(key="index_uploads").disabled, "no upload under a name that is not a folder's"
    at.sidebar.text_input(key="new_collection_name").input("my-documents").run()
    index_uploads_and_wait(at)
    assert not at.exception and not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert at.sidebar.success[0].value.endswith(f"Collection {escape_markdown('my-documents')} now holds 1 document.")
    assert metrics(at)["Documents"] == "4", "the demo index took nothing"
    assert (tmp_path / "my-documents" / "uploads" / "violin.txt").is_file()
    assert not (private_index / "uploads").exists()

    at.sidebar.button(key="open_upload_target").click().run()
    at.text_input(key="query").input("bowed string instrument").run()
    assert at.sidebar.selectbox(key="collection").value == "my-documents"
    assert metrics(at)["Documents"] == "1" and result_titles(at) == ["violin"]
    assert at.sidebar.selectbox(key="upload_target").value == "my-documents", "uploads follow the collection"
