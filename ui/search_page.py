"""The search page: the query, mode and fusion controls, the hits with their relevance, and the
background build's progress while the index fills."""

from __future__ import annotations

import datetime as dt
import json
import warnings
from dataclasses import replace
from pathlib import Path

import streamlit as st

from indexer import IndexerError
from search import (
    MODES,
    EmptyQueryError,
    Hit,
    IndexNotFoundError,
    IndexStats,
    ModelNotReadyError,
    QueryTruncatedWarning,
    SearchConfig,
    Searcher,
    SearchError,
    SearchResult,
)
from search.fusion import FUSIONS
from search.params import MAX_K, SCREEN_K, SearchParams
from ui.background_build import BackgroundBuild, BuildStatus, steady_total
from ui.commit_watch import remember_drawn, rerun_when_a_commit_lands
from ui.document_links import show_document_links
from ui.filters import filter_controls
from ui.highlight import escape_markdown, passage_markdown, snippet_markdown
from ui.resources import (
    DEFAULT_INDEX,
    background_build,
    preload_default_model,
    reranker_choice,
    reranker_setting,
    searcher_for,
)
from ui.results import (
    MODE_LABELS,
    Relevance,
    details_line,
    fields_markdown,
    hit_markdown,
    hit_relevance,
    result_caption,
    weak_results_message,
)
from ui.upload_panel import upload_running

# The Results box's most: a page of hits a person reads, not the API's MAX_K.
RESULTS_BOX_MAX = 50
DEFAULT_MODE = SearchConfig().mode
FUSION_LABELS = {"rrf": "reciprocal rank", "minmax": "scores, min-max scaled",
                 "tmm": "scores, scaled from the lowest possible", "zscore": "scores, z-scaled"}
BUILD_POLL_SECONDS = 1.0
BUILD_DONE_SEEN = "build_done_seen"
MODEL_POLL_SECONDS = 1.0
EXAMPLE_QUERY = "how do I open a file"
# The hybrid's (method, dense share) as last chosen, kept where Streamlit does not forget it.
FUSION_CHOICE = "fusion_choice"
# The page of the ranking shown (0 first), and the search it is a page of: another search starts at 0.
PAGE, PAGE_OF = "results_page", "results_page_of"
# The key of the details expander of the hit ranked N is DETAILS + str(N); it keeps whether it is open.
DETAILS = "details-"


def build_status_message(status: BuildStatus) -> str:
    name = escape_markdown(status.source.name)
    if status.total:
        return (f"Indexing {name} in the background: {status.embedded:,} of {status.total:,} passages "
                f"embedded ({status.elapsed_s:.0f} s). Searches already answer from the documents "
                "committed so far, and include more as they commit.")
    return f"Indexing {name} in the background: reading the files and loading the model…"


def show_build_progress(build: BackgroundBuild, folder: Path, built_at: dt.datetime | None = None) -> None:
    """The background build's bar while it runs (`poll_build`), then how it ended. Nothing polls
    an ended build: a fragment that kept ticking beside the page's later runs once left the page
    without its counters. Its summary is left out once a later build (`built_at`, the index's
    last commit) has committed: under an upload's counters it contradicted them ("Last build 1.0 s"
    over "21.3 s in all")."""
    status = build.status()
    if status.running or not st.session_state.get(BUILD_DONE_SEEN):
        poll_build(build, folder)
    elif status.error:
        st.error(f"Indexing {escape_markdown(str(status.source))} in the background failed; the app "
                 f"keeps answering from what is committed. {status.error}")
    elif not (built_at is not None and status.counts is not None
              and built_at.timestamp() > status.counts.finished_at):
        st.caption(f"Background indexing finished: {escape_markdown(status.summary or '')}")


@st.fragment(run_every=BUILD_POLL_SECONDS)
def poll_build(build: BackgroundBuild, folder: Path) -> None:
    """Moves the bar every second; reruns the page when a chunk commits (the search box appears
    with the first, the counters and hits follow each) and when the build ends."""
    status = build.status()
    if status.running:
        st.progress(status.fraction, text=build_status_message(status))
        rerun_when_a_commit_lands(folder)
        return
    st.session_state[BUILD_DONE_SEEN] = True
    st.rerun()  # hybrid over the whole index from now on, and how the build ended


