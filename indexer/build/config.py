"""Configuration of one indexing run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from indexer.encoding import check_encoding
from indexer.sources.documents import DEFAULT_MAX_DOCUMENT_CHARS
from indexer.sources.tables import CSV_TEXT_COLUMN
from indexer.store.ann import VectorIndexConfig
from indexer.store.segments import SegmentPolicy
from indexer.store.shards import check_shard_count

# Tokens shared by consecutive passages of a new index, when the build does not say.
DEFAULT_OVERLAP_TOKENS = 32
# Passages a commit holds at most while the index is small, unless the build embeds faster (`commit_passages`).
DEFAULT_COMMIT_PASSAGES = 4096


@dataclass(frozen=True)
class IndexConfig:
    """Everything `build_index` needs.

    `model=None` means the default bi-encoder (all-MiniLM-L6-v2). `db_url=None`
    means a SQLite file inside `index_dir`. `passage_tokens=None` means as long
    as the model reads (its max sequence length, less special and title tokens).
    `prune=False` adds and updates without removing documents the source lacks
    (for uploads into an index built from another source).

    The chunking settings (`passage_tokens`, `overlap_tokens`, `embed_titles`) left at None
    take the index's own, or the defaults for a new index; one given that differs from the
    index's is refused (`WriteTransaction.check_compatible`), since old and new passages
    would be cut differently. `--rebuild` changes them.
    """

    source: Path
    index_dir: Path
    model: str | None = None
    db_url: str | None = None
    rebuild: bool = False
    strict: bool = False
    prune: bool = True
    batch_size: int = 64
    # How the model computes the vectors (`indexer.encoding`): None keeps the index's own, or, for a
    # new index, `choose_encoding` (SEMSEARCH_ENCODING, else by the CPU). Another than the index's
    # is refused like other chunking settings; `--rebuild` changes it.
    encoding: str | None = None
    passage_tokens: int | None = None
    overlap_tokens: int | None = None
    embed_titles: bool | None = None
    # A document's last few tokens (under a quarter of a passage) are read with the passage
    # before them rather than as a short passage of their own (`chunking.short_tail_tokens`).
    merge_short_tails: bool = True
    csv_id_column: str = "id"
    csv_title_column: str = "title"
    csv_text_column: str = CSV_TEXT_COLUMN  # a CSV without it: a record a row (`csv_records`)
    show_progress: bool = True
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS
    # The most passages one atomic commit holds while the index is small; a build commits in
    # growing chunks up to it (beyond it, up to a quarter of the index, or `loop.MAX_COMMIT_SECONDS`
    # of embedding when that is less: see `build.next_commit_size`), so an interrupted build keeps its finished chunks and a rerun
    # resumes after them. None: `DEFAULT_COMMIT_PASSAGES`, or what the build embeds in
    # `loop.COMMIT_SECONDS` when that is more (a GPU: fewer commits, each rewriting the index).
    commit_passages: int | None = None
    # None: embed in this process. "local": start a Ray on this machine for the build; else
    # the address of a running Ray cluster ("auto", "HOST:6379", "ray://HOST:10001").
    ray: str | None = None
    # The FAISS index type (`indexer.store.ann`); None keeps the index's own, or auto for a new index.
    vector_index: VectorIndexConfig | None = None
    # When commits append delta segments and when they rebuild the base (`indexer.store.segments`).
    segments: SegmentPolicy = SegmentPolicy()
    # Split every segment into this many shards by passage id, for a sharded service
    # (`indexer.store.shards`, `python -m search.api --shards N`); None keeps the index's own
    # count, 0 drops the shards.
    shards: int | None = None
    # Vectors computed elsewhere (`indexer.build.ingest`): one per source document, nothing is embedded.
    embeddings: Path | None = None
    normalize_embeddings: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", Path(self.source))
        object.__setattr__(self, "index_dir", Path(self.index_dir))
        # From JSON (a build in another process gets its config as `dataclasses.asdict`): dicts.
        if isinstance(self.vector_index, dict):
            object.__setattr__(self, "vector_index", VectorIndexConfig(**self.vector_index))
        if isinstance(self.segments, dict):
            object.__setattr__(self, "segments", SegmentPolicy(**self.segments))
        if self.encoding is not None:
            check_encoding(self.encoding)
        if self.shards:
            check_shard_count(self.shards)
        elif self.shards is not None and self.shards != 0:
            raise ValueError(f"shards ({self.shards}) must be 0 (no shards) or more.")
        if self.embeddings is not None:
            object.__setattr__(self, "embeddings", Path(self.embeddings))
            if self.ray is not None:
                raise ValueError("--ray embeds passages and --embeddings brings vectors computed "
                                 "elsewhere: pass one of them.")
        elif self.normalize_embeddings:
            raise ValueError("--normalize-embeddings applies to vectors from --embeddings FILE; "
                             "pass the file too, or drop the flag.")
        if self.max_document_chars is not None and self.max_document_chars < 1:
            raise ValueError(
                f"max_document_chars ({self.max_document_chars}) must be at least 1, or None for "
                "no limit."
            )
        if self.ray is not None and not self.ray.strip():
            raise ValueError(f"ray ({self.ray!r}) must be 'local' or a Ray cluster address such as HOST:6379.")
        if self.commit_passages is not None and self.commit_passages < 1:
            raise ValueError(f"commit_passages ({self.commit_passages}) must be at least 1.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size ({self.batch_size}) must be at least 1.")
        if self.overlap_tokens is not None and self.overlap_tokens < 0:
            raise ValueError(f"overlap_tokens ({self.overlap_tokens}) must not be negative.")
        if self.passage_tokens is not None:
            if self.passage_tokens < 16:
                raise ValueError(
                    f"passage_tokens ({self.passage_tokens}) is too small; use at least 16."
                )
            if self.overlap_tokens is not None and self.overlap_tokens >= self.passage_tokens:
                raise ValueError(
                    f"overlap_tokens ({self.overlap_tokens}) must be smaller than "
                    f"passage_tokens ({self.passage_tokens}); lower --overlap."
                )
