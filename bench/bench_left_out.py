"""What a documentation folder's own machinery costs a search: hits from a Sphinx build's index
pages (`genindex-*.html`, `py-modindex.html`, `search.html`), from its module source pages
(viewcode's `_modules/`: `indexer.sources.generated.sphinx_module_pages`), from the example scripts
and notebooks it offers for download beside their pages (`sphinx_example_downloads`) and from what
its pages are drawn with (stylesheets, scripts, pictures: `indexer.sources.generated.page_assets`), with
those files indexed (the peer: the rules as they were before 2026-11-29) and left out (the rules
now), in one run on the same index.

Each folder is built once with the two rules off, its questions asked in every mode, then built
again with the rules on (a build that only removes documents: nothing is embedded again) and
asked again. The table gives the passages each way and, per mode, how many of the first 10 hits
of the questions came from the files the rules leave out, and in how many questions.

The questions are worded as a user asks them, and judge nothing: a hit from an index page or a
stylesheet is counted wherever it ranks. The Python manual's were written before any search ran;
three of py7zr's are those that found the problem (see the notes the table is recorded with); those of
sphinxcontrib-bibtex's and sphinx-gallery's were written before any search of them ran. Python 3.11's
manual as Debian ships it (python3.11-doc), py7zr's (python-py7zr-doc), whose theme holds
stylesheets and a script, and sphinxcontrib-bibtex's and sphinx-gallery's
(python-sphinxcontrib.bibtex-doc, python-sphinx-gallery-doc), built with viewcode.

    python bench/bench_left_out.py [--work DIR] [--no-record]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer import IndexConfig, build_index  # noqa: E402
from indexer.sources import generated  # noqa: E402
from search import Searcher  # noqa: E402

FOLDERS = {
    "python3.11 manual": (Path("/usr/share/doc/python3.11/html"), (
        "how do I read a file line by line", "sort a list of dictionaries by a key",
        "what is a context manager", "run a shell command and capture its output",
        "parse command line arguments", "format a date as a string", "remove duplicates from a list",
        "how to make an HTTP request", "difference between a list and a tuple", "how do I write a decorator",
        "read and write JSON files", "measure how long code takes to run", "create a temporary directory",
        "find all files matching a pattern", "split a string on whitespace", "threads versus processes")),
    "py7zr manual": (Path("/usr/share/doc/python-py7zr-doc/html"), (
        "compress files into a 7z archive with a password", "extract one file from an archive",
        "which compression methods are supported", "how to change the font size and colour of headings",
        "search box highlight words", "line height and margins of the page", "list the files in an archive",
        "is multi-volume archive supported")),
    "sphinxcontrib-bibtex manual": (Path("/usr/share/doc/python-sphinxcontrib.bibtex-doc/html"), (
        "how to cite a reference in the text", "change the citation style to author year",
        "use several bibliography files", "footnote citations", "filter which entries appear in the bibliography")),
    "sphinx-gallery manual": (Path("/usr/share/doc/python-sphinx-gallery-doc/html"), (
        "generate a gallery of examples from python scripts", "add a thumbnail image for an example",
        "run examples in parallel when building", "exclude some examples from execution",
        "link to the examples from the API documentation")),
}
PACKAGES = "python3.11-doc python-py7zr-doc python-sphinxcontrib.bibtex-doc python-sphinx-gallery-doc"
MODES = ("hybrid", "dense", "bm25")
K = 10


@contextlib.contextmanager
def rules_as_before() -> Iterator[None]:
    """The four rules off: index pages, module source pages, example downloads and page assets
    indexed as any other file."""
    names = ("sphinx_index_pages", "sphinx_module_pages", "sphinx_example_downloads", "page_assets")
    saved = {name: getattr(generated, name) for name in names}
    for name in names:
        setattr(generated, name, lambda labels: {})
    try:
        yield
    finally:
        for name, rule in saved.items():
            setattr(generated, name, rule)


def left_out_files(source: Path) -> set[str]:
    """The files the four rules leave out of `source` (paths within it)."""
    labels = [path.relative_to(source).as_posix() for path in source.rglob("*") if path.is_file()]
    return (set(generated.sphinx_index_pages(labels)) | set(generated.sphinx_module_pages(labels))
            | set(generated.sphinx_example_downloads(labels)) | set(generated.page_assets(labels)))


def ask(index: Path, questions: tuple[str, ...], left_out: set[str]) -> dict[str, tuple[int, int]]:
    """Per mode: (hits from `left_out` files in the first K, questions with at least one)."""
    counts = {}
    with Searcher(index) as searcher:
        for mode in MODES:
            per_question = [sum(hit.source in left_out for hit in searcher.search(q, k=K, mode=mode))
                            for q in questions]
            counts[mode] = (sum(per_question), sum(1 for n in per_question if n))
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=PROJECT_ROOT / ".cache" / "left_out")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    for name, (source, questions) in FOLDERS.items():
        if not source.is_dir():
            sys.exit(f"{source} is missing: apt-get install {PACKAGES}")
        index = args.work / name.replace(" ", "-")
        shutil.rmtree(index, ignore_errors=True)
        left_out = left_out_files(source)
        with rules_as_before():
            before = build_index(IndexConfig(source=source, index_dir=index, show_progress=False))
        asked_before = ask(index, questions, left_out)
        after = build_index(IndexConfig(source=source, index_dir=index, show_progress=False))
        asked_after = ask(index, questions, left_out)
        for label, report, asked in (("indexed (before)", before, asked_before), ("left out (now)", after, asked_after)):
            rows.append([name, label, f"{report.total_documents:,}", f"{report.total_passages:,}",
                         *(f"{asked[m][0]} of {K * len(questions)} ({asked[m][1]} of {len(questions)} questions)"
                           for m in MODES)])
        print(rows[-2], rows[-1], sep="\n", flush=True)
    header = ["folder", "index pages, module source pages, example downloads and page assets", "documents",
              "passages",
              *(f"their hits in the first {K}: {m}" for m in MODES)]
    table = markdown_table(header, rows)
    notes = ("Each folder built with all-MiniLM-L6-v2, the rules off, then on (the second build only removes "
             "documents). A hit counts when its file is one the rules leave out: a Sphinx build's index pages, "
             "search page and inventory, its module source pages (`_modules/`, viewcode's \"[source]\" pages), "
             "the example scripts and notebooks it offers for download beside their pages (`_downloads/`), "
             "and the stylesheets, scripts and pictures its pages are drawn with. "
             "The questions judge nothing. The Python ones were written before any search ran; of py7zr's, "
             "three (\"how to change the font size and colour of headings\", \"search box highlight words\", "
             "\"line height and margins of the page\") are those that showed the stylesheets' hits in the search "
             "that found the problem (a mix of 282 files from /usr/share/doc), the other five were written after. "
             "The sphinxcontrib-bibtex and sphinx-gallery questions were written before any search of those "
             "manuals ran.")
    print(table, notes, sep="\n\n")
    if not args.no_record:
        record("bench_left_out", "A documentation folder's index pages, module source, example downloads and "
               "page assets", f"{table}\n\n{notes}",
               command=" ".join(["python bench/bench_left_out.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
