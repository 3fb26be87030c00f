"""CLI: `python -m indexer build --source PATH --index DIR [--model PATH] [--db URL] [--rebuild] [--strict] [--ray local|ADDRESS]`
and `python -m indexer repair --index DIR [--reembed]` (rebuilds damaged vectors or BM25 from the SQL rows)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from indexer.build import build_index, repair_index
from indexer.config import IndexConfig
from indexer.documents import DEFAULT_MAX_DOCUMENT_CHARS
from indexer.errors import IndexerError


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
    build.add_argument("--passage-tokens", type=int, default=None, help="tokens per passage (default: what the model reads)")
    build.add_argument("--overlap", type=int, default=32, help="tokens shared by consecutive passages")
    build.add_argument("--no-titles", action="store_true", help="embed passages without their document title")
    build.add_argument("--csv-id", default="id", help="CSV column holding the document id")
    build.add_argument("--csv-title", default="title", help="CSV column holding the title")
    build.add_argument("--csv-text", default="text", help="CSV column holding the text")
    build.add_argument("--max-document-chars", type=int, default=DEFAULT_MAX_DOCUMENT_CHARS,
                       help="skip (with a warning) documents longer than this many characters")
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.add_argument("--ray", metavar="local|ADDRESS", default=None,
                       help="embed on Ray: 'local' starts one on this machine, else a cluster address "
                            "(auto, HOST:6379, ray://HOST:10001); everything else runs here as usual")
    repair = sub.add_parser("repair", help="rebuild damaged vectors or BM25 from the stored rows")
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
        passage_tokens=args.passage_tokens,
        overlap_tokens=args.overlap,
        embed_titles=not args.no_titles,
        csv_id_column=args.csv_id,
        csv_title_column=args.csv_title,
        csv_text_column=args.csv_text,
        show_progress=not args.quiet,
        max_document_chars=args.max_document_chars,
        ray=args.ray,
    )


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        if args.command == "repair":
            report = repair_index(args.index, args.db, reembed=args.reembed, show_progress=not args.quiet)
        else:
            report = build_index(config_from_args(args))
    except (IndexerError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
