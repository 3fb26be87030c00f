"""One indexing run: read, diff against the store, split, embed, and commit atomically.

Consistency rule: the SQL transaction that changes rows also records the names
of the vector file and the BM25 folder that match them, and it commits only
after both are fully written. A crash at any point leaves the previous rows
pointing at the previous files, so the index stays usable.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sqlalchemy import delete, select
from sqlalchemy.orm import Session
from tqdm.auto import tqdm

from indexer.bm25_store import BM25Store
from indexer.chunking import split_into_passages
from indexer.config import IndexConfig
from indexer.documents import Document, InputIssue
from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder, model_spec
from indexer.errors import BadInputError, IndexBusyError, IndexMismatchError
from indexer.faiss_store import VectorStore
from indexer.readers import read_documents
from indexer.schema import DocumentRow, IndexInfoRow, PassageRow
from indexer.sql_store import (
    count_documents,
    count_passages,
    create_schema,
    default_db_url,
    index_info,
    make_engine,
    write_manifest,
)

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
VECTOR_PREFIX = "vectors-"
BM25_PREFIX = "bm25-"
# Room for the title prefix when passages are embedded as "title\npassage":
# at most 32 tokens, and at most an eighth of what the model reads.
MAX_TITLE_TOKENS = 32


def title_token_budget(model_max: int) -> int:
    return min(MAX_TITLE_TOKENS, model_max // 8)


@dataclass
class BuildReport:
    """What a build did; `passages_per_second` counts embedded passages over the whole run."""

    index_dir: Path
    model: str
    documents_added: int = 0
    documents_updated: int = 0
    documents_removed: int = 0
    documents_unchanged: int = 0
    passages_embedded: int = 0
    passages_removed: int = 0
    total_documents: int = 0
    total_passages: int = 0
    seconds: float = 0.0
    bm25_seconds: float = 0.0
    issues: list[InputIssue] = field(default_factory=list)

    @property
    def passages_per_second(self) -> float:
        return self.passages_embedded / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        return (
            f"{self.total_documents} documents, {self.total_passages} passages in the index "
            f"(+{self.documents_added} new, ~{self.documents_updated} changed, "
            f"-{self.documents_removed} removed, {self.documents_unchanged} unchanged); "
            f"embedded {self.passages_embedded} passages in {self.seconds:.1f} s "
            f"({self.passages_per_second:.1f} passages/s); BM25 index built in "
            f"{self.bm25_seconds:.1f} s; {len(self.issues)} input issue(s)"
        )


@contextlib.contextmanager
def _index_lock(index_dir: Path) -> Iterator[None]:
    """One build at a time per index folder."""
    index_dir.mkdir(parents=True, exist_ok=True)
    with open(index_dir / ".lock", "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as err:
            raise IndexBusyError(
                f"Another build is writing {index_dir}. Wait for it to finish, or remove "
                f"{index_dir / '.lock'} if no build is running."
            ) from err
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _passage_budget(config: IndexConfig, model) -> int:
    """Tokens per passage so that [CLS] title [SEP]-less prefix + passage + [SEP] fit the model."""
    model_max = int(model.max_seq_length)
    room = model_max - 2 - (title_token_budget(model_max) + 1 if config.embed_titles else 0)
    if config.passage_tokens is None:
        budget = room
    elif config.passage_tokens > room:
        raise ValueError(
            f"passage_tokens ({config.passage_tokens}) does not fit the model's max sequence "
            f"length ({model_max}) with its special and title tokens; use at most {room}."
        )
    else:
        budget = config.passage_tokens
    if config.overlap_tokens >= budget:
        raise ValueError(
            f"overlap_tokens ({config.overlap_tokens}) must be smaller than the passage length "
            f"({budget} tokens); lower --overlap."
        )
    return budget


def _embed_title(title: str, tokenizer, budget: int) -> str:
    """The title as embedded: cut to `budget` tokens so the passage always fits."""
    if not title:
        return ""
    ids = tokenizer(title, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    if len(ids) <= budget:
        return title
    return tokenizer.decode(ids[:budget])


def _check_compatible(info: IndexInfoRow, spec: str, dim: int, index_dir: Path) -> None:
    if info.model != spec or info.dimension != dim:
        raise IndexMismatchError(
            f"The index in {index_dir} was built with model {info.model} "
            f"(dimension {info.dimension}), not {spec} (dimension {dim}). Build into another "
            "--index folder, or pass --rebuild to re-embed everything with the new model."
        )


@dataclass(frozen=True)
class StoredFiles:
    """The vector file and BM25 folder, inside the index folder, that the committed rows point at."""

    vector_file: str
    bm25_dir: str


def _remove_stale_files(index_dir: Path, keep: StoredFiles) -> None:
    """Delete vector files and BM25 folders no committed row points at, and leftover temp files.

    A searcher loads both when it opens or refreshes, so it never reads a removed one.
    """
    for path in index_dir.glob(f"{VECTOR_PREFIX}*.faiss"):
        if path.name != keep.vector_file:
            path.unlink(missing_ok=True)
    for path in [*index_dir.glob(f"{BM25_PREFIX}*"), *index_dir.glob(f".{BM25_PREFIX}*.tmp")]:
        if path.name != keep.bm25_dir and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _build_bm25(session: Session) -> BM25Store:
    """BM25 over every passage row visible in the open transaction, staged changes included.

    Rebuilt from scratch because bm25s cannot add or remove documents; about 1.7 s
    for 10k passages (see `indexer.bm25_store`).
    """
    rows = session.execute(
        select(PassageRow.id, DocumentRow.title, PassageRow.text)
        .join(PassageRow.document)
        .order_by(PassageRow.id)
    ).all()
    return BM25Store.build(
        [row.id for row in rows],
        [f"{row.title} {row.text}" if row.title else row.text for row in rows],
    )


def build_index(config: IndexConfig, progress: ProgressCallback | None = None) -> BuildReport:
    """Bring the index in `config.index_dir` in line with `config.source`; return what changed."""
    started = time.perf_counter()
    spec = model_spec(config.model)
    index_dir = config.index_dir
    with _index_lock(index_dir):
        report = BuildReport(index_dir=index_dir, model=spec)

        def on_issue(issue: InputIssue) -> None:
            if config.strict:
                raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
            logger.warning("skipped %s", issue)
            report.issues.append(issue)

        # Read everything before touching the store: a missing source fails here, harmlessly.
        documents = list(
            read_documents(
                config.source,
                on_issue=on_issue,
                csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
            )
        )
        if not documents and not report.issues:
            raise BadInputError(
                f"No documents found in {config.source}. Supported inputs: a folder of .txt/.md "
                "files, a .jsonl with a 'text' field, a .csv with a text column, or a BEIR folder."
            )

        model = load_bi_encoder(spec)
        dim = embedding_dimension(model)
        budget = _passage_budget(config, model)
        db_url = config.db_url or default_db_url(index_dir)
        engine = make_engine(db_url)
        try:
            create_schema(engine)
            with Session(engine) as session, session.begin():
                keep = _apply(
                    session, config, report, documents, model, spec, dim, budget, progress, started
                )
            write_manifest(index_dir, config.db_url)
        finally:
            engine.dispose()
        _remove_stale_files(index_dir, keep)
        report.seconds = time.perf_counter() - started
        logger.debug("build finished: %s", report.summary())
        return report


def _apply(
    session: Session,
    config: IndexConfig,
    report: BuildReport,
    documents: list[Document],
    model,
    spec: str,
    dim: int,
    budget: int,
    progress: ProgressCallback | None,
    started: float,
) -> StoredFiles:
    """Stage every change in the open transaction; return the files the rows point at."""
    index_dir = config.index_dir
    info = index_info(session)
    fresh = info is None or config.rebuild
    removed_ids: list[int] = []
    if info is not None and config.rebuild:
        session.execute(delete(PassageRow))
        session.execute(delete(DocumentRow))
        store = VectorStore.create(dim)
    elif info is not None:
        _check_compatible(info, spec, dim, index_dir)
        store = VectorStore.load(index_dir / info.vector_file, use_gpu=False)
    else:
        if count_documents(session):
            raise IndexMismatchError(
                f"The database behind {index_dir} holds documents but no index info. "
                "Pass --rebuild to start it afresh."
            )
        store = VectorStore.create(dim)

    existing = {
        key: (row_id, digest)
        for key, row_id, digest in session.execute(
            select(DocumentRow.doc_key, DocumentRow.id, DocumentRow.content_hash)
        )
    }
    seen: set[str] = set()
    changed_doc_ids: list[int] = []
    to_add: list[Document] = []
    for doc in documents:
        seen.add(doc.doc_id)
        current = existing.get(doc.doc_id)
        if current is not None and current[1] == doc.content_hash():
            report.documents_unchanged += 1
            continue
        if current is not None:
            changed_doc_ids.append(current[0])
            report.documents_updated += 1
        else:
            report.documents_added += 1
        to_add.append(doc)
    gone = (
        [row_id for key, (row_id, _) in existing.items() if key not in seen] if config.prune else []
    )
    report.documents_removed = len(gone)
    stale_doc_ids = changed_doc_ids + gone
    if stale_doc_ids:
        removed_ids = list(
            session.scalars(select(PassageRow.id).where(PassageRow.document_id.in_(stale_doc_ids)))
        )
        session.execute(delete(PassageRow).where(PassageRow.document_id.in_(stale_doc_ids)))
        session.execute(delete(DocumentRow).where(DocumentRow.id.in_(stale_doc_ids)))
        session.flush()

    now = dt.datetime.now(dt.UTC)
    tokenizer = model.tokenizer
    new_passages: list[PassageRow] = []
    embed_inputs: list[str] = []
    for doc in to_add:
        row = DocumentRow(
            doc_key=doc.doc_id,
            title=doc.title,
            source=doc.source,
            text=doc.text,
            content_hash=doc.content_hash(),
            meta=doc.metadata,
            indexed_at=now,
        )
        title = (
            _embed_title(doc.title, tokenizer, title_token_budget(int(model.max_seq_length)))
            if config.embed_titles
            else ""
        )
        for span in split_into_passages(doc.text, tokenizer, budget, config.overlap_tokens):
            text = doc.text[span.start_char : span.end_char]
            passage = PassageRow(
                ordinal=span.ordinal, start_char=span.start_char, end_char=span.end_char, text=text
            )
            row.passages.append(passage)
            new_passages.append(passage)
            embed_inputs.append(f"{title}\n{text}" if title else text)
        session.add(row)
    session.flush()  # assigns passage ids, which become the FAISS ids

    store.remove(np.asarray(removed_ids, dtype=np.int64))
    report.passages_removed = len(removed_ids)
    vectors = _embed_with_progress(model, embed_inputs, config, progress)
    store.add(np.asarray([p.id for p in new_passages], dtype=np.int64), vectors)
    report.passages_embedded = len(new_passages)
    report.total_documents = count_documents(session)
    report.total_passages = count_passages(session)
    if store.ntotal != report.total_passages:
        raise RuntimeError(
            f"FAISS holds {store.ntotal} vectors but SQL holds {report.total_passages} passages; "
            "nothing was committed. Rebuild with --rebuild."
        )

    changed = fresh or bool(to_add) or bool(stale_doc_ids)
    has_bm25 = info is not None and bool(info.bm25_dir) and (index_dir / info.bm25_dir).is_dir()
    if not changed and has_bm25:
        return StoredFiles(info.vector_file, info.bm25_dir)  # nothing changed: touch nothing
    # Both files of one build share its id, which makes a directory listing easy to read.
    build_id = uuid.uuid4().hex[:12]
    bm25_started = time.perf_counter()
    bm25_dir = f"{BM25_PREFIX}{build_id}"
    bm25 = _build_bm25(session)
    if bm25.ntotal != report.total_passages:
        raise RuntimeError(
            f"BM25 holds {bm25.ntotal} passages but SQL holds {report.total_passages}; "
            "nothing was committed. Rebuild with --rebuild."
        )
    bm25.save(index_dir / bm25_dir)
    report.bm25_seconds = time.perf_counter() - bm25_started
    if not changed:
        # An index built before BM25 existed: add the BM25 part, leave the vectors alone.
        logger.info("added the BM25 index this index lacked (%s)", bm25_dir)
        info.bm25_dir = bm25_dir
        return StoredFiles(info.vector_file, bm25_dir)
    vector_file = f"{VECTOR_PREFIX}{build_id}.faiss"
    store.save(index_dir / vector_file)
    if info is None:
        info = IndexInfoRow(id=1)
        session.add(info)
    info.model = spec
    info.dimension = dim
    info.normalized = True
    info.vector_file = vector_file
    info.bm25_dir = bm25_dir
    info.passage_tokens = budget
    info.overlap_tokens = config.overlap_tokens
    info.built_at = now
    info.build_seconds = time.perf_counter() - started
    return StoredFiles(vector_file, bm25_dir)


def _embed_with_progress(
    model, texts: list[str], config: IndexConfig, progress: ProgressCallback | None
) -> np.ndarray:
    bar = tqdm(
        total=len(texts),
        unit="passage",
        desc="embedding",
        disable=not config.show_progress or not texts,
        dynamic_ncols=True,
    )
    last = 0

    def step(done: int, total: int) -> None:
        nonlocal last
        bar.update(done - last)
        last = done
        if progress is not None:
            progress(done, total)

    try:
        return encode_texts(model, texts, batch_size=config.batch_size, progress=step)
    finally:
        bar.close()
