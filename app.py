"""Streamlit pages over an index: search it, compare sentences, add documents.

Every action calls search/ or indexer/; this file only lays out widgets and
turns their errors into messages. Run with `make run`, or
`streamlit run app.py` with SEMSEARCH_INDEX naming the index folder, and
optionally SEMSEARCH_RERANKER naming a CrossEncoder folder to rerank with (default: the
reranker shipped in models/reranker; "none" turns reranking off).
The bi-encoder loads in the background (SEMSEARCH_MODEL_LOADING=eager waits for it
instead): until it is ready, searches answer with BM25 and say so, then switch by themselves.
A reranker that starts off loads in the background too.
A link such as `/?q=how+do+I+open+a+file&mode=hybrid` opens the search page
with that query and retrieval mode. With SEMSEARCH_BUILD_SOURCE set (`make run`
sets it to the demo corpus until the demo index is complete), the app indexes
that source into the index in the background and answers from what has been
committed so far, with a progress bar (ui/background_build.py).
"""

from __future__ import annotations

import os
import textwrap
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from data.paths import PROJECT_ROOT
from indexer import IndexConfig, IndexerError, passage_text
from indexer.embedding import load_bi_encoder
from indexer.model_spec import DEFAULT_MODEL_NAME
from search import (
    MODES,
    EmptyQueryError,
    Hit,
    IndexNotFoundError,
    IndexStats,
    QueryTruncatedWarning,
    SearchConfig,
    Searcher,
    SearchError,
    SearchResult,
    similarity,
    similarity_matrix,
    top_pairs,
)
from search.fusion import FUSIONS
from search.rerank import NO_RERANKER, Reranker, RerankerChoice, resolve_reranker
from search.searcher import ModelLoad
from ui.background_build import BackgroundBuild, BuildStatus
from ui.csv_columns import (
    CsvMapping,
    csv_columns,
    is_csv,
    mapping_problem,
    needs_mapping,
    suggest_mapping,
)
from ui.highlight import escape_markdown, passage_markdown, snippet_markdown
from ui.results import (
    MODE_LABELS,
    Relevance,
    details_line,
    plural,
    relevance,
    result_caption,
    source_caption,
    weak_results_message,
)
from ui.uploads import ACCEPTED_TYPES, UploadResult, index_uploads

if TYPE_CHECKING:
    import altair as alt

REPO_ROOT = PROJECT_ROOT
DEFAULT_INDEX = Path("indexes") / "demo"
SEARCH_PAGE, COMPARE_PAGE = "Search", "Compare"
PAGES = (SEARCH_PAGE, COMPARE_PAGE)
DEFAULT_K = 5
MAX_K = 50
# Beyond this many sentences a heatmap is unreadable; the pairs table still covers them all.
MAX_HEATMAP_SENTENCES = 40
HEATMAP_ROW_PX = 36
DEFAULT_MODE = SearchConfig().mode
FUSION_LABELS = {"rrf": "reciprocal rank", "minmax": "scores, min-max scaled",
                 "tmm": "scores, scaled from the lowest possible", "zscore": "scores, z-scaled"}
BUILD_POLL_SECONDS = 2.0
MODEL_POLL_SECONDS = 1.0
# The "none" choice for a CSV's title or id column (a column without a name is never offered).
NO_COLUMN = ""
EXAMPLE_QUERY = "how do I open a file"
EXAMPLE_PAIR = ("How do I read a file line by line?", "Iterate over the lines of a text file.")
EXAMPLE_SENTENCES = """\
How do I read a file line by line?
Iterate over the lines of a text file.
Sort a list of numbers in place.
The sorted() function returns a new sorted list.
The weather is sunny today.
"""


def index_dir() -> Path:
    """SEMSEARCH_INDEX, or indexes/demo; a relative path is taken from the repository root."""
    path = Path(os.environ.get("SEMSEARCH_INDEX") or DEFAULT_INDEX).expanduser()
    return path if path.is_absolute() else REPO_ROOT / path


