"""Index reliability under concurrent builds, kill -9 and damaged files.

Three probes, each against the real code paths (`build_index`, `Index`, `Searcher`, the CLI):

1. Searches during builds: another process runs incremental builds that swap documents
   (the newest ones go, so their ids are the ones a reusing database would hand out next,
   one changes, two arrive) while this one searches through a stale `Index` (never
   refreshed), an `Index` refreshed before each search, and a `Searcher` (auto refresh).
   A hit is wrong when its text is not the text its vector was embedded from. The same
   run with SQLite reusing row ids (the tables without AUTOINCREMENT, as before the fix)
   is the peer column.
2. kill -9 of a build process stopped at each stage (a wrapper patches one function to
   print a marker and sleep; the parent kills on the marker), on SQLite and on
   PostgreSQL (a private schema). Afterwards the previous build (or the new one, when the
   kill came after its commit) must open, its FAISS, BM25 and SQL ids must agree as sets,
   no document may be lost or altered, and the next build must succeed and leave no
   temporary or stale file.
3. Damaged files: each error message's own command (parsed out of the message) is run
   through the CLI entry point, then the index must open and search correctly.

Usage: python bench/bench_reliability.py [--rounds 20] [--pg URL | --no-pg] [--no-record]
The bi-encoder is a tiny 2-layer BERT built from a config (as tests/conftest.py builds it):
storage reliability does not depend on the model's quality, and it keeps the run short.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

from bench.record import markdown_table, record  # noqa: E402
from indexer import Index, IndexConfig, IndexerError, IndexUnreadableError, build_index  # noqa: E402
from indexer.build.pipeline import embedded_title  # noqa: E402
from indexer.embedding import encode_texts, load_bi_encoder  # noqa: E402
from indexer.sources.passage_text import passage_text  # noqa: E402

PG_URL = os.environ.get("SEMSEARCH_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
STAGES = ["reading", "embedding", "writing BM25", "writing vectors", "before commit", "after commit"]
BASE_DOCS = 16
WORDS = ["river", "mountain", "bread", "engine", "violin", "harbour", "comet", "glacier", "market",
         "poem", "tractor", "lantern", "orchard", "falcon", "copper", "meadow", "thunder", "library",
         "canal", "saddle", "forest", "quartz", "tide", "village", "kettle", "beacon", "marble",
         "pepper", "ribbon", "summit"]


# --- the corpus: deterministic, so parent and child agree on every text -------------------------


def sentence(key: int) -> str:
    rng = random.Random(key)
    return f"Note {key}: " + " ".join(rng.choice(WORDS) for _ in range(12)) + "."


def base_state() -> dict[str, str]:
    return {f"base{i:02d}.txt": sentence(i) for i in range(BASE_DOCS)}


def state_after(round_: int) -> dict[str, str]:
    """The source after `round_ + 1` swaps. Each removes the three documents the previous one
    added or changed (they hold the highest passage ids, the ones a database that reuses ids
    hands out next), adds two and changes one; the base document removed by the previous round
    comes back."""
    docs = base_state()
    for r in range(round_ + 1):
        if r:
            docs.pop(f"r{r - 1}_0.txt")
            docs.pop(f"r{r - 1}_1.txt")
            docs.pop(f"base{(r - 1) % BASE_DOCS:02d}.txt")
        if r >= 2:  # the base document removed last round comes back, under a new id
            docs[f"base{(r - 2) % BASE_DOCS:02d}.txt"] = sentence((r - 2) % BASE_DOCS)
        docs[f"r{r}_0.txt"] = sentence(1000 + 2 * r)
        docs[f"r{r}_1.txt"] = sentence(1001 + 2 * r)
        docs[f"base{r % BASE_DOCS:02d}.txt"] = sentence(5000 + r)
    return docs


def write_state(source: Path, docs: dict[str, str]) -> None:
    source.mkdir(parents=True, exist_ok=True)
    for path in source.glob("*.txt"):
        if path.name not in docs:
            path.unlink()
    for name, text in docs.items():
        path = source / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


def all_texts(rounds: int) -> list[str]:
    texts = set(base_state().values())
    for r in range(rounds):
        texts |= set(state_after(r).values())
    return sorted(texts)


def make_tiny_model(out: Path) -> Path:
    """A 2-layer BERT, hidden 32, random weights, with the default model's vocabulary."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    from indexer.model_spec import default_model_path

    torch.manual_seed(0)
    bert_dir = out.parent / f"{out.name}_bert"
    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(config).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    transformer = Transformer(str(bert_dir), max_seq_length=128)
    SentenceTransformer(modules=[transformer, Pooling(32, "mean"), Normalize()], device="cpu").save(str(out))
    return out


