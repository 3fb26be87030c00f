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
from training.distributed import is_main_process, launched_context, trainer_uses_cpu
from training.eval_sts import sts_evaluator
from training.input_files import checked_input
from training.output_folder import OutputFolder, finish, plan_output, prepare
from training.pair_rows import save_label_names
from training.sentence_model import load_sentence_model
from training.siamese_data import load_training_data
from training.trainer_run import checkpoints_folder, drop_checkpoints, run_trainer

logger = logging.getLogger(__name__)

DEV_METRIC = "eval_sts-dev_spearman_cosine"


@dataclass(frozen=True)
class SiameseResult:
    out: Path
    steps: int
    train_losses: list[float] = field(default_factory=list)  # logged training loss, in order
    dev_spearman: list[float] = field(default_factory=list)  # STSb dev Spearman x100 at each evaluation
    best_dev_spearman: float | None = None
    kept_step: int | None = None  # the step whose weights were saved: the best on dev, else the last


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


def training_arguments(config: SiameseConfig, output: OutputFolder,
                       evaluates: bool) -> SentenceTransformerTrainingArguments:
    strategy = "no" if not evaluates else ("steps" if config.eval_steps else "epoch")
    return SentenceTransformerTrainingArguments(
        output_dir=str(checkpoints_folder(output)),
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
        save_strategy=strategy,
        save_steps=config.eval_steps,
        save_total_limit=2,
        load_best_model_at_end=evaluates,
        metric_for_best_model=DEV_METRIC if evaluates else None,
        greater_is_better=True,
        batch_sampler=BatchSamplers.NO_DUPLICATES if config.objective == "mnrl" else BatchSamplers.BATCH_SAMPLER,
        report_to="none",
        disable_tqdm=True,
        use_cpu=trainer_uses_cpu(),
    )


def train_siamese(config: SiameseConfig) -> SiameseResult:
    """Fine-tune into `config.out` (see training/output_folder.py); Ctrl-C saves a checkpoint that
    `--resume` continues from."""
    output = plan_output(config.out, "siamese", config.overwrite, config.resume)
    rng = np.random.default_rng(config.seed)
    data = load_training_data(config.train, config.objective, rng, config.max_train_examples, config.score_range,
                              config.strict)
    dataset = data.dataset
    logger.info("training %s on %d examples with columns %s", config.objective, len(dataset), dataset.column_names)
    num_labels = int(max(dataset["label"])) + 1 if "label" in dataset.column_names else 0
    eval_dir = resolve_eval_data(config)
    evaluator = sts_evaluator(checked_input(eval_dir, config.strict).path, "dev") if eval_dir is not None else None
    model = load_sentence_model(config.base, config.pooling, config.max_seq_length)
    loss = build_loss(model, config, num_labels)
    output = prepare(output)
    args = training_arguments(config, output, evaluates=evaluator is not None)
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=dataset, loss=loss, evaluator=evaluator)
    run_trainer(trainer, output)
    history = trainer.state.log_history
    dev = [round(100 * entry[DEV_METRIC], 2) for entry in history if DEV_METRIC in entry]
    if is_main_process():  # under torchrun, rank 0 alone writes the model
        model.save(str(output.work))
        save_label_names(output.work, data.label_names)
    drop_checkpoints(output)
    finish(output)
    result = SiameseResult(
        out=config.out,
        steps=trainer.state.global_step,
        train_losses=[entry["loss"] for entry in history if "loss" in entry],
        dev_spearman=dev,
        best_dev_spearman=max(dev) if dev else None,
        kept_step=kept_step(trainer.state.best_model_checkpoint, trainer.state.global_step),
    )
    logger.info("%s", saved_message(result))
    return result


def kept_step(best_checkpoint: str | None, last_step: int) -> int:
    """The step of the weights saved: the best checkpoint's (`.../checkpoint-N`), else the last."""
    return int(best_checkpoint.rsplit("-", 1)[-1]) if best_checkpoint else last_step


def saved_message(result: SiameseResult) -> str:
    """Which weights were kept, and why: the last step's, or an earlier step that scored best on dev."""
    dev = f"; dev Spearman history {result.dev_spearman}" if result.dev_spearman else ""
    if result.best_dev_spearman is None or result.kept_step == result.steps:
        best = f" (best dev Spearman {result.best_dev_spearman:.2f})" if result.best_dev_spearman is not None else ""
        return f"saved {result.out} after {result.steps} steps: the weights of the last step{best}{dev}"
    return (f"saved {result.out} after {result.steps} steps: the weights of step {result.kept_step}, the best on "
            f"STSb dev (Spearman {result.best_dev_spearman:.2f}; the last step scored {result.dev_spearman[-1]:.2f})"
            f"{dev}")
