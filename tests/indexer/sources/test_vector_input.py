"""Reading and checking vectors computed elsewhere (indexer/sources/vector_input.py); no torch needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from indexer.errors import BadInputError
from indexer.model_spec import ModelSpec
from indexer.sources import vector_input
from indexer.sources.vector_input import load_vectors, model_dimension

DIM = 8
IDS = ["a", "b", "c", "d", "e"]
FORMATS = ["parquet", "npy", "npz", "jsonl"]


def fake_model(folder: Path, dim: int = DIM, pooling: dict | None = None, extra: list | None = None) -> str:
    """A sentence-transformers folder as `SentenceTransformer.save` lays it out, without weights:
    enough for `model_dimension`, the fingerprint and an ingest (which never loads the model)."""
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"hidden_size": dim, "model_type": "bert"}))
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps(pooling or {"embedding_dimension": dim, "pooling_mode": "mean"}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
        *(extra or []),
        {"idx": 9, "name": "9", "path": "9_Normalize", "type": "sentence_transformers.base.modules.normalize.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    return str(folder)


def unit_rows(n: int, dim: int = DIM, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def write_vectors(path: Path, ids: list, rows) -> Path:
    """`rows` in the format `path`'s suffix names; a list of rows may be ragged (parquet, jsonl)."""
    suffix = path.suffix
    if suffix == ".parquet":
        lists = [np.asarray(r, dtype=np.float32).tolist() for r in rows]
        pq.write_table(pa.table({"id": ids, "embedding": pa.array(lists, type=pa.list_(pa.float32()))}), path)
    elif suffix == ".npy":
        np.save(path, np.asarray(rows))
        path.with_name(path.stem + ".ids.txt").write_text("".join(f"{i}\n" for i in ids))
    elif suffix == ".npz":
        np.savez(path, ids=np.array([str(i) for i in ids]), embeddings=np.asarray(rows))
    else:
        with open(path, "w") as fh:
            for doc_id, row in zip(ids, rows, strict=True):
                fh.write(json.dumps({"id": doc_id, "embedding": np.asarray(row, dtype=float).tolist()}) + "\n")
    return path


# --- the model's dimension ------------------------------------------------------------------------


def test_model_dimension_reads_the_folder_as_sentence_transformers_would(tmp_path):
    assert model_dimension(ModelSpec.resolve(None)) == 384  # all-MiniLM-L6-v2: legacy pooling keys
    assert model_dimension(ModelSpec.resolve(fake_model(tmp_path / "plain"))) == DIM
    legacy_two_modes = {"word_embedding_dimension": 8, "pooling_mode_cls_token": True,
                        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False}
    assert model_dimension(ModelSpec.resolve(fake_model(tmp_path / "two", pooling=legacy_two_modes))) == 16
    dense = tmp_path / "dense"
    fake_model(dense, extra=[{"idx": 2, "name": "2", "path": "2_Dense",
                              "type": "sentence_transformers.base.modules.dense.Dense"}])
    (dense / "2_Dense").mkdir()
    (dense / "2_Dense" / "config.json").write_text(json.dumps({"in_features": 8, "out_features": 4}))
    assert model_dimension(ModelSpec.resolve(str(dense))) == 4
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps({"hidden_size": 12}))
    assert model_dimension(ModelSpec.resolve(str(bare))) == 12


def test_model_dimension_refuses_a_module_it_cannot_read(tmp_path):
    odd = fake_model(tmp_path / "odd", extra=[{"idx": 2, "name": "2", "path": "2_X", "type": "my.Projection"}])
    with pytest.raises(ValueError, match=r"module 2 \(my.Projection\) is not one this reader knows"):
        model_dimension(ModelSpec.resolve(odd))


# --- formats -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_format_round_trips_in_blocks(fmt, tmp_path, monkeypatch):
    monkeypatch.setattr(vector_input, "BLOCK_ROWS", 2)  # several blocks, and a short last one
    rows = unit_rows(len(IDS))
    path = write_vectors(tmp_path / f"vecs.{fmt}", IDS, rows)
    table = load_vectors(path, DIM, model="m", known_ids=set(IDS))
    assert table.ids == IDS and table.vectors.dtype == np.float32 and table.vectors.shape == (5, DIM)
    np.testing.assert_allclose(table.vectors, rows, atol=1e-6)
    np.testing.assert_allclose(table.take(["e", "a"]), rows[[4, 0]], atol=1e-6)
    assert "c" in table and "z" not in table and table.rescaled == 0


