"""Vectors computed elsewhere (a GPU box, a cluster): reading them, checking them, and the model's
dimension read from its folder, so that this machine never loads torch to ingest them.

One vector per document, in one of these files:

    .parquet   columns `id` (string or integer) and `embedding` (a list of floats)
    .npy       an (n, dim) float matrix; the ids, one per line, in `<same stem>.ids.txt` beside it
    .npz       arrays `ids` (n,) and `embeddings` (n, dim)
    .jsonl     one object a line with `id` (or `_id`, as the readers take it) and `embedding`,
               so a source .jsonl may carry its own vectors (.jsonl.gz too)

Everything is checked before an index is touched, and each problem is a `BadInputError` that names
the file, the row (1-based; a .jsonl's line) and the id, and says how to fix it: a vector of
another length than the model's, NaN or infinite values, an all-zero vector, an id given twice, an
id that is not a document of the source, and a vector that is not unit length. The index stores
unit vectors (inner product is cosine): a norm within `UNIT_TOLERANCE` of 1 is scaled to exactly 1;
a larger miss is refused unless `normalize` asks to scale every vector.

Files are read in blocks of `BLOCK_ROWS` rows into float32 arrays (a .npy through a memory map,
a parquet list column flattened to numpy), never into Python lists of floats.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import tempfile
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.errors import BadInputError
from indexer.model_spec import ModelSpec

VECTOR_SUFFIXES = (".parquet", ".npy", ".npz", ".jsonl")
IDS_SUFFIX = ".ids.txt"
UNIT_TOLERANCE = 1e-3
BLOCK_ROWS = 8192
# Checked vectors over this many bytes wait in a temporary file (`SpilledRows`), not in memory: 1M
# vectors of 384 floats are 1.5 GB (issue 31: an ingest's memory bounded by its window).
SPILL_BYTES = 256 * 2**20
# A float32 .npy over SPILL_BYTES whose every row is this close to unit length is read where it lies
# instead of being copied to a temporary file: at 10M x 384 the copy was 15 GB of disk and writes.
IN_PLACE_TOLERANCE = 1e-5
# How many of the source's ids the unknown-id error shows, so the user sees what ids look like.
IDS_SHOWN = 3
# Sentence-transformers modules that pass the dimension through unchanged.
_SAME_DIMENSION_MODULES = ("Normalize", "Dropout", "WordWeights")
# The config key that holds the output dimension of a module that sets one.
_DIMENSION_KEYS = {"Dense": "out_features", "LayerNorm": "dimension"}
_HIDDEN_KEYS = ("hidden_size", "d_model", "dim", "n_embd")


# --- the model's dimension, from its files ------------------------------------------------------


def model_dimension(spec: ModelSpec) -> int:
    """The length of the vectors `spec`'s model makes, read from its folder without loading it.

    Follows `SentenceTransformer.get_embedding_dimension`: the last module of `modules.json`
    that sets a dimension (Dense's `out_features`, Pooling's dimension times its modes, the
    Transformer's `hidden_size`); a folder without `modules.json` is a bare transformer, which
    sentence-transformers mean-pools.
    """
    folder = spec.path
    modules_file = folder / "modules.json"
    if not modules_file.is_file():
        return _hidden_size(folder / "config.json", spec)
    modules = _json_file(modules_file, spec)
    if not isinstance(modules, list) or not modules:
        raise ValueError(f"{modules_file} lists no modules; pass a SentenceTransformer folder to --model.")
    for module in reversed(modules):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        config_file = folder / str(module.get("path", "")) / "config.json"
        if kind in _SAME_DIMENSION_MODULES:
            continue
        if kind == "Transformer":
            return _hidden_size(config_file, spec)
        config = _json_file(config_file, spec) if kind in ("Pooling", *_DIMENSION_KEYS) else {}
        width = config.get(_DIMENSION_KEYS.get(kind, ""))
        if kind == "Pooling":
            width = config.get("embedding_dimension", config.get("word_embedding_dimension"))
            modes = config.get("pooling_mode")
            if modes is None:  # before sentence-transformers 6: one pooling_mode_<mode> flag each
                modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v] or ["mean"]
            width = width * (1 if isinstance(modes, str) else len(modes)) if isinstance(width, int) else None
        if isinstance(width, int):
            return width
        raise ValueError(
            f"Cannot tell the embedding dimension of the model in {folder} from its files: its "
            f"module {module.get('name', '?')} ({module.get('type')}) is not one this reader knows "
            "(Transformer, Pooling, Dense, LayerNorm, Normalize). Build the index with embeddings "
            "computed here instead (leave out --embeddings)."
        )
    raise ValueError(f"No module in {modules_file} sets the embedding dimension; pass a SentenceTransformer folder.")


def _json_file(path: Path, spec: ModelSpec) -> dict | list:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise FileNotFoundError(
            f"{path} is missing, so the dimension of model {spec.label} is unknown. Pass the full "
            "SentenceTransformer folder to --model (as `SentenceTransformer.save` writes it)."
        ) from err
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON ({err}); restore the model folder's files.") from err


def _hidden_size(path: Path, spec: ModelSpec) -> int:
    config = _json_file(path, spec)
    for key in _HIDDEN_KEYS:
        if isinstance(config.get(key), int):
            return int(config[key])
    raise ValueError(
        f"{path} names no hidden size ({', '.join(_HIDDEN_KEYS)}), so the dimension of model "
        f"{spec.label} is unknown; pass a SentenceTransformer folder to --model."
    )


# --- the validated vectors ----------------------------------------------------------------------


class SpilledRows:
    """A (count, dim) float32 matrix in a temporary file (unlinked at once, so it goes with the
    process), written and read with plain file I/O rather than a memory map: the pages a build
    reads stay in the kernel's page cache, which it may drop, instead of counting in the build's
    own memory as a map's pages do once touched. `in_file` reads the rows of an existing file
    instead (a .npy's data, from its header's end), read-only.

    `rows[a:b]` and `rows[[i, j, ...]]` read those rows into a new array; `rows[a:b] = block` writes."""

    def __init__(self, count: int, dimension: int) -> None:
        self._file = tempfile.TemporaryFile(prefix="semsearch-vectors-")  # noqa: SIM115 -- lives with the rows
        self._file.truncate(count * dimension * 4)
        self.shape = (count, dimension)
        self.dtype = np.dtype(np.float32)
        self._row_bytes = dimension * 4
        self._offset = 0
        self.path: Path | None = None  # the file read in place, if any

    @classmethod
    def in_file(cls, path: Path, count: int, dimension: int, offset: int) -> SpilledRows:
        """The float32 rows stored in `path` from byte `offset` on, read in place."""
        rows = cls.__new__(cls)
        rows._file = path.open("rb")  # noqa: SIM115 -- lives with the rows
        rows.shape, rows.dtype, rows._row_bytes = (count, dimension), np.dtype(np.float32), dimension * 4
        rows._offset, rows.path = offset, path
        return rows

    def __len__(self) -> int:
        return self.shape[0]

    def __setitem__(self, rows: slice, block: np.ndarray) -> None:
        if self.path is not None:
            raise ValueError(f"the vectors of {self.path} are read in place, not written")
        start = rows.indices(self.shape[0])[0]
        data = np.ascontiguousarray(block, dtype=np.float32).tobytes()
        os.pwrite(self._file.fileno(), data, start * self._row_bytes)

    def __getitem__(self, rows: slice | Collection[int] | np.ndarray) -> np.ndarray:
        if isinstance(rows, slice):
            start, stop, step = rows.indices(self.shape[0])
            if step == 1:
                return self._read_into(np.empty((max(stop - start, 0), self.shape[1]), np.float32), start)
            rows = np.arange(start, stop, step)
        numbers = np.asarray(rows, dtype=np.int64).reshape(-1)
        out = np.empty((len(numbers), self.shape[1]), dtype=np.float32)
        if len(numbers) and numbers[-1] - numbers[0] == len(numbers) - 1 and np.all(np.diff(numbers) == 1):
            return self._read_into(out, int(numbers[0]))  # rows in file order: one read, no copy
        order = np.argsort(numbers, kind="stable")
        ordered = numbers[order]
        # Runs of consecutive rows are read at once.
        breaks = np.flatnonzero(np.diff(ordered) != 1) + 1
        for run_start, run_stop in zip(np.r_[0, breaks], np.r_[breaks, len(ordered)], strict=True):
            run = self._read_into(np.empty((run_stop - run_start, self.shape[1]), np.float32), int(ordered[run_start]))
            out[order[run_start:run_stop]] = run
        return out

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        whole = self[0 : self.shape[0]]
        return whole if dtype is None else whole.astype(dtype)

    def _read_into(self, out: np.ndarray, start: int) -> np.ndarray:
        """Fill `out` (rows, dim) with the rows from `start` on; `out`."""
        if not 0 <= start <= start + len(out) <= self.shape[0]:
            raise IndexError(f"rows {start}..{start + len(out)} of a matrix of {self.shape[0]}")
        view, at = memoryview(out).cast("B"), self._offset + start * self._row_bytes
        while len(view):
            read = os.preadv(self._file.fileno(), [view], at)
            if read <= 0:
                raise OSError(f"the vector file {self.path or '(temporary)'} ended at byte {at}: it changed "
                              "during the build; run the build again")
            view, at = view[read:], at + read
        return out


@dataclass(frozen=True)
class TakenRows:
    """Some rows of a `SpilledRows`, in a given order, read only when sliced: what a commit of many
    ingested vectors hands the index, which reads them a block at a time."""

    source: SpilledRows
    numbers: np.ndarray  # int64 row numbers

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.numbers), self.source.shape[1])

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.source[self.numbers[rows]]

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        whole = self.source[self.numbers]
        return whole if dtype is None else whole.astype(dtype)


@dataclass(frozen=True)
class VectorTable:
    """A file's vectors, checked: unit float32 rows (n, dim) and the document id of each row."""

    path: Path
    ids: list[str]
    vectors: np.ndarray | SpilledRows  # (n, dim) float32, each row of norm 1
    rescaled: int = 0  # rows that `normalize` scaled from a norm off by more than UNIT_TOLERANCE

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1])

    @functools.cached_property
    def _rows(self) -> dict[str, int]:
        return {doc_id: row for row, doc_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._rows

    def take(self, doc_ids: Collection[str]) -> np.ndarray | TakenRows:
        """The vectors of `doc_ids`, in their order: (len(doc_ids), dim) float32; rows of a spilled
        table come as `TakenRows`, read when sliced."""
        numbers = np.fromiter((self._rows[d] for d in doc_ids), dtype=np.int64, count=len(doc_ids))
        if isinstance(self.vectors, SpilledRows):
            return TakenRows(self.vectors, numbers)
        return self.vectors[numbers]


@dataclass(frozen=True)
class _Block:
    """Rows of a file as read: their ids, their vectors, and the numbers a message shows."""

    ids: list[str]
    vectors: np.ndarray  # (b, dim) float32
    rows: list[int]  # 1-based row (a .jsonl's line) of each vector


def _where(path: Path, kind: str, row: int, doc_id: str | None) -> str:
    return f"{path}, {kind} {row}" + (f" (id {doc_id!r})" if doc_id is not None else "")


def _wrong_length(path: Path, kind: str, row: int, doc_id: str | None, got: int, dimension: int,
                  model: str) -> BadInputError:
    return BadInputError(
        f"{_where(path, kind, row, doc_id)}: the vector has {got} values, but model {model} makes "
        f"vectors of {dimension}. Pass to --model the model that made these vectors, or encode them "
        "again with the model you pass."
    )


def load_vectors(
    path: Path | str,
    dimension: int,
    *,
    model: str,
    known_ids: Collection[str] | None = None,
    source: str = "the source",
    normalize: bool = False,
) -> VectorTable:
    """Read `path` (its format by suffix) and `validate` it; see the module docstring for the rules.

    `model` names the model in messages; `known_ids` are the source's document ids (None: any id).
    """
    path = Path(path)
    kind, count, blocks = _open(path, dimension, model)
    return validate(path, blocks, dimension, kind=kind, count=count, known_ids=known_ids,
                    source=source, normalize=normalize, in_place=_rows_in_place(path, count, dimension))


def _rows_in_place(path: Path, count: int | None, dimension: int) -> SpilledRows | None:
    """A float32 .npy that would be spilled, as rows read where they lie (`validate` decides)."""
    if path.suffix.lower() != ".npy" or count is None or count * dimension * 4 <= SPILL_BYTES:
        return None
    matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    if not (isinstance(matrix, np.memmap) and matrix.dtype == np.dtype("<f4") and matrix.flags.c_contiguous
            and matrix.shape == (count, dimension)):
        return None
    return SpilledRows.in_file(path, count, dimension, int(matrix.offset))


def _open(path: Path, dimension: int, model: str) -> tuple[str, int | None, Iterator[_Block]]:
    """(what a message calls a row, the row count if the format knows it, the blocks)."""
    if not path.is_file():
        raise FileNotFoundError(f"Embeddings file {path} not found. Pass a .parquet, .npy (with "
                                f"{IDS_SUFFIX}), .npz or .jsonl file to --embeddings.")
    suffix = Path(path.name.lower().removesuffix(".gz")).suffix
    readers = {".parquet": _parquet, ".npy": _npy, ".npz": _npz, ".jsonl": _jsonl}
    if suffix in readers:
        return readers[suffix](path, dimension, model)
    raise BadInputError(
        f"{path}: unknown embeddings format {suffix or '(no suffix)'!r}. Valid: "
        f"{', '.join(VECTOR_SUFFIXES)} (see `python -m indexer build --help`)."
    )


def validate(
    path: Path,
    blocks: Iterator[_Block],
    dimension: int,
    *,
    kind: str = "row",
    count: int | None = None,
    known_ids: Collection[str] | None = None,
    source: str = "the source",
    normalize: bool = False,
    in_place: SpilledRows | None = None,
) -> VectorTable:
    """Check every block and gather them into one unit float32 matrix keyed by id.

    With `count`, rows go straight into a preallocated matrix, so memory holds the file's vectors
    once (plus one block); a matrix over `SPILL_BYTES` waits in a temporary file (under $TMPDIR,
    deleted with it: `SpilledRows`), so a build holds the rows it reads, not the file. With
    `in_place` (the same rows, as `blocks` gives them, in their file), nothing is copied when every
    row is within `IN_PLACE_TOLERANCE` of unit length; otherwise the unit rows are gathered after all.
    """
    ids: list[str] = []
    first_row: dict[str, int] = {}
    out = _matrix_for(count, dimension) if count is not None and in_place is None else None
    parts: list[np.ndarray] = []
    rescaled = 0
    for block in blocks:
        # Vectors first: the reader skips a source .jsonl record whose vector holds NaN (unknown id).
        unit, off = _unit(path, kind, block, normalize)
        rescaled += off
        if in_place is not None and np.abs(unit - block.vectors).max(initial=0.0) > IN_PLACE_TOLERANCE:
            out = _unit_copy(in_place, len(ids))  # not unit enough to use as is: copied after all
            in_place = None
        for doc_id, row in zip(block.ids, block.rows, strict=True):
            if doc_id in first_row:
                raise BadInputError(
                    f"{_where(path, kind, row, doc_id)}: this id already has a vector ({kind} "
                    f"{first_row[doc_id]}). Give each document one vector: drop one of the two."
                )
            if known_ids is not None and doc_id not in known_ids:
                shown = ", ".join(repr(i) for i in sorted(known_ids)[:IDS_SHOWN])
                raise BadInputError(
                    f"{_where(path, kind, row, doc_id)}: unknown id: no document of {source} has it "
                    f"(its ids look like {shown}). Fix the id to match the source's, or drop the "
                    "row; a record the reader skipped (see the warnings above) has no document either."
                )
            first_row[doc_id] = row
        if out is not None:  # the readers that know `count` yield exactly that many rows
            out[len(ids) : len(ids) + len(block.ids)] = unit
        elif in_place is None:
            parts.append(unit)
        ids.extend(block.ids)
    if not ids:
        raise BadInputError(f"{path} holds no vectors. Write one row (id, embedding) per document.")
    if in_place is not None:
        return VectorTable(path, ids, in_place, rescaled)
    if out is None:
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return VectorTable(path, ids, out, rescaled)


def _unit_copy(rows: SpilledRows, done: int) -> np.ndarray | SpilledRows:
    """A matrix for `rows`' unit vectors, its first `done` rows (checked already) filled."""
    out = _matrix_for(len(rows), rows.shape[1])
    for at in range(0, done, BLOCK_ROWS):
        block = rows[at : min(done, at + BLOCK_ROWS)]
        out[at : at + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def _matrix_for(count: int, dimension: int) -> np.ndarray | SpilledRows:
    """An empty (count, dimension) float32 matrix: in memory, or in a temporary file past SPILL_BYTES."""
    if count * dimension * 4 <= SPILL_BYTES:
        return np.empty((count, dimension), dtype=np.float32)
    return SpilledRows(count, dimension)


def _unit(path: Path, kind: str, block: _Block, normalize: bool) -> tuple[np.ndarray, int]:
    """The block's vectors scaled to unit length, and how many were off by more than the tolerance."""
    vectors = block.vectors

    def fail(mask: np.ndarray, problem: str) -> BadInputError:
        at = int(np.flatnonzero(mask)[0])
        return BadInputError(f"{_where(path, kind, block.rows[at], block.ids[at])}: {problem}")

    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        raise fail(~finite, "the vector holds NaN or an infinite value (or one beyond float32's range), "
                            "which no search can score. Encode this document again, or drop it.")
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))  # (b,)
    zero = norms == 0
    if zero.any():
        raise fail(zero, "the vector is all zeros, so it points nowhere and no query can match "
                         "it. Encode this document again, or drop it.")
    off = np.abs(norms - 1.0) > UNIT_TOLERANCE
    if off.any() and not normalize:
        at = int(np.flatnonzero(off)[0])
        raise fail(off, f"the vector's norm is {norms[at]:.6g}, not 1 (within {UNIT_TOLERANCE:g}): "
                        "the index stores unit vectors, whose inner product is their cosine. Pass "
                        "--normalize-embeddings to scale every vector to unit length, or encode with "
                        "normalize_embeddings=True.")
    return (vectors / norms[:, None]).astype(np.float32, copy=False), int(off.sum())


