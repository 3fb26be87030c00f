from __future__ import annotations

import io
import json
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.sources.documents import InputIssue
from indexer.sources.readers import (
    count_documents,
    csv_lines,
    mbox_message,
    mbox_message_line,
    read_documents,
)


def collect(source, **kwargs):
    issues: list[InputIssue] = []
    docs = list(read_documents(source, on_issue=issues.append, **kwargs))
    return docs, [str(i) for i in issues]


def test_folder_of_text_and_markdown(tmp_path):
    (tmp_path / "a.txt").write_text("plain text body")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# The Title\nmarkdown body")
    docs, issues = collect(tmp_path)
    assert issues == []
    by_id = {d.doc_id: d for d in docs}
    assert set(by_id) == {"a.txt", "sub/b.md"}
    assert by_id["sub/b.md"].title == "The Title"
    assert by_id["a.txt"].title == "a"


def test_hidden_files_and_folders_are_skipped_but_a_hidden_source_is_read(tmp_path):
    """A checkout's .git (zlib objects, each "binary"), a .venv or a .cache holds a tool's files,
    not the user's documents: a folder of notes kept in git built thousands of skipped inputs."""
    import zlib

    notes = tmp_path / ".notes"
    (notes / ".git" / "objects" / "ab").mkdir(parents=True)
    (notes / ".git" / "objects" / "ab" / "cdef01").write_bytes(zlib.compress(b"blob 12\x00hello world\n"))
    (notes / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (notes / ".cache").mkdir()
    (notes / ".cache" / "state.txt").write_text("cached")
    (notes / ".draft.md").write_text("not yet")
    (notes / "ideas.md").write_text("# Ideas\nIndex the notes.")
    docs, issues = collect(notes)
    assert [d.doc_id for d in docs] == ["ideas.md"] and issues == []


def test_jsonl_keeps_extra_fields_as_metadata_and_reports_bad_lines(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(
        json.dumps({"id": 7, "title": "T", "text": "body", "year": 2020, "tags": ["x"]})
        + "\n{not json\n"
        + json.dumps({"id": "e", "text": "  "})
        + "\n"
        + json.dumps(["a", "list"])
        + "\n"
    )
    docs, issues = collect(path)
    assert [(d.doc_id, d.title, d.metadata) for d in docs] == [("7", "T", {"year": 2020, "tags": ["x"]})]
    assert issues[0].startswith("docs.jsonl:2: malformed JSON")
    assert issues[1] == "docs.jsonl:3: empty document (no 'text' field or it is blank)"
    assert issues[2].startswith("docs.jsonl:4: a JSON line must be an object")


def test_beir_folder_reads_corpus_only(tmp_path):
    (tmp_path / "corpus.jsonl").write_text(
        json.dumps({"_id": "d1", "title": "T", "text": "x", "metadata": {"k": 1}}) + "\n"
    )
    (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "q"}) + "\n")
    docs, issues = collect(tmp_path)
    assert issues == []
    assert [(d.doc_id, d.metadata) for d in docs] == [("d1", {"k": 1})]


