"""Domain adaptation in one call: a raw corpus in, a bi-encoder tuned to it out.

The recipe of Gururangan et al. (2020, "Don't Stop Pretraining") followed by
self-supervised siamese tuning (Wang et al. 2021, GPL/TSDAE family):
1. continued MLM pretraining of the base encoder on the corpus (NSP off: the
   base has no NSP head worth keeping, and RoBERTa showed it is not needed);
2. `mnrl` (in-batch negatives) on pairs made from the corpus itself, title to
   body and sentence to surrounding passage (inverse cloze);
3. optionally, the user's own labelled pairs with any objective.
Each stage writes a standard folder under `out/`; `out/model` is the result.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, replace
from pathlib import Path

from data.raw_text import iter_documents
from training.config import AdaptConfig, PretrainConfig, SiameseConfig, resolve_base
from training.input_files import checked_input
from training.output_folder import (
    finish,
    holds_run_state,
    plan_output,
    prepare,
    work_folder,
    written_by,
)
from training.pretrain import pretrain
from training.siamese import train_siamese

logger = logging.getLogger(__name__)

MAX_HELD_OUT = 200  # documents held out for MLM accuracy, when --mlm-eval-documents is not given


@dataclass(frozen=True)
class AdaptResult:
    model: Path
    mlm_folder: Path | None
    stages: tuple[str, ...]


def held_out_documents(config: AdaptConfig) -> int:
    """How many documents the MLM stage holds out: --mlm-eval-documents, else a tenth of the corpus
    (at most MAX_HELD_OUT). Counted, and a corpus too small refused, before any model loads."""
    documents = itertools.islice(iter_documents(checked_input(config.corpus, config.strict).path), config.max_documents)
    count = sum(1 for document in documents if document.text.strip())
    held_out = config.mlm_eval_documents or min(MAX_HELD_OUT, max(1, count // 10))
    if config.mlm_steps > 0 and count < held_out + 1:
        raise ValueError(
            f"Corpus {str(config.corpus)!r} has {count} documents with text, fewer than the {held_out + 1} needed "
            f"for {held_out} held-out documents (--mlm-eval-documents) plus training; lower --mlm-eval-documents, "
            "add documents, or skip continued pretraining with --mlm-steps 0."
        )
    return held_out


def _stage_done(folder: Path, command: str) -> bool:
    """A stage finished in an earlier, interrupted run of adapt: its folder is complete."""
    if written_by(folder) == command:
        logger.info("%s is complete from the interrupted run; skipping that stage", folder)
        return True
    return False


def adapt(config: AdaptConfig) -> AdaptResult:
    """Run the stages in order into `config.out` (see training/output_folder.py); return the final
    SentenceTransformer folder. `--resume` skips the stages already complete and resumes the one
    that was interrupted."""
    base = resolve_base(config.base)
    output = plan_output(config.out, "adapt", config.overwrite, config.resume)
    held_out = held_out_documents(config)
    work = prepare(output).work
    stages: list[str] = []
    encoder: Path = base
    if config.mlm_steps > 0:
        logger.info("stage 1/3: continued MLM pretraining of %s on %s", base, config.corpus)
        mlm = work / "mlm"
        if not _stage_done(mlm, "pretrain"):
            pretrain(_mlm_config(config, base, mlm, held_out))
        encoder = mlm
        stages.append("mlm")
    logger.info("stage 2/3: mnrl on self-supervised pairs from %s", config.corpus)
    selfsup = work / ("model" if config.pairs is None else "selfsup")
    siamese = SiameseConfig(base=str(encoder), objective="mnrl", train=config.corpus, out=selfsup, pooling="mean",
                            max_steps=config.siamese_steps, batch_size=config.siamese_batch_size,
                            max_seq_length=config.max_seq_length, evaluate_on_dev=False, seed=config.seed,
                            strict=config.strict)
    if not _stage_done(selfsup, "siamese"):
        train_siamese(replace(siamese, resume=holds_run_state(work_folder(selfsup))))
    stages.append("mnrl")
    if config.pairs is not None:
        logger.info("stage 3/3: %s on the labelled pairs in %s", config.pairs_objective, config.pairs)
        model = work / "model"
        labelled = replace(siamese, base=str(selfsup), objective=config.pairs_objective, train=config.pairs,
                           out=model, pooling=None, max_steps=config.pairs_steps, batch_size=16)
        if not _stage_done(model, "siamese"):
            train_siamese(replace(labelled, resume=holds_run_state(work_folder(model))))
        stages.append(config.pairs_objective)
    out = finish(output)
    return AdaptResult(model=out / "model", mlm_folder=out / "mlm" if "mlm" in stages else None, stages=tuple(stages))


def _mlm_config(config: AdaptConfig, base: Path, out: Path, held_out: int) -> PretrainConfig:
    return PretrainConfig(
        corpus=config.corpus,
        out=out,
        base=base,
        max_steps=config.mlm_steps,
        batch_size=config.mlm_batch_size,
        learning_rate=config.mlm_learning_rate,
        warmup_steps=max(1, config.mlm_steps // 10),
        nsp=False,
        eval_documents=held_out,
        eval_every=max(1, config.mlm_steps // 5),
        save_every=config.mlm_steps,
        max_documents=config.max_documents,
        seed=config.seed,
        strict=config.strict,
        resume=holds_run_state(work_folder(out)),
    )
