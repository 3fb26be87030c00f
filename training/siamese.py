"""Siamese (bi-encoder) fine-tuning with sentence-transformers' trainer and losses.

Objectives, all from sentence-transformers rather than rewritten:
- softmax: classifier over (u, v, |u-v|) on NLI labels (Reimers and Gurevych 2019, SBERT).
- cosine: MSE between cos(u, v) and a gold score in 0-1 (SBERT's STSb regression).
- mnrl: in-batch negatives over (anchor, positive[, hard negative]) (Henderson et al. 2017).
- triplet: max(|a-p| - |a-n| + margin, 0) (Schroff et al. 2015, FaceNet).
The best checkpoint by STSb dev Spearman is kept when an STSb folder is available.
Under torchrun the trainer runs data-parallel as it is (accelerate joins the
process group); `--batch-size` is per process.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sentence_transformers import (
    SentenceTransformer,
    SentenceTransformerTrainer,
    SentenceTransformerTrainingArguments,
)
from sentence_transformers.base.sampler import BatchSamplers
from sentence_transformers.sentence_transformer import losses
from torch import nn

from training.config import SiameseConfig, default_data_dir
from training.distributed import barrier, is_main_process, launched_context, trainer_uses_cpu
from training.eval_sts import sts_evaluator
from training.sentence_model import load_sentence_model
from training.siamese_data import load_training_dataset

logger = logging.getLogger(__name__)

DEV_METRIC = "eval_sts-dev_spearman_cosine"


@dataclass(frozen=True)
class SiameseResult:
    out: Path
    steps: int
    train_losses: list[float] = field(default_factory=list)  # logged training loss, in order
    dev_spearman: list[float] = field(default_factory=list)  # STSb dev Spearman x100 at each evaluation
    best_dev_spearman: float | None = None


def build_loss(model: SentenceTransformer, config: SiameseConfig, num_labels: int) -> nn.Module:
    if config.objective == "softmax":
        return losses.SoftmaxLoss(model, model.get_embedding_dimension(), num_labels=num_labels)
    if config.objective == "cosine":
        return losses.CosineSimilarityLoss(model)
    if config.objective == "mnrl":
        # Under torchrun, in-batch negatives span the global batch, as in one process with that batch.
        return losses.MultipleNegativesRankingLoss(model, gather_across_devices=launched_context().is_distributed)
    return losses.TripletLoss(model, triplet_margin=config.triplet_margin)


def resolve_eval_data(config: SiameseConfig) -> Path | None:
    """The STSb folder used for model selection: the configured one, else the shared one if present."""
    if not config.evaluate_on_dev:
        return None
    if config.eval_data is not None:
        return config.eval_data
    candidate = default_data_dir() / "stsb"
    return candidate if (candidate / "sts-dev.csv").is_file() else None


def train_siamese(config: SiameseConfig) -> SiameseResult:
    rng = np.random.default_rng(config.seed)
    dataset = load_training_dataset(config.train, config.objective, rng, config.max_train_examples)
    logger.info("training %s on %d examples with columns %s", config.objective, len(dataset), dataset.column_names)
    num_labels = int(max(dataset["label"])) + 1 if "label" in dataset.column_names else 0
    model = load_sentence_model(config.base, config.pooling, config.max_seq_length)
    loss = build_loss(model, config, num_labels)

    eval_dir = resolve_eval_data(config)
    evaluator = sts_evaluator(eval_dir, "dev") if eval_dir is not None else None
    strategy = "no" if evaluator is None else ("steps" if config.eval_steps else "epoch")
    checkpoints = config.out / "checkpoints"
    args = SentenceTransformerTrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=64,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_ratio,
        seed=config.seed,
        logging_steps=1 if config.max_steps != -1 and config.max_steps <= 50 else 10,
        eval_strategy=strategy,
        eval_steps=config.eval_steps,
        save_strategy=strategy if evaluator is not None else "no",
        save_steps=config.eval_steps,
        save_total_limit=2,
        load_best_model_at_end=evaluator is not None,
        metric_for_best_model=DEV_METRIC if evaluator is not None else None,
        greater_is_better=True,
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.objective == "mnrl" else BatchSamplers.BATCH_SAMPLER,
        report_to="none",
        disable_tqdm=True,
        use_cpu=trainer_uses_cpu(),
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss, evaluator=evaluator)
    trainer.train()
    history = trainer.state.log_history
    dev = [round(100 * entry[DEV_METRIC], 2) for entry in history if DEV_METRIC in entry]
    if is_main_process():  # under torchrun, rank 0 alone writes the model
        model.save(str(config.out))
        shutil.rmtree(checkpoints, ignore_errors=True)
    barrier()
    result = SiameseResult(
        out=config.out,
        steps=trainer.state.global_step,
        train_losses=[entry["loss"] for entry in history if "loss" in entry],
        dev_spearman=dev,
        best_dev_spearman=max(dev) if dev else None,
    )
    logger.info("saved %s after %d steps; dev Spearman history %s", config.out, result.steps, dev)
    return result