def reranker_setting() -> str | None:
    """SEMSEARCH_RERANKER: a CrossEncoder folder (relative to the repository root) or "none";
    None when unset, for the shipped reranker."""
    value = os.environ.get("SEMSEARCH_RERANKER", "").strip()
    if not value:
        return None
    if value.lower() in NO_RERANKER:
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else REPO_ROOT / path)


def reranker_choice() -> RerankerChoice:
    """The reranker the app offers and whether its toggle starts on: the CLI's and the eval's rule."""
    return resolve_reranker(None, reranker_setting())


def model_loading() -> str:
    """SEMSEARCH_MODEL_LOADING: "background" (the default), or "eager" to wait for the bi-encoder
    before the first answer, so every search runs in the mode asked."""
    return os.environ.get("SEMSEARCH_MODEL_LOADING", "").strip().lower() or "background"


class BackgroundReranker:
    """A cross-encoder loading in a thread: it imports torch, seconds on a small CPU, which the
    first searches should not wait for when reranking starts off. A search that reranks waits."""

    def __init__(self, choice: RerankerChoice) -> None:
        self._model = ModelLoad(choice.load, "background")

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        return self._model.get().rerank(query, hits)  # type: ignore[attr-defined]


@st.cache_resource(show_spinner="Loading the index and the models…")
def load_searcher(folder: str, reranker: str | None, loading: str) -> Searcher:
    """One Searcher (and so one model and one copy of the vectors) per index folder per process.

    It offers the reranker even when it starts off, so the toggle can turn it on.
    A failed load raises and is not cached, so building the index and reloading
    the page is enough. The Searcher itself loads builds that commit later.
    """
    choice = resolve_reranker(None, reranker)
    offered: Reranker | None
    if loading == "background" and choice.path is not None and not choice.enabled:
        offered = BackgroundReranker(choice)
    else:  # reranking from the first search on: its errors show at once
        offered = choice.load()
    return Searcher(folder, reranker=offered, model_loading=loading)


def searcher_for(folder: Path) -> Searcher:
    return load_searcher(str(folder), reranker_setting(), model_loading())


@st.cache_resource(show_spinner=False)
def start_background_build(source: str, folder: str, stamp: str | None) -> BackgroundBuild:
    """One background build per (source, index) per app process, started by the first page view."""
    config = IndexConfig(source=Path(source), index_dir=Path(folder), show_progress=False)
    return BackgroundBuild(config, Path(stamp) if stamp else None)


@st.cache_resource(show_spinner=False)
def preload_default_model() -> threading.Thread:
    """Load the bi-encoder while the first chunk is embedded, so the first search need not wait
    for it: the Searcher gets the same object from `load_bi_encoder`'s cache."""
    thread = threading.Thread(target=load_bi_encoder, name="semsearch-preload", daemon=True)
    thread.start()
    return thread


def background_build(folder: Path) -> BackgroundBuild | None:
    """The build SEMSEARCH_BUILD_SOURCE asks for (relative to the repository root), if any."""
    source = os.environ.get("SEMSEARCH_BUILD_SOURCE", "").strip()
    if not source:
        return None
    path = Path(source).expanduser()
    stamp = os.environ.get("SEMSEARCH_BUILD_STAMP", "").strip() or None
    return start_background_build(str(path if path.is_absolute() else REPO_ROOT / path),
                                  str(folder), stamp)


def build_status_message(status: BuildStatus) -> str:
    name = escape_markdown(status.source.name)
    if status.total:
        return (f"Indexing {name} in the background: {status.embedded:,} of {status.total:,} passages "
                f"embedded ({status.elapsed_s:.0f} s). Searches already answer from the documents "
                "committed so far, and include more as they commit.")
    return f"Indexing {name} in the background: reading the files and loading the model…"


