"""Real, long files from Debian packages, indexed with the tiny model (issue 36).

The demo corpus and SciFact hold short documents; these folders hold licenses, manuals,
translated man pages and long HTML pages, where a build once crashed on every folder whose
first document was longer than its first commit. Each build must finish, account for every
file (one document, or named in an issue or a warning), and find a phrase of its longest
file in that file first.
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from indexer.sources.readers import read_documents

LICENSES = Path("/usr/share/common-licenses")
DOC = Path("/usr/share/doc")
MAN = Path("/usr/share/man")
TEXLIVE = DOC / "texlive-doc" / "latex"
PYTHON_HTML = DOC / "python3.11" / "html" / "library"
HTML_PAGES = ("python3/python-policy.html", "socat/socat.html", "zlib1g-dev/examples/zlib_how.html",
              "libxslt1-dev/html/html/libxslt-transform.html", "libjs-underscore/index.html")


def regular_files(folder: Path) -> list[Path]:
    """The files a build of `folder` reads: regular, not links, none hidden (a name starting with
    ".", or inside such a folder: texlive-doc's .dict.pws.gz), as `list_source_files` skips them."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def need(files: list[Path], at_least: int, what: str) -> list[Path]:
    if len(files) < at_least:
        pytest.skip(f"{what}: found {len(files)} files, need {at_least}; install Debian's packages "
                    "(base-files, man-db, python3) or run on the project's CI image")
    return files


def copy(files: list[Path], base: Path, target: Path, names: list[str] | None = None) -> Path:
    target.mkdir(parents=True)
    for i, path in enumerate(files):
        dest = target / (names[i] if names else path.relative_to(base).as_posix())
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
    return target


def licenses_largest_first(tmp_path: Path) -> Path:
    files = need(sorted(regular_files(LICENSES), key=lambda p: -p.stat().st_size), 5, str(LICENSES))
    return copy(files, LICENSES, tmp_path / "licenses", [f"{i + 1:02}-{p.name}" for i, p in enumerate(files)])


def debian_docs(tmp_path: Path) -> Path:
    files = [p for p in regular_files(DOC) if p.stat().st_size < 32_000]
    return copy(need(files, 200, str(DOC))[::max(1, len(files) // 250)][:250], DOC, tmp_path / "doc")


def man5_pages(tmp_path: Path) -> Path:
    english = sorted((MAN / "man5").glob("*.5*"))[:40]
    translated = sorted(p for lang in ("ja", "ru", "de", "fr") for p in (MAN / lang / "man5").glob("*.5*"))[:20]
    return copy(need(english, 5, f"{MAN}/man5") + need(translated, 2, "translated man5 pages"),
                MAN, tmp_path / "man")


def html_pages(tmp_path: Path) -> Path:
    files = need([DOC / page for page in HTML_PAGES if (DOC / page).is_file()], 2, "long HTML pages")
    return copy(files, DOC, tmp_path / "html")


def texlive_pdfs(tmp_path: Path) -> Path:
    """LaTeX manuals of texlive-latex-base-doc: the largest (over a thousand pages) and three of
    middle size (tens of pages)."""
    found = sorted(TEXLIVE.rglob("*.pdf"), key=lambda p: (-p.stat().st_size, p.as_posix())) if TEXLIVE.is_dir() else []
    found = [p for p in found if not p.is_symlink()]
    files = found[:1] + found[len(found) // 2:len(found) // 2 + 3]
    if len(files) < 2:
        pytest.skip(f"real PDFs: found {len(files)} under {TEXLIVE}; apt-get install texlive-latex-base-doc "
                    "(.ci/run installs it)")
    return copy(files, TEXLIVE, tmp_path / "pdf")


def python_html(tmp_path: Path) -> Path:
    """Forty pages of the Python library reference as Sphinx writes them (python3.11-doc)."""
    files = sorted(PYTHON_HTML.glob("*.html"))[::5][:40] if PYTHON_HTML.is_dir() else []
    if len(files) < 10:
        pytest.skip(f"real HTML documentation: found {len(files)} pages under {PYTHON_HTML}; apt-get install "
                    "python3.11-doc (.ci/run installs it)")
    return copy(files, PYTHON_HTML, tmp_path / "pyhtml")


def unique_phrase(text: str, others: list[str]) -> str:
    """A line of `text` of 6 to 20 words that no other document holds."""
    for line in text.splitlines()[len(text.splitlines()) // 3:]:
        words = line.split()
        phrase = " ".join(words)
        if 6 <= len(words) <= 20 and phrase.isascii() and not any(phrase in other for other in others):
            return phrase
    pytest.fail("no line of the longest file is its own")


@pytest.mark.parametrize("collection", [licenses_largest_first, debian_docs, man5_pages, html_pages, python_html],
                         ids=["common-licenses-largest-first", "usr-share-doc", "man5-translated", "html",
                              "python-html-docs"])
def test_a_real_collection_builds_and_its_longest_file_is_found(collection, tmp_path, tiny_model):
    from search import Searcher

    source = collection(tmp_path)
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model,
                                     show_progress=False))
    documents = {doc.doc_id: doc for doc in read_documents(source, on_issue=lambda issue: None)}
    files = [p.relative_to(source).as_posix() for p in regular_files(source)]
    named = {issue.path for issue in report.issues}
    named |= {file for issue in report.left_out for file in issue.files}  # a warning names one, holds all
    read = {doc.source for doc in documents.values()}  # a JSON export or mbox: a document a record
    unaccounted = [f for f in files if f not in read and f not in named
                   and not any(f in warning for warning in report.warnings)]
    assert not unaccounted, f"files neither indexed nor named in a warning: {unaccounted[:5]}"
    assert report.total_documents == len(documents) - sum(
        1 for issue in report.issues if issue.doc_id in documents)
    longest = max(documents.values(), key=lambda doc: len(doc.text))
    phrase = unique_phrase(longest.text, [d.text for d in documents.values() if d is not longest])
    searcher = Searcher(tmp_path / "idx", model_loading="lazy")
    try:
        hits = searcher.search(phrase, k=3, mode="bm25")
    finally:
        searcher.close()
    assert hits and hits[0].doc_id == longest.doc_id, (phrase, [h.doc_id for h in hits])


def test_a_phrase_from_page_n_of_a_real_manual_is_found_on_page_n(tmp_path, tiny_model):
    import pypdfium2 as pdfium

    from search import Searcher

    source = texlive_pdfs(tmp_path)
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model,
                                     show_progress=False))
    assert report.total_documents == len(list(source.rglob("*.pdf"))) and not report.issues, report.summary()
    largest = max(source.rglob("*.pdf"), key=lambda p: p.stat().st_size)
    pdf = pdfium.PdfDocument(largest)
    try:
        page = len(pdf) // 2
        lines = pdf[page - 1].get_textpage().get_text_range().replace("\ufffe", "").splitlines()
    finally:
        pdf.close()
    others = [doc.text for doc in read_documents(source, on_issue=lambda issue: None)
              if doc.doc_id != largest.relative_to(source).as_posix()]
    phrase = next((" ".join(line.split()) for line in lines
                   if 6 <= len(line.split()) <= 16 and line.isascii()
                   and not any(" ".join(line.split()) in other for other in others)), None)
    assert phrase, f"page {page} of {largest.name} has no line of its own"
    with Searcher(tmp_path / "idx", model_loading="lazy") as searcher:
        hits = searcher.search(phrase, k=3, mode="bm25")
    top = hits[0]
    assert top.doc_id == largest.relative_to(source).as_posix(), (phrase, [h.doc_id for h in hits])
    assert top.location.page_first <= page <= top.location.page_last, (phrase, page, top.location)
    assert phrase.split()[0] in top.text


def test_debians_compressed_manuals_pdf_read_as_pdf_and_postscript_named(tmp_path, tiny_model):
    """Debian ships manuals as manual.pdf.gz beside manual.ps.gz (bzip2, gdb, man-db, nettle, ...):
    each .pdf.gz is the document its PDF is, page by page; each .ps.gz is named, not indexed as
    PostScript code."""
    import gzip

    from search import Searcher

    packed = sorted(DOC.glob("*/*.pdf.gz"), key=lambda p: p.stat().st_size)[:3]
    postscript = sorted(DOC.glob("*/*.ps.gz"), key=lambda p: p.stat().st_size)[:2]
    if not packed or not postscript:
        pytest.skip(f"Debian's compressed manuals: found {len(packed)} .pdf.gz and {len(postscript)} .ps.gz under "
                    f"{DOC}; apt-get install bzip2 man-db")
    source = copy(packed + postscript, DOC, tmp_path / "manuals")
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    names = {p.relative_to(DOC).as_posix() for p in packed}
    assert report.total_documents == len(packed), report.summary()
    assert {issue.path for issue in report.issues} == {p.relative_to(DOC).as_posix() for p in postscript}
    assert all("a PostScript file" in issue.problem for issue in report.issues)
    unpacked = tmp_path / "unpacked"
    unpacked.mkdir()
    for path in packed:
        (unpacked / path.name[:-3]).write_bytes(gzip.decompress(path.read_bytes()))
    plain = {f"{d.doc_id}.gz": d for d in read_documents(unpacked, on_issue=lambda issue: None)}
    documents = {d.doc_id: d for d in read_documents(source, on_issue=lambda issue: None)}
    assert {Path(name).name: documents[name].text for name in names} == {name: d.text for name, d in plain.items()}
    largest = max(names, key=lambda name: len(documents[name].text))
    phrase = unique_phrase(documents[largest].text, [documents[n].text for n in names if n != largest])
    with Searcher(tmp_path / "idx", model_loading="lazy") as searcher:
        hits = searcher.search(phrase, k=3, mode="bm25")
    assert hits and hits[0].doc_id == largest and hits[0].location.page_first is not None, (phrase, hits[:1])


# Manuals Debian ships in an office format beside the PDF made from the same source.
OFFICE_TWINS = (("coco-doc/UserManual.odt", "coco-doc/UserManual.pdf"),
                ("kannel-docs/userguide/userguide.rtf.gz", "kannel-docs/userguide/userguide.pdf.gz"),
                ("kannel-docs/wtls/wtls.rtf.gz", "kannel-docs/wtls/wtls.pdf.gz"))
SLIDES = "python-py7zr-doc/html/_downloads/95258fe72f1c2ee14b78d021ee45a0e4/Introduction_of_py7zr.odp"


def word_counts(text: str) -> Counter[str]:
    return Counter(word.lower() for word in re.findall(r"[^\W\d_]{3,}", text))


def test_real_opendocument_and_rtf_manuals_hold_the_words_of_their_pdf_twins(tmp_path, tiny_model):
    """coco-doc ships its manual as .odt beside .pdf, kannel-docs its guides as .rtf.gz beside
    .pdf.gz, and python-py7zr-doc a talk as .odp: each office file reads as nearly every word its
    PDF shows and nothing else (measured: 98-99% of the PDF's words, 99.6-100% of ours in the
    PDF); each slide of the talk is a page, and a line of it is found on its slide."""
    from search import Searcher

    files = [DOC / name for pair in OFFICE_TWINS for name in pair if (DOC / pair[0]).is_file()]
    if len(files) < 4 or not (DOC / SLIDES).is_file():
        pytest.skip(f"real office files: found {len(files) // 2} of {len(OFFICE_TWINS)} manuals and "
                    f"{int((DOC / SLIDES).is_file())} talk under {DOC}; apt-get install coco-doc kannel-docs "
                    "python-py7zr-doc (.ci/run installs them)")
    source = copy([*files, DOC / SLIDES], DOC, tmp_path / "office")
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    assert report.total_documents == len(files) + 1 and not report.issues, report.summary()
    documents = {d.doc_id: d for d in read_documents(source, on_issue=lambda issue: None)}
    for office, pdf in OFFICE_TWINS:
        if office not in documents:
            continue
        ours, theirs = word_counts(documents[office].text), word_counts(documents[pdf].text)
        shared = sum((ours & theirs).values())
        assert shared / sum(theirs.values()) >= 0.95 and shared / sum(ours.values()) >= 0.95, office
    talk = documents[SLIDES]
    assert len(talk.outline.page_starts) == 9 and talk.title
    line = "Multi-threading support for large scale archive"
    start = talk.text.index(line)
    slide = talk.outline.locate(start, start + len(line)).page_first
    with Searcher(tmp_path / "idx", model_loading="lazy") as searcher:
        hits = searcher.search(line, k=3, mode="bm25")
    assert hits and hits[0].doc_id == SLIDES and hits[0].location.page_first == slide == 4, hits[:1]


INFO = Path("/usr/share/info")


def test_real_info_manuals_are_read_and_a_phrase_found_in_its_section(tmp_path, tiny_model):
    """GNU Info manuals as Debian installs them (coreutils is essential, so its manual is on every
    Debian system): each was refused for the NUL bytes that mark its index. Each is read now, and a
    phrase of coreutils' "Backup options" node is found there, under its heading path."""
    from search import Searcher

    files = [INFO / name for name in ("coreutils.info.gz", "sed.info.gz", "grep.info.gz", "gzip.info.gz")
             if (INFO / name).is_file()]
    if not files or files[0].name != "coreutils.info.gz":
        pytest.skip(f"real Info manuals: found {len(files)} under {INFO}; apt-get install coreutils sed grep gzip")
    source = copy(files, INFO, tmp_path / "info")
    report = build_index(IndexConfig(source=source, index_dir=tmp_path / "idx", model=tiny_model, show_progress=False))
    assert report.total_documents == len(files) and not report.issues, report.summary()
    documents = {d.doc_id: d for d in read_documents(source, on_issue=lambda issue: None)}
    coreutils = documents["coreutils.info.gz"]
    assert coreutils.title == "GNU Coreutils" and "\x00" not in coreutils.text and "File: coreutils" not in coreutils.text
    node = coreutils.text[coreutils.text.index("Backup options\n"):]
    line = next(line.strip() for line in node.splitlines()[2:] if len(line.split()) >= 8)
    with Searcher(tmp_path / "idx", model_loading="lazy") as searcher:
        hits = searcher.search(line, k=3, mode="bm25")
    assert hits and hits[0].doc_id == "coreutils.info.gz", (line, hits[:1])
    assert hits[0].location.section[-1].endswith("Backup options"), hits[0].location