def missing_index_message(folder: Path) -> str:
    return (
        f"**No index found in `{folder}`.** To get started, either:\n"
        f"- build one from your files: `python -m indexer build --source PATH --index {folder}`;\n"
        "- upload files under **Add documents** in the sidebar to start an index here;\n"
        "- or try the demo over Python's own documentation: `make demo-index`, then `make run` "
        f"(it serves `{DEFAULT_INDEX}`).\n\n"
        "Then reload this page."
    )


def show_stats(area, stats: IndexStats, building: tuple[int, int] | None = None) -> None:
    """The figures of one build, into `area` (a container at the top of the page), and how far
    a build growing the index in chunks has got, when one is running."""
    cols = area.columns(3)
    cols[0].metric("Documents", f"{stats.documents:,}")
    cols[1].metric("Passages", f"{stats.passages:,}")
    cols[2].metric(
        "Last build", f"{stats.build_seconds:.1f} s",
        help="How long the last build took. After an upload that is the incremental build that "
        "added it, not the time to index everything.",
    )
    area.caption(
        f"Model **{escape_markdown(stats.model_label)}** ({stats.dimension} dimensions, {stats.encoding}) · "
        f"vector index {stats.vector_index} · "
        f"built {stats.built_at:%Y-%m-%d %H:%M} UTC"
    )
    if building is not None:
        done, total = building
        # Another process's build: its total, an estimate, is kept as first shown (`steady_total`).
        total = st.session_state["building_total"] = steady_total(st.session_state.get("building_total", 0),
                                                                   total, done)
        area.info(building_line(done, total, stats.passages))


def building_line(done: int, total: int, held: int) -> str:
    """How far a build growing the index has got: `done` of the `total` passages it commits, while the
    index holds `held` passages. A build that resumes (or updates an index) started from the passages
    the index held already, which its own counts leave out: then it says both."""
    if held <= done:
        return (f"Building: {done:,} of {total:,} passages committed. Searches answer from those so far "
                "and include the rest as they commit.")
    return (f"Building: {done:,} of the {total:,} passages this build adds are committed; the index holds "
            f"{held:,} passages now. Searches answer from those and include the rest as they commit.")


def show_hits(hits: list[Hit], matches: list[Relevance | None], first: int, query: str, mode: str) -> None:
    """The hits, ranked from `first`: each one's box and what a person scans (title, label, source,
    snippet) in one Markdown element (`hit_markdown`), for all of them first; then, into each box,
    its document links and its details, which the browser draws after the hits (`match` is None
    while the model that scores relevance is loading).

    The browser's work per element, not the Python, set how long the hits took to appear after
    their caption: five elements and an expander per hit took over a second at k=50 on a loaded
    machine. BENCHMARKS.md, "Hits drawn after their caption", has the figures.
    """
    boxes = []
    for rank, (hit, match) in enumerate(zip(hits, matches, strict=True), start=first):
        box = st.container(border=True)
        box.markdown(hit_markdown(rank, hit, match, snippet_markdown(hit.text, query, title=hit.title)))
        boxes.append(box)
    for rank, (box, hit, match) in enumerate(zip(boxes, hits, matches, strict=True), start=first):
        with box:
            show_document_links(hit, f"{rank}-{hit.passage_id}")
            details = st.expander("Full passage and scores", key=f"{DETAILS}{rank}", on_change="rerun")
            if details.open:  # drawn when asked: a closed expander's content cost the browser as much
                details.caption(details_line(hit, mode, match))
                if match is not None:
                    details.caption(match.explanation)
                fields = fields_markdown(hit.metadata)
                if fields is not None:
                    details.caption(f"Fields (the Filter selects on them): {fields}")
                details.markdown(passage_markdown(hit.text, query))


