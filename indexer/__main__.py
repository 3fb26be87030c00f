"""CLI: `python -m indexer build --source PATH --index DIR [--model PATH] [--db URL] [--rebuild] [--strict]
[--ray local|ADDRESS] [--vector-index auto|flat|ivf|hnsw|ivfpq ...] [--embeddings FILE]`
`python -m indexer shard --index DIR --shards N` (splits an index for `search.api --shards N`, no source needed)
and `python -m indexer repair --index DIR [--reembed]` (rebuilds damaged vectors or BM25 from the SQL rows,
restores altered passage text, rewrites a lost index.json; exit status 1 when some text is lost)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from indexer.build.config import IndexConfig
from indexer.build.pipeline import build_index
from indexer.build.repair import repair_index
from indexer.build.reshard import reshard_index
from indexer.encoding import ENCODINGS
from indexer.errors import IndexerError
from indexer.index import Index
from indexer.settings import quiet_library_logs
from indexer.sources.documents import DEFAULT_MAX_DOCUMENT_CHARS
from indexer.store.ann import KINDS, STORAGES, VectorIndexConfig
from indexer.store.metadata_filter import RESERVED_FIELDS


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m indexer", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="index a folder, .jsonl, .csv or BEIR corpus")
    build.add_argument("--source", type=Path, required=True, help="folder, .jsonl, .csv or BEIR folder")
    build.add_argument("--index", type=Path, required=True, help="index folder (created if missing)")
    build.add_argument("--model", default=None, help="SentenceTransformer folder (default: all-MiniLM-L6-v2)")
    build.add_argument("--db", default=None, help="SQLAlchemy URL (default: SQLite inside --index)")
    build.add_argument("--rebuild", action="store_true", help="drop what is stored and embed everything again")
    build.add_argument("--keep-missing", action="store_true", help="do not remove documents the source no longer has")
    build.add_argument("--strict", action="store_true", help="fail on the first bad file or record")
    build.add_argument("--batch-size", type=int, default=64)
    build.add_argument("--encoding", choices=list(ENCODINGS), default=None,
                       help="how the model computes the vectors (default: the index's; for a new index "
                            "openvino-bf16 on CPUs with AMX or AVX-512 bf16, openvino-fp32 on other CPUs with "
                            "AVX2, else fp32; see docs)")
    build.add_argument("--passage-tokens", type=int, default=None, help="tokens per passage (default: the index's, or what the model reads for a new index)")
    build.add_argument("--overlap", type=int, default=None,
                       help="tokens shared by consecutive passages (default: the index's, or 32 for a new index)")
    build.add_argument("--keep-short-tails", action="store_true",
                       help="cut a document's last few tokens into a short passage of their own (by default, "
                            "under a quarter of a passage, they are read with the text before them)")
    build.add_argument("--no-titles", action="store_true",
                       help="embed passages without their document title (a new index, or with --rebuild)")
    build.add_argument("--csv-id", default="id", help="CSV (or spreadsheet) column holding the document id")
    build.add_argument("--csv-title", default="title", help="CSV (or spreadsheet) column holding the title")
    build.add_argument("--csv-text", default=IndexConfig.csv_text_column,
                       help="CSV (or spreadsheet) column holding the text (default: text; a CSV or sheet "
                            "without a 'text' column is read a record a row, its prose columns as the "
                            "text: a ticket export)")
    build.add_argument("--max-document-chars", type=int, default=DEFAULT_MAX_DOCUMENT_CHARS,
                       help="skip (with a warning) documents longer than this many characters")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument("--ray", metavar="local|ADDRESS", default=None,
                       help="embed on Ray: 'local' starts one on this machine, else a cluster address "
                            "(auto, HOST:6379, ray://HOST:10001); everything else runs here as usual")
    ann = build.add_argument_group("vector index (default: the index's own type, auto for a new one)")
    ann.add_argument("--vector-index", choices=KINDS, default=None,
                     help="auto: exact below a measured size, IVF above it")
    ann.add_argument("--vector-storage", choices=STORAGES, default=None,
                     help="float32, float16 or sq8 (8-bit); auto: sq8 for an auto-chosen IVF")
    ann.add_argument("--nlist", type=int, default=None, help="IVF cells (default: about 4*sqrt(n))")
    ann.add_argument("--hnsw-m", type=int, default=None, help="HNSW links per node (default 32)")
    ann.add_argument("--pq-m", type=int, default=None, help="IVF-PQ bytes per vector (default dim/8)")
    ann.add_argument("--target-recall", type=float, default=None,
                     help="recall@10 against exact search that nprobe/efSearch must reach (default 0.95)")
    build.add_argument("--shards", type=int, default=None,
                       help="split the vectors and BM25 into N shards by passage id, for "
                            "`python -m search.api --ray ADDRESS --shards N` (default: the index's own, else none)")
    build.add_argument("--embeddings", type=Path, default=None,
                       help="vectors computed elsewhere (.parquet, .npy/.npz, .jsonl; one per document): "
                            "nothing is embedded; --model declares the model that made them")
    build.add_argument("--normalize-embeddings", action="store_true",
                       help="scale --embeddings vectors to unit length instead of refusing them")
    shard = sub.add_parser("shard", help="split an index into N shards by passage id for a sharded service "
                           "(0: drop them); nothing is re-embedded, no source needed")
    shard.add_argument("--index", type=Path, required=True, help="index folder")
    shard.add_argument("--shards", type=int, required=True, help="how many shards (0: none)")
    shard.add_argument("--db", default=None, help="SQLAlchemy URL, when the rows live elsewhere")
    stats = sub.add_parser("stats", help="what an index holds: counts, model, vector index and its recall")
    stats.add_argument("--index", type=Path, required=True, help="index folder")
    stats.add_argument("--db", default=None, help="SQLAlchemy URL, when the rows live elsewhere")
    stats.add_argument("--json", action="store_true", help="one JSON object")
    repair = sub.add_parser("repair", help="rebuild damaged vectors or BM25 from the stored rows, restore "
                            "altered text, rewrite a lost index.json")
    repair.add_argument("--index", type=Path, required=True, help="index folder")
    repair.add_argument("--db", default=None, help="SQLAlchemy URL, when the rows live elsewhere")
    repair.add_argument("--reembed", action="store_true",
                        help="re-embed every stored passage (after the model's files changed)")
    repair.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> IndexConfig:
    return IndexConfig(
        source=args.source,
        index_dir=args.index,
        model=args.model,
        db_url=args.db,
        rebuild=args.rebuild,
        strict=args.strict,
        prune=not args.keep_missing,
        batch_size=args.batch_size,
        encoding=args.encoding,
        passage_tokens=args.passage_tokens,
        overlap_tokens=args.overlap,
        embed_titles=False if args.no_titles else None,
        merge_short_tails=not args.keep_short_tails,
        csv_id_column=args.csv_id,
        csv_title_column=args.csv_title,
        csv_text_column=args.csv_text,
        show_progress=not args.quiet,
        max_document_chars=args.max_document_chars,
        ray=args.ray,
        vector_index=vector_index_from_args(args),
        shards=args.shards,
        embeddings=args.embeddings,
        normalize_embeddings=args.normalize_embeddings,
    )


def vector_index_from_args(args: argparse.Namespace) -> VectorIndexConfig | None:
    """The index type the flags ask for; None when no flag names one (the index keeps its own)."""
    given = {name: getattr(args, name) for name in
             ("vector_index", "vector_storage", "nlist", "hnsw_m", "pq_m", "target_recall")}
    if all(value is None for value in given.values()):
        return None
    fields = dict(kind=given.pop("vector_index") or "auto", storage=given.pop("vector_storage") or "auto")
    fields.update({name: value for name, value in given.items() if value is not None})
    return VectorIndexConfig(**fields)


# Metadata fields `stats` names, the most common first.
STATS_FIELDS = 10


def fields_text(fields: list[tuple[str, int]]) -> str:
    """The fields a search's --filter can name, with how many documents have each."""
    shown = ", ".join(f"{name} ({count:,})" for name, count in fields[:STATS_FIELDS])
    more = f", and {len(fields) - STATS_FIELDS:,} more (--json lists them)" if len(fields) > STATS_FIELDS else ""
    return f"{shown or 'none'}{more}; and _id, _path, _type on every document (search --filter)"


