"""Calibrated relevance: the probability that a hit is relevant, from the score that ranks it.

Each ranking (dense, BM25, hybrid by fusion method and weight, each of them reranked) has its
own curve, P(relevant | score), fitted by isotonic regression on the dev sets (SciFact train
queries held out, Wikipedia lead questions, Wikinews headlines; never a test split) by
`bench/bench_calibration.py` and shipped in `search/calibration.json`. A curve never decreases,
so relevance never ranks a lower hit above a higher one, and it reads the same for every query:
0.7 means seven hits in ten that score so were relevant on the dev sets. BENCHMARKS.md
("Relevance calibration") holds the reliability curves and the calibration error.

A hybrid weight set by hand uses the curve fitted at the nearest weight of its method, and says
so (`Calibrated.note`). The dense and hybrid curves were fitted with the default bi-encoder;
under another model the cosines mean something else, so those rankings get no relevance (None),
and the note says why; BM25's curve holds for every model.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from search.fusion import Fusion

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Curve:
    """A non-decreasing piecewise-linear P(relevant | score) through its knots."""

    scores: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.scores) != len(self.probabilities) or not self.scores:
            raise ValueError("a calibration curve needs as many probabilities as scores, at least one")
        if any(b < a for a, b in zip(self.scores, self.scores[1:], strict=False)) or any(
                b < a for a, b in zip(self.probabilities, self.probabilities[1:], strict=False)):
            raise ValueError("a calibration curve's scores and probabilities must not decrease")

    def __call__(self, scores: Sequence[float]) -> list[float]:
        values = np.interp(np.asarray(scores, dtype=np.float64), self.scores, self.probabilities)
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


@dataclass(frozen=True)
class Calibration:
    """The shipped curves, by ranking key, and the bi-encoder they were fitted with."""

    curves: dict[str, Curve]
    model: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Calibration:
        curves = {key: Curve(tuple(map(float, c["scores"])), tuple(map(float, c["probabilities"])))
                  for key, c in data["curves"].items()}
        return cls(curves, str(data.get("model", "")))

    def for_ranking(self, mode: str, fusion: Fusion | None, reranked: bool, model_label: str) -> Calibrated:
        """The curve for a search in `mode` (fused by `fusion` in hybrid), reranked or not, over an
        index whose bi-encoder is `model_label`."""
        if mode != "bm25" and model_label != self.model:
            return Calibrated(None, None, f"relevance is calibrated for {self.model}; this index uses "
                              f"{model_label}, whose scores mean something else, so hits carry none")
        key = ranking_key(mode, fusion, reranked)
        if key in self.curves:
            return Calibrated(self.curves[key], key)
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
