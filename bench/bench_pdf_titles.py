"""PDF titles: how often the first page's largest text is the document's title, where the PDF has
no Title field of its own (LaTeX writes none unless told to).

Measured on every PDF under a folder (by default /usr/share/doc: TeX Live's manuals and Debian's
PDF manuals, `.pdf.gz` included). The PDFs that do have a Title field are the reference: for each,
`first_page_title` (indexer/sources/formats/pdf.py) is read as if the field were missing, and it
agrees when its words and the field's overlap by half or more (Jaccard of lower-cased words). The
peer is what such a PDF was titled before, and still is where no text stands out: its file name
(`file_title`), measured the same way. Then the PDFs without a Title field: how many get a title
from their first page, and which (the table lists them, so the reader can judge).

    python bench/bench_pdf_titles.py [--folder /usr/share/doc] [--no-record]
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pypdfium2 as pdfium

from bench.record import markdown_table, record
from indexer.sources.formats.pdf import first_page_title, metadata_title
from indexer.sources.readers import content_name, file_title


@dataclass(frozen=True)
class Titles:
    path: str
    field: str  # the Title field ("" when none)
    first_page: str  # first_page_title ("" when no text stands out)
    file_name: str


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def agrees(title: str, reference: str) -> bool:
    ours, theirs = words(title), words(reference)
    return bool(ours) and len(ours & theirs) / len(ours | theirs) >= 0.5


def read_titles(folder: Path) -> list[Titles]:
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.name.endswith((".pdf", ".pdf.gz"))
                       and p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError:
            continue  # encrypted or damaged: the reader names it, and it has no title to judge
        try:
            label = path.relative_to(folder).as_posix()
            parent = label.rsplit("/", 1)[0] if "/" in label else ""
            found.append(Titles(label, metadata_title(pdf), first_page_title(pdf),
                                file_title(content_name(path), parent)))
        finally:
            pdf.close()
    return found


def table(titles: list[Titles]) -> str:
    with_field = [t for t in titles if t.field]
    without = [t for t in titles if not t.field]
    first = [agrees(t.first_page, t.field) for t in with_field]
    named = [agrees(t.file_name, t.field) for t in with_field]
    none = sum(not t.first_page for t in with_field)
    rows = [
        ["first page's largest text (ours)", len(with_field), f"**{sum(first)}** ({sum(first) / len(with_field):.0%})",
         f"{none} (the file name then)", len(with_field) - sum(first) - none],
        ["file name (the peer: the title before)", len(with_field), f"{sum(named)} ({sum(named) / len(with_field):.0%})",
         "0", len(with_field) - sum(named)],
    ]
    header = ["title read as", "PDFs with a Title field", "agrees with the field",
              "gives none", "disagrees"]
    misses = [[t.path, t.field[:70], t.first_page[:70]] for t in with_field
              if t.first_page and not agrees(t.first_page, t.field)]
    titled = sum(bool(t.first_page) for t in without)
    sample = [[t.path, t.first_page[:80] or "(none: the file name)", t.file_name] for t in without]
    return (
        markdown_table(header, rows)
        + "\n\nWhere they disagree (the field, then ours):\n\n"
        + markdown_table(["PDF", "Title field", "first page's largest text"], misses)
        + f"\n\nPDFs without a Title field: {len(without)} of {len(titles)}; the first page gives "
        f"**{titled}** a title, the other {len(without) - titled} keep their file name:\n\n"
        + markdown_table(["PDF", "title now", "file name (before)"], sample)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    body = table(read_titles(args.folder))
    print(body)
    if not args.no_record:
        record("bench_pdf_titles", "PDF titles", body,
               command=f"python bench/bench_pdf_titles.py --folder {args.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
