"""Damaged or half-written index files: each is refused with the exact command that repairs it,
and that command works. Also what a crashed build leaves behind, and loads racing a build."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from indexer import Index, IndexMismatchError, IndexUnreadableError, build_index, repair_index
from indexer.__main__ import main
from indexer.embedding import load_bi_encoder
from indexer.errors import NotEnoughSpaceError
from indexer.store import integrity
from indexer.store.records import build_command
from indexer.store.transaction import WriteTransaction
from search import Searcher
from tests.indexer.helpers import (
    assert_consistent,
    config,
    embedding_of,
    stored_vector,
    write_corpus,
)

DOCS = {
    "volcano.txt": "Lava and ash erupted from the volcano in Iceland, and flights were grounded.",
    "baking.txt": "Knead the dough for ten minutes, let it rise, then bake the bread.",
    "football.md": "# Cup final\nThe striker scored twice and the team lifted the trophy.",
    "markets.txt": "Share prices fell sharply after the central bank raised interest rates.",
}


@pytest.fixture()
def built(tmp_path, tiny_model) -> tuple[Path, Path, str]:
    """(source, index folder, model) of a committed four-document index."""
    source = write_corpus(tmp_path / "corpus", DOCS)
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    return source, index_dir, tiny_model


def committed(index_dir: Path) -> tuple[Path, Path]:
    with Index.open(index_dir, use_gpu=False) as index:
        info = index.info
    return index_dir / info.vector_file, index_dir / info.bm25_dir


def assert_searchable(index_dir: Path, model: str) -> None:
    """Open, check the three id sets, and check every vector is its passage's embedding."""
    assert_consistent(index_dir)
    encoder = load_bi_encoder(model)
    with Index.open(index_dir, use_gpu=False) as index:
        snap = index.snapshot()
        records = index.passages(snap.vectors.ids())
        assert {r.doc_id for r in records.values()} == set(DOCS)
        for pid, record in records.items():
            assert np.allclose(stored_vector(snap, pid), embedding_of(encoder, record), atol=1e-5)
        scores, ids = snap.vectors.search(embedding_of(encoder, records[min(records)])[None, :], 1)
        assert ids[0][0] == min(records) and scores[0][0] > 0.999
        _, ids = snap.bm25.search("volcano Iceland", 5)
        assert [records[int(i)].doc_id for i in ids] == ["volcano.txt"]


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def flip_bytes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for offset in range(len(data) // 2, len(data) // 2 + 16):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_vectors_truncated(index_dir: Path, _other: Path) -> None:
    truncate(committed(index_dir)[0])


def damage_vectors_flipped(index_dir: Path, _other: Path) -> None:
    flip_bytes(committed(index_dir)[0])


def damage_vectors_from_another_build(index_dir: Path, other: Path) -> None:
    """Another index folder's (valid) vector file copied over the committed name."""
    shutil.copyfile(committed(other)[0], committed(index_dir)[0])


def damage_bm25_deleted(index_dir: Path, _other: Path) -> None:
    shutil.rmtree(committed(index_dir)[1])


def damage_bm25_truncated(index_dir: Path, _other: Path) -> None:
    folder = committed(index_dir)[1]
    truncate(max(folder.iterdir(), key=lambda p: p.stat().st_size))


def damage_bm25_file_deleted(index_dir: Path, _other: Path) -> None:
    (committed(index_dir)[1] / "passage_ids.npy").unlink()


VECTORS_NOT_COMMITTED = (r"the vector file vectors-\w+\.faiss is not the one committed \(truncated, "
                         r"altered or copied from another build\)")
DAMAGE: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "vectors truncated": (damage_vectors_truncated, VECTORS_NOT_COMMITTED),
    "vectors flipped": (damage_vectors_flipped, VECTORS_NOT_COMMITTED),
    "vectors of another build": (damage_vectors_from_another_build, VECTORS_NOT_COMMITTED),
    "bm25 deleted": (damage_bm25_deleted, r"a file of the committed build is missing"),
    "bm25 truncated": (damage_bm25_truncated, r"the BM25 folder bm25-\w+ is not the one committed"),
    "bm25 file deleted": (damage_bm25_file_deleted, r"the BM25 folder bm25-\w+ is not the one committed"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_file_names_the_repair_command_and_it_works(built, tmp_path, damage, capsys):
    source, index_dir, model = built
    other = tmp_path / "other"
    if damage == "vectors of another build":  # same ids, dimension and model; other texts
        other_source = write_corpus(tmp_path / "other_corpus", {n: f"Another text: {t}" for n, t in DOCS.items()})
        build_index(config(other_source, other, model))
    damage_fn, what = DAMAGE[damage]
    damage_fn(index_dir, other)
    command = f"python -m indexer repair --index {index_dir}"
    message = (rf"The index in {re.escape(str(index_dir))} is damaged: {what} \(build \w+\)\. Its "
               rf"text is safe in SQL; repair it with: {re.escape(command)}")
    if damage.startswith("bm25"):  # searches go on in dense mode, and say why and how to repair
        searcher = Searcher(index_dir)
        result = searcher.search_detailed("bread dough")
        assert result.mode == "dense" and {h.doc_id for h in result.hits} == set(DOCS)
        assert re.match(message + r" Until then it is searched in dense mode instead of hybrid\.$",
                        result.fallback_reason)
        with pytest.raises(IndexUnreadableError, match=message + r" Until then mode 'bm25' cannot run"):
            searcher.search("bread", mode="bm25")
        searcher.close()
    else:
        with pytest.raises(IndexUnreadableError, match=message + "$"):
            Index.open(index_dir)

    assert main(command.split()[3:] + ["--quiet"]) == 0
    out = capsys.readouterr().out
    assert "rebuilt BM25" in out
    assert ("re-embedded 4 passages" in out) == damage.startswith("vectors")
    assert_searchable(index_dir, model)
    assert main(command.split()[3:] + ["--quiet"]) == 0
    assert "nothing to repair" in capsys.readouterr().out
    assert build_index(config(source, index_dir, model)).documents_unchanged == 4


def test_a_build_over_damaged_vectors_refuses_with_the_repair_command(built):
    source, index_dir, model = built
    flip_bytes(committed(index_dir)[0])
    (source / "extra.txt").write_text("A fifth document.")
    with pytest.raises(IndexUnreadableError, match=re.escape(f"repair it with: python -m indexer repair --index {index_dir}")):
        build_index(config(source, index_dir, model))
    repair_index(index_dir, show_progress=False)
    assert build_index(config(source, index_dir, model)).documents_added == 1
    assert len(assert_consistent(index_dir)) == 5


@pytest.mark.parametrize("damage", ["bm25 deleted", "bm25 truncated"])
def test_a_build_over_an_unchanged_source_repairs_bm25_by_itself(built, damage):
    source, index_dir, model = built
    vector_file, _ = committed(index_dir)
    DAMAGE[damage][0](index_dir, index_dir)
    report = build_index(config(source, index_dir, model))
    assert (report.documents_unchanged, report.passages_embedded) == (4, 0)
    assert_searchable(index_dir, model)
    assert sorted(p.name for p in index_dir.glob("bm25-*")) == [committed(index_dir)[1].name]
    assert not vector_file.exists(), "the old build's files are removed once the new one commits"


def test_a_damaged_sqlite_file_says_rebuild_and_rebuild_keeps_it_aside(built):
    source, index_dir, model = built
    store = index_dir / "store.sqlite"
    with open(store, "r+b") as fh:
        fh.write(b"this is not a database header!!!" * 4)
    rebuild = (rf"is damaged: file is not a database\. It holds the passages' text, so rebuild from "
               rf"your source: python -m indexer build --source PATH --index {re.escape(str(index_dir))} "
               r"--rebuild \(the damaged file is kept beside it as store\.sqlite\.damaged-<time>\)\.")
    with pytest.raises(IndexUnreadableError, match=rebuild):
        Index.open(index_dir)
    with pytest.raises(IndexUnreadableError, match=rebuild):
        build_index(config(source, index_dir, model))
    with pytest.raises(IndexUnreadableError, match=rebuild):
        repair_index(index_dir, show_progress=False)

    report = build_index(config(source, index_dir, model, rebuild=True))
    assert report.documents_added == 4
    kept = list(index_dir.glob("store.sqlite.damaged-*"))
    assert [p.name for p in kept if not p.name.startswith("store.sqlite-")] and all(
        re.fullmatch(r"store\.sqlite(-wal|-shm)?\.damaged-\d{8}T\d{6}", p.name) for p in kept)
    assert any(p.read_bytes().startswith(b"this is not a database") for p in kept)
    assert_searchable(index_dir, model)


def test_a_missing_sqlite_file_is_not_recreated_by_a_search_and_the_rebuild_it_names_works(built):
    """Opening an index to search never writes to it: a lost store.sqlite stays lost (an empty
    one would read as an index without rows) and the error names the command that rebuilds it."""
    source, index_dir, model = built
    for part in index_dir.glob("store.sqlite*"):
        part.unlink()
    with pytest.raises(IndexUnreadableError, match=(
            rf"has lost its SQL store \(store\.sqlite\), which holds the passages' text\. Build it again "
            rf"from your source: python -m indexer build --source PATH --index {re.escape(str(index_dir))} "
            r"--rebuild")):
        Index.open(index_dir)
    assert not (index_dir / "store.sqlite").exists(), "the search created the store it could not find"
    build_index(config(source, index_dir, model, rebuild=True))
    assert_searchable(index_dir, model)


def lose_manifest(index_dir: Path) -> None:
    (index_dir / "index.json").unlink()


def garble_manifest(index_dir: Path) -> None:
    (index_dir / "index.json").write_text("{not json")


def truncate_manifest(index_dir: Path) -> None:
    truncate(index_dir / "index.json")


MANIFEST_DAMAGE = {"deleted": (lose_manifest, "no"), "invalid": (garble_manifest, "an unreadable"),
                   "truncated": (truncate_manifest, "an unreadable")}


@pytest.mark.parametrize("damage", list(MANIFEST_DAMAGE))
@pytest.mark.parametrize("command", ["repair", "build", "rebuild"])
def test_a_lost_or_broken_manifest_is_recovered_from_the_database(built, damage, command, capsys):
    """The database records which folder owns it, so index.json can always be written again: the
    error names `repair`, and repair, a build and a --rebuild each recover it and search."""
    source, index_dir, model = built
    with Index.open(index_dir, use_gpu=False) as index:
        index_id = index.manifest.index_id
    damage_fn, what = MANIFEST_DAMAGE[damage]
    damage_fn(index_dir)
    with pytest.raises(IndexUnreadableError, match=(
            rf"The index in {re.escape(str(index_dir))} has {what} index\.json, which names the index and "
            rf"where its rows live\. The database knows its index: write the file again with: "
            rf"python -m indexer repair --index {re.escape(str(index_dir))}$")):
        Index.open(index_dir)
    if command == "repair":
        assert main(["repair", "--index", str(index_dir), "--quiet"]) == 0
        assert "rewrote index.json from the database" in capsys.readouterr().out
    else:
        report = build_index(config(source, index_dir, model, rebuild=command == "rebuild"))
        assert report.total_documents == len(DOCS)
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.manifest.index_id == index_id, "the index keeps its id"
    assert_searchable(index_dir, model)


def test_a_folder_cannot_take_over_another_folders_rows(built, tmp_path):
    """Recovery is for the folder the rows were built in: another folder pointed at the same
    database is refused, and nothing is written into it."""
    source, index_dir, model = built
    intruder = tmp_path / "intruder"
    db = f"sqlite:///{index_dir / 'store.sqlite'}"
    with pytest.raises(IndexMismatchError, match="holds the index of another folder"):
        build_index(config(source, intruder, model, db_url=db))
    assert not (intruder / "index.json").exists()


# --- 5. what a crashed build leaves ------------------------------------------------------------


def test_temp_files_of_a_crashed_build_are_removed_by_the_next(built):
    source, index_dir, model = built
    vector_tmp = index_dir / ".vectors-0123456789ab.faiss.x1y2z3.tmp"
    vector_tmp.write_bytes(b"half a faiss file")
    bm25_tmp = index_dir / ".bm25-0123456789ab.q9w8e7.tmp"
    bm25_tmp.mkdir()
    (bm25_tmp / "passage_ids.npy").write_bytes(b"half")
    orphan = index_dir / "vectors-0123456789ab.faiss"  # written, but its build never committed
    orphan.write_bytes(b"orphan")
    assert build_index(config(source, index_dir, model)).documents_unchanged == 4
    assert not vector_tmp.exists() and not bm25_tmp.exists() and not orphan.exists()
    assert_searchable(index_dir, model)


def test_a_first_build_that_dies_after_its_commit_still_opens(tmp_path, tiny_model, monkeypatch):
    source = write_corpus(tmp_path / "corpus", DOCS)
    index_dir = tmp_path / "idx"

    def die(self, keep):
        raise RuntimeError("killed after the commit")

    monkeypatch.setattr(Index, "_remove_stale_files", die)
    with pytest.raises(RuntimeError, match="killed after the commit"):
        build_index(config(source, index_dir, tiny_model))
    monkeypatch.undo()
    assert_searchable(index_dir, tiny_model)
    assert build_index(config(source, index_dir, tiny_model)).documents_unchanged == 4


def test_a_build_that_dies_before_its_commit_leaves_the_previous_build(built, monkeypatch):
    source, index_dir, model = built
    before = committed(index_dir)
    (source / "volcano.txt").unlink()

    def die(self, *args):
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(WriteTransaction, "_record", die)  # files written, info row not yet
    with pytest.raises(RuntimeError, match="killed before the commit"):
        build_index(config(source, index_dir, model))
    monkeypatch.undo()
    assert committed(index_dir) == before
    assert len(assert_consistent(index_dir)) == 4
    assert build_index(config(source, index_dir, model)).documents_removed == 1


def test_a_load_racing_a_build_that_removes_its_files_retries(built, monkeypatch):
    """A reader that read the info row of build A, then found A's BM25 folder half removed by
    build B's cleanup, loads B instead of calling a healthy index damaged."""
    source, index_dir, model = built
    (source / "glacier.txt").write_text("The glacier retreated a kilometre in a decade.")
    real_digest = integrity.folder_digest
    raced = []

    def racing_digest(path: Path) -> str:
        if not raced:
            raced.append(path)
            build_index(config(source, index_dir, model))  # commits B and removes A's files
            path.mkdir()
            (path / "passage_ids.npy").write_bytes(b"what is left mid-removal")
        return real_digest(path)

    monkeypatch.setattr(integrity, "folder_digest", racing_digest)
    with Index.open(index_dir, use_gpu=False) as index:
        assert raced, "the race ran"
        assert index.snapshot().vectors.ntotal == index.info.passages == 5
        assert index.build_id not in str(raced[0])


def zeroed_page_copies(index_dir: Path, tmp_path: Path, wanted: str):
    """Copies of `index_dir`, one per 4 KiB page of store.sqlite zeroed in turn (past the
    header page), yielding those whose search fails with a message containing `wanted`."""
    pages = (index_dir / "store.sqlite").stat().st_size // 4096
    for page in range(1, pages):
        work = tmp_path / f"page{page}"
        shutil.copytree(index_dir, work)
        with open(work / "store.sqlite", "r+b") as fh:
            fh.seek(page * 4096)
            fh.write(bytes(4096))
        try:
            searcher = Searcher(work)
            try:
                searcher.search("word3 text7", mode="bm25", k=40)
            finally:
                searcher.close()
        except IndexUnreadableError as err:
            if wanted in str(err):
                yield work, str(err)
                continue
        shutil.rmtree(work)


@pytest.fixture()
def paged(tmp_path, tiny_model) -> tuple[Path, Path, str]:
    """(source, index folder, model) of an index whose store.sqlite spans a hundred pages."""
    docs = {f"d{i}.txt": " ".join(f"word{i} text{j}" for j in range(300)) for i in range(40)}
    source = write_corpus(tmp_path / "corpus", docs)
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model))
    return source, index_dir, tiny_model


