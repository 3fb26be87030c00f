"""Files a tool wrote from other files, or the files it wrote them from, where a folder holds both:
the source copies a Sphinx HTML build keeps beside its pages, a LaTeX, Markdown or reST source
beside the PDF or HTML made from it, minified code and data, and XML whose words all lie in its
tags (an index for a help browser, a drawing), the index pages a Sphinx build makes of its pages,
the pages of module source code it shows behind "[source]" links, the example scripts and
notebooks it offers for download beside the pages that show them, and what web pages are drawn
with (stylesheets, a page's pictures, its asset folders). Of a source and its document, the
document is kept: it is what people read, and a PDF's hits have pages.

Measured on the Python 3.11 manual as Debian ships it (python3.11-doc: 1,050 files, 48,683
passages with the default model): Sphinx's `_sources/` copies made 17,515 passages (every page
a second time, in reST), `searchindex.js` (one line of 3.6 MB) 9,420 and `_static/glossary.json`
(one line of 140 kB) 308: 56% of what the build embedded, and the first ten hits of a question
held three to five pages twice, once per copy (five questions asked). With those left out,
`python3.11.devhelp.gz` (GNOME Devhelp's index of the manual, every name in an attribute) was
2,726 of the 21,440 passages left. The rules go by what the folder and the file themselves show,
and the build names what each left out and why.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import PurePosixPath
from typing import cast

import lxml.etree as etree

# Sphinx (html_copy_source, on by default) copies each page's source to
# _sources/<docname><source suffix>.txt for its "Show Source" link; older Sphinx wrote
# _sources/<docname>.txt. The page beside it is <docname>.html (the dirhtml builder:
# <docname>/index.html), gzip-compressed in some packages.
SPHINX_SOURCES = "_sources"
_PAGE_NAMES = (".html", ".htm", ".xhtml", "/index.html")

# A document beside the source it was made from, under the same name: LaTeX's PDF, the HTML of
# Markdown or reST, of a Jupyter notebook (nbconvert), or of the JSON a documentation tool writes
# beside it (Node.js's API: api/fs.md, api/fs.html and api/fs.json, all from the .md). Under
# /usr/share/doc: 109 .tex files beside their PDFs (TeX Live's manuals; one of the PDFs older
# than its source) and a documented package's .dtx (babelbib: 856 passages of its own), 64 .md
# and 65 .json beside their .html; searched with the .json kept, 3 or 4 of the first 8 hits of a
# question on Node.js's folder were a page's .json twin. The source is left out only when its
# document is not older than it, so an edit not yet compiled is found.
# R Markdown and Quarto render beside their source as well, to HTML or PDF.
_HTML_TWINS = (".md", ".markdown", ".rst", ".ipynb", ".json", ".rmd", ".qmd")
MADE_FROM = {".pdf": (".tex", ".ltx", ".dtx", ".rmd", ".qmd"), ".html": _HTML_TWINS, ".htm": _HTML_TWINS}

# Code and data that bundlers and generators write on one long line. GitHub's linguist calls a
# .js or .css file minified when its lines average over 110 characters (`Linguist::Blob#minified_files?`);
# measured here: every hand-written .js/.css/.json under /usr/share/doc averages 66 characters a
# line or fewer; Sphinx's searchindex.js and glossary.json and a minified stylesheet run 7,922 or
# more, and Node.js's API .json files, written from its Markdown, 12 to 351 (12 of 65 over 110).
MINIFIED_SUFFIXES = (".js", ".mjs", ".cjs", ".css", ".json", ".js.map", ".css.map")
MINIFIED_LINE_CHARS = 110


def _split_at_sources(label: str) -> tuple[str, str] | None:
    """(the folder holding `label`'s innermost `_sources`, the path below it), or None."""
    parts = PurePosixPath(label).parts
    if SPHINX_SOURCES not in parts[:-1]:
        return None
    at = len(parts) - 1 - parts[::-1].index(SPHINX_SOURCES)
    return "/".join(parts[:at]), "/".join(parts[at + 1:])


def page_of_source_copy(label: str, labels: frozenset[str]) -> str | None:
    """The page in `labels` that the Sphinx source copy `label` was copied for, else None.

    `label` and `labels` are paths within the source, '/'-separated, as a build names files
    (a trailing `.gz` on the page's name is allowed)."""
    split = _split_at_sources(label)
    if split is None or not label.endswith(".txt"):
        return None
    root, copied = split[0], split[1][: -len(".txt")]
    docnames = {copied, str(PurePosixPath(copied).with_suffix(""))} if copied else set()
    for docname in sorted(docnames):
        for page in _PAGE_NAMES:
            name = f"{root}/{docname}{page}" if root else f"{docname}{page}"
            for candidate in (name, name + ".gz"):
                if candidate in labels:
                    return candidate
    return None


def source_copies(labels: Iterable[str]) -> dict[str, dict[str, str]]:
    """The Sphinx source copies among `labels`, by the `_sources` folder that holds them: each
    copy with the page it was copied for."""
    known = frozenset(labels)
    by_folder: dict[str, dict[str, str]] = {}
    for label in sorted(known):
        page = page_of_source_copy(label, known)
        if page is not None:
            root = cast(tuple[str, str], _split_at_sources(label))[0]
            folder = f"{root}/{SPHINX_SOURCES}" if root else SPHINX_SOURCES
            by_folder.setdefault(folder, {})[label] = page
    return by_folder


def _content(label: str) -> str:
    return label[: -len(".gz")] if label.lower().endswith(".gz") else label


def sources_beside_documents(labels: Iterable[str], mtime: Callable[[str], float]) -> dict[str, str]:
    """The sources among `labels` that lie beside a document made from them (`MADE_FROM`: the same
    folder and name, either gzip-compressed or not) not older than them: source -> document.
    `mtime` gives a label's modification time; NaN where it is unknown keeps both."""
    by_name: dict[tuple[str, str], str] = {}
    for label in labels:
        stem, suffix = _stem_and_suffix(_content(label))
        by_name.setdefault((stem, suffix), label)
    found: dict[str, str] = {}
    for (stem, suffix), document in sorted(by_name.items()):
        for source_suffix in MADE_FROM.get(suffix, ()):
            source = by_name.get((stem, source_suffix))
            if source is not None and mtime(document) >= mtime(source):
                found[source] = document
    return dict(sorted(found.items()))


def _stem_and_suffix(name: str) -> tuple[str, str]:
    path = PurePosixPath(name)
    return str(path.with_suffix("")) if path.suffix else name, path.suffix.lower()


def sources_beside_documents_note(sources: dict[str, str]) -> str:
    """The warning for the sources left out beside their documents (`sources`: source -> document)."""
    example, document = next(iter(sources.items()))
    files = f"{len(sources):,} source files" if len(sources) != 1 else "1 source file"
    return (f"{files} left out beside the documents made from them (such as {example}, of "
            f"{document}), which would answer every question twice; a source edited after its "
            "document was made is indexed too; to search the sources themselves, index one as a "
            "source of its own")


def source_copies_note(folder: str, copies: dict[str, str]) -> str:
    """The warning for the source copies of one `_sources` folder (`copies`: copy -> page)."""
    example, page = next(iter(copies.items()))
    files = f"{len(copies):,} files" if len(copies) != 1 else "1 file"
    return (f"{files} left out: Sphinx's copies of the sources of pages indexed "
            f"as HTML beside them (such as {example}, of {page}), which would answer every "
            f"question twice; to search the sources themselves, index {folder} as a source of "
            "its own")


# The pages a Sphinx build makes of the others, in the folder that holds its search index
# (`searchindex.js`, or its inventory `objects.inv`): the general index (`genindex.html`, split by
# letter into `genindex-A.html`... with `genindex-all.html` holding them all again), the domain
# indices (`py-modindex.html`), the search page (a line of text without JavaScript), and the
# inventory itself (zlib-compressed, for intersphinx). In the Python 3.11 manual the index
# pages hold 1.4 MB of text, each entry twice (its letter's page and the page of all): names
# with the pages they are on, which answer a question with a list of names.
SPHINX_BUILD_MARKS = ("searchindex.js", "objects.inv")
_SPHINX_INDEX_PAGE = re.compile(r"(genindex(-[^/]+)?|[a-z]+-modindex|search)\.html?|objects\.inv", re.IGNORECASE)


def _sphinx_builds(labels: list[str]) -> set[str]:
    """The folders among `labels` that hold a Sphinx build: a `SPHINX_BUILD_MARKS` file."""
    return {_folder(label) for label in labels if PurePosixPath(_content(label)).name in SPHINX_BUILD_MARKS}


def sphinx_index_pages(labels: Iterable[str]) -> list[str]:
    """The index pages, search page and inventory of the Sphinx builds among `labels` (paths
    within the source, '/'-separated; a trailing `.gz` allowed): those in a folder holding a
    `SPHINX_BUILD_MARKS` file."""
    known = sorted(labels)
    builds = _sphinx_builds(known)
    return [label for label in known if _folder(label) in builds
            and _SPHINX_INDEX_PAGE.fullmatch(PurePosixPath(_content(label)).name)]


def sphinx_index_pages_note(pages: list[str]) -> str:
    """The warning for the index pages of Sphinx builds (`pages`)."""
    files = f"{len(pages):,} files" if len(pages) != 1 else "1 file"
    return (f"{files} left out: the index pages, search page and inventory a Sphinx build makes "
            f"of its pages (such as {pages[0]}), lists of names that would answer a question "
            "with a list of links; to search one, index that file as a source of its own")


# The pages of Sphinx's viewcode extension, in the `_modules` folder of a build (one holding a
# `SPHINX_BUILD_MARKS` file): each documented module's source code, highlighted, behind the
# API pages' "[source]" links, and `_modules/index.html` listing them. Their docstrings are the
# API pages' text again, beside the code. In py7zr's manual (python-py7zr-doc) they are 6 of its 25
# files and 246 of its 525 passages. `bench/bench_left_out.py` counts the hits of the files this
# and the other rules leave out (py7zr's, sphinxcontrib-bibtex's and sphinx-gallery's manuals:
# 42 of 80, 24 of 50 and 10 of 50 of the first ten hits of their questions, hybrid, in every one).
SPHINX_MODULES = "_modules"


def sphinx_module_pages(labels: Iterable[str]) -> list[str]:
    """The viewcode pages of the Sphinx builds among `labels` (paths within the source, '/'-separated;
    a trailing `.gz` allowed): pages below a `_modules` folder that lies beside a `SPHINX_BUILD_MARKS`
    file."""
    known = sorted(labels)
    builds = _sphinx_builds(known)
    found = []
    for label in known:
        parts = PurePosixPath(label).parts
        if SPHINX_MODULES not in parts[:-1] or not _is_page(label):
            continue
        at = parts.index(SPHINX_MODULES)
        if ("/".join(parts[:at]) or ".") in builds:
            found.append(label)
    return found


def sphinx_module_pages_note(pages: list[str]) -> str:
    """The warning for the viewcode pages of Sphinx builds (`pages`)."""
    files = f"{len(pages):,} files" if len(pages) != 1 else "1 file"
    example = next((page for page in pages if not _content(page).endswith("/index.html")), pages[0])
    folder = example[: example.index(SPHINX_MODULES) + len(SPHINX_MODULES)]
    return (f"{files} left out: the highlighted source code of the modules a Sphinx build documents "
            f"(such as {example}, its \"[source]\" pages), whose docstrings its API pages already hold, "
            f"so that code would answer questions beside them; to search the code, index {folder} as a "
            "source of its own")


# Sphinx copies each file a page offers for download (its `:download:` role) to
# `_downloads/<hash>/<name>` of the build. sphinx-gallery, which builds the example galleries of
# many scientific Python manuals, offers each example's script and notebook so: the page
# `auto_examples/plot_sin.html` shows the code and output of `_downloads/<hash>/plot_sin.py` and
# `.ipynb`, which would answer every question about it twice more. A download of such a kind whose
# name is a page's of the same build is left out; any other download (a talk's slides, a PDF) stays.
SPHINX_DOWNLOADS = "_downloads"
EXAMPLE_SUFFIXES = (".py", ".ipynb")


def sphinx_example_downloads(labels: Iterable[str]) -> dict[str, str]:
    """The example scripts and notebooks among `labels` that a Sphinx build offers for download
    beside the page showing them (see `SPHINX_DOWNLOADS`): download -> page."""
    known = sorted(labels)
    builds = _sphinx_builds(known)
    pages: dict[tuple[str, str], str] = {}
    for label in known:
        if _is_page(label):
            for root in _roots_above(label, builds):
                pages.setdefault((root, _stem_and_suffix(PurePosixPath(_content(label)).name)[0]), label)
    found: dict[str, str] = {}
    for label in known:
        parts = PurePosixPath(label).parts
        stem, suffix = _stem_and_suffix(_content(parts[-1]))
        if SPHINX_DOWNLOADS not in parts[:-1] or suffix not in EXAMPLE_SUFFIXES:
            continue
        root = "/".join(parts[: parts.index(SPHINX_DOWNLOADS)]) or "."
        page = pages.get((root, stem))
        if page is not None:
            found[label] = page
    return found


def _roots_above(label: str, builds: set[str]) -> Iterator[str]:
    """The build folders among `builds` that hold `label`, at any depth."""
    parent = PurePosixPath(label).parent
    for folder in (parent, *parent.parents):
        if str(folder) in builds:
            yield str(folder)


def sphinx_example_downloads_note(downloads: dict[str, str]) -> str:
    """The warning for the example downloads of Sphinx builds (`downloads`: download -> page)."""
    example, page = next(iter(downloads.items()))
    files = f"{len(downloads):,} files" if len(downloads) != 1 else "1 file"
    folder = example[: example.index(SPHINX_DOWNLOADS) + len(SPHINX_DOWNLOADS)]
    return (f"{files} left out: the example scripts and notebooks a Sphinx build offers for download "
            f"beside the pages that show them (such as {example}, of {page}), which would answer every "
            f"question twice; to search them, index {folder} as a source of its own")


# What web pages are drawn with, where a folder of pages shows it: Sphinx's `_static` (its theme's
# stylesheets, scripts and icons) and `_images` beside the pages of a build, a browser's
# `<page>_files` beside the `<page>.html` it saved ("Web page, complete"), the pictures in a
# folder of pages, and stylesheets wherever they lie. Measured on a mix of 282 files under
# /usr/share/doc (the py7zr manual's Sphinx build among them): with them indexed, its theme's
# stylesheets ranked first for "how to change the font size and colour of headings" and "search
# box highlight words", and third for "line height and margins of the page" (above LaTeX's
# geometry manual); in the Python 3.11 manual `_static` holds 9 readable scripts of the theme's
# (a copy button, a menu, the search page's code). A file given as the source itself is read,
# and so is an asset folder given as a source of its own (but for its stylesheets).
# `bench/bench_left_out.py` counts both rules' files among the first 10 hits of questions,
# indexed against left out (BENCHMARKS.md).
ASSET_FOLDERS = ("_static", "_images")
SAVED_PAGE_FOLDER = "_files"
STYLESHEETS = (".css", ".css.map", ".scss", ".sass", ".less")
PICTURES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".ico", ".tif", ".tiff")
_PAGE_SUFFIXES = (".html", ".htm", ".xhtml")