# --- the formats ----------------------------------------------------------------------------------


def _npy(path: Path, dimension: int, model: str) -> tuple[str, int, Iterator[_Block]]:
    ids_file = path.with_name(path.name[: -len(".npy")] + IDS_SUFFIX)
    if not ids_file.is_file():
        raise BadInputError(f"{path} needs its ids in {ids_file}: one document id per line, in the "
                            "matrix's row order.")
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as err:
        raise BadInputError(f"{path} is not a numeric .npy matrix ({err}); save one with "
                            "np.save(path, vectors.astype('float32')).") from err
    ids = ids_file.read_text(encoding="utf-8").splitlines()
    if isinstance(matrix, np.memmap) and matrix.ndim == 2 and matrix.flags.c_contiguous:
        matrix = FileRows(path, matrix.shape, matrix.dtype, matrix.offset)  # read, not mapped
    return _matrix(path, ids, matrix, f"{ids_file} has {len(ids)} ids", dimension, model)


class FileRows:
    """The rows of a C-order .npy matrix, read block by block with plain file reads. Through a
    memory map, every page the check of a 1M x 384 file touched stayed in the build's RSS
    (1.5 GB of the 3.8 GB a 1M ingest peaked at, `bench_scale`); read, they go to the kernel's
    page cache, which it may drop."""

    def __init__(self, path: Path, shape: tuple[int, ...], dtype: np.dtype, offset: int) -> None:
        self.path, self.shape, self.dtype, self.offset = path, shape, dtype, offset
        self.ndim = len(shape)
        self._row_bytes = int(shape[1]) * dtype.itemsize

    def __len__(self) -> int:
        return int(self.shape[0])

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, step = rows.indices(len(self))
        if step != 1:
            raise ValueError("FileRows reads consecutive rows only")
        count = max(stop - start, 0)
        out = np.empty((count, self.shape[1]), dtype=self.dtype)
        with self.path.open("rb") as fh:
            fh.seek(self.offset + start * self._row_bytes)
            if fh.readinto(memoryview(out).cast("B")) != out.nbytes:
                raise BadInputError(f"{self.path} ends before row {stop}: the file is truncated; save it again.")
        return out


