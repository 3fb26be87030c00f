"""The compare page: the cosine similarity of two sentences, and a heatmap and the most similar
pairs of many, under the open index's model (the default model without one)."""

from __future__ import annotations

import contextlib
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import streamlit as st

from indexer import IndexerError
from indexer.model_spec import DEFAULT_MODEL_NAME
from search import (
    IndexNotFoundError,
    QueryTruncatedWarning,
    SearchError,
    similarity,
    similarity_matrix,
    top_pairs,
)
from search.sentence_similarity import unreadable_sentences
from ui.highlight import escape_markdown
from ui.resources import searcher_for

if TYPE_CHECKING:
    import altair as alt

# Beyond this many sentences a heatmap is unreadable; the pairs table still covers them all.
MAX_HEATMAP_SENTENCES = 40
HEATMAP_ROW_PX = 36
EXAMPLE_PAIR = ("How do I read a file line by line?", "Iterate over the lines of a text file.")
EXAMPLE_SENTENCES = """\
How do I read a file line by line?
Iterate over the lines of a text file.
Sort a list of numbers in place.
The sorted() function returns a new sorted list.
The weather is sunny today.
"""


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


@contextlib.contextmanager
def truncation_warnings() -> Iterator[None]:
    """Show each `QueryTruncatedWarning` the block raises (a sentence longer than the model reads,
    compared by its start only) on the page, as the search page does for a query."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", QueryTruncatedWarning)
        yield
    for warning in caught:
        if issubclass(warning.category, QueryTruncatedWarning):
            st.warning(escape_markdown(str(warning.message)))


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
        try:
            with truncation_warnings():
                st.metric("Cosine similarity", f"{similarity(first, second, model=model):.3f}")
        except ValueError as err:  # a sentence without a word the model knows
            st.warning(f"No similarity to show: {escape_markdown(str(err))}")
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
    unknown = set(unreadable_sentences(sentences, model=model))
    if unknown:
        shown = "; ".join(f"sentence {pos + 1} ({escape_markdown(sentences[pos][:40])})" for pos in sorted(unknown))
        st.warning(f"Left out, as they hold no word the model knows (any two such sentences would score 1.00): {shown}.")
        sentences = [s for pos, s in enumerate(sentences) if pos not in unknown]
    if len(sentences) < 2:
        st.info("Enter at least two sentences, one per line, to see how similar they are.")
        return
    try:
        with truncation_warnings():
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
