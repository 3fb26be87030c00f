"""Digests that tie an index's files to the SQL rows of the build that committed them.

At commit the build stores, beside the file names, a sha256 of the vector file,
a sha256 of the BM25 folder and an order-free checksum of the passage id set.
Loading checks all three, so a truncated or flipped file, or a file copied in
from another build, is refused with the repair command instead of answering
with silent garbage.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

import numpy as np

from indexer import settings
from indexer.errors import IndexUnreadableError
from indexer.store.bm25_store import BM25Store
from indexer.store.faiss_store import VectorStore
from indexer.store.records import IndexInfo, repair_command
from indexer.store.segments import SegmentedBM25, SegmentedVectors, SegmentLayout

_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """A strong 64-bit mix of each id (Steele et al. 2014), so that a sum of mixes is a set hash."""
    z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _mix_sum(ids: np.ndarray) -> int:
    ids = np.asarray(ids, dtype=np.int64)
    with np.errstate(over="ignore"):
        return int(np.sum(_splitmix64(ids), dtype=np.uint64) & _MASK)


def id_checksum(ids: np.ndarray) -> str:
    """Count and order-free hash of a set of int64 ids: O(n), no sort."""
    return f"{len(ids):x}:{_mix_sum(ids):016x}"


def checksum_update(checksum: str, added: np.ndarray, removed: np.ndarray) -> str:
    """The checksum of the set `checksum` describes, plus `added`, less `removed` (which it must
    hold): a sum of mixes, so an append-only commit never reads the ids it does not touch."""
    count, total = (int(part, 16) for part in checksum.split(":"))
    count += len(added) - len(removed)
    total = (total + _mix_sum(added) - _mix_sum(removed)) % (1 << 64)
    return f"{count:x}:{total:016x}"


def file_digest(path: Path) -> str:
    """sha256 of the file, from `_DigestCache` when the file was hashed before and has not changed."""
    return _DIGESTS.digest(Path(path))


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


class _DigestCache:
    """Digests of files hashed before, under what `os.stat` says of them (device, inode, size,
    mtime, ctime). The kernel sets a file's ctime on every write, truncate, rename or chmod, and no
    program can set it back, so a match means the bytes hashed then are the bytes there now. Only a
    file whose ctime was `SETTLED_NS` old when it was hashed is kept: a write within the same tick of
    the kernel's clock would leave ctime as it was. Kept in this process, and for files of at least
    `PERSIST_BYTES` also in `digests.json` in the cache folder (`indexer.settings.cache_dir`), so that a new searcher of a 10M-passage index does
    not read its 15 GB to open it; the cache file is best effort (unwritable: not kept)."""

    SETTLED_NS = 2 * 10**9
    PERSIST_BYTES = 64 * 2**20
    MAX_PERSISTED = 4096

    def __init__(self) -> None:
        self._known: dict[str, tuple[list[int], str]] = {}
        self._lock = threading.Lock()
        self._loaded = False

    @staticmethod
    def path() -> Path:
        return settings.cache_dir() / "digests.json"

    @staticmethod
    def _key(stat: os.stat_result) -> list[int]:
        return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]

    def digest(self, path: Path) -> str:
        name = str(path.resolve())
        before = os.stat(path)
        key = self._key(before)
        with self._lock:
            if not self._loaded and before.st_size >= self.PERSIST_BYTES:
                self._known.update(self._read())
                self._loaded = True
            known = self._known.get(name)
        if known is not None and known[0] == key:
            return known[1]
        digest = _sha256(path)
        settled = time.time_ns() - before.st_ctime_ns >= self.SETTLED_NS
        if settled and self._key(os.stat(path)) == key:
            with self._lock:
                self._known[name] = (key, digest)
                if before.st_size >= self.PERSIST_BYTES:
                    self._write()
        return digest

    def _read(self) -> dict[str, tuple[list[int], str]]:
        try:
            data = json.loads(self.path().read_text())
            return {name: (list(entry[0]), str(entry[1])) for name, entry in data.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            return {}

    def _write(self) -> None:
        """The large files' entries, merged with what another process wrote meanwhile."""
        entries = self._read()
        entries.update({name: entry for name, entry in self._known.items() if entry[0][2] >= self.PERSIST_BYTES})
        live = {name: entry for name, entry in entries.items() if os.path.exists(name)}
        kept = dict(list(live.items())[-self.MAX_PERSISTED :])
        path = self.path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(kept))
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only home: digests stay in this process


_DIGESTS = _DigestCache()


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


def layout_of(info: IndexInfo) -> SegmentLayout:
    return SegmentLayout.from_json(info.layout, info.passages)


