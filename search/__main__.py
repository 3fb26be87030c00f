"""CLI: `python -m search "query" --index DIR [-k 5] [--offset N] [--mode dense|bm25|hybrid]
[--filter JSON] [--fusion rrf|minmax|tmm|zscore] [--fusion-weight W] [--rerank | --no-rerank]
[--rerank-model PATH] [--candidates N] [--verbose]`.

The bi-encoder loads only when the search needs it (`model_loading="lazy"`), so a BM25 search
never imports torch; `--verbose` prints the time of each stage, the model's load included. Each
score is printed under its name: cosine (dense), BM25, fused (hybrid) or rerank.

`--filter '{"tag": "billing", "year": {"$gte": 2025}}'` keeps only documents whose metadata
matches, before ranking (the shape: `indexer.store.metadata_filter`, docs/search.md).

Reranking uses --rerank-model, else the reranker shipped in models/reranker; without
--rerank or --no-rerank it is on when a model is named or the shipped one is on by default
(`search.rerank.resolve_reranker`, the rule the app and the eval follow too).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path

from indexer.errors import IndexerError
from search.errors import SearchError
from search.fusion import FUSIONS
from search.hits import Hit, SearchResult
from search.params import MODES, SCORE_NAMES, SCREEN_K, SearchParams
from search.rerank import resolve_reranker
from search.searcher import Searcher


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search", description=__doc__)
    parser.add_argument("query")
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("-k", type=int, default=SCREEN_K, help=f"documents to show (default {SCREEN_K})")
    parser.add_argument("--offset", type=int, default=0,
                        help="documents of the ranking to skip first: the next page is --offset K")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="retriever: embeddings, exact terms, or both fused (default: hybrid)")
    parser.add_argument("--filter", default=None, metavar="JSON",
                        help='metadata filter applied before ranking, e.g. \'{"tag": "billing", "year": {"$gte": 2025}}\'; '
                        "fields are metadata keys plus _id, _path and _type")
    parser.add_argument("--fusion", choices=FUSIONS, default=None,
                        help="how hybrid fuses dense and BM25: reciprocal rank, or a convex combination of "
                        "min-max, theoretical min-max or z-score normalised scores (default: SearchConfig's)")
    parser.add_argument("--fusion-weight", type=float, default=None, metavar="W",
                        help="the dense list's share in hybrid, 0 (BM25 alone) to 1 (dense alone)")
    parser.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None,
                        help="rescore the top --candidates documents with the cross-encoder")
    parser.add_argument("--rerank-model", default=None, metavar="PATH",
                        help="CrossEncoder folder to rerank with (default: the shipped models/reranker; "
                        "'none' for no reranker)")
    parser.add_argument("--candidates", type=int, default=None,
                        help="documents passed to the reranker (default 50)")
    parser.add_argument("--db", default=None, help="SQLAlchemy URL, when the index keeps rows elsewhere")
    parser.add_argument("--min-relevance", type=float, default=None, metavar="P",
                        help="keep only hits whose calibrated relevance reaches P (0..1); BM25 hits "
                        "carry none, and are not cut")
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    parser.add_argument("--verbose", action="store_true",
                        help="print the time of each stage: opening the index, loading the models, encoding "
                        "the query, retrieval, reranking")
    args = parser.parse_args(argv)
    stages: list[tuple[str, float]] = []
    try:
        started = time.perf_counter()
        choice = resolve_reranker(args.rerank, args.rerank_model)
        reranker = choice.load() if choice.enabled else None
        if reranker is not None:
            stages.append(("load the reranker", time.perf_counter() - started))
        opened = time.perf_counter()
        searcher = Searcher(args.index, db_url=args.db, reranker=reranker, rerank_by_default=choice.enabled,
                            model_loading="lazy")
        stages.append(("open the index", time.perf_counter() - opened))
        params = SearchParams(k=args.k, offset=args.offset, mode=args.mode, candidates=args.candidates, fusion=args.fusion,
                              fusion_weight=args.fusion_weight, filter=args.filter, min_relevance=args.min_relevance)
        if args.verbose and params.mode != "bm25":  # timed apart from the search it would slow
            loading = time.perf_counter()
            searcher.wait_for_model()
            stages.append(("load the bi-encoder", time.perf_counter() - loading))
        result = searcher.search_detailed(args.query, params)
    except (IndexerError, SearchError, ValueError, TypeError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print_result(result, args.offset, args.json)
    if args.verbose:
        timings = result.timings
        stages += [("encode the query", timings.encode_s), ("retrieve", timings.retrieve_s),
                   ("rerank", timings.rerank_s)]
        print("; ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in stages), file=sys.stderr)
    return 0


def print_result(result: SearchResult, offset: int, as_json: bool) -> None:
    """The hits, ranked from `offset + 1`: one JSON object each, or a line and a snippet each with
    the mode, time and any relevance note after them on stderr; a filter's note on stderr in both."""
    for rank, hit in enumerate(result.hits, start=offset + 1):
        if as_json:
            print(json.dumps({"rank": rank, "doc_id": hit.doc_id, "title": hit.title,
                              "score": hit.score, "retriever_score": hit.retriever_score,
                              "rerank_score": hit.rerank_score, "relevance": hit.relevance,
                              "mode": result.mode,
                              "text": hit.text, "metadata": dict(hit.metadata),
                              "source": hit.source, "location": hit.location.to_dict(),
                              "merged": list(hit.merged)}))
            continue
        where = f"  ({hit.location.label})" if hit.location else ""
        print(f"{rank:>2}. {score_line(hit, result.mode)}  {hit.title or hit.doc_id}{where}  [{hit.doc_id}]")
        print(textwrap.indent(textwrap.shorten(hit.text, 300), "      "))
        if hit.merged:
            print(f"      (the same passage in {', '.join(hit.merged)}: merged into this hit)")
    if not as_json:
        if not result.hits and not result.filter_note:
            print(no_hits_line(result, offset))
        reranked = f", reranked the top {result.reranked}" if result.reranked else ""
        print(f"({result.mode}{reranked}; {result.timings.total_s * 1000:.0f} ms)", file=sys.stderr)
        if result.relevance_note:
            print(f"note: {result.relevance_note}", file=sys.stderr)
    if result.filter_note:  # in both forms: an empty answer must not read as "nothing relevant"
        print(f"note: {result.filter_note}", file=sys.stderr)


