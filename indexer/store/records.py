"""What an index records and hands out: its committed build's info, stats, passages and snapshot;
what a build records about how its vectors were made; the commands that messages name."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from indexer.encoding import FP32
from indexer.model_spec import ModelSpec
from indexer.sources.outline import Location

if TYPE_CHECKING:
    import numpy as np

    from indexer.store.passage_subset import PassageSubset
    from indexer.store.schema import IndexInfoRow


@dataclass(frozen=True)
class IndexInfo:
    """The committed build, as its info row records it."""

    owner: str
    owner_path: str
    build_id: str
    model: str
    model_fingerprint: str
    dimension: int
    vector_file: str
    vector_digest: str
    bm25_dir: str
    bm25_digest: str
    documents: int
    passages: int
    id_checksum: str
    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool
    built_at: dt.datetime
    build_seconds: float
    layout: dict[str, Any] | None = None  # see indexer.store.segments.SegmentLayout
    encoding: str | None = None  # see indexer.encoding; None: fp32, an index from before encodings

    @property
    def vector_encoding(self) -> str:
        """How the index's vectors were computed, and how its queries must be (`indexer.encoding`)."""
        return self.encoding or FP32

    @classmethod
    def from_row(cls, row: IndexInfoRow) -> IndexInfo:
        """The row's values; `built_at` in UTC with its zone, which SQLite does not keep (it is
        always written in UTC)."""
        values = {f.name: getattr(row, f.name, None) for f in fields(cls)}
        if isinstance(values.get("built_at"), dt.datetime) and values["built_at"].tzinfo is None:
            values["built_at"] = values["built_at"].replace(tzinfo=dt.UTC)
        return cls(**values)


@dataclass(frozen=True)
class IndexStats:
    documents: int
    passages: int
    model: str
    model_label: str
    dimension: int
    encoding: str
    built_at: dt.datetime
    build_seconds: float
    vector_file: str
    bm25_dir: str | None
    build_id: str
    # The FAISS index: its type in one line ("exact (Flat)", "IVF1024,SQ8 (nprobe 16, recall@10
    # 0.962)"), the recall@10 against exact search measured when it was built (1.0 when exact),
    # and the delta segments and deleted passages waiting for the next merge.
    vector_index: str = "exact (Flat)"
    recall_at_10: float = 1.0
    delta_segments: int = 0
    deleted_pending: int = 0
    shards: int = 0  # into how many shards each segment is split (`indexer.store.shards`); 0: none

    @classmethod
    def of(cls, info: IndexInfo) -> IndexStats:
        """The figures of the build `info` describes (counts recorded at its commit)."""
        from indexer.store.ann import Calibration, VectorIndexPlan, describe
        from indexer.store.segments import SegmentLayout

        layout = SegmentLayout.from_json(info.layout, info.passages)
        plan = VectorIndexPlan.from_json(layout.plan) if layout.plan else None
        calibration = Calibration(**layout.calibration) if layout.calibration else None
        return cls(
            documents=info.documents,
            passages=info.passages,
            model=info.model,
            model_label=ModelSpec(info.model, Path(info.model)).label,
            dimension=info.dimension,
            encoding=info.vector_encoding,
            built_at=info.built_at,
            build_seconds=info.build_seconds,
            vector_file=info.vector_file,
            bm25_dir=info.bm25_dir,
            build_id=info.build_id,
            vector_index=describe(plan, calibration) if plan is not None else "exact (Flat)",
            recall_at_10=calibration.shown_recall if calibration is not None else 1.0,
            delta_segments=len(layout.segments),
            deleted_pending=layout.deleted,
            shards=layout.shard_count,
        )


@dataclass(frozen=True)
class PassageRecord:
    passage_id: int
    doc_id: str
    title: str
    text: str
    start_char: int
    end_char: int
    metadata: dict[str, Any]
    source: str
    location: Location = field(default_factory=Location)  # pages and heading path, where known
    path: str = ""  # the file the document was read from (`indexer.sources.documents.source_file`)


@dataclass(frozen=True)
class DocumentRecord:
    """One stored document, whole, with its passages in order (`Index.document`)."""

    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any]
    source: str
    passages: tuple[PassageRecord, ...]


class BuildVectors(Protocol):
    """A build's vectors as searches read them: its segments (`indexer.store.segments.
    SegmentedVectors`), or, in a sharded service's router, its shards (`indexer.store.shards`)."""

    deleted: np.ndarray  # the tombstones: ids the segments still hold that are deleted

    @property
    def ntotal(self) -> int: ...

    def search(self, queries: np.ndarray, k: int, within: PassageSubset | None = None
               ) -> tuple[np.ndarray, np.ndarray]: ...


class BuildLexical(Protocol):
    """A build's BM25 as searches read it (segments, or shards)."""

    @property
    def ntotal(self) -> int: ...

    def search(self, query: str, n: int, within: PassageSubset | None = None) -> tuple[np.ndarray, np.ndarray]: ...


@dataclass(frozen=True)
class IndexSnapshot:
    """One committed build's vectors and BM25 index, loaded together and verified together."""

    build_id: str
    info: IndexInfo
    vectors: BuildVectors
    bm25: BuildLexical | None
    bm25_problem: str | None = None  # why `bm25` is None in a build that has one: damaged or missing


# Loads a committed build's vectors and BM25 for `Index.open(files=...)`: (index folder, info) in.
SnapshotLoader = Callable[[Path, IndexInfo], IndexSnapshot]


@dataclass(frozen=True)
class BuildMeta:
    """What a build records about how its vectors were made."""

    model: ModelSpec
    dimension: int
    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool
    started: float  # time.perf_counter() at the start of the build
    # The FAISS index type asked for (`indexer.store.ann.VectorIndexConfig`; None: what the index has,
    # else auto) and when commits append segments (`indexer.store.segments.SegmentPolicy`; None: default).
    vector_index: Any = None
    segments: Any = None
    encoding: str = FP32  # how the vectors are computed (`indexer.encoding`), settled from the index's
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])  # one per build, all its chunks
    shards: int | None = None  # split every segment into this many shards (`indexer.store.shards`); None: as stored


@dataclass(frozen=True)
class CommitResult:
    build_id: str
    wrote_files: bool
    documents: int
    passages: int
    passages_added: int
    passages_removed: int
    bm25_seconds: float
    note: str | None = None  # what a user should know: a merge, an IVF retrained, a recall short of target
    vector_index: str = ""  # the committed FAISS index in one line (`IndexStats.vector_index`)


def build_command(index_dir: Path) -> str:
    return f"python -m indexer build --source PATH --index {index_dir}"


def repair_command(index_dir: Path) -> str:
    return f"python -m indexer repair --index {index_dir}"
