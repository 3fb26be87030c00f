"""Streamlit pages over an index: search it, compare sentences, add documents.

Every action calls search/ or indexer/; this file picks the page, and the pages
(ui/search_page.py, ui/compare_page.py, ui/upload_panel.py) lay out widgets and
turn errors into messages over what ui/resources.py holds for the process. Run with `make run`, or
`streamlit run app.py` with SEMSEARCH_INDEX naming the index folder it opens first (the
sidebar offers every index under SEMSEARCH_ROOT, default that folder's parent, as a
collection: ui/collections.py), and
optionally SEMSEARCH_RERANKER naming a CrossEncoder folder to rerank with (default: the
reranker shipped in models/reranker; "none" turns reranking off).
The bi-encoder loads in the background (SEMSEARCH_MODEL_LOADING=eager waits for it
instead): until it is ready, searches answer with BM25 and say so, then switch by themselves.
A reranker that starts off loads in the background too.
A link such as `/?q=how+do+I+open+a+file&mode=hybrid&k=10` opens the search page
with that query, retrieval mode and number of results, and the page keeps its address in step
with them, so it can be shared. With SEMSEARCH_BUILD_SOURCE set (`make run`
sets it to the demo corpus until the demo index is complete), the app indexes
that source into the index in the background and answers from what has been
committed so far, with a progress bar (ui/background_build.py).
"""

from __future__ import annotations

import streamlit as st

from search.params import SCREEN_K, check_count, check_mode
from ui.collections import keep_in_link, open_collection, remember_link_choice
from ui.commit_watch import forget_drawn
from ui.compare_page import compare_page
from ui.search_page import DEFAULT_MODE, RESULTS_BOX_MAX, search_page
from ui.upload_panel import upload_section

SEARCH_PAGE, COMPARE_PAGE = "Search", "Compare"
PAGES = (SEARCH_PAGE, COMPARE_PAGE)


def initial_state() -> None:
    """Fill widget state once per session from the URL, so search links can be shared. A link's
    k and mode pass the checks every surface uses (`search.params`: the API refuses what they
    refuse); a value they refuse is replaced by the default, and the page says so."""
    params = st.query_params
    if "page" not in st.session_state:
        wanted = params.get("page", "").strip().lower()
        st.session_state.page = COMPARE_PAGE if wanted == COMPARE_PAGE.lower() else SEARCH_PAGE
    if "query" not in st.session_state:
        st.session_state.query = params.get("q", "")
    notices: list[str] = []
    if "k" not in st.session_state:
        st.session_state.k = SCREEN_K
        if "k" in params:
            try:
                st.session_state.k = check_count("k", int(params["k"]), RESULTS_BOX_MAX)
            except ValueError as err:
                reason = str(err) if params["k"].strip().lstrip("-").isdigit() else "k must be a whole number."
                notices.append(f"The link's k={params['k']!r} was not used: {reason} Showing {SCREEN_K}.")
    if "mode" not in st.session_state:
        st.session_state.mode = DEFAULT_MODE
        if "mode" in params:
            try:
                st.session_state.mode = check_mode(params["mode"])
            except ValueError as err:
                notices.append(f"The link's mode={params['mode']!r} was not used: {err} Searching in {DEFAULT_MODE}.")
    if (missing := remember_link_choice()) is not None:
        notices.append(missing)
    if notices:
        st.session_state.link_notices = notices


def show_link_notices() -> None:
    """Once, above the page: which of the link's values were replaced, and why."""
    for notice in st.session_state.pop("link_notices", []):
        st.warning(notice)


def main() -> None:
    st.set_page_config(page_title="Semantic search", page_icon="🔎", layout="wide")
    initial_state()
    forget_drawn()  # the search page remembers the build it draws, once drawn (ui/commit_watch.py)
    show_link_notices()
    st.sidebar.title("Semantic search")
    page = st.sidebar.radio("Page", PAGES, key="page")
    folder = open_collection()
    st.sidebar.caption(f"Index: `{folder}`")
    upload_section(folder)
    if page == COMPARE_PAGE:
        st.query_params.clear()
        st.query_params["page"] = COMPARE_PAGE.lower()
        keep_in_link(folder)
        compare_page(folder)
    else:
        st.query_params.pop("page", None)
        keep_in_link(folder)
        search_page(folder)


main()