def test_csv_with_column_mapping(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("key,headline,body,team\n1,H1,first body,red\n2,H2,,blue\n")
    docs, issues = collect(path, csv_columns=("key", "headline", "body"))
    assert [(d.doc_id, d.title, d.text, d.metadata) for d in docs] == [
        ("1", "H1", "first body", {"team": "red"})
    ]
    assert issues == ["t.csv:3: empty document (column 'body' is blank)"]


def test_csv_missing_text_column_names_the_columns_and_the_flag(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    docs, issues = collect(path)
    assert docs == []
    assert issues == [
        "t.csv:1: missing CSV column 'text' (columns, comma-separated: a, b); nor is it read a record a row, "
        "as a ticket export is: 0 of its 1 rows hold prose (a description, a comment), under half; the first "
        "row must name the columns, "
        "one of them 'text' for the text (and optionally 'id' and 'title')"
    ]


def test_csv_issue_keeps_the_cli_flags_out_of_its_message(tmp_path):
    """The app shows the message and has no flags; the CLI logs the hint beside it."""
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n")
    issues: list[InputIssue] = []
    list(read_documents(path, on_issue=issues.append))
    assert "--csv" not in str(issues[0])
    assert issues[0].cli_hint == "or map your columns with --csv-text/--csv-title/--csv-id"


def test_binary_invalid_utf8_empty_and_unsupported_files_are_reported(tmp_path):
    (tmp_path / "bin.txt").write_bytes(b"abc\x00\x01\x02")
    (tmp_path / "damaged.txt").write_bytes(b"line one\n\x81\x8d stray bytes\n")
    (tmp_path / "empty.md").write_text("   \n")
    (tmp_path / "paper.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "ok.txt").write_text("fine")
    docs, issues = collect(tmp_path)
    assert [d.doc_id for d in docs] == ["ok.txt"]
    assert "bin.txt: binary file (it holds NUL bytes); only text is indexed" in issues
    assert "damaged.txt:2: invalid UTF-8 at byte 9; re-save the file as UTF-8" in issues
    assert "empty.md: empty document" in issues
    assert ("paper.pdf: damaged or truncated PDF (Failed to load document (PDFium: Data format error)); "
            "download or export it again") in issues
    assert any(i.startswith("logo.png: binary file (a PNG image)") for i in issues)


def test_text_is_accepted_by_content_whatever_its_name(tmp_path):
    """README, README.Debian, .rst, .markdown, .text, .log, MPL-1.1 and gzip: all text, all indexed."""
    import gzip

    (tmp_path / "README").write_text("Plain readme without an extension.")
    (tmp_path / "README.Debian").write_text("Debian notes for this package.")
    (tmp_path / "guide.rst").write_text("User Guide\n==========\n\nHow to use it.\n")
    (tmp_path / "notes.markdown").write_text("# Notes\nsome notes")
    (tmp_path / "plain.text").write_text("plain text")
    (tmp_path / "server.log").write_text("12:00 started\n12:01 stopped\n")
    (tmp_path / "MPL-1.1").write_text("Mozilla Public License Version 1.1")
    (tmp_path / "changelog.gz").write_bytes(gzip.compress(b"version 2: fixed everything"))
    (tmp_path / "intro.md.gz").write_bytes(gzip.compress(b"# Intro\nzipped markdown"))
    (tmp_path / "rows.jsonl.gz").write_bytes(gzip.compress(b'{"id": "r1", "text": "a record"}\n'))
    (tmp_path / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    docs, issues = collect(tmp_path)
    titles = {d.doc_id: d.title for d in docs}
    assert titles == {
        "README": "README", "README.Debian": "README.Debian", "guide.rst": "User Guide",
        "notes.markdown": "Notes", "plain.text": "plain", "server.log": "server.log",
        "MPL-1.1": "MPL-1.1", "changelog.gz": "changelog", "intro.md.gz": "Intro", "r1": "",
    }
    by_id = {d.doc_id: d for d in docs}
    assert by_id["changelog.gz"].text == "version 2: fixed everything"
    assert len(issues) == 1 and issues[0].startswith("broken.gz: damaged gzip file")
    assert not any("unsupported" in i for i in issues)


def test_gzip_holding_more_than_a_document_may_is_refused_without_reading_it_all(tmp_path):
    import gzip

    (tmp_path / "big.txt.gz").write_bytes(gzip.compress(b"a " * 50_000))
    docs, issues = collect(tmp_path, max_document_chars=1000)
    assert docs == []
    assert issues == ["big.txt.gz: gzip file holds more than 4,004 bytes, more than a document may "
                      "hold; split it or raise --max-document-chars"]


def test_duplicate_ids_keep_the_first_and_name_both_places(tmp_path):
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"id": "y", "text": "zero"}) + "\n" + json.dumps({"id": "x", "text": "one"}) + "\n"
    )
    (tmp_path / "b.jsonl").write_text(
        "\n".join(json.dumps(r) for r in [{"id": "z", "text": "a"}, {"id": "x", "text": "two"}]) + "\n"
    )
    (tmp_path / "c.jsonl").write_text(json.dumps({"id": "a.txt", "text": "three"}) + "\n")
    (tmp_path / "a.txt").write_text("whole file")
    docs, issues = collect(tmp_path)
    assert [d.text for d in docs] == ["zero", "one", "whole file", "a"]
    assert issues == [
        "b.jsonl:2: duplicate document id 'x' (first seen at a.jsonl:2); kept the first",
        "c.jsonl:1: duplicate document id 'a.txt' (first seen at a.txt); kept the first",
    ]


def test_missing_source_says_what_is_supported(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"does not exist. Pass a folder of documents \(PDF, Word, HTML"):
        list(read_documents(tmp_path / "nope"))


# --- CSV: quoted newlines, record start lines --------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_csv_quoted_newlines_are_kept_and_issues_name_the_record_start_line(tmp_path, newline):
    rows = [
        "id,title,text",
        '1,T,"first line{nl}second line{nl}third"',
        "2,T2,",
        '3,"a{nl}title","x, \u2028y\x0cz\x1c"',
        "4,T4,one,two",
        "5,T5,last",
    ]
    path = tmp_path / "t.csv"
    path.write_bytes(newline.join(rows).format(nl=newline).encode() + newline.encode())
    docs, issues = collect(path)
    assert [(d.doc_id, d.title, d.text, d.line) for d in docs] == [
        ("1", "T", f"first line{newline}second line{newline}third", 2),
        ("3", f"a{newline}title", "x, \u2028y\x0cz\x1c", 6),
        ("5", "T5", "last", 9),
    ]
    assert issues == [
        "t.csv:5: empty document (column 'text' is blank)",
        't.csv:8: row has 4 fields but the header has 3; put a field that holds commas in double quotes ("...")',
    ]


def test_csv_field_larger_than_the_csv_module_default_is_read(tmp_path):
    body = "word " * 40_000  # 200,000 characters; the csv module's default limit is 131,072
    path = tmp_path / "big.csv"
    path.write_text(f'id,text\n1,"{body}"\n')
    docs, issues = collect(path)
    assert issues == [] and [d.text for d in docs] == [body]


# --- JSON lines: only "\n" ends a line ---------------------------------------------------


def test_jsonl_line_with_unicode_line_separators_is_one_record(tmp_path):
    text = "para\u2028graph\u2029next\u0085line"
    path = tmp_path / "docs.jsonl"
    path.write_bytes(
        (json.dumps({"id": "u", "text": text}, ensure_ascii=False) + "\r\n" + "{bad\x0c\n").encode()
        + (json.dumps({"id": "v", "text": "after"}) + "\n").encode()
    )
    docs, issues = collect(path)
    assert [(d.doc_id, d.text, d.line) for d in docs] == [("u", text, 1), ("v", "after", 3)]
    assert len(issues) == 1 and issues[0].startswith("docs.jsonl:2: malformed JSON")


def test_jsonl_number_too_long_for_python_is_a_malformed_line(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "a", "n": ' + "9" * 5000 + "}\n")
    docs, issues = collect(path)
    assert docs == []
    assert len(issues) == 1
    assert issues[0].startswith("docs.jsonl:1: malformed JSON (Exceeds the limit")


def test_jsonl_text_that_is_not_a_string_is_named(tmp_path):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"id": 1, "text": ["a"]}) + "\n")
    assert collect(path) == ([], ["docs.jsonl:1: 'text' is a list; it must be a string"])


