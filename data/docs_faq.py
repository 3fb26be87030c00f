"""A documentation dev set: the questions of the FAQs Debian ships, each judged against its answer.

The other dev sets are scientific claims, encyclopaedia articles and news; people also search
manuals, and ask them questions ("How do I read a file line by line?") whose answers are worded as
instructions, often with code. A FAQ pairs such questions with their answers, written by the
software's authors. `docs_faq` reads the FAQs of several packages in the two shapes they ship in:

- **Sphinx HTML** (Python's FAQ pages, package python3.11-doc): a question is a section heading
  that ends in "?", its answer the section's text without its subsections.
- **Plain text** (xz, zlib, procps, lsof, sed, Valgrind, socat): a question is a paragraph of at
  most `MAX_QUESTION_LINES` lines, indented by at most two spaces, that may begin with a marker
  ("Q:", "1.2.", "3.") and ends in "?" (or begins with "Q:"); its answer is everything up to the next question or the
  next numbered heading (numbered lines alone: "1.3. Credits", or a table of contents).

Each answer is one document, titled by its FAQ's title and *not* by its question, so a question
must be matched against the answer's own words, as in a manual whose headings name topics rather
than questions. A question asked twice in one file (a table of contents before the body) keeps the
longer answer; one whose answer is shorter than `MIN_ANSWER_WORDS` is left out. Every answer is in
the corpus, so each question has all the other answers as distractors, and its one relevant
document is its own answer.

Weaknesses: another answer may also help (a second FAQ entry on the same tool) and counts as a
miss; the questions were written by the authors who wrote the answers, so they share more words
than a user's question would; the set is small (a few hundred questions).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data.raw_text import Document, open_text

DOC_ROOT = Path("/usr/share/doc")
MAX_QUESTION_LINES = 3
MAX_QUESTION_WORDS = 40
MIN_ANSWER_WORDS = 12
# Questions asked per FAQ, drawn by the seed where one has more: lsof's alone has 289, about old
# Unix kernels, and would otherwise make half the set. Every answer stays in the corpus.
MAX_QUERIES_PER_FAQ = 60


@dataclass(frozen=True)
class FaqSource:
    """One FAQ: its path under `DOC_ROOT`, the Debian package that ships it, and its title."""

    path: str
    package: str
    title: str


# Every FAQ of more than a handful of questions found under /usr/share/doc on this project's
# machines (`find /usr/share/doc -iname '*faq*'`), Python's pages from its documentation package.
PYTHON_FAQ_PAGES = ("general", "programming", "design", "library", "extending", "windows", "gui", "installed")
SOURCES = (
    *(FaqSource(f"python3.11/html/faq/{page}.html", "python3.11-doc", f"Python {page.capitalize()} FAQ")
      for page in PYTHON_FAQ_PAGES),
    FaqSource("xz-utils/faq.txt.gz", "xz-utils", "XZ Utils FAQ"),
    FaqSource("zlib1g-dev/FAQ.gz", "zlib1g-dev", "Frequently Asked Questions about zlib"),
    FaqSource("procps/FAQ.gz", "procps", "procps FAQ"),
    FaqSource("lsof/00FAQ.gz", "lsof", "lsof Frequently Asked Questions"),
    FaqSource("sed/sedfaq.txt.gz", "sed", "The sed FAQ"),
    FaqSource("valgrind/FAQ.txt.gz", "valgrind", "Valgrind FAQ"),
    FaqSource("socat/FAQ", "socat", "socat FAQ"),
)

_NUMBER = re.compile(r"^\d+(?:\.\d+)*\.?\s+")
_ASKED = re.compile(r"^Q[:.]\s")
_MARKER = re.compile(r"^(?:Q[:.]\s*|\d+(?:\.\d+)*\.?\s+)")
_ANSWER_MARKER = re.compile(r"^A[:.]\s+")
_RULE = re.compile(r"^[\s\-=_*#~]+$")


@dataclass(frozen=True)
class Entry:
    """One question and its answer."""

    question: str
    answer: str


def _paragraphs(text: str) -> Iterator[list[str]]:
    """Runs of non-blank lines (a line of rules alone is blank), tabs as spaces."""
    block: list[str] = []
    for line in text.expandtabs(8).splitlines():
        if not line.strip() or _RULE.match(line):
            if block:
                yield block
            block = []
        else:
            block.append(line.rstrip())
    if block:
        yield block


def _question(block: list[str]) -> str | None:
    """The question a paragraph asks, its marker cut; None when it is no question."""
    if len(block) > MAX_QUESTION_LINES or len(block[0]) - len(block[0].lstrip()) > 2:
        return None
    text = " ".join(line.strip() for line in block)
    text = _MARKER.sub("", text).strip()
    words = text.split()
    if not (text.endswith("?") or _ASKED.match(block[0].strip())) or not 3 <= len(words) <= MAX_QUESTION_WORDS:
        return None
    return " ".join(words)


def _heading(block: list[str]) -> bool:
    """Numbered lines alone ("1.3. Credits", or a table of contents), or a "Q:" too long to keep:
    it ends the answer before it."""
    if any(len(line) - len(line.lstrip()) > 2 for line in block):
        return False
    return bool(_ASKED.match(block[0])) or all(_NUMBER.match(line.strip()) for line in block)


def text_entries(text: str) -> list[Entry]:
    """The questions of a plain-text FAQ, each with the text up to the next question or numbered
    heading (see the module docstring); text before the first question is dropped."""
    found: dict[str, str] = {}
    question: str | None = None
    answer: list[str] = []

    def close() -> None:
        if question is None:
            return
        body = "\n\n".join(answer).strip()
        body = _ANSWER_MARKER.sub("", body)
        if len(body.split()) >= MIN_ANSWER_WORDS and len(body) > len(found.get(question, "")):
            found[question] = body

    for block in _paragraphs(text):
        asked = _question(block)
        if asked is not None:
            close()
            question, answer = asked, []
        elif _heading(block):
            close()
            question, answer = None, []
        elif question is not None:
            answer.append("\n".join(line.strip() for line in block))
    close()
    return [Entry(q, a) for q, a in found.items()]


def html_entries(html: bytes) -> list[Entry]:
    """The questions of a Sphinx FAQ page: each section whose heading ends in "?", with the
    section's text without its heading and its subsections."""
    from lxml import html as lxml_html

    root = lxml_html.fromstring(html.decode("utf-8", errors="replace"))
    found: dict[str, str] = {}
    for section in root.xpath("//section | //div[contains(concat(' ', @class, ' '), ' section ')]"):
        heading = next((child for child in section if child.tag in ("h1", "h2", "h3", "h4", "h5", "h6")), None)
        if heading is None:
            continue
        question = " ".join(heading.text_content().replace("\u00b6", "").split())
        if not question.endswith("?") or len(question.split()) > MAX_QUESTION_WORDS:
            continue
        parts = []
        for child in section:
            if child is heading or child.tag == "section" or "section" in (child.get("class") or "").split():
                continue
            text = child.text_content().strip()
            if text:
                code = child.tag == "pre" or child.find(".//pre") is not None  # Sphinx: div.highlight > pre
                parts.append(text if code else " ".join(text.split()))
        body = "\n\n".join(parts)
        if len(body.split()) >= MIN_ANSWER_WORDS and len(body) > len(found.get(question, "")):
            found[question] = body
    return [Entry(q, a) for q, a in found.items()]


