"""A build whose vectors were computed elsewhere: `python -m indexer build --embeddings FILE`.

A user who encodes on a GPU box or a cluster brings one vector per source document (formats and
checks: `indexer.sources.vector_input`) and declares with `--model` the model that made them; it must be
the index's model (same id, fingerprint and dimension, as `WriteTransaction.check_compatible`
enforces), since queries are encoded with it. The text goes to SQL and BM25 as in any build, so
search works as usual. The contract:

- each document is ONE passage, its whole text (span 0..len(text), ordinal 0): the user chunked
  before encoding, and `vector == encode(passage_text(title, text))` is up to them;
- every document the build adds or changes needs a vector; a vector whose id is not a document of
  the source is an error; vectors of unchanged documents are ignored (their text decides, as in
  any build: pass --rebuild to replace every stored vector);
- a source .jsonl may carry its own vectors (FILE the same file): its `embedding` field is then
  not kept as metadata;
- a large float32 .npy of unit rows is read where it lies, not copied (`vector_input.IN_PLACE_TOLERANCE`):
  it must not change until the build ends;
- the file is checked in full before the index is touched, and what needs the index (its model,
  the documents to add) inside the first transaction, before anything is written: a bad file
  leaves the index as it was. A source larger than one window (`source_stream`) is planned a
  window at a time, so a vector missing for a document that a later window changes stops the
  build there, with the earlier windows committed, as an interrupted build would;
- commits go through the one build loop (`build_loop`, with `TableEmbedder` as its embedder),
  so an interrupted ingest keeps its finished chunks, a rerun resumes, and an unchanged rerun
  writes nothing.

Nothing here imports torch or sentence-transformers: the model's dimension is read from its files.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.build.config import IndexConfig
from indexer.build.loop import Embedder, commit_in_chunks, interrupted_before_writing, read_source
from indexer.build.report import BuildReport, ProgressCallback
from indexer.errors import BadInputError
from indexer.layout import IndexLayout
from indexer.model_spec import ModelSpec
from indexer.sources.documents import Document, PassageSpan
from indexer.sources.vector_input import VectorTable, load_vectors, model_dimension
from indexer.store.plan import Plan
from indexer.store.records import BuildMeta
from indexer.store.transaction import WriteTransaction

logger = logging.getLogger(__name__)

# The field of a source .jsonl that holds its vector: not metadata (nor part of the content hash).
VECTOR_FIELD = "embedding"
# How many documents without a vector the error names.
MISSING_SHOWN = 5


def whole_text(doc: Document) -> list[PassageSpan]:
    """A document as one passage: the passage an ingested vector stands for."""
    return [PassageSpan(ordinal=0, start_char=0, end_char=len(doc.text))]


def ingest_embeddings(
    config: IndexConfig,
    embeddings: Path | str,
    normalize: bool = False,
    progress: ProgressCallback | None = None,
) -> BuildReport:
    """Bring the index in `config.index_dir` in line with `config.source`, with the vectors in
    `embeddings` instead of embedding here; return what changed, as `build_index` does.

    `normalize` scales vectors that are not unit length (else they are refused). `progress`
    gets (documents committed, documents to commit) after each commit.
    """
    started = time.perf_counter()
    spec = ModelSpec.resolve(config.model)
    report = BuildReport(index_dir=config.index_dir, model=spec.id)
    try:
        documents = read_source(config, report, _without_vector)
        dimension = model_dimension(spec)
        table = load_vectors(embeddings, dimension, model=spec.label,
                             known_ids=documents.ids(), source=str(config.source),
                             normalize=normalize)
        if table.rescaled:
            logger.info("scaled %d vectors of %s to unit length", table.rescaled, table.path)
        meta = BuildMeta(model=spec, dimension=dimension, passage_tokens=0, overlap_tokens=0,
                         embed_titles=False, started=started, vector_index=config.vector_index,
                         segments=config.segments, shards=config.shards)
        spec.fingerprint()  # hashed here, not inside the first transaction
        if (config.rebuild or not IndexLayout(config.index_dir).manifest.is_file()) and documents.whole:
            _check_missing(documents.first, table, config.source)  # all are new: say so before mkdir
    except KeyboardInterrupt:
        raise interrupted_before_writing(config) from None
    return commit_in_chunks(config, report, started, documents, TableEmbedder(table, config.source),
                            meta, progress)


class TableEmbedder(Embedder):
    """Precomputed vectors as the build loop's `Embedder`: each document one passage, its whole
    text, and the table's vector for its id. No small first commit: nothing to wait for."""

    unit = "doc"
    embeds = False
    first_commit = None

    def __init__(self, table: VectorTable, source: Path) -> None:
        self.table, self.source = table, source
        self.warnings: list[str] = []

    def settle(self, tx: WriteTransaction, meta: BuildMeta) -> BuildMeta:
        return _check_index(tx, self.table, meta)

    def check(self, changes: Plan) -> None:
        _check_missing(changes.to_embed, self.table, self.source)

    def passages(self, doc: Document) -> list[PassageSpan]:
        return whole_text(doc)

    def estimate(self, to_embed: Sequence[Document]) -> int:
        return len(to_embed)

    def embed(self, docs: Sequence[Document], spans: Sequence[Sequence[PassageSpan]],
              step: ProgressCallback) -> np.ndarray:
        return self.table.take([doc.doc_id for doc in docs])


def _without_vector(doc: Document) -> Document:
    if VECTOR_FIELD not in doc.metadata:
        return doc
    metadata = {k: v for k, v in doc.metadata.items() if k != VECTOR_FIELD}
    return dataclasses.replace(doc, metadata=metadata)


def _check_index(tx: WriteTransaction, table: VectorTable, meta: BuildMeta) -> BuildMeta:
    """The build's meta for this index; a BadInputError when the vectors cannot go into it."""
    info = tx.info
    if info is None:
        return meta
    if info.dimension != table.dimension:
        raise BadInputError(
            f"{table.path}, row 1 (id {table.ids[0]!r}): the vectors have {table.dimension} values "
            f"(model {meta.model.label}), but the index in {tx.layout.root} holds vectors of "
            f"{info.dimension} from model {info.model}. Pass --model {info.model} with vectors that "
            "model made, build into another --index folder, or pass --rebuild to replace the index."
        )
    # Ingested documents are whole passages: the index's chunking settings stay as recorded, and so
    # does its encoding (vectors computed elsewhere are declared to be the model's, in any precision).
    meta = dataclasses.replace(meta, passage_tokens=info.passage_tokens, overlap_tokens=info.overlap_tokens,
                               embed_titles=info.embed_titles, encoding=info.vector_encoding)
    tx.check_compatible(meta)
    return meta


def _check_missing(to_embed: list[Document], table: VectorTable, source: Path) -> None:
    missing = [doc for doc in to_embed if doc.doc_id not in table]
    if not missing:
        return
    shown = ", ".join(f"{doc.doc_id!r} ({doc.location})" for doc in missing[:MISSING_SHOWN])
    more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
    raise BadInputError(
        f"{table.path} has no vector for {len(missing)} document(s) of {source} that this build "
        f"must add or change: {shown}{more}. Add a row (id, embedding) for each, or leave them out "
        "of the source; nothing was written."
    )