@pytest.mark.parametrize("wanted", ["is damaged: database disk image is malformed", "metadata cannot be read"])
def test_a_zeroed_page_inside_sqlite_is_repaired_by_the_rebuild_its_error_names(paged, tmp_path, wanted):
    """Damage past the schema (S4): the error says --rebuild, and the --rebuild it names works,
    because the damage check reads every page (PRAGMA quick_check), not the schema alone."""
    source, index_dir, model = paged
    damaged_copy, message = next(zeroed_page_copies(index_dir, tmp_path, wanted))
    assert f"{build_command(damaged_copy)} --rebuild" in message
    build_index(config(source, damaged_copy, model, rebuild=True))
    searcher = Searcher(damaged_copy)
    assert len(searcher.search("word3 text7", mode="bm25", k=40)) == 40
    searcher.close()


def test_a_rebuild_sets_aside_a_sqlite_file_damaged_past_its_schema(paged, tmp_path):
    """The damage check behind --rebuild reads every page (PRAGMA quick_check): a file whose
    schema reads fine but whose rows are damaged starts afresh, and the damaged one is kept."""
    from indexer.store import sql_store

    _, index_dir, _ = paged
    work, _ = next(zeroed_page_copies(index_dir, tmp_path, "malformed"))
    store = work / "store.sqlite"
    engine = sql_store.make_engine(sql_store.default_db_url(work))
    with engine.connect() as conn:
        assert sql_store.schema_state(conn) == "current", "the schema alone looks fine"
    engine.dispose()
    sql_store.set_aside_if_damaged(sql_store.default_db_url(work), store)
    assert not store.exists() and list(work.glob("store.sqlite.damaged-*"))