@st.fragment(run_every=BUILD_POLL_SECONDS)
def show_build_progress(build: BackgroundBuild, had_index: bool) -> None:
    """Moves the bar every few seconds; reruns the page when the first build lands or all ends."""
    status = build.status()
    if status.running:
        st.progress(status.fraction, text=build_status_message(status))
        if not had_index and status.embedded:
            st.rerun()  # the first chunk may have committed: show the search box
    elif status.error:
        st.error(f"Indexing {escape_markdown(str(status.source))} in the background failed; the app "
                 f"keeps answering from what is committed. {status.error}")
    else:
        if not st.session_state.get("build_done_seen"):
            st.session_state.build_done_seen = True
            st.rerun()  # hybrid over the whole index from now on
        st.caption(f"Background indexing finished: {escape_markdown(status.summary or '')}")


def missing_index_message(folder: Path) -> str:
    return (
        f"**No index found in `{folder}`.** To get started, either:\n"
        f"- build one from your files: `python -m indexer build --source PATH --index {folder}`;\n"
        "- upload files under **Add documents** in the sidebar to start an index here;\n"
        "- or try the demo over Python's own documentation: `make demo-index`, then `make run` "
        f"(it serves `{DEFAULT_INDEX}`).\n\n"
        "Then reload this page."
    )


def initial_state() -> None:
    """Fill widget state once per session from the URL, so search links can be shared."""
    params = st.query_params
    if "page" not in st.session_state:
        wanted = params.get("page", "").strip().lower()
        st.session_state.page = COMPARE_PAGE if wanted == COMPARE_PAGE.lower() else SEARCH_PAGE
    if "query" not in st.session_state:
        st.session_state.query = params.get("q", "")
    if "k" not in st.session_state:
        try:
            st.session_state.k = min(max(int(params.get("k", DEFAULT_K)), 1), MAX_K)
        except ValueError:
            st.session_state.k = DEFAULT_K
    if "mode" not in st.session_state:
        wanted = params.get("mode", "").strip().lower()
        st.session_state.mode = wanted if wanted in MODES else DEFAULT_MODE
    if "rerank" not in st.session_state:
        try:
            st.session_state.rerank = reranker_choice().enabled
        except ValueError:  # a broken rerank_config.json: the search page shows the error
            st.session_state.rerank = False


# --- Adding documents ---------------------------------------------------------------------------


def upload_section(folder: Path) -> None:
    sidebar = st.sidebar
    sidebar.subheader("Add documents")
    files = sidebar.file_uploader(
        "Files to index",
        type=ACCEPTED_TYPES,
        accept_multiple_files=True,
        key="uploads",
        help="Any text file (.txt, .md, .rst, a README, .gz of one) becomes one document; each "
        ".jsonl line and .csv row is one, and needs a `text` field (and may have `id` and "
        "`title`). A .csv names its columns in its first row; one without a `text` column asks "
        "which of its columns holds the text.",
    )
    mappings, mapped = csv_mapping_controls(files or [])
    if sidebar.button("Index these files", disabled=not files or not mapped, key="index_uploads"):
        bar = sidebar.progress(0.0, text="Reading files…")

        def on_progress(done: int, total: int) -> None:
            bar.progress(
                done / total if total else 1.0, text=f"Embedded {done} of {total} passages"
            )

        try:
            result = index_uploads([(f.name, f.getvalue()) for f in files], folder, on_progress,
                                   csv_mappings=mappings)
        except (IndexerError, ValueError) as err:
            bar.empty()
            st.session_state.upload_result = None
            sidebar.error(f"Nothing was added to the index. {err}")
            return
        bar.progress(1.0, text="Done")
        st.session_state.upload_result = result  # the cached Searcher loads the new build itself
    result: UploadResult | None = st.session_state.get("upload_result")
    if result is not None:
        report = result.report
        sidebar.success(
            f"Added {plural(report.documents_added, 'new document')} and updated "
            f"{plural(report.documents_updated, 'document')} from {plural(len(result.saved), 'file')} "
            f"({plural(report.passages_embedded, 'passage')} embedded). "
            f"The index now holds {plural(report.total_documents, 'document')}."
        )
        sidebar.caption(report.summary())
        for issue in result.issues:
            sidebar.warning(f"Skipped {issue}. Fix the file and upload it again.")


