"""Rerankers: the optional second stage, which rescores a retriever's candidates jointly with the query.

A cross-encoder (Nogueira & Cho 2019, "Passage Re-ranking with BERT") reads
query and passage together, which is slower but sharper than comparing two
independent embeddings. A small reranker trained on little data is sharper on
some queries and blinder on others than the retriever, so its order can be
fused with the retriever's by weighted reciprocal rank (`RerankConfig.retriever_weight`),
the rank-level interpolation that keeps the retriever's evidence instead of
discarding it.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from indexer.embedding import quiet_model_loading
from indexer.settings import NO_RERANKER
from indexer.sources.passage_text import passage_text
from search.config import SHIPPED_RERANKER, RerankConfig, shipped_reranker
from search.hits import Hit

logger = logging.getLogger(__name__)


class Reranker(Protocol):
    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        """`hits` reordered best first, with `score` set to the final score, `rerank_score` to the
        reranker's own and `retriever_score` keeping the score the retriever gave."""
        ...


def fuse_ranks(model_scores: list[float], retriever_weight: float, rrf_k: int) -> list[float]:
    """Weighted reciprocal-rank fusion of the retriever's order (the input order) and the model's.

    score_i = (1 - w) / (rrf_k + rank of i by model score) + w / (rrf_k + i + 1). With w = 0 the
    order is the model's alone.
    """
    order = sorted(range(len(model_scores)), key=lambda i: -model_scores[i])
    model_rank = {index: rank for rank, index in enumerate(order, start=1)}
    return [
        (1.0 - retriever_weight) / (rrf_k + model_rank[i]) + retriever_weight / (rrf_k + i + 1)
        for i in range(len(model_scores))
    ]


def _quantize_int8(model: Any) -> bool:
    """Dynamic int8 quantisation of the Linear layers for CPU inference; False where torch cannot."""
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao is deprecated in favour of torchao, still shipped
            inner = model[0]  # the Transformer module of a CrossEncoder
            inner.model = torch.ao.quantization.quantize_dynamic(inner.model, {torch.nn.Linear}, dtype=torch.qint8)
    except (AttributeError, RuntimeError, TypeError, IndexError) as err:
        logger.warning("int8 quantisation is unavailable (%s); reranking in float32.", err)
        return False
    return True


# Beside a CrossEncoder's own files: the RerankConfig its trainer measured best (bench/bench_rerank.py).
RERANK_CONFIG_FILE = "rerank_config.json"


def load_rerank_config(model_path: str | Path) -> RerankConfig:
    """The RerankConfig saved in the model folder, or the defaults when it has none."""
    path = Path(model_path) / RERANK_CONFIG_FILE
    if not path.is_file():
        return RerankConfig()
    try:
        fields = json.loads(path.read_text())
        return RerankConfig(**fields)
    except (json.JSONDecodeError, TypeError, ValueError) as err:
        raise ValueError(f"{path} is not a valid rerank config ({err}); fix or delete it to use the defaults.") from err


def save_rerank_config(model_path: str | Path, config: RerankConfig) -> Path:
    path = Path(model_path) / RERANK_CONFIG_FILE
    path.write_text(json.dumps(asdict(config), indent=2) + "\n")
    return path


