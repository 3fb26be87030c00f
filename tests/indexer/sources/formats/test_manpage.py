from __future__ import annotations

import gzip
import shutil

import pytest

from indexer.sources.formats.manpage import is_manpage, read_manpage
from indexer.sources.readers import read_documents

pytestmark = pytest.mark.skipif(shutil.which("groff") is None,
                                reason="groff is not installed; apt-get install groff-base")

ROFF = r""".\" A page written for the test
.TH WIDGET 5 2026-11-26 "Widget 1.0" "File Formats Manual"
.SH NAME
widget.conf \- configuration of the widget daemon
.SH DESCRIPTION
The file
.I /etc/widget.conf
holds one \fBsetting\fR per line, and the daemon rereads it on
.BR SIGHUP .
.SS Comments
Lines that begin with a hash sign are ignored by the parser.
.SH FILES
.TP
.I /etc/widget.conf
the system-wide configuration
.SH "SEE ALSO"
.BR widgetd (8)
"""

MDOC = """.Dd November 26, 2026
.Dt GADGET 1
.Os
.Sh NAME
.Nm gadget
.Nd counts the gadgets in a drawer
.Sh DESCRIPTION
The
.Nm
utility counts every gadget it finds and prints the total.
"""


def test_roff_is_typeset_with_headings_and_no_markup():
    assert is_manpage(ROFF) and is_manpage(MDOC)
    assert not is_manpage("A text that mentions .TH in passing\n.SH is not at a line start here")
    extracted = read_manpage(ROFF)
    assert extracted.title == "widget.conf - configuration of the widget daemon"
    text = extracted.text
    assert "holds one setting per line, and the daemon rereads it on SIGHUP." in text
    for markup in ("\\fB", ".TP", ".I ", ".SH", "WIDGET(5)"):
        assert markup not in text
    start = text.index("Lines that begin")
    assert extracted.outline.locate(start, start + 20).label == "DESCRIPTION › Comments"
    start = text.index("the system-wide")
    assert extracted.outline.locate(start, start + 10).section == ("FILES",)


def test_mdoc_pages_read_too():
    extracted = read_manpage(MDOC)
    assert extracted.title == "gadget — counts the gadgets in a drawer"
    assert "utility counts every gadget" in extracted.text


def test_a_compressed_and_a_translated_page_through_the_folder_walk(tmp_path):
    (tmp_path / "widget.conf.5.gz").write_bytes(gzip.compress(ROFF.encode()))
    translated = ROFF.replace("holds one", "enthält eine").replace("NAME", "BEZEICHNUNG")
    (tmp_path / "widget.conf.de.5").write_text(translated, encoding="utf-8")
    issues: list = []
    docs = {d.doc_id: d for d in read_documents(tmp_path, on_issue=issues.append)}
    assert issues == []
    assert docs["widget.conf.5.gz"].title == "widget.conf - configuration of the widget daemon"
    assert "enthält eine setting" in docs["widget.conf.de.5"].text
    assert docs["widget.conf.de.5"].title == "widget.conf.de.5"  # no NAME section: the file name
