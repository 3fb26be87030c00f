"""LaTeX sources: the document's body read, its sectioning commands as the heading path and its
`\\title` as the title, their words without the markup; on texlive-latex-base-doc's own sources."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer.sources.formats import UnreadableDocument
from indexer.sources.formats.latex import (
    latex_body,
    latex_outline,
    latex_title,
    latex_words,
    read_latex,
)

PAPER = r"""\documentclass{article}
\newcommand{\topic}[1]{\section{#1}}
\title[Glaciers]{Retreat of \emph{alpine} glaciers\thanks{Supported by the {Alpine} Club.}}
% \section{An abandoned outline}
\begin{document}
\maketitle
\section{Introduction}
Glaciers lose 100\% of their ice eventually.
\subsection*{Field work}  % by boat
\subsection[Methods]{Measuring the snout --- from the ridge}
\paragraph{The \LaTeX{} sources.} They are in the appendix.
\section{Results}
"""


def test_latex_sections_give_levels_and_words():
    outline = latex_outline(PAPER)
    assert [(h.level, h.title) for h in outline.headings] == [
        (3, "Introduction"), (4, "Field work"), (4, "Measuring the snout \u2014 from the ridge"),
        (6, "The LaTeX sources."), (3, "Results")]  # the commented one and the macro's #1 left out
    assert outline.section_at(PAPER.index("They are in")) == (
        "Introduction", "Measuring the snout \u2014 from the ridge", "The LaTeX sources.")
    assert latex_title(PAPER) == "Retreat of alpine glaciers"  # the \thanks note left out


def test_the_document_body_is_read_without_preamble_or_comment_lines():
    extracted = read_latex(PAPER + "\\end{document}\n% a note after the end\n")
    assert extracted.text.startswith("\\maketitle\n\\section{Introduction}")
    assert extracted.text.endswith("\\section{Results}")
    for left_out in ("\\documentclass", "\\newcommand", "\\thanks", "abandoned outline", "a note after"):
        assert left_out not in extracted.text, left_out
    assert "% by boat" in extracted.text  # a comment after text on its line stays with its line
    assert [h.title for h in extracted.outline.headings][:2] == ["Introduction", "Field work"]
    assert extracted.title == "Retreat of alpine glaciers"
    chapter = "\\chapter{Moraines}\nThe moraines were mapped.\n"  # a part that another file \\inputs
    assert latex_body(chapter) == chapter and read_latex(chapter).outline.headings[0].title == "Moraines"
    with pytest.raises(UnreadableDocument, match="no text"):
        read_latex("\\documentclass{article}\n\\begin{document}\n% nothing yet\n\\end{document}\n")


@pytest.mark.parametrize("latex, words", [
    (r"%" "\n" r"  {\huge The \TeX\ Live Guide---2020}", "The TeX Live Guide\u20142020"),
    (r"The \LaTeXe{} font \emph{selection} guide", "The LaTeXe font selection guide"),
    (r"A\\ two-line \textbf{title}", "A two-line title"),
    (r"100\% \& more", "100% & more"),
    (r"``Quoted'' words", "\u201cQuoted\u201d words"),
])
def test_latex_words_leave_the_markup_out(latex, words):
    assert latex_words(latex) == words


def test_a_latex_file_is_titled_and_outlined_when_read(tmp_path):
    from indexer.sources.readers import read_documents

    (tmp_path / "paper.tex").write_text(PAPER, encoding="utf-8")
    (tmp_path / "untitled.tex").write_text(r"\section{Only}" "\nText.\n", encoding="utf-8")
    docs = {doc.doc_id: doc for doc in read_documents(tmp_path)}
    assert docs["paper.tex"].title == "Retreat of alpine glaciers"
    assert docs["untitled.tex"].title == "untitled.tex"
    assert [h.title for h in docs["untitled.tex"].outline.headings] == ["Only"]


LATEX_BASE_DOC = Path("/usr/share/doc/texlive-doc/latex/base")


@pytest.mark.skipif(not LATEX_BASE_DOC.is_dir(), reason="needs texlive-latex-base-doc (.ci/run installs it)")
def test_latex_bases_own_manuals_are_outlined_without_markup():
    """The real sources (LaTeX News, the guides for authors, class and font writers): gzipped, long,
    with macros defined in their preambles."""
    from indexer.sources.readers import read_file

    files = sorted(LATEX_BASE_DOC.glob("*.tex.gz"))
    docs = [doc for path in files for doc in read_file(path, path.name, lambda issue: None)]
    assert len(files) > 20 and len(docs) == len(files)
    titles = [heading.title for doc in docs for heading in doc.outline.headings]
    assert len(titles) > 10 * len(files)
    assert not [title for title in titles if any(mark in title for mark in ("\\", "{", "}", "%"))]  # "#" may be written
    guide = next(doc for doc in docs if doc.doc_id == "fntguide.tex.gz")
    assert guide.outline.headings[0].title == "Introduction" and "font selection" in guide.title
