"""Calibrated relevance: the probability that a hit is relevant, from the score that ranks it.

Each ranking (dense, BM25, hybrid by fusion method and weight, each of them reranked) has its
own curve, P(relevant | score), fitted by isotonic regression on the dev sets (SciFact train
queries held out, Wikipedia lead questions, Wikinews headlines, the questions of Debian's FAQs
against their answers; never a test split) by
`bench/bench_calibration.py` and shipped in `search/calibration.json`. A curve never decreases,
so relevance never ranks a lower hit above a higher one, and it reads the same for every query:
0.7 means seven hits in ten that score so were relevant on the dev sets. BENCHMARKS.md
("Relevance calibration") holds the reliability curves and the calibration error.

A curve serves only where it held across the dev sets: fitted on the others and measured on the
set left out, its calibration error must be below that of the cosine labels it replaces, measured
the same way (`HOLDS`). The hybrid and reranked curves beat them by far (about 0.02 against 0.055),
the dense one by less (0.053 against 0.060): it reads the cosine over the square root of the list's top
(`Curve.relative`, chosen by bench_calibration.py), since a cosine means something else in
collections of other kinds. A curve relative to the top alone (exponent 1) would give every
query's best hit the same relevance, an off-topic query's too, so that is never shipped
(bench_calibration.py's KEPT_BELOW).

BM25's curve is measured the same way (0.054 against the labels' 0.047) and is never served
(`COLLECTION_SCALED`): a BM25 score grows with the collection, its IDF being the log of a document
count, and the dev collections hold 921 to 10,342 passages, far from a handful or a million,
so no dev set could show it; on four documents, the passage holding every word of "boil the pasta" read 1%. BM25 hits carry no
relevance, and the app shows no label where the ranking is not by the score a label reads.

A hybrid weight set by hand uses the curve fitted at the nearest weight of its method, and says
so (`Calibrated.note`). The dense and hybrid curves were fitted with the default bi-encoder;
under another model the cosines mean something else, so those rankings get no relevance (None),
and the note says why.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from search.fusion import Fusion

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
# A curve holds when its error out of sample is below this multiple of the cosine labels' error
# (1: it must beat the labels it replaces).
HOLDS = 1.0
# Rankings whose scores grow with the collection's size, which the dev sets (all of about one size)
# cannot calibrate: their curves are measured and recorded, never served.
COLLECTION_SCALED = {"bm25": "a BM25 score grows with the collection (its IDF is the log of a document count), "
                             "and the dev collections, of 921 to 10,342 passages, fix no scale for yours"}


# A result list is said to hold nothing likely to answer when its best hit's relevance is under
# this. Chosen by bench/bench_no_answer.py on the dev sets, against a bound on the chance that any
# hit shown is relevant (the sum of their relevances), which warned about fewer lists that held an
# answer but caught far fewer that held none (BENCHMARKS.md, "The no-answer warning").
NO_ANSWER_BELOW = 0.2


@dataclass(frozen=True)
class Curve:
    """A non-decreasing piecewise-linear P(relevant | feature) through its knots.

    The feature is the hit's score itself (`relative` 0), or the score measured from the lowest
    score the ranking can give (`lowest`) and divided by the ranking's top score measured the same
    way, raised to `relative` (1: the share of the top score, as theoretical min-max fusion scales
    each list): `(score - lowest) / (top - lowest) ** relative`. Within one result list the feature
    rises with the score, so relevance never ranks a lower hit above a higher one; `relative` is
    chosen per ranking on the dev sets (`bench/bench_calibration.py`), where a raw BM25 score or
    cosine meant different things in collections of other sizes and kinds."""

    scores: tuple[float, ...]
    probabilities: tuple[float, ...]
    relative: float = 0.0
    lowest: float = 0.0

    def __post_init__(self) -> None:
        if len(self.scores) != len(self.probabilities) or not self.scores:
            raise ValueError("a calibration curve needs as many probabilities as scores, at least one")
        if any(b < a for a, b in zip(self.scores, self.scores[1:], strict=False)) or any(
                b < a for a, b in zip(self.probabilities, self.probabilities[1:], strict=False)):
            raise ValueError("a calibration curve's scores and probabilities must not decrease")
        if not 0.0 <= self.relative <= 1.0:
            raise ValueError(f"a calibration curve's relative exponent must be in [0, 1], not {self.relative}")

    def features(self, ranking: Sequence[float]) -> np.ndarray:
        """The feature of each score of one ranking, given from its first hit (its top score)."""
        scores = np.asarray(ranking, dtype=np.float64)
        if not self.relative or not len(scores):
            return scores
        span = float(scores.max()) - self.lowest
        if span <= 0:  # nothing above the lowest possible score: no evidence of relevance
            return np.zeros_like(scores)
        return (scores - self.lowest) / span ** self.relative

    def __call__(self, ranking: Sequence[float]) -> list[float]:
        """P(relevant) of each hit of one ranking, from its scores in rank order (the first hit
        included, since a relative curve reads the top score)."""
        values = np.interp(self.features(ranking), self.scores, self.probabilities)
        return [float(v) for v in np.clip(values, 0.0, 1.0)]


@dataclass(frozen=True)
class Calibrated:
    """The curve for one ranking (None: no relevance for it) and what a reader should know."""

    curve: Curve | None
    key: str | None
    note: str | None = None


def ranking_key(mode: str, fusion: Fusion | None = None, reranked: bool = False) -> str:
    """The curve's name: "dense", "bm25", "hybrid/tmm/0.80", "rerank/hybrid/tmm/0.80"."""
    base = mode if mode != "hybrid" or fusion is None else f"hybrid/{fusion.method}/{fusion.weight:.2f}"
    return f"rerank/{base}" if reranked else base


