"""Relevance calibration: P(relevant | the score that ranks the hits), fitted on the dev sets.

The app's relevance label was the cosine of the query and the hit's passage, cut at 0.51
("strong") and 0.33 ("fair") whatever ranked the hits (bench/bench_relevance_labels.py), so a
label could rank a lower hit above a higher one, and "strong" meant a different chance of
relevance on every set. This script measures, for each ranking the searcher can run, how often a
hit with a given ranking score is relevant, and fits one curve per ranking:

1. **Hits.** Each judged query of each dev set (`data.dev_sets`: SciFact train queries held out,
   "scifact-dev"; Wikipedia lead questions, "wiki-lead"; Wikinews headlines,
   "wikinews-headline"; the questions of Debian's FAQs against their answers, "docs-faq"; never
   SciFact test) is searched through `Searcher.search_detailed` at
   k=10, with the default model, in every setting of `rankings()`: dense; BM25; hybrid by each
   fusion method at its default weight (`SearchConfig().fusion_for(method)`); the default
   method at weights 0.1 to 0.9 (a weight set by hand uses the nearest fitted curve); and the
   default hybrid reranked by the shipped reranker (top 50 candidates; every judged query, or
   `--rerank-queries` per set where the cross-encoder is too slow). Each hit keeps
   its `score` (what ranks it), whether the qrels grade its document above 0, and the cosine the
   app labelled it by (`ui.search_page.passage_cosines`: the dense retriever's score in dense
   mode, else the passage encoded again as the indexer encoded it).
2. **Curves.** Per setting, an isotonic regression P(relevant | score), pooled over the sets
   with equal weight per set (each hit weighs 1 / hits of its set), exported as at most 40 knots
   that `numpy.interp` reads (`export_knots`); written to search/calibration.json, which
   `search.relevance` loads.
3. **Calibration error.** Expected calibration error (10 equal-width bins) per setting and set:
   before, the cosine clipped to [0, 1] read as a probability, and the label buckets (strong,
   fair, weak) read as each bucket's precision on the same hits (in-sample, the most favourable
   reading of the old labels); after, leave one set out (fitted on the other sets, measured on
   the third: the honest figure) and in-sample (the shipped curve). And label inversions: pairs
   of hits in one result list where the lower-ranked hit carries the higher label or probability.

Records "Relevance calibration" in BENCHMARKS.md. Each set's hits are cached in
.cache/calibration/ (`--reuse` fits again from them without searching).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.bench_relevance import add_dev_arguments, dev_index, open_dev_sets
from bench.record import markdown_table, record
from data.dev_sets import ALL_DEV_SETS, DevSet
from data.paths import PROJECT_ROOT
from search.config import SearchConfig
from search.fusion import FUSIONS, LOWEST_POSSIBLE
from search.metrics import judged_queries
from search.relevance import Curve

K = 10
CANDIDATES = 50  # documents the reranker rescores, as the app's default (SearchConfig.rerank_candidates)
WEIGHT_GRID = tuple(round(0.1 * i, 2) for i in range(1, 10))  # the default method's weights fitted
MAX_KNOTS = 40
# The exponents tried for a single retriever's curve (`search.relevance.Curve`): 0 reads the raw score,
# 1 its share of the list's top score (from the lowest score the retriever can give), 0.5 between.
# Few on purpose: the one with the lowest leave-one-set-out error is kept, and a finer grid would
# tune that honest figure to these sets.
RELATIVE_GRID = (0.0, 0.5, 1.0)
# Measured but never kept: at 1 every query's top hit has the same feature, hence the same relevance,
# so an off-topic query's best hit would read as likely relevant as an answer's, and the app's "none
# of these matches well" could never show. A kept curve must leave the raw score some weight.
KEPT_BELOW = 1.0
BINS = 10
RERANK_QUERIES = 0  # per set, for the reranked rows (0: every judged query; about 0.35 s a query here)
RERANK_SEED = 0
CHECK_PASSAGES = 300  # per set, passages encoded again to check the stored vectors the cosines read
# The cut points the app labelled by before calibration (ui/results.py, from bench_relevance_labels.py):
# the "before" of this bench, kept here so that it stays the same when the app changes.
BEFORE_STRONG = 0.51
BEFORE_FAIR = 0.33
BUCKETS = ("weak", "fair", "strong")
CALIBRATION_JSON = PROJECT_ROOT / "search" / "calibration.json"
CACHE_DIR = PROJECT_ROOT / ".cache" / "calibration"
FORMAT = 1
FIELDS = ("qid", "rank", "score", "cosine", "relevant")


# --- settings -------------------------------------------------------------------------------

def setting_key(mode: str, fusion: str | None = None, weight: float | None = None, rerank: bool = False) -> str:
    """The curve's name, as search.relevance looks it up: "dense", "bm25", "hybrid/tmm/0.80",
    "rerank/hybrid/tmm/0.80" (the weight with two decimals)."""
    if mode == "hybrid":
        if fusion is None or weight is None:
            raise ValueError("a hybrid setting needs its fusion method and weight")
        if fusion not in FUSIONS:
            raise ValueError(f"unknown fusion {fusion!r}; valid: {', '.join(FUSIONS)}")
        base = f"hybrid/{fusion}/{weight:.2f}"
    elif mode in ("dense", "bm25"):
        base = mode
    else:
        raise ValueError(f"unknown mode {mode!r}")
    return f"rerank/{base}" if rerank else base


@dataclass(frozen=True)
class Ranking:
    """One setting the searcher ranks by."""

    mode: str
    fusion: str | None = None
    weight: float | None = None
    rerank: bool = False

    @property
    def key(self) -> str:
        return setting_key(self.mode, self.fusion, self.weight, self.rerank)

    def params(self) -> dict[str, object]:
        """`Searcher.search_detailed` keyword fields for this setting."""
        fields: dict[str, object] = {"k": K, "mode": self.mode, "rerank": self.rerank}
        if self.mode == "hybrid":
            fields.update(fusion=self.fusion, fusion_weight=self.weight)
        if self.rerank:
            fields["candidates"] = CANDIDATES
        return fields


def rankings(config: SearchConfig | None = None, rerank: bool = True) -> list[Ranking]:
    """Every setting fitted, each once: dense, BM25, each fusion method at its default weight, the
    default method at WEIGHT_GRID, and (with `rerank`) the default hybrid reranked."""
    config = config or SearchConfig()
    default = config.fusion_for()
    found = [Ranking("dense"), Ranking("bm25")]
    found += [Ranking("hybrid", m, round(config.fusion_for(m).weight, 2)) for m in FUSIONS]
    found += [Ranking("hybrid", default.method, w) for w in WEIGHT_GRID]
    if rerank:
        found.append(Ranking("hybrid", default.method, round(default.weight, 2), rerank=True))
    unique: dict[str, Ranking] = {}
    for r in found:
        unique.setdefault(r.key, r)
    return list(unique.values())


def default_key(config: SearchConfig | None = None, rerank: bool = False) -> str:
    default = (config or SearchConfig()).fusion_for()
    return setting_key("hybrid", default.method, default.weight, rerank)


# --- pure measures --------------------------------------------------------------------------

def _weights(n: int, weights: np.ndarray | None) -> np.ndarray:
    return np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)


def bin_index(probabilities: np.ndarray, bins: int = BINS) -> np.ndarray:
    """Equal-width bins of [0, 1]: [0, 0.1), ..., [0.9, 1.0] for 10 (1.0 in the last)."""
    p = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    return np.minimum(np.floor(p * bins + 1e-9).astype(int), bins - 1)


def reliability(probabilities: Sequence[float], relevant: Sequence[bool], weights: np.ndarray | None = None,
                bins: int = BINS) -> list[tuple[int, int, float, float, float]]:
    """Per non-empty bin: (bin, hits, weight share, mean predicted, observed share relevant)."""
    p = np.clip(np.asarray(probabilities, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(relevant, dtype=np.float64)
    w = _weights(len(p), weights)
    idx = bin_index(p, bins)
    total = w.sum()
    rows = []
    for b in range(bins):
        m = idx == b
        mass = w[m].sum()
        if not m.any() or mass <= 0:
            continue
        rows.append((b, int(m.sum()), float(mass / total), float(np.average(p[m], weights=w[m])),
                     float(np.average(y[m], weights=w[m]))))
    return rows


def ece(probabilities: Sequence[float], relevant: Sequence[bool], weights: np.ndarray | None = None,
        bins: int = BINS) -> float:
    """Expected calibration error: over equal-width bins, the weight share of each bin times
    |mean predicted probability - share relevant| in it."""
    if len(probabilities) == 0:
        return float("nan")
    return float(sum(share * abs(pred - obs) for _, _, share, pred, obs in
                     reliability(probabilities, relevant, weights, bins)))


def count_inversions(groups: Sequence[object], ranks: Sequence[int], values: Sequence[float],
                     tolerance: float = 1e-12) -> tuple[int, int]:
    """(pairs, lists): pairs of hits in one result list (same group) where the lower-ranked hit
    has the higher value, and how many lists hold at least one such pair."""
    by_group: dict[object, list[tuple[int, float]]] = {}
    for g, r, v in zip(groups, ranks, values, strict=True):
        by_group.setdefault(g, []).append((int(r), float(v)))
    pairs = lists = 0
    for hits in by_group.values():
        ordered = [v for _, v in sorted(hits)]
        found = sum(1 for i in range(len(ordered)) for j in range(i + 1, len(ordered))
                    if ordered[j] > ordered[i] + tolerance)
        pairs += found
        lists += found > 0
    return pairs, lists


def bucket_of(cosines: Sequence[float]) -> np.ndarray:
    """The old label of each cosine: 0 weak, 1 fair, 2 strong (BEFORE_FAIR, BEFORE_STRONG)."""
    c = np.asarray(cosines, dtype=np.float64)
    return (c >= BEFORE_FAIR).astype(int) + (c >= BEFORE_STRONG).astype(int)


def bucket_precision(buckets: np.ndarray, relevant: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """The (weighted) share relevant of each old label, weak/fair/strong; an empty label reads its
    neighbours' overall share (it predicts nothing anyway)."""
    w = _weights(len(buckets), weights)
    y = np.asarray(relevant, dtype=np.float64)
    overall = float(np.average(y, weights=w)) if len(y) else 0.0
    return np.array([float(np.average(y[buckets == b], weights=w[buckets == b])) if (buckets == b).any()
                     else overall for b in range(len(BUCKETS))])


