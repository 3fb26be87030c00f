"""STSb test: the SBERT paper's finding (Reimers and Gurevych 2019, Tables 1-2) at CPU scale.

Pretrains a small BERT from scratch (MLM + NSP) on the shared Wikipedia slice, then
compares on STSb test (cosine Spearman x100):
  1. the raw pretrained model's [CLS] vector,
  2. the raw pretrained model's mean of token embeddings,
  3. the model after SBERT fine-tuning: softmax on SICK train+trial, then cosine on STSb train
     (the softmax-only intermediate is reported as well),
next to the paper's BERT-base figures (16.50, 46.35, 84.67).

Every training stage goes through the project's CLIs (`python -m training tokenizer|pretrain|siamese`)
in a subprocess whose log lands in --out; the fine-tuned models are scored through
`python -m training.eval_sts --json`. The raw BERT folder is scored in-process, because the
eval CLI has no pooling option (it would silently give a bare BERT folder mean pooling).

Usage: nice -n 5 python bench/bench_sbert_finding.py [--max-steps 1500] [--preset tiny] [--max-minutes M] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT as ROOT
from training.config import default_data_dir

PAPER = {  # SBERT paper, BERT-base, STSb test Spearman x100
    "cls": "16.50 (Table 1, BERT CLS-vector)",
    "mean": "46.35 (Table 1, Avg. BERT embeddings)",
    "softmax": "77.03 (Table 1, SBERT-NLI-base: SNLI+MNLI, ~1M pairs)",
    "finetuned": "84.67 (Table 2, SBERT-STSb-base; 85.35 for SBERT-NLI-STSb-base)",
}


def run_stage(name: str, command: list[str], log_dir: Path) -> tuple[float, str]:
    """Run one CLI stage, tee its output to `log_dir/name.log`; (wall seconds, output). Fails loudly."""
    log_path = log_dir / f"{name}.log"
    print(f"[{name}] {' '.join(command)}", flush=True)
    started = time.perf_counter()
    with log_path.open("w") as log:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            log.write(line)
            log.flush()
            lines.append(line)
            if any(key in line for key in ("step", "eval", "corpus", "saved", "rror", "Traceback", "spearman")):
                print(f"  {line.rstrip()}", flush=True)
        code = process.wait()
    seconds = time.perf_counter() - started
    output = "".join(lines)
    if code != 0:
        raise SystemExit(f"[{name}] failed with exit code {code} after {seconds:.0f}s; see {log_path}:\n"
                         + "".join(lines[-30:]))
    print(f"[{name}] done in {seconds:.0f}s", flush=True)
    return seconds, output


def done(path: Path, marker: str) -> bool:
    return (path / marker).is_file()


def eval_raw(bert_dir: Path, stsb: Path, pooling: str) -> float:
    """STSb test Spearman x100 of the raw pretrained BERT with `pooling` ('cls' or 'mean')."""
    from training.eval_sts import evaluate_sts
    from training.sentence_model import load_sentence_model

    model = load_sentence_model(bert_dir, pooling=pooling, max_seq_length=128)
    return evaluate_sts(model, stsb, "test").spearman


def eval_cli(model_dir: Path, stsb: Path, log_dir: Path, name: str) -> tuple[float, float]:
    seconds, output = run_stage(name, [sys.executable, "-m", "training.eval_sts", "--model", str(model_dir),
                                       "--data", str(stsb), "--split", "test", "--json"], log_dir)
    result = json.loads(output.strip().splitlines()[-1])
    return float(result["spearman"]), seconds


def corpus_size(corpus: Path, tokenizer_dir: Path, max_documents: int | None) -> tuple[int, int, int]:
    """(documents read, documents with text, WordPiece tokens) of the pretraining corpus, as pretrain reads it."""
    import itertools

    from transformers import AutoTokenizer

    from data.raw_text import iter_documents
    from training.pretrain_data import tokenize_documents

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    read = 0

    def counted():
        nonlocal read
        for document in itertools.islice(iter_documents(corpus), max_documents):
            read += 1
            yield document

    docs = tokenize_documents(counted(), tokenizer)
    return read, len(docs), sum(int(sentence.size) for doc in docs for sentence in doc)


def parse_pretrain(output: str) -> dict[str, object]:
    info: dict[str, object] = {}
    if match := re.search(r"corpus: (\d+) training documents, (\d+) held out", output):
        info["train_docs"], info["eval_docs"] = int(match.group(1)), int(match.group(2))
    evals = re.findall(r"eval step (\d+): MLM loss ([\d.]+), MLM accuracy ([\d.]+), NSP accuracy (\S+)", output)
    if evals:
        step, loss, acc, nsp = evals[-1]
        info["eval"] = {"step": int(step), "mlm_loss": float(loss), "mlm_accuracy": float(acc), "nsp_accuracy": nsp}
        info["evals"] = [(int(s), float(loss_), float(acc_), n) for s, loss_, acc_, n in evals]
    if match := re.search(r"saved BERT folder .* at step (\d+) \((\d+) tokens/s\)", output):
        info["steps"], info["tokens_per_s"] = int(match.group(1)), int(match.group(2))
    losses = re.findall(r"step (\d+) loss ([\d.]+) \(mlm ([\d.]+)", output)
    if losses:
        info["last_train"] = losses[-1]
    return info


def parse_siamese(output: str) -> str:
    match = re.search(r"saved .* after (\d+) steps; dev Spearman history (\[.*?\])", output)
    return f"{match.group(1)} steps, STSb dev {match.group(2)}" if match else "n/a"


def main() -> None:
    data = default_data_dir()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=data / "corpus" / "enwiki_slice.txt.gz")
    parser.add_argument("--max-documents", type=int, default=None, help="corpus documents to read (default: all)")
    parser.add_argument("--vocab-size", type=int, default=12000)
    parser.add_argument("--preset", default="tiny", choices=["tiny", "mini", "small", "medium", "base"])
    parser.add_argument("--max-steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--warmup-steps", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--max-minutes", type=float, default=None,
                        help="wall-clock budget for pretraining; it stops early, saving a loadable model")
    parser.add_argument("--softmax-epochs", type=float, default=1.0)
    parser.add_argument("--cosine-epochs", type=float, default=2.0)
    parser.add_argument("--siamese-batch-size", type=int, default=16)
    parser.add_argument("--siamese-learning-rate", type=float, default=1e-4)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "sbert_finding")
    parser.add_argument("--reuse", action="store_true", help="skip stages whose outputs already exist in --out")
    parser.add_argument("--no-record", action="store_true", help="print the table without writing BENCHMARKS.md")
    args = parser.parse_args()

    stsb, sick = data / "stsb", data / "sick" / "SICK_train_trial.txt"
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    tok_dir, bert_dir = out / "tokenizer", out / "bert"
    softmax_dir, cosine_dir = out / "sbert_softmax", out / "sbert_softmax_cosine"
    py = [sys.executable, "-m", "training"]
    wall: dict[str, float] = {}

    if not (args.reuse and done(tok_dir, "vocab.txt")):
        command = [*py, "tokenizer", "--corpus", str(args.corpus), "--out", str(tok_dir),
                   "--vocab-size", str(args.vocab_size)]
        if args.max_documents:
            command += ["--max-documents", str(args.max_documents)]
        wall["tokenizer"], _ = run_stage("tokenizer", command, out)

    pretrain_log = out / "pretrain.log"
    if args.reuse and done(bert_dir, "config.json") and pretrain_log.is_file():
        pretrain_output = pretrain_log.read_text()
    else:
        command = [*py, "pretrain", "--corpus", str(args.corpus), "--tokenizer", str(tok_dir),
                   "--preset", args.preset, "--max-steps", str(args.max_steps), "--batch-size", str(args.batch_size),
                   "--max-length", str(args.max_length), "--learning-rate", str(args.learning_rate),
                   "--warmup-steps", str(args.warmup_steps), "--eval-every", str(args.eval_every),
                   "--save-every", str(args.max_steps), "--log-every", "100", "--out", str(bert_dir)]
        if args.max_documents:
            command += ["--max-documents", str(args.max_documents)]
        if args.max_minutes:
            command += ["--max-minutes", str(args.max_minutes)]
        wall["pretrain"], pretrain_output = run_stage("pretrain", command, out)
    pretrain_info = parse_pretrain(pretrain_output)

    siamese_common = ["--batch-size", str(args.siamese_batch_size), "--learning-rate", str(args.siamese_learning_rate),
                      "--eval-data", str(stsb)]
    siamese_notes = {}
    if not (args.reuse and done(softmax_dir, "modules.json")):
        command = [*py, "siamese", "--base", str(bert_dir), "--objective", "softmax", "--train", str(sick),
                   "--out", str(softmax_dir), "--pooling", "mean", "--epochs", str(args.softmax_epochs), *siamese_common]
        wall["softmax (SICK)"], output = run_stage("siamese_softmax", command, out)
        siamese_notes["softmax"] = parse_siamese(output)
    if not (args.reuse and done(cosine_dir, "modules.json")):
        command = [*py, "siamese", "--base", str(softmax_dir), "--objective", "cosine", "--train", str(stsb),
                   "--out", str(cosine_dir), "--epochs", str(args.cosine_epochs), *siamese_common]
        wall["cosine (STSb train)"], output = run_stage("siamese_cosine", command, out)
        siamese_notes["cosine"] = parse_siamese(output)

    started = time.perf_counter()
    scores = {"cls": eval_raw(bert_dir, stsb, "cls"), "mean": eval_raw(bert_dir, stsb, "mean")}
    scores["softmax"], _ = eval_cli(softmax_dir, stsb, out, "eval_softmax")
    scores["finetuned"], _ = eval_cli(cosine_dir, stsb, out, "eval_finetuned")
    wall["STSb test evaluation (4 models)"] = time.perf_counter() - started

    started = time.perf_counter()
    read, with_text, tokens = corpus_size(args.corpus, tok_dir, args.max_documents)
    wall["corpus token count (bookkeeping)"] = time.perf_counter() - started

    rows = [
        ["raw pretrained model, [CLS] vector", f"{scores['cls']:.2f}", PAPER["cls"]],
        ["raw pretrained model, mean of token embeddings", f"{scores['mean']:.2f}", PAPER["mean"]],
        ["+ SBERT softmax on SICK train+trial (mean pooling)", f"{scores['softmax']:.2f}", PAPER["softmax"]],
        ["+ SBERT softmax on SICK, then cosine on STSb train", f"{scores['finetuned']:.2f}", PAPER["finetuned"]],
    ]
    table = markdown_table(["representation", "ours (STSb test Spearman x100)", "SBERT paper (BERT-base)"], rows)
    final = pretrain_info.get("eval", {})
    mlm = (f"final held-out MLM loss {final['mlm_loss']:.3f}, MLM accuracy {100 * final['mlm_accuracy']:.1f}%, "
           f"NSP accuracy {final['nsp_accuracy']} (step {final['step']}, {pretrain_info.get('eval_docs')} held-out "
           f"documents)" if final else "final MLM metrics: not found in the pretrain log")
    history = "; ".join(f"{step}: {loss:.2f}/{100 * acc:.1f}%" for step, loss, acc, _ in pretrain_info.get("evals", []))
    steps = pretrain_info.get("steps", args.max_steps)
    seen = int(steps) * args.batch_size
    body = "\n".join([
        "SBERT's finding (raw BERT [CLS] < mean pooling << siamese fine-tuning) with our own BERT, pretrained from "
        f"scratch on CPU: preset `{args.preset}` (BERT, {args.preset} shape), WordPiece vocabulary {args.vocab_size} "
        "trained on the same corpus. Fine-tuned models use mean pooling; STSb test has 1379 pairs.",
        "",
        table,
        "",
        f"- Corpus: `{args.corpus.name}`, {read} `<doc>` blocks read, {with_text} with text "
        f"({pretrain_info.get('train_docs')} for training, {pretrain_info.get('eval_docs')} held out), "
        f"{tokens / 1e6:.2f}M WordPiece tokens.",
        f"- Pretraining: {steps} steps x batch {args.batch_size} x seq length {args.max_length} "
        f"(~{seen} sequences, MLM + NSP), lr {args.learning_rate:g}, warm-up {args.warmup_steps}, fp32 on CPU, "
        f"{pretrain_info.get('tokens_per_s', 'n/a')} tokens/s; {mlm}.",
        f"- Held-out MLM loss/accuracy by step: {history or 'n/a'}.",
        f"- Siamese fine-tuning: batch {args.siamese_batch_size}, lr {args.siamese_learning_rate:g}, "
        f"softmax {args.softmax_epochs:g} epoch(s) ({siamese_notes.get('softmax', 'reused')}), cosine "
        f"{args.cosine_epochs:g} epoch(s) ({siamese_notes.get('cosine', 'reused')}); the best STSb-dev checkpoint "
        "of each stage is kept.",
        "- Wall time per stage: " + ", ".join(f"{stage} {seconds / 60:.1f} min" for stage, seconds in wall.items())
        + f" ({os.cpu_count()} shared CPU cores, torch threads: {os.environ.get('OMP_NUM_THREADS', 'all')}, "
        "`nice -n 5`).",
        "- The paper's BERT-base saw ~3.3B words for 1M steps x 256 sequences of up to 512 tokens and its "
        "fine-tuned row uses no SICK stage (SBERT-STSb-base); the NLI row was trained on ~1M SNLI+MNLI pairs, "
        "ours on 4.9k SICK pairs.",
    ])
    print(body)
    (out / "result.json").write_text(json.dumps({"scores": scores, "wall_s": wall, "pretrain": pretrain_info,
                                                 "corpus": {"read": read, "with_text": with_text, "tokens": tokens},
                                                 "args": {k: str(v) for k, v in vars(args).items()}}, indent=2))
    if not args.no_record:
        threads = f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} " if "OMP_NUM_THREADS" in os.environ else ""
        command = f"{threads}nice -n 5 python bench/bench_sbert_finding.py " + " ".join(sys.argv[1:])
        record("bench_sbert_finding", "STSb: the SBERT finding at CPU scale", body, command=command.strip())


if __name__ == "__main__":
    main()
