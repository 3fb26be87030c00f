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

import logging
from dataclasses import dataclass
from pathlib import Path

from training.config import AdaptConfig, PretrainConfig, SiameseConfig, resolve_base
from training.pretrain import pretrain
from training.siamese import train_siamese

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdaptResult:
    model: Path
    mlm_folder: Path | None
    stages: tuple[str, ...]


def adapt(config: AdaptConfig) -> AdaptResult:
    """Run the stages in order; return the final SentenceTransformer folder."""
    base = resolve_base(config.base)
    stages: list[str] = []
    encoder: Path = base
    mlm_folder = None
    if config.mlm_steps > 0:
        logger.info("stage 1/3: continued MLM pretraining of %s on %s", base, config.corpus)
        result = pretrain(
            PretrainConfig(
                corpus=config.corpus,
                out=config.out / "mlm",
                base=base,
                max_steps=config.mlm_steps,
                batch_size=config.mlm_batch_size,
                learning_rate=config.mlm_learning_rate,
                warmup_steps=max(1, config.mlm_steps // 10),
                nsp=False,
                eval_documents=config.mlm_eval_documents,
                eval_every=max(1, config.mlm_steps // 5),
                save_every=config.mlm_steps,
                max_documents=config.max_documents,
                seed=config.seed,
            )
        )
        encoder = mlm_folder = result.out
        stages.append("mlm")
    logger.info("stage 2/3: mnrl on self-supervised pairs from %s", config.corpus)
    model = config.out / "model"
    train_siamese(
        SiameseConfig(
            base=str(encoder),
            objective="mnrl",
            train=config.corpus,
            out=model if config.pairs is None else config.out / "selfsup",
            pooling="mean",
            max_steps=config.siamese_steps,
            batch_size=config.siamese_batch_size,
            max_seq_length=config.max_seq_length,
            evaluate_on_dev=False,
            seed=config.seed,
        )
    )
    stages.append("mnrl")
    if config.pairs is not None:
        logger.info("stage 3/3: %s on the labelled pairs in %s", config.pairs_objective, config.pairs)
        train_siamese(
            SiameseConfig(
                base=str(config.out / "selfsup"),
                objective=config.pairs_objective,
                train=config.pairs,
                out=model,
                max_steps=config.pairs_steps,
                max_seq_length=config.max_seq_length,
                evaluate_on_dev=False,
                seed=config.seed,
            )
        )
        stages.append(config.pairs_objective)
    return AdaptResult(model=model, mlm_folder=mlm_folder, stages=tuple(stages))
