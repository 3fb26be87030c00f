"""Cross-encoder (reranker) training with sentence-transformers' CrossEncoderTrainer.

Both texts go through one BERT together and a linear head scores the pair
(Nogueira and Cho 2019, "Passage Re-ranking with BERT"); trained with binary
cross-entropy on soft labels: a gold score mapped to 0-1, or 1 for a relevant
passage and 0 for a mined negative. A triplet file with a `margin` column
(anchor, positive, negative, margin: a teacher's score of the positive less its
score of the negative) trains by distillation instead, with margin-MSE
(Hofstätter et al. 2020, "Improving Efficient Neural Ranking Models with
Cross-Architecture Knowledge Distillation"). Under torchrun the trainer runs data-parallel
as it is; every rank builds the same rows (negatives mined with the same seed).
"""

from __future__ import annotations

import itertools
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import transformers
from datasets import Dataset
from sentence_transformers import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss, MarginMSELoss

from data.raw_text import iter_documents
from data.sick import iter_sick
from data.stsb import MAX_SCORE, iter_stsb
from training.config import CrossEncoderConfig, resolve_base
from training.distributed import is_main_process, trainer_uses_cpu
from training.input_files import checked_input
from training.negatives import BM25NegativeMiner, NegativeMiner, RandomNegativeMiner, mine_negatives
from training.output_folder import finish, plan_output, prepare
from training.pair_rows import read_pair_rows, scaled_scores
from training.self_supervised import inverse_cloze_pairs, title_body_pairs
from training.siamese_data import beir_rows, detect_source, relevant
from training.trainer_run import checkpoints_folder, drop_checkpoints, run_trainer

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
    for query, negatives in mine_negatives(miner, by_query, count, rng).items():
        rows += [{"query": query, "passage": negative, "label": 0.0} for negative in negatives]
    return rows


def _document_rows(path: Path, rng: np.random.Generator, count: int, depth: int | None,
                   max_documents: int | None) -> list[dict]:
    """Title -> body and inverse-cloze positives from raw documents, with BM25 negatives from the same documents."""
    documents = list(itertools.islice(iter_documents(path), max_documents))
    positives = list(title_body_pairs(documents)) + list(inverse_cloze_pairs(documents, rng))
    if not positives:
        raise ValueError(f"{path} yields no self-supervised pairs: its documents need titles or several sentences.")
    logger.info("self-supervised cross-encoder pairs from %s: %d positives from %d documents",
                path, len(positives), len(documents))
    miner = BM25NegativeMiner([passage for _, passage in positives], depth=depth or 30)
    return with_negatives(positives, miner, count, rng)


def _beir_positives(path: Path, rng: np.random.Generator) -> list[tuple[str, str]]:
    """(query, `passage_text(title, text)`) for every relevant document of the train qrels, as the reranker reads it."""
    rows = beir_rows(path, "mnrl", rng)
    return [(row["anchor"], row["positive"]) for row in rows]


def load_cross_encoder_rows(
    path: Path,
    rng: np.random.Generator,
    negatives_per_query: int,
    miner: NegativeMiner | None = None,
    depth: int | None = None,
    max_documents: int | None = None,
    score_range: tuple[float, float] | None = None,
    strict: bool = False,
) -> list[dict]:
    """Rows of (query, passage, label in 0-1) from scored pairs, positives plus negatives, or raw
    documents, read by the input rules (training/input_files.py, training/pair_rows.py)."""
    source = detect_source(path)
    checked = checked_input(path, strict)
    if source == "stsb":
        logger.info("scores in %s: STSb's scale 0-%g, mapped to 0-1", path, MAX_SCORE)
        return [{"query": p.sentence1, "passage": p.sentence2, "label": p.score / MAX_SCORE}
                for p in iter_stsb(checked.path, "train")]
    if source == "sick":
        logger.info("scores in %s: SICK's relatedness scale 1-5, mapped to 0-1", path)
        return [{"query": p.sentence_a, "passage": p.sentence_b, "label": (p.relatedness - 1) / 4}
                for p in iter_sick(checked.path)]
    if source == "documents":
        return _document_rows(checked.path, rng, negatives_per_query, depth, max_documents)
    if source == "beir":
        positives = _beir_positives(path, rng)
        pool = [passage for _, passage in positives]
        return with_negatives(positives, miner or RandomNegativeMiner(pool), negatives_per_query, rng)
    pair_rows = read_pair_rows(checked, strict)
    rows = [row.values for row in pair_rows]
    if not rows:
        raise ValueError(f"Pair file {str(path)!r} holds no usable rows.")
    columns = set(rows[0])
    if "margin" in columns:  # distillation triplets: margin-MSE (see the module docstring)
        return [{"query": r["anchor"], "positive": r["positive"], "negative": r["negative"],
                 "label": r["margin"]} for r in rows]
    if "score" in columns:
        scores = scaled_scores(pair_rows, path, score_range)
        return [{"query": r["sentence1"], "passage": r["sentence2"], "label": score}
                for r, score in zip(rows, scores, strict=True)]
    if "label" in columns and "query" in columns:
        labelled = [{"query": r["query"], "passage": r["passage"], "label": float(relevant(r["label"]))} for r in rows]
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


