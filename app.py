"""Streamlit pages over an index: search it, compare sentences, add documents.

Every action calls search/ or indexer/; this file only lays out widgets and
turns their errors into messages. Run with `make run`, or
`streamlit run app.py` with SEMSEARCH_INDEX naming the index folder, and
optionally SEMSEARCH_RERANKER naming a CrossEncoder folder to rerank with (default: the
reranker shipped in models/reranker; "none" turns reranking off).
A link such as `/?q=how+do+I+open+a+file&mode=hybrid` opens the search page
with that query and retrieval mode.
"""

from __future__ import annotations

import contextlib
import os
import textwrap
import warnings
from pathlib import Path

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from indexer import IndexerError
from search import (
    MODES,
    CrossEncoderReranker,
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
from search.config import shipped_reranker
from search.rerank import load_rerank_config
from ui.highlight import escape_markdown, passage_markdown, snippet_markdown
from ui.uploads import ACCEPTED_TYPES, UploadResult, index_uploads

REPO_ROOT = Path(__file__).resolve().parent
DEFAULT_INDEX = Path("indexes") / "demo"
SEARCH_PAGE, COMPARE_PAGE = "Search", "Compare"
PAGES = (SEARCH_PAGE, COMPARE_PAGE)
DEFAULT_K = 5
MAX_K = 50
# Beyond this many sentences a heatmap is unreadable; the pairs table still covers them all.
MAX_HEATMAP_SENTENCES = 40
HEATMAP_ROW_PX = 36
DEFAULT_MODE = SearchConfig().mode
MODE_LABELS = {"dense": "dense (meaning)", "bm25": "BM25 (exact words)", "hybrid": "hybrid (both)"}
SCORE_LABELS = {"dense": "cosine", "bm25": "BM25", "hybrid": "fused"}
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


def reranker_dir() -> str:
    """SEMSEARCH_RERANKER (a CrossEncoder folder; relative to the repository root), else the shipped
    reranker; "" for none ("none" in SEMSEARCH_RERANKER, or a checkout without models/reranker)."""
    value = os.environ.get("SEMSEARCH_RERANKER", "").strip()
    if value.lower() in ("none", "off", "0"):
        return ""
    if not value:
        shipped = shipped_reranker()
        return str(shipped) if shipped is not None else ""
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else REPO_ROOT / path)


@st.cache_resource(show_spinner="Loading the index and the models…")
def load_searcher(folder: str, reranker: str = "") -> Searcher:
    """One Searcher (and so one model and one copy of the vectors) per index folder per process.

    A failed load raises and is not cached, so building the index and reloading
    the page is enough.
    """
    return Searcher(folder, reranker=CrossEncoderReranker(reranker) if reranker else None)


def searcher_for(folder: Path) -> Searcher:
    return load_searcher(str(folder), reranker_dir())


def missing_index_message(folder: Path) -> str:
    return (
        f"**No index found in `{folder}`.** To get started, either:\n"
        f"- build one from your files: `python -m indexer build --source PATH --index {folder}`;\n"
        "- upload files under **Add documents** in the sidebar to start an index here;\n"
        "- or try the demo over Python's own documentation: `make demo-index`, then `make run` "
        f"(it serves `{DEFAULT_INDEX}`).\n\n"
        "Then reload this page."
    )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def model_label(spec: str) -> str:
    """`default:all-MiniLM-L6-v2` shows as the model name, a local model folder as its name."""
    return spec.split(":", 1)[1] if spec.startswith("default:") else Path(spec).name


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
        folder = reranker_dir()
        st.session_state.rerank = bool(folder) and load_rerank_config(folder).enabled_by_default


# --- Adding documents ---------------------------------------------------------------------------


def upload_section(folder: Path) -> None:
    sidebar = st.sidebar
    sidebar.subheader("Add documents")
    files = sidebar.file_uploader(
        "Files to index",
        type=list(ACCEPTED_TYPES),
        accept_multiple_files=True,
        key="uploads",
        help=".txt and .md files become one document each; .jsonl lines and .csv rows "
        "need a `text` field (and may have `id` and `title`).",
    )
    if sidebar.button("Index these files", disabled=not files, key="index_uploads"):
        bar = sidebar.progress(0.0, text="Reading files…")

        def on_progress(done: int, total: int) -> None:
            bar.progress(
                done / total if total else 1.0, text=f"Embedded {done} of {total} passages"
            )

        try:
            result = index_uploads([(f.name, f.getvalue()) for f in files], folder, on_progress)
        except (IndexerError, ValueError) as err:
            bar.empty()
            st.session_state.upload_result = None
            sidebar.error(f"Nothing was added to the index. {err}")
            return
        bar.progress(1.0, text="Done")
        st.session_state.upload_result = result
        # The search page explains a missing index, or a reranker that cannot be loaded.
        with contextlib.suppress(IndexNotFoundError, OSError):
            searcher_for(folder).refresh()
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


# --- Search page --------------------------------------------------------------------------------