def _is_page(label: str) -> bool:
    return _content(label).lower().endswith(_PAGE_SUFFIXES)


def page_assets(labels: Iterable[str]) -> dict[str, str]:
    """What web pages are drawn with among `labels` (paths within the source, '/'-separated):
    each such file with its kind ("stylesheet", "script", "picture" or "file").

    A file is one when it is a stylesheet (`STYLESHEETS`), a picture (`PICTURES`) in a folder
    that holds a page, or any file below a page's asset folder: `_static` or `_images` in a
    folder that holds a page (Sphinx), `<name>_files` beside `<name>.html` or `.htm` (a browser's
    saved page)."""
    known = sorted(labels)
    pages = [label for label in known if _is_page(label)]
    page_folders = {_folder(label) for label in pages}
    page_stems = {str(PurePosixPath(_content(label)).with_suffix("")) for label in pages}
    found: dict[str, str] = {}
    for label in known:
        parts = PurePosixPath(label).parts
        name = _content(parts[-1]).lower()
        in_assets = any(
            (part in ASSET_FOLDERS and "/".join(parts[:at] or (".",)) in page_folders)
            or (part.endswith(SAVED_PAGE_FOLDER) and "/".join((*parts[:at], part[: -len(SAVED_PAGE_FOLDER)]))
                in page_stems)
            for at, part in enumerate(parts[:-1]))
        picture = name.endswith(PICTURES)
        if in_assets or name.endswith(STYLESHEETS) or (picture and _folder(label) in page_folders):
            found[label] = ("stylesheet" if name.endswith(STYLESHEETS) else "picture" if picture
                            else "script" if name.endswith((".js", ".mjs", ".cjs", ".js.map")) else "file")
    return found