@contextlib.contextmanager
def ids_reused() -> Iterator[None]:
    """Create tables as before the fix: SQLite without AUTOINCREMENT hands deleted ids out again."""
    from indexer.store.schema import DocumentRow, PassageRow

    options = [t.dialect_options["sqlite"]._non_defaults for t in (DocumentRow.__table__, PassageRow.__table__)]
    for opts in options:
        opts["autoincrement"] = False
    try:
        yield
    finally:
        for opts in options:
            opts["autoincrement"] = True


def config_for(source: Path, index_dir: Path, model: str, db_url: str | None) -> IndexConfig:
    return IndexConfig(source=source, index_dir=index_dir, model=model, db_url=db_url, show_progress=False)


# --- child processes --------------------------------------------------------------------------


def child_builds(args: argparse.Namespace) -> None:
    cfg = config_for(Path(args.source), Path(args.index), args.model, args.db)
    for r in range(args.rounds):
        write_state(Path(args.source), state_after(r))
        build_index(cfg)
        print(f"BUILT {r}", flush=True)
        time.sleep(args.pause)


def install_stage_hook(stage: str) -> None:
    """Make the build print `STAGE <stage>` and sleep there, for the parent to kill it."""
    import bm25s
    import faiss

    import indexer.build.loop as build_loop
    import indexer.build.pipeline as build_module
    from indexer.store.transaction import WriteTransaction

    def pause() -> None:
        print(f"STAGE {stage}", flush=True)
        time.sleep(300)

    def before(fn: Callable) -> Callable:
        def hooked(*args, **kwargs):
            pause()
            return fn(*args, **kwargs)
        return hooked

    def after(fn: Callable) -> Callable:
        def hooked(*args, **kwargs):
            result = fn(*args, **kwargs)
            pause()
            return result
        return hooked

    if stage == "reading":
        build_loop.read_documents = before(build_loop.read_documents)
    elif stage == "embedding":
        build_module.embed = before(build_module.embed)
    elif stage == "writing BM25":  # the bm25s files are in the temp folder, not yet renamed
        bm25s.BM25.save = after(bm25s.BM25.save)
    elif stage == "writing vectors":  # the FAISS temp file is written, not yet renamed
        faiss.write_index = after(faiss.write_index)
    elif stage == "before commit":  # both files in place, the SQL transaction still open
        WriteTransaction.commit = after(WriteTransaction.commit)
    elif stage == "after commit":  # committed; the previous build's files not yet removed
        Index._remove_stale_files = before(Index._remove_stale_files)
    else:
        raise ValueError(f"Unknown stage {stage!r}. Valid: {', '.join(STAGES)}.")


def child_kill(args: argparse.Namespace) -> None:
    install_stage_hook(args.stage)
    build_index(config_for(Path(args.source), Path(args.index), args.model, args.db))
    print("DONE", flush=True)


# A rebuild's probe: an index of this many documents, rebuilt with commits of this many passages
# (so a rebuild that committed in chunks, as before one-commit rebuilds, would show halfway).
REBUILD_DOCS = 120
REBUILD_CHUNK = 4


def child_rebuild(args: argparse.Namespace) -> None:
    """A --rebuild with small commits; `--chunked` makes it commit chunk by chunk, as rebuilds did
    before they landed in one commit (the peer); `--stage pause` stops it, printing a marker,
    just before the commit that would take it past 8 passages, for the parent to kill."""
    from dataclasses import replace

    from indexer.store.transaction import WriteTransaction

    if args.chunked:
        init = WriteTransaction.__init__

        def chunked(self, *a, **k):
            init(self, *a, **k)
            self.replaces = None  # what marks a rebuild of a served index: without it, chunks

        WriteTransaction.__init__ = chunked
    if args.stage == "pause":
        commit, committed = WriteTransaction.commit, []

        def paused(self, plan, origin, passages, vectors, meta):
            if sum(committed) + sum(map(len, passages)) > 8:
                print("STAGE pause", flush=True)
                time.sleep(300)
            committed.append(sum(map(len, passages)))
            return commit(self, plan, origin, passages, vectors, meta)

        WriteTransaction.commit = paused
    cfg = replace(config_for(Path(args.source), Path(args.index), args.model, None), rebuild=True,
                  commit_passages=REBUILD_CHUNK)
    build_index(cfg)
    print("DONE", flush=True)