def _text_of(path: Path) -> str:
    with open_text(path) as text:
        return text.read()


def missing_sources(root: Path = DOC_ROOT) -> list[FaqSource]:
    """The FAQs not on this machine."""
    return [s for s in SOURCES if not (root / s.path).is_file()]


def docs_faq(rng: np.random.Generator, root: Path = DOC_ROOT, per_faq: int = MAX_QUERIES_PER_FAQ) -> tuple[
        list[Document], dict[str, str], dict[str, dict[str, int]]]:
    """(corpus, queries, qrels): every FAQ's answers as documents, and as queries the questions of
    at most `per_faq` of them per FAQ (drawn by `rng` where it has more).

    Raises FileNotFoundError naming the Debian packages to install when a FAQ is missing, since a
    set built from fewer FAQs would not be the same set."""
    missing = missing_sources(root)
    if missing:
        packages = " ".join(sorted({s.package for s in missing}))
        raise FileNotFoundError(
            f"The docs-faq dev set reads FAQs that are not under {root}: "
            f"{', '.join(s.path for s in missing)}. Install them with `apt-get install {packages}`.")
    corpus: list[Document] = []
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for source in SOURCES:
        path = root / source.path
        entries = html_entries(path.read_bytes()) if ".html" in path.suffixes else text_entries(_text_of(path))
        stem = re.sub(r"[^a-z0-9]+", "-", source.path.lower()).strip("-")
        asked = set(range(len(entries))) if len(entries) <= per_faq else \
            {int(i) for i in rng.choice(len(entries), size=per_faq, replace=False)}
        for n, entry in enumerate(entries):
            doc_id = f"{stem}-{n + 1}"
            corpus.append(Document(doc_id, source.title, entry.answer))
            if n in asked:
                queries[f"q-{doc_id}"] = entry.question
                qrels[f"q-{doc_id}"] = {doc_id: 1}
    return corpus, queries, qrels