def no_hits_line(result: SearchResult, offset: int) -> str:
    """Why a search without a filter found nothing, in the place its hits would be."""
    documents = result.stats.documents if result.stats is not None else 0
    if documents == 0:
        return "No hits: the index holds no documents yet; add some with python -m indexer build."
    if offset:
        return f"No hits: the ranking ends before rank {offset + 1} (a smaller --offset shows its end)."
    if result.mode == "bm25":
        return ("No hits: no document contains any of the query's words (BM25 matches words exactly, leaving out "
                "words such as 'the', 'of' or 'how'). Try --mode hybrid or dense, or other words.")
    return "No hits: none reaches the relevance --min-relevance asks for; a lower one shows the best hits."


def score_line(hit: Hit, mode: str) -> str:
    """The hit's relevance, then its raw scores, each named: "relevance 72% (cosine 0.612)",
    "relevance 31% (rerank 4.210, fused 1.019)", or the raw scores alone without a relevance."""
    raw = f"{SCORE_NAMES[mode]} {hit.retriever_score if hit.retriever_score is not None else hit.score:.3f}"
    if hit.rerank_score is not None:
        raw = f"rerank {hit.rerank_score:.3f}, {raw}"
    return raw if hit.relevance is None else f"relevance {hit.relevance:.0%} ({raw})"


if __name__ == "__main__":
    sys.exit(main())