def search_page(folder: Path) -> None:
    """The search page: the index and its build's progress, the query controls, the results."""
    st.title("Search")
    opened = open_searcher(folder)
    if opened is None:
        return
    searcher, stats, choice = opened
    stats_area = st.container()  # filled last, with the figures of the build that answered
    query_controls(searcher, choice)
    query: str = st.session_state.query
    keep_in_link(query, st.session_state.mode, int(st.session_state.k))
    result = run_search(searcher, query, asked_params(searcher))
    if result is not None and result.stats is not None:
        stats = result.stats
    # The app's own build (first build, upload) shows its bar; the index's progress file is the same build's.
    own_build = background_running(folder) or upload_running(folder)
    show_stats(stats_area, stats, None if own_build else searcher.build_progress())
    remember_drawn(stats)
    if result is not None:
        show_results(searcher, query, result, stats)


def open_searcher(folder: Path):
    """(searcher, stats, reranker choice) for `folder`, showing its background build's progress;
    None, with a message saying why, when it cannot search yet."""
    try:
        choice = reranker_choice()
    except ValueError as err:  # a rerank_config.json that cannot be read
        st.error(f"The reranker ({reranker_setting() or 'models/reranker'}) cannot be used. {err} Set "
                 "SEMSEARCH_RERANKER=none to search without it.")
        return None
    build = background_build(folder)
    try:
        searcher = searcher_for(folder)
        stats = searcher.stats()
    except IndexNotFoundError:
        if build is not None and build.status().running:
            preload_default_model()
            show_build_progress(build, folder)
            remember_drawn(None)  # so the bar, polling, reruns the page when the first chunk commits
            st.info("The first documents are being indexed; the search box appears as soon as they "
                    "are committed, within a minute.")
            return None
        if build is not None:
            show_build_progress(build, folder)  # its error
        st.info(missing_index_message(folder))
        return None
    except (IndexerError, SearchError, ValueError) as err:
        st.error(f"The index in {folder} cannot be opened. {err}")
        return None
    except OSError as err:  # only the reranker remains: the Index wraps its own file errors
        st.error(f"The reranker ({choice.path}) cannot be loaded. {err} Set SEMSEARCH_RERANKER=none "
                 "to search without it.")
        return None
    if build is not None:
        show_build_progress(build, folder, stats.built_at)
    return searcher, stats, choice


def background_running(folder: Path) -> bool:
    build = background_build(folder)
    return build is not None and build.status().running


def query_controls(searcher: Searcher, choice) -> None:
    """The query box, Results (k), the mode, hybrid's fusion and the rerank toggle."""
    left, right = st.columns([5, 1])
    left.text_input("Query", key="query", placeholder=f"e.g. {EXAMPLE_QUERY}")
    right.number_input("Results", min_value=1, max_value=RESULTS_BOX_MAX, step=1, key="k")
    options = st.columns([3, 1], vertical_alignment="bottom")
    options[0].radio(
        "Mode",
        MODES,
        key="mode",
        horizontal=True,
        format_func=MODE_LABELS.__getitem__,
        help="Dense compares meanings (embeddings); BM25 matches exact words (names, codes, rare "
        "terms); hybrid fuses both lists, by default as a weighted sum of their scores, each "
        "scaled to one range.",
    )
    if st.session_state.mode == "hybrid":
        fusion_controls(searcher, options[0])
    st.session_state["metadata_filter"] = filter_controls(searcher, st)
    if searcher.reranker is not None:
        if "rerank" not in st.session_state:
            st.session_state.rerank = searcher.rerank_by_default
        options[1].toggle(
            "Rerank",
            key="rerank",
            help=f"Rescore the top {searcher.config.rerank_candidates} documents with the "
            f"cross-encoder reranker ({Path(str(choice.path)).name}): slower, usually sharper.",
        )


def keep_in_link(query: str, mode: str, k: int) -> None:
    """The query, a mode and a k other than the defaults go into the page's URL, so a shared link
    keeps them, and a run cut short before the Results box (Streamlit then forgets its value)
    gets k back from the URL (`initial_state`), not the default."""
    for name, value, default in (("q", query, ""), ("mode", mode, DEFAULT_MODE), ("k", k, SCREEN_K)):
        if value != default:
            st.query_params[name] = str(value)
        else:
            st.query_params.pop(name, None)