def spawn(*argv: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def child_args(source: Path, index_dir: Path, model: str, db_url: str | None) -> list[str]:
    return ["--source", str(source), "--index", str(index_dir), "--model", model] + (
        ["--db", db_url] if db_url else [])


# --- checks -----------------------------------------------------------------------------------


class Embeddings:
    """The tiny model's vector for each passage input, cached."""

    def __init__(self, model_path: str) -> None:
        self.model = load_bi_encoder(model_path)
        self._cache: dict[str, np.ndarray] = {}

    def of_text(self, text: str) -> np.ndarray:
        if text not in self._cache:
            self._cache[text] = encode_texts(self.model, [text])[0]
        return self._cache[text]

    def of_passage(self, title: str, text: str) -> np.ndarray:
        return self.of_text(passage_text(embedded_title(title, self.model), text))


def index_state(index_dir: Path, db_url: str | None) -> tuple[str, dict[str, str], str | None]:
    """(build id, doc id -> text, the first disagreement of the id sets or None)."""
    from sqlalchemy import select

    from indexer.store.schema import PassageRow
    from indexer.store.sql_store import make_engine

    with Index.open(index_dir, db_url, use_gpu=False) as index:
        snap = index.snapshot()
        faiss_ids = set(snap.vectors.ids().tolist())
        bm25_ids = set(snap.bm25.ids().tolist())
        engine = make_engine(index.db_url)
        try:
            with engine.connect() as conn:
                sql_ids = set(conn.scalars(select(PassageRow.id)))
        finally:
            engine.dispose()
        records = index.passages(sorted(sql_ids))
    problem = None
    if not faiss_ids == bm25_ids == sql_ids:
        problem = f"ids differ: FAISS {len(faiss_ids)}, BM25 {len(bm25_ids)}, SQL {len(sql_ids)}"
    elif len(records) != len({r.doc_id for r in records.values()}):
        problem = "a document has more than one passage"
    return snap.build_id, {r.doc_id: r.text for r in records.values()}, problem


# --- probe 1: searches during builds ------------------------------------------------------------


# Readers that refresh only every LAG_S seconds answer from a build a later one has replaced.
LAG_S = 1.5
READERS = {
    "lagging index": f"`Index`, `refresh()` every {LAG_S} s",
    "refreshed index": "`Index`, `refresh()` before each search",
    "lagging searcher": f"`Searcher` without auto refresh, `refresh()` every {LAG_S} s",
    "auto searcher": "`Searcher` with auto refresh (the default)",
}


@dataclass
class ReaderTally:
    searches: int = 0
    hits: int = 0
    wrong: int = 0
    errors: list[str] = field(default_factory=list)


def check_index_hits(index: Index, query: np.ndarray, emb: Embeddings, tally: ReaderTally) -> None:
    snap = index.snapshot()
    scores, ids = snap.vectors.search(query[None, :], 5)
    found = [int(i) for i in ids[0] if i >= 0]
    records = index.passages(found)
    tally.searches += 1
    for pid in found:
        record_ = records.get(pid)
        if record_ is None:
            continue  # deleted by a later build: dropped, as the searcher drops it
        tally.hits += 1
        stored = snap.vectors.vector(int(pid))
        if not np.allclose(stored, emb.of_passage(record_.title, record_.text), atol=1e-4):
            tally.wrong += 1


def check_searcher_hits(searcher, text: str, query: np.ndarray, emb: Embeddings, tally: ReaderTally) -> None:
    hits = searcher.search(text, k=5, mode="dense")
    tally.searches += 1
    for hit in hits:
        tally.hits += 1
        if abs(hit.score - float(emb.of_passage(hit.title, hit.text) @ query)) > 1e-4:
            tally.wrong += 1


def probe_searches(work: Path, model: str, emb: Embeddings, rounds: int, reuse: bool) -> dict[str, ReaderTally]:
    from search import Searcher
    from search.config import SearchConfig

    source, index_dir = work / "source", work / "index"
    write_state(source, base_state())
    with ids_reused() if reuse else contextlib.nullcontext():
        build_index(config_for(source, index_dir, model, None))
    texts = all_texts(rounds)
    rng = random.Random(0)
    tallies = {name: ReaderTally() for name in READERS}
    lagging = Index.open(index_dir, use_gpu=False)
    live = Index.open(index_dir, use_gpu=False)
    lagging_searcher = Searcher(index_dir, config=SearchConfig(auto_refresh=False))
    searcher = Searcher(index_dir, config=SearchConfig())
    child = spawn("builds", "--rounds", str(rounds), *child_args(source, index_dir, model, None))
    last_refresh = time.monotonic()
    try:
        while child.poll() is None:
            text = rng.choice(texts)
            query = emb.of_text(text)
            if time.monotonic() - last_refresh > LAG_S:
                lagging.refresh()
                lagging_searcher.refresh()
                last_refresh = time.monotonic()
            for name in tallies:
                try:
                    if name == "lagging index":
                        check_index_hits(lagging, query, emb, tallies[name])
                    elif name == "refreshed index":
                        live.refresh()
                        check_index_hits(live, query, emb, tallies[name])
                    elif name == "lagging searcher":
                        check_searcher_hits(lagging_searcher, text, query, emb, tallies[name])
                    else:
                        check_searcher_hits(searcher, text, query, emb, tallies[name])
                except (IndexerError, OSError) as err:
                    tallies[name].errors.append(f"{type(err).__name__}: {err}")
        _, err = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"the build process failed:\n{err[-2000:]}")
    finally:
        if child.poll() is None:
            child.kill()
        for reader in (lagging, live, lagging_searcher, searcher):
            reader.close()
    return tallies


