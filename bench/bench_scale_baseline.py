"""What one commit of 1,000 new passages costs when every commit rewrites the whole index.

At revision 749830e, `WriteTransaction.commit` and `_write` do, for any change however
small: read and sha256 the committed FAISS file, load it and checksum its ids, read every
document key (the plan's view), insert the new rows, add the vectors, read every passage
id back, read every passage's title and text back from SQL and rebuild BM25 over all of
them, save BM25 and the whole FAISS file, and sha256 both. This script times each of those
steps with that revision's own classes and functions (extracted from git into
`.cache/scale/rev-<rev>/`, so the figures stay those of that revision while the working
tree moves on), on an index of N passages from `bench.scale_data` (one document per
passage, as `python -m indexer build` makes from its corpus JSONL), for N = 100k (the peer)
and 1M. Each size is measured in a fresh process, so its peak RSS is its own.

The vectors are the scale embeddings when `bench.scale_data` has written them, else seeded
random unit vectors: an exact (flat) index's cost does not depend on their values. The SQL
rows are inserted with SQLAlchemy core bulk inserts into the revision's schema; the SQL
transaction is rolled back afterwards so the fixture can be reused (its COMMIT of 1,000
rows is not timed).

Usage: python bench/bench_scale_baseline.py [--sizes 100000 1000000] [--added 1000]
       [--rev 749830e] [--no-record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from bench import scale_data  # noqa: E402
from data.paths import PROJECT_ROOT, shared_data_dir  # noqa: E402

DEFAULT_REV = "749830e"
DIM = 384
INSERT_CHUNK = 20_000
ORIGIN = "scale"


def revision_package(rev: str, cache_dir: Path = scale_data.DEFAULT_CACHE) -> Path:
    """A folder holding revision `rev`'s `indexer/` package (from `git archive`), to put first
    on sys.path before anything imports `indexer`."""
    root = cache_dir / f"rev-{rev}"
    if (root / "indexer" / "__init__.py").is_file():
        return root
    tmp = root.with_name(f".{root.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(PROJECT_ROOT), "archive", rev, "indexer"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise ValueError(f"git cannot archive indexer/ at revision {rev!r} "
                         f"({archive.stderr.decode().strip()}); pass a commit of this repository as --rev.")
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
    tmp.replace(root)
    return root


def use_revision(rev: str, cache_dir: Path = scale_data.DEFAULT_CACHE) -> None:
    """Import `indexer` from revision `rev`; refuses if another `indexer` is already imported."""
    root = revision_package(rev, cache_dir)
    loaded = sys.modules.get("indexer")
    if loaded is not None and not Path(loaded.__file__).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"indexer was imported from {loaded.__file__} before revision {rev} could be; "
                           "call use_revision first.")
    sys.path.insert(0, str(root))
    import indexer

    if not Path(indexer.__file__).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"indexer resolved to {indexer.__file__}, not revision {rev} under {root}.")


# ---------------------------------------------------------------- fixture

@dataclass(frozen=True)
class Fixture:
    """An index's committed state at N passages: an SQLite file with its rows and the FAISS file."""

    folder: Path
    passages: int
    vectors_from: str

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.folder / 'index.sqlite'}"

    @property
    def vector_file(self) -> Path:
        return self.folder / "vectors-base.faiss"

    @property
    def added_file(self) -> Path:
        return self.folder / "added.jsonl"