def _base_layers(base: Path) -> int:
    if not (base / "config.json").is_file():
        raise ValueError(f"Base model {str(base)!r} is not a BERT or CrossEncoder folder (no config.json).")
    return int(json.loads((base / "config.json").read_text()).get("num_hidden_layers", 0))


def _new_cross_encoder(base: Path, config: CrossEncoderConfig, config_kwargs: dict | None) -> CrossEncoder:
    """BERT's [CLS] classification head, or mean pooling then a linear score (see CrossEncoderConfig)."""
    if config.pooling == "cls":
        return CrossEncoder(str(base), num_labels=1, max_length=config.max_length, device="cpu",
                            config_kwargs=config_kwargs)
    from sentence_transformers.cross_encoder.modules import Dense, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformer = Transformer(str(base), transformer_task="feature-extraction", config_kwargs=config_kwargs,
                              max_seq_length=config.max_length)
    hidden = int(json.loads((base / "config.json").read_text())["hidden_size"])
    head = Dense(hidden, 1, activation_function=torch.nn.Identity(), module_input_name="sentence_embedding",
                 module_output_name="scores")
    return CrossEncoder(modules=[transformer, Pooling(hidden, "mean"), head], device="cpu")


def freeze_unused_pooler(model: CrossEncoder) -> None:
    """Mark BERT's pooler (tanh over [CLS]) frozen: mean pooling never reads it, so it never gets a gradient.

    Training is unchanged (AdamW skips weights without a gradient); under torchrun, DDP
    then sees only weights that get one, as it requires without its unused-weight search.
    """
    for name, parameter in model.named_parameters():
        if ".pooler." in f".{name}":
            parameter.requires_grad_(False)


def load_training_rows(config: CrossEncoderConfig, miner: NegativeMiner | None,
                       rng: np.random.Generator) -> list[dict]:
    """Every --train source's rows, concatenated and sampled to --max-train-examples."""
    rows: list[dict] = []
    for path in config.train:
        source_rows = load_cross_encoder_rows(
            path, rng, config.negatives_per_query, miner, config.negatives_depth, config.max_documents,
            config.score_range, config.strict,
        )
        logger.info("%s: %d pairs (%d positive)", path, len(source_rows), sum(r["label"] >= 0.5 for r in source_rows))
        rows += source_rows
    if config.max_train_examples is not None:
        order = rng.permutation(len(rows))[: config.max_train_examples]
        rows = [rows[int(index)] for index in order]
    distilled = {"negative" in row for row in rows}
    if distilled == {True, False}:
        raise ValueError("A margin file (anchor, positive, negative, margin) trains by distillation and "
                         "cannot be mixed with pair or document sources; pass it alone to --train.")
    if True in distilled:
        logger.info("cross-encoder distillation on %d triplets (margin-MSE)", len(rows))
    else:
        logger.info("cross-encoder training on %d pairs (%d positive)", len(rows),
                    sum(r["label"] >= 0.5 for r in rows))
    return rows


def train_cross_encoder(config: CrossEncoderConfig, miner: NegativeMiner | None = None) -> CrossEncoderResult:
    """Train into `config.out` (see training/output_folder.py); Ctrl-C saves a checkpoint that
    `--resume` continues from."""
    output = plan_output(config.out, "cross-encoder", config.overwrite, config.resume)
    base = resolve_base(config.base)
    layers = _base_layers(base)
    if config.num_layers is not None and config.num_layers > layers:
        raise ValueError(f"num_layers ({config.num_layers}) exceeds the {layers} layers of {base}; pass at most {layers}.")
    rows = load_training_rows(config, miner, np.random.default_rng(config.seed))
    distilled = bool(rows) and "negative" in rows[0]
    config_kwargs = {"num_hidden_layers": config.num_layers} if config.num_layers is not None else None
    transformers.set_seed(config.seed)  # the fresh scoring head too
    model = _new_cross_encoder(base, config, config_kwargs)
    if config.num_layers is not None:
        logger.info("kept the first %d of the %d layers of %s", config.num_layers, layers, base)
    if config.pooling == "mean":
        freeze_unused_pooler(model)
    loss = MarginMSELoss(model) if distilled else BinaryCrossEntropyLoss(model)
    output = prepare(output)
    args = CrossEncoderTrainingArguments(
        output_dir=str(checkpoints_folder(output)),
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
        use_cpu=trainer_uses_cpu(),
        # Under torchrun, DDP's search for unused weights fails on a CrossEncoder ("mark a variable ready
        # only once"); every trainable weight is used (see `freeze_unused_pooler`), so none is needed.
        ddp_find_unused_parameters=False,
    )
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=Dataset.from_list(rows), loss=loss)
    run_trainer(trainer, output)
    if is_main_process():  # under torchrun, rank 0 alone writes the model
        if config.save_dtype == "float16":
            model.to(torch.float16)
        model.save(str(output.work))
    drop_checkpoints(output)
    finish(output)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    logger.info("saved CrossEncoder %s (%s) after %d steps: the weights of the last step", config.out,
                config.save_dtype, trainer.state.global_step)
    return CrossEncoderResult(config.out, trainer.state.global_step, losses)