def _segments_checksum(stored: list[np.ndarray], deleted: np.ndarray) -> str:
    """The id checksum of the live set: every segment's ids less the deleted ones (which they hold)."""
    count = sum(len(ids) for ids in stored) - len(deleted)
    total = (sum(_mix_sum(ids) for ids in stored) - _mix_sum(deleted)) % (1 << 64)
    return f"{count:x}:{total:016x}"


def _checked_file(index_dir: Path, info: IndexInfo, name: str, digest: str, what: str) -> Path:
    path = index_dir / name
    if not path.exists():
        raise FileNotFoundError(path)
    found = folder_digest(path) if path.is_dir() else file_digest(path)
    if found != digest:
        how = "" if path.is_dir() else " (truncated, altered or copied from another build)"
        raise damaged(index_dir, info, f"the {what} {name} is not the one committed{how}")
    return path


def deleted_ids(index_dir: Path, info: IndexInfo) -> np.ndarray:
    """The ids deleted since the base that its segments still hold (the tombstones)."""
    layout = layout_of(info)
    if not layout.deleted_file:
        return np.empty(0, dtype=np.int64)
    path = _checked_file(index_dir, info, layout.deleted_file, layout.deleted_digest or "",
                         "tombstone file")
    try:
        return np.load(path).astype(np.int64)
    except (OSError, ValueError) as err:
        raise damaged(index_dir, info, f"the tombstone file cannot be read ({err})") from err


def _load_vectors(index_dir: Path, info: IndexInfo, name: str, digest: str, mapped: bool) -> VectorStore:
    path = _checked_file(index_dir, info, name, digest, "vector file")
    try:
        store = VectorStore.load(path, use_gpu=False, mapped=mapped)  # ids are checked on the CPU copy
    except RuntimeError as err:
        raise damaged(index_dir, info, f"the vector file {name} cannot be read ({err})") from err
    if store.dim != info.dimension:
        raise damaged(index_dir, info, f"the vector file {name} has dimension {store.dim}, the "
                                       f"index {info.dimension}")
    return store


def verified_vectors(index_dir: Path, info: IndexInfo, use_gpu: bool, mapped: bool = False) -> SegmentedVectors:
    """The committed vector files (base and deltas), after their digests, ids and dimension match
    what the commits recorded; the base carries its calibrated search parameter. `mapped`: for
    searching only, the files memory-mapped (`VectorStore.load`).

    FileNotFoundError when one is missing (a concurrent build may just have replaced it).
    """
    layout = layout_of(info)
    base = _load_vectors(index_dir, info, info.vector_file, info.vector_digest, mapped)
    if layout.calibration:
        base.configure(layout.calibration.get("param"), layout.calibration.get("value"))
    deltas = [_load_vectors(index_dir, info, s.vector_file, s.vector_digest, mapped) for s in layout.segments]
    vectors = SegmentedVectors(base, deltas, deleted_ids(index_dir, info))
    if _segments_checksum(vectors.stored_ids(), vectors.deleted) != info.id_checksum:
        raise damaged(index_dir, info, f"the vector file {info.vector_file} or its delta segments "
                                       "hold other passage ids than the committed rows")
    if use_gpu:
        vectors = SegmentedVectors(base.on_gpu(), [d.on_gpu() for d in deltas], vectors.deleted)
    return vectors


def _load_bm25(index_dir: Path, info: IndexInfo, name: str, digest: str, mapped: bool) -> BM25Store:
    path = _checked_file(index_dir, info, name, digest, "BM25 folder")
    try:
        return BM25Store.load(path, mapped=mapped)
    except (OSError, ValueError, KeyError) as err:
        raise damaged(index_dir, info, f"the BM25 folder {name} cannot be read ({err})") from err


def verified_bm25(index_dir: Path, info: IndexInfo, mapped: bool = False) -> SegmentedBM25:
    """The committed BM25 folders (base and deltas), after their digests and ids match the commits;
    `mapped`: for searching only, their arrays memory-mapped (`BM25Store.load`)."""
    layout = layout_of(info)
    base = _load_bm25(index_dir, info, info.bm25_dir, info.bm25_digest, mapped)
    deltas = [_load_bm25(index_dir, info, s.bm25_dir, s.bm25_digest, mapped) for s in layout.segments]
    bm25 = SegmentedBM25(base, deltas, deleted_ids(index_dir, info))
    if _segments_checksum(bm25.stored_ids(), bm25.deleted) != info.id_checksum:
        raise damaged(index_dir, info, f"the BM25 folder {info.bm25_dir} or its delta segments hold "
                                       "other passage ids than the committed rows")
    return bm25