def csv_mapping_controls(files: list) -> tuple[dict[str, CsvMapping], bool]:
    """For each uploaded CSV without a `text` column, its columns and which of them hold the text,
    the title and the id, preselected by a guess. Returns the mappings by file name, and whether
    every one fits its file (else its box says what the file needs). Each CSV has its own."""
    mappings: dict[str, CsvMapping] = {}
    fits = True
    latest = {upload.name: upload for upload in files}  # the one saved when two share a name
    for upload in latest.values():
        if not is_csv(upload.name):
            continue
        data = upload.getvalue()
        columns = csv_columns(data)
        names = [c for c in dict.fromkeys(columns or []) if c]
        if columns is None or not needs_mapping(columns) or not names:
            continue  # nothing to choose: the build reads it as it is, or says why it cannot
        guess = suggest_mapping(data, columns)
        box = st.sidebar.container(border=True)
        box.markdown(
            f"**{escape_markdown(upload.name)}** has no `text` column. Choose which of its columns "
            f"({', '.join(escape_markdown(n) for n in names)}) holds each document's text; the "
            "others become metadata."
        )
        optional = [NO_COLUMN, *names]
        text = box.selectbox("Text (required)", names, index=names.index(guess.text),
                             key=f"csv_text:{upload.name}")
        title = box.selectbox("Title", optional, index=optional.index(guess.title or NO_COLUMN),
                              format_func=column_label, key=f"csv_title:{upload.name}")
        doc_id = box.selectbox("Id", optional, index=optional.index(guess.id or NO_COLUMN),
                               format_func=column_label, key=f"csv_id:{upload.name}",
                               help="None: each row is named by the file and its line.")
        try:
            mapping = CsvMapping(text=text, title=title or None, id=doc_id or None)
        except ValueError as err:
            box.error(str(err))
            fits = False
            continue
        problem = mapping_problem(data, mapping, upload.name)
        if problem:
            box.error(problem)
            fits = False
            continue
        mappings[upload.name] = mapping
    return mappings, fits


def column_label(column: str) -> str:
    return "none" if column == NO_COLUMN else column


# --- Search page --------------------------------------------------------------------------------


def show_stats(area, stats: IndexStats) -> None:
    """The figures of one build, into `area` (a container at the top of the page)."""
    cols = area.columns(3)
    cols[0].metric("Documents", f"{stats.documents:,}")
    cols[1].metric("Passages", f"{stats.passages:,}")
    cols[2].metric(
        "Last build", f"{stats.build_seconds:.1f} s",
        help="How long the last build took. After an upload that is the incremental build that "
        "added it, not the time to index everything.",
    )
    area.caption(
        f"Model **{escape_markdown(stats.model_label)}** ({stats.dimension} dimensions) · "
        f"vector index {stats.vector_index} · "
        f"built {stats.built_at:%Y-%m-%d %H:%M} UTC"
    )


def show_hit(rank: int, hit: Hit, query: str, mode: str, match: Relevance | None) -> None:
    """One hit; `match` is None while the model that scores relevance is loading."""
    with st.container(border=True):
        title = escape_markdown(hit.title or hit.doc_id)
        if match is None:
            st.markdown(f"**{rank}. {title}**")
        else:
            st.markdown(f"**{rank}. {title}** &nbsp; {match.badge}",
                        help=f"Cosine similarity {match.cosine:.2f} between the query and this "
                        "passage. Strong, fair and weak are cut where relevant passages of a test "
                        "collection score (see BENCHMARKS.md), the same in every mode.")
        st.caption(source_caption(hit))
        st.markdown(snippet_markdown(hit.text, query, title=hit.title))
        with st.expander("Full passage and scores"):
            st.caption(details_line(hit, mode, match))
            st.markdown(passage_markdown(hit.text, query))


