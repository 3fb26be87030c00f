"""Pretraining throughput and MLM accuracy: our loop vs a plain transformers baseline, same data.

Ours: MLM head on masked positions only, SDPA attention. Baseline: BertForPreTraining's own
loss (vocabulary projection over every position), eager attention. Both fp32 on CPU, same
tiny config, same examples, masks, optimizer and schedule, evaluated on the same held-out batches.
Usage: python bench/bench_pretrain.py [--steps 300] [--max-documents 3000]
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch
from transformers import get_linear_schedule_with_warmup

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT as ROOT
from training.config import (
    PretrainConfig,
    TokenizerConfig,
    default_data_dir,
)
from training.pretrain import (
    build_model,
    build_optimizer,
    evaluate,
    load_corpus,
    load_tokenizer,
    make_batch,
    masking_vocab,
    pretrain,
    to_tensors,
)
from training.pretrain_data import ExampleStream
from training.tokenizer import train_tokenizer


def baseline(config: PretrainConfig) -> dict[str, float]:
    """The textbook loop: model(**batch, labels=..., next_sentence_label=...).loss, eager attention,
    fp32, on `config.device` (the CPU when None)."""
    tokenizer = load_tokenizer(config)
    vocab = masking_vocab(tokenizer)
    pad_id, cls_id, sep_id = tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    train_docs, eval_docs = load_corpus(config, tokenizer)
    torch.manual_seed(config.seed)
    device = torch.device(config.device or "cpu")
    model, _ = build_model(replace(config, attention="eager"), len(vocab.is_continuation), pad_id)
    model.to(device).train()
    optimizer = build_optimizer(model, config)
    scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, config.max_steps)
    stream = ExampleStream(train_docs, config.seed, config.max_length, cls_id, sep_id, config.nsp)
    eval_stream = ExampleStream(eval_docs, config.seed + 1, config.max_length, cls_id, sep_id, config.nsp)
    eval_rng = np.random.default_rng([config.seed, 1])
    eval_batches = [to_tensors(make_batch(eval_stream.take(config.batch_size), eval_rng, vocab, pad_id, config), device)
                    for _ in range(config.eval_batches)]
    tokens, seconds = 0, 0.0
    for step in range(config.max_steps):
        started = time.perf_counter()
        rng = np.random.default_rng([config.seed, step])
        batch = to_tensors(make_batch(stream.take(config.batch_size), rng, vocab, pad_id, config), device)
        loss = model(**batch).loss  # labels and next_sentence_label are in the batch
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        tokens += int(batch["attention_mask"].sum())
        seconds += time.perf_counter() - started
    metrics = evaluate(model, eval_batches, config.nsp, config.max_steps,
                       lambda: torch.autocast(device.type, enabled=False))
    return {"tokens_per_second": tokens / seconds, "mlm_loss": metrics.mlm_loss, "mlm_accuracy": metrics.mlm_accuracy,
            "nsp_accuracy": metrics.nsp_accuracy, "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(default_data_dir() / "corpus" / "enwiki_slice.txt.gz"))
    parser.add_argument("--max-documents", type=int, default=3000)
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--out", default=str(ROOT / "runs" / "bench_pretrain"))
    parser.add_argument("--no-record", action="store_true", help="print the table only, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    out = Path(args.out)
    tokenizer_dir = out / "tokenizer"
    if not (tokenizer_dir / "vocab.txt").is_file():
        train_tokenizer(TokenizerConfig(corpus=Path(args.corpus), out=tokenizer_dir, vocab_size=args.vocab_size,
                                        max_documents=args.max_documents))
    config = PretrainConfig(
        corpus=Path(args.corpus), out=out / "ours", tokenizer=tokenizer_dir, preset="tiny", max_steps=args.steps,
        batch_size=args.batch_size, max_length=args.max_length, learning_rate=5e-4, warmup_steps=args.steps // 10,
        max_documents=args.max_documents, eval_documents=100, eval_batches=8, eval_every=args.steps,
        save_every=args.steps, log_every=max(1, args.steps // 5), precision="fp32", attention="sdpa", device="cpu",
    )
    eager_config = replace(config, out=out / "ours_eager", attention="eager")
    for run in (config, eager_config):
        for child in (run.out / "checkpoints").glob("step-*.pt"):
            child.unlink()
    rows = []
    for name, run in (("ours: MLM head on masked positions", config), ("ours, eager attention", eager_config)):
        result = pretrain(run)
        last = result.evals[-1]
        rows.append([name, run.attention, "masked only", f"{result.tokens_per_second:,.0f}", f"{last.mlm_loss:.3f}",
                     f"{last.mlm_accuracy:.3f}", f"{last.nsp_accuracy:.3f}"])
        if run is config:
            ours = result
    plain = baseline(config)
    rows.append(["plain BertForPreTraining loss", "eager", "all positions", f"{plain['tokens_per_second']:,.0f}",
                 f"{plain['mlm_loss']:.3f}", f"{plain['mlm_accuracy']:.3f}", f"{plain['nsp_accuracy']:.3f}"])
    header = ["loop", "attention", "MLM head over", "tokens/s", "held-out MLM loss", "MLM accuracy", "NSP accuracy"]
    table = markdown_table(header, rows)
    print(table)
    speedup = ours.tokens_per_second / plain["tokens_per_second"]
    body = (
        table
        + f"\n\nTiny preset (2 layers, hidden 128, 2 heads), vocabulary {args.vocab_size} WordPiece trained on the "
        f"first {args.max_documents} documents of `{Path(args.corpus).name}`; {args.steps} steps of batch "
        f"{args.batch_size} x max length {args.max_length}, fp32 on CPU, same examples, masks and schedule for all three; "
        f"held-out metrics on 8 batches from 100 held-out documents. Throughput ratio ours / plain: {speedup:.2f}x. "
        "Tokens/s counts non-padding tokens over training-step time only; the CPU was shared with other "
        "work, so treat throughput as approximate."
    )
    if not args.no_record:
        record("bench_pretrain", "Pretraining loop throughput and MLM accuracy (CPU, tiny)", body)


if __name__ == "__main__":
    main()