# --- probe 1b: a rebuild under searches, and a rebuild killed midway ------------------------------


def rebuild_docs() -> dict[str, str]:
    return {f"note-{i:03d}.txt": sentence(1000 + i) for i in range(REBUILD_DOCS)}


def served_documents(searcher) -> int:
    """How many documents a search can reach: every note holds "Note", so a BM25 search for it
    with k = REBUILD_DOCS returns all of them, or only those the served build holds."""
    return len(searcher.search("Note", k=REBUILD_DOCS, mode="bm25"))


def probe_rebuild(work: Path, model: str, chunked: bool) -> tuple[int, int, int]:
    """(searches during a --rebuild, of them answered from fewer than all documents, documents
    served after a rebuild killed midway)."""
    from search import Searcher

    source, index_dir = work / "source", work / "index"
    write_state(source, rebuild_docs())
    build_index(config_for(source, index_dir, model, None))
    peer = ["--chunked"] if chunked else []
    searcher = Searcher(index_dir)
    searches = partial = 0
    try:
        child = spawn("rebuild", *peer, *child_args(source, index_dir, model, None))
        while child.poll() is None:
            searches += 1
            partial += served_documents(searcher) < REBUILD_DOCS
        _, err = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"the rebuild failed:\n{err[-2000:]}")
        child = spawn("rebuild", *peer, "--stage", "pause", *child_args(source, index_dir, model, None))
        marker = wait_for_marker(child)
        os.kill(child.pid, signal.SIGKILL)
        child.communicate()
        if marker != "STAGE pause":
            raise RuntimeError(f"the rebuild never reached its pause: {marker}")
        after_kill = served_documents(searcher)
    finally:
        searcher.close()
    build_index(config_for(source, index_dir, model, None))  # the next build completes it
    return searches, partial, after_kill


# --- probe 2: kill -9 at each stage --------------------------------------------------------------


