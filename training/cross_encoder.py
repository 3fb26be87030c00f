"""Cross-encoder (reranker) training with sentence-transformers' CrossEncoderTrainer.

Both texts go through one BERT together and a linear head scores the pair
(Nogueira and Cho 2019, "Passage Re-ranking with BERT"); trained with binary
cross-entropy on soft labels: a gold score mapped to 0-1, or 1 for a relevant
passage and 0 for a mined negative.
"""

from __future__ import annotations

import logging
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datasets import Dataset
from sentence_transformers import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

from data.pairs import iter_pairs
from data.sick import iter_sick
from data.stsb import MAX_SCORE, iter_stsb
from training.config import CrossEncoderConfig
from training.negatives import NegativeMiner, RandomNegativeMiner
from training.siamese_data import beir_rows, detect_source

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CrossEncoderResult:
    out: Path
    steps: int
    train_losses: list[float] = field(default_factory=list)


def with_negatives(
    positives: list[tuple[str, str]], miner: NegativeMiner, count: int, rng: np.random.Generator
) -> list[dict]:
    """(query, passage, label) rows: every positive with label 1, plus `count` mined negatives per query at 0."""
    by_query: dict[str, set[str]] = defaultdict(set)
    for query, passage in positives:
        by_query[query].add(passage)
    rows = [{"query": query, "passage": passage, "label": 1.0} for query, passage in positives]
    for query, relevant in by_query.items():
        rows += [{"query": query, "passage": negative, "label": 0.0} for negative in miner.mine(query, relevant, count, rng)]
    return rows


def load_cross_encoder_rows(
    path: Path, rng: np.random.Generator, negatives_per_query: int, miner: NegativeMiner | None = None
) -> list[dict]:
    """Rows of (query, passage, label in 0-1) from scored pairs or from positives plus negatives."""
    source = detect_source(path)
    if source == "stsb":
        return [{"query": p.sentence1, "passage": p.sentence2, "label": p.score / MAX_SCORE} for p in iter_stsb(path, "train")]
    if source == "sick":
        return [{"query": p.sentence_a, "passage": p.sentence_b, "label": (p.relatedness - 1) / 4} for p in iter_sick(path)]
    if source == "beir":
        positives = [(row["anchor"], row["positive"]) for row in beir_rows(path, "mnrl", rng)]
        pool = [passage for _, passage in positives]
        return with_negatives(positives, miner or RandomNegativeMiner(pool), negatives_per_query, rng)
    if source != "pairs":
        raise ValueError(
            f"Cross-encoder training data {str(path)!r} holds raw documents; it needs scored pairs (STSb, SICK, "
            "sentence1/sentence2/score) or (query, passage) positives (BEIR, query/passage, anchor/positive)."
        )
    rows = list(iter_pairs(path))
    if not rows:
        raise ValueError(f"Pair file {str(path)!r} holds no usable rows.")
    columns = set(rows[0])
    if "score" in columns:
        top = max(max(row["score"] for row in rows), 1.0)
        return [{"query": r["sentence1"], "passage": r["sentence2"], "label": r["score"] / top} for r in rows]
    if "label" in columns and "query" in columns:
        labelled = [{"query": r["query"], "passage": r["passage"], "label": float(r["label"] > 0)} for r in rows]
        positives = [(r["query"], r["passage"]) for r in labelled if r["label"] > 0]
        pool = [r["passage"] for r in labelled]
        return labelled + [r for r in with_negatives(positives, miner or RandomNegativeMiner(pool),
                                                     negatives_per_query, rng) if r["label"] == 0.0]
    if "sentence1" in columns:
        raise ValueError(f"{path}: class labels cannot train a cross-encoder scorer; give a 'score' column instead.")
    query_key, passage_key = ("query", "passage") if "query" in columns else ("anchor", "positive")
    positives = [(r[query_key], r[passage_key]) for r in rows]
    explicit = [{"query": r["anchor"], "passage": r["negative"], "label": 0.0} for r in rows if "negative" in r]
    pool = [passage for _, passage in positives] + [r["passage"] for r in explicit]
    return with_negatives(positives, miner or RandomNegativeMiner(pool), negatives_per_query, rng) + explicit


def train_cross_encoder(config: CrossEncoderConfig, miner: NegativeMiner | None = None) -> CrossEncoderResult:
    rng = np.random.default_rng(config.seed)
    rows = load_cross_encoder_rows(config.train, rng, config.negatives_per_query, miner)
    if config.max_train_examples is not None:
        order = rng.permutation(len(rows))[: config.max_train_examples]
        rows = [rows[int(index)] for index in order]
    dataset = Dataset.from_list(rows)
    logger.info("cross-encoder training on %d pairs (%d positive)", len(rows), sum(r["label"] >= 0.5 for r in rows))
    base = Path(config.base)
    if not (base / "config.json").is_file():
        raise ValueError(f"Base model {str(base)!r} is not a BERT or CrossEncoder folder (no config.json).")
    model = CrossEncoder(str(base), num_labels=1, max_length=config.max_length, device="cpu")
    loss = BinaryCrossEntropyLoss(model)
    checkpoints = config.out / "checkpoints"
    args = CrossEncoderTrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        seed=config.seed,
        logging_steps=1 if config.max_steps != -1 and config.max_steps <= 50 else 10,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=dataset, loss=loss)
    trainer.train()
    model.save(str(config.out))
    shutil.rmtree(checkpoints, ignore_errors=True)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    logger.info("saved CrossEncoder %s after %d steps", config.out, trainer.state.global_step)
    return CrossEncoderResult(config.out, trainer.state.global_step, losses)