def show_results(searcher: Searcher, query: str, result, stats) -> None:
    """The hits with their relevance labels, or a message saying why there are none."""
    if not result.hits and stats.documents == 0:
        st.info(
            "The index holds no documents yet. Add some under **Add documents** in the sidebar."
        )
        return
    if not result.hits and st.session_state.get(PAGE, 0):
        st.info("No more documents match: this page is past the last one.")
        page_buttons(0, st.session_state[PAGE] * int(st.session_state.k) + 1, stats.documents)
        return
    if not result.hits and st.session_state.get("metadata_filter"):
        shown = f"`{json.dumps(st.session_state.metadata_filter)}`"
        st.info((f"No document that matches the filter {shown} shares a word with the query."
                 if result.mode == "bm25" else f"No document matches the filter {shown}.")
                + " Widen or remove it under **Filter**.")
        return
    if not result.hits:
        st.info(
            "No passage contains any of the query's words (BM25 matches words exactly, ignoring "
            "words such as *the* or *of*). Try the dense or hybrid mode, or other words."
        )
        return
    st.caption(result_caption(result))
    calibrated = bool(result.hits) and all(hit.relevance is not None for hit in result.hits)
    matches = hit_relevance(result.hits, None if calibrated else passage_cosines(result))
    if matches and matches[0] is not None and not st.session_state.get(PAGE, 0):
        # The first page only: a later one shows the hits below the best by design.
        weak = weak_results_message(max((m for m in matches if m is not None), key=lambda m: m.value))
        if weak:
            st.warning(weak)
    if searcher.model_loading:
        rerun_when_model_loads(searcher)
    first = st.session_state.get(PAGE, 0) * int(st.session_state.k) + 1
    show_hits(result.hits, matches, first, query, result.mode)
    page_buttons(len(result.hits), first, stats.documents)


def page_buttons(shown: int, first: int, documents: int) -> None:
    """Previous and next pages of the same ranking (`SearchParams.offset`); a search ranks at most
    MAX_K documents, and a page that comes back short is the last."""
    k = int(st.session_state.k)
    page = st.session_state.get(PAGE, 0)
    more = shown == k and first - 1 + k < min(MAX_K, documents)
    if page == 0 and not more:
        return

    def turn(step: int) -> None:
        st.session_state[PAGE] = max(0, page + step)

    left, middle, right = st.columns([1, 2, 1])
    left.button("← Previous", key="page_previous", disabled=page == 0, on_click=turn, args=(-1,))
    middle.caption(f"Documents {first}–{first + shown - 1}")
    right.button("Next →", key="page_next", disabled=not more, on_click=turn, args=(1,))


@st.fragment(run_every=MODEL_POLL_SECONDS)
def rerun_when_model_loads(searcher: Searcher) -> None:
    """Search again, in the mode asked, as soon as the model has loaded."""
    if not searcher.model_loading:
        st.rerun()


def passage_cosines(result: SearchResult) -> list[float] | None:
    """The cosine labels' input, only where the ranking is by cosine (dense mode): in another mode
    a label read off the cosine would rank a lower hit above a higher one, so such hits carry the
    calibrated relevance or no label at all."""
    if result.mode != "dense":
        return None
    return [h.retriever_score if h.retriever_score is not None else h.score for h in result.hits]


