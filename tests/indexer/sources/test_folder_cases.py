"""Each case of issue 36 sections 2 and 3, on a folder as a user has it: nothing removed or
mixed silently, and messages that name the real problem."""

from __future__ import annotations

import os

import pytest

from indexer import Index, IndexConfig, IndexMismatchError, build_index
from indexer.__main__ import main as cli_main
from indexer.sources.documents import InputIssue
from indexer.sources.readers import read_documents, text_title
from tests.indexer.helpers import assert_consistent, write_corpus

LONG = " ".join(f"glacier{i} carved the valley" for i in range(300))


def config(source, index_dir, model, **kw) -> IndexConfig:
    return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False, **kw)


def stored_ids(index_dir) -> list[str]:
    """The document ids the index's SQL rows hold."""
    from sqlalchemy import select

    from indexer.store.schema import DocumentRow
    from indexer.store.sql_store import make_engine

    engine = make_engine(f"sqlite:///{index_dir / 'store.sqlite'}")
    try:
        with engine.connect() as conn:
            return sorted(conn.scalars(select(DocumentRow.doc_key)))
    finally:
        engine.dispose()


def issues_of(source) -> tuple[list[str], list[InputIssue]]:
    issues: list[InputIssue] = []
    docs = [doc.doc_id for doc in read_documents(source, on_issue=issues.append)]
    return docs, issues


# --- 2. Silently wrong -------------------------------------------------------------------------