def _npz(path: Path, dimension: int, model: str) -> tuple[str, int, Iterator[_Block]]:
    how = "write it with np.savez(path, ids=np.array(ids, dtype=str), embeddings=vectors)"
    try:
        with np.load(path, allow_pickle=False) as archive:
            if not {"ids", "embeddings"} <= set(archive.files):
                raise BadInputError(f"{path} holds arrays {sorted(archive.files)}, not 'ids' and "
                                    f"'embeddings'; {how}.")
            raw_ids, matrix = archive["ids"], archive["embeddings"]
    except (ValueError, OSError) as err:  # not an archive, or ids pickled as Python objects
        raise BadInputError(f"{path} cannot be read without pickle ({err}); {how}.") from err
    if raw_ids.ndim != 1 or raw_ids.dtype.kind not in "Uiu":
        raise BadInputError(f"{path}: 'ids' is {raw_ids.dtype} of shape {raw_ids.shape}; {how}.")
    ids = [str(i) for i in raw_ids.tolist()]
    return _matrix(path, ids, matrix, f"'ids' has {len(ids)}", dimension, model)


def _matrix(path: Path, ids: list[str], matrix: np.ndarray | FileRows, ids_count: str, dimension: int,
            model: str) -> tuple[str, int, Iterator[_Block]]:
    """Checks of a whole (n, dim) matrix and its ids, then its blocks; a wrong width is named at row 1."""
    if matrix.ndim != 2 or matrix.dtype.kind not in "fiu":
        raise BadInputError(f"{path} holds {matrix.dtype} values of shape {matrix.shape}; it must be "
                            "a (documents, dimension) matrix of floats, one row per document.")
    if len(ids) != len(matrix):
        raise BadInputError(f"{path} has {len(matrix)} rows but {ids_count}; give every row its id, "
                            "in the same order.")
    if "" in ids:
        row = ids.index("") + 1
        raise BadInputError(f"{path}, row {row}: empty id; every vector needs its document's id.")
    if matrix.shape[1] != dimension:
        raise _wrong_length(path, "row", 1, ids[0] if ids else None, matrix.shape[1], dimension, model)

    def blocks() -> Iterator[_Block]:
        for begin in range(0, len(ids), BLOCK_ROWS):
            end = min(begin + BLOCK_ROWS, len(ids))
            yield _Block(ids[begin:end], np.asarray(matrix[begin:end], dtype=np.float32),
                         list(range(begin + 1, end + 1)))

    return "row", len(ids), blocks()