def _held(key: str, curve: dict[str, Any]) -> str | None:
    """None when a fitted curve held across the dev sets (`HOLDS`), else why it did not; a curve
    without the figures (a calibration written by hand) is taken as it is."""
    ece, labels = curve.get("ece_left_out"), curve.get("ece_labels_left_out")
    if key in COLLECTION_SCALED:
        return COLLECTION_SCALED[key]
    if ece is None or labels is None or float(ece) < HOLDS * float(labels):
        return None
    return (f"its calibration error on each dev set when fitted on the others, {float(ece):.3f}, was not "
            f"below the cosine labels' ({float(labels):.3f}); see BENCHMARKS.md, \"Relevance calibration\"")


@dataclass(frozen=True)
class Calibration:
    """The shipped curves that held across the dev sets, by ranking key; the ones that did not, with
    why; and the bi-encoder they were fitted with."""

    curves: dict[str, Curve]
    model: str
    dropped: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        curves: dict[str, Curve] = {}
        dropped: dict[str, str] = {}
        for key, c in data["curves"].items():
            reason = _held(key, c)
            if reason is None:
                curves[key] = Curve(tuple(map(float, c["scores"])), tuple(map(float, c["probabilities"])),
                                    float(c.get("relative", 0.0)), float(c.get("lowest", 0.0)))
            else:
                dropped[key] = reason
        return cls(curves, str(data.get("model", "")), dropped)

    def for_ranking(self, mode: str, fusion: Fusion | None, reranked: bool, model_label: str) -> Calibrated:
        """The curve for a search in `mode` (fused by `fusion` in hybrid), reranked or not, over an
        index whose bi-encoder is `model_label`."""
        if mode != "bm25" and model_label != self.model:
            return Calibrated(None, None, f"relevance is calibrated for {self.model}; this index uses "
                              f"{model_label}, whose scores mean something else, so hits carry none")
        key = ranking_key(mode, fusion, reranked)
        if key in self.curves:
            return Calibrated(self.curves[key], key)
        if key in self.dropped:
            return Calibrated(None, None, f"no calibrated relevance for {key}: {self.dropped[key]}")
        if mode == "hybrid" and fusion is not None:
            prefix = ranking_key(mode, None, reranked) + f"/{fusion.method}/"
            fitted = [k for k in self.curves if k.startswith(prefix)]
            if fitted:
                nearest = min(fitted, key=lambda k: (abs(float(k.rsplit("/", 1)[1]) - fusion.weight), k))
                return Calibrated(self.curves[nearest], nearest,
                                  f"relevance uses the curve fitted at weight {nearest.rsplit('/', 1)[1]}, the "
                                  f"nearest to {fusion.weight:.2f} for {fusion.method}")
        return Calibrated(None, None, f"no relevance curve was fitted for {key}; hits carry none")


@functools.lru_cache(maxsize=2)
def load_calibration(path: Path = CALIBRATION_FILE) -> Calibration | None:
    """The shipped curves, or None when the file is missing (a checkout before calibration)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    return Calibration.from_json(data)