def stats_text(index_dir: Path, db_url: str | None, as_json: bool) -> str:
    """The committed build's figures, one per line (or as JSON); reads no model."""
    with Index.open(index_dir, db_url, use_gpu=False) as index:
        stats = index.stats()
        fields = [(name, count) for name, count in index.metadata_fields() if name not in RESERVED_FIELDS]
        building = index.build_progress()
    if as_json:
        return json.dumps({**dataclasses.asdict(stats), "fields": dict(fields),
                           "building": None if building is None else {"done": building[0], "total": building[1]}},
                          default=str)
    rows = [
        ("documents", f"{stats.documents:,}"), ("passages", f"{stats.passages:,}"),
        ("model", f"{stats.model_label} ({stats.dimension} dimensions)"),
        ("encoding", f"{stats.encoding}: {ENCODINGS[stats.encoding]}"),
        ("vector index", stats.vector_index), ("recall@10 vs exact", f"{stats.recall_at_10:.3f}"),
        ("delta segments", f"{stats.delta_segments} ({stats.deleted_pending} deleted passages pending)"),
        ("shards", f"{stats.shards} (python -m search.api --ray ADDRESS --shards {stats.shards})" if stats.shards
         else "none"),
        ("build", f"{stats.build_id}, {stats.built_at:%Y-%m-%d %H:%M} UTC, {stats.build_seconds:.1f} s"),
        ("metadata fields", fields_text(fields)),
    ]
    if building is not None:  # as the app and the API's /stats say it
        rows.append(("building", f"{building[0]:,} of {building[1]:,} passages of the build running now are "
                                 "committed; the figures above count them"))
    return "\n".join(f"{name:>20}: {value}" for name, value in rows)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_library_logs()
    args = parse_args(argv)
    try:
        if args.command == "stats":
            print(stats_text(args.index, args.db, args.json))
            return 0
        if args.command == "shard":
            result = reshard_index(args.index, args.shards, args.db)
            print(f"{args.index}: {'split into ' + str(args.shards) + ' shards' if args.shards else 'unsharded'} "
                  f"(build {result.build_id}, {result.passages:,} passages)")
            return 0
        if args.command == "repair":
            report = repair_index(args.index, args.db, reembed=args.reembed, show_progress=not args.quiet)
        else:
            report = build_index(config_from_args(args))
    except (IndexerError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    return 1 if getattr(report, "texts_lost", None) else 0  # a repair that could not restore everything


if __name__ == "__main__":
    sys.exit(main())