def test_jsonl_title_that_is_an_object_or_a_boolean_is_skipped_with_its_line(tmp_path):
    """Such a title would be stored as "{'x': 1}" or "True"; a number is a fine title."""
    path = tmp_path / "docs.jsonl"
    rows = [{"id": "a", "title": {"x": 1}, "text": "alpha"}, {"id": "b", "title": True, "text": "beta"},
            {"id": "c", "title": ["t"], "text": "gamma"}, {"id": "d", "title": 1984, "text": "delta"},
            {"id": "e", "title": None, "text": "epsilon"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    docs, issues = collect(path)
    assert [(d.doc_id, d.title) for d in docs] == [("d", "1984"), ("e", "")]
    assert issues == ["docs.jsonl:1: 'title' is an object; it must be a string",
                      "docs.jsonl:2: 'title' is a boolean; it must be a string",
                      "docs.jsonl:3: 'title' is a list; it must be a string"]


def test_csv_row_that_ends_before_the_text_column_is_called_short(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,title,text\n1,One,first\n2,Two\n3\n4,Four,fourth\n")
    docs, issues = collect(path)
    assert [d.doc_id for d in docs] == ["1", "4"]
    assert issues == ["t.csv:3: row has 2 fields but the header has 3: it ends before column 'text'",
                      "t.csv:4: row has 1 field but the header has 3: it ends before column 'text'"]


# --- encodings -----------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"])
def test_text_with_a_byte_order_mark_is_decoded(tmp_path, encoding):
    text = "Café naïve — 日本語\nsecond line"
    bom = "\ufeff" if encoding in ("utf-16-le", "utf-16-be", "utf-32-be") else ""  # no BOM by themselves
    (tmp_path / "a.txt").write_bytes((bom + text).encode(encoding))
    record = json.dumps({"id": "j", "text": text}, ensure_ascii=False)
    (tmp_path / "b.jsonl").write_bytes((bom + record + "\n").encode(encoding))
    docs, issues = collect(tmp_path)
    assert issues == []
    assert [(d.doc_id, d.text) for d in docs] == [("a.txt", text), ("j", text)]


def test_utf16_without_bom_is_binary_with_a_hint_and_bad_utf16_names_the_byte(tmp_path):
    (tmp_path / "nobom.txt").write_bytes("plain ASCII words saved as UTF-16".encode("utf-16-le"))
    (tmp_path / "cut.txt").write_bytes("\ufeffab\ncd".encode("utf-16-le") + b"\x00\xd8")
    docs, issues = collect(tmp_path)
    assert docs == []
    assert issues == [
        "cut.txt:2: invalid UTF-16 at byte 12; re-save the file as UTF-8",
        "nobom.txt: binary file (it holds NUL bytes); only text is indexed; "
        "if this is UTF-16, re-save as UTF-8",
    ]


# --- ids -----------------------------------------------------------------------------------


def test_ids_must_be_strings_or_integers(tmp_path):
    rows = [
        {"id": "s", "text": "a"},
        {"_id": 12, "text": "b"},
        {"text": "c"},
        {"id": True, "text": "d"},
        {"id": 1.5, "text": "e"},
        {"id": None, "text": "f"},
        {"_id": [1, 2], "text": "g"},
        {"id": {"k": "v"}, "text": "h"},
    ]
    path = tmp_path / "ids.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, issues = collect(path)
    assert [d.doc_id for d in docs] == ["s", "12", "ids.jsonl#L3"]
    fix = "an id must be a string or an integer: write it as a string, e.g."
    assert issues == [
        f'ids.jsonl:4: \'id\' is a boolean (true); {fix} "id": "true", or leave \'id\' out to name the record by its line',
        f'ids.jsonl:5: \'id\' is a float (1.5); {fix} "id": "1.5", or leave \'id\' out to name the record by its line',
        f'ids.jsonl:6: \'id\' is null (null); {fix} "id": "doc-1", or leave \'id\' out to name the record by its line',
        f'ids.jsonl:7: \'_id\' is a list ([1, 2]); {fix} "_id": "doc-1", or leave \'_id\' out to name the record by its line',
        f'ids.jsonl:8: \'id\' is an object ({{"k": "v"}}); {fix} "id": "doc-1", or leave \'id\' out to name the record by its line',
    ]


# --- what PostgreSQL refuses is refused on every backend -----------------------------------


def test_records_postgres_cannot_store_are_skipped_with_file_and_line(tmp_path):
    rows = [
        '{"id": "ok", "text": "fine", "score": 1.5}',
        json.dumps({"id": "nul-text", "text": "a\x00b"}),
        json.dumps({"id": "nul-title", "title": "t\x00", "text": "b"}),
        json.dumps({"id": "nul\x00id", "text": "c"}),
        json.dumps({"id": "nul-meta", "text": "d", "metadata": {"a": [{"b": "x\x00"}]}}),
        json.dumps({"id": "nul-key", "text": "d", "tags": {"k\x00": 1}}),
        '{"id": "nan", "text": "e", "score": NaN}',
        '{"id": "inf", "text": "f", "metadata": {"stats": [1, -Infinity]}}',
        '{"id": "surrogate", "text": "g\\ud800"}',
        json.dumps({"id": "x" * 513, "text": "h"}),
        json.dumps({"id": "y" * 512, "text": "i"}),
    ]
    path = tmp_path / "pg.jsonl"
    path.write_text("\n".join(rows) + "\n")
    docs, issues = collect(path)
    assert [d.doc_id for d in docs] == ["ok", "y" * 512]
    nul = "holds a NUL character (\\x00), which PostgreSQL cannot store; remove it from the file"
    assert issues == [
        f"pg.jsonl:2: text {nul}",
        f"pg.jsonl:3: title {nul}",
        f"pg.jsonl:4: id {nul}",
        f"pg.jsonl:5: metadata.a[0].b {nul}",
        f"pg.jsonl:6: metadata.tags key {nul}",
        "pg.jsonl:7: metadata.score is nan, which JSON (and so PostgreSQL) cannot store; "
        "write null or a finite number",
        "pg.jsonl:8: metadata.stats[1] is -inf, which JSON (and so PostgreSQL) cannot store; "
        "write null or a finite number",
        "pg.jsonl:9: text holds a lone surrogate (U+D800), which is not valid Unicode text; "
        "fix the \\u escape in the file",
        "pg.jsonl:10: id is 513 characters, over the limit of 512; use a shorter id",
    ]


def test_nul_past_the_binary_sniff_and_in_csv_is_reported(tmp_path):
    (tmp_path / "late.txt").write_text("a" * 10_000 + "\x00")
    (tmp_path / "t.csv").write_text(f"id,text,note\n1,{'b' * 10_000},\n2,ok,n\x00te\n")
    docs, issues = collect(tmp_path)
    assert [d.doc_id for d in docs] == ["1"]
    nul = "holds a NUL character (\\x00), which PostgreSQL cannot store; remove it from the file"
    assert issues == [f"late.txt: text {nul}", f"t.csv:3: metadata.note {nul}"]


# --- document size --------------------------------------------------------------------------


def test_documents_over_max_document_chars_are_skipped_with_size_limit_and_fix(tmp_path):
    (tmp_path / "small.txt").write_text("x" * 100)
    (tmp_path / "over.txt").write_text("é" * 101)  # 202 bytes: read, then measured in characters
    (tmp_path / "huge.txt").write_text("x" * 405)  # over 4 bytes a character: never read
    (tmp_path / "r.jsonl").write_text(
        json.dumps({"id": "long", "text": "y" * 150}) + "\n" + json.dumps({"id": "s", "text": "z"}) + "\n"
    )
    docs, issues = collect(tmp_path, max_document_chars=100)
    assert [d.doc_id for d in docs] == ["s", "small.txt"]
    fix = "split the file, or raise --max-document-chars"
    assert issues == [
        f"huge.txt: document is 405 bytes (at least 100 characters), over the limit of 100 characters; {fix}",
        f"over.txt: document is 101 characters, over the limit of 100 characters; {fix}",
        f"r.jsonl:1: document is 150 characters, over the limit of 100 characters; {fix}",
    ]
    docs, issues = collect(tmp_path, max_document_chars=None)
    assert len(docs) == 5 and issues == []


def test_default_document_limit_and_bad_limits():
    from indexer.sources.documents import DEFAULT_MAX_DOCUMENT_CHARS

    assert DEFAULT_MAX_DOCUMENT_CHARS == 10_000_000
    with pytest.raises(ValueError, match=r"max_document_chars \(0\) must be at least 1, or None for no limit"):
        list(read_documents(".", max_document_chars=0))


# --- symlinks ------------------------------------------------------------------------------


def test_symlinks_inside_work_and_loops_broken_and_outside_links_are_reported(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not in the source")
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "real.txt").write_text("real text")
    (source / "alias.txt").symlink_to("sub/real.txt")
    (source / "sub_alias").symlink_to("sub", target_is_directory=True)
    (source / "up").symlink_to("..", target_is_directory=True)
    (source / "self.txt").symlink_to("self.txt")
    (source / "gone.txt").symlink_to("missing.txt")
    (source / "leak.txt").symlink_to(outside / "secret.txt")
    (source / "leakdir").symlink_to(outside, target_is_directory=True)
    (source / "sub" / "parent").symlink_to("..", target_is_directory=True)
    docs, issues = collect(source)
    assert sorted((d.doc_id, d.text) for d in docs) == [
        ("sub/real.txt", "real text"),
    ], "a file reached by two paths is one document, under the path that is not a link"
    real_outside = outside.resolve()
    assert sorted(issues) == sorted(
        [
            "alias.txt: the same file as sub/real.txt (a link to it), which is indexed once, under "
            "that name",
            "gone.txt: broken symlink (its target missing.txt does not exist); fix or remove the link",
            f"leak.txt: symlink to {real_outside / 'secret.txt'}, a file outside the source folder; "
            "not followed: copy the file into the folder, or index its folder directly",
            f"leakdir: symlink to {real_outside}, a folder outside the source folder; "
            "not followed: copy the folder into the source, or index it directly",
            "self.txt: symlink loop (self.txt -> self.txt never reaches a file); fix or remove the link",
            f"sub/parent: symlink loop (sub/parent -> {source.resolve()}, a folder that holds the link); "
            "not followed",
            f"up: symlink loop (up -> {tmp_path.resolve()}, a folder that holds the link); not followed",
        ]
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_plain_utf8_file_is_read_a_line_at_a_time_as_the_whole_text_splits(tmp_path, seed):
    """`_file_lines` (streamed) gives exactly the lines `_lines` cuts from the decoded text: "\\n"
    only, "\\r" dropped before it, U+2028 and friends kept inside lines, a final empty line."""
    import random

    from indexer.sources import readers

    rng = random.Random(seed)
    pieces = ["a", "é", "\n", "\r\n", "\r", "\u2028", "\x85", "{}", " ", "日本", "\U0001f600"]
    text = ("\ufeff" if seed % 5 == 0 else "") + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
    path = tmp_path / "f.jsonl"
    path.write_bytes(text.encode("utf-8"))
    assert list(readers._file_lines(path)) == list(readers._lines(text.removeprefix("\ufeff")))


def test_text_in_a_legacy_encoding_is_read_with_a_warning_naming_it(tmp_path):
    """Old changelogs and exported tickets in Windows-1252, Russian in KOI8-R, Japanese in
    Shift-JIS: each indexed as written, with a warning that names the encoding it was read in."""
    texts = {
        "latin.txt": ("cp1252", "Jörg Müller fixed the café's menu; the naïve façade stayed.\n"),
        "russian.txt": ("koi8-r", "Привет, мир! Это тестовый файл на русском языке, сохранённый давно.\n"),
        "japanese.txt": ("shift_jis", "これは日本語のテキストファイルです。古いエディタで保存されました。\n"),
    }
    for name, (encoding, text) in texts.items():
        (tmp_path / name).write_bytes(text.encode(encoding))
    # A changelog in UTF-8 whose older entries are in Latin-1: each part read as written.
    (tmp_path / "changelog").write_bytes("2024: Zoë fixed it\n".encode() + "1999: Günter wrote it\n".encode("latin-1"))
    docs, issues = collect(tmp_path)
    assert {d.doc_id: d.text for d in docs} == {**{name: text for name, (_, text) in texts.items()},
                                                "changelog": "2024: Zoë fixed it\n1999: Günter wrote it\n"}
    assert sorted(issues) == [
        "changelog:2: not UTF-8 (at byte 27); read as Windows-1252: if its accented letters look wrong, re-save the file as UTF-8",
        "japanese.txt:1: not UTF-8 (at byte 0); read as cp932: if its accented letters look wrong, re-save the file as UTF-8",
        "latin.txt:1: not UTF-8 (at byte 1); read as Windows-1252: if its accented letters look wrong, re-save the file as UTF-8",
        "russian.txt:1: not UTF-8 (at byte 0); read as koi8_r: if its accented letters look wrong, re-save the file as UTF-8",
    ]


def test_a_jsonl_file_is_streamed_only_when_it_is_plain_utf8(tmp_path, monkeypatch):
    """Gzip, UTF-16 and invalid UTF-8 take the whole-file path, with its message; plain UTF-8 never does."""
    from indexer.sources import readers

    whole = []
    monkeypatch.setattr(readers, "_read_text", lambda path, *a, **k: whole.append(path.name) or None)
    row = json.dumps({"id": "a", "text": "Café au lait"}, ensure_ascii=False) + "\n"
    (tmp_path / "plain.jsonl").write_text(row * 3, encoding="utf-8")
    (tmp_path / "utf16.jsonl").write_bytes(b"\xff\xfe" + row.encode("utf-16-le"))
    (tmp_path / "latin1.jsonl").write_bytes(row.encode("latin-1"))
    for name in ("plain.jsonl", "utf16.jsonl", "latin1.jsonl"):
        readers._text_lines(tmp_path / name, name, lambda issue: None)
    assert whole == ["utf16.jsonl", "latin1.jsonl"]


def test_count_documents_counts_records_and_files_without_parsing(tmp_path):
    """The progress count of a windowed build: a JSONL line, a CSV line after its header, a file."""
    import gzip

    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"id": "1", "text": "x"}\n{"id": "2", "text": "y"}\n{"id": "3", "text": "z"}')
    with gzip.open(folder / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps({"id": f"g{i}", "text": "w"}) + "\n" for i in range(5)))
    (folder / "c.csv").write_text("id,text\nc1,one\nc2,two\n")
    (folder / "d.txt").write_text("a plain document")
    (folder / "e.md").write_text("# another")
    assert count_documents(folder) == 3 + 5 + 2 + 1 + 1
    assert count_documents(folder) == len(list(read_documents(folder)))


def test_a_gzip_compressed_pdf_office_file_rtf_or_e_book_is_read_as_the_file_it_holds(tmp_path, monkeypatch):
    """Debian ships manuals as manual.pdf.gz (and userguide.rtf.gz): each is the same document as
    the file unpacked, under its own name, and the temporary file it was unpacked into is gone."""
    import gzip

    from tests.indexer.sources.formats.samples import (
        PAGE_TEXTS,
        truncate,
        write_docx,
        write_epub,
        write_odt,
        write_pdf,
        write_pptx,
        write_rtf,
        write_zip,
    )

    plain, packed, scratch = tmp_path / "plain", tmp_path / "packed", tmp_path / "scratch"
    for folder in (plain, packed, scratch):
        folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    files = [write_pdf(plain / "manual.pdf", PAGE_TEXTS, title="The Manual"),
             write_docx(plain / "letter.docx", [("Heading 1", "Refunds"), ("p", "Refunds take ten days.")]),
             write_epub(plain / "book.epub", [("One", "<p>A chapter about lighthouses.</p>")]),
             write_odt(plain / "minutes.odt", [("h1", "Minutes"), ("p", "The board met on Tuesday.")]),
             write_pptx(plain / "deck.pptx", [("Plan", ["Ship in May"])]),
             write_rtf(plain / "guide.rtf", "\\pard Gateways forward SMS messages.\\par")]
    for path in files:
        (packed / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes()))
    (packed / "cut.pdf.gz").write_bytes(gzip.compress(truncate(write_pdf(scratch / "cut.pdf", PAGE_TEXTS)).read_bytes()))
    (scratch / "cut.pdf").unlink()
    (packed / "bundle.zip.gz").write_bytes(gzip.compress(write_zip(scratch / "b.zip", {"a.txt": "hi"}).read_bytes()))
    (scratch / "b.zip").unlink()
    whole = gzip.compress(files[0].read_bytes())
    (packed / "half.pdf.gz").write_bytes(whole[: len(whole) // 2])
    expected, _ = collect(plain)
    docs, issues = collect(packed)
    assert [(d.doc_id, d.title, d.text, d.outline) for d in docs] == [
        (f"{d.doc_id}.gz", d.title, d.text, d.outline) for d in expected]
    by_id = {d.doc_id: d for d in docs}
    assert by_id["manual.pdf.gz"].title == "The Manual"
    assert len(by_id["manual.pdf.gz"].outline.page_starts) == len(PAGE_TEXTS)
    assert "ten days" in by_id["letter.docx.gz"].text and "lighthouses" in by_id["book.epub.gz"].text
    assert (by_id["minutes.odt.gz"].outline.headings[0].title, by_id["deck.pptx.gz"].outline.page_starts,
            by_id["guide.rtf.gz"].text) == ("Minutes", (0,), "Gateways forward SMS messages.")
    assert len(issues) == 3, issues
    assert issues[0].startswith("bundle.zip.gz: a ZIP archive that is not a Word, PowerPoint or OpenDocument file")
    assert issues[1].startswith("cut.pdf.gz: damaged or truncated PDF")
    assert issues[2].startswith("half.pdf.gz: damaged gzip file (Compressed file ended")
    assert list(scratch.iterdir()) == []


def test_older_and_password_protected_office_files_are_named_with_what_to_save_them_as(tmp_path):
    """.doc, .xls and .ppt (and a .docx saved with a password) are OLE compound files, and TeX's
    DVI is typeset pages: binary, so they were refused as "binary file (it holds NUL bytes)",
    which named neither the format nor the fix. An OLE file without a workbook in it is not read
    as one, whatever its name (budget.xls)."""
    import gzip

    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504) + b"Root Entry".join([bytes(64)] * 8)
    for name in ("minutes.doc", "budget.xls", "locked.docx"):
        (tmp_path / name).write_bytes(ole)
    # TeX's typeset output, as Debian ships gdb's refcard.dvi.gz: preamble, DVI version 2, units.
    dvi = b"\xf7\x02\x01\x83\x92\xc0\x1c\x3b\x00\x00\x00\x00\x03\xe8\x1b TeX output 2024" + bytes(200)
    (tmp_path / "refcard.dvi.gz").write_bytes(gzip.compress(dvi))
    docs, issues = collect(tmp_path)
    assert docs == []
    assert issues == [f"{name}: an older Word or PowerPoint file (.doc, .ppt: Microsoft's formats before 2007) or a "
                      "password-protected Office file, which is not read; save it as .docx, .pptx, .xlsx or PDF, "
                      "without a password, and index that" for name in ("budget.xls", "locked.docx", "minutes.doc")] + [
        "refcard.dvi.gz: a DVI file (TeX's typeset pages, not text); convert it to PDF (dvipdf FILE) and index the PDF"]


def test_postscript_is_refused_saying_what_to_convert_it_to_and_rtf_is_read_for_its_words(tmp_path):
    """Debian's manual.ps.gz beside manual.pdf.gz: PostScript is printable, but its words are
    drawing operators; an RTF file's words sit among formatting codes, which are left out; a
    text that only mentions them is read as usual."""
    import gzip

    program = b"%!PS-Adobe-3.0\n%%Pages: 2\n/Times-Roman findfont 12 scalefont setfont\n72 720 moveto (Hello) show\nshowpage\n"
    (tmp_path / "manual.ps").write_bytes(program)
    (tmp_path / "manual.ps.gz").write_bytes(gzip.compress(program))
    (tmp_path / "figure.eps").write_bytes(program.replace(b"%!PS-Adobe-3.0", b"%!PS-Adobe-3.0 EPSF-3.0"))
    (tmp_path / "policy.rtf").write_bytes(b"{\\rtf1\\ansi\\deff0 {\\fonttbl {\\f0 Times;}}\\f0 Returns take thirty days.\\par}")
    (tmp_path / "notes.txt").write_text("A PostScript file opens with %!PS, an RTF file with {\\rtf1.")
    docs, issues = collect(tmp_path)
    assert {d.doc_id: d.text for d in docs} == {"notes.txt": "A PostScript file opens with %!PS, an RTF file with {\\rtf1.",
                                                "policy.rtf": "Returns take thirty days."}
    postscript = ("a PostScript file (the program that draws its pages, not their text); convert it to PDF "
                  "(ps2pdf FILE) and index the PDF")
    assert sorted(issues) == sorted(f"{name}: {postscript}" for name in ("figure.eps", "manual.ps", "manual.ps.gz"))


def test_gnu_info_manuals_are_read_node_by_node_despite_their_nul_marked_index(tmp_path):
    """makeinfo marks index nodes with NUL bytes (`\\0\\b[index\\0\\b]`): every modern Info manual
    in /usr/share/info was refused, a small one as binary and a large one for its NUL character.
    Both are read now, index and menus left out, and the table of a split manual's parts is named."""
    import gzip

    from tests.indexer.sources.formats.test_info import INDEX, MANUAL, PREAMBLE, TAIL

    (tmp_path / "widget.info.gz").write_bytes(gzip.compress(MANUAL.encode()))
    long_manual = MANUAL.replace("The widget frobs files.", "The widget frobs files. " * 2000)
    (tmp_path / "big.info").write_text(long_manual.replace(f"\x1f\n{INDEX}", "") + f"\x1f\n{INDEX}")
    (tmp_path / "parts.info").write_text(PREAMBLE + "\x1f\nIndirect:\nparts.info-1: 1000\n" + TAIL)
    docs, issues = collect(tmp_path)
    by_id = {d.doc_id: d for d in docs}
    assert sorted(by_id) == ["big.info", "widget.info.gz"]
    assert by_id["widget.info.gz"].title == "GNU Widget" and "\x00" not in by_id["big.info"].text
    assert [h.title for h in by_id["big.info"].outline.headings][:2] == ["GNU Widget", "1 Overview"]
    assert len(issues) == 1 and issues[0].startswith("parts.info: an Info file without nodes")


def test_a_saved_mail_is_read_as_its_message_in_the_charset_it_declares(tmp_path):
    """A ticket saved from a mail client (.eml, or any name): its transport headers were indexed
    as text, and an 8-bit Latin-1 body was guessed at with a "not UTF-8" warning, although the
    message declares its charset."""
    import gzip

    from tests.indexer.sources.formats.test_mail import message

    latin = message("Die Kaffeemaschine im Büro ist kaputt.", cte="8bit").as_bytes()
    latin = latin.replace(b'charset="utf-8"', b'charset="iso-8859-1"').replace("Büro".encode(), "Büro".encode("latin-1"))
    (tmp_path / "ticket.eml").write_bytes(latin)
    (tmp_path / "saved-as.txt").write_bytes(message().as_bytes())
    (tmp_path / "old.eml.gz").write_bytes(gzip.compress(b"From helpdesk Tue Nov  3 09:14:00 2026\n" + latin))
    docs, issues = collect(tmp_path)
    assert issues == []
    by_id = {d.doc_id: d for d in docs}
    assert {d.title for d in docs} == {"Ticket #4711: imprimante bloquée"}
    assert by_id["ticket.eml"].text.endswith("Die Kaffeemaschine im Büro ist kaputt.")
    assert by_id["old.eml.gz"].text == by_id["ticket.eml"].text
    assert "duplex job" in by_id["saved-as.txt"].text and "Received:" not in by_id["saved-as.txt"].text


def test_each_message_of_an_mbox_is_a_document_named_by_its_line(tmp_path):
    """A mail archive or a client's folder (mbox) was read as one document: its first message's
    subject and headers, every other message a stretch of its body."""
    from tests.indexer.sources.formats.test_mail import mbox_of, message

    with_attachment = message("See the log attached.")
    with_attachment.add_attachment(b"log line\n", maintype="text", subtype="plain", filename="printer.log")
    empty = message("")
    mbox_of(tmp_path / "helpdesk.mbox", [message("First report."), with_attachment, empty, message("Last one.")])
    docs, issues = collect(tmp_path)
    lines = (tmp_path / "helpdesk.mbox").read_text(encoding="utf-8").split("\n")
    starts = [n for n, line in enumerate(lines, start=1) if line.startswith("From ")]
    assert len(starts) == 4 and starts[0] == 1
    assert [d.line for d in docs] == [starts[0], starts[1], starts[3]]  # the third has no body
    assert all(d.source == "helpdesk.mbox" and d.doc_id == f"helpdesk.mbox#L{d.line}" for d in docs)
    assert {d.title for d in docs} == {"Ticket #4711: imprimante bloquée"}
    assert [d.text.rsplit("\n", 1)[-1] for d in docs] == ["First report.", "See the log attached.", "Last one."]
    assert sorted(issues) == [
        f"helpdesk.mbox:{starts[1]}: 1 attachment(s) not indexed: printer.log; save them as files to index them",
        f"helpdesk.mbox:{starts[2]}: mail message without a body to index",
    ], issues


def test_an_mbox_larger_than_a_document_may_be_is_read_message_by_message(tmp_path):
    """An archive is split as it is read: the size limit is each message's, and a truncated .gz
    keeps the messages before the damage."""
    import gzip
    import random

    from tests.indexer.sources.formats.test_mail import mbox_of, message

    mbox_of(tmp_path / "big.mbox", [message(f"Report {i}. " + "Toner low. " * 40) for i in range(8)]
            + [message("Too long. " * 300)])
    raw = (tmp_path / "big.mbox").read_bytes()
    assert len(raw) > 6000
    docs, issues = collect(tmp_path, max_document_chars=2500)
    assert len(docs) == 8 and [d.text.split("\n\n", 1)[1].split(".")[0] for d in docs] == [f"Report {i}" for i in range(8)]
    assert len(issues) == 1 and "over the limit of 2,500 characters" in issues[0], issues
    (tmp_path / "big.mbox").unlink()
    rng = random.Random(7)  # words that do not compress away, so that the first messages unpack
    mbox_of(tmp_path / "varied", [message(" ".join(f"{rng.getrandbits(40):x}" for _ in range(3000)))
                                  for _ in range(9)])
    packed = gzip.compress((tmp_path / "varied").read_bytes())
    (tmp_path / "varied").unlink()
    (tmp_path / "cut.mbox.gz").write_bytes(packed[: len(packed) * 2 // 3])
    docs, issues = collect(tmp_path)
    assert 2 <= len(docs) < 9 and all(d.doc_id.startswith("cut.mbox.gz#L") for d in docs), len(docs)
    assert len(issues) == 1 and issues[0].startswith("cut.mbox.gz: damaged gzip file"), issues


def test_an_mbox_message_is_read_back_alone_byte_for_byte_as_a_saved_message(tmp_path):
    """What the app offers to download for a hit on an mbox message: that message alone, as an
    `.eml` holds it (no "From " line, body quoting undone, 8-bit bytes as they were), which reads
    as the indexed document does; nothing where the file no longer holds a message at that line."""
    import email
    import gzip

    from indexer.sources import formats
    from tests.indexer.sources.formats.test_mail import mbox_of, message

    latin = message("Die Kaffeemaschine im Büro ist kaputt.", cte="8bit").as_bytes()
    latin = latin.replace(b'charset="utf-8"', b'charset="iso-8859-1"').replace("Büro".encode(), "Büro".encode("latin-1"))

    mbox_of(tmp_path / "folder", [message("First.\n\nFrom now on, toner."), email.message_from_bytes(latin),
                                  message("Last one.")])
    (tmp_path / "archive.mbox.gz").write_bytes(gzip.compress((tmp_path / "folder").read_bytes().replace(b"\n", b"\r\n")))
    docs, issues = collect(tmp_path)
    assert issues == [] and len(docs) == 6
    for doc in docs:
        assert mbox_message_line(doc.doc_id, doc.source) == doc.line
        raw = mbox_message(tmp_path / doc.source, doc.line)
        assert raw is not None and not raw.startswith(b"From ") and raw.split(b"\n", 1)[0].split(b":")[0].isalpha()
        assert formats.extract_email(raw.decode("ascii", errors="surrogateescape")).text == doc.text
    first, middle = [mbox_message(tmp_path / "folder", d.line) for d in docs if d.source == "folder"][:2]
    assert b"\nFrom now on, toner." in first and b">From" not in first
    assert b"B\xfcro" in middle and middle.endswith(b"kaputt.\n")
    assert mbox_message(tmp_path / "folder", docs[0].line + 1) is None  # no message opens there
    assert mbox_message(tmp_path / "folder", 10**6) is None
    (tmp_path / "notes.txt").write_text("Plain notes.\n")
    assert mbox_message(tmp_path / "notes.txt", 1) is None


def test_only_an_mbox_message_is_named_by_its_line_in_a_file_that_is_not_a_record_file():
    assert mbox_message_line("mail/Inbox#L1042", "mail/Inbox") == 1042
    assert mbox_message_line("list.mbox.gz#L7", "list.mbox.gz") == 7
    assert mbox_message_line("records.jsonl#L3", "records.jsonl") is None  # a record without an id
    assert mbox_message_line("table.csv.gz#L3", "table.csv.gz") is None
    assert mbox_message_line("notes.txt", "notes.txt") is None
    assert mbox_message_line("other#L3", "mail/Inbox") is None
    assert mbox_message_line("mail/Inbox#Lx", "mail/Inbox") is None


def test_count_documents_counts_an_mbox_by_its_messages(tmp_path):
    """A windowed build's progress total: a mail folder is as many documents as it has messages."""
    import gzip

    from tests.indexer.sources.formats.test_mail import mbox_of, message

    mbox_of(tmp_path / "Inbox", [message(f"Note {i}.\n\nFrom now on, item {i}.") for i in range(5)])
    mbox_of(tmp_path / "old", [message("Archived."), message("Also archived.")])
    (tmp_path / "archive.mbox.gz").write_bytes(gzip.compress((tmp_path / "old").read_bytes().replace(b"\n", b"\r\n")))
    (tmp_path / "old").unlink()
    (tmp_path / "notes.txt").write_text("From here on, plain notes.\n\nFrom the top.\n")
    assert count_documents(tmp_path) == 5 + 2 + 1 == len(list(read_documents(tmp_path)))


@given(st.text(alphabet=st.sampled_from(["a", ",", '"', "\r", "\n", "é", " "]), max_size=40))
def test_csv_lines_split_where_a_stringio_without_newline_translation_does(text):
    """The CSV reader's lines, taken from the text without copying it, are those the csv module's
    docs ask for: `io.StringIO(text, newline="")`'s, endings untouched."""
    assert list(csv_lines(text)) == list(io.StringIO(text, newline=""))