@pytest.mark.parametrize("fmt", ["parquet", "npy", "npz"])  # the formats that know their row count
def test_a_table_over_the_spill_size_waits_in_a_deleted_file(fmt, tmp_path, monkeypatch):
    monkeypatch.setattr(vector_input, "SPILL_BYTES", 4 * DIM)  # more than one vector: spilled
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    rows = unit_rows(len(IDS))
    table = load_vectors(write_vectors(tmp_path / f"vecs.{fmt}", IDS, rows), DIM, model="m")
    assert isinstance(table.vectors, vector_input.SpilledRows)
    np.testing.assert_allclose(np.asarray(table.vectors), rows, atol=1e-6)
    taken = table.take(["e", "b", "c", "d"])  # read only when sliced, in the order asked
    assert isinstance(taken, vector_input.TakenRows) and taken.shape == (4, DIM)
    np.testing.assert_allclose(taken[1:3], rows[[1, 2]], atol=1e-6)
    np.testing.assert_allclose(np.asarray(taken), rows[[4, 1, 2, 3]], atol=1e-6)
    assert list((tmp_path / "tmp").iterdir()) == []  # unlinked at once: nothing left behind


def test_a_unit_float32_npy_over_the_spill_size_is_read_where_it_lies(tmp_path, monkeypatch):
    """No copy of a large .npy whose rows are unit already; one row off by more than
    IN_PLACE_TOLERANCE (within UNIT_TOLERANCE) makes it a unit copy after all, rows before it included."""
    monkeypatch.setattr(vector_input, "SPILL_BYTES", 4 * DIM)
    monkeypatch.setattr(vector_input, "BLOCK_ROWS", 2)
    rows = unit_rows(len(IDS))
    path = write_vectors(tmp_path / "vecs.npy", IDS, rows)
    table = load_vectors(path, DIM, model="m")
    assert isinstance(table.vectors, vector_input.SpilledRows) and table.vectors.path == path
    assert np.array_equal(np.asarray(table.vectors), rows)
    assert np.array_equal(np.asarray(table.take(["e", "a"])), rows[[4, 0]])
    with pytest.raises(ValueError, match="read in place"):
        table.vectors[0:1] = rows[:1]
    nearly = rows.copy()
    nearly[3] *= 1 + 5e-4  # row 4 of 5, in the second block: the first two rows were checked already
    table = load_vectors(write_vectors(tmp_path / "near.npy", IDS, nearly), DIM, model="m")
    assert table.vectors.path is None and table.rescaled == 0
    np.testing.assert_allclose(np.asarray(table.vectors), rows, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(table.vectors), axis=1), 1.0, atol=1e-6)


def test_integer_ids_and_float64_or_float16_values_are_accepted(tmp_path):
    rows = unit_rows(3)
    np.save(tmp_path / "v.npy", rows.astype(np.float16))
    (tmp_path / "v.ids.txt").write_text("1\n2\n3\n")
    assert load_vectors(tmp_path / "v.npy", DIM, model="m").ids == ["1", "2", "3"]
    lines = [json.dumps({"_id": i, "title": "t", "text": "x", "embedding": r.tolist()})
             for i, r in zip([7, 8, 9], rows.astype(np.float64), strict=True)]
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n\n")
    table = load_vectors(tmp_path / "v.jsonl", DIM, model="m")
    assert table.ids == ["7", "8", "9"]
    np.testing.assert_allclose(table.vectors, rows, atol=1e-6)


# --- errors: each names the file, the row and the id --------------------------------------------


def bad_rows(problem: str, fmt: str) -> tuple[list[str], object, str]:
    """(ids, rows, what the message must say) for a file whose row 3 (id 'c') is bad."""
    ids, rows = list(IDS), unit_rows(len(IDS))
    where = ("line" if fmt == "jsonl" else "row") + r" 3 \(id 'c'\)"
    if problem == "nan":
        rows[2, 0] = np.nan
        return ids, rows, where + ": the vector holds NaN or an infinite value"
    if problem == "inf":
        rows[2, 1] = np.inf
        return ids, rows, where + ": the vector holds NaN or an infinite value"
    if problem == "zero":
        rows[2] = 0
        return ids, rows, where + ": the vector is all zeros"
    if problem == "not unit":
        rows[2] *= 2
        return ids, rows, where + r": the vector's norm is 2, not 1 .*--normalize-embeddings"
    if problem == "duplicate":
        ids[2] = "a"
        return ids, rows, where.replace("'c'", "'a'") + r": this id already has a vector \((row|line) 1\)"
    if problem == "unknown":
        ids[2] = "zzz"
        return ids, rows, where.replace("'c'", "'zzz'") + r": unknown id: no document of .* has it"
    assert problem == "dimension"
    if fmt in ("npy", "npz"):  # a matrix has one width: named at its first row
        return ids, unit_rows(len(IDS), DIM - 1), (
            r"row 1 \(id 'a'\): the vector has 7 values, but model m makes vectors of 8")
    ragged = [list(r) for r in rows]
    ragged[2] = ragged[2][:-1]
    return ids, ragged, where + ": the vector has 7 values, but model m makes vectors of 8"