# --- stored text carries a checksum --------------------------------------------------------------


def alter_sql(index_dir: Path, statement: str) -> None:
    import sqlite3

    with sqlite3.connect(index_dir / "store.sqlite") as conn:
        changed = conn.execute(statement).rowcount
        assert changed >= 1 or statement.startswith("ALTER"), statement


def volcano_search(index_dir: Path) -> list:
    searcher = Searcher(index_dir)
    try:
        return searcher.search("volcano Iceland", mode="bm25", k=1)
    finally:
        searcher.close()


ALTERED = r"holds altered text: passage \d+ of 'volcano\.txt' no longer matches the checksum written with it"


@pytest.mark.parametrize("where", ["passage", "passage and document", "title"])
def test_altered_text_is_refused_and_repair_restores_it(built, where, capsys):
    """One changed word inside the database is never served as the document's text: the read
    checks it, names the passage and the repair, and repair restores it (from the document's stored
    text, or from the source file when that was altered too)."""
    source, index_dir, model = built
    if where == "title":
        alter_sql(index_dir, "UPDATE semsearch_documents SET title = 'Volcanoes' WHERE doc_key = 'volcano.txt'")
    else:
        alter_sql(index_dir, "UPDATE semsearch_passages SET text = replace(text, 'Lava', 'Mud')")
    if where == "passage and document":
        alter_sql(index_dir, "UPDATE semsearch_documents SET text = replace(text, 'Lava', 'Mud')")
    with pytest.raises(IndexUnreadableError, match=ALTERED + r"\. Repair restores it .*python -m indexer repair"):
        volcano_search(index_dir)
    assert main(["repair", "--index", str(index_dir), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "altered text in 1 passage(s)" in out and "restored the text of 1 document(s) ('volcano.txt')" in out
    [hit] = volcano_search(index_dir)
    assert hit.text.startswith("Lava and ash") and hit.title == "volcano"
    assert_searchable(index_dir, model)


def test_altered_text_without_a_trustworthy_copy_is_reported_lost(built, capsys):
    source, index_dir, model = built
    alter_sql(index_dir, "UPDATE semsearch_passages SET text = replace(text, 'Lava', 'Mud')")
    alter_sql(index_dir, "UPDATE semsearch_documents SET text = replace(text, 'Lava', 'Mud')")
    (source / "volcano.txt").write_text("Another text now.")
    assert main(["repair", "--index", str(index_dir), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "The text of 1 document(s) could not be restored" in out and "'volcano.txt'" in out
    assert "--rebuild" in out
    build_index(config(source, index_dir, model, rebuild=True))
    assert volcano_search(index_dir)[0].text == "Another text now."


def test_an_index_from_before_checksums_searches_and_repair_adds_them(built, capsys):
    source, index_dir, model = built
    alter_sql(index_dir, "ALTER TABLE semsearch_passages DROP COLUMN text_hash")
    assert volcano_search(index_dir)[0].doc_id == "volcano.txt", "no checksums: nothing to check"
    assert main(["repair", "--index", str(index_dir), "--quiet"]) == 0
    capsys.readouterr()
    alter_sql(index_dir, "UPDATE semsearch_passages SET text = replace(text, 'Lava', 'Mud')")
    with pytest.raises(IndexUnreadableError, match=ALTERED):
        volcano_search(index_dir)


# --- a --rebuild is one commit; a growing build says how far it has got --------------------------


def many_docs(count: int) -> dict[str, str]:
    return {f"doc{i:03d}.txt": f"Document {i} is about " + " ".join(f"topic{i}-{j}" for j in range(30))
            for i in range(count)}


def test_a_rebuild_is_served_whole_until_it_commits_once(tmp_path, tiny_model, monkeypatch):
    """Readers of an index being rebuilt see the previous build, all of it, until the rebuild
    lands in one commit; chunked commits are for growing an index."""
    source = write_corpus(tmp_path / "corpus", many_docs(60))
    index_dir = tmp_path / "idx"
    first = build_index(config(source, index_dir, tiny_model, commit_passages=16))
    assert first.commits > 1, "a first build commits in chunks"
    before = Index.open(index_dir, use_gpu=False)
    build_id = before.build_id
    seen = []
    commit = WriteTransaction.commit

    def watched(self, *args, **kwargs):
        with Index.open(index_dir, use_gpu=False) as reader:  # another connection, as a server has
            seen.append((reader.build_id, reader.stats().documents, len(reader.snapshot().vectors.ids())))
        return commit(self, *args, **kwargs)

    monkeypatch.setattr(WriteTransaction, "commit", watched)
    report = build_index(config(source, index_dir, tiny_model, rebuild=True, commit_passages=16))
    assert report.commits == 1 and report.documents_added == 60
    assert seen == [(build_id, 60, first.total_passages)], "readers saw the previous build, whole"
    assert before.refresh() and before.stats().documents == 60 and before.build_id != build_id
    before.close()


def test_a_rebuild_that_fails_midway_leaves_the_previous_build_served(tmp_path, tiny_model, monkeypatch):
    source = write_corpus(tmp_path / "corpus", many_docs(40))
    index_dir = tmp_path / "idx"
    build_index(config(source, index_dir, tiny_model, commit_passages=16))
    with Index.open(index_dir, use_gpu=False) as index:
        build_id = index.build_id

    commit = WriteTransaction.commit

    def dies_past_16_passages(self, plan, origin, passages, *rest):
        # Chunk by chunk, the first 16 passages would have landed before this.
        if sum(map(len, passages)) > 16:
            raise RuntimeError("killed while embedding")
        return commit(self, plan, origin, passages, *rest)

    monkeypatch.setattr(WriteTransaction, "commit", dies_past_16_passages)
    with pytest.raises(RuntimeError, match="killed while embedding"):
        build_index(config(source, index_dir, tiny_model, rebuild=True, commit_passages=16))
    monkeypatch.undo()
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.build_id == build_id and index.stats().documents == 40
        assert len({r.doc_id for r in index.passages(index.snapshot().vectors.ids()).values()}) == 40
    assert_consistent(index_dir)


def test_a_rebuild_without_room_for_two_generations_is_refused_before_writing(built, monkeypatch):
    import indexer.index

    source, index_dir, model = built
    with Index.open(index_dir, use_gpu=False) as index:
        build_id = index.build_id
    monkeypatch.setattr(indexer.index, "free_bytes", lambda path: 1000)
    with pytest.raises(NotEnoughSpaceError, match=r"needs about \d+ MB free where .* and 0 MB are\. Free some space"):
        build_index(config(source, index_dir, model, rebuild=True))
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.build_id == build_id


def test_a_build_growing_the_index_says_how_far_it_has_got(tmp_path, tiny_model, monkeypatch):
    source = write_corpus(tmp_path / "corpus", many_docs(60))
    index_dir = tmp_path / "idx"
    progress = []
    commit = WriteTransaction.commit

    def watched(self, *args, **kwargs):
        result = commit(self, *args, **kwargs)
        with Index.create(index_dir) as reader:
            progress.append(reader.build_progress())
        return result

    monkeypatch.setattr(WriteTransaction, "commit", watched)
    build_index(config(source, index_dir, tiny_model, commit_passages=16))
    with Index.open(index_dir, use_gpu=False) as index:
        assert index.build_progress() is None, "no build runs now"
        total = index.stats().passages
    assert progress[0] is None, "nothing said before the first commit"
    running = [p for p in progress if p is not None]
    # The total is counted as documents are cut, estimated before: it settles on the real one.
    assert running and all(0 < done < whole for done, whole in running) and running[-1][1] == total, progress
    assert [done for done, _ in running] == sorted(done for done, _ in running)
