"""`WriteTransaction`: one build's open SQL transaction, and the commit that writes its files.

Handed out by `Index.transaction()`, which holds the locks around it and commits the SQL
transaction after `commit` has written and recorded both files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import itertools
import os
import time
import uuid
from collections.abc import Collection, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from indexer.errors import IndexBusyError, IndexMismatchError, IndexUnreadableError
from indexer.layout import IndexLayout
from indexer.sources.documents import PassageSpan
from indexer.store import ann, sql_store
from indexer.store.bm25_store import (
    STOPWORDS,
    STREAM_BLOCK,
    TITLE_REPEATS,
    BM25Store,
    TokenizedTexts,
    bm25_document,
)
from indexer.store.faiss_store import VectorStore
from indexer.store.integrity import (
    checksum_update,
    damaged,
    deleted_ids,
    file_digest,
    folder_digest,
    id_checksum,
    layout_of,
    verified_bm25,
    verified_vectors,
)
from indexer.store.plan import Plan, StoredDocument
from indexer.store.records import BuildMeta, CommitResult, IndexInfo, IndexStats, repair_command
from indexer.store.schema import SCHEMA_FORMAT
from indexer.store.segments import SegmentedVectors, SegmentFiles, SegmentLayout, SegmentPolicy
from indexer.store.shards import check_shard_count, write_shard_set
from indexer.store.sql_store import Connection, Session
from indexer.store.vector_merge import merge_vectors
from indexer.store.vector_parts import Rows, as_rows

# Past this many keys, and when they are half the stored documents or more, `stored_documents`
# scans every row instead of looking the keys up in pages.
FULL_SCAN_KEYS = 100_000


class WriteTransaction:
    """The open build: stored documents to plan against, and `commit` for the changes.

    It holds what it writes, not the `Index` that opened it: the folder's layout, the owner id
    its info row records (the folder's manifest id), and the SQL connection and session.
    """

    def __init__(self, layout: IndexLayout, owner_id: str, conn: Connection, session: Session,
                 info: IndexInfo | None, replaces: IndexInfo | None = None) -> None:
        self.layout = layout
        self.owner_id = owner_id
        self.conn = conn
        self.session = session
        self.info = info
        self.replaces = replaces  # the committed build a --rebuild replaces (readers keep it until the commit)
        self.result: tuple[str, ...] | None = None  # the files the committed build names

    def keep_committed(self) -> None:
        """Commit nothing new: the committed build's files stay, every other one goes."""
        assert self.info is not None
        self.result = (self.info.vector_file, self.info.bm25_dir, *layout_of(self.info).files())

    def stored_documents(self, keys: Collection[str] | None = None,
                         origin: str | None = None) -> dict[str, StoredDocument]:
        """Stored documents by key: all of them, or only those whose key is in `keys` or whose
        origin is `origin` (what a plan of those documents, pruning that origin, can touch), so
        adding a few documents to a large index reads a few rows, not every key."""
        if keys is not None and len(keys) > FULL_SCAN_KEYS and 2 * len(keys) >= sql_store.document_id_span(self.session):
            keys = origin = None  # half the index or more: one scan beats many IN lists
        # else pages of keys, so that a window of 1M documents against a 10M index reads its
        # own rows, not a dict of all 10M
        rows = sql_store.stored_document_rows(self.session, None if keys is None else list(keys), origin)
        return {key: StoredDocument(row_id, digest, origin_, source)
                for key, row_id, digest, origin_, source in rows}

    def documents_of_origin(self, origin: str) -> Iterator[list[tuple[str, str]]]:
        """(key, source) of the stored documents a build of `origin` made, page by page."""
        return sql_store.document_keys_of_origin(self.session, origin)

    def stored_passages(self, size: int = 4096) -> Iterator[tuple[np.ndarray, list[str], list[str]]]:
        """(passage ids, titles, texts) of every stored passage in blocks of `size`, by id."""
        return sql_store.passage_text_blocks(self.session, size)

    def check_compatible(self, meta: BuildMeta) -> None:
        info = self.info
        if info is None:
            return
        same = (info.model, info.model_fingerprint, info.dimension) == (
            meta.model.id, meta.model.fingerprint(), meta.dimension)
        if not same:
            reason = "its files changed" if info.model == meta.model.id else "it is another model"
            raise IndexMismatchError(
                f"The index in {self.layout.root} was built with model {info.model} "
                f"(dimension {info.dimension}, fingerprint {info.model_fingerprint[:12]}); this build "
                f"uses {meta.model.id} (dimension {meta.dimension}, fingerprint "
                f"{meta.model.fingerprint()[:12]}): {reason}, so old and new vectors would not be "
                "comparable. Build into another --index folder, or pass --rebuild to re-embed "
                "everything."
            )
        stored = (info.passage_tokens, info.overlap_tokens, info.embed_titles)
        wanted = (meta.passage_tokens, meta.overlap_tokens, meta.embed_titles)
        if stored != wanted:
            def shown(tokens: int, overlap: int, titles: bool) -> str:
                return (f"{tokens}-token passages, {overlap} tokens of overlap, "
                        f"{'with' if titles else 'without'} titles")

            raise IndexMismatchError(
                f"The index in {self.layout.root} was cut into {shown(*stored)}; this build "
                f"asks for {shown(*wanted)}, so its passages would not match the stored ones. "
                "Leave --passage-tokens, --overlap and --no-titles out to keep the index's "
                "settings, build into another --index folder, or pass --rebuild to cut and "
                "embed everything again with the new ones."
            )
        if info.vector_encoding != meta.encoding:
            raise IndexMismatchError(
                f"The index in {self.layout.root} holds vectors encoded as {info.vector_encoding}; this "
                f"build asks for {meta.encoding}, and vectors of both in one index would not be quite "
                f"the same function. Leave --encoding out to keep the index's ({info.vector_encoding}), "
                "build into another --index folder, or pass --rebuild to embed everything again as "
                f"{meta.encoding}."
            )

    def committed_vectors(self) -> SegmentedVectors | None:
        """A CPU copy of the committed vectors, verified; None on a first build."""
        if self.info is None:
            return None
        return verified_vectors(self.layout.root, self.info, use_gpu=False)

    def committed_bm25_ok(self) -> bool:
        if self.info is None:
            return False
        try:
            verified_bm25(self.layout.root, self.info, mapped=True)  # a check: nothing read but the digests
        except (IndexUnreadableError, FileNotFoundError):
            return False
        return True

    def commit(
        self,
        plan: Plan,
        origin: str,
        passages: Sequence[Sequence[PassageSpan]],
        vectors: np.ndarray | Rows,
        meta: BuildMeta,
        bm25_tokens: Sequence[TokenizedTexts] | None = None,
    ) -> CommitResult:
        """Stage the plan's row changes, update the vectors, write both files, record them.

        `passages[i]` are the spans of `plan.to_embed[i]`; `vectors` holds one row per span,
        in that order. `bm25_tokens`, when the build has them: every passage's BM25 document
        (`bm25_document` of its title and text), tokenized, in the same order, in one or more
        blocks; a merge then tokenizes none of this commit's passages again.
        """
        self.check_compatible(meta)
        docs = plan.to_embed
        if len(passages) != len(docs):
            raise ValueError(f"{len(passages)} passage lists for {len(docs)} documents.")
        total = sum(len(spans) for spans in passages)
        if len(vectors) != total:
            raise ValueError(f"{len(vectors)} vectors for {total} passages.")
        stored = self.stored_documents([d.doc_id for d in plan.change] + list(plan.remove))
        base_ok = self.info is not None
        if (plan.is_empty and base_ok and self.committed_bm25_ok() and not self._type_change(meta)
                and self._shard_count(meta) == layout_of(self.info).shard_count):
            self.committed_vectors()  # verifies the vectors too: a damaged file fails the build
            self.keep_committed()
            return CommitResult(self.info.build_id, False, self.info.documents, self.info.passages,
                                0, 0, 0.0, None, IndexStats.of(self.info).vector_index)
        stale = [stored[d.doc_id].row_id for d in plan.change] + [stored[k].row_id for k in plan.remove]
        removed = sql_store.delete_documents(self.session, stale)
        reason = self._merge_reason(meta, total, len(removed))
        # A delta's BM25 is built from the texts in hand; a merge reads every text back from SQL.
        new_ids, titled = sql_store.insert_documents(self.session, docs, origin, passages,
                                                     keep_texts=reason is None)
        vectors = as_rows(vectors, len(new_ids), meta.dimension)  # spilled rows stay unread until merged
        if reason is None:
            result = self._append(new_ids, titled, vectors, removed, meta)
            if result is not None:
                return result
        return self._merge(new_ids, vectors, removed, meta, tokens=bm25_tokens)

    def replace_vectors(self, store: VectorStore | SegmentedVectors, meta: BuildMeta) -> CommitResult:
        """Commit `store` (all stored passages, re-embedded; or the committed vectors, verified) and
        a fresh BM25 as a new base; rows unchanged."""
        if isinstance(store, SegmentedVectors):
            empty = np.empty(0, np.int64)
            return self._merge(empty, np.empty((0, meta.dimension), np.float32), empty, meta)
        ids, vectors = ann.reconstruct_all(store.faiss_index)
        return self._merge(ids, vectors, np.empty(0, np.int64), meta, reuse_committed=False)

    # --- choosing between a delta segment and a merge --------------------------------------------

    def _requested(self, meta: BuildMeta) -> ann.VectorIndexConfig:
        """The index type this build asks for: its own, else the one stored, else auto."""
        if meta.vector_index is not None:
            return meta.vector_index
        stored = layout_of(self.info).requested if self.info is not None else None
        return ann.VectorIndexConfig(**stored) if stored else ann.VectorIndexConfig()

    def _type_change(self, meta: BuildMeta) -> bool:
        """True when the build names another index type than the committed one was asked with."""
        if self.info is None or meta.vector_index is None:
            return False
        stored = layout_of(self.info).requested
        return (ann.VectorIndexConfig(**stored) if stored else ann.VectorIndexConfig()) != meta.vector_index

    def _merge_reason(self, meta: BuildMeta, added: int, removed: int) -> str | None:
        if self.info is None:
            return "a first build"
        if self._type_change(meta):
            return "another index type was asked for"
        if self._shard_count(meta) != layout_of(self.info).shard_count:
            return "another shard count was asked for"
        return (meta.segments or SegmentPolicy()).merge_needed(layout_of(self.info), added, removed)

    def _shard_count(self, meta: BuildMeta) -> int:
        """Into how many shards this build splits its segments: its own count (0 drops the shards),
        else the stored one (0: not sharded)."""
        if meta.shards is not None:
            return 0 if meta.shards == 0 else check_shard_count(meta.shards)
        return layout_of(self.info).shard_count if self.info is not None else 0

    # --- the two ways to commit ------------------------------------------------------------------

    def _append(self, new_ids: np.ndarray, titled: list[tuple[str, str]], vectors: np.ndarray | Rows,
                removed: np.ndarray, meta: BuildMeta) -> CommitResult | None:
        """Commit the new passages as a delta segment and the removed ids as tombstones, writing
        nothing proportional to the index; None when the base cannot take deltas (merge instead)."""
        info = self.info
        assert info is not None
        root = self.layout.root
        stats = BM25Store.stats_of(root / info.bm25_dir)
        if stats is None:
            return None
        started = time.perf_counter()
        vectors = np.asarray(vectors, dtype=np.float32)  # a delta is small beside its base: read it whole
        expected = info.passages + len(new_ids) - len(removed)
        if sql_store.count_passages(self.conn) != expected:
            raise RuntimeError(
                f"SQL holds {sql_store.count_passages(self.conn)} passages where {expected} were "
                f"expected; nothing was committed. Repair with: {repair_command(self.layout.root)}")
        layout = layout_of(info)
        build_id = uuid.uuid4().hex[:12]
        segments = layout.segments
        checksum = checksum_update(info.id_checksum, new_ids, removed)
        if len(new_ids) and segments and segments[-1].run == meta.run_id:
            # This build's earlier chunk: extend its segment rather than add one per chunk, so a
            # build adds one segment, at a cost proportional to what the build itself adds.
            new_ids, titled, vectors = self._with_segment(segments[-1], new_ids, titled, vectors)
            segments = segments[:-1]
        if len(new_ids):
            vector_file, bm25_dir = self.layout.vector_name(build_id), self.layout.bm25_name(build_id)
            texts = [bm25_document(t, x, stats.title_repeats) for t, x in titled]  # as the base wrote them
            delta_bm25 = BM25Store.build_delta(new_ids, texts, stats, info.bm25_dir)
            delta_bm25.save(root / bm25_dir)
            delta = VectorStore.create(meta.dimension)
            delta.add(new_ids, vectors)
            delta.save(root / vector_file)
            shard_set = (asdict(write_shard_set(root, vector_file, delta, delta_bm25, layout.shard_count))
                         if layout.shard_count else None)
            segments += (SegmentFiles(vector_file, file_digest(root / vector_file), bm25_dir,
                                      folder_digest(root / bm25_dir), len(new_ids), meta.run_id, shard_set),)
        deleted_file, deleted_digest, deleted = layout.deleted_file, layout.deleted_digest, layout.deleted
        if len(removed):
            tombstones = np.union1d(deleted_ids(self.layout.root, info), removed)
            deleted_file = self.layout.deleted_name(build_id)
            write_ids(root / deleted_file, tombstones)
            deleted_digest, deleted = file_digest(root / deleted_file), len(tombstones)
        new_layout = replace(layout, segments=segments, deleted_file=deleted_file,
                             deleted_digest=deleted_digest, deleted=deleted)
        values = dict(build_id=build_id, layout=new_layout.to_json(),
                      passages=expected, id_checksum=checksum)
        result = self._record(values, meta, len(new_ids), len(removed), time.perf_counter() - started)
        self.result = (info.vector_file, info.bm25_dir, *new_layout.files())
        return result

    def _bm25_base_current(self, layout: SegmentLayout | None, new_ids: np.ndarray,
                           removed: np.ndarray) -> bool:
        """Whether the committed BM25 base already holds exactly the passages this merge keeps, read
        by the rules a base built now reads them by."""
        return (layout is not None and not layout.segments and not layout.deleted
                and not len(new_ids) and not len(removed) and self.committed_bm25_ok()
                and not self.committed_bm25_changes())

    def _with_segment(self, segment: SegmentFiles, new_ids: np.ndarray, titled: list[tuple[str, str]],
                      vectors: np.ndarray) -> tuple[np.ndarray, list[tuple[str, str]], np.ndarray]:
        """`segment`'s live passages (ids, (title, text) pairs, vectors) followed by the new ones."""
        assert self.info is not None
        path = self.layout.root / segment.vector_file
        if file_digest(path) != segment.vector_digest:
            raise damaged(self.layout.root, self.info, f"the vector file {segment.vector_file} is "
                                                           "not the one committed")
        segment_store = VectorStore.load(path, use_gpu=False)
        old_ids, old_vectors = ann.reconstruct_all(segment_store.faiss_index)
        rows = sql_store.passage_texts(self.session, old_ids.tolist())
        live = np.asarray([pid in rows for pid in old_ids.tolist()], dtype=bool)
        old_ids, old_vectors = old_ids[live], old_vectors[live]
        old_titled = [rows[pid] for pid in old_ids.tolist()]
        return (np.concatenate([old_ids, new_ids]), old_titled + list(titled),
                np.concatenate([old_vectors, vectors]))

    def _merge(self, new_ids: np.ndarray, vectors: np.ndarray | Rows, removed: np.ndarray,
               meta: BuildMeta, reuse_committed: bool = True,
               tokens: Sequence[TokenizedTexts] | None = None) -> CommitResult:
        """Commit a new base over every live passage: vectors merged (`vector_merge`), BM25 rebuilt.

        `reuse_committed=False` (a repair): `new_ids` are every passage, the committed files unused.
        `tokens`: the BM25 tokens of `new_ids`' passages (`commit`).
        """
        layout = layout_of(self.info) if self.info is not None and reuse_committed else None
        current = ann.VectorIndexPlan.from_json(layout.plan) if layout and layout.plan else None
        if layout is not None and current is None:  # an index from before index types: flat
            current = ann.resolve(ann.VectorIndexConfig(kind="flat"), layout.base_passages, meta.dimension)
        committed = self.committed_vectors() if reuse_committed else None
        calibrated = ann.Calibration(**layout.calibration) if layout and layout.calibration else None
        merged = merge_vectors(committed, current, self._requested(meta), removed, new_ids, vectors,
                               meta.dimension, calibrated)
        del committed  # an in-place merge's index is the merged one; else the old one goes now
        sql_ids = sql_store.all_passage_ids(self.session)
        if not np.array_equal(np.sort(merged.store.ids()), sql_ids):
            raise RuntimeError(
                f"FAISS holds {merged.store.ntotal} vectors but SQL holds {len(sql_ids)} passages, or their "
                f"ids differ; nothing was committed. Repair with: {repair_command(self.layout.root)}"
            )
        build_id = uuid.uuid4().hex[:12]  # both new files share it: a listing is easy to read
        names = self.layout
        root = names.root
        vector_file = names.vector_name(build_id)
        # The vectors are written and let go before BM25's merge, whose arrays are then all this
        # merge holds (3.8 GB of IVF,SQ8 less at 10M passages).
        merged.store.save(root / vector_file)
        vector_digest = file_digest(root / vector_file)
        plan, calibration, note = merged.plan, merged.calibration, merged.note
        del merged
        bm25_started = time.perf_counter()
        if self._bm25_base_current(layout, new_ids, removed) and reuse_committed:
            # Only the vector index changes (another type asked for): the BM25 base stays.
            bm25_dir, bm25_digest = self.info.bm25_dir, self.info.bm25_digest
            bm25: BM25Store | None = None
        else:
            bm25_dir = names.bm25_name(build_id)
            bm25 = self._merged_bm25(sql_ids, reuse_committed, new_ids, tokens)
            if not np.array_equal(np.sort(bm25.ids()), sql_ids):
                raise RuntimeError("BM25 and SQL hold different passages; nothing was committed.")
            bm25.save(root / bm25_dir)
            bm25_digest = folder_digest(root / bm25_dir)
        bm25_seconds = time.perf_counter() - bm25_started
        requested = self._requested(meta)
        shard_count = self._shard_count(meta)
        base_shards = None
        if shard_count:
            lexical = bm25 if bm25 is not None else BM25Store.load(root / bm25_dir)
            store = VectorStore.load(root / vector_file, use_gpu=False)  # split by cloning: not mapped
            store.configure(calibration.param, calibration.value)  # the shards search as the base does
            base_shards = asdict(write_shard_set(root, vector_file, store, lexical, shard_count))
        new_layout = SegmentLayout(base_passages=len(sql_ids), plan=plan.to_json(),
                                   calibration=asdict(calibration),
                                   requested=asdict(requested), shard_count=shard_count,
                                   base_shards=base_shards)
        values = dict(
            build_id=build_id,
            vector_file=vector_file,
            vector_digest=vector_digest,
            bm25_dir=bm25_dir,
            bm25_digest=bm25_digest,
            passages=len(sql_ids),
            id_checksum=id_checksum(sql_ids),
            layout=new_layout.to_json(),
        )
        result = self._record(values, meta, len(new_ids), len(removed), bm25_seconds, note)
        self.result = (vector_file, bm25_dir, *new_layout.files())
        return result

    def _merged_bm25(self, sql_ids: np.ndarray, reuse_committed: bool, new_ids: np.ndarray,
                     tokens: Sequence[TokenizedTexts] | None) -> BM25Store:
        """BM25 over every stored passage (`sql_ids`). A committed base that keeps its term counts
        is rescored with only the other passages' texts tokenized (`BM25Store.merged`: at 1M
        passages tokenizing was most of a merge), and this commit's own passages (`new_ids`) not
        even those when they come tokenized (`tokens`): their texts are not read back from SQL
        either. Otherwise every text is read back from SQL and tokenized, a block at a time
        (`build_streamed`)."""
        def documents(blocks):
            return ((block_ids, [bm25_document(t, x, TITLE_REPEATS) for t, x in zip(titles, texts, strict=True)])
                    for block_ids, titles, texts in blocks)

        def tokenized(ids: np.ndarray, blocks: Sequence[TokenizedTexts]):
            at = 0
            for block in blocks:
                yield ids[at:at + len(block)], block
                at += len(block)

        base = self._committed_bm25_base() if reuse_committed else None
        if base is not None and base.rescorable and not base.changed_rules(TITLE_REPEATS, STOPWORDS):
            stored = base.ids_view()
            keep = np.isin(stored, sql_ids)
            others = np.setdiff1d(sql_ids, stored[keep], assume_unique=True)
            if tokens is None or sum(map(len, tokens)) != len(new_ids) or not np.isin(new_ids, others).all():
                return BM25Store.merged(base, keep, documents(
                    sql_store.passage_text_blocks_of(self.session, others, STREAM_BLOCK)), TITLE_REPEATS, STOPWORDS)
            # Older passages first, by id, then this commit's (whose ids are the largest): rows by id.
            rest = np.setdiff1d(others, new_ids, assume_unique=True)
            return BM25Store.merged(base, keep, itertools.chain(
                documents(sql_store.passage_text_blocks_of(self.session, rest, STREAM_BLOCK)),
                tokenized(new_ids, tokens)), TITLE_REPEATS, STOPWORDS)
        return BM25Store.build_streamed(documents(self.stored_passages(STREAM_BLOCK)),  # never every text at once
                                        title_repeats=TITLE_REPEATS, stopwords=STOPWORDS)

    def committed_bm25_changes(self) -> list[str]:
        """How the committed BM25 base reads passages otherwise than one built now would
        (`BM25Store.changed_rules`); empty when alike, or when there is none to read."""
        base = self._committed_bm25_base()
        return base.changed_rules(TITLE_REPEATS, STOPWORDS) if base is not None else []

    def _committed_bm25_base(self) -> BM25Store | None:
        """The committed BM25 base, verified against its digest; None when there is none to reuse."""
        if self.info is None:
            return None
        try:
            # Mapped: a merge reads the base's rows and term counts once, and never its scores.
            return verified_bm25(self.layout.root, self.info, mapped=True).base
        except (IndexUnreadableError, FileNotFoundError):
            return None

    def _record(self, values: dict, meta: BuildMeta, added: int, removed: int, bm25_seconds: float,
                note: str | None = None) -> CommitResult:
        """Write the info row of the new build (in this SQL transaction, after its files exist)."""
        documents = sql_store.count_documents(self.conn)
        values = dict(
            format=SCHEMA_FORMAT,
            owner=self.owner_id,
            owner_path=str(self.layout.root.resolve()),
            model=meta.model.id,
            model_fingerprint=meta.model.fingerprint(),
            dimension=meta.dimension,
            encoding=meta.encoding,
            documents=documents,
            passage_tokens=meta.passage_tokens,
            overlap_tokens=meta.overlap_tokens,
            embed_titles=meta.embed_titles,
            built_at=dt.datetime.now(dt.UTC),
            build_seconds=time.perf_counter() - meta.started,
            **values,
        )
        stats = IndexStats.of(IndexInfo.from_row(sql_store.write_info(self.session, values)))
        return CommitResult(values["build_id"], True, documents, values["passages"], added, removed,
                            bm25_seconds, note, stats.vector_index)


def write_ids(path: Path, ids: np.ndarray) -> None:
    """Write an id array atomically: a temp file beside it, fsync, rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, np.asarray(ids, dtype=np.int64))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


@contextlib.contextmanager
def folder_lock(path: Path) -> Iterator[None]:
    """One build at a time per index folder. flock is released when its process ends, even by
    kill -9, so a lock file left behind never blocks anything and never needs removing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            fh.seek(0)
            holder = fh.read().strip()
            by = f" (process {holder})" if holder.isdigit() else ""
            raise IndexBusyError(
                f"Another build is writing {path.parent}{by}. Wait for it to finish and run this "
                "build again; its lock goes away by itself when that process ends."
            ) from err
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\n")
            fh.flush()
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

