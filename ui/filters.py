"""The search page's metadata filter: pick a field the index holds, then values, a range or a
prefix; the page shows the filter as the JSON that the API and `python -m search --filter` take."""

from __future__ import annotations

import json
import math
from typing import Any

import streamlit as st

from search.searcher import Searcher

NO_FIELD = ""
MAX_CHOICES = 50  # distinct values offered in a list; past this, the field filters by prefix
FIELD_HELP = {"_type": "the file's extension", "_path": "the file it was read from", "_id": "the document's id"}


def filter_controls(searcher: Searcher, area) -> dict[str, Any] | None:
    """The filter the controls ask for, or None; drawn in `area`."""
    state = st.session_state
    expander = area.expander("Filter", expanded=bool(state.get("filter_field")))
    fields = _fields(searcher)
    names = [NO_FIELD, *(name for name, _ in fields)]
    counts = dict(fields)
    if state.get("filter_field") not in names:
        state.filter_field = NO_FIELD
    field = expander.selectbox(
        "Field", names, key="filter_field",
        format_func=lambda n: "(no filter)" if n == NO_FIELD else f"{n} ({FIELD_HELP.get(n, f'{counts[n]:,} documents')})",
        help="Keep only documents whose field matches, before ranking: k hits come back whenever k documents match.")
    if field == NO_FIELD:
        return None
    condition = _condition(searcher, field, expander)
    if condition is None:
        return None
    flt = {field: condition}
    expander.caption("The same filter for the API (`\"filter\"` in POST /search) and `python -m search --filter`:")
    expander.code(json.dumps(flt), language="json")
    return flt


def _fields(searcher: Searcher) -> list[tuple[str, int]]:
    """The index's fields, read once per build (a scan of the documents' metadata)."""
    build = searcher.index.build_id
    cached = st.session_state.get("_filter_fields")
    if cached is None or cached[0] != build:
        cached = (build, searcher.index.metadata_fields())
        st.session_state["_filter_fields"] = cached
    return cached[1]


def _condition(searcher: Searcher, field: str, area) -> Any:
    summary = searcher.index.field_summary(field)
    if summary.number_range is not None:
        low, high = summary.number_range
        if low < high:
            whole = low.is_integer() and high.is_integer()
            step = 1.0 if whole else (high - low) / 100
            chosen = area.slider(f"{field} between", low, high, (low, high), step=step, key=f"filter_range_{field}")
            if chosen == (low, high):
                return None
            lo, hi = (int(v) if whole else v for v in chosen)
            return {"$gte": lo, "$lte": hi}
    if summary.booleans and not summary.strings:
        choice = area.radio(f"{field} is", ["true", "false"], horizontal=True, key=f"filter_flag_{field}")
        return choice == "true"
    if summary.distinct_strings and summary.distinct_strings <= MAX_CHOICES:
        values = area.multiselect(f"{field} is one of", list(summary.strings), key=f"filter_values_{field}")
        return {"$in": values} if values else None
    prefix = area.text_input(f"{field} starts with", key=f"filter_prefix_{field}",
                             placeholder=summary.strings[0][: max(1, math.ceil(len(summary.strings[0]) / 2))]
                             if summary.strings else "")
    return {"$prefix": prefix} if prefix else None
