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
