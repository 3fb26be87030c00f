"""Encoding variants on the CPU: speed against plain `encode()`, retrieval quality, share of peak.

Issue 31 asks which way of running the bi-encoder the indexer should use on a CPU. Each variant
(`bench/encode_variants.py`: torch fp32 on one or all threads, bf16 autocast, torch int8, ONNX
Runtime fp32 and int8, OpenVINO fp32 and bf16) encodes the same sample of real passages, in
rounds that alternate the order of the variants, with plain `SentenceTransformer.encode()` in
every round as the peer; the table gives the median passages/s and its ratio to the peer's.

Work and peak. A passage's arithmetic is counted from its own tokens (padding excluded):
2 x (the weights of the encoder layers) per token for the matrix products, plus attention's
4 x tokens x hidden per token and layer. The machine's peak is measured here, by the best of
several square matrix products on all threads, in fp32, bf16 (`torch.mm` on bfloat16) and int8
(`torch._int_mm`); each variant's achieved GFLOP/s is set against the peak of its precision.

Quality. A variant that reaches `--quality-above` (default 1.1x the peer) is then measured on
the dev sets (`data.dev_sets.ALL_DEV_SETS`: SciFact train queries held out, Wikipedia lead
questions, Wikinews headlines, the questions of Debian's FAQs; never a test split), and with
`--scifact-test` on SciFact's test queries: each set's index (`bench_relevance.dev_index`) is
copied, its vectors re-embedded by the variant (`repair_index(model=...)`), and the dev queries
searched through a `Searcher` that encodes them with the same variant, in dense and hybrid mode. nDCG@10 is set against the index's own (fp32).
The issue's rule for a default: the fastest variant that loses at most 0.005 nDCG@10 on every
dev set in both modes.

Usage: python bench/bench_encode.py [--sample 480] [--rounds 2] [--variants ...] [--no-quality]
       [--sets ...] [--scifact-test] [--no-record]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from bench.bench_relevance import add_dev_arguments, dev_index, open_dev_sets  # noqa: E402
from bench.encode_variants import (  # noqa: E402
    VARIANTS,
    as_bi_encoder,
    cpu_model,
    cpu_vendor,
    make_encoder,
    matrix_units,
)
from bench.record import markdown_table, record  # noqa: E402
from data.dev_sets import ALL_DEV_SETS, DevSet  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer.build.repair import repair_index  # noqa: E402
from indexer.encoding import FP32  # noqa: E402
from indexer.sources.passage_text import bi_encoder_input  # noqa: E402
from search import Searcher, SearchParams  # noqa: E402
from search.eval import EVAL_DEPTH, run_queries  # noqa: E402
from search.metrics import ndcg_at_k  # noqa: E402

MODES = ("dense", "hybrid")
PEER = "fp32"
LOSS_ALLOWED = 0.005
TEST_SET = "scifact-test"  # shown in the table, never used to choose
BATCH_WARMUP = 64


def matmul_peak(precision: str, size: int = 2048, tries: int = 5) -> float:
    """The best GFLOP/s of `size` x `size` matrix products in `precision` on all threads."""
    if precision == "int8":
        a = torch.randint(-128, 127, (size, size), dtype=torch.int8)
        b = torch.randint(-128, 127, (size, size), dtype=torch.int8)
        product: Callable[[], torch.Tensor] = lambda: torch._int_mm(a, b)  # noqa: E731
    else:
        dtype = torch.bfloat16 if precision == "bf16" else torch.float32
        a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
        product = lambda: torch.mm(a, b)  # noqa: E731
    product()
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


def passage_flops(model, token_counts: np.ndarray) -> float:
    """Arithmetic of encoding passages of these token counts (no padding): the encoder layers'
    matrix products and attention (embeddings, norms and pooling are left out)."""
    config = model[0].auto_model.config
    hidden, layers, inner = config.hidden_size, config.num_hidden_layers, config.intermediate_size
    weights = layers * (4 * hidden * hidden + 2 * hidden * inner)
    tokens = token_counts.astype(np.float64)
    return float((2 * weights * tokens + 4 * layers * hidden * tokens ** 2).sum())


def sample_passages(index_dirs: Sequence[Path], model, per_index: int) -> list[str]:
    """The first `per_index` stored passages of each index, as the indexer gave them to the model."""
    texts: list[str] = []
    for index_dir in index_dirs:
        with Searcher(index_dir, model=model) as searcher:
            ids = np.sort(searcher.index.snapshot().vectors.base.ids())[:per_index]
            records = searcher.index.passages(ids.tolist())
            embed_titles = searcher.index.info.embed_titles
            texts += [bi_encoder_input(records[int(i)].title, records[int(i)].text, model, embed_titles) for i in ids]
    return texts


def speed(encoders: dict[str, Callable[[Sequence[str]], np.ndarray]], texts: list[str],
          rounds: int) -> dict[str, list[float]]:
    """Seconds per variant and round; the order of the variants turns each round."""
    names = list(encoders)
    for name in names:  # warm-up: first-call costs (graph compilation, allocation) are not measured
        encoders[name](texts[:BATCH_WARMUP])
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for name in order:
            start = time.perf_counter()
            encoders[name](texts)
            seconds[name].append(time.perf_counter() - start)
            print(f"round {round_ + 1} {name}: {len(texts) / seconds[name][-1]:.1f} passages/s", flush=True)
    return seconds



def dev_ndcg(searcher: Searcher, queries: dict[str, str], qrels: dict, mode: str) -> float:
    qids = sorted(qrels)
    rankings, _ = run_queries(searcher, queries, qids, SearchParams(k=EVAL_DEPTH, mode=mode, rerank=False))
    return float(np.mean([ndcg_at_k(rankings[q], qrels[q], 10) for q in qids]))


def quality(name: str, variant_model, model, sets: dict[str, tuple[Path, dict[str, str], dict]],
            work: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(set, mode) -> (nDCG@10 of the index as built, nDCG@10 re-embedded by the variant). Each index
    is copied and re-embedded once, for every set it serves (SciFact's dev and test queries)."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    by_index: dict[Path, list[str]] = {}
    for set_name, (index_dir, _, _) in sets.items():
        by_index.setdefault(index_dir, []).append(set_name)
    for index_dir, names in by_index.items():
        copy_dir = work / name / index_dir.name
        if copy_dir.exists():
            shutil.rmtree(copy_dir)
        shutil.copytree(index_dir, copy_dir)
        start = time.perf_counter()
        repair_index(copy_dir, reembed=True, model=variant_model, show_progress=False)
        print(f"{name} re-embedded {index_dir.name} in {time.perf_counter() - start:.0f} s", flush=True)
        with Searcher(index_dir, model=model) as base, Searcher(copy_dir, model=variant_model) as mine:
            for set_name in names:
                _, queries, qrels = sets[set_name]
                for mode in MODES:
                    out[(set_name, mode)] = (dev_ndcg(base, queries, qrels, mode),
                                             dev_ndcg(mine, queries, qrels, mode))
                    print(name, set_name, mode, out[(set_name, mode)], flush=True)
        shutil.rmtree(copy_dir)
    return out


def built(index_dir: Path, corpus_dir: Path) -> Path:
    """`index_dir`, built from `corpus_dir` in fp32 when it is not there yet: the reference every
    variant is set against, so one built in another encoding is refused."""
    from indexer import Index, IndexConfig, build_index

    # Built every time, incrementally (seconds when complete): a half-built one is finished.
    build_index(IndexConfig(source=corpus_dir, index_dir=index_dir, encoding=FP32))
    with Index.open(index_dir) as index:
        encoding = index.info.vector_encoding
    if encoding != FP32:
        raise SystemExit(f"{index_dir} was built as {encoding}; bench_encode sets every variant against fp32. "
                         f"Rebuild it: python -m indexer build --source {corpus_dir} --index {index_dir} "
                         "--encoding fp32 --rebuild")
    return index_dir


def quality_sets(args: argparse.Namespace, model) -> dict[str, tuple[Path, dict[str, str], dict]]:
    names = tuple(dict.fromkeys([*args.sets, *(["scifact-dev"] if args.scifact_test else [])]))
    devs: dict[str, DevSet] = open_dev_sets(args.dev_dir, args.data, names)
    sets = {name: (built(dev_index(devs[name], args.dev_dir, args.scifact_index), devs[name].corpus_dir),
                   devs[name].queries, devs[name].qrels) for name in args.sets}
    if args.scifact_test:
        from data.beir import load_beir_qrels, load_beir_queries

        scifact_dir = devs["scifact-dev"].corpus_dir
        qrels = load_beir_qrels(scifact_dir, "test")
        sets[TEST_SET] = (built(args.scifact_index, scifact_dir), load_beir_queries(scifact_dir), qrels)
    return sets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--sample", type=int, default=480, help="passages timed per variant and round")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--quality-above", type=float, default=1.1,
                        help="measure the quality of variants at least this many times as fast as the peer")
    parser.add_argument("--no-quality", action="store_true")
    parser.add_argument("--scifact-test", action="store_true", help="SciFact's test queries too")
    parser.add_argument("--sets", nargs="+", default=list(ALL_DEV_SETS), choices=ALL_DEV_SETS)
    add_dev_arguments(parser)
    parser.add_argument("--work", type=Path, default=PROJECT_ROOT / ".cache" / "encode")
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    from indexer.embedding import load_bi_encoder
    from indexer.model_spec import ModelSpec

    model = load_bi_encoder(ModelSpec.resolve("default"))
    names = [PEER, *[n for n in args.variants if n != PEER]]
    # Only the precisions of the variants asked for: where bf16 or int8 is emulated (a CPU with AVX2
    # alone), its peak took minutes to measure at 0-1 GFLOP/s.
    peaks = {p: matmul_peak(p) for p in ("fp32", "bf16", "int8") if p in {VARIANTS[n].precision for n in names}}
    print("peaks GFLOP/s:", {p: round(v) for p, v in peaks.items()}, flush=True)
    sets = quality_sets(args, model)
    texts = sample_passages([index_dir for index_dir, _, _ in sets.values()][:3], model, args.sample // 3 + 1)
    texts = texts[:args.sample]
    tokens = np.array([min(len(ids), model.max_seq_length)
                       for ids in model.tokenizer(texts, add_special_tokens=True)["input_ids"]])
    flops = passage_flops(model, tokens)
    encoders = {name: make_encoder(model, name, args.work) for name in names}
    seconds = speed(encoders, texts, args.rounds)
    rate = {name: len(texts) / statistics.median(s) for name, s in seconds.items()}
    ndcg: dict[str, dict[tuple[str, str], tuple[float, float]]] = {}
    if not args.no_quality:
        for name in names:
            if name != PEER and rate[name] >= args.quality_above * rate[PEER]:
                ndcg[name] = quality(name, as_bi_encoder(model, encoders[name]), model, sets, args.work)
    rows, cells = [], [(s, m) for s in sets for m in MODES]
    for name in names:
        gflops = flops / statistics.median(seconds[name]) / 1e9
        peak = peaks[VARIANTS[name].precision]
        changes = ([f"{ndcg[name][c][1] - ndcg[name][c][0]:+.4f}" for c in cells] if name in ndcg
                   else ["(the reference)" if name == PEER else "not measured (--no-quality)" if args.no_quality
                         else f"not measured (under {args.quality_above:g}x)"] * len(cells))
        rows.append([f"`{name}`: {VARIANTS[name].description}", f"{rate[name]:.1f}", f"{rate[name] / rate[PEER]:.2f}x",
                     f"{gflops:.0f}", f"{gflops / peak:.1%} of {VARIANTS[name].precision} {peak:.0f}", *changes])
    header = ["variant", "passages/s", "vs encode()", "GFLOP/s", "share of peak",
              *[f"nDCG@10 change: {s} {m}" for s, m in cells]]
    table = markdown_table(header, rows)
    base = ", ".join(f"{s} {m} {next(iter(ndcg.values()))[(s, m)][0]:.4f}" for s, m in cells) if ndcg else ""
    chosen = choose(rate, ndcg, [c for c in cells if c[0] != TEST_SET])  # dev sets only, never test
    notes = (f"CPU matrix units: {matrix_units()}; {torch.get_num_threads()} threads. Measured peaks: "
             + ", ".join(f"{p} {v:.0f} GFLOP/s" for p, v in peaks.items())
             + f". Sample: {len(texts)} passages from the dev-set indexes, median {int(np.median(tokens))} tokens "
             f"(work {flops / len(texts) / 1e9:.2f} GFLOP a passage), {args.rounds} rounds, median shown."
             + (f" nDCG@10 of the indexes as built (fp32): {base}." if base else "")
             + f"\n\nBy the issue's rule (the fastest variant losing at most {LOSS_ALLOWED} nDCG@10 on every dev set "
             f"in both modes): **{chosen}**.")
    print(table, notes, sep="\n\n")
    if not args.no_record:
        record(f"bench_encode-{cpu_vendor()}", f"Encoding variants on the CPU: {cpu_model()}", f"{table}\n\n{notes}",
               command=" ".join(["python bench/bench_encode.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


def choose(rate: dict[str, float], ndcg: dict[str, dict[tuple[str, str], tuple[float, float]]],
           cells: list[tuple[str, str]]) -> str:
    """The fastest variant whose quality was measured and lost at most LOSS_ALLOWED everywhere,
    else the peer."""
    fine = [name for name, found in ndcg.items()
            if all(found[c][1] - found[c][0] >= -LOSS_ALLOWED for c in cells)]
    best = max(fine, key=lambda name: rate[name], default=PEER)
    return f"`{best}` ({rate[best] / rate[PEER]:.2f}x encode())"


if __name__ == "__main__":
    sys.exit(main())
