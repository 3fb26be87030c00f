"""STSb evaluation: Spearman correlation x100 between cosine similarity and gold scores.

Usage: python -m training.eval_sts --model DIR --data STSB_DIR --split test [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

from data.stsb import MAX_SCORE, SPLITS, load_stsb
from training.config import DEFAULT_BASE, default_data_dir, resolve_base

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StsResult:
    spearman: float  # x100
    pearson: float  # x100
    pairs: int
    split: str
    model: str


def sts_evaluator(data_dir: Path | str, split: str = "dev", batch_size: int = 64) -> EmbeddingSimilarityEvaluator:
    """sentence-transformers' evaluator over one STSb split, gold scores mapped to 0-1."""
    pairs = load_stsb(data_dir, split)
    return EmbeddingSimilarityEvaluator(
        [pair.sentence1 for pair in pairs],
        [pair.sentence2 for pair in pairs],
        [pair.score / MAX_SCORE for pair in pairs],
        batch_size=batch_size,
        similarity_fn_names=["cosine"],
        name=f"sts-{split}",
        write_csv=False,
    )


def evaluate_sts(model: str | Path | SentenceTransformer, data_dir: Path | str, split: str = "test",
                 batch_size: int = 64) -> StsResult:
    if isinstance(model, SentenceTransformer):
        encoder, name = model, "<in memory>"
    else:
        # "default" (or "all-MiniLM-L6-v2") names the default bi-encoder, as every training command takes it.
        folder = resolve_base(model) if str(model) in (DEFAULT_BASE, "all-MiniLM-L6-v2") else Path(model)
        if not folder.is_dir():
            raise ValueError(f"Model folder {str(model)!r} does not exist. Pass a SentenceTransformer folder, "
                             f"or '{DEFAULT_BASE}' for all-MiniLM-L6-v2.")
        encoder, name = SentenceTransformer(str(folder), device="cpu"), str(model)
    evaluator = sts_evaluator(data_dir, split, batch_size)
    metrics = evaluator(encoder)
    prefix = f"sts-{split}_"
    return StsResult(
        spearman=round(100 * metrics[prefix + "spearman_cosine"], 2),
        pearson=round(100 * metrics[prefix + "pearson_cosine"], 2),
        pairs=len(evaluator.scores),
        split=split,
        model=name,
    )


def main(argv: list[str] | None = None) -> StsResult:
    parser = argparse.ArgumentParser(prog="python -m training.eval_sts", description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True,
                        help=f"SentenceTransformer folder, or '{DEFAULT_BASE}' for all-MiniLM-L6-v2")
    parser.add_argument("--data", default=str(default_data_dir() / "stsb"), help="STSb folder")
    parser.add_argument("--split", default="test", choices=SPLITS)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="end with one JSON line holding `spearman`")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    result = evaluate_sts(args.model, args.data, args.split, args.batch_size)
    print(f"STSb {result.split}: cosine Spearman x100 = {result.spearman:.2f} "
          f"(Pearson {result.pearson:.2f}, {result.pairs} pairs, model {result.model})")
    if args.json:
        print(json.dumps(asdict(result)))
    return result


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:  # bad input: show the message, not a traceback
        raise SystemExit(f"error: {err}") from err