class CrossEncoderReranker:
    """Scores (query, passage) pairs in batches with a sentence-transformers `CrossEncoder`.

    `config` defaults to the folder's rerank_config.json, else `RerankConfig()`.
    On the CPU the model runs in float32 (a folder saved in float16 is upcast),
    with its Linear layers quantised to int8 when `config.quantize` is set.
    """

    def __init__(self, model_path: str | Path, config: RerankConfig | None = None, device: str | None = None) -> None:
        import torch
        from sentence_transformers import CrossEncoder

        quiet_model_loading()
        self.config = config or load_rerank_config(model_path)
        try:
            self.model = CrossEncoder(
                str(model_path), device=device, local_files_only=True,
                max_length=self.config.max_length, model_kwargs={"dtype": torch.float32},
            )
        except OSError as err:
            raise OSError(
                f"Cannot load a cross-encoder from {model_path}: {err}. Pass the folder a "
                "CrossEncoder was saved to (it holds config.json and the weights)."
            ) from err
        self.model.to(torch.float32)  # the whole stack: a float16 folder's head too
        self.model_path = str(model_path)
        self.quantized = self.config.quantize and str(self.model.device) == "cpu" and _quantize_int8(self.model)

    def scores(self, query: str, hits: list[Hit]) -> list[float]:
        """The cross-encoder's raw score of each hit for `query`, in the hits' order."""
        if not hits:
            return []
        predicted = self.model.predict(
            [(query, passage_text(hit.title, hit.text)) for hit in hits],
            batch_size=self.config.batch_size,
            show_progress_bar=False,
        )
        return [float(score) for score in predicted]

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        return self.apply(hits, self.scores(query, hits))

    def apply(self, hits: list[Hit], model_scores: list[float], retriever_weight: float | None = None) -> list[Hit]:
        """`hits` ordered by `model_scores`, fused with their input order when the retriever weight
        (`config.retriever_weight` unless given) is above 0."""
        if len(hits) != len(model_scores):
            raise ValueError(f"{len(hits)} hits but {len(model_scores)} scores; pass one score per hit.")
        weight = self.config.retriever_weight if retriever_weight is None else retriever_weight
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"retriever_weight ({weight}) must lie between 0 and 1.")
        final = model_scores if weight == 0 else fuse_ranks(model_scores, weight, self.config.rrf_k)
        rescored = [
            replace(
                hit,
                score=float(score),
                rerank_score=float(model_score),
                retriever_score=hit.score if hit.retriever_score is None else hit.retriever_score,
            )
            for hit, score, model_score in zip(hits, final, model_scores, strict=True)
        ]
        return sorted(rescored, key=lambda hit: hit.score, reverse=True)


# Values of a reranker setting (--rerank-model, SEMSEARCH_RERANKER) that mean "no reranker".


@dataclass(frozen=True)
class RerankerChoice:
    """Which cross-encoder a search may rerank with, and whether it reranks when the user does not say.

    `path` is None when there is none to offer. Deciding is separate from
    loading, so a page can set its toggle without loading the model first.
    """

    path: Path | None
    enabled: bool
    config: RerankConfig | None = None

    def load(self) -> CrossEncoderReranker | None:
        """The reranker to offer: loaded from `path` with `config`, or None when there is none."""
        return CrossEncoderReranker(self.path, self.config) if self.path is not None else None


def resolve_reranker(rerank: bool | None = None, model: str | Path | None = None) -> RerankerChoice:
    """The one rule for which reranker runs, used by `python -m search`, `search.eval` and the app.

    `model` is a CrossEncoder folder; None means the one shipped in models/reranker,
    and "none" (or "off") no reranker. `rerank` is the user's explicit choice
    (--rerank / --no-rerank, the app's toggle). Without one, naming a model turns
    reranking on, and the shipped model follows its rerank_config.json, whose
    `enabled_by_default` records whether it measured better than no reranking.
    """
    named = model is not None and str(model).strip().lower() not in NO_RERANKER
    if model is not None and not named:
        path = None
    else:
        path = Path(str(model)).expanduser() if named else shipped_reranker()
    if path is None:
        if rerank:
            reason = (f"the reranker is turned off ({model!r})" if model is not None
                      else f"{SHIPPED_RERANKER} is missing")
            raise ValueError(f"Reranking needs a reranker, but {reason}. Pass --rerank-model PATH "
                             "(SEMSEARCH_RERANKER=PATH in the app), or search without --rerank.")
        return RerankerChoice(None, False)
    config = load_rerank_config(path)
    enabled = rerank if rerank is not None else (named or config.enabled_by_default)
    return RerankerChoice(path, enabled, config)