def _corpus_rows(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


def _unit_vectors(count: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((count, DIM), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def prepare_fixture(n: int, added: int, rev: str, cache_dir: Path, data_dir: Path) -> Fixture:
    """Build (once) the committed index of `n` passages and the `added` passages to commit."""
    from sqlalchemy import insert

    from indexer.sources.documents import Document
    from indexer.store import sql_store
    from indexer.store.faiss_store import VectorStore
    from indexer.store.schema import DocumentRow, PassageRow

    folder = cache_dir / "baseline" / rev / str(n)
    embeddings = cache_dir / f"embeddings-{n}.npy"
    marker = folder / "ready.json"
    if marker.is_file():
        return Fixture(folder, n, json.loads(marker.read_text())["vectors_from"])
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    real = None
    corpus = cache_dir / f"corpus-{n}.jsonl"
    if not corpus.is_file():
        real = scale_data.real_passages(data_dir)
        scale_data.write_corpus(n, real, cache_dir)
    fixture = Fixture(folder, n, "scale embeddings" if embeddings.is_file() else "random unit vectors")

    engine = sql_store.make_engine(fixture.db_url, for_build=True)
    now = dt.datetime.now(dt.UTC)
    with engine.begin() as conn:
        sql_store.create_schema(conn)
        docs, passages = [], []
        row_id = 0
        for row in _corpus_rows(corpus):
            row_id += 1
            doc = Document(doc_id=row["id"], title=row["title"], text=row["text"], source=corpus.name)
            docs.append(dict(id=row_id, doc_key=doc.doc_id, title=doc.title, origin=ORIGIN, source=doc.source,
                             text=doc.text, content_hash=doc.content_hash(), meta={}, indexed_at=now))
            passages.append(dict(id=row_id, document_id=row_id, ordinal=0, start_char=0,
                                 end_char=len(doc.text), text=doc.text))
            if len(docs) == INSERT_CHUNK:
                conn.execute(insert(DocumentRow.__table__), docs)
                conn.execute(insert(PassageRow.__table__), passages)
                docs, passages = [], []
        if docs:
            conn.execute(insert(DocumentRow.__table__), docs)
            conn.execute(insert(PassageRow.__table__), passages)
    engine.dispose()
    if row_id != n:
        raise ValueError(f"{corpus} holds {row_id} rows, not {n}; delete it and run again.")

    store = VectorStore.create(DIM)
    source = np.load(embeddings, mmap_mode="r") if embeddings.is_file() else None
    for begin in range(0, n, 65_536):
        end = min(n, begin + 65_536)
        block = np.asarray(source[begin:end]) if source is not None else _unit_vectors(end - begin, begin)
        store.add(np.arange(begin + 1, end + 1, dtype=np.int64), block)
    store.save(fixture.vector_file)
    del store

    real = real or scale_data.real_passages(data_dir)
    with fixture.added_file.open("w", encoding="utf-8") as f:
        for i in range(n, n + added):
            f.write(json.dumps(scale_data.recombined_passage(i, real).row(), ensure_ascii=False) + "\n")
    marker.write_text(json.dumps({"passages": n, "vectors_from": fixture.vectors_from}) + "\n")
    return fixture


# ---------------------------------------------------------------- measurement

# (key, label) of each timed step, in the order the revision's commit runs them.
STEPS = (
    ("vector_sha256", "sha256 of the committed FAISS file (verify)"),
    ("vector_read", "read the FAISS file (faiss.read_index)"),
    ("vector_id_checksum", "checksum of its ids (verify)"),
    ("sql_stored_documents", "SQL: read every document key (stored_documents)"),
    ("sql_insert", "SQL: insert the new documents and passages (ORM flush)"),
    ("vector_add", "FAISS: add the new vectors"),
    ("sql_all_ids", "SQL: read every passage id"),
    ("vector_ids_compare", "FAISS ids sorted and compared with SQL's"),
    ("sql_read_back", "SQL: read every passage's title and text back (+ passage_text)"),
    ("bm25_build", "BM25: rebuild over every passage"),
    ("bm25_save", "BM25: save the folder"),
    ("vector_save", "FAISS: write the whole file (+ fsync)"),
    ("sql_count_documents", "SQL: count documents"),
    ("vector_sha256_new", "sha256 of the new FAISS file"),
    ("bm25_digest", "sha256 of the new BM25 folder"),
    ("id_checksum", "id checksum of every passage id"),
)


@dataclass(frozen=True)
class Measurement:
    passages: int
    added: int
    seconds: dict[str, float]
    peak_rss_gib: float
    vector_file_gib: float
    bm25_folder_gib: float
    sqlite_gib: float
    vectors_from: str

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


class _Timer:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def __call__(self, key: str, fn, *args, **kwargs):
        began = time.perf_counter()
        result = fn(*args, **kwargs)
        self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - began
        return result


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def measure(fixture: Fixture, added: int) -> Measurement:
    """Run the revision's commit steps for `added` new passages over the fixture, timing each."""
    from sqlalchemy.orm import Session, configure_mappers

    from indexer.sources.documents import Document, PassageSpan
    from indexer.sources.passage_text import passage_text
    from indexer.store import sql_store
    from indexer.store.bm25_store import BM25Store
    from indexer.store.faiss_store import VectorStore
    from indexer.store.integrity import file_digest, folder_digest, id_checksum
    from indexer.store.transaction import WriteTransaction

    rows = list(_corpus_rows(fixture.added_file))[:added]
    docs = [Document(doc_id=r["id"], title=r["title"], text=r["text"], source="added.jsonl") for r in rows]
    spans = [[PassageSpan(0, 0, len(d.text))] for d in docs]
    vectors = _unit_vectors(len(docs), seed=fixture.passages)
    out = fixture.folder / "commit-out"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    configure_mappers()  # once per process, not per commit: kept out of the insert's time
    timer = _Timer()

    timer("vector_sha256", file_digest, fixture.vector_file)
    store = timer("vector_read", VectorStore.load, fixture.vector_file, use_gpu=False)
    timer("vector_id_checksum", lambda: id_checksum(store.ids()))

    engine = sql_store.make_engine(fixture.db_url, for_build=True)
    try:
        with engine.connect() as conn, conn.begin() as outer:
            session = Session(bind=conn, autoflush=False)
            tx = WriteTransaction(None, "", conn, session, None)  # these steps never touch the layout
            timer("sql_stored_documents", tx.stored_documents)
            new_ids = timer("sql_insert", tx._insert, docs, ORIGIN, spans)
            timer("vector_add", store.add, new_ids, vectors)
            sql_ids = timer("sql_all_ids", tx._all_passage_ids)
            same = timer("vector_ids_compare", lambda: np.array_equal(np.sort(store.ids()), sql_ids))
            if not same:
                raise RuntimeError("FAISS and SQL ids differ: the fixture is damaged; delete its folder.")

            def read_back() -> tuple[np.ndarray, list[str]]:
                ids, texts = [], []
                for block_ids, titles, block_texts in tx.stored_passages():
                    ids.append(block_ids)
                    texts.extend(passage_text(t, x) for t, x in zip(titles, block_texts, strict=True))
                return np.concatenate(ids), texts

            ids, texts = timer("sql_read_back", read_back)
            bm25 = timer("bm25_build", BM25Store.build, ids, texts)
            del texts
            timer("bm25_save", bm25.save, out / "bm25-new")
            del bm25
            timer("vector_save", store.save, out / "vectors-new.faiss")
            timer("sql_count_documents", sql_store.count_documents, conn)
            timer("vector_sha256_new", file_digest, out / "vectors-new.faiss")
            timer("bm25_digest", folder_digest, out / "bm25-new")
            timer("id_checksum", id_checksum, sql_ids)
            session.close()
            outer.rollback()
    finally:
        engine.dispose()
    result = Measurement(
        passages=fixture.passages, added=len(docs), seconds=timer.seconds,
        peak_rss_gib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
        vector_file_gib=(out / "vectors-new.faiss").stat().st_size / 2**30,
        bm25_folder_gib=_folder_bytes(out / "bm25-new") / 2**30,
        sqlite_gib=(fixture.folder / "index.sqlite").stat().st_size / 2**30,
        vectors_from=fixture.vectors_from,
    )
    shutil.rmtree(out)
    return result


# ---------------------------------------------------------------- driver

def _worker(args: argparse.Namespace) -> int:
    use_revision(args.rev, args.cache)
    fixture = prepare_fixture(args.worker_size, args.added, args.rev, args.cache, args.data or shared_data_dir())
    if args.worker == "prepare":
        return 0
    result = measure(fixture, args.added)
    payload = {**result.__dict__}
    args.worker_out.write_text(json.dumps(payload) + "\n")
    return 0


def run_size(n: int, args: argparse.Namespace) -> Measurement:
    """Prepare the fixture in one process, then measure in a fresh one (its own peak RSS)."""
    base = [sys.executable, str(Path(__file__).resolve()), "--rev", args.rev, "--added", str(args.added),
            "--cache", str(args.cache), "--worker-size", str(n)]
    if args.data:
        base += ["--data", str(args.data)]
    subprocess.run([*base, "--worker", "prepare"], check=True)
    out = args.cache / "baseline" / args.rev / f"measure-{n}.json"
    subprocess.run([*base, "--worker", "measure", "--worker-out", str(out)], check=True)
    return Measurement(**json.loads(out.read_text()))


def report(results: Sequence[Measurement], rev: str) -> str:
    from bench.record import markdown_table

    header = ["step", *(f"s at {m.passages:,}" for m in results)]
    rows = [[label, *(f"{m.seconds[key]:.2f}" for m in results)] for key, label in STEPS]
    rows.append(["**total per commit**", *(f"**{m.total:.1f}**" for m in results)])
    rows.append(["peak RSS (GiB)", *(f"{m.peak_rss_gib:.2f}" for m in results)])
    rows.append(["FAISS file / BM25 folder / SQLite (GiB)",
                 *(f"{m.vector_file_gib:.2f} / {m.bm25_folder_gib:.2f} / {m.sqlite_gib:.2f}" for m in results)])
    big, small = results[-1], results[0]
    growth = big.total / small.total if small.total else float("nan")
    labels = dict(STEPS)
    tiny = [labels[key] for key, _ in STEPS if big.seconds[key] < 0.05]
    flat = [labels[key] for key, _ in STEPS
            if big.seconds[key] >= 0.05 and big.seconds[key] < 2 * small.seconds[key]]
    bm25_share = big.seconds["bm25_build"] / big.total if big.total else float("nan")
    return (
        f"Adding {big.added:,} passages in one commit, at revision {rev}, where every commit "
        "verifies, rebuilds and rewrites the whole index (steps in the order the commit runs "
        f"them; vectors: {big.vectors_from}; SQLite in WAL mode, one document per passage). "
        f"The peer is the same steps at {small.passages:,} passages, in the same run.\n\n"
        f"{markdown_table(header, rows)}\n\n"
        f"A commit costs {growth:.1f}x more at {big.passages:,} than at {small.passages:,} passages "
        f"({big.passages / small.passages:.0f}x the data); the BM25 rebuild alone is "
        f"{bm25_share:.0%} of it at {big.passages:,}. Steps that grew less than 2x: "
        f"{'; '.join(flat) or 'none'}; under 0.05 s at {big.passages:,}: {'; '.join(tiny) or 'none'}. "
        "Every other step grows with the index, not with the change (the FAISS add too: "
        "IndexFlat copies its whole array when it grows)."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--added", type=int, default=1000)
    parser.add_argument("--rev", default=DEFAULT_REV, help="git revision whose indexer/ is measured")
    parser.add_argument("--data", type=Path, default=None, help="shared data folder (default $SEMSEARCH_DATA)")
    parser.add_argument("--cache", type=Path, default=scale_data.DEFAULT_CACHE)
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--worker", choices=["prepare", "measure"], help=argparse.SUPPRESS)
    parser.add_argument("--worker-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.added < 1:
        raise ValueError(f"--added ({args.added}) must be at least 1.")
    if args.worker:
        return _worker(args)
    revision_package(args.rev, args.cache)
    results = [run_size(n, args) for n in sorted(args.sizes)]
    body = report(results, args.rev)
    print(body)
    if not args.no_record:
        from bench.record import record

        record("bench_scale_baseline", "Commit cost at scale before segments (bench_scale_baseline)", body,
               command=" ".join(["python bench/bench_scale_baseline.py", *(argv if argv is not None else sys.argv[1:])]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
