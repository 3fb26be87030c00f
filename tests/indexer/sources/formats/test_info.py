"""GNU Info manuals as makeinfo writes them: a preamble, nodes after `\\x1f` lines, titles underlined
by `*`, `=`, `-`, menus, an index node marked with NUL bytes, a tag table and local variables."""

from __future__ import annotations

import pytest

from indexer.sources.formats import UnreadableDocument, is_info
from indexer.sources.formats.info import read_info

PREAMBLE = ("This is widget.info, produced by makeinfo version 6.7 from\nwidget.texi.\n\n"
            "This manual documents the widget.\n\nINFO-DIR-SECTION Utilities\nSTART-INFO-DIR-ENTRY\n"
            "* widget: (widget).     Frobs the widget.\nEND-INFO-DIR-ENTRY\n\n")
TOP = ("File: widget.info,  Node: Top,  Next: Overview,  Up: (dir)\n\nGNU Widget\n**********\n\n"
       "This manual documents the widget.\n\n* Menu:\n\n* Overview::     What it does.\n* Index::\n\n")
OVERVIEW = ("File: widget.info,  Node: Overview,  Next: Backups,  Prev: Top,  Up: Top\n\n1 Overview\n**********\n\n"
            "The widget frobs files.\n\n* Menu:\n\n* Backups::      Keeping old versions.\n\n")
BACKUPS = ("File: widget.info,  Node: Backups,  Prev: Overview,  Up: Overview\n\n1.1 Backup options\n"
           "==================\n\nUse ‘--backup’ to keep the old version of each file.\n\n"
           "1.1.1 Numbered backups\n----------------------\n\nNumbered backups end in ‘.~N~’.\n\n")
INDEX = ("File: widget.info,  Node: Index,  Prev: Backups,  Up: Top\n\nIndex\n*****\n\n\x00\x08[index\x00\x08]\n"
         "* Menu:\n\n* backup:                 Backups.               (line 6)\n\n")
TAIL = "\x1f\nTag Table:\nNode: Top\x7f200\nNode: Overview\x7f400\n\x1f\nEnd Tag Table\n\n\x1f\nLocal Variables:\ncoding: utf-8\nEnd:\n"
MANUAL = PREAMBLE + "".join(f"\x1f\n{node}" for node in (TOP, OVERVIEW, BACKUPS, INDEX)) + TAIL


def test_nodes_are_read_with_their_titles_as_headings_and_navigation_left_out():
    assert is_info(MANUAL)
    extracted = read_info(MANUAL)
    text = extracted.text
    assert extracted.title == "GNU Widget"
    assert text.startswith("GNU Widget\n\nThis manual documents the widget.")
    for furniture in ("File: widget.info", "* Menu:", "Overview::", "Tag Table", "Local Variables", "INFO-DIR",
                      "\x00", "\x1f", "(line 6)", "**********"):
        assert furniture not in text, furniture
    start = text.index("Numbered backups end")
    assert extracted.outline.locate(start, start + 10).section == ("1 Overview", "1.1 Backup options",
                                                                    "1.1.1 Numbered backups")
    start = text.index("Use ‘--backup’")
    assert extracted.outline.locate(start, start + 10).label == "1 Overview › 1.1 Backup options"


def test_a_part_of_a_split_manual_is_titled_by_its_file_and_the_table_of_parts_has_nothing():
    part = PREAMBLE.replace("widget.info", "widget.info-2") + f"\x1f\n{BACKUPS}" + TAIL
    assert read_info(part).title == ""  # no Top node: the file name titles it
    table = PREAMBLE + "\x1f\nIndirect:\nwidget.info-1: 1000\nwidget.info-2: 50000\n" + TAIL
    with pytest.raises(UnreadableDocument, match="without nodes .*NAME.info-1"):
        read_info(table)
    with pytest.raises(UnreadableDocument, match="index nodes only"):
        read_info(PREAMBLE + f"\x1f\n{INDEX}" + TAIL)


def test_plain_text_that_mentions_makeinfo_is_not_info():
    assert not is_info("This is widget.info, produced by makeinfo, says the README.\nNo nodes here.")
    assert not is_info("Notes\n\x1f\nFile: x")
