"""`Index` across builds: stale readers, model identity, locks, id sets, sources and paths.

Each test pins one failure the redesign fixed; the comment above it says what used to happen.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from indexer import (
    Index,
    IndexBusyError,
    IndexMismatchError,
    IndexNotFoundError,
    build_index,
    repair_index,
)
from indexer.__main__ import main
from indexer.embedding import encode_texts, load_bi_encoder
from indexer.store import sql_store
from tests.indexer.helpers import (
    assert_consistent,
    config,
    embedding_of,
    make_tiny_model,
    stored_vector,
    write_corpus,
)

TOPICS = [
    "Lava and ash erupted from the volcano in Iceland, and flights were grounded.",
    "Knead the dough for ten minutes, let it rise, then bake the bread.",
    "The striker scored twice in the second half and the team lifted the trophy.",
    "Share prices fell sharply after the central bank raised interest rates.",
    "The orchestra played a symphony by Brahms to a full concert hall.",
    "Glaciers in the Alps retreated by a kilometre over the last decade.",
    "The committee approved the budget for the new public library.",
    "A comet passed close to the sun and grew a long bright tail.",
]
# Scores of exact-text matches; distinct texts stay below 0.99 with the tiny random model.
SAME_TEXT = 0.999


@pytest.fixture()
def corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "corpus", {f"doc{i}.txt": text for i, text in enumerate(TOPICS[:6])})


def doc_of_highest_passage(index: Index, ids: np.ndarray) -> str:
    return index.passages([int(ids.max())])[int(ids.max())].doc_id


# --- 1. a long-lived reader after builds ------------------------------------------------------

# SQLite used to hand the ids of deleted passages to the next inserted ones, so a searcher still
# holding the previous build's vectors read another document's text for them.


def test_stale_index_reads_only_the_text_its_vectors_were_made_from(corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    cfg = config(corpus, index_dir, tiny_model)
    build_index(cfg)
    model = load_bi_encoder(tiny_model)
    index = Index.open(index_dir, use_gpu=False)
    for round_ in range(3):
        snap = index.snapshot()
        ids = snap.vectors.ids()
        then = index.passages(ids)
        assert set(then) == set(ids.tolist())
        # Swap documents: the newest rows go (their ids are the ones a reusing database hands
        # out next), one document changes, two new ones arrive.
        removed = doc_of_highest_passage(index, ids)
        (corpus / removed).unlink()
        changed = min(r.doc_id for r in then.values() if r.doc_id != removed)
        (corpus / changed).write_text(f"Round {round_}: the ferry to the island was cancelled.")
        for j in range(2):
            (corpus / f"new{round_}_{j}.txt").write_text(TOPICS[(round_ * 2 + j + 6) % len(TOPICS)]
                                                         + f" (edition {round_})")
        build_index(cfg)

        # Without refresh: every id of the old vectors is gone or still has its own text.
        assert index.snapshot().build_id == snap.build_id
        now = index.passages(ids)
        for pid, record in now.items():
            assert record.text == then[pid].text, f"passage {pid} now reads another text"
            assert np.allclose(stored_vector(snap, pid), embedding_of(model, record), atol=1e-5)
        assert not any(then[pid].doc_id in (removed, changed) for pid in now)
        # The removed document's own text finds no other document at an exact-match score.
        gone = next(r for r in then.values() if r.doc_id == removed)
        scores, found = snap.vectors.search(embedding_of(model, gone)[None, :], len(ids))
        for score, pid in zip(scores[0], found[0], strict=True):
            record = now.get(int(pid))
            if record is not None and score > SAME_TEXT:
                assert record.text == gone.text, f"{gone.doc_id}'s text found {record.doc_id}"

        # With refresh: the new build, whose every hit has the text of the vector it was found by.
        assert index.refresh() is True
        fresh = index.snapshot()
        assert fresh.build_id != snap.build_id
        assert_consistent(index_dir)
        scores, found = fresh.vectors.search(embedding_of(model, gone)[None, :], 5)
        hits = index.passages(found[0])
        assert gone.doc_id not in {h.doc_id for h in hits.values()}
        for score, pid in zip(scores[0], found[0], strict=True):
            vector = embedding_of(model, hits[int(pid)])
            assert np.allclose(stored_vector(fresh, pid), vector, atol=1e-5)
            assert score == pytest.approx(float(vector @ embedding_of(model, gone)), abs=1e-4)
    index.close()


def test_passage_ids_are_never_reused(corpus, tmp_path, tiny_model):
    """Not after a removal, a change or a --rebuild: every new passage gets an id never seen."""
    index_dir = tmp_path / "idx"
    cfg = config(corpus, index_dir, tiny_model)
    build_index(cfg)
    seen = assert_consistent(index_dir)
    for step in ("remove", "change", "add", "unchanged", "rebuild"):
        if step == "remove":
            (corpus / "doc5.txt").unlink()
        elif step == "change":
            (corpus / "doc4.txt").write_text("A new text for the fourth document.")
        elif step == "add":
            (corpus / "doc9.txt").write_text("A ninth document about tides.")
        before = assert_consistent(index_dir)
        build_index(config(corpus, index_dir, tiny_model, rebuild=step == "rebuild"))
        after = assert_consistent(index_dir)  # FAISS ids == SQL ids == BM25 ids, as sets
        new = after - before
        assert not new & seen, f"{step}: ids {sorted(new & seen)} were handed out again"
        if step == "unchanged":
            assert after == before
        seen |= after


def test_searcher_answers_from_its_build_and_after_refresh_from_the_new_one(corpus, tmp_path, tiny_model):
    """The same through `search.Searcher`: a stale one (no auto refresh) and a refreshing one."""
    from search import Searcher
    from search.config import SearchConfig

    index_dir = tmp_path / "idx"
    cfg = config(corpus, index_dir, tiny_model)
    build_index(cfg)
    model = load_bi_encoder(tiny_model)
    stale = Searcher(index_dir, config=SearchConfig(auto_refresh=False))
    live = Searcher(index_dir)
    for round_ in range(2):
        ids = stale.index.snapshot().vectors.ids()
        removed = doc_of_highest_passage(stale.index, ids)
        gone_text = (corpus / removed).read_text()
        (corpus / removed).unlink()
        (corpus / f"new{round_}.txt").write_text(TOPICS[6 + round_])
        build_index(cfg)
        query = encode_texts(model, [gone_text])[0]
        for searcher in (stale, live):
            hits = searcher.search(gone_text, mode="dense")
            assert hits, "a search over a stale build still answers"
            for hit in hits:
                vector = embedding_of(model, hit)
                assert hit.score == pytest.approx(float(vector @ query), abs=1e-4), (
                    f"hit {hit.doc_id} carries text that is not the one its vector was made from")
        assert removed not in {h.doc_id for h in live.search(gone_text, mode="dense")}
        assert stale.refresh() is True
        assert removed not in {h.doc_id for h in stale.search(gone_text, mode="dense")}
    stale.close()
    live.close()


# --- 2. model identity by content -------------------------------------------------------------


@pytest.fixture(scope="session")
def reseeded_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("reseeded") / "model", seed=1)


@pytest.fixture(scope="session")
def wide_model_dir(tmp_path_factory) -> Path:
    return make_tiny_model(tmp_path_factory.mktemp("wide") / "model", seed=0, hidden=48)


def replace_model_files(folder: str, new: Path) -> None:
    """New weights under the same path, as retraining into the --model folder does."""
    shutil.copytree(new, folder, dirs_exist_ok=True)


def test_replaced_model_weights_refuse_an_incremental_build(corpus, tmp_path, tiny_model, reseeded_model_dir):
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    replace_model_files(tiny_model, reseeded_model_dir)
    (corpus / "doc9.txt").write_text("A document embedded by the new weights.")
    with pytest.raises(IndexMismatchError, match=r"\(dimension 32, fingerprint (\w{12})\); this build "
                       r"uses .* \(dimension 32, fingerprint (?!\1)\w{12}\): its files changed, so old "
                       r"and new vectors would not be comparable\. Build into another --index folder, "
                       r"or pass --rebuild to re-embed everything\."):
        build_index(config(corpus, index_dir, tiny_model))
    assert len(assert_consistent(index_dir)) == 6, "the refused build changed nothing"
    report = build_index(config(corpus, index_dir, tiny_model, rebuild=True))
    assert report.passages_embedded == 7


def test_replaced_model_weights_refuse_search_until_repair_reembed(corpus, tmp_path, tiny_model,
                                                                    reseeded_model_dir, capsys):
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    replace_model_files(tiny_model, reseeded_model_dir)
    command = f"python -m indexer repair --index {index_dir} --reembed"
    with Index.open(index_dir, use_gpu=False) as index, pytest.raises(
        IndexMismatchError, match=r"The model files in .* changed since the index .* was built "
        r"\(fingerprint \w{12} now, \w{12} then\).*" + re.escape(command)
    ):
        index.load_model()
    from search import Searcher

    with pytest.raises(IndexMismatchError, match=re.escape(command)):
        Searcher(index_dir)

    # repair without --reembed says to add it, and changes nothing
    assert main(["repair", "--index", str(index_dir), "--quiet"]) == 2
    assert f"{command}\n" in capsys.readouterr().err
    # the command the message names
    assert main(["repair", "--index", str(index_dir), "--reembed", "--quiet"]) == 0
    assert "re-embedded 6 passages" in capsys.readouterr().out
    with Index.open(index_dir, use_gpu=False) as index:
        model = index.load_model()
        snap = index.snapshot()
        for pid, record in index.passages(snap.vectors.ids()).items():
            assert np.allclose(stored_vector(snap, pid), embedding_of(model, record), atol=1e-5)
    assert_consistent(index_dir)
    assert build_index(config(corpus, index_dir, tiny_model)).documents_unchanged == 6


def test_model_of_another_dimension_at_the_same_path_is_a_mismatch(corpus, tmp_path, tiny_model, wide_model_dir):
    """Not FAISS's AssertionError on adding or searching 48-dimensional vectors among 32."""
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    replace_model_files(tiny_model, wide_model_dir)
    (corpus / "doc9.txt").write_text("A document embedded by the wider model.")
    with pytest.raises(IndexMismatchError, match=r"\(dimension 32, fingerprint \w{12}\); this build "
                       r"uses .* \(dimension 48, fingerprint \w{12}\)"):
        build_index(config(corpus, index_dir, tiny_model))
    with Index.open(index_dir, use_gpu=False) as index, pytest.raises(
        IndexMismatchError, match=re.escape(f"python -m indexer repair --index {index_dir} --reembed")
    ):
        index.load_model()
    repaired = repair_index(index_dir, reembed=True, show_progress=False)
    assert repaired.vectors_reembedded == 6
    with Index.open(index_dir, use_gpu=False) as index:
        index.load_model()
        assert index.snapshot().vectors.dim == index.info.dimension == 48


