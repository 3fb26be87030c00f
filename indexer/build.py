"""One indexing run as its three steps: plan, chunk and embed, commit.

    documents = read_documents(source)                  # readers.py
    with Index.create(dir).build() as tx:               # index.py: locks, atomic commit
        changes = plan(tx.stored_documents(), documents, origin)   # plan.py, pure
        spans, vectors = chunk and embed changes.to_embed         # this module
        tx.commit(changes, origin, spans, vectors, meta)

`repair_index` rebuilds an index's derived files (vectors, BM25) from its SQL
rows, which hold every passage's text, so a damaged or lost file never needs
the original source.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from indexer.chunking import split_into_passages
from indexer.config import IndexConfig
from indexer.documents import Document, InputIssue, PassageSpan
from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.errors import (
    BadInputError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
)
from indexer.faiss_store import VectorStore
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.passage_text import passage_text
from indexer.plan import Plan, plan
from indexer.readers import read_documents
from indexer.records import BuildMeta, repair_command

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
# Room for the title prefix when passages are embedded as passage_text(title, passage):
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
    warnings: list[str] = field(default_factory=list)

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
            f"{self.bm25_seconds:.1f} s; {len(self.issues)} input issue(s), "
            f"{len(self.warnings)} warning(s)"
        )


def passage_budget(config: IndexConfig, model) -> int:
    """Tokens per passage so that [CLS] + title prefix + passage + [SEP] fit the model."""
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


def embedded_title(title: str, model) -> str:
    """The title as embedded: cut to its token budget so the passage always fits."""
    if not title:
        return ""
    budget = title_token_budget(int(model.max_seq_length))
    ids = model.tokenizer(title, add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    return title if len(ids) <= budget else model.tokenizer.decode(ids[:budget])


def chunk_documents(
    documents: Sequence[Document], model, budget: int, overlap: int, show_progress: bool = False
) -> list[list[PassageSpan]]:
    """Each document's passage spans, in document order."""
    return [
        split_into_passages(doc.text, model.tokenizer, budget, overlap)
        for doc in tqdm(documents, desc="chunking", unit="doc", dynamic_ncols=True,
                        disable=not show_progress or len(documents) < 1000)
    ]


def embedding_inputs(
    documents: Sequence[Document], spans: Sequence[Sequence[PassageSpan]], model, embed_titles: bool
) -> list[str]:
    """What the bi-encoder reads for every passage, in order: `passage_text(title, passage)`."""
    texts: list[str] = []
    for doc, doc_spans in zip(documents, spans, strict=True):
        title = embedded_title(doc.title, model) if embed_titles else ""
        texts.extend(passage_text(title, doc.text[s.start_char : s.end_char]) for s in doc_spans)
    return texts


def embed(
    model, texts: list[str], batch_size: int, show_progress: bool, progress: ProgressCallback | None
) -> np.ndarray:
    """Unit vectors for `texts`, with a tqdm bar in passages and an optional callback."""
    bar = tqdm(total=len(texts), unit="passage", desc="embedding",
               disable=not show_progress or not texts, dynamic_ncols=True)
    last = 0

    def step(done: int, total: int) -> None:
        nonlocal last
        bar.update(done - last)
        last = done
        if progress is not None:
            progress(done, total)

    try:
        return encode_texts(model, texts, batch_size=batch_size, progress=step)
    finally:
        bar.close()


def _read(config: IndexConfig, report: BuildReport) -> list[Document]:
    def on_issue(issue: InputIssue) -> None:
        if config.strict:
            raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
        logger.warning("skipped %s", issue)
        report.issues.append(issue)

    documents = list(
        read_documents(
            config.source,
            on_issue=on_issue,
            csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
            max_document_chars=config.max_document_chars,
        )
    )
    if not documents and not report.issues:
        raise BadInputError(
            f"No documents found in {config.source}. Supported inputs: a folder of .txt/.md "
            "files, a .jsonl with a 'text' field, a .csv with a text column, or a BEIR folder."
        )
    return documents


def _count(report: BuildReport, changes: Plan) -> None:
    report.documents_added = len(changes.add)
    report.documents_updated = len(changes.change)
    report.documents_removed = len(changes.remove)
    report.documents_unchanged = len(changes.unchanged)
    for moved in changes.moved:
        logger.warning("%s", moved)
        report.warnings.append(str(moved))


