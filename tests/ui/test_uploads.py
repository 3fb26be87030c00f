"""Uploads are saved under <index>/uploads and indexed by build_index; bad files become issues."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer import BadInputError
from search import Searcher
from ui.csv_columns import CsvMapping
from ui.uploads import (
    MAX_NAME_BYTES,
    fit_name,
    index_uploads,
    safe_upload_name,
    save_uploads,
    uploads_dir,
)

BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("notes.txt", "notes.txt"),
        ("../../etc/passwd.txt", "passwd.txt"),
        ("C:\\Users\\me\\report.md", "report.md"),
        (".hidden.md", "hidden.md"),
    ],
)
def test_safe_upload_name_keeps_only_a_visible_file_name(name: str, expected: str) -> None:
    assert safe_upload_name(name) == expected


@pytest.mark.parametrize("name", ["", "...", "a/..", "  "])
def test_safe_upload_name_rejects_names_without_a_file(name: str) -> None:
    with pytest.raises(ValueError, match="has no usable name; rename the file"):
        safe_upload_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "a" * 300 + ".txt",
        "é" * 200 + ".md",  # 2 bytes a character: the cut must not split one
        "日本語の長い題名" * 20 + ".jsonl",  # 3 bytes a character
        "🙂" * 100 + ".csv",  # 4 bytes a character
        "x" * 254 + "é.txt",
        "dots.in.a." + "b" * 300,  # no extension worth keeping
    ],
)
def test_long_upload_names_are_shortened_to_255_bytes_keeping_the_extension(name: str, tmp_path: Path) -> None:
    saved = safe_upload_name(name)
    assert MAX_NAME_BYTES == 255
    assert len(saved.encode("utf-8")) <= 255 and len(saved.encode("utf-8")) >= 240
    extension = name.rpartition(".")[2]
    if len(extension) < 10:
        assert saved.endswith("." + extension)
    assert saved.encode("utf-8").decode("utf-8") == saved  # whole characters only
    assert name.startswith(saved.rsplit("-", 1)[0]), "the start of the name is kept"
    assert safe_upload_name(name) == saved, "the same file maps to the same name"
    (tmp_path / saved).write_bytes(b"fits")  # the file system takes it (ext4 and tmpfs allow 255 bytes)
    assert save_uploads([(name, b"data")], tmp_path / "up") == [saved]


def test_fit_name_leaves_short_names_and_keeps_long_ones_apart() -> None:
    assert fit_name("notes.txt") == "notes.txt"
    exact = "a" * 251 + ".txt"
    assert fit_name(exact) == exact, "255 bytes fit"
    one, two = fit_name("a" * 300 + "1.txt"), fit_name("a" * 300 + "2.txt")
    assert one != two, "names that differ only past the cut stay apart"
    with pytest.raises(OSError, match="File name too long"):  # what the app hit before
        Path("/tmp", "a" * 300 + ".txt").write_bytes(b"")


def test_save_uploads_writes_bytes_and_replaces_same_name(tmp_path: Path) -> None:
    saved = save_uploads([("a.txt", b"one"), ("sub/a.txt", b"two"), ("b.md", b"# B")], tmp_path)
    assert saved == ["a.txt", "b.md"]
    assert (tmp_path / "a.txt").read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.md"]


def test_index_uploads_rejects_an_empty_batch(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="No files were uploaded"):
        index_uploads([], tmp_path / "index")


def test_index_uploads_refuses_a_csv_mapping_that_does_not_fit_before_saving_anything(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with pytest.raises(ValueError, match=r"people\.csv has no column 'body' for the text \(its columns: "
                       r"'name', 'bio'\); choose one of them"):
        index_uploads([("notes.txt", b"Kept out too."), ("people.csv", b"name,bio\nAda,wrote\n")], index,
                      csv_mappings={"people.csv": CsvMapping(text="body")})
    assert not uploads_dir(index).exists() and not index.exists()


@pytest.mark.integration
def test_index_uploads_maps_each_csv_its_own_way_and_later_uploads_read_it_the_same(tmp_path: Path) -> None:
    index = tmp_path / "index"
    result = index_uploads(
        [("people.csv", b"name,bio\nAda Lovelace,Wrote the first program for the Analytical Engine.\n"),
         ("news.csv", b"key,headline,body\nn1,Volcano erupts,Lava flows down the mountain near the village.\n"),
         ("plain.csv", b"id,text\np1,A csv with the default columns needs no mapping.\n")],
        index,
        csv_mappings={"people.csv": CsvMapping(text="bio", title="name"),
                      "news.csv": CsvMapping(text="body", title="headline", id="key")},
    )
    assert result.issues == [] and result.report.documents_added == 3
    hits = {h.doc_id: h.title for h in Searcher(index).search("volcanic eruption", k=3)}
    assert hits == {"n1": "Volcano erupts", "people.csv#L2": "Ada Lovelace", "p1": ""}
    again = index_uploads([("bread.txt", b"Bread needs yeast and time to rise.")], index)
    assert again.issues == [], "the mapped files read as mapped in every later build of the folder"
    assert (again.report.documents_added, again.report.documents_unchanged) == (1, 3)


@pytest.mark.integration
def test_index_uploads_indexes_good_files_and_reports_bad_ones(tmp_path: Path) -> None:
    index = tmp_path / "index"
    progress: list[tuple[int, int]] = []
    result = index_uploads(
        [
            (
                "volcanoes.txt",
                b"Volcanoes erupt molten lava and ash when magma rises to the surface.",
            ),
            (
                "baking.md",
                b"# Bread baking\n\nKnead the dough, let it rise, then bake it in a hot oven.",
            ),
            ("photo.txt", BINARY),
        ],
        index,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert result.saved == ["volcanoes.txt", "baking.md", "photo.txt"]
    assert result.report.documents_added == 2
    assert result.report.total_documents == 2
    assert len(result.issues) == 1
    assert result.issues[0].startswith("photo.txt: binary file")
    assert progress and progress[-1] == (2, 2)
    # The skipped file is gone, so it does not warn again with the next upload.
    assert sorted(p.name for p in uploads_dir(index).iterdir()) == ["baking.md", "volcanoes.txt"]

    hits = Searcher(index).search("how to make bread", k=2)
    assert [h.title for h in hits] == ["Bread baking", "volcanoes"]

    again = index_uploads([("volcanoes.txt", b"Geysers spout hot water and steam.")], index)
    assert (again.report.documents_added, again.report.documents_updated) == (0, 1)
    assert again.report.total_documents == 2
    assert again.issues == []


def test_an_export_with_one_bad_record_is_kept_with_its_other_records(tmp_path: Path) -> None:
    index = tmp_path / "index"
    export = (b'[{"number": 1, "title": "Printer jams", "body": "The printer on floor two jams on every job."},\n'
              b' {"number": 2, "labels": ["x"]}]')
    result = index_uploads([("tickets.json", export)], index)
    assert result.report.documents_added == 1
    assert len(result.issues) == 1 and result.issues[0].startswith("tickets.json:2: empty record")
    # Its good record was indexed: the file stays, so the next build keeps reading it.
    assert [p.name for p in uploads_dir(index).iterdir()] == ["tickets.json"]
    assert [hit.doc_id for hit in Searcher(index).search("printer", k=1, mode="bm25")] == ["tickets.json#1"]


def test_a_workbook_with_a_sheet_left_out_stays_with_its_rows(tmp_path: Path) -> None:
    """A workbook's rows are indexed and its lookup sheet left out with a warning: the upload is
    kept (it was forgotten as a file left out, and the next upload's build removed its rows)."""
    from tests.indexer.sources.test_workbooks import write_xlsx

    index = tmp_path / "index"
    workbook = write_xlsx(tmp_path / "support.xlsx").read_bytes()
    result = index_uploads([("support.xlsx", workbook)], index)
    assert result.report.documents_added == 4 and result.left_out == []
    assert [note.split(": ", 2)[1] for note in result.caveats] == ["sheet 'Tickets'", "sheet 'Lookup' is left out"]
    index_uploads([("later.txt", b"A note uploaded after the workbook, about the cafeteria menu.")], index)
    assert sorted(p.name for p in uploads_dir(index).iterdir()) == ["later.txt", "support.xlsx"]
    hits = Searcher(index).search("relay restarted draining", k=1, mode="bm25")
    assert [hit.doc_id for hit in hits] == ["support.xlsx#Tickets!SUP-12"]


@pytest.mark.integration
def test_index_uploads_takes_any_text_file_and_refuses_a_batch_with_nothing_to_index(tmp_path: Path) -> None:
    import gzip

    index = tmp_path / "index"
    with pytest.raises(BadInputError, match="Nothing in .* can be indexed"):
        index_uploads([("photo.txt", BINARY)], index)
    assert not (uploads_dir(index) / "photo.txt").exists(), "the refused file is not kept"
    assert not (index / "index.json").exists(), "no empty index"
    result = index_uploads(
        [("README", b"Glaciers carve valleys as they slide downhill."),
         ("NOTES.rst.gz", gzip.compress(b"Deserts\n=======\n\nDunes move with the wind."))],
        index,
    )
    assert result.issues == [] and result.report.total_documents == 2
    titles = {h.doc_id: h.title for h in Searcher(index).search("sand dunes and glaciers", k=2)}
    assert titles == {"README": "README", "NOTES.rst.gz": "Deserts"}


def test_save_uploads_never_writes_through_a_symbolic_link(tmp_path: Path) -> None:
    """A link planted in uploads/ would have the app overwrite its target; it is refused, and
    nothing of the batch is written."""
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    folder = tmp_path / "uploads"
    folder.mkdir()
    (folder / "notes.txt").symlink_to(outside)
    with pytest.raises(ValueError, match=r"notes\.txt is a symbolic link; the app does not write uploads through links"):
        save_uploads([("fresh.txt", b"new"), ("notes.txt", b"overwritten")], folder)
    assert outside.read_text() == "keep me" and not (folder / "fresh.txt").exists()
    linked = tmp_path / "linked-uploads"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(ValueError, match="linked-uploads is a symbolic link"):
        save_uploads([("a.txt", b"x")], linked)
    assert not (tmp_path / "elsewhere").exists()
    assert save_uploads([("notes2.txt", b"fine")], folder) == ["notes2.txt"]


def test_uploads_take_the_formats_a_build_reads_with_the_same_errors(tmp_path: Path) -> None:
    from tests.indexer.sources.formats.samples import PAGE_TEXTS, write_docx, write_pdf

    pdf = write_pdf(tmp_path / "nature.pdf", [" ".join([text] * 30) for text in PAGE_TEXTS], title="Nature and craft")
    word = write_docx(tmp_path / "kayak.docx", [("h1", "Kayaks"), ("h2", "Paddling"),
                                                ("p", "Keep the paddle blade vertical for a strong stroke.")])
    locked = write_pdf(tmp_path / "locked.pdf", PAGE_TEXTS, password="secret")
    index = tmp_path / "index"
    result = index_uploads([(p.name, p.read_bytes()) for p in (pdf, word, locked)], index)
    assert result.report.documents_added == 2
    assert result.issues == ["locked.pdf: encrypted PDF (it needs a password to open); save an unprotected "
                             "copy (for example with qpdf --decrypt) and index that"]
    with Searcher(index) as searcher:
        hit = searcher.search("sourdough wild yeast ferment the flour", k=1, mode="bm25")[0]
        assert (hit.doc_id, hit.title, hit.location.label) == ("nature.pdf", "Nature and craft", "p. 2")
        hit = searcher.search("paddle blade stroke", k=1, mode="bm25")[0]
        assert (hit.doc_id, hit.location.label) == ("kayak.docx", "Kayaks › Paddling")


@pytest.mark.parametrize("order", [("notes.md", "notes.html"), ("notes.html", "notes.md")])
def test_uploads_left_out_on_purpose_are_named_and_not_kept(tmp_path: Path, order) -> None:
    """A source uploaded with the page made from it, and minified data: each named in the result
    and deleted again (as a skipped file is), whichever order the batch came in."""
    files = {"notes.md": b"# Glaciers\n\nGlaciers carve valleys into U shapes.\n",
             "notes.html": b"<html><body><main><h1>Glaciers</h1><p>Glaciers carve valleys into U shapes."
                           b"</p></main></body></html>",
             "data.json": b'{"terms": [' + b", ".join(b'"glacier%d"' % i for i in range(60)) + b"]}"}
    index = tmp_path / "index"
    result = index_uploads([(name, files[name]) for name in (*order, "data.json")], index)
    assert result.report.documents_added == 1 and result.issues == []
    assert result.left_out_files == ["data.json", "notes.md"]
    assert any(note.startswith("data.json left out: minified or machine-written") for note in result.left_out)
    assert any(note.startswith("1 source file left out beside the documents made from them (such as "
                               "notes.md, of notes.html)") for note in result.left_out)
    assert sorted(p.name for p in uploads_dir(index).iterdir()) == ["notes.html"]