# --- 3. locks ---------------------------------------------------------------------------------

HOLD_FLOCK = """
import fcntl, os, sys, time
fh = open(sys.argv[1], "a+")
fcntl.flock(fh, fcntl.LOCK_EX)
fh.seek(0); fh.truncate(); fh.write(f"{os.getpid()}\\n"); fh.flush()
print("locked", flush=True)
time.sleep(60)
"""


def assert_never_says_to_delete_a_lock(message: str) -> None:
    assert not re.search(r"\b(delet|remov|rm\b|unlink)", message, re.I), message


def test_build_while_another_process_builds_is_busy(corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_FLOCK, str(index_dir / ".lock")],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexBusyError, match=rf"Another build is writing {re.escape(str(index_dir))} "
                           rf"\(process {holder.pid}\)\. Wait for it to finish and run this build "
                           r"again; its lock goes away by itself when that process ends\.") as err:
            build_index(config(corpus, index_dir, tiny_model, rebuild=True))
        assert_never_says_to_delete_a_lock(str(err.value))
        with pytest.raises(IndexBusyError):
            repair_index(index_dir, show_progress=False)
    finally:
        holder.kill()
        holder.wait()
    assert (index_dir / ".lock").exists()
    assert build_index(config(corpus, index_dir, tiny_model)).documents_unchanged == 6


