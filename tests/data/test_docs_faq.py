"""The docs-faq dev set: questions and answers read from plain-text and Sphinx FAQs, generated
here in each shape Debian ships, then from the real FAQs under /usr/share/doc."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from data.dev_sets import ALL_DEV_SETS, DOCS_SET, build_dev_sets, load_dev_sets
from data.docs_faq import (
    DOC_ROOT,
    MAX_QUERIES_PER_FAQ,
    SOURCES,
    docs_faq,
    html_entries,
    missing_sources,
    text_entries,
)

ANSWER = "the answer runs on for well over twelve words so that it counts as an answer here"

Q_AND_A = f"""
XZ Utils FAQ
============

Q:  What do the letters XZ mean?

A:  Nothing. They are just two letters, and {ANSWER}.


Q:  Why is liblzma named liblzma if its primary file format is .xz?
    Shouldn't it be e.g. libxz?

A:  Because the old format became popular first, and {ANSWER}.

    A second paragraph of the same answer.
"""

NUMBERED_WITH_CONTENTS = f"""
1. GENERAL
1.1. What is sed?
1.2. Where can I get it?
1.3. Credits and acknowledgements

------------------------------------------------------------------------

1.1. What is sed?

Sed is a stream editor, and {ANSWER}.

2.3.1. Books
2.3.2. Mailing list

Contents of a part, as sed's FAQ lists them under a question of its table of contents.

------------------------------------------------------------------------

1.2. Where can I get it?

Too short.

1.3. Credits and acknowledgements

Many people helped, and {ANSWER}.

        An indented line ending in a question mark is part of an answer?

 2. Is zlib Y2K-compliant?

    Yes. zlib does not handle dates, and {ANSWER}.
