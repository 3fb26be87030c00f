"""The page's counters and hits follow a build's commits, not only the user's clicks.

A build in the background (the app's first build, an upload) commits in chunks, and a fragment
polls it every second or two; a fragment reruns only itself, so the Documents and Passages
counters (and the hits) above it kept the build that was drawn last ("Documents 3, Passages 15"
while the bar passed 1,095). Every full run of the app starts by forgetting which build it drew
(`forget_drawn`), and the search page, once it has drawn its counters, remembers it
(`remember_drawn`); a polling fragment, run alone between full runs, calls
`rerun_when_a_commit_lands`, which runs the whole page again once the index has a newer build.
The Compare page shows no counters and remembers nothing, so no commit reruns it.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from indexer import IndexerError
from search import IndexNotFoundError, IndexStats, SearchError
from ui.resources import searcher_for

# Session state: the build id the search page drew its counters from (None: it found no index).
DRAWN = "drawn_build"


def remember_drawn(stats: IndexStats | None) -> None:
    st.session_state[DRAWN] = None if stats is None else stats.build_id


def forget_drawn() -> None:
    st.session_state.pop(DRAWN, None)


def newest_build(folder: Path) -> str | None:
    """The id of the index's newest committed build; None while there is none to open."""
    try:
        return searcher_for(folder).stats().build_id
    except (IndexNotFoundError, IndexerError, SearchError, ValueError, OSError):
        return None


def rerun_when_a_commit_lands(folder: Path) -> None:
    """Run the whole page again when the index's newest build is not the one the page drew.
    Only between full runs: during one, the page has not drawn its counters yet, and draws the
    newest build anyway."""
    if DRAWN in st.session_state and newest_build(folder) != st.session_state[DRAWN]:
        st.rerun(scope="app")