def test_build_inside_a_build_of_the_same_folder_is_busy(corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    with Index.create(index_dir).transaction(), pytest.raises(IndexBusyError, match="Another build"):
        build_index(config(corpus, index_dir, tiny_model))


def test_sqlite_write_lock_held_elsewhere_makes_a_build_busy(corpus, tmp_path, tiny_model, monkeypatch):
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    monkeypatch.setattr(sql_store, "SQLITE_LOCK_WAIT_S", 0.2)
    (corpus / "doc9.txt").write_text("Waits for the database.")
    other = sqlite3.connect(index_dir / "store.sqlite", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(IndexBusyError, match=r"Another build is writing sqlite:///.*store\.sqlite "
                           r"\(it holds SQLite's write lock\)\. Wait for it to finish") as err:
            build_index(config(corpus, index_dir, tiny_model))
        assert_never_says_to_delete_a_lock(str(err.value))
        with Index.open(index_dir, use_gpu=False) as index:  # readers are not blocked (WAL)
            assert index.stats().documents == 6
    finally:
        other.rollback()
        other.close()
    assert build_index(config(corpus, index_dir, tiny_model)).documents_added == 1
    assert_consistent(index_dir)


# --- 5. sources, ids and paths ----------------------------------------------------------------


def test_a_build_prunes_only_documents_of_its_own_source(corpus, tmp_path, tiny_model):
    """Uploads (another source folder) survive a later build of the original source."""
    index_dir = tmp_path / "idx"
    build_index(config(corpus, index_dir, tiny_model))
    uploads = write_corpus(tmp_path / "uploads", {"note.txt": "An uploaded note about comets."})
    added = build_index(config(uploads, index_dir, tiny_model))  # prune=True, its own source
    assert (added.documents_added, added.documents_removed, added.total_documents) == (1, 0, 7)
    (corpus / "doc0.txt").unlink()
    again = build_index(config(corpus, index_dir, tiny_model))
    assert (again.documents_removed, again.total_documents) == (1, 6)
    with Index.open(index_dir, use_gpu=False) as index:
        docs = {r.doc_id for r in index.passages(index.snapshot().vectors.ids()).values()}
    assert "note.txt" in docs and "doc0.txt" not in docs
    assert_consistent(index_dir)


@pytest.mark.integration
def test_app_uploads_survive_a_cli_build_of_the_original_source(corpus, tmp_path, capsys):
    from ui.uploads import index_uploads

    index_dir = tmp_path / "idx"
    assert main(["build", "--source", str(corpus), "--index", str(index_dir), "--quiet"]) == 0
    result = index_uploads([("comet.txt", b"A comet passed close to the sun.")], index_dir)
    assert result.report.total_documents == 7
    assert main(["build", "--source", str(corpus), "--index", str(index_dir), "--quiet"]) == 0
    assert "7 documents, 7 passages in the index (+0 new, ~0 changed, -0 removed" in capsys.readouterr().out
    with Index.open(index_dir, use_gpu=False) as index:
        assert "comet.txt" in {r.doc_id for r in index.passages(index.snapshot().vectors.ids()).values()}


def test_an_id_stored_from_another_file_is_replaced_with_a_warning(tmp_path, tiny_model):
    source = tmp_path / "src"
    write_corpus(source, {"a.jsonl": '{"id": "x", "text": "The first text of x."}\n'})
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    (source / "a.jsonl").unlink()
    write_corpus(source, {"b.jsonl": '{"id": "other", "text": "Another."}\n{"id": "x", "text": "The second text of x."}\n'})
    report = build_index(config(source, index_dir, tiny_model))
    assert report.warnings == [
        f"document id 'x' was indexed from a.jsonl ({source.resolve()}) and is now replaced by the "
        "one in b.jsonl:2; give one of them another id if both should stay"
    ]
    other = write_corpus(tmp_path / "other", {"c.jsonl": '{"id": "x", "text": "A third x."}\n'})
    report = build_index(config(other, index_dir, tiny_model))
    assert report.warnings == [
        f"document id 'x' was indexed from b.jsonl ({source.resolve()}) and is now replaced by the "
        "one in c.jsonl:1; give one of them another id if both should stay"
    ]
    with Index.open(index_dir, use_gpu=False) as index:
        texts = {r.doc_id: r.text for r in index.passages(index.snapshot().vectors.ids()).values()}
    assert texts == {"other": "Another.", "x": "A third x."}
    assert_consistent(index_dir)


def test_an_index_path_that_is_a_file_is_a_clear_error(corpus, tmp_path, tiny_model, capsys):
    path = tmp_path / "notes.txt"
    path.write_text("not an index")
    message = rf"{re.escape(str(path))} is a file, not an index folder\. Pass a folder path to --index"
    with pytest.raises(IndexNotFoundError, match=message):
        build_index(config(corpus, path, tiny_model))
    with pytest.raises(IndexNotFoundError, match=message):
        Index.open(path)
    with pytest.raises(IndexNotFoundError, match=message):
        repair_index(path, show_progress=False)
    inside = path / "idx"
    with pytest.raises(IndexNotFoundError, match=rf"{re.escape(str(path))} is a file"):
        build_index(config(corpus, inside, tiny_model))
    assert main(["build", "--source", str(corpus), "--index", str(path), "--model", tiny_model]) == 2
    assert "is a file, not an index folder" in capsys.readouterr().err
    assert path.read_text() == "not an index"


def test_a_missing_source_does_not_create_the_index_folder(tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    with pytest.raises(FileNotFoundError, match=r"Source .*missing does not exist"):
        build_index(config(tmp_path / "missing", index_dir, tiny_model))
    assert not index_dir.exists()


def test_opening_a_folder_without_an_index_names_the_build_command(tmp_path):
    with pytest.raises(IndexNotFoundError, match=re.escape(
            f"No index found in {tmp_path}. Build one with: python -m indexer build --source PATH "
            f"--index {tmp_path}")):
        Index.open(tmp_path)
