"""CLI: `python -m search "query" --index DIR -k 5`."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from search.errors import SearchError
from search.searcher import Searcher


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m search", description=__doc__)
    parser.add_argument("query")
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--db", default=None, help="SQLAlchemy URL, when the index keeps rows elsewhere")
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    args = parser.parse_args(argv)
    try:
        hits = Searcher(args.index, db_url=args.db).search(args.query, k=args.k)
    except (SearchError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for rank, hit in enumerate(hits, start=1):
        if args.json:
            print(json.dumps({"rank": rank, "doc_id": hit.doc_id, "title": hit.title,
                              "score": hit.score, "text": hit.text, "metadata": hit.metadata}))
            continue
        print(f"{rank:>2}. {hit.score:.3f}  {hit.title or hit.doc_id}  [{hit.doc_id}]")
        print(textwrap.indent(textwrap.shorten(hit.text, 300), "      "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
