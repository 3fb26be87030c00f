"""Command line: python -m training {tokenizer,pretrain,siamese,cross-encoder,adapt} ...

Data-parallel on N processes: `torchrun --nproc_per_node N -m training pretrain ...`
(any subcommand but tokenizer); see training/distributed.py.

Every subcommand that writes a folder refuses a non-empty --out unless --overwrite, and
takes --resume after Ctrl-C (training/output_folder.py, training/interrupt.py); every input
file is read by the rules of training/input_files.py (--strict) and training/pair_rows.py.

Each subcommand parses its flags into the stage's config dataclass and calls one
function; `main` returns that function's result so tests can inspect it, and `cli`
(the `semsearch-train` console script) returns an exit status.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from indexer.settings import quiet_library_logs
from training.config import (
    CROSS_ENCODER_POOLINGS,
    OBJECTIVES,
    POOLINGS,
    PRESETS,
    CrossEncoderConfig,
    PretrainConfig,
    SiameseConfig,
    TokenizerConfig,
    config_from_file,
)
from training.interrupt import EXIT_INTERRUPTED, TrainingInterrupted


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m training", description="Train tokenizers and BERT encoders.")
    commands = parser.add_subparsers(dest="command", required=True)
    for add_flags in (_tokenizer_flags, _pretrain_flags, _siamese_flags, _cross_encoder_flags, _adapt_flags):
        add_flags(commands)
    return parser


OVERWRITE_HELP = ("replace a non-empty --out once the new model is complete (the old folder is kept as OUT.replaced); "
                  "without it a non-empty --out is refused")
RESUME_HELP = "continue the run interrupted (Ctrl-C) or stopped in --out"
STRICT_HELP = "fail on the first unreadable row (bad UTF-8, a malformed record) instead of skipping it with a warning"


def _output_flags(parser: argparse.ArgumentParser, resume: bool = True) -> None:
    """--overwrite (and --resume): how every command treats its --out (training/output_folder.py)."""
    parser.add_argument("--overwrite", action="store_true", default=None, help=OVERWRITE_HELP)
    if resume:
        parser.add_argument("--resume", action="store_true", default=None, help=RESUME_HELP)


def _input_flags(parser: argparse.ArgumentParser, scores: bool = True) -> None:
    """--strict (and --score-range): how every command reads its input files (training/input_rows.py)."""
    parser.add_argument("--strict", action="store_true", default=None, help=STRICT_HELP)
    if scores:
        parser.add_argument("--score-range", type=float, nargs=2, metavar=("LOW", "HIGH"),
                            help="the scale of a pair file's scores, e.g. 0 5 (mapped to 0-1); default: 0 1, or "
                                 "the known scale of STSb (0 5) and SICK (1 5)")


def _tokenizer_flags(commands) -> None:
    tokenizer = commands.add_parser("tokenizer", help="train a WordPiece vocabulary")
    tokenizer.add_argument("--corpus", type=Path, required=True)
    tokenizer.add_argument("--out", type=Path, required=True)
    tokenizer.add_argument("--vocab-size", type=int, default=30522)
    tokenizer.add_argument("--cased", action="store_true", help="keep case (default: lowercase)")
    tokenizer.add_argument("--min-frequency", type=int, default=2)
    tokenizer.add_argument("--max-documents", type=int)
    _output_flags(tokenizer, resume=False)
    _input_flags(tokenizer, scores=False)


def _pretrain_flags(commands) -> None:
    pretrain = commands.add_parser("pretrain", help="MLM + NSP pretraining")
    pretrain.add_argument("--corpus", type=Path)
    pretrain.add_argument("--out", type=Path)
    pretrain.add_argument("--tokenizer", type=Path)
    pretrain.add_argument("--base", type=Path, help="BERT folder to continue pretraining, or 'default' (all-MiniLM-L6-v2)")
    pretrain.add_argument("--preset", choices=list(PRESETS))
    pretrain.add_argument("--max-steps", type=int)
    pretrain.add_argument("--batch-size", type=int)
    pretrain.add_argument("--max-length", type=int)
    pretrain.add_argument("--learning-rate", type=float)
    pretrain.add_argument("--warmup-steps", type=int)
    pretrain.add_argument("--mask-rate", type=float)
    pretrain.add_argument("--whole-word-masking", action="store_true", default=None)
    pretrain.add_argument("--no-nsp", dest="nsp", action="store_false", default=None, help="MLM only (RoBERTa style)")
    pretrain.add_argument("--eval-documents", type=int)
    pretrain.add_argument("--eval-every", type=int)
    pretrain.add_argument("--save-every", type=int)
    pretrain.add_argument("--log-every", type=int)
    pretrain.add_argument("--max-documents", type=int)
    pretrain.add_argument("--seed", type=int)
    pretrain.add_argument("--precision", choices=["auto", "fp32", "bf16"])
    pretrain.add_argument("--attention", choices=["sdpa", "eager"])
    pretrain.add_argument("--device")
    _output_flags(pretrain)
    _input_flags(pretrain, scores=False)
    pretrain.add_argument(
        "--max-minutes", type=float,
        help="stop after this much wall time, saving a checkpoint and the model folder (--resume continues)",
    )
    pretrain.add_argument("--config", type=Path, help="JSON file of PretrainConfig fields; flags override it")


def _siamese_flags(commands) -> None:
    siamese = commands.add_parser("siamese", help="SBERT fine-tuning")
    siamese.add_argument("--base", required=True, help="BERT or SentenceTransformer folder, or 'default' (all-MiniLM-L6-v2)")
    siamese.add_argument("--objective", choices=OBJECTIVES, required=True)
    siamese.add_argument("--train", type=Path, required=True)
    siamese.add_argument("--out", type=Path, required=True)
    siamese.add_argument("--pooling", choices=POOLINGS)
    siamese.add_argument("--max-steps", type=int, default=-1)
    siamese.add_argument("--epochs", type=float, default=1.0)
    siamese.add_argument("--batch-size", type=int, default=16)
    siamese.add_argument("--learning-rate", type=float, default=2e-5)
    siamese.add_argument("--eval-data", type=Path, help="STSb folder for dev-set model selection")
    siamese.add_argument("--eval-steps", type=int)
    siamese.add_argument("--no-eval", dest="evaluate_on_dev", action="store_false", default=None,
                         help="skip STSb dev evaluation and keep the last step")
    siamese.add_argument("--max-train-examples", type=int)
    siamese.add_argument("--seed", type=int, default=0)
    _output_flags(siamese)
    _input_flags(siamese)


def _cross_encoder_flags(commands) -> None:
    cross = commands.add_parser("cross-encoder", help="train a CrossEncoder reranker")
    cross.add_argument("--base", required=True, help="BERT or CrossEncoder folder, or 'default' (all-MiniLM-L6-v2)")
    cross.add_argument("--train", type=Path, nargs="+", required=True,
                       help="one or more sources: scored pairs, (query, passage) positives or raw documents")
    cross.add_argument("--out", type=Path, required=True)
    cross.add_argument("--max-length", type=int, default=256, help="query + passage tokens")
    cross.add_argument("--num-layers", type=int, help="keep only the base's first N layers (a faster reranker)")
    cross.add_argument("--save-dtype", choices=["float32", "float16"], default="float32")
    cross.add_argument("--pooling", choices=CROSS_ENCODER_POOLINGS, default="cls",
                       help="cls: BERT's classification head; mean: mean of token vectors (for bases trained so, e.g. MiniLM)")
    cross.add_argument("--max-documents", type=int, help="raw-document sources: read at most this many documents")
    cross.add_argument("--max-steps", type=int, default=-1)
    cross.add_argument("--epochs", type=float, default=1.0)
    cross.add_argument("--batch-size", type=int, default=16)
    cross.add_argument("--learning-rate", type=float, default=2e-5)
    cross.add_argument("--negatives-per-query", type=int, default=3)
    cross.add_argument("--max-train-examples", type=int)
    cross.add_argument(
        "--negatives-index", type=Path,
        help="mine hard negatives from this index (built with python -m indexer build); default: random passages",
    )
    cross.add_argument("--negatives-mode", choices=["dense", "bm25", "hybrid"], default="hybrid",
                       help="bm25, hybrid: the index's retriever; dense: the index's bi-encoder over the training "
                            "passages (sentence-transformers' mine_hard_negatives)")
    cross.add_argument("--negatives-skip", type=int, default=0, help="pass over this many top non-positive hits")
    cross.add_argument("--negatives-depth", type=int,
                       help="sample the negatives among this many top non-positive hits (default: take the top ones)")
    cross.add_argument("--seed", type=int, default=0)
    _output_flags(cross)
    _input_flags(cross)


def _adapt_flags(commands) -> None:
    adapt = commands.add_parser("adapt", help="domain adaptation: continued MLM, then mnrl on self-supervised pairs")
    adapt.add_argument("--corpus", type=Path, required=True)
    adapt.add_argument("--out", type=Path, required=True)
    adapt.add_argument("--base", default="default", help="BERT or SentenceTransformer folder (default: all-MiniLM-L6-v2)")
    adapt.add_argument("--mlm-steps", type=int, default=1000, help="0 skips continued pretraining")
    adapt.add_argument("--mlm-batch-size", type=int, default=32)
    adapt.add_argument("--mlm-eval-documents", type=int,
                       help="documents held out to log MLM accuracy (default: a tenth of the corpus, at most 200); "
                            "the corpus needs at least this many plus 1")
    adapt.add_argument("--siamese-steps", type=int, default=1000)
    adapt.add_argument("--siamese-batch-size", type=int, default=32)
    adapt.add_argument("--max-seq-length", type=int, default=256, help="tokens the adapted bi-encoder reads")
    adapt.add_argument("--pairs", type=Path, help="optional labelled pairs for a last stage")
    adapt.add_argument("--pairs-objective", choices=OBJECTIVES, default="cosine")
    adapt.add_argument("--pairs-steps", type=int, default=-1)
    adapt.add_argument("--max-documents", type=int)
    adapt.add_argument("--seed", type=int, default=0)
    _output_flags(adapt)
    _input_flags(adapt, scores=False)


def _flags(args: argparse.Namespace, *skip: str) -> dict[str, Any]:
    return {key: value for key, value in vars(args).items() if key not in ("command", *skip) and value is not None}


def main(argv: list[str] | None = None) -> Any:
    """Under torchrun every process runs this; only rank 0 logs at INFO."""
    from training.distributed import launched_context

    args = _parser().parse_args(argv)
    level = logging.INFO if launched_context().is_main else logging.WARNING
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_library_logs()
    if args.command == "tokenizer":
        from training.tokenizer import train_tokenizer

        flags = _flags(args, "cased")
        return train_tokenizer(TokenizerConfig(lowercase=not args.cased, **flags))
    if args.command == "pretrain":
        from training.pretrain import pretrain

        flags = _flags(args, "config")
        if args.config is not None:
            config = config_from_file(PretrainConfig, args.config, **flags)
        else:
            missing = [flag for flag in ("corpus", "out") if flag not in flags]
            if missing:
                raise SystemExit(f"pretrain needs --{' --'.join(missing)} (or a --config file that sets them)")
            config = PretrainConfig(**flags)
        return pretrain(config)
    if args.command == "siamese":
        from training.siamese import train_siamese

        return train_siamese(SiameseConfig(**_flags(args)))
    if args.command == "adapt":
        from training.adapt import AdaptConfig, adapt

        return adapt(AdaptConfig(**_flags(args)))
    from training.cross_encoder import train_cross_encoder

    miner = None
    if args.negatives_index is not None:
        from training.negatives import index_miner

        miner = index_miner(args.negatives_index, mode=args.negatives_mode, skip=args.negatives_skip,
                            depth=args.negatives_depth)
    flags = _flags(args, "negatives_index", "negatives_mode", "negatives_skip")
    return train_cross_encoder(CrossEncoderConfig(**flags), miner=miner)


def cli(argv: list[str] | None = None) -> int:
    """The console entry point (`semsearch-train`): an exit status, where `main` returns the stage's result.

    Ctrl-C exits 130 with one line: how to resume when training had begun (a checkpoint was saved)."""
    try:
        main(argv)
    except ValueError as err:  # bad input: show the message, not a traceback
        raise SystemExit(f"error: {err}") from err
    except TrainingInterrupted as err:
        print(f"training {err}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("interrupted before training began; nothing was saved", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        from training.distributed import shutdown

        shutdown()  # the torchrun process group, if this run joined one
    return 0


if __name__ == "__main__":
    sys.exit(cli())