PROBLEMS = ["dimension", "nan", "inf", "zero", "duplicate", "unknown", "not unit"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("problem", PROBLEMS)
def test_a_bad_row_is_named_by_file_row_and_id(problem, fmt, tmp_path):
    ids, rows, message = bad_rows(problem, fmt)
    path = write_vectors(tmp_path / f"vecs.{fmt}", ids, rows)
    with pytest.raises(BadInputError, match=f"vecs.{fmt}, {message}"):
        load_vectors(path, DIM, model="m", known_ids=set(IDS))


def test_normalize_scales_every_vector_and_a_near_unit_one_passes_without_it(tmp_path):
    rows = unit_rows(len(IDS))
    path = write_vectors(tmp_path / "v.npz", IDS, rows * np.arange(1, 6, dtype=np.float32)[:, None])
    table = load_vectors(path, DIM, model="m", normalize=True)
    np.testing.assert_allclose(table.vectors, rows, atol=1e-6)
    assert table.rescaled == 4  # the first row was unit already
    near = write_vectors(tmp_path / "near.npz", IDS, rows * np.float32(1 + 5e-4))
    np.testing.assert_allclose(np.linalg.norm(load_vectors(near, DIM, model="m").vectors, axis=1), 1, atol=1e-6)


def test_format_problems_say_how_to_write_the_file(tmp_path):
    np.save(tmp_path / "v.npy", unit_rows(3))
    with pytest.raises(BadInputError, match=r"needs its ids in .*v\.ids\.txt: one document id per line"):
        load_vectors(tmp_path / "v.npy", DIM, model="m")
    (tmp_path / "v.ids.txt").write_text("a\nb\n")
    with pytest.raises(BadInputError, match=r"has 3 rows but .*v\.ids\.txt has 2 ids"):
        load_vectors(tmp_path / "v.npy", DIM, model="m")
    pq.write_table(pa.table({"doc": ["a"], "embedding": [[0.0] * DIM]}), tmp_path / "v.parquet")
    with pytest.raises(BadInputError, match=r"has columns \['doc', 'embedding'\]; it needs 'id' and 'embedding'"):
        load_vectors(tmp_path / "v.parquet", DIM, model="m")
    (tmp_path / "v.jsonl").write_text('{"id": "a", "embedding": [1, 0]\n')
    with pytest.raises(BadInputError, match=r"v\.jsonl, line 1: malformed JSON"):
        load_vectors(tmp_path / "v.jsonl", DIM, model="m")
    (tmp_path / "w.jsonl").write_text('{"id": "a", "text": "no vector"}\n')
    with pytest.raises(BadInputError, match=r"w\.jsonl, line 1 \(id 'a'\): no 'embedding' list of numbers"):
        load_vectors(tmp_path / "w.jsonl", DIM, model="m")
    (tmp_path / "v.csv").write_text("id,embedding\n")
    with pytest.raises(BadInputError, match=r"unknown embeddings format '\.csv'. Valid: \.parquet, \.npy"):
        load_vectors(tmp_path / "v.csv", DIM, model="m")
    np.savez(tmp_path / "v.npz", keys=np.array(["a"]), embeddings=unit_rows(1))
    with pytest.raises(BadInputError, match=r"holds arrays \['embeddings', 'keys'\], not 'ids' and 'embeddings'"):
        load_vectors(tmp_path / "v.npz", DIM, model="m")
    with pytest.raises(FileNotFoundError, match="Embeddings file .*gone.npz not found"):
        load_vectors(tmp_path / "gone.npz", DIM, model="m")


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_a_npy_matrix_is_read_in_blocks_with_file_reads_not_a_memory_map(tmp_path, monkeypatch, order, dtype):
    """A C-order .npy is read with plain reads (`FileRows`), block by block, and gives exactly what
    the memory map gave; a Fortran-order one still goes through the map."""
    monkeypatch.setattr(vector_input, "BLOCK_ROWS", 3)  # blocks that end mid-file
    seen: list[type] = []
    real_matrix = vector_input._matrix

    def spy(path, ids, matrix, *args):
        seen.append(type(matrix))
        return real_matrix(path, ids, matrix, *args)

    monkeypatch.setattr(vector_input, "_matrix", spy)
    rows = unit_rows(11).astype(dtype)
    path = tmp_path / "v.npy"
    np.save(path, np.asfortranarray(rows) if order == "F" else rows)
    path.with_name("v.ids.txt").write_text("".join(f"id{i}\n" for i in range(11)))
    kind, count, blocks = vector_input._npy(path, DIM, "m")
    got = list(blocks)
    assert count == 11 and [len(b.ids) for b in got] == [3, 3, 3, 2]
    np.testing.assert_array_equal(np.concatenate([b.vectors for b in got]), rows.astype(np.float32))
    table = load_vectors(path, DIM, model="m", normalize=True)
    np.testing.assert_allclose(np.asarray(table.take(["id4", "id0"])), unit_rows(11)[[4, 0]], atol=2e-3)
    assert seen == [vector_input.FileRows if order == "C" else np.memmap] * 2


def test_a_truncated_npy_is_refused_with_its_name(tmp_path):
    path = write_vectors(tmp_path / "v.npy", IDS, unit_rows(5))
    path.write_bytes(path.read_bytes()[:-DIM * 4])  # the last row cut off
    with pytest.raises(BadInputError, match=r"v\.npy"):
        load_vectors(path, DIM, model="m")
