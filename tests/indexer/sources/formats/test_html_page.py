from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument, decode_html
from indexer.sources.formats.html_page import read_html
from tests.indexer.sources.formats.samples import WEB_PAGE


def test_main_content_without_navigation_or_footer():
    extracted = read_html(WEB_PAGE)
    assert extracted.title == "Installing the widget"
    assert "unpack the tarball" in extracted.text
    for boilerplate in ("Sitemap", "newsletter", "Privacy policy", "All rights reserved"):
        assert boilerplate not in extracted.text
    start = extracted.text.index("Debian users")
    assert extracted.outline.locate(start, start + 30).label == "Installing the widget › Linux › Debian"
    start = extracted.text.index("On Windows")
    assert extracted.outline.locate(start, start + 30).section == ("Installing the widget", "Windows")


def test_a_page_that_is_all_markup_is_unreadable():
    with pytest.raises(UnreadableDocument, match="HTML page without text"):
        read_html("<html><head><script>var a = 1;</script><style>p {}</style></head>"
                  "<body><div><img src='a.png'></div></body></html>")


def test_sphinx_permalinks_leave_headings():
    extracted = read_html("<html><body><main><h1>os.path<a class='headerlink'>¶</a></h1>"
                          "<p>This module implements some useful functions on pathnames.</p>"
                          "<h2>Functions¶</h2><p>join() joins one or more path segments.</p></main></body></html>")
    assert [h.title for h in extracted.outline.headings] == ["os.path", "Functions"]


def test_legacy_pages_decode_by_their_declared_charset():
    raw = "<html><head><meta charset='iso-8859-1'></head><body><p>caf\u00e9 cr\u00e8me</p></body></html>"
    assert "café crème" in decode_html(raw.encode("iso-8859-1"))
    assert "café" in decode_html("<p>café</p>".encode("cp1252"))
    # Undeclared and not Western: read as a text file in that code page would be.
    russian = "<html><body><p>Добро пожаловать в систему TeX Live, это старая страница.</p></body></html>"
    assert decode_html(russian.encode("cp1251")) == russian


SPHINX_CODE = ("<html><body><div role='main'><h1>Sorting HOW TO</h1>"
               "<p>A simple ascending sort is very easy:\n   just call the\tsorted() function.</p>"
               "<div class='highlight-pycon3 notranslate'><div class='highlight'><pre><span></span>"
               "<span class='gp'>&gt;&gt;&gt; </span><span class='n'>a</span> <span class='o'>=</span> "
               "<span class='p'>[</span><span class='mi'>5</span><span class='p'>,</span> "
               "<span class='mi'>2</span><span class='p'>]</span>   \n"
               "<span class='gp'>&gt;&gt;&gt; </span><span class='nb'>sorted</span>(a)\n"
               "<span class='go'>[2, 5]</span>\n\n"
               "<span class='gp'>&gt;&gt;&gt; </span>def key(x):\n"
               "<span class='gp'>... </span>\treturn -x\n</pre></div></div>"
               "<p>Line one<br>of a paragraph.</p><pre>first<br>second</pre></div></body></html>")


def test_code_blocks_keep_their_lines_and_prose_is_collapsed():
    """A `<pre>` (Sphinx's highlighted code, a doctest) keeps its lines, so that the app shows
    a doctest as code; its trailing spaces go and tabs become spaces. Prose around it is
    collapsed as before (a `<br>` there ends a block, inside `<pre>` a line)."""
    text = read_html(SPHINX_CODE).text
    assert ("A simple ascending sort is very easy: just call the sorted() function.\n\n"
            ">>> a = [5, 2]\n>>> sorted(a)\n[2, 5]\n\n>>> def key(x):\n...     return -x\n\n"
            "Line one\n\nof a paragraph.\n\nfirst\nsecond") in text