def build_index(config: IndexConfig, progress: ProgressCallback | None = None) -> BuildReport:
    """Bring the index in `config.index_dir` in line with `config.source`; return what changed.

    The source is read before the index folder is touched, so a missing or empty source
    fails harmlessly.
    """
    started = time.perf_counter()
    spec = ModelSpec.resolve(config.model)
    report = BuildReport(index_dir=config.index_dir, model=spec.id)
    documents = _read(config, report)
    origin = str(config.source.resolve())
    model = load_bi_encoder(spec)
    meta = BuildMeta(spec, embedding_dimension(model), passage_budget(config, model),
                     config.overlap_tokens, config.embed_titles, started)
    index = Index.create(config.index_dir, config.db_url)
    try:
        with index.build(rebuild=config.rebuild) as tx:
            tx.check_compatible(meta)  # before minutes of embedding, not after
            changes = plan(tx.stored_documents(), documents, origin, prune=config.prune)
            _count(report, changes)
            docs = changes.to_embed
            spans = chunk_documents(docs, model, meta.passage_tokens, meta.overlap_tokens,
                                    config.show_progress)
            texts = embedding_inputs(docs, spans, model, config.embed_titles)
            vectors = embed(model, texts, config.batch_size, config.show_progress, progress)
            result = tx.commit(changes, origin, spans, vectors, meta)
    finally:
        index.close()
    report.passages_embedded = len(texts)
    report.passages_removed = result.passages_removed
    report.total_documents = result.documents
    report.total_passages = result.passages
    report.bm25_seconds = result.bm25_seconds
    report.seconds = time.perf_counter() - started
    logger.debug("build finished: %s", report.summary())
    return report


@dataclass(frozen=True)
class RepairReport:
    index_dir: Path
    vectors_reembedded: int
    bm25_rebuilt: bool
    problems: list[str]

    def summary(self) -> str:
        if not self.problems:
            return f"{self.index_dir}: nothing to repair; the vectors and BM25 match the stored rows."
        done = [f"re-embedded {self.vectors_reembedded} passages"] if self.vectors_reembedded else []
        done += ["rebuilt BM25"] if self.bm25_rebuilt else []
        return f"{self.index_dir}: found {'; '.join(self.problems)}; {', '.join(done)}."


def repair_index(
    index_dir: Path | str,
    db_url: str | None = None,
    reembed: bool = False,
    batch_size: int = 64,
    show_progress: bool = True,
) -> RepairReport:
    """Rebuild damaged or missing derived files from the SQL rows, which hold every passage.

    BM25 is always rebuilt when the commit writes; the vectors are re-embedded only when
    their file is damaged, or when `reembed` asks (the model's files changed: the message
    that refuses such an index says to pass it).
    """
    started = time.perf_counter()
    index = Index.create(index_dir, db_url)
    problems: list[str] = []
    try:
        with index.build() as tx:
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
            if reembed and "the model's files changed" not in problems:
                problems.append("re-embedding asked for")
            if not problems:
                tx.result = (info.vector_file, info.bm25_dir)
                return RepairReport(index.index_dir, 0, False, [])
            model = load_bi_encoder(spec)
            meta = BuildMeta(spec, embedding_dimension(model), info.passage_tokens,
                             info.overlap_tokens, info.embed_titles, started)
            reembedded = 0
            if vectors is None or reembed:
                vectors = VectorStore.create(meta.dimension)
                bar = tqdm(total=info.passages, unit="passage", desc="re-embedding",
                           disable=not show_progress, dynamic_ncols=True)
                for ids, titles, texts in tx.stored_passages():
                    inputs = [passage_text(embedded_title(t, model) if info.embed_titles else "", x)
                              for t, x in zip(titles, texts, strict=True)]
                    vectors.add(ids, encode_texts(model, inputs, batch_size=batch_size))
                    reembedded += len(ids)
                    bar.update(len(ids))
                bar.close()
            tx.replace_vectors(vectors, meta)
    finally:
        index.close()
    return RepairReport(index.index_dir, reembedded, True, problems)