def _parquet(path: Path, dimension: int, model: str) -> tuple[str, int, Iterator[_Block]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise BadInputError(f"{path} is not a readable parquet file ({err}).") from err
    schema = parquet.schema_arrow
    if "id" not in schema.names or "embedding" not in schema.names:
        raise BadInputError(f"{path} has columns {schema.names}; it needs 'id' and 'embedding' (a "
                            "list of floats per row).")
    column = schema.field("embedding").type
    listed = pa.types.is_list(column) or pa.types.is_large_list(column) or pa.types.is_fixed_size_list(column)
    if not listed or column.value_type.id not in {pa.float16().id, pa.float32().id, pa.float64().id}:
        raise BadInputError(f"{path}: column 'embedding' is {column}; it must be a list of floats.")
    return "row", parquet.metadata.num_rows, _parquet_blocks(parquet, path, dimension, model)


def _parquet_blocks(parquet, path: Path, dimension: int, model: str) -> Iterator[_Block]:
    start = 0
    for batch in parquet.iter_batches(batch_size=BLOCK_ROWS, columns=["id", "embedding"]):
        rows = list(range(start + 1, start + batch.num_rows + 1))
        start += batch.num_rows
        ids = [_id(path, "row", row, raw) for row, raw in zip(rows, batch.column("id").to_pylist(), strict=True)]
        column = batch.column("embedding")
        if column.null_count:
            at = int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])
            raise BadInputError(f"{_where(path, 'row', rows[at], ids[at])}: no embedding (null); "
                                "give every row its vector.")
        lengths = (np.full(len(column), column.type.list_size) if hasattr(column.type, "list_size")
                   else column.value_lengths().to_numpy(zero_copy_only=False))
        wrong = np.flatnonzero(lengths != dimension)
        if len(wrong):
            at = int(wrong[0])
            raise _wrong_length(path, "row", rows[at], ids[at], int(lengths[at]), dimension, model)
        values = column.flatten()
        if values.null_count:
            at = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0]) // dimension
            raise BadInputError(f"{_where(path, 'row', rows[at], ids[at])}: the vector holds a null; "
                                "write a number for every value.")
        flat = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        yield _Block(ids, flat.reshape(len(ids), dimension), rows)


