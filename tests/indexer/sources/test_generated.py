"""Files a tool wrote from other files: Sphinx's source copies beside their pages, minified
code and data, and what web pages are drawn with, are left out of a build with a warning that
names them; everything else stays."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from indexer.sources.generated import (
    markup_only_note,
    minified_note,
    page_assets,
    page_assets_note,
    page_of_source_copy,
    source_copies,
    sources_beside_documents,
    sphinx_example_downloads,
    sphinx_example_downloads_note,
    sphinx_index_pages,
    sphinx_module_pages,
    sphinx_module_pages_note,
)
from indexer.sources.readers import list_source_files, read_documents, read_file
from tests.indexer.helpers import write_corpus

PYTHON_HTML = Path("/usr/share/doc/python3.11/html")
PY7ZR_HTML = Path("/usr/share/doc/python-py7zr-doc/html")
GALLERY_HTML = Path("/usr/share/doc/python-sphinx-gallery-doc/html")
AMSMATH = Path("/usr/share/doc/texlive-doc/latex/amsmath")
PAGE = "<html><head><title>{0}</title></head><body><div role='main'><h1>{0}</h1><p>{1}</p></div></body></html>"


@pytest.mark.parametrize("copy, labels, page", [
    ("_sources/library/os.rst.txt", {"library/os.html"}, "library/os.html"),
    ("_sources/library/os.path.rst.txt", {"library/os.path.html"}, "library/os.path.html"),
    ("_sources/notes.md.txt", {"notes.html"}, "notes.html"),
    ("_sources/old.txt", {"old.html"}, "old.html"),  # Sphinx before 1.5: no source suffix
    ("_sources/os.path.txt", {"os.path.html"}, "os.path.html"),  # a .txt source named with a dot
    ("_sources/guide.rst.txt", {"guide/index.html"}, "guide/index.html"),  # the dirhtml builder
    ("_sources/changelog.rst.txt", {"changelog.html.gz"}, "changelog.html.gz"),  # Debian gzips
    ("docs/html/_sources/a.rst.txt", {"docs/html/a.html"}, "docs/html/a.html"),
    ("_sources/a.rst.txt", {"other.html"}, None),  # no page of its own: the only copy, kept
    ("_sources/a.rst.txt", {"docs/a.html"}, None),  # the page of another build
    ("notes/_sources.txt", {"notes.html"}, None),  # a file named so, not a folder
    ("_sources/a.rst", {"a.html"}, None),  # Sphinx's copies end in .txt
])
def test_a_source_copy_is_told_by_the_page_beside_it(copy, labels, page):
    assert page_of_source_copy(copy, frozenset(labels | {copy})) == page


def test_copies_are_grouped_by_their_sources_folder():
    labels = ["a.html", "_sources/a.rst.txt", "_sources/b.rst.txt",
              "api/html/x.html", "api/html/_sources/x.md.txt"]
    assert source_copies(labels) == {"_sources": {"_sources/a.rst.txt": "a.html"},
                                     "api/html/_sources": {"api/html/_sources/x.md.txt": "api/html/x.html"}}


@pytest.mark.parametrize("labels, left_out", [
    (["paper.tex", "paper.pdf"], {"paper.tex": "paper.pdf"}),
    (["doc/amsldoc.tex.gz", "doc/amsldoc.pdf"], {"doc/amsldoc.tex.gz": "doc/amsldoc.pdf"}),
    (["babelbib.dtx.gz", "babelbib.pdf"], {"babelbib.dtx.gz": "babelbib.pdf"}),  # a documented package
    (["survey.qmd", "survey.html"], {"survey.qmd": "survey.html"}),  # Quarto's render
    (["survey.Rmd", "survey.pdf"], {"survey.Rmd": "survey.pdf"}),  # knitr's
    (["api/fs.md", "api/fs.html", "api/fs.json.gz"], {"api/fs.md": "api/fs.html",
                                                      "api/fs.json.gz": "api/fs.html"}),
    (["analysis.ipynb", "analysis.html"], {"analysis.ipynb": "analysis.html"}),  # nbconvert
    (["data.json", "report.html"], {}),
    (["guide.rst", "guide.htm.gz"], {"guide.rst": "guide.htm.gz"}),
    (["Paper.TEX", "Paper.pdf"], {"Paper.TEX": "Paper.pdf"}),
    (["paper.tex", "draft.pdf"], {}),  # another name: not known to be its document
    (["src/paper.tex", "paper.pdf"], {}),  # another folder
    (["notes.md", "notes.pdf"], {}),  # Markdown's documents are HTML here
    (["paper.pdf"], {}),
    (["paper.tex"], {}),
])
def test_a_source_beside_the_document_made_from_it_is_told_by_name(labels, left_out):
    assert sources_beside_documents(labels, lambda label: 0.0) == left_out


@pytest.mark.parametrize("label, others, kind", [
    ("_static/basic.css", ["index.html"], "stylesheet"),
    ("_static/doctools.js", ["index.html"], "script"),  # readable, but the theme's code
    ("_static/py.svg", ["index.html"], "file"),
    ("docs/html/_images/flow.png", ["docs/html/logging.html.gz"], "picture"),  # Debian gzips pages
    ("Recipe_files/app.js", ["Recipe.html"], "script"),  # a browser's "Web page, complete"
    ("Recipe_files/ad-frame.html", ["Recipe.htm"], "file"),
    ("guide/diagram.png", ["guide/setup.html"], "picture"),  # a picture beside the page showing it
    ("theme/print.css", [], "stylesheet"),  # a stylesheet wherever it lies
    ("src/app.js", ["index.html"], None),  # code beside pages, not in an asset folder: kept
    ("_static/doctools.js", ["docs/index.html"], None),  # no page beside this _static
    ("Other_files/app.js", ["Recipe.html"], None),  # not the folder of a saved page
    ("scans/receipt.png", ["index.html"], None),  # no page in its folder: read (and reported)
    ("_downloads/example.py", ["index.html"], None),  # Sphinx's downloads are content
    ("_static/notes.txt", [], None),
    ("doctools.js", ["basic.css", "py.png"], None),  # `_static` indexed as a source of its own
])
def test_what_web_pages_are_drawn_with_is_told_by_the_folder(label, others, kind):
    assert page_assets([label, *others]).get(label) == kind


def test_a_sphinx_builds_index_pages_are_told_by_its_search_index_beside_them():
    build = ["html/searchindex.js", "html/index.html", "html/genindex.html", "html/genindex-A.html",
             "html/genindex-all.html", "html/py-modindex.html", "html/search.html", "html/objects.inv",
             "html/library/os.html", "html/library/search.html"]  # a page named so, in another folder
    assert sphinx_index_pages([*build, "blog/search.html", "blog/genindex.html"]) == [
        "html/genindex-A.html", "html/genindex-all.html", "html/genindex.html", "html/objects.inv",
        "html/py-modindex.html", "html/search.html"]
    assert sphinx_index_pages(["api/objects.inv.gz", "api/genindex.html.gz"]) == [  # Debian gzips
        "api/genindex.html.gz", "api/objects.inv.gz"]


def test_a_sphinx_builds_module_source_pages_are_told_by_its_search_index_beside_them():
    build = ["html/objects.inv", "html/api.html", "html/_modules/index.html", "html/_modules/pkg/core.html.gz",
             "html/_modules/pkg/sub/io.html", "html/_modules/notes.txt"]  # not a page: kept
    assert sphinx_module_pages([*build, "blog/_modules/x.html"]) == [  # no build beside it: kept
        "html/_modules/index.html", "html/_modules/pkg/core.html.gz", "html/_modules/pkg/sub/io.html"]
    assert sphinx_module_pages(["pkg/core.html", "index.html"]) == []  # _modules given as the source
    note = sphinx_module_pages_note(sphinx_module_pages(build))
    assert note.startswith("3 files left out: the highlighted source code of the modules a Sphinx build "
                           "documents (such as html/_modules/pkg/core.html.gz, its \"[source]\" pages)")
    assert note.endswith("to search the code, index html/_modules as a source of its own")


@pytest.mark.skipif(not PY7ZR_HTML.is_dir(), reason="needs python-py7zr-doc (.ci/run installs it)")
def test_the_py7zr_manuals_module_source_pages_are_left_out_and_named():
    issues: list = []
    labels = {path.relative_to(PY7ZR_HTML).as_posix() for path in list_source_files(PY7ZR_HTML, issues.append)}
    modules = sorted(path.relative_to(PY7ZR_HTML).as_posix() for path in (PY7ZR_HTML / "_modules").rglob("*.html"))
    assert len(modules) >= 5 and not labels & set(modules) and "api.html" in labels
    named = [issue for issue in issues if "highlighted source code" in issue.problem]
    assert len(named) == 1 and sorted(named[0].files) == modules
    inside = list_source_files(PY7ZR_HTML / "_modules", issues.append)  # given as a source: read
    assert len(inside) == len(modules)


def test_an_examples_script_and_notebook_offered_for_download_beside_its_page_are_told():
    build = ["html/searchindex.js", "html/auto_examples/plot_sin.html", "html/_downloads/a1/plot_sin.py",
             "html/_downloads/b2/plot_sin.ipynb.gz", "html/_downloads/c3/talk.pdf",  # no page of its name
             "html/_downloads/d4/helpers.py", "html/_downloads/e5/auto_examples_python.zip"]
    assert sphinx_example_downloads([*build, "other/_downloads/f6/plot_sin.py"]) == {  # not in the build
        "html/_downloads/a1/plot_sin.py": "html/auto_examples/plot_sin.html",
        "html/_downloads/b2/plot_sin.ipynb.gz": "html/auto_examples/plot_sin.html"}
    assert sphinx_example_downloads(["a1/plot_sin.py", "plot_sin.html"]) == {}  # no Sphinx build
    note = sphinx_example_downloads_note(sphinx_example_downloads(build))
    assert note.startswith("2 files left out: the example scripts and notebooks a Sphinx build offers for "
                           "download beside the pages that show them (such as html/_downloads/a1/plot_sin.py, "
                           "of html/auto_examples/plot_sin.html)")
    assert note.endswith("to search them, index html/_downloads as a source of its own")


@pytest.mark.skipif(not GALLERY_HTML.is_dir(), reason="needs python-sphinx-gallery-doc")
def test_sphinx_gallerys_manual_keeps_each_example_once():
    issues: list = []
    labels = {path.relative_to(GALLERY_HTML).as_posix() for path in list_source_files(GALLERY_HTML, issues.append)}
    downloads = {path.relative_to(GALLERY_HTML).as_posix() for path in (GALLERY_HTML / "_downloads").rglob("*")
                 if path.is_file()}
    kept = sorted(labels & downloads)
    assert kept == sorted(label for label in downloads if label.endswith(".zip")), "each .py and .ipynb has its page"
    assert "auto_examples/plot_0_sin.html" in labels


def test_the_assets_warning_counts_each_kind_and_says_how_to_search_one():
    note = page_assets_note({"_static/a.css": "stylesheet", "_static/b.css": "stylesheet",
                             "_static/c.js": "script", "d.png": "picture"})
    assert note.startswith("4 files left out that web pages are drawn with (2 stylesheets, 1 script, "
                           "1 picture; such as _static/a.css)")
    assert note.endswith("index that file as a source of its own (a picture: extract its text to a .txt "
                         "file first)")
    assert page_assets_note({"_static/a.css": "stylesheet"}).endswith("index that file as a source of its own")


def test_a_source_edited_after_its_document_was_made_is_kept():
    mtimes = {"paper.tex": 200.0, "paper.pdf": 100.0, "old.tex": 50.0, "old.pdf": 100.0,
              "gone.tex": 50.0, "gone.pdf": math.nan}  # a document whose time is unknown: both kept
    assert sources_beside_documents(mtimes, mtimes.__getitem__) == {"old.tex": "old.pdf"}


def test_a_file_gone_while_the_folder_is_listed_has_an_unknown_time(tmp_path):
    from indexer.sources.readers import _mtime

    assert math.isnan(_mtime(tmp_path / "deleted meanwhile.pdf"))


@pytest.mark.parametrize("name, text, left_out", [
    ("searchindex.js", 'Search.setIndex({"docnames": ["about", "bugs"]' + ', "x"' * 200 + "})", True),
    ("app.min.css", "body{margin:0}" * 40 + "\n" + "p{color:red}" * 40, True),
    ("glossary.json", json.dumps({"term": "<p>An object that supports the buffer protocol</p>" * 5}), True),
    ("bundle.js.map", '{"version":3,"mappings":"' + "AAAA;" * 100 + '"}', True),
    ("doctools.js", "function highlight(term) {\n  return term.toLowerCase();\n}\n" * 20, False),
    ("basic.css", "div.body {\n    min-width: 360px;\n}\n" * 20, False),
    ("config.json", json.dumps({"name": "x", "items": list(range(30))}, indent=2), False),
    ("tiny.json", '{"a": 1}', False),
    # Prose may run a paragraph a line: only code and data are judged by their lines.
    ("notes.txt", "A paragraph written on one long line. " * 100, False),
    ("page.html", "<p>" + "A paragraph written on one long line. " * 100 + "</p>", False),
])
def test_minified_code_and_data_are_told_by_their_lines(name, text, left_out):
    note = minified_note(name, text)
    assert (note is not None) == left_out
    if left_out:
        assert "minified or machine-written" in note and "110 characters" in note


def test_a_minified_file_says_how_long_its_line_is_and_what_to_index_instead():
    note = minified_note("data.json", "[" + "1, " * 1000 + "1]")
    assert "one line of 3,003 characters" in note and "JSON Lines (.jsonl)" in note
    note = minified_note("app.js", ("x" * 300 + "\n") * 3)
    assert "3 lines of 301 characters on average" in note and "readable source" in note


DEVHELP = ('<?xml version="1.0" encoding="utf-8" standalone="no"?>\n'
           '<book xmlns="http://www.devhelp.net/book" title="Python Documentation" link="index.html">\n'
           '<chapters>\n' + "".join(f'<sub name="{i}. Using the glacier module" link="g{i}.html"/>\n'
                                      for i in range(40)) + '</chapters>\n</book>\n')
DOCBOOK = ('<?xml version="1.0"?>\n<!DOCTYPE article PUBLIC "-//OASIS//DTD DocBook XML V4.1.2//EN" '
           '"http://www.oasis-open.org/docbook/xml/4.1.2/docbookx.dtd">\n<article id="spec">'
           '<title>Shared MIME-info Database</title><sect1><title>Introduction</title><para>Many '
           'programs and desktops use the MIME system to represent the types of files; '
           '<emphasis>glob</emphasis> patterns match their names.</para></sect1></article>\n')


@pytest.mark.parametrize("text, left_out", [
    (DEVHELP, True),  # a help browser's index: every name in an attribute
    ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M8 0 L16 8"/></svg>', True),
    (DOCBOOK, False),  # a manual in DocBook: its words between tags
    ('<?xml version="1.0"?><service-group><name>Remote terminal on %h</name>'
     '<service><type>_ssh._tcp</type><port>22</port></service></service-group>', False),
    ('<?xml version="1.0"?><doc><p>A manual cut short where its text runs on', False),  # truncated
    ("Plain notes that mention <tags> in passing, with many words around them.", False),  # not XML
    ('<?xml version="1.0" encoding="ISO-8859-1"?><p>Caf\u00e9 ouvert le matin</p>', False),
])
def test_xml_is_left_out_only_when_its_words_are_all_in_its_tags(text, left_out):
    note = markup_only_note(text)
    assert (note is not None) == left_out
    if left_out:
        assert "XML whose words lie in its tags and attributes (0 of" in note


def sphinx_build(folder: Path) -> Path:
    """A Sphinx HTML build as it ships: pages, their source copies, a search index, a theme."""
    return write_corpus(folder, {
        "index.html": PAGE.format("Welcome", "Start with the tutorial on glaciers."),
        "tutorial.html": PAGE.format("Tutorial", "Glaciers carve valleys into U shapes."),
        "_sources/index.rst.txt": "Welcome\n=======\n\nStart with the :doc:`tutorial` on glaciers.\n",
        "_sources/tutorial.rst.txt": "Tutorial\n========\n\nGlaciers carve valleys into U shapes.\n",
        "searchindex.js": 'Search.setIndex({"docnames": ["index", "tutorial"], "terms": {'
                          + ", ".join(f'"glacier{i}": [0, 1]' for i in range(60)) + "}})",
        "_static/doctools.js": "// Sphinx's helpers\nfunction highlight(term) {\n  return term;\n}\n",
        "_static/basic.css": "h1 {\n    font-size: 160%;\n    color: #20435c;\n}\n",
        "genindex.html": PAGE.format("Index", "glacier (module), [1]; tutorial (glaciers)"),
        "_downloads/9f/tutorial.py": "# Tutorial\nprint('glaciers carve valleys')\n",
        "_modules/glacier.html": PAGE.format("glacier", "def carve(valley):\n    \"\"\"Carve a U shape.\"\"\""),
        "manual.devhelp2": DEVHELP,
        "notes.md": "# Notes\n\nGlaciers carve valleys.\n",
        "notes.html": PAGE.format("Notes", "Glaciers carve valleys."),
    })


def test_a_sphinx_build_is_indexed_once_with_one_warning_per_kind(tmp_path, tiny_model):
    source = sphinx_build(tmp_path / "html")
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model,
                                     show_progress=False))
    assert report.total_documents == 3  # the three pages
    notes = "\n".join(report.warnings)
    assert "2 files left out that web pages are drawn with (1 stylesheet, 1 script; such as " \
        "_static/basic.css)" in notes
    assert "\n1 file left out: the index pages, search page and inventory a Sphinx build makes of its " \
        "pages (such as genindex.html)" in "\n" + notes
    assert "_sources: 2 files left out: Sphinx's copies" in notes
    assert "index _sources as a source of its own" in notes
    assert "searchindex.js: minified or machine-written" in notes
    assert "manual.devhelp2: XML whose words lie in its tags" in notes
    assert "\n1 source file left out beside the documents made from them (such as notes.md, of notes.html)" \
        in "\n" + notes  # a note about files across the source, not prefixed "."
    assert report.issues == []  # left out on purpose: warnings, so --strict still builds
    strict = build_index(IndexConfig(source=source, index_dir=tmp_path / "strict", model=tiny_model,
                                     show_progress=False, strict=True))
    assert strict.total_documents == 3


def test_the_sources_folder_on_its_own_is_indexed_whole(tmp_path):
    source = sphinx_build(tmp_path / "html")
    docs = [doc.doc_id for doc in read_documents(source / "_sources")]
    assert docs == ["index.rst.txt", "tutorial.rst.txt"]


def test_an_index_built_before_the_rules_drops_what_they_leave_out(tmp_path, tiny_model,
                                                                     monkeypatch):
    from indexer.sources import generated

    source = sphinx_build(tmp_path / "html")
    cfg = IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False)
    with monkeypatch.context() as patch:  # the rules as they were: nothing generated known
        patch.setattr(generated, "source_copies", lambda labels: {})
        patch.setattr(generated, "minified_note", lambda name, text: None)
        patch.setattr(generated, "markup_only_note", lambda text: None)
        patch.setattr(generated, "sources_beside_documents", lambda labels, mtime: {})
        patch.setattr(generated, "page_assets", lambda labels: {})
        patch.setattr(generated, "sphinx_index_pages", lambda labels: [])
        patch.setattr(generated, "sphinx_module_pages", lambda labels: [])
        patch.setattr(generated, "sphinx_example_downloads", lambda labels: {})
        assert build_index(cfg).total_documents == 13
    report = build_index(cfg)
    assert (report.total_documents, report.documents_removed) == (3, 10)


@pytest.mark.skipif(not PYTHON_HTML.is_dir(), reason="needs python3.11-doc (.ci/run installs it)")
def test_the_python_manual_as_debian_ships_it():
    """The real build: every source copy has its page, its index pages and inventory are told, its
    theme (`_static`: stylesheets, scripts, icons, the glossary's data) and pictures (`_images`)
    are what its pages are drawn with, of the
    rest only the search index is minified, and of its XML only the Devhelp index is markup
    without text."""
    issues: list = []
    files = list_source_files(PYTHON_HTML, issues.append)
    labels = {path.relative_to(PYTHON_HTML).as_posix() for path in files}
    copied = sum(1 for path in (PYTHON_HTML / "_sources").rglob("*.txt"))
    assert copied > 400 and not any(label.startswith("_sources/") for label in labels)
    copies = [issue.problem for issue in issues if issue.path == "_sources"]
    assert len(copies) == 1 and copies[0].startswith(f"{copied:,} files left out")
    theme = sorted(path.relative_to(PYTHON_HTML).as_posix() for folder in ("_static", "_images")
                   for path in (PYTHON_HTML / folder).rglob("*")
                   if path.is_file() and not path.is_symlink())  # jQuery: a link out of the source
    assert len(theme) > 20 and not labels & set(theme)
    drawn_with = [issue for issue in issues if "that web pages are drawn with" in issue.problem]
    assert len(drawn_with) == 1 and sorted(drawn_with[0].files) == theme
    assert drawn_with[0].problem.startswith(f"{len(theme)} files left out")
    index_pages = ["genindex-all.html", *(f"genindex-{c}.html" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ_"),
                   "genindex-Symbols.html", "genindex.html", "objects.inv", "py-modindex.html", "search.html"]
    assert not labels & set(index_pages)
    told = [issue.files for issue in issues if "index pages, search page and inventory" in issue.problem]
    assert told == [tuple(sorted(index_pages))]
    minified = sorted(label for label in labels if label.endswith((".js", ".css", ".json"))
                      and minified_note(label, (PYTHON_HTML / label).read_text(encoding="utf-8")))
    assert minified == ["searchindex.js"]
    xml = sorted(label for label in labels if label.endswith((".xml", ".svg", ".devhelp.gz")))
    notes: list = []
    kept = [label for label in xml if list(read_file(PYTHON_HTML / label, label, notes.append))]
    markup_only = ["python3.11.devhelp.gz"]
    assert sorted(issue.path for issue in notes if "XML whose words" in issue.problem) == markup_only
    assert kept == [label for label in xml if label not in markup_only]


@pytest.mark.skipif(not AMSMATH.is_dir(), reason="needs texlive-latex-base-doc (.ci/run installs it)")
def test_tex_lives_amsmath_manuals_are_indexed_as_their_pdfs():
    issues: list = []
    labels = {path.relative_to(AMSMATH).as_posix() for path in list_source_files(AMSMATH, issues.append)}
    assert {"amsldoc.pdf", "subeqn.pdf", "technote.pdf", "testmath.pdf"} <= labels
    assert not any(label.startswith(("amsldoc.tex", "subeqn.tex", "technote.tex", "testmath.tex"))
                   for label in labels)
    notes = [issue.problem for issue in issues if "beside the documents made from them" in issue.problem]
    assert len(notes) == 1 and notes[0].startswith("4 source files left out")