def wait_for_marker(child: subprocess.Popen, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([child.stdout], [], [], 1.0)
        if ready:
            line = child.stdout.readline()
            if not line:
                return "EOF"
            if line.startswith(("STAGE", "DONE")):
                return line.strip()
    return "TIMEOUT"


def kill_trial(work: Path, model: str, db_url: str | None, stage: str, step: int) -> str | None:
    """One kill; None when every check passed, else what failed."""
    source, index_dir = work / "source", work / "index"
    before_docs = state_after(step - 1) if step else base_state()
    after_docs = state_after(step)
    old_build, stored, problem = index_state(index_dir, db_url)
    if problem or stored != before_docs:
        return f"not in the expected state before the trial ({problem or 'documents differ'})"
    write_state(source, after_docs)
    child = spawn("kill", "--stage", stage, *child_args(source, index_dir, model, db_url))
    marker = wait_for_marker(child)
    os.kill(child.pid, signal.SIGKILL)
    _, err = child.communicate()
    if marker != f"STAGE {stage}":
        return f"the build never reached the stage ({marker}): {err.strip()[-300:]}"
    committed = stage == "after commit"
    try:
        build_id, stored, problem = index_state(index_dir, db_url)
    except (IndexerError, OSError) as error:
        return f"does not open after the kill: {error}"
    if problem:
        return problem
    if (build_id != old_build) != committed:
        return f"build {build_id} is loaded; expected the {'new' if committed else 'previous'} one"
    if stored != (after_docs if committed else before_docs):
        return "documents lost or altered"
    try:
        build_index(config_for(source, index_dir, model, db_url))
    except (IndexerError, OSError) as error:
        return f"the next build failed: {error}"
    _, stored, problem = index_state(index_dir, db_url)
    if problem or stored != after_docs:
        return f"after the next build: {problem or 'documents differ from the source'}"
    leftovers = [p.name for p in index_dir.iterdir() if p.name.endswith(".tmp")]
    if leftovers or len(list(index_dir.glob("vectors-*"))) != 1 or len(list(index_dir.glob("bm25-*"))) != 1:
        return f"files left after the next build: {sorted(p.name for p in index_dir.iterdir())}"
    return None


def probe_kills(work: Path, model: str, db_url: str | None) -> dict[str, str | None]:
    write_state(work / "source", base_state())
    build_index(config_for(work / "source", work / "index", model, db_url))
    results: dict[str, str | None] = {}
    for step, stage in enumerate(STAGES):
        results[stage] = kill_trial(work, model, db_url, stage, step)
        print(f"  kill -9 at {stage}: {results[stage] or 'ok'}", flush=True)
    return results


@contextlib.contextmanager
def pg_schema(url: str) -> Iterator[str | None]:
    """A private schema for the run, dropped afterwards; None when no server answers."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.exc import OperationalError

    engine = create_engine(url)
    schema = f"semsearch_bench_{uuid.uuid4().hex[:8]}"
    try:
        with engine.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except OperationalError:
        engine.dispose()
        yield None
        return
    try:
        yield f"{url}?options=-csearch_path%3D{schema}"
    finally:
        with engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        engine.dispose()


# --- probe 3: damaged files ---------------------------------------------------------------------


COMMAND = re.compile(r"python -m indexer (?:build|repair)(?: --[\w-]+(?: (?!--|\()[^\s()]+)?)*")


def damage_cases(other_model: Path) -> dict[str, Callable[[Path, Index], None]]:
    def truncate(path: Path) -> None:
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])

    def flip(path: Path) -> None:
        data = bytearray(path.read_bytes())
        for i in range(len(data) // 2, len(data) // 2 + 16):
            data[i] ^= 0xFF
        path.write_bytes(bytes(data))

    def from_other_build(index_dir: Path, index: Index) -> None:
        other = index_dir.parent / "other"
        write_state(other / "source", {n: t.replace("Note", "Memo") for n, t in base_state().items()})
        build_index(config_for(other / "source", other / "index", index.info.model, None))
        with Index.open(other / "index", use_gpu=False) as other_index:
            shutil.copyfile(other / "index" / other_index.info.vector_file, index_dir / index.info.vector_file)

    def model_replaced(index_dir: Path, index: Index) -> None:
        shutil.copytree(other_model, index.info.model, dirs_exist_ok=True)

    def sqlite_overwritten(index_dir: Path, index: Index) -> None:
        with open(index_dir / "store.sqlite", "r+b") as fh:
            fh.write(b"garbage, not a SQLite header" * 4)

    def word_changed_in_the_file(index_dir: Path, index: Index) -> None:
        """One byte of a word, changed in every copy of it in store.sqlite's bytes (the document's
        text and its passage's): no SQLite check notices."""
        path = index_dir / "store.sqlite"
        data = path.read_bytes()
        word = next(w.encode() for w in WORDS if w.encode() in data)
        path.write_bytes(data.replace(word, word[:-1] + bytes([word[-1] ^ 0x01])))

    def passage_updated(index_dir: Path, index: Index) -> None:
        import sqlite3

        with sqlite3.connect(index_dir / "store.sqlite") as conn:
            conn.execute("UPDATE semsearch_passages SET text = 'Relative' || substr(text, 9) WHERE id = "
                         "(SELECT min(id) FROM semsearch_passages)")

    def zeroed_page(index_dir: Path, index: Index) -> None:
        """The first 4 KiB page past the header whose zeroing a search notices."""
        path = index_dir / "store.sqlite"
        original = path.read_bytes()
        for page in range(1, len(original) // 4096):
            damaged = bytearray(original)
            damaged[page * 4096:(page + 1) * 4096] = bytes(4096)
            path.write_bytes(bytes(damaged))
            try:
                read_every_hit(index_dir)
            except IndexerError:
                return
        raise RuntimeError("no zeroed page was noticed")

    def manifest_truncated(index_dir: Path, index: Index) -> None:
        truncate(index_dir / "index.json")

    return {
        "vector file truncated": lambda d, i: truncate(d / i.info.vector_file),
        "vector file with 16 bytes flipped": lambda d, i: flip(d / i.info.vector_file),
        "vector file copied from another index": from_other_build,
        "vector file deleted": lambda d, i: (d / i.info.vector_file).unlink(),
        "BM25 folder deleted": lambda d, i: shutil.rmtree(d / i.info.bm25_dir),
        "BM25 file truncated": lambda d, i: truncate(max((d / i.info.bm25_dir).iterdir(),
                                                         key=lambda p: p.stat().st_size)),
        "model weights replaced in the --model folder": model_replaced,
        "SQLite header overwritten": sqlite_overwritten,
        "a zeroed 4 KiB page inside store.sqlite": zeroed_page,
        "one byte of a word changed in store.sqlite's bytes": word_changed_in_the_file,
        "a passage's text changed by an SQL UPDATE": passage_updated,
        "index.json deleted": lambda d, i: (d / "index.json").unlink(),
        "index.json invalid": lambda d, i: (d / "index.json").write_text("{not json"),
        "index.json truncated": manifest_truncated,
    }


def read_every_hit(index_dir: Path) -> None:
    """Open the index and read it as searches do: the model, both stores (a BM25 part that cannot
    be used is what a search reports), and every passage's row with its checksum."""
    with Index.open(index_dir, use_gpu=False) as index:
        index.load_model()
        snap = index.snapshot()
        if snap.bm25_problem is not None:
            raise IndexUnreadableError(snap.bm25_problem)
        index.passages(snap.vectors.ids())


def damage_trial(work: Path, model_src: Path, other_model: Path, name: str,
                 damage: Callable[[Path, Index], None]) -> tuple[str, str | None]:
    """(the command the error message gave, None when it repaired the index, else what failed)."""
    from indexer.__main__ import main as cli

    model = shutil.copytree(model_src, work / "model")
    source, index_dir = work / "source", work / "index"
    docs = base_state()
    write_state(source, docs)
    build_index(config_for(source, index_dir, str(model), None))
    with Index.open(index_dir, use_gpu=False) as index:
        damage(index_dir, index)
    try:
        read_every_hit(index_dir)
        return "", "no error: the damage went unnoticed"
    except (IndexerError, OSError) as err:
        message = str(err)
    found = COMMAND.search(message)
    if found is None:
        return "", f"the message names no command: {message}"
    command = found.group(0)
    argv = command.split()[3:]
    argv = [str(source) if a == "PATH" else a for a in argv]
    if argv[0] == "build":
        argv += ["--model", str(model)]
    if argv[0] == "repair" and "--db" in argv:
        argv = argv[:argv.index("--db")]  # "--db URL" is for an index whose rows live elsewhere
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        code = cli(argv + ["--quiet"])
    if code != 0:
        return command, f"the command exited with {code}"
    emb = Embeddings(str(model))
    try:
        read_every_hit(index_dir)
        _, stored, problem = index_state(index_dir, None)
        with Index.open(index_dir, use_gpu=False) as index:
            index.load_model()
            snap = index.snapshot()
            for pid, rec in index.passages(snap.vectors.ids()).items():
                if not np.allclose(snap.vectors.vector(int(pid)),
                                   emb.of_passage(rec.title, rec.text), atol=1e-4):
                    return command, f"passage {pid}'s vector is not its text's embedding"
    except (IndexerError, OSError) as err:
        return command, f"still fails after the command: {err}"
    if problem or stored != docs:
        return command, problem or "documents lost"
    return command, None


def checksum_cost(work: Path, model: str, repeats: int = 2000) -> tuple[float, float]:
    """Microseconds per `Index.passages` of 10 hits (what a k=10 search reads), with the text
    checksums verified and, as the peer in the same run, with the check turned off."""
    source, index_dir = work / "source", work / "index"
    docs = {f"doc-{i:04d}.txt": " ".join(sentence(i * 7 + j) for j in range(12)) for i in range(300)}
    write_state(source, docs)
    build_index(config_for(source, index_dir, model, None))
    timings = {}
    with Index.open(index_dir, use_gpu=False) as index:
        ids = index.snapshot().vectors.ids()[:10].tolist()
        for checked in (True, False, True, False):
            index.passages(ids)
            index._checksums = checked
            started = time.perf_counter()
            for _ in range(repeats):
                index.passages(ids)
            timings.setdefault(checked, []).append((time.perf_counter() - started) / repeats * 1e6)
    return min(timings[True]), min(timings[False])


# --- report -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="builds while searching")
    parser.add_argument("--pg", default=PG_URL, help="PostgreSQL URL for the kill -9 trials")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--child", choices=["builds", "kill", "rebuild"], help=argparse.SUPPRESS)
    parser.add_argument("--chunked", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--index", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--pause", type=float, default=0.2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "builds":
        child_builds(args)
        return 0
    if args.child == "kill":
        child_kill(args)
        return 0
    if args.child == "rebuild":
        child_rebuild(args)
        return 0

    # Before the CLI's own basicConfig, which then leaves it alone: its INFO lines would drown the table.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bench_reliability_"))
    try:
        model = str(make_tiny_model(work / "tiny_model"))
        emb = Embeddings(model)

        print(f"1. searches during {args.rounds} builds in another process", flush=True)
        fixed = probe_searches(work / "fixed", model, emb, args.rounds, reuse=False)
        reused = probe_searches(work / "reused", model, emb, args.rounds, reuse=True)
        search_rows = []
        for name, label in READERS.items():
            f, r = fixed[name], reused[name]
            print(f"  {name}: {f.searches} searches, {f.hits} hits, {f.wrong} wrong, "
                  f"{len(f.errors)} errors; ids reused: {r.wrong} wrong of {r.hits}", flush=True)
            for error in f.errors[:3]:
                print(f"    error: {error}", flush=True)
            search_rows.append([label, f.searches, f.hits, f"**{f.wrong}**", len(f.errors),
                                f"{r.wrong} of {r.hits} hits ({r.searches} searches)"])

        print(f"1b. a --rebuild of {REBUILD_DOCS} documents while searching, then one killed midway", flush=True)
        rebuilds = {label: probe_rebuild(work / f"rebuild_{label}", model, chunked=label == "chunked")
                    for label in ("one commit", "chunked")}
        for label, (searches, partial, after_kill) in rebuilds.items():
            print(f"  {label}: {partial} of {searches} searches partial; {after_kill} of {REBUILD_DOCS} "
                  "documents served after the kill", flush=True)

        print("2. kill -9 of a build at each stage", flush=True)
        kills: dict[str, dict[str, str | None]] = {}
        kills["SQLite"] = probe_kills(work / "kill_sqlite", model, None)
        if not args.no_pg:
            with pg_schema(args.pg) as pg_url:
                if pg_url is None:
                    print(f"  no PostgreSQL server answers at {args.pg}; skipped", flush=True)
                else:
                    kills["PostgreSQL"] = probe_kills(work / "kill_pg", model, pg_url)

        print("3. the cost of checking stored text", flush=True)
        checked_us, unchecked_us = checksum_cost(work / "checksums", model)
        print(f"  Index.passages of 10 hits: {checked_us:.0f} us checked, {unchecked_us:.0f} us unchecked", flush=True)

        print("4. damaged files, repaired by the command their message gives", flush=True)
        other_model = work / "other_model"
        shutil.copytree(model, other_model)
        import torch
        from safetensors.torch import load_file, save_file

        weights = load_file(other_model / "model.safetensors")
        torch.manual_seed(1)
        save_file({k: v + 0.01 * torch.randn_like(v) for k, v in weights.items()},
                  other_model / "model.safetensors")
        damage_rows, repaired = [], 0
        for i, (name, damage) in enumerate(damage_cases(other_model).items()):
            command, failure = damage_trial(work / f"damage{i}", Path(model), other_model, name, damage)
            repaired += failure is None
            shown = command.replace(str(work), "…")
            print(f"  {name}: {shown or '-'} -> {failure or 'repaired'}", flush=True)
            damage_rows.append([name, f"`{shown}`" if shown else "-", "yes" if failure is None else f"no: {failure}"])
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)

    backends = list(kills)
    kill_rows = [[stage] + [kills[b][stage] or "ok" for b in backends] for stage in STAGES]
    kill_rows.append(["**failures / trials**"] + [
        f"**{sum(v is not None for v in kills[b].values())} / {len(kills[b])}**" for b in backends])
    body = "\n\n".join([
        f"Tiny 2-layer BERT (hidden 32) bi-encoder built from a config, {BASE_DOCS}-document text "
        f"folder, one passage per document; whole run {seconds:.0f} s.",
        f"**Searches during {args.rounds} incremental builds in another process.** Each build "
        "removes the three documents the previous one added or changed (the highest passage ids), "
        "adds two and changes one. A hit is wrong when its text is not the text its vector was embedded from "
        "(the `Index` rows compare the stored vector with a fresh embedding of the text; the "
        "`Searcher` row compares the reported score with the query's dot product with that "
        "embedding). The last column runs the same probe with the tables created without SQLite "
        "AUTOINCREMENT, as before the fix, so deleted ids were handed out again.",
        markdown_table(["reader", "searches", "hits checked", "wrong hits", "errors",
                        "wrong hits with ids reused (before the fix)"], search_rows),
        f"**A `--rebuild` of {REBUILD_DOCS} documents (commits of {REBUILD_CHUNK} passages asked for) "
        "in another process while a `Searcher` (auto refresh) searches**, BM25 for a word every "
        "document holds, k = all: an answer is partial when it reaches fewer than all the documents. "
        "Then a rebuild killed with SIGKILL just before the commit that would take it past 8 "
        "passages, and the documents a search reaches afterwards. The peer column makes the "
        "rebuild commit chunk by chunk, as rebuilds did before they landed in one commit.",
        markdown_table(["rebuild", "searches during it", "partial answers (target 0)",
                        f"documents served after kill -9 midway (of {REBUILD_DOCS})"],
                       [[label, searches, f"**{partial}**" if label == "one commit" else partial, after_kill]
                        for label, (searches, partial, after_kill) in rebuilds.items()]),
        "**kill -9 of a build process at each stage**, then: the previous build (the new one after "
        "its commit) opens, its FAISS, BM25 and SQL passage ids agree as sets, no document is lost "
        "or altered, and the next build succeeds and leaves no temporary or stale file. PostgreSQL "
        "runs in a private schema.",
        markdown_table(["stage killed at"] + backends, kill_rows),
        "**Damaged files.** The command is parsed out of the error message (opening the index, "
        "loading its model, or reading every hit as a search does: a BM25 part that cannot be used, "
        "a row whose text fails its checksum) and run through `python -m indexer`'s `main`; repaired "
        "means the index then opens and reads, every vector is its passage's embedding by the model "
        "now in the folder, the id sets agree and every document is there, with its own text.",
        markdown_table(["damage", "command in the message", "repaired"], damage_rows),
        f"**Repaired {repaired} / {len(damage_rows)}.**",
        "**The cost of checked text.** `Index.passages` of the 10 hits a k=10 search reads, from a "
        "300-document index, best of two runs of 2,000 calls each; the peer is the same call with "
        "the checksum check turned off, in the same run.",
        markdown_table(["read of 10 hits", "µs per search"],
                       [["rows read and checked (BLAKE2b of title and text)", f"{checked_us:.0f}"],
                        ["rows read, not checked (peer)", f"{unchecked_us:.0f}"],
                        ["**cost of the check** (target < 1,000)", f"**{checked_us - unchecked_us:.0f}**"]]),
    ])
    print(body)
    if not args.no_record:
        record("bench_reliability", "Index reliability: concurrent builds, kill -9, damaged files", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