def _id(path: Path, kind: str, row: int, raw: object) -> str:
    """A row's id as the readers take one: a string, or an integer written as one."""
    if isinstance(raw, bool) or not isinstance(raw, str | int) or raw == "":
        raise BadInputError(f"{path}, {kind} {row}: the id is {raw!r}; every vector needs its "
                            "document's id as a string (\"id\": \"doc-1\").")
    return str(raw)


def _jsonl(path: Path, dimension: int, model: str) -> tuple[str, None, Iterator[_Block]]:
    return "line", None, _jsonl_blocks(path, dimension, model)


def _jsonl_blocks(path: Path, dimension: int, model: str) -> Iterator[_Block]:
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    ids: list[str] = []
    rows: list[int] = []
    block = np.empty((BLOCK_ROWS, dimension), dtype=np.float32)
    with opener(path, "rb") as raw, io.TextIOWrapper(raw, encoding="utf-8-sig") as lines:
        for line_no, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError) as err:
                raise BadInputError(f"{path}, line {line_no}: malformed JSON ({err}); fix or remove "
                                    "the line.") from err
            if not isinstance(record, dict):
                raise BadInputError(f"{path}, line {line_no}: not a JSON object with 'id' and 'embedding'.")
            doc_id = _id(path, "line", line_no, record.get("id", record.get("_id")))
            values = record.get("embedding")
            vector = np.asarray(values) if isinstance(values, list) and values else np.empty(0, object)
            if vector.ndim != 1 or vector.dtype.kind not in "fiu":
                raise BadInputError(f"{_where(path, 'line', line_no, doc_id)}: no 'embedding' list of "
                                    "numbers; write the document's vector as \"embedding\": [0.1, ...].")
            if len(vector) != dimension:
                raise _wrong_length(path, "line", line_no, doc_id, len(vector), dimension, model)
            block[len(ids)] = vector
            ids.append(doc_id)
            rows.append(line_no)
            if len(ids) == BLOCK_ROWS:
                yield _Block(ids, block, rows)
                ids, rows, block = [], [], np.empty((BLOCK_ROWS, dimension), dtype=np.float32)
    if ids:
        yield _Block(ids, block[: len(ids)], rows)