def search_page(folder: Path) -> None:
    st.title("Search")
    try:
        choice = reranker_choice()
    except ValueError as err:  # a rerank_config.json that cannot be read
        st.error(f"The reranker ({reranker_setting() or 'models/reranker'}) cannot be used. {err} Set "
                 "SEMSEARCH_RERANKER=none to search without it.")
        return
    build = background_build(folder)
    try:
        searcher = searcher_for(folder)
        stats = searcher.stats()
    except IndexNotFoundError:
        if build is not None and build.status().running:
            preload_default_model()
            show_build_progress(build, had_index=False)
            st.info("The first documents are being indexed; the search box appears as soon as they "
                    "are committed, within a minute.")
            return
        if build is not None:
            show_build_progress(build, had_index=False)  # its error
        st.info(missing_index_message(folder))
        return
    except (IndexerError, SearchError, ValueError) as err:
        st.error(f"The index in {folder} cannot be opened. {err}")
        return
    except OSError as err:  # only the reranker remains: the Index wraps its own file errors
        st.error(f"The reranker ({choice.path}) cannot be loaded. {err} Set SEMSEARCH_RERANKER=none "
                 "to search without it.")
        return
    if build is not None:
        show_build_progress(build, had_index=True)
    stats_area = st.container()  # filled last, with the figures of the build that answered

    left, right = st.columns([5, 1])
    left.text_input("Query", key="query", placeholder=f"e.g. {EXAMPLE_QUERY}")
    right.number_input("Results", min_value=1, max_value=MAX_K, step=1, key="k")
    options = st.columns([3, 1], vertical_alignment="bottom")
    options[0].radio(
        "Mode",
        MODES,
        key="mode",
        horizontal=True,
        format_func=MODE_LABELS.__getitem__,
        help="Dense compares meanings (embeddings); BM25 matches exact words (names, codes, rare "
        "terms); hybrid fuses both lists, by default as a weighted sum of their z-scaled scores.",
    )
    if st.session_state.mode == "hybrid":
        fusion_controls(searcher, options[0])
    if searcher.reranker is not None:
        options[1].toggle(
            "Rerank",
            key="rerank",
            help=f"Rescore the top {searcher.config.rerank_candidates} documents with the "
            f"cross-encoder reranker ({Path(str(choice.path)).name}): slower, usually sharper.",
        )
    query: str = st.session_state.query
    mode: str = st.session_state.mode
    if query:
        st.query_params["q"] = query
    else:
        st.query_params.pop("q", None)
    if mode != DEFAULT_MODE:
        st.query_params["mode"] = mode
    else:
        st.query_params.pop("mode", None)
    result = run_search(searcher, query, int(st.session_state.k), mode,
                        searcher.reranker is not None and bool(st.session_state.rerank),
                        st.session_state.get("fusion"), st.session_state.get("fusion_weight"))
    if result is not None and result.stats is not None:
        stats = result.stats
    show_stats(stats_area, stats)
    if result is None:
        return
    if not result.hits and stats.documents == 0:
        st.info(
            "The index holds no documents yet. Add some under **Add documents** in the sidebar."
        )
        return
    if not result.hits:
        st.info(
            "No passage contains any of the query's words (BM25 matches words exactly, ignoring "
            "words such as *the* or *of*). Try the dense or hybrid mode, or other words."
        )
        return
    st.caption(result_caption(result))
    cosines = passage_cosines(searcher, query, result)
    matches: list[Relevance | None] = [None] * len(result.hits)
    if cosines is not None:
        matches = [relevance(c) for c in cosines]
        weak = weak_results_message(max(matches, key=lambda m: m.cosine))
        if weak:
            st.warning(weak)
    else:
        rerun_when_model_loads(searcher)
    for rank, (hit, match) in enumerate(zip(result.hits, matches, strict=True), start=1):
        show_hit(rank, hit, query, result.mode, match)


@st.fragment(run_every=MODEL_POLL_SECONDS)
def rerun_when_model_loads(searcher: Searcher) -> None:
    """Search again, in the mode asked, as soon as the model has loaded."""
    if not searcher.model_loading:
        st.rerun()