def test_a_file_that_turns_unreadable_keeps_its_stored_version_with_a_warning(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", {"a.txt": "alpine lakes", "b.txt": "desert dunes"})
    build_index(config(source, tmp_path / "idx", tiny_model))
    (source / "b.txt").write_bytes(b"\x80\x81 desert dunes, now not UTF-8")
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert report.documents_removed == 0
    assert stored_ids(tmp_path / "idx") == ["a.txt", "b.txt"]
    assert any("kept the stored version of 1 document(s)" in w and "b.txt" in w for w in report.warnings)
    (source / "b.txt").unlink()  # once it is really gone, it goes
    assert build_index(config(source, tmp_path / "idx", tiny_model)).documents_removed == 1


def test_a_file_past_the_size_limit_for_a_moment_keeps_its_stored_version(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", {"a.txt": "alpine lakes", "log.txt": "short log"})
    build_index(config(source, tmp_path / "idx", tiny_model, max_document_chars=100))
    (source / "log.txt").write_text("line\n" * 100)
    report = build_index(config(source, tmp_path / "idx", tiny_model, max_document_chars=100))
    assert report.documents_removed == 0 and stored_ids(tmp_path / "idx") == ["a.txt", "log.txt"]


def test_an_unreadable_folder_keeps_the_documents_stored_from_it():
    """As root a folder cannot be made unreadable, so the plan is checked with the reader's issue."""
    from indexer.store.plan import Skipped, StoredDocument, plan

    stored = {key: StoredDocument(i, "h", "/src", key) for i, key in enumerate(["sub/a.txt", "subway.txt", "b.txt"])}
    skipped = Skipped.of([InputIssue("sub", None, "unreadable folder (Permission denied)")])
    changes = plan(stored, [], "/src", skipped=skipped)
    assert changes.kept == ["sub/a.txt"] and changes.remove == ["b.txt", "subway.txt"]


def test_other_chunking_settings_are_refused_naming_rebuild_and_omitted_ones_keep_the_index_s(
        tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", {"a.txt": LONG})
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model, passage_tokens=48))
    (source / "d.txt").write_text("a new file " * 50)
    with pytest.raises(IndexMismatchError, match=r"48-token passages, 32 tokens of overlap, with titles; "
                       r"this build asks for 16-token passages, 15 tokens of overlap, without titles.*--rebuild"):
        build_index(config(source, index_dir, tiny_model, passage_tokens=16, overlap_tokens=15,
                           embed_titles=False))
    assert stored_ids(index_dir) == ["a.txt"], "nothing was written"
    report = build_index(config(source, index_dir, tiny_model))  # no flags: the index's settings
    assert report.documents_added == 1
    with Index.open(index_dir, use_gpu=False) as index:
        assert (index.info.passage_tokens, index.info.overlap_tokens, index.info.embed_titles) == (48, 32, True)
    assert cli_main(["build", "--source", str(source), "--index", str(index_dir), "--model", tiny_model,
                     "--overlap", "15", "--quiet"]) != 0


@pytest.mark.parametrize("text", ["\u200b\u200b\ufeff\u00ad", "\x01\x02 \x7f", "\ue000\ue001", "\u200b \u0301"])
def test_a_file_of_invisible_characters_is_an_empty_document(tmp_path, text):
    folder = write_corpus(tmp_path / "src", {"blank.txt": text, "ok.txt": "visible"})
    docs, issues = issues_of(folder)
    assert docs == ["ok.txt"]
    assert [(i.path, "only invisible characters" in i.problem) for i in issues] == [("blank.txt", True)]


def test_a_document_the_tokenizer_reads_as_nothing_is_skipped_and_not_counted(tmp_path, tiny_model):
    """U+FFFD is visible, but BERT's tokenizer drops it: no passage, so no document."""
    source = write_corpus(tmp_path / "src", {"bad.txt": "\ufffd\ufffd \ufffd", "ok.txt": "visible words"})
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert stored_ids(tmp_path / "idx") == ["ok.txt"]
    assert report.documents_added == 1 and report.total_documents == 1
    assert [(i.path, "nothing the model can read" in i.problem) for i in report.issues] == [("bad.txt", True)]


def test_an_index_folder_inside_its_source_is_not_indexed(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", {"a.txt": "alpine lakes", "b.txt": "desert dunes"})
    first = build_index(config(source, source / "idx", tiny_model))
    again = build_index(config(source, source / "idx", tiny_model))
    assert first.total_documents == 2 and stored_ids(source / "idx") == ["a.txt", "b.txt"]
    assert (again.documents_added, again.documents_removed, again.documents_unchanged) == (0, 0, 2)
    assert any("idx: an index folder" in w for w in again.warnings)
    other = build_index(config(source, tmp_path / "elsewhere", tiny_model))  # another index's folder too
    assert other.total_documents == 2


def test_a_file_reached_by_several_paths_is_indexed_once(tmp_path, tiny_model):
    source = write_corpus(tmp_path / "src", {"GPL-3": "the GNU General Public License " * 20})
    (source / "GPL").symlink_to("GPL-3")
    os.link(source / "GPL-3", source / "COPYING")
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    assert stored_ids(tmp_path / "idx") == ["COPYING"], "the first name that is not a symlink"
    assert sorted(w.split(":")[0] for w in report.warnings) == ["GPL", "GPL-3"]
    assert all("indexed once" in w for w in report.warnings)


def test_a_megabyte_line_without_spaces_is_left_out_of_the_passages_with_a_warning(tmp_path, tiny_model):
    blob = "QUJD" * 250_000
    source = write_corpus(tmp_path / "src", {"page.md": f"# Page\nIntro text here.\n{blob}\nClosing words."})
    report = build_index(config(source, tmp_path / "idx", tiny_model))
    with Index.open(tmp_path / "idx", use_gpu=False) as index:
        passages = index.passages(sorted(assert_consistent(tmp_path / "idx")))
    assert [p.text.strip() for _, p in sorted(passages.items())] == ["# Page\nIntro text here.", "Closing words."]
    assert any("1,000,000 characters without a space" in w for w in report.warnings)


# --- 3. Messages -------------------------------------------------------------------------------

def test_a_file_name_that_is_not_utf8_is_named_as_such(tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "ok.txt").write_text("fine")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "w") as fh:
        fh.write("text")
    docs, issues = issues_of(folder)
    assert docs == ["ok.txt"]
    assert len(issues) == 1 and "the file name 'caf\\\\xe9.txt' is not valid UTF-8; rename the file" in issues[0].problem
    assert "\\u escape" not in issues[0].problem


def test_a_deep_path_says_the_path_is_too_long(tmp_path):
    folder = tmp_path / "src"
    deep = folder / "/".join(["a-rather-long-folder-name"] * 22)
    deep.mkdir(parents=True)
    (deep / "notes.txt").write_text("deep text")
    _, issues = issues_of(folder)
    assert len(issues) == 1
    assert "the path is" in issues[0].problem and "move the file to a shallower folder" in issues[0].problem
    assert "use a shorter id" not in issues[0].problem


def test_a_tab_separated_csv_is_read_by_its_columns(tmp_path):
    path = tmp_path / "tickets.csv"
    path.write_text("id\ttitle\ttext\nT-1\tLogin\tcannot log in, password reset\nT-2\tBilling\tdouble charge\n")
    docs, issues = [], []
    docs = list(read_documents(path, on_issue=issues.append))
    assert issues == []
    assert [(d.doc_id, d.title, d.text) for d in docs] == [
        ("T-1", "Login", "cannot log in, password reset"), ("T-2", "Billing", "double charge")]


def test_a_beir_folder_names_the_files_it_ignores(tmp_path):
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "1", "text": "a claim"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q", "text": "a query"}\n')
    (folder / "qrels" / "test.tsv").write_text("q\t1\t1\n")
    (folder / "notes.txt").write_text("my own notes")
    (folder / "extra.jsonl").write_text('{"id": "x", "text": "more"}\n')
    docs, issues = issues_of(folder)
    assert docs == ["1"]
    assert len(issues) == 1 and "2 other file(s) ignored: extra.jsonl, notes.txt" in issues[0].problem


def test_a_newline_in_a_file_name_stays_out_of_titles_and_captions(tmp_path):
    from search.hits import Hit
    from ui.results import source_caption

    assert text_title("two\nlines.txt", "no heading") == "two lines"
    folder = write_corpus(tmp_path / "src", {"two\nlines.txt": "text"})
    docs = list(read_documents(folder))
    assert "\n" not in docs[0].title
    hit = Hit(doc_id="two\nlines.txt", title=docs[0].title, text="text", score=1.0, passage_id=1,
              source="two\nlines.txt", start_char=0, end_char=4)
    assert "\n" not in source_caption(hit) and "␊" in source_caption(hit)