def _folder(label: str) -> str:
    return str(PurePosixPath(label).parent)


def page_assets_note(assets: dict[str, str]) -> str:
    """The warning for the files web pages are drawn with (`assets`: file -> kind)."""
    counts = Counter(assets.values())
    kinds = ", ".join(f"{counts[kind]:,} {kind}{'s' if counts[kind] != 1 else ''}"
                      for kind in ("stylesheet", "script", "picture", "file") if kind in counts)
    example = next(iter(assets))
    fix = "index that file as a source of its own" + (
        " (a picture: extract its text to a .txt file first)" if "picture" in counts else "")
    return (f"{len(assets):,} file{'s' if len(assets) != 1 else ''} left out that web pages are drawn "
            f"with ({kinds}; such as {example}): how the pages look, not text to search; to search "
            f"one, {fix}")


def minified_note(name: str, text: str) -> str | None:
    """Why the file `name` holding `text` is left out as minified code or data, else None."""
    if not name.lower().endswith(MINIFIED_SUFFIXES):
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    average = len(text) / max(lines, 1)
    if average <= MINIFIED_LINE_CHARS:
        return None
    shape = (f"one line of {len(text):,} characters" if lines == 1 else
             f"{lines:,} lines of {average:,.0f} characters on average")
    fix = ("to index its records, write them as JSON Lines (.jsonl), a document a line"
           if name.lower().endswith(".json") else
           "index the readable source it was made from instead")
    return (f"minified or machine-written code or data ({shape}; over {MINIFIED_LINE_CHARS} "
            f"characters a line on average): not text to search; {fix}")