def show_stats(stats: IndexStats) -> None:
    cols = st.columns(3)
    cols[0].metric("Documents", f"{stats.documents:,}")
    cols[1].metric("Passages", f"{stats.passages:,}")
    cols[2].metric(
        "Build time", f"{stats.build_seconds:.1f} s", help="How long the last build took"
    )
    st.caption(
        f"Model **{model_label(stats.model)}** ({stats.dimension} dimensions) · "
        f"built {stats.built_at:%Y-%m-%d %H:%M} UTC"
    )


def score_label(hit: Hit, mode: str) -> str:
    """The score named by what it is ("cosine 0.812", "fused 0.032"), or both scores of a
    reranked hit ("rerank 4.210 · BM25 11.503"), so one mode's scores are not read as another's."""
    if hit.rerank_score is None or hit.retriever_score is None:
        return f"{SCORE_LABELS[mode]} {hit.score:.3f}"
    return f"rerank {hit.rerank_score:.3f} · {SCORE_LABELS[mode]} {hit.retriever_score:.3f}"


def result_caption(result: SearchResult) -> str:
    caption = f"{len(result.hits)} best matching documents, best first, by {MODE_LABELS[result.mode]}"
    if result.reranked:
        caption += (
            f"; the top {plural(result.reranked, 'candidate')} were reranked by the cross-encoder"
        )
    return f"{caption} ({result.timings.total_s * 1000:.0f} ms)."


def show_hit(rank: int, hit: Hit, query: str, mode: str) -> None:
    with st.container(border=True):
        title = escape_markdown(hit.title or hit.doc_id)
        st.markdown(f"**{rank}. {title}** &nbsp; :gray[{score_label(hit, mode)}]")
        st.caption(f"{hit.doc_id} · {hit.source} · characters {hit.start_char}–{hit.end_char}")
        st.markdown(snippet_markdown(hit.text, query))
        with st.expander("Full passage"):
            st.markdown(passage_markdown(hit.text, query))


def search_page(folder: Path) -> None:
    st.title("Search")
    try:
        searcher = searcher_for(folder)
        stats = searcher.stats()
    except IndexNotFoundError:
        st.info(missing_index_message(folder))
        return
    except (IndexerError, SearchError) as err:
        st.error(f"The index in {folder} cannot be opened. {err}")
        return
    except OSError as err:  # only the reranker remains: the Searcher wraps index file errors
        st.error(f"The reranker ({reranker_dir()}) cannot be loaded. {err} Set SEMSEARCH_RERANKER=none "
                 "to search without it.")
        return
    show_stats(stats)

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
        "terms); hybrid fuses both rankings by reciprocal rank.",
    )
    if searcher.reranker is not None:
        options[1].toggle(
            "Rerank",
            key="rerank",
            help=f"Rescore the top {searcher.config.rerank_candidates} documents with the "
            f"cross-encoder reranker ({Path(reranker_dir()).name}): slower, usually sharper.",
        )
    query: str = st.session_state.query
    k = int(st.session_state.k)
    mode: str = st.session_state.mode
    rerank = searcher.reranker is not None and bool(st.session_state.rerank)
    if query:
        st.query_params["q"] = query
    else:
        st.query_params.pop("q", None)
    if mode != DEFAULT_MODE:
        st.query_params["mode"] = mode
    else:
        st.query_params.pop("mode", None)
    if not query:
        st.info(f"Type a question or a few words, for example: *{EXAMPLE_QUERY}*.")
        return
    if mode != "dense" and not searcher.has_bm25:
        st.warning(
            f"This index was built before BM25 support, so it is searched in dense mode. Run "
            f"`python -m indexer build --source PATH --index {folder}` once to add BM25 "
            "(nothing is re-embedded), then reload this page."
        )
        mode = "dense"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QueryTruncatedWarning)
        try:
            result = searcher.search_detailed(query, k, mode=mode, rerank=rerank)
        except EmptyQueryError as err:
            st.warning(str(err))
            return
        except (SearchError, ValueError) as err:
            st.error(f"The search failed. {err}")
            return
    for warning in caught:
        if issubclass(warning.category, QueryTruncatedWarning):
            st.warning(str(warning.message))
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
    for rank, hit in enumerate(result.hits, start=1):
        show_hit(rank, hit, query, result.mode)


# --- Compare page -------------------------------------------------------------------------------


def heatmap(sentences: list[str], scores: np.ndarray) -> alt.LayerChart:
    """Rows are labelled with the (shortened) sentence, columns with its number, to stay legible."""
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


def compare_page() -> None:
    st.title("Compare sentences")
    st.caption(
        "Cosine similarity of sentence embeddings: near 1 for the same meaning, near 0 for unrelated."
    )

    st.subheader("Two sentences")
    first = st.text_input("First sentence", value=EXAMPLE_PAIR[0], key="first")
    second = st.text_input("Second sentence", value=EXAMPLE_PAIR[1], key="second")
    if first.strip() and second.strip():
        st.metric("Cosine similarity", f"{similarity(first, second):.3f}")
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
        pairs = top_pairs(sentences, n_pairs)
        scores = similarity_matrix(sentences) if len(sentences) <= MAX_HEATMAP_SENTENCES else None
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
        compare_page()
    else:
        st.query_params.pop("page", None)
        search_page(folder)


main()