def fusion_controls(searcher: Searcher, area) -> None:
    """How hybrid fuses its two lists, and the dense list's share; defaults from SearchConfig.

    Streamlit forgets a widget's value when a run does not draw it (dense or BM25 mode, or a
    run cut short between the two widgets), so the choice is also kept under FUSION_CHOICE,
    which is no widget's key, and a widget that lost its value takes it back from there (the
    share, or the method's measured default). And the browser, mounting the slider afresh,
    took its default, the minimum 0 (BM25 alone), for a change by the user in about one page
    load in five; so the slider is also given the share as its default.
    """
    remembered = st.session_state.get(FUSION_CHOICE)
    if "fusion" not in st.session_state:
        st.session_state.fusion = remembered[0] if remembered else searcher.config.fusion_for().method
    if "fusion_weight" not in st.session_state:
        method = st.session_state.fusion
        kept = remembered is not None and remembered[0] == method
        st.session_state.fusion_weight = remembered[1] if kept else searcher.config.fusion_for(method).weight

    def remember() -> None:
        st.session_state[FUSION_CHOICE] = (st.session_state.fusion, st.session_state.fusion_weight)

    def method_changed() -> None:  # each method starts at the weight measured best for it
        st.session_state.fusion_weight = searcher.config.fusion_for(st.session_state.fusion).weight
        remember()

    left, right = area.columns(2)
    left.selectbox("Fusion", FUSIONS, key="fusion", format_func=FUSION_LABELS.get,
                   on_change=method_changed,
                   help="How hybrid combines the dense and BM25 lists: by rank, or by their "
                   "scores scaled to one range.")
    # `value` too, the share just set: the browser falls back to a slider's default when it
    # mounts the widget afresh, and without one that default is the minimum, 0 (BM25 alone).
    # (.streamlit/config.toml turns off Streamlit's log warning about a value set both ways.)
    right.slider("Dense share", 0.0, 1.0, value=float(st.session_state.fusion_weight), step=0.05,
                 key="fusion_weight", on_change=remember, help="0 ranks by BM25 alone, 1 by dense alone.")


def asked_params(searcher: Searcher) -> SearchParams:
    """The search the controls ask for. The default mode is passed as no mode, so the Searcher's
    rule for an index without BM25 applies (it runs dense and says why); the page shows its reason."""
    state = st.session_state
    hybrid = state.mode == "hybrid"
    k = int(state.k)
    asked = (state.query, state.mode, k, json.dumps(state.get("metadata_filter"), sort_keys=True),
             state.get("fusion") if hybrid else None, state.get("fusion_weight") if hybrid else None)
    if state.get(PAGE_OF) != asked:  # another search starts at its first page
        state[PAGE_OF], state[PAGE] = asked, 0
    return SearchParams(
        k=k,
        offset=min(state.get(PAGE, 0) * k, MAX_K - 1),
        mode=None if state.mode == DEFAULT_MODE else state.mode,
        rerank=bool(state.rerank) if searcher.reranker is not None else None,
        fusion=state.get("fusion") if hybrid else None,
        fusion_weight=state.get("fusion_weight") if hybrid else None,
        filter=state.get("metadata_filter"),
        model_wait=0.0,
    )


def run_search(searcher: Searcher, query: str, params: SearchParams) -> SearchResult | None:
    """The search the page asks for, or None (with a message) when there is nothing to show."""
    if not query:
        st.info(f"Type a question or a few words, for example: *{EXAMPLE_QUERY}*.")
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QueryTruncatedWarning)
        try:
            try:
                result = searcher.search_detailed(query, params)
            except ModelNotReadyError:  # a page answers at once: BM25 until the model is there, and says so
                result = searcher.search_detailed(query, replace(params, mode=None))
        except EmptyQueryError as err:
            st.warning(str(err))
            return None
        except (IndexerError, SearchError, ValueError) as err:
            st.error(f"The search failed. {err}")
            return None
        except OSError as err:  # a reranker loaded in the background (BackgroundReranker)
            st.error(f"The reranker ({reranker_setting() or 'models/reranker'}) cannot be loaded. "
                     f"{err} Set SEMSEARCH_RERANKER=none to search without it.")
            return None
    if result.fallback_reason is not None:
        # BM25 stands in only while the model loads, a passing state; dense for a missing BM25 index.
        (st.info if result.mode == "bm25" else st.warning)(result.fallback_reason)
    for warning in caught:
        if issubclass(warning.category, QueryTruncatedWarning):
            st.warning(str(warning.message))
    return result