# XML (not HTML: that is read for its main content) whose words lie in its tags and attributes
# rather than between them. Measured on the XML files under /usr/share/doc: the share of their
# words that lie between tags is 0.00 for Devhelp indexes (python3.11.devhelp.gz,
# libxslt.devhelp2) and icons (py.svg), 0.03 for an XML-DSig template, 0.06 for a Graphviz
# drawing with labels, 0.10-0.48 for service and signature examples, 0.65-0.86 for DocBook
# manuals and specifications. Only the first kind is left out: under 1 word in 100.
MARKUP_TEXT_SHARE = 0.01
_XML_START = re.compile(r"\ufeff?\s*<(\?xml|svg\b|!DOCTYPE)", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{2,}")


def markup_only_note(text: str) -> str | None:
    """Why the XML `text` is left out as markup without text, else None (not XML, or with text
    between its tags). Entities are not resolved and nothing is fetched."""
    if _XML_START.match(text[:1024]) is None:
        return None
    parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=True)
    try:
        root = etree.fromstring(text.encode("utf-8", "surrogatepass"), parser)
    except (etree.LxmlError, ValueError):
        return None  # not XML after all: read as text
    if root is None:
        return None
    words = len(_WORD.findall(text))
    between = len(_WORD.findall(" ".join(root.itertext())))
    if words == 0 or between >= MARKUP_TEXT_SHARE * words:
        return None
    return (f"XML whose words lie in its tags and attributes ({between:,} of {words:,} between "
            "tags): an index, a drawing or data, not text to search; to search its attribute "
            "values, extract them to a .txt file first")
