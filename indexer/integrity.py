"""Digests that tie an index's files to the SQL rows of the build that committed them.

At commit the build stores, beside the file names, a sha256 of the vector file,
a sha256 of the BM25 folder and an order-free checksum of the passage id set.
Loading checks all three, so a truncated or flipped file, or a file copied in
from another build, is refused with the repair command instead of answering
with silent garbage.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from indexer.bm25_store import BM25Store
from indexer.errors import IndexUnreadableError
from indexer.faiss_store import VectorStore
from indexer.records import IndexInfo, repair_command

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """A strong 64-bit mix of each id (Steele et al. 2014), so that a sum of mixes is a set hash."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def id_checksum(ids: np.ndarray) -> str:
    """Count and order-free hash of a set of int64 ids: O(n), no sort."""
    ids = np.asarray(ids, dtype=np.int64)
    with np.errstate(over="ignore"):
        total = np.sum(_splitmix64(ids), dtype=np.uint64) & _MASK
    return f"{len(ids):x}:{int(total):016x}"


def file_digest(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def folder_digest(path: Path) -> str:
    """sha256 over the names and digests of the files in a folder (not recursive)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(file.name.encode("utf-8") + b"\0" + bytes.fromhex(file_digest(file)))
    return digest.hexdigest()


def damaged(index_dir: Path, info: IndexInfo, what: str) -> IndexUnreadableError:
    return IndexUnreadableError(
        f"The index in {index_dir} is damaged: {what} (build {info.build_id}). Its text "
        f"is safe in SQL; repair it with: {repair_command(index_dir)}"
    )


def verified_vectors(index_dir: Path, info: IndexInfo, use_gpu: bool) -> VectorStore:
    """The committed vector file, after its digest, ids and dimension match what the commit recorded.

    FileNotFoundError when it is missing (a concurrent build may just have replaced it).
    """
    path = index_dir / info.vector_file
    if not path.is_file():
        raise FileNotFoundError(path)
    if file_digest(path) != info.vector_digest:
        raise damaged(index_dir, info, f"the vector file {info.vector_file} is not the one committed "
                                       "(truncated, altered or copied from another build)")
    try:
        store = VectorStore.load(path, use_gpu=False)  # ids are checked on the CPU copy
    except RuntimeError as err:
        raise damaged(index_dir, info, f"the vector file {info.vector_file} cannot be read ({err})") from err
    if id_checksum(store.ids()) != info.id_checksum:
        raise damaged(index_dir, info, f"the vector file {info.vector_file} holds other passage ids "
                                       "than the committed rows")
    if store.dim != info.dimension:
        raise damaged(index_dir, info, f"the vector file has dimension {store.dim}, the index "
                                       f"{info.dimension}")
    return store.on_gpu() if use_gpu else store


def verified_bm25(index_dir: Path, info: IndexInfo) -> BM25Store:
    """The committed BM25 folder, after its digest and ids match what the commit recorded."""
    path = index_dir / info.bm25_dir
    if not path.is_dir():
        raise FileNotFoundError(path)
    if folder_digest(path) != info.bm25_digest:
        raise damaged(index_dir, info, f"the BM25 folder {info.bm25_dir} is not the one committed")
    try:
        bm25 = BM25Store.load(path)
    except (OSError, ValueError, KeyError) as err:
        raise damaged(index_dir, info, f"the BM25 folder {info.bm25_dir} cannot be read ({err})") from err
    if id_checksum(bm25.ids()) != info.id_checksum:
        raise damaged(index_dir, info, f"the BM25 folder {info.bm25_dir} holds other passage ids "
                                       "than the committed rows")
    return bm25