# --- fitting --------------------------------------------------------------------------------

def fit_isotonic(scores: Sequence[float], relevant: Sequence[bool],
                 weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The isotonic P(relevant | score), as its knots: sklearn's thresholds, which its `predict`
    interpolates linearly and clips at the ends, exactly as `numpy.interp` reads them."""
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", increasing=True, y_min=0.0, y_max=1.0)
    iso.fit(np.asarray(scores, dtype=np.float64), np.asarray(relevant, dtype=np.float64),
            sample_weight=_weights(len(scores), weights))
    return np.asarray(iso.X_thresholds_, dtype=np.float64), np.asarray(iso.y_thresholds_, dtype=np.float64)


def export_knots(xs: np.ndarray, ys: np.ndarray, max_knots: int = MAX_KNOTS,
                 tolerance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """At most `max_knots` of a piecewise-linear fit's knots (xs ascending, ys non-decreasing):
    both ends, then, one at a time, the knot the chosen ones miss by most, until none is missed
    by more than `tolerance`. A subset, so the values at the chosen knots are the fit's own and
    still non-decreasing; between them the error is at most the largest miss at a dropped knot."""
    xs = np.asarray(xs, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    if len(xs) != len(ys) or len(xs) == 0:
        raise ValueError("a fit needs as many values as knots, at least one")
    if np.any(np.diff(xs) < 0) or np.any(np.diff(ys) < -1e-12):
        raise ValueError("knots must be ascending and values non-decreasing")
    if max_knots < 2 or len(xs) <= 2:
        return xs[:1] if max_knots < 2 else xs.copy(), ys[:1] if max_knots < 2 else ys.copy()
    chosen = {0, len(xs) - 1}
    while len(chosen) < max_knots:
        idx = sorted(chosen)
        miss = np.abs(np.interp(xs, xs[idx], ys[idx]) - ys)
        worst = int(np.argmax(miss))
        if miss[worst] <= tolerance:
            break
        chosen.add(worst)
    idx = sorted(chosen)
    return xs[idx], ys[idx]


def largest_miss(xs: np.ndarray, ys: np.ndarray, knots: tuple[np.ndarray, np.ndarray]) -> float:
    """How far the exported knots read from the fit, at worst (at the fit's own knots)."""
    return float(np.max(np.abs(np.interp(xs, *knots) - ys)))


def set_weights(sets: Sequence[str]) -> np.ndarray:
    """Each hit weighs 1 / the hits of its set, so that every set counts the same."""
    names, counts = np.unique(np.asarray(sets), return_counts=True)
    per = dict(zip(names.tolist(), (1.0 / counts).tolist(), strict=True))
    return np.array([per[s] for s in sets], dtype=np.float64)


def with_features(h: dict[str, np.ndarray], relative: float, lowest: float) -> dict[str, np.ndarray]:
    """One set's arrays with each score replaced by the curve's feature (`Curve.features`, the one
    formula the searcher applies), computed within each query's list."""
    if not relative:
        return h
    reader = Curve((0.0,), (0.0,), relative, lowest)
    features = np.empty(len(h["score"]), dtype=np.float64)
    for qid in set(h["qid"].tolist()):
        rows = np.flatnonzero(h["qid"] == qid)
        features[rows] = reader.features(h["score"][rows])
    return {**h, "score": features}


def choose_relative(hits: dict[str, dict[str, np.ndarray]], names: list[str], mode: str) -> tuple[
        float, float, dict[float, float]]:
    """(exponent, lowest, mean leave-one-set-out ECE per exponent tried) for a single retriever's
    curve: the exponent below KEPT_BELOW whose curve held best on the set it was not fitted on (all
    of RELATIVE_GRID are measured and reported); the raw score (0) for fused and reranked scores,
    which have no lowest possible value."""
    if mode not in LOWEST_POSSIBLE:
        return 0.0, 0.0, {}
    lowest = LOWEST_POSSIBLE[mode]
    tried = {r: measure({n: with_features(hits[n], r, lowest) for n in names}, names)[0]["mean"].ece_loso
             for r in RELATIVE_GRID}
    best = min((r for r in RELATIVE_GRID if r < KEPT_BELOW), key=lambda r: (round(tried[r], 4), r))
    return best, lowest, tried


def fit_pooled(hits: dict[str, dict[str, np.ndarray]], names: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Exported knots of the isotonic fit pooled over `names` (each a set's arrays), equal weight per set."""
    names = [n for n in names if len(hits[n]["score"])]
    scores = np.concatenate([hits[n]["score"] for n in names])
    relevant = np.concatenate([hits[n]["relevant"] for n in names])
    sets = np.concatenate([np.full(len(hits[n]["score"]), n) for n in names])
    return export_knots(*fit_isotonic(scores, relevant, set_weights(sets)))


def curve_json(knots: tuple[np.ndarray, np.ndarray], hits: int, relevant: int,
               ece_left_out: float | None = None, ece_labels_left_out: float | None = None,
               relative: float = 0.0, lowest: float = 0.0) -> dict[str, object]:
    """One curve for search/calibration.json, with its calibration error on each dev set when fitted
    on the others (mean of the sets) and the old cosine labels' the same way: `search.relevance`
    ships only the curves that hold across sets better than the labels did."""
    scores, probabilities = knots
    out: dict[str, object] = {"scores": [float(f"{s:.7g}") for s in scores],
                              "probabilities": [round(float(p), 6) for p in probabilities],
                              "hits": int(hits), "relevant": int(relevant)}
    if relative:
        out.update(relative=float(relative), lowest=float(lowest))
    if ece_left_out is not None and ece_labels_left_out is not None:
        out["ece_left_out"] = round(float(ece_left_out), 4)
        out["ece_labels_left_out"] = round(float(ece_labels_left_out), 4)
    return out


def calibration_json(curves: dict[str, dict[str, object]], dev_sets: Sequence[str], model: str,
                     measured: str | None = None) -> str:
    """search/calibration.json: small, one curve a line."""
    head = {"format": FORMAT, "measured": measured or dt.date.today().isoformat(), "model": model, "k": K,
            "dev_sets": list(dev_sets)}
    lines = ["{"] + [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + ['  "curves": {']
    items = list(curves.items())
    for i, (key, curve) in enumerate(items):
        lines.append(f"    {json.dumps(key)}: {json.dumps(curve, separators=(',', ':'))}" + ("," if i < len(items) - 1 else ""))
    return "\n".join(lines + ["  }", "}"]) + "\n"


# --- searching ------------------------------------------------------------------------------

def rerank_sample(qids: list[str], count: int, seed: int = RERANK_SEED) -> list[str]:
    """`count` of `qids` drawn by `seed`, in their order (all when count is 0 or more than there are)."""
    if count <= 0 or count >= len(qids):
        return list(qids)
    picked = set(np.random.default_rng(seed).choice(len(qids), count, replace=False).tolist())
    return [q for i, q in enumerate(qids) if i in picked]


def collect(searcher, dev: DevSet, settings: list[Ranking], rerank_queries: int, log=print,
            encode_all: bool = False, check: int = CHECK_PASSAGES) -> dict[str, dict]:
    """Per setting key, each hit's (query, rank, score, cosine, relevant), through `search_detailed`;
    under "_check", how far the stored passage vectors the cosines use are from encoding again."""
    from indexer.sources.passage_text import bi_encoder_input
    from search.sentence_similarity import embed

    qids = [q for q in judged_queries(dev.qrels) if q in dev.queries]
    reranked = rerank_sample(qids, rerank_queries)
    rows: dict[str, dict[str, list]] = {}
    passages: dict[int, str] = {}
    need: dict[str, list[tuple[str, int]]] = {}  # key -> (qid, passage id) of each hit, for the cosine
    for setting in settings:
        started = time.perf_counter()
        out: dict[str, list] = {f: [] for f in FIELDS}
        pairs = need.setdefault(setting.key, [])
        for qid in reranked if setting.rerank else qids:
            result = searcher.search_detailed(dev.queries[qid], **setting.params())
            for rank, hit in enumerate(result.hits, start=1):
                out["qid"].append(qid)
                out["rank"].append(rank)
                out["score"].append(float(hit.score))
                out["relevant"].append(bool(dev.qrels[qid].get(hit.doc_id, 0) > 0))
                if result.mode == "dense":  # the app's cosine in dense mode: the retriever's own
                    out["cosine"].append(float(hit.retriever_score if hit.retriever_score is not None
                                               else hit.score))
                else:
                    out["cosine"].append(None)
                    pairs.append((qid, hit.passage_id))
                    if hit.passage_id not in passages:
                        passages[hit.passage_id] = bi_encoder_input(
                            hit.title, hit.text, searcher.model, searcher.index.info.embed_titles)
        rows[setting.key] = out
        log(f"  {dev.name} {setting.key}: {len(set(out['qid']))} queries, {len(out['score'])} hits, "
            f"{time.perf_counter() - started:.0f} s")
    started = time.perf_counter()
    ids = sorted(passages)
    where = {pid: i for i, pid in enumerate(ids)}
    stored = np.stack([np.asarray(searcher.index.vectors.vector(p), dtype=np.float32) for p in ids]) if ids \
        else np.zeros((0, 1), np.float32)
    # The stored vector is the passage as the indexer encoded it (`bi_encoder_input`), which the app
    # encodes again for its label: checked here on a sample (all with encode_all), the bound on
    # any cosine's difference being the largest distance between the stored and the new vector.
    sample = ids if encode_all else sorted(np.random.default_rng(0).choice(
        ids, min(check, len(ids)), replace=False).tolist()) if ids else []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a long passage's truncation warning, as the app ignores it
        encoded = embed([passages[p] for p in sample], model=searcher.model) if sample else stored[:0]
        query_vectors = embed([dev.queries[q] for q in qids], model=searcher.model)
    rows_of = [where[p] for p in sample]
    drift = float(np.max(np.linalg.norm(stored[rows_of] - encoded, axis=1))) if sample else 0.0
    if encode_all:
        stored = encoded
    query_at = {q: i for i, q in enumerate(qids)}
    for key, pairs in need.items():
        it = iter(pairs)
        cosines = rows[key]["cosine"]
        for i, value in enumerate(cosines):
            if value is None:
                qid, pid = next(it)
                cosines[i] = float(query_vectors[query_at[qid]] @ stored[where[pid]])
    rows["_check"] = {"passages": len(ids), "encoded": len(sample), "drift": drift}
    log(f"  {dev.name}: cosines of {len(ids)} passages, {len(sample)} encoded again, stored vs encoded at "
        f"most {drift:.2e} apart, {time.perf_counter() - started:.0f} s")
    return rows


def as_arrays(rows: dict[str, list]) -> dict[str, np.ndarray]:
    return {"qid": np.asarray(rows["qid"], dtype=object), "rank": np.asarray(rows["rank"], dtype=int),
            "score": np.asarray(rows["score"], dtype=np.float64),
            "cosine": np.asarray(rows["cosine"], dtype=np.float64),
            "relevant": np.asarray(rows["relevant"], dtype=bool)}


# --- the report -----------------------------------------------------------------------------

@dataclass
class Measured:
    """One setting on one set."""

    hits: int
    queries: int
    base_rate: float
    ece_cosine: float
    ece_buckets: float
    ece_buckets_loso: float
    ece_loso: float
    ece_in: float
    inv_buckets: tuple[int, int]
    inv_cosine: tuple[int, int]
    inv_after: tuple[int, int]


def measure(hits: dict[str, dict[str, np.ndarray]], names: list[str]) -> tuple[
        dict[str, Measured], tuple[np.ndarray, np.ndarray], dict[str, np.ndarray], np.ndarray]:
    """One setting (`hits`: its arrays per set) on each set, plus "mean" (the sets' mean; inversions
    summed): ECE before/after and inversions. Returns (rows, the shipped knots, each set's
    leave-one-set-out probabilities, the old labels' precision)."""
    shipped = fit_pooled(hits, names)
    used = [n for n in names if len(hits[n]["score"])]
    pooled = {f: np.concatenate([hits[n][f] for n in used]) for f in ("relevant", "cosine")}
    pooled_sets = np.concatenate([np.full(len(hits[n]["score"]), n) for n in used])
    precision = bucket_precision(bucket_of(pooled["cosine"]), pooled["relevant"], set_weights(pooled_sets))
    loso: dict[str, np.ndarray] = {}
    loso_buckets: dict[str, np.ndarray] = {}
    out: dict[str, Measured] = {}
    for n in used:
        h = hits[n]
        others = [m for m in used if m != n]
        loso[n] = np.interp(h["score"], *fit_pooled(hits, others)) if others else np.full(len(h["score"]), np.nan)
        after = np.interp(h["score"], *shipped)
        buckets = bucket_of(h["cosine"])
        if others:
            cos_o = np.concatenate([hits[m]["cosine"] for m in others])
            rel_o = np.concatenate([hits[m]["relevant"] for m in others])
            sets_o = np.concatenate([np.full(len(hits[m]["score"]), m) for m in others])
            loso_buckets[n] = bucket_precision(bucket_of(cos_o), rel_o, set_weights(sets_o))[buckets]
        else:
            loso_buckets[n] = np.full(len(buckets), np.nan)
        out[n] = Measured(
            hits=len(h["score"]), queries=len(set(h["qid"].tolist())), base_rate=float(h["relevant"].mean()),
            ece_cosine=ece(np.clip(h["cosine"], 0, 1), h["relevant"]),
            ece_buckets=ece(precision[buckets], h["relevant"]),
            ece_buckets_loso=ece(loso_buckets[n], h["relevant"]),
            ece_loso=ece(loso[n], h["relevant"]), ece_in=ece(after, h["relevant"]),
            inv_buckets=count_inversions(h["qid"], h["rank"], buckets),
            inv_cosine=count_inversions(h["qid"], h["rank"], h["cosine"]),
            inv_after=count_inversions(h["qid"], h["rank"], after))
    # The mean of the sets' own figures: pooling the held-out hits instead would let one set's
    # over-confidence cancel another's under-confidence within a bin.
    mean = lambda f: float(np.mean([getattr(out[n], f) for n in used]))  # noqa: E731
    total = lambda f: tuple(int(sum(getattr(out[n], f)[i] for n in used)) for i in range(2))  # noqa: E731
    out["mean"] = Measured(
        hits=sum(out[n].hits for n in used), queries=sum(out[n].queries for n in used), base_rate=mean("base_rate"),
        ece_cosine=mean("ece_cosine"), ece_buckets=mean("ece_buckets"), ece_buckets_loso=mean("ece_buckets_loso"),
        ece_loso=mean("ece_loso"), ece_in=mean("ece_in"),
        inv_buckets=total("inv_buckets"), inv_cosine=total("inv_cosine"), inv_after=total("inv_after"))
    return out, shipped, loso, precision


def inv(pair: tuple[int, int]) -> str:
    return f"{pair[0]} ({pair[1]})"


def reliability_table(h: dict[str, np.ndarray], loso: np.ndarray) -> str:
    before = {r[0]: r for r in reliability(np.clip(h["cosine"], 0, 1), h["relevant"])}
    after = {r[0]: r for r in reliability(loso, h["relevant"])}
    rows = []
    for b in range(BINS):
        cells = [f"{b / BINS:.1f}–{(b + 1) / BINS:.1f}"]
        for table in (before, after):
            r = table.get(b)
            cells += ["0", "—", "—"] if r is None else [str(r[1]), f"{r[3]:.3f}", f"{r[4]:.3f}"]
        rows.append(cells)
    return markdown_table(["bin", "before: hits", "before: mean cosine", "before: observed",
                           "after: hits", "after: mean predicted", "after: observed"], rows)


def report(data: dict[str, dict[str, dict[str, np.ndarray]]], settings: list[Ranking], names: list[str],
           model: str, rerank_queries: int, searched_s: float | None,
           checks: dict[str, dict | None] | None = None) -> tuple[str, dict[str, dict]]:
    """(the BENCHMARKS.md body, the curves for search/calibration.json)."""
    curves: dict[str, dict] = {}
    rows = []
    knot_notes = []
    feature_notes: list[str] = []
    reliabilities = []
    default = default_key()
    for setting in settings:
        key = setting.key
        relative, lowest, tried = choose_relative({n: data[n][key] for n in names}, names,
                                                  setting.mode if not setting.rerank else "rerank")
        hits = {n: with_features(data[n][key], relative, lowest) for n in names}
        if tried:
            feature_notes.append(f"`{key}`: " + ", ".join(
                f"{r:g} → {e:.3f}" + (" (kept)" if r == relative else " (never kept)" if r >= KEPT_BELOW else "")
                for r, e in tried.items()))
        measured, shipped, loso, precision = measure(hits, names)
        curves[key] = curve_json(shipped, sum(len(hits[n]["score"]) for n in names),
                                 sum(int(hits[n]["relevant"].sum()) for n in names),
                                 measured["mean"].ece_loso, measured["mean"].ece_buckets_loso, relative, lowest)
        full = fit_isotonic(np.concatenate([hits[n]["score"] for n in names]),
                            np.concatenate([hits[n]["relevant"] for n in names]),
                            set_weights(np.concatenate([np.full(len(hits[n]["score"]), n) for n in names])))
        knot_notes.append(f"{key} {len(shipped[0])} of {len(full[0])} (miss {largest_miss(*full, shipped):.4f})")
        for n in [*names, "mean"]:
            m = measured[n]
            rows.append([f"`{key}`" if n == names[0] else "", n if n != "mean" else "**mean of the sets**",
                         m.queries, m.hits, f"{m.base_rate:.3f}", f"{m.ece_cosine:.3f}", f"{m.ece_buckets:.3f}",
                         f"{m.ece_buckets_loso:.3f}",
                         f"**{m.ece_loso:.3f}**", f"{m.ece_in:.3f}", inv(m.inv_buckets), inv(m.inv_cosine),
                         inv(m.inv_after)])
        if key == default:
            lo, hi = shipped[0][0], shipped[0][-1]
            reliabilities.append(
                f"Old-label precision on these hits, pooled (equal weight per set): weak {precision[0]:.3f}, "
                f"fair {precision[1]:.3f}, strong {precision[2]:.3f}. Shipped curve: P = "
                f"{shipped[1][0]:.3f} at score ≤ {lo:.4g} up to {shipped[1][-1]:.3f} at score ≥ {hi:.4g}.")
            for n in names:
                reliabilities.append(f"**{n}** (`{key}`; before: the cosine clipped to [0, 1]; after: fitted "
                                     f"on the other sets):\n\n{reliability_table(hits[n], loso[n])}")
    table = markdown_table(
        ["setting", "dev set", "queries", "hits", "base rate", "ECE before: cosine",
         "ECE before: label buckets, in-sample", "ECE before: label buckets, leave one set out",
         "ECE after: leave one set out", "ECE after: in-sample", "inversions before: labels",
         "inversions before: cosine", "inversions after"], rows)
    config = SearchConfig()
    body = (
        f"How often a hit is relevant, given the score that ranks it, on the {len(names)} dev sets ({', '.join(names)}; "
        f"never SciFact test): every judged query searched through `Searcher.search_detailed` at k={K} with "
        f"{model}, in each setting below; a hit is relevant when the qrels grade its document above 0. "
        f"Reranked rows (`rerank/…`: the default hybrid, the shipped reranker over the top {CANDIDATES}) use "
        + (f"{rerank_queries} queries per set drawn with seed {RERANK_SEED}, as the cross-encoder is slow on "
           "this CPU" if rerank_queries else "every judged query")
        + ". One isotonic curve per setting, pooled over the sets with equal weight per set, shipped in "
        f"`search/calibration.json` (at most {MAX_KNOTS} knots each, read by `numpy.interp`).\n\n"
        f"ECE: expected calibration error, {BINS} equal-width bins (lower is better). **Before**: the app's "
        f"old label, the query–passage cosine (cut at {BEFORE_FAIR} fair and {BEFORE_STRONG} strong), read "
        "as a probability two ways: the cosine clipped to [0, 1], and each label bucket (weak/fair/strong) "
        "read as its precision, either on these same hits pooled over the sets (in-sample, the most favourable "
        "reading) or on the other sets (leave one set out, like the after column beside it). **After**: the "
        "calibrated probability; *leave one set out* is fitted on the other sets and measured on the one left "
        "out (the honest figure: a set the curve never saw), *in-sample* is the shipped curve (fitted on "
        "all of them) on the set. The *mean* row averages the sets' figures (and sums their inversions). Inversions: pairs of hits in one result "
        "list where the lower-ranked hit has the higher label (old buckets), cosine, or calibrated "
        "probability; in brackets, the lists with at least one. "
        + ("The cosines are the app's (`ui.search_page.passage_cosines`): the dense retriever's score in dense "
           "mode, else the query's embedding times the passage's stored vector, which is the passage as the "
           "indexer encoded it; encoding again, as the app does, moves no vector further than "
           + ", ".join(f"{c['drift']:.1e} ({n}, {c['encoded']} of {c['passages']} passages encoded again)"
                       for n, c in checks.items() if c) + ", and a cosine no more than that. "
           if checks and any(checks.values()) else "")
        +
        f"Default: `{default}` (`SearchConfig()`: {config.fusion} at {config.fusion_for().weight:g}).\n\n"
        f"{table}\n\n### Reliability of the default hybrid, per dev set\n\n"
        + "\n\n".join(reliabilities)
        + ("\n\nDense and BM25 curves read the score relative to the list's top "
           "(`search.relevance.Curve`: (score - lowest) / (top - lowest) ** r, lowest -1 for cosines and 0 for "
           "BM25); r was tried at " + ", ".join(f"{r:g}" for r in RELATIVE_GRID) + " and the one below "
           f"{KEPT_BELOW:g} with the lowest mean leave-one-set-out ECE kept (in the table above): "
           + "; ".join(feature_notes) + f". At r = {KEPT_BELOW:g} every query's top hit reads the same relevance, "
           "an off-topic query's as much as an answered one's, so it is measured but never kept; a kept curve "
           "then serves only if it holds (`search.relevance.HOLDS`)."
           if feature_notes else "")
        + "\n\nKnots shipped per curve, of the isotonic fit's own, and the largest miss between them: "
        + "; ".join(knot_notes) + "."
        + (f"\n\nSearching took {searched_s:.0f} s." if searched_s is not None else "")
    )
    return body, curves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_dev_arguments(parser)
    parser.add_argument("--rerank-queries", type=int, default=RERANK_QUERIES,
                        help="queries per set searched with the reranker (0: all)")
    parser.add_argument("--no-rerank", action="store_true", help="leave the reranked setting out")
    parser.add_argument("--encode-all", action="store_true",
                        help="encode every hit's passage again for its cosine, as the app does (slow on a "
                             f"CPU), instead of reading its stored vector and checking {CHECK_PASSAGES} a set")
    parser.add_argument("--reuse", action="store_true",
                        help=f"fit from the hits cached in {CACHE_DIR} where a set has them (else search it)")
    parser.add_argument("--sets", nargs="+", choices=ALL_DEV_SETS, default=list(ALL_DEV_SETS),
                        help="search only these (and cache them); fitting runs when all are there")
    parser.add_argument("--out", type=Path, default=CALIBRATION_JSON)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    settings = rankings(rerank=not args.no_rerank)
    names = list(ALL_DEV_SETS)
    wanted = [s.key for s in settings]
    rows: dict[str, dict] = {}
    models: dict[str, str] = {}
    searched_s = 0.0
    for name in args.sets:
        cache = CACHE_DIR / f"hits-{name}.json"
        if args.reuse and cache.is_file():
            cached = json.loads(cache.read_text())
            if cached["rerank_queries"] == args.rerank_queries and set(wanted) <= set(cached["rows"]):
                rows[name], models[name] = cached["rows"], cached["model"]
                searched_s += cached["searched_s"]
                print(f"{name}: hits from {cache}", flush=True)
                continue
        from search import Searcher, resolve_reranker

        started = time.perf_counter()
        dev = open_dev_sets(args.dev_dir, args.data)[name]
        reranker = resolve_reranker(rerank=True).load() if not args.no_rerank else None
        with Searcher(dev_index(dev, args.dev_dir, args.scifact_index), reranker=reranker) as searcher:
            models[name] = searcher.stats().model_label
            rows[name] = collect(searcher, dev, settings, args.rerank_queries,
                                 log=lambda line: print(line, flush=True), encode_all=args.encode_all)
        took = time.perf_counter() - started
        searched_s += took
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"model": models[name], "rerank_queries": args.rerank_queries,
                                     "searched_s": took, "rows": rows[name]}))
    if set(args.sets) != set(names):
        print(f"searched {', '.join(args.sets)}; fitting needs all of {', '.join(names)}", flush=True)
        return 0
    if len(set(models.values())) != 1:
        raise SystemExit(f"the dev indexes use different models: {models}")
    model = models[names[0]]
    data = {n: {s.key: as_arrays(rows[n][s.key]) for s in settings} for n in names}
    checks = {n: rows[n].get("_check") for n in names}
    body, curves = report(data, settings, names, model, args.rerank_queries, searched_s, checks)
    print(body, flush=True)
    args.out.write_text(calibration_json(curves, names, model))
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes, {len(curves)} curves)", flush=True)
    if not args.no_record:
        record("bench_calibration", "Relevance calibration", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
