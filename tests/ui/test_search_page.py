"""The search page's line about a build in progress (the page itself: tests/test_app.py)."""

from __future__ import annotations

from ui.search_page import building_line


def test_a_first_build_counts_the_index_as_its_own_passages():
    assert building_line(48, 1_200, 48) == ("Building: 48 of 1,200 passages committed. Searches answer from "
                                            "those so far and include the rest as they commit.")


def test_a_build_into_an_index_that_held_passages_gives_both_counts():
    """A build run again after Ctrl-C (or one adding files) counts only what it adds; the index
    held 39,763 passages before it: the line must not read as starting over."""
    line = building_line(4_096, 513_271, 43_859)
    assert line.startswith("Building: 4,096 of the 513,271 passages this build adds are committed; "
                           "the index holds 43,859 passages now.")
