"""What an index records and hands out: its committed build's info, stats, passages and snapshot;
what a build records about how its vectors were made; the commands that messages name."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from indexer.model_spec import ModelSpec

if TYPE_CHECKING:
    from indexer.bm25_store import BM25Store
    from indexer.faiss_store import VectorStore
    from indexer.schema import IndexInfoRow


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

    @classmethod
    def from_row(cls, row: IndexInfoRow) -> IndexInfo:
        return cls(**{f.name: getattr(row, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class IndexStats:
    documents: int
    passages: int
    model: str
    model_label: str
    dimension: int
    built_at: dt.datetime
    build_seconds: float
    vector_file: str
    bm25_dir: str | None
    build_id: str

    @classmethod
    def of(cls, info: IndexInfo) -> IndexStats:
        """The figures of the build `info` describes (counts recorded at its commit)."""
        return cls(
            documents=info.documents,
            passages=info.passages,
            model=info.model,
            model_label=ModelSpec(info.model, Path(info.model)).label,
            dimension=info.dimension,
            built_at=info.built_at,
            build_seconds=info.build_seconds,
            vector_file=info.vector_file,
            bm25_dir=info.bm25_dir,
            build_id=info.build_id,
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


@dataclass(frozen=True)
class IndexSnapshot:
    """One committed build's vectors and BM25 index, loaded together and verified together."""

    build_id: str
    info: IndexInfo
    vectors: VectorStore
    bm25: BM25Store | None


@dataclass(frozen=True)
class BuildMeta:
    """What a build records about how its vectors were made."""

    model: ModelSpec
    dimension: int
    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool
    started: float  # time.perf_counter() at the start of the build


@dataclass(frozen=True)
class CommitResult:
    build_id: str
    wrote_files: bool
    documents: int
    passages: int
    passages_added: int
    passages_removed: int
    bm25_seconds: float


def build_command(index_dir: Path) -> str:
    return f"python -m indexer build --source PATH --index {index_dir}"


def repair_command(index_dir: Path) -> str:
    return f"python -m indexer repair --index {index_dir}"
