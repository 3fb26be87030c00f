"""Reading an export of records as it grows a hundredfold, as JSON (`indexer.sources.json_records`)
and as CSV without a text column (`indexer.sources.csv_records`): documents per second and peak
memory, against the same records written as JSON Lines with a `text` field (the peer, read line
by line), in the same run.

The export has the shape of GitHub's REST API for issues (a list of objects: number, title, body,
a user, labels with descriptions, a state, a date, three comments); the CSV has the shape of Jira's
(Summary, Issue key, Status, Labels, Description, a Comment column per comment); their bodies and
comments of
real length (drawn from the Wikinews dev set's articles when `SEMSEARCH_DATA` holds them, else
repeated sentences). Each size is read in a fresh process (`read_documents`, every document
taken), so the peak resident memory of one read is its own. Reading is what this measures; the
embedding that follows is `bench_indexing`'s.

    python bench/bench_json_records.py [--sizes 1000 10000 100000] [--no-record]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402

FILLER = ("The export stops at ninety-nine percent and the file it writes is empty, although the "
          "same report downloads fine from the dashboard. ")


def paragraphs(count: int) -> tuple[list[str], str]:
    """`count` paragraphs of real text, and where they came from: Wikinews articles (the dev set
    built from SEMSEARCH_DATA), else a sentence repeated."""
    try:
        from bench.bench_relevance import open_dev_sets  # noqa: PLC0415 -- only where the data is
        from data.paths import shared_data_dir  # noqa: PLC0415

        news = open_dev_sets(PROJECT_ROOT / ".cache" / "dev", shared_data_dir(), ("wikinews-headline",))
        with (news["wikinews-headline"].corpus_dir / "corpus.jsonl").open(encoding="utf-8") as lines:
            texts = [json.loads(line)["text"][:1500] for _, line in zip(range(2000), lines, strict=False)]
    except (OSError, KeyError, ValueError):  # no data here: the bench still runs, on the filler
        texts = []
    source = f"the first {len(texts):,} articles of the Wikinews dev set, cut at 1,500 characters"
    if not texts:
        texts, source = [FILLER * 6], "one sentence repeated (no dev data here)"
    return [texts[i % len(texts)] for i in range(count)], source


def issue(number: int, body: str, comment: str) -> dict:
    return {"url": f"https://api.github.com/repos/acme/tracker/issues/{number}", "id": 2_000_000_000 + number,
            "number": number, "title": f"Issue {number}: {' '.join(body[:60].split())}", "user": {"login": f"user{number % 97}"},
            "labels": [{"name": "bug", "description": "Something isn't working"}], "state": "open",
            "created_at": "2025-03-01T10:00:00Z", "body": body,
            "comments": [{"user": {"login": "support"}, "body": comment[:400]} for _ in range(3)]}


def write_sources(folder: Path, size: int) -> tuple[Path, Path, Path, str]:
    texts, source = paragraphs(size)
    records = [issue(n, texts[n], texts[(n + 7) % size]) for n in range(size)]
    export = folder / "issues.json"
    export.write_text(json.dumps(records, indent=2), encoding="utf-8")
    lines = folder / "issues.jsonl"
    with lines.open("w", encoding="utf-8") as out:
        for rec in records:
            text = "\n\n".join(part.strip() for part in [rec["body"], *(c["body"] for c in rec["comments"])])
            out.write(json.dumps({"id": str(rec["number"]), "title": rec["title"], "text": text,
                                  "state": rec["state"], "labels": ["bug"]}) + "\n")
    table = folder / "issues.csv"
    with table.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Summary", "Issue key", "Status", "Labels", "Description", "Comment", "Comment", "Comment"])
        for rec in records:
            writer.writerow([rec["title"], f"ACME-{rec['number']}", rec["state"], "bug", rec["body"],
                             *(c["body"] for c in rec["comments"])])
    return export, lines, table, source


def read_once(path: str) -> None:
    """Child process: read every document of `path`, print documents, seconds and peak RSS."""
    from indexer.sources.readers import read_documents  # noqa: PLC0415

    start = time.perf_counter()
    count = sum(1 for _ in read_documents(Path(path), on_issue=lambda issue: None))
    seconds = time.perf_counter() - start
    print(json.dumps({"documents": count, "seconds": seconds, "rss_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started its program: /proc's VmHWM (getrusage's
    ru_maxrss keeps the parent's peak across fork and exec, which would be the bench's own)."""
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.bench_json_records", "--read", str(path)],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--read", help=argparse.SUPPRESS)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.read:
        read_once(args.read)
        return
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-json-") as tmp:
        for size in args.sizes:
            folder = Path(tmp) / str(size)
            folder.mkdir()
            export, lines, table_file, source = write_sources(folder, size)
            peer, ours, rows_read = measure(lines), measure(export), measure(table_file)
            assert ours["documents"] == peer["documents"] == rows_read["documents"] == size, (ours, peer, size)
            speed = {name: run["documents"] / run["seconds"] for name, run in
                     (("peer", peer), ("json", ours), ("csv", rows_read))}
            rows.append([f"{size:,}", f"{export.stat().st_size / 2**20:,.1f}",
                         f"{speed['peer']:,.0f}", f"{peer['rss_mb']:,.0f}",
                         f"{speed['json']:,.0f}", f"{ours['rss_mb']:,.0f}", f"{speed['json'] / speed['peer']:.2f}x",
                         f"{table_file.stat().st_size / 2**20:,.1f}", f"{speed['csv']:,.0f}",
                         f"{rows_read['rss_mb']:,.0f}", f"{speed['csv'] / speed['peer']:.2f}x"])
            print(rows[-1], flush=True)
    table = markdown_table(["records", "export MB", "JSONL (peer) docs/s", "JSONL peak RSS MB",
                            "JSON export docs/s", "JSON export peak RSS MB", "export / JSONL speed",
                            "CSV export MB", "CSV export docs/s", "CSV export peak RSS MB", "CSV / JSONL speed"], rows)
    notes = ("`read_documents` over one file, every document taken, each read in a fresh process (peak RSS "
             "of that process, the interpreter and the project's imports included). The export is GitHub's "
             "issue shape (`json.dumps(indent=2)`: 9 fields, a label, three comments); the CSV export holds the "
             "same records in Jira's shape (no `text` column: read a record a row), written by `csv.writer`; "
             f"their bodies {source}; the peer holds the same text as JSON Lines with a `text` field.")
    print(table)
    if not args.no_record:
        record("bench_json_records", "Reading JSON and CSV exports of records", f"{table}\n\n{notes}",
               command=" ".join(["python bench/bench_json_records.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
