"""`python -m indexer shard --index DIR --shards N`: split an existing index into N shards (or, with
0, drop its shards) without its source and without embedding anything.

One commit of the write path (`WriteTransaction.commit` with an empty plan and the new count): a
new base over the stored passages, its vectors and BM25 reused as they are, each split into the
shards (`indexer.store.shards`). Searches go on from the previous build until it commits.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from indexer.errors import IndexNotFoundError
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.store.plan import Plan
from indexer.store.records import BuildMeta, CommitResult, build_command
from indexer.store.segments import SegmentPolicy

RESHARD_ORIGIN = "reshard"


def reshard_index(index_dir: Path | str, shards: int, db_url: str | None = None) -> CommitResult:
    """Commit the index in `index_dir` split into `shards` shards (0: unsharded); the commit's result."""
    index_dir = Path(index_dir)
    index = Index.open(index_dir, db_url=db_url, use_gpu=False)
    index.close()  # refused here, before any lock, when there is no index
    index = Index.create(index_dir, db_url)
    try:
        with index.transaction() as tx:
            info = tx.info
            if info is None:
                raise IndexNotFoundError(f"There is no committed index in {index_dir} to shard. Build one: "
                                         f"{build_command(index_dir)} --shards {shards}")
            meta = BuildMeta(ModelSpec.resolve(info.model), info.dimension, info.passage_tokens,
                             info.overlap_tokens, info.embed_titles, time.perf_counter(), None, SegmentPolicy(),
                             encoding=info.vector_encoding, shards=shards)
            return tx.commit(Plan(), RESHARD_ORIGIN, [], np.empty((0, info.dimension), np.float32), meta)
    finally:
        index.close()