"""


def test_q_and_a_files_give_each_question_its_answer():
    entries = {e.question: e.answer for e in text_entries(Q_AND_A)}
    assert list(entries) == ["What do the letters XZ mean?",
                             "Why is liblzma named liblzma if its primary file format is .xz? Shouldn't it be e.g. libxz?"]
    assert entries["What do the letters XZ mean?"].startswith("Nothing. They are"), "the A: marker is cut"
    second = entries[list(entries)[1]]
    assert second.endswith("A second paragraph of the same answer.") and "XZ Utils FAQ" not in second


def test_numbered_files_skip_the_contents_short_answers_and_headings():
    entries = {e.question: e.answer for e in text_entries(NUMBERED_WITH_CONTENTS)}
    # The contents list is one paragraph of many lines: no question. "Where can I get it?" has a
    # three-word answer: left out. A heading without "?" is no question, so its text (and the
    # indented line ending in "?") belongs to the answer before it.
    assert list(entries) == ["What is sed?", "Is zlib Y2K-compliant?"]
    assert entries["What is sed?"].startswith("Sed is a stream editor")
    assert entries["What is sed?"].endswith(f"{ANSWER}."), "numbered lines alone (contents) end an answer"
    assert entries["Is zlib Y2K-compliant?"].startswith("Yes. zlib")


def test_a_question_asked_twice_keeps_its_longer_answer():
    text = f"Q: How do I stop it?\n\nA: {ANSWER}.\n\nQ: How do I stop it?\n\nA: Press the button, then {ANSWER}.\n"
    (entry,) = text_entries(text)
    assert entry.answer.startswith("Press the button")


SPHINX_PAGE = f"""<html><body><div class="body">
<section id="programming-faq"><h1>Programming FAQ<a class="headerlink" href="#x">\u00b6</a></h1>
<section id="general"><h2>General Questions</h2>
<p>Intro text of the part, {ANSWER}.</p>
<section id="sort"><h3>How do I sort a list by a key?<a class="headerlink" href="#sort">\u00b6</a></h3>
<p>Use the  key
argument, {ANSWER}.</p>
<div class="highlight"><pre>rows.sort(key=lambda r: r[1])
print(rows)</pre></div>
<section id="sub"><h4>Why is my sort not stable?</h4><p>It is stable, {ANSWER}.</p></section>
</section>
<section id="short"><h3>Is it fast?</h3><p>Yes.</p></section>
</section></section></div></body></html>"""


def test_sphinx_pages_give_each_question_section_its_own_text():
    entries = {e.question: e.answer for e in html_entries(SPHINX_PAGE.encode())}
    assert list(entries) == ["How do I sort a list by a key?", "Why is my sort not stable?"], \
        "headings without '?' and a question with a one-word answer are no entries"
    answer = entries["How do I sort a list by a key?"]
    assert answer.startswith("Use the key argument"), "prose is collapsed, the pilcrow and heading cut"
    assert "rows.sort(key=lambda r: r[1])\nprint(rows)" in answer, "code keeps its lines"
    assert "It is stable" not in answer, "a subsection is its own entry"


def _write_faqs(root: Path, entries_per_faq: int) -> None:
    for source in SOURCES:
        path = root / source.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if ".html" in path.suffixes:
            sections = "".join(f'<section id="s{i}"><h3>How do I do thing {i} in {source.title}?</h3>'
                               f"<p>Do it like this, {ANSWER}.</p></section>" for i in range(entries_per_faq))
            path.write_text(f"<html><body>{sections}</body></html>", encoding="utf-8")
        else:
            text = "".join(f"Q: How do I do thing {i} in {source.title}?\n\nA: Like this, {ANSWER}.\n\n"
                           for i in range(entries_per_faq))
            path.write_bytes(gzip.compress(text.encode()) if path.suffix == ".gz" else text.encode())


def test_the_set_holds_every_answer_and_a_sample_of_each_faqs_questions(tmp_path):
    _write_faqs(tmp_path, MAX_QUERIES_PER_FAQ + 5)
    corpus, queries, qrels = docs_faq(np.random.default_rng(3), tmp_path)
    assert len(corpus) == len(SOURCES) * (MAX_QUERIES_PER_FAQ + 5)
    assert len(queries) == len(SOURCES) * MAX_QUERIES_PER_FAQ, "each FAQ asks at most its share"
    by_id = {d.id: d for d in corpus}
    for qid, question in queries.items():
        (doc_id,) = qrels[qid]
        assert qid == f"q-{doc_id}" and by_id[doc_id].text.startswith("Like this") or \
            by_id[doc_id].text.startswith("Do it like this")
        assert "?" not in by_id[doc_id].title and by_id[doc_id].title in question, \
            "a document is titled by its FAQ, never by its question"
    assert docs_faq(np.random.default_rng(3), tmp_path) == (corpus, queries, qrels), "the same seed, the same set"


def test_a_missing_faq_names_the_package_to_install(tmp_path):
    _write_faqs(tmp_path, 2)
    (tmp_path / "xz-utils" / "faq.txt.gz").unlink()
    assert [s.path for s in missing_sources(tmp_path)] == ["xz-utils/faq.txt.gz"]
    with pytest.raises(FileNotFoundError, match=r"xz-utils/faq\.txt\.gz.*apt-get install xz-utils"):
        docs_faq(np.random.default_rng(0), tmp_path)


def test_dev_sets_write_and_read_docs_faq_alone(tmp_path):
    _write_faqs(tmp_path / "doc", 3)
    built = build_dev_sets(tmp_path / "dev", tmp_path / "no-shared-data", names=(DOCS_SET,), doc_root=tmp_path / "doc")
    assert list(built) == [DOCS_SET] and ALL_DEV_SETS[-1] == DOCS_SET
    loaded = load_dev_sets(tmp_path / "dev", tmp_path / "no-shared-data", (DOCS_SET,))
    assert loaded[DOCS_SET].queries == built[DOCS_SET].queries and loaded[DOCS_SET].qrels == built[DOCS_SET].qrels
    with pytest.raises(FileNotFoundError, match="--sets docs-faq"):
        load_dev_sets(tmp_path / "elsewhere", tmp_path / "no-shared-data", (DOCS_SET,))
    with pytest.raises(ValueError, match="unknown dev sets"):
        build_dev_sets(tmp_path / "dev", tmp_path, names=("docs",))


@pytest.mark.skipif(bool(missing_sources()), reason="Debian's FAQs are not installed (apt-get install python3.11-doc)")
def test_the_real_faqs_read_as_questions_and_answers():
    corpus, queries, qrels = docs_faq(np.random.default_rng(3), DOC_ROOT)
    by_question = {q: qrels[qid] for qid, q in queries.items()}
    by_id = {d.id: d for d in corpus}
    assert len(corpus) >= 500 and len(queries) >= 300, (len(corpus), len(queries))
    (xz,) = by_question["What do the letters XZ mean?"]
    assert by_id[xz].text.startswith("Nothing. They are just two letters") and by_id[xz].title == "XZ Utils FAQ"
    (sort,) = by_question["I want to do a complicated sort: can you do a Schwartzian Transform in Python?"]
    assert "key" in by_id[sort].text and by_id[sort].title == "Python Programming FAQ"
    # Every FAQ gives questions, and no answer swallowed the next question (each ends before it).
    assert {qid.rsplit("-", 1)[0] for qid in queries} == {
        "q-" + d.id.rsplit("-", 1)[0] for d in corpus}
    assert not [d.id for d in corpus if "\nQ:" in d.text or len(d.text.split()) > 3000]