def passage_cosines(searcher: Searcher, query: str, result: SearchResult) -> list[float] | None:
    """Each hit's cosine with the query under the index's model: one scale in every mode; None
    while the model loads in the background, which the BM25 answer meanwhile does not wait for.

    Dense hits carry it as their retriever score; for the others the passages are encoded
    again as the indexer encoded them (`passage_text`), k short texts per search.
    """
    if result.mode == "dense":
        return [h.retriever_score if h.retriever_score is not None else h.score for h in result.hits]
    if searcher.model_loading:
        return None
    texts = [passage_text(h.title, h.text) for h in result.hits]
    return [float(c) for c in similarity_matrix([query], texts, model=searcher.model)[0]]


def fusion_controls(searcher: Searcher, area) -> None:
    """How hybrid fuses its two lists, and the dense list's share; defaults from SearchConfig."""
    if "fusion" not in st.session_state:
        st.session_state.fusion = searcher.config.fusion_for().method
        st.session_state.fusion_weight = searcher.config.fusion_for().weight

    def method_changed() -> None:  # each method starts at the weight measured best for it
        st.session_state.fusion_weight = searcher.config.fusion_for(st.session_state.fusion).weight

    left, right = area.columns(2)
    left.selectbox("Fusion", FUSIONS, key="fusion", format_func=FUSION_LABELS.get,
                   on_change=method_changed,
                   help="How hybrid combines the dense and BM25 lists: by rank, or by their "
                   "scores scaled to one range.")
    right.slider("Dense share", 0.0, 1.0, step=0.05, key="fusion_weight",
                 help="0 ranks by BM25 alone, 1 by dense alone.")


def run_search(searcher: Searcher, query: str, k: int, mode: str, rerank: bool,
               fusion: str | None = None, fusion_weight: float | None = None) -> SearchResult | None:
    """The search the page asks for, or None (with a message) when there is nothing to show.

    The default mode is passed as no mode, so the Searcher's rule for an index
    without BM25 applies (it runs dense and says why); the page shows its reason.
    """
    if not query:
        st.info(f"Type a question or a few words, for example: *{EXAMPLE_QUERY}*.")
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QueryTruncatedWarning)
        try:
            hybrid = mode == "hybrid"
            result = searcher.search_detailed(
                query, k, mode=None if mode == DEFAULT_MODE else mode, rerank=rerank,
                fusion=fusion if hybrid else None, fusion_weight=fusion_weight if hybrid else None,
            )
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


# --- Compare page -------------------------------------------------------------------------------


def heatmap(sentences: list[str], scores: np.ndarray) -> alt.LayerChart:
    """Rows are labelled with the (shortened) sentence, columns with its number, to stay legible.

    altair and pandas are imported here, on the Compare page, not at the top: together they
    take most of a second, which the search page's first answer after a restart need not wait for.
    """
    import altair as alt
    import pandas as pd

    n = len(sentences)
    rows = [f"{i}. {textwrap.shorten(s, 45, placeholder='…')}" for i, s in enumerate(sentences, 1)]
    columns = [str(i) for i in range(1, n + 1)]
    frame = pd.DataFrame(
        {
            "row": [rows[i] for i in range(n) for _ in range(n)],
            "column": [columns[j] for _ in range(n) for j in range(n)],
            "similarity": scores.astype(float).ravel(),
        }
    )
    base = alt.Chart(frame).encode(
        x=alt.X("column:N", sort=columns, title=None, axis=alt.Axis(labelAngle=0, orient="top")),
        y=alt.Y("row:N", sort=rows, title=None, axis=alt.Axis(labelLimit=320)),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "similarity:Q",
            title="cosine",
            scale=alt.Scale(scheme="blues", domain=[0, 1], clamp=True),
            legend=None,  # every cell prints its score
        ),
        tooltip=["row", "column", alt.Tooltip("similarity:Q", format=".3f")],
    )
    values = base.mark_text(fontSize=12).encode(
        text=alt.Text("similarity:Q", format=".2f"),
        color=alt.when(alt.datum.similarity > 0.6)
        .then(alt.value("white"))
        .otherwise(alt.value("black")),
    )
    return (cells + values).properties(height=HEATMAP_ROW_PX * n)


