"""`repair_index`: rebuild an index's derived files (vectors, BM25) from its SQL rows.

The rows hold every passage's text, so a damaged or lost file never needs the
original source; only a changed model makes it re-embed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.errors import IndexMismatchError, IndexNotFoundError, IndexUnreadableError
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.sources.documents import Document, source_file
from indexer.sources.outline import outline_of_text
from indexer.sources.passage_text import bi_encoder_input
from indexer.sources.readers import content_name, read_labelled_file
from indexer.store import sql_store
from indexer.store.faiss_store import VectorStore
from indexer.store.manifest import read_manifest
from indexer.store.records import BuildMeta, repair_command
from indexer.store.schema import passage_checksum
from indexer.store.transaction import WriteTransaction


@dataclass(frozen=True)
class RepairReport:
    index_dir: Path
    vectors_reembedded: int
    bm25_rebuilt: bool
    problems: list[str]
    manifest_rewritten: bool = False
    texts_restored: list[str] = field(default_factory=list)  # documents whose altered text was restored
    texts_lost: list[str] = field(default_factory=list)  # documents whose text could not be

    def summary(self) -> str:
        if not self.problems:
            return f"{self.index_dir}: nothing to repair; the vectors and BM25 match the stored rows."
        done = ["rewrote index.json from the database"] if self.manifest_rewritten else []
        if self.texts_restored:
            done.append(f"restored the text of {len(self.texts_restored)} document(s) "
                        f"({', '.join(map(repr, self.texts_restored[:5]))})")
        done += [f"re-embedded {self.vectors_reembedded} passages"] if self.vectors_reembedded else []
        done += ["rebuilt BM25"] if self.bm25_rebuilt else []
        lost = ""
        if self.texts_lost:
            lost = (f" The text of {len(self.texts_lost)} document(s) could not be restored, as neither its "
                    f"stored copy nor its source still matches what was indexed: "
                    f"{', '.join(map(repr, self.texts_lost[:5]))}. Index them again from their source: "
                    "python -m indexer build --source PATH --index "
                    f"{self.index_dir} --rebuild")
        return f"{self.index_dir}: found {'; '.join(self.problems)}; {', '.join(done) or 'nothing repaired'}.{lost}"


def repair_index(
    index_dir: Path | str,
    db_url: str | None = None,
    reembed: bool = False,
    batch_size: int = 64,
    show_progress: bool = True,
    model: Any = None,
) -> RepairReport:
    """Rebuild damaged or missing derived files from the SQL rows, which hold every passage.

    BM25 is always rebuilt when the commit writes, as it is when it was built by older rules (the
    title weight or stop words of a version before); the vectors are re-embedded only when
    their file is damaged, or when `reembed` asks (the model's files changed: the message
    that refuses such an index says to pass it). `model` is the loaded bi-encoder to re-embed
    with, the index's own model in another runtime or precision (bench/bench_encode.py); by
    default the index's model is loaded.
    """
    started = time.perf_counter()
    index = Index.create(index_dir, db_url)
    lost = read_manifest(index.layout.manifest) is None  # the transaction recovers it from the rows
    problems: list[str] = [f"a missing or unreadable {index.layout.manifest.name}"] if lost else []
    try:
        with index.transaction() as tx:
            info = tx.info
            if info is None:
                raise IndexNotFoundError(
                    f"No committed index in {index.index_dir} to repair. Build one with: "
                    f"python -m indexer build --source PATH --index {index.index_dir}"
                )
            spec = ModelSpec.resolve(info.model)
            if spec.fingerprint() != info.model_fingerprint:
                if not reembed:
                    raise IndexMismatchError(
                        f"The model files in {spec.path} changed since the index was built. Pass "
                        f"--reembed to re-embed every stored passage with the model now there: "
                        f"{repair_command(index.index_dir)} --reembed"
                    )
                problems.append("the model's files changed")
            vectors: VectorStore | None
            try:
                vectors = tx.committed_vectors()
            except (IndexUnreadableError, FileNotFoundError) as err:
                problems.append(f"damaged vectors ({err})".split(" Its text is safe")[0])
                vectors = None
            if not tx.committed_bm25_ok():
                problems.append("a damaged or missing BM25 folder")
            elif changes := tx.committed_bm25_changes():
                problems.append(f"BM25 built by older rules ({'; '.join(changes)})")
            if reembed and "the model's files changed" not in problems:
                problems.append("re-embedding asked for")
            text_check = check_texts(tx)
            if text_check.altered:
                problems.append(f"altered text in {text_check.altered} passage(s)")
            files_fine = not [p for p in problems if not p.startswith(("a missing or unreadable", "altered text"))]
            if files_fine:
                tx.keep_committed()
                return RepairReport(index.index_dir, 0, False, problems, manifest_rewritten=lost,
                                    texts_restored=text_check.restored, texts_lost=text_check.lost)
            reembedded = 0
            embed = vectors is None or reembed
            if embed:  # loaded only to embed: BM25 alone is rebuilt from the rows
                model = model if model is not None else load_bi_encoder(spec, encoding=info.vector_encoding)
            meta = BuildMeta(spec, embedding_dimension(model) if embed else info.dimension, info.passage_tokens,
                             info.overlap_tokens, info.embed_titles, started, encoding=info.vector_encoding)
            if embed:
                vectors = VectorStore.create(meta.dimension)
                bar = tqdm(total=info.passages, unit="passage", desc="re-embedding",
                           disable=not show_progress, dynamic_ncols=True)
                for ids, titles, texts in tx.stored_passages():
                    inputs = [bi_encoder_input(t, x, model, info.embed_titles)
                              for t, x in zip(titles, texts, strict=True)]
                    vectors.add(ids, encode_texts(model, inputs, batch_size=batch_size))
                    reembedded += len(ids)
                    bar.update(len(ids))
                bar.close()
            tx.replace_vectors(vectors, meta)
    finally:
        index.close()
    return RepairReport(index.index_dir, reembedded, True, problems, manifest_rewritten=lost,
                        texts_restored=text_check.restored, texts_lost=text_check.lost)


@dataclass
class TextCheck:
    """What `check_texts` found: passages whose checksum did not match, the documents restored
    and those that could not be, and rows given the checksum they lacked."""

    altered: int = 0
    restored: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    filled: int = 0


def check_texts(tx: WriteTransaction) -> TextCheck:
    """Verify every passage's title and text against its checksum, in the build's transaction.

    An altered passage is restored from its document's stored text when that still matches the
    document's content hash, else from the source file it was read from when that still holds
    the same document; otherwise its document is reported lost. Rows from before checksums get one.
    """
    found = TextCheck()
    suspects: dict[int, int] = {}
    for rows in sql_store.passage_checksum_blocks(tx.session):
        missing = {}
        for row in rows:
            digest = passage_checksum(row.title, row.text)
            if row.text_hash is None:
                missing[row.id] = digest
            elif row.text_hash != digest:
                suspects[row.document_id] = suspects.get(row.document_id, 0) + 1
        sql_store.set_text_hashes(tx.session, missing)
        found.filled += len(missing)
    for document_id, altered in suspects.items():
        found.altered += altered
        stored = sql_store.stored_document(tx.session, document_id)
        original = _original_document(stored)
        if original is None:
            found.lost.append(stored.doc_key)
            continue
        sql_store.restore_document(tx.session, document_id, original.title, original.text, original.metadata)
        found.restored.append(stored.doc_key)
    return found


def _original_document(stored) -> Document | None:
    """The document as it was indexed: its stored row when that still matches its content hash,
    else its source file's when that does; None when neither does."""
    kept = Document(doc_id=stored.doc_key, title=stored.title, text=stored.text, source=stored.source,
                    metadata=dict(stored.meta or {}))
    if kept.content_hash() == stored.content_hash:
        return kept
    # A Markdown or reST file's outline comes from its text (a PDF's does not: its file is read below).
    outlined = replace(kept, outline=outline_of_text(content_name(Path(stored.source)), stored.text))
    if outlined.outline and outlined.content_hash() == stored.content_hash:
        return outlined
    path = source_file(stored.origin, stored.source)
    if not path.is_file():
        return None
    try:
        for doc in read_labelled_file(path, stored.source, on_issue=lambda issue: None):
            if doc.doc_id == stored.doc_key and doc.content_hash() == stored.content_hash:
                return doc
    except OSError:
        return None
    return None
