"""What the search page writes about results: labels, captions and the line under each hit.

Pure functions over `Hit` and `SearchResult`, so each can be tested without
Streamlit. Everything from the index (ids, titles, sources) is escaped: they
are the user's data, and the page renders Markdown.

Relevance is the calibrated probability that a hit is relevant (`Hit.relevance`, from the
score that ranks it: `search.relevance`), so a label never ranks a lower hit above a higher one
and means the same for every query. BM25 scores, fused scores and reranker logits have no fixed
range; they stay in the details line. A dense ranking with no fitted curve (an index of another
bi-encoder) is labelled by the cosine of query and passage, which is what ranks it, with the cut points that
`bench/bench_relevance_labels.py` measured on three dev sets of different kinds (SciFact train,
Wikipedia leads, Wikinews headlines; never a test split): "strong" from the median cosine of a
query with its relevant passage, "fair" from the 10th percentile, each the lowest of the three
sets, and "weak" below. Any other ranking without a curve (BM25; hybrid over another bi-encoder)
shows no label: a cosine label there would rank a lower hit above a higher one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from search import Hit, SearchResult
from search.params import SCORE_NAMES
from search.relevance import NO_ANSWER_BELOW
from ui.highlight import escape_name

MODE_LABELS = {"dense": "dense (meaning)", "bm25": "BM25 (exact words)", "hybrid": "hybrid (both)"}
# Cosine cut points, chosen to hold on every dev set bench/bench_relevance_labels.py measures
# (BENCHMARKS.md, "Relevance labels"): strong is the lowest median cosine of relevant passages
# (SciFact train 0.61, Wikipedia leads 0.51, Wikinews headlines 0.67), so at least half of the
# relevant hits read "strong" on each; fair is the lowest 10th percentile (0.40, 0.33, 0.54),
# so at most one relevant hit in ten reads "weak" on each. A random unrelated passage reaches
# fair less than one time in ten on every set (its 90th percentile: 0.28, 0.18, 0.22).
STRONG_COSINE = 0.51
FAIR_COSINE = 0.33
RELEVANCE_BAR_CELLS = 5
# A hit's details list at most this many of its document's fields, each value cut at this length.
MAX_FIELDS_SHOWN = 20
MAX_FIELD_CHARS = 120


# Cut points on the calibrated probability of relevance (`search.relevance`): "strong" where a
# hit is more likely relevant than not, "weak" below one chance in five.
STRONG_PROBABILITY = 0.5
FAIR_PROBABILITY = 0.2


@dataclass(frozen=True)
class Relevance:
    """How well a passage matches its query. `calibrated`: `value` is the probability that the
    hit is relevant (`Hit.relevance`, from the score that ranks it, so labels never contradict the
    order); else it is the cosine of query and passage, for an index whose bi-encoder has no
    fitted curve."""

    value: float
    label: str  # "strong match", "fair match" or "weak match"
    color: str  # a Streamlit Markdown colour
    calibrated: bool = False

    @property
    def cosine(self) -> float:
        return self.value

    @property
    def badge(self) -> str:
        """Markdown: a coloured label and a bar of filled cells, e.g. ":green-badge[strong match ▰▰▰▰▱ 78%]"."""
        shown = f" {self.value:.0%}" if self.calibrated else ""
        return f":{self.color}-badge[{self.label} {relevance_bar(self.value, calibrated=self.calibrated)}{shown}]"

    @property
    def explanation(self) -> str:
        """What the label means, for its help text."""
        if self.calibrated:
            return (f"Probability {self.value:.0%} that this passage is relevant: of the hits that scored "
                    "as this one on four dev collections, that share were relevant (BENCHMARKS.md, "
                    "\"Relevance calibration\"). It follows the ranking, so a lower hit never reads higher.")
        return (f"Cosine similarity {self.value:.2f} between the query and this passage. Strong, fair and weak "
                "are cut where relevant passages of the dev collections score (see BENCHMARKS.md); this "
                "index's model has no calibrated relevance.")


def calibrated_relevance(probability: float) -> Relevance:
    if probability >= STRONG_PROBABILITY:
        return Relevance(probability, "strong match", "green", calibrated=True)
    if probability >= FAIR_PROBABILITY:
        return Relevance(probability, "fair match", "orange", calibrated=True)
    return Relevance(probability, "weak match", "gray", calibrated=True)


def relevance(cosine: float) -> Relevance:
    if cosine >= STRONG_COSINE:
        return Relevance(cosine, "strong match", "green")
    if cosine >= FAIR_COSINE:
        return Relevance(cosine, "fair match", "orange")
    return Relevance(cosine, "weak match", "gray")


def relevance_bar(value: float, cells: int = RELEVANCE_BAR_CELLS, calibrated: bool = False) -> str:
    """Filled cells: a probability fills its share of the cells; a cosine fills two cells at the
    fair cut and three at the strong cut."""
    if calibrated:
        filled = value * cells
    else:
        filled = 3 + (value - STRONG_COSINE) / (STRONG_COSINE - FAIR_COSINE)
    filled = round(min(max(filled, 0.0), float(cells)))
    return "▰" * filled + "▱" * (cells - filled)


def weak_results_message(best: Relevance) -> str | None:
    """A warning when even the best hit shown is unlikely to be relevant: the query may have no
    answer here. Calibrated: under `search.relevance.NO_ANSWER_BELOW` (bench/bench_no_answer.py);
    a cosine: a weak match."""
    if best.calibrated:
        if best.value >= NO_ANSWER_BELOW:
            return None
        return (f"None of these passages is likely to answer the query: the best is relevant with "
                f"probability {best.value:.0%}, under {NO_ANSWER_BELOW:.0%}. The index may hold nothing "
                "about this; try other words.")
    if best.label != "weak match":
        return None
    return (
        f"None of these passages matches the query well: the best has cosine similarity "
        f"{best.cosine:.2f}, below {FAIR_COSINE:.2f}, where at least nine relevant passages in ten score "
        "higher. The index may hold nothing about this; try other words."
    )


def hit_relevance(hits: list[Hit], cosines: list[float] | None) -> list[Relevance | None]:
    """Each hit's label: its calibrated relevance when every hit has one, else its cosine's (given
    for a ranking by cosine only), else None (no label)."""
    if hits and all(hit.relevance is not None for hit in hits):
        return [calibrated_relevance(float(hit.relevance)) for hit in hits]  # type: ignore[arg-type]
    if cosines is None:
        return [None] * len(hits)
    return [relevance(c) for c in cosines]


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def result_caption(result: SearchResult) -> str:
    caption = f"{len(result.hits)} best matching documents, best first, by {MODE_LABELS[result.mode]}"
    if result.reranked:
        verb = "was" if result.reranked == 1 else "were"
        caption += f"; the top {plural(result.reranked, 'candidate')} {verb} reranked by the cross-encoder"
    return f"{caption} ({result.timings.total_s * 1000:.0f} ms)."


def source_caption(hit: Hit) -> str:
    """The short line under a hit's title: where it comes from and where in it the passage is
    ("papers/a.pdf · p. 7", "guide.md · Installation › Linux"); details go in an expander."""
    parts = [escape_name(hit.doc_id)]
    if hit.source and hit.source != hit.doc_id:
        parts.append(escape_name(hit.source))
    if hit.location:
        parts.append(f"**{escape_name(hit.location.label)}**")
    if hit.merged:
        shown = ", ".join(escape_name(doc_id) for doc_id in hit.merged[:3])
        more = f" and {len(hit.merged) - 3} more" if len(hit.merged) > 3 else ""
        parts.append(f"the same passage in {shown}{more}, merged here")
    return " · ".join(parts)


def hit_markdown(rank: int, hit: Hit, match: Relevance | None, snippet: str) -> str:
    """A hit as a person scans it, in one Markdown element: "**3. title**" and its relevance label,
    then its source line in small grey (`source_caption`), then `snippet` (Markdown already)."""
    title = f"**{rank}. {escape_name(hit.title or hit.doc_id)}**"
    if match is not None:
        title += f" &nbsp; {match.badge}"
    return f"{title}  \n:small[:gray[{source_caption(hit)}]]\n\n{snippet}"


def details_line(hit: Hit, mode: str, match: Relevance | None) -> str:
    """Every raw score of a hit, named, and where its passage sits in the document (no cosine
    while the model is loading)."""
    parts: list[str] = [] if match is None else [
        f"relevance {match.value:.2f}" if match.calibrated else f"cosine {match.cosine:.3f}"]
    if match is not None and match.calibrated and mode == "dense":
        parts.append(f"cosine {hit.retriever_score if hit.retriever_score is not None else hit.score:.3f}")
    if hit.retriever_score is not None and mode != "dense":
        parts.append(f"{SCORE_NAMES[mode]} {hit.retriever_score:.3f}")
    elif hit.retriever_score is None and mode != "dense":
        parts.append(f"{SCORE_NAMES[mode]} {hit.score:.3f}")
    if hit.rerank_score is not None:
        parts.append(f"rerank {hit.rerank_score:.3f}")
    parts.append(f"characters {hit.start_char}–{hit.end_char} of the document")
    return " · ".join(parts)


def fields_markdown(metadata: Mapping[str, Any]) -> str | None:
    """A document's metadata for its hit's details, on one line in the document's order:
    "**Status** Open · **Labels** auth, email" (a list's values joined, an object as JSON), at most
    `MAX_FIELDS_SHOWN` fields (then how many more) and `MAX_FIELD_CHARS` a value; None when it has
    none. These are the fields the Filter selects on. Names and values are escaped: they are the
    user's data."""
    shown = []
    for name, value in metadata.items():
        text = _field_text(value)
        if text:
            shown.append(f"**{escape_name(str(name))}** {escape_name(text)}")
    if not shown:
        return None
    more = len(shown) - MAX_FIELDS_SHOWN
    return " · ".join(shown[:MAX_FIELDS_SHOWN]) + (f" · and {plural(more, 'more field')}" if more > 0 else "")


def _field_text(value: Any) -> str:
    """A metadata value on one line, cut at `MAX_FIELD_CHARS`; "" for null or an empty list."""
    if value is None:
        return ""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, list):
        text = ", ".join(part for part in (_field_text(item) for item in value) if part)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False, default=str)
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_FIELD_CHARS else text[: MAX_FIELD_CHARS - 1].rstrip() + "…"