def compare_model(folder: Path) -> tuple[object | None, str]:
    """The open index's bi-encoder and its label, so Compare scores with the model Search uses;
    (None, a note) for the default model when no index opens."""
    try:
        searcher = searcher_for(folder)
        return searcher.model, f"**{escape_markdown(searcher.stats().model_label)}**, the index's model"
    except IndexNotFoundError:
        reason = "there is no index yet"
    except (IndexerError, SearchError, ValueError, OSError):
        reason = "the index cannot be opened (see the Search page)"
    return None, f"**{escape_markdown(DEFAULT_MODEL_NAME)}**, the default model, as {reason}"


def compare_page(folder: Path) -> None:
    st.title("Compare sentences")
    model, label = compare_model(folder)
    st.caption(
        f"Cosine similarity of sentence embeddings by {label}: near 1 for the same meaning, near 0 "
        "for unrelated."
    )

    st.subheader("Two sentences")
    first = st.text_input("First sentence", value=EXAMPLE_PAIR[0], key="first")
    second = st.text_input("Second sentence", value=EXAMPLE_PAIR[1], key="second")
    if first.strip() and second.strip():
        st.metric("Cosine similarity", f"{similarity(first, second, model=model):.3f}")
    else:
        st.info("Type a sentence in both boxes to compare them.")

    st.subheader("Many sentences")
    text = st.text_area(
        "Sentences, one per line", value=EXAMPLE_SENTENCES, height=180, key="sentences"
    )
    n_pairs = int(
        st.columns(4)[0].number_input(
            "Pairs to list", min_value=1, max_value=100, value=5, key="n_pairs"
        )
    )
    sentences = [line.strip() for line in text.splitlines() if line.strip()]
    if len(sentences) < 2:
        st.info("Enter at least two sentences, one per line, to see how similar they are.")
        return
    try:
        pairs = top_pairs(sentences, n_pairs, model=model)
        scores = (
            similarity_matrix(sentences, model=model) if len(sentences) <= MAX_HEATMAP_SENTENCES else None
        )
    except ValueError as err:
        st.error(f"Could not compare these sentences. {err}")
        return
    if scores is None:
        st.info(
            f"{len(sentences)} sentences are too many for a readable heatmap "
            f"(at most {MAX_HEATMAP_SENTENCES}); the most similar pairs are below."
        )
    else:
        st.altair_chart(heatmap(sentences, scores), width="stretch")
    st.markdown("**Most similar pairs**")
    import pandas as pd  # with altair: only the Compare page needs them (see `heatmap`)

    st.table(
        pd.DataFrame(
            {
                "Pair": [f"{p.i + 1} & {p.j + 1}" for p in pairs],
                "Sentence": [escape_markdown(sentences[p.i]) for p in pairs],
                "Most similar to": [escape_markdown(sentences[p.j]) for p in pairs],
                "Similarity": [f"{p.score:.3f}" for p in pairs],
            }
        ),
        hide_index=True,
    )


# --- Layout -------------------------------------------------------------------------------------


def main() -> None:
    st.set_page_config(page_title="Semantic search", page_icon="🔎", layout="wide")
    initial_state()
    folder = index_dir()
    st.sidebar.title("Semantic search")
    page = st.sidebar.radio("Page", PAGES, key="page")
    st.sidebar.caption(f"Index: `{folder}`")
    upload_section(folder)
    if page == COMPARE_PAGE:
        st.query_params.clear()
        st.query_params["page"] = COMPARE_PAGE.lower()
        compare_page(folder)
    else:
        st.query_params.pop("page", None)
        search_page(folder)


main()
