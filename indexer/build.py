"""One indexing run as its three steps: plan, chunk and embed, commit.

    documents = read_documents(source)                  # readers.py
    with Index.create(dir).build() as tx:               # index.py: locks, atomic commit
        changes = plan(tx.stored_documents(), documents, origin)   # plan.py, pure
        spans, vectors = chunk and embed changes.to_embed         # this module
        tx.commit(changes, origin, spans, vectors, meta)

`indexer.repair.repair_index` rebuilds an index's derived files (vectors, BM25) from its SQL
rows, which hold every passage's text, so a damaged or lost file never needs
the original source.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from indexer.chunking import left_out, split_into_passages
from indexer.config import DEFAULT_OVERLAP_TOKENS, IndexConfig
from indexer.documents import Document, InputIssue, PassageSpan
from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.errors import (
    BadInputError,
    BuildInterrupted,
)
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.passage_text import passage_text
from indexer.plan import Plan, Skipped, plan
from indexer.readers import read_documents
from indexer.records import BuildMeta, CommitResult, IndexInfo

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]
# Room for the title prefix when passages are embedded as passage_text(title, passage):
# at most 32 tokens, and at most an eighth of what the model reads.
MAX_TITLE_TOKENS = 32
# How many skipped inputs the error for a source with nothing to index names.
MAX_ISSUES_SHOWN = 5
# The embedding bar moves about this often; its first step is small, then sized by the rate.
PROGRESS_SECONDS = 2.0
FIRST_PROGRESS_STEP = 8
MAX_PROGRESS_STEP = 4096
# The first commit of a new index's first build holds this many passages, each next one twice as
# many (see `next_commit_size`): a search sees the first documents within seconds. A build into
# an index that already answers starts at `commit_passages`: fewer commits, fewer segments.
FIRST_COMMIT_PASSAGES = 16


def next_commit_size(current: int, stored_passages: int, cap: int) -> int:
    """Passages in the next commit: twice the last, up to `cap`, or up to a quarter of what the
    index already holds when that is more.

    Every commit rewrites the vector file and BM25 over all stored passages, so a fixed cap
    made a large build quadratic (a million passages in 4096-passage commits is some 250
    rewrites of a growing index). Commits that grow with the index keep the total rewrite
    cost within a few times one final write, and an interruption still loses one commit.
    """
    return min(2 * current, max(cap, stored_passages // 4))


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
    commits: int = 0
    documents_committed: int = 0
    issues: list[InputIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    vector_index: str = ""  # the committed FAISS index, e.g. "IVF1024,SQ8 (nprobe 16, recall@10 0.962)"
    notes: list[str] = field(default_factory=list)  # merges that retrained or changed the index type

    def add_commit(self, result: CommitResult) -> None:
        """Count one commit's figures into the report."""
        self.passages_removed += result.passages_removed
        self.total_documents = result.documents
        self.total_passages = result.passages
        self.bm25_seconds += result.bm25_seconds
        self.commits += int(result.wrote_files)
        self.vector_index = result.vector_index or self.vector_index
        if result.note:
            self.notes.append(result.note)

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
            f"{self.bm25_seconds:.1f} s; vector index {self.vector_index or 'unchanged'}; "
            f"{len(self.issues)} input issue(s), {len(self.warnings)} warning(s)"
            + "".join(f"\n  note: {note}" for note in self.notes)
        )


@dataclass(frozen=True)
class Chunking:
    """How a build cuts and embeds passages: what the index records as its settings."""

    passage_tokens: int
    overlap_tokens: int
    embed_titles: bool


def chunking_for(config: IndexConfig, model, info: IndexInfo | None) -> Chunking:
    """The build's chunking: each setting as `config` gives it, else the index's (`info`), else
    the default; `passage_tokens` fitted so that [CLS] + title prefix + passage + [SEP] fit
    the model. A setting that differs from the index's is refused later, by
    `BuildTransaction.check_compatible`, naming --rebuild."""
    embed_titles = config.embed_titles if config.embed_titles is not None else (
        info.embed_titles if info is not None else True)
    overlap = config.overlap_tokens if config.overlap_tokens is not None else (
        info.overlap_tokens if info is not None else DEFAULT_OVERLAP_TOKENS)
    wanted = config.passage_tokens if config.passage_tokens is not None else (
        info.passage_tokens if info is not None else None)
    model_max = int(model.max_seq_length)
    room = model_max - 2 - (title_token_budget(model_max) + 1 if embed_titles else 0)
    if wanted is None:
        budget = room
    elif wanted > room:
        raise ValueError(
            f"passage_tokens ({wanted}) does not fit the model's max sequence "
            f"length ({model_max}) with its special and title tokens; use at most {room}."
        )
    else:
        budget = wanted
    if overlap >= budget:
        raise ValueError(
            f"overlap_tokens ({overlap}) must be smaller than the passage length "
            f"({budget} tokens); lower --overlap."
        )
    return Chunking(budget, overlap, embed_titles)


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
    """Unit vectors for `texts`, with a tqdm bar in passages and an optional callback.

    Progress is reported about every `PROGRESS_SECONDS`: the texts are fed longest first
    (as `encode_texts` orders them) in steps sized by the rate measured so far, so a slow
    CPU at 5 passages/s still moves the bar every few seconds and a GPU is not slowed by
    small steps.
    """
    n = len(texts)
    bar = tqdm(total=n, unit="passage", desc="embedding",
               disable=not show_progress or not texts, dynamic_ncols=True)
    out = np.empty((n, embedding_dimension(model)), dtype=np.float32)
    order = np.argsort([-len(t) for t in texts], kind="stable")
    done, step = 0, min(batch_size, FIRST_PROGRESS_STEP)
    try:
        while done < n:
            idx = order[done : done + step]
            began = time.perf_counter()
            out[idx] = encode_texts(model, [texts[i] for i in idx], batch_size=batch_size)
            rate = len(idx) / max(time.perf_counter() - began, 1e-3)
            done += len(idx)
            bar.update(len(idx))
            if progress is not None:
                progress(done, n)
            step = int(min(max(rate * PROGRESS_SECONDS, 1), MAX_PROGRESS_STEP))
    finally:
        bar.close()
    return out


def _read(config: IndexConfig, report: BuildReport) -> list[Document]:
    def on_issue(issue: InputIssue) -> None:
        if not issue.retains_stored:  # left out on purpose (a second link to a file): a warning
            logger.warning("%s", issue)
            report.warnings.append(str(issue))
            return
        if config.strict:
            raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
        logger.warning("skipped %s%s", issue, f" ({issue.cli_hint})" if issue.cli_hint else "")
        report.issues.append(issue)

    documents = list(
        read_documents(
            config.source,
            on_issue=on_issue,
            csv_columns=(config.csv_id_column, config.csv_title_column, config.csv_text_column),
            max_document_chars=config.max_document_chars,
            exclude=config.index_dir,
        )
    )
    if not documents and not report.issues:
        raise BadInputError(
            f"No documents found in {config.source}. Supported inputs: a folder of text files "
            "(any name; gzip too), a .jsonl with a 'text' field, a .csv with a text column, or a "
            "BEIR folder."
        )
    if not documents:  # an index of nothing would only hide the problem
        shown = "; ".join(str(issue) for issue in report.issues[:MAX_ISSUES_SHOWN])
        more = len(report.issues) - MAX_ISSUES_SHOWN
        raise BadInputError(
            f"Nothing in {config.source} can be indexed, so nothing was written: "
            f"{shown}{f'; and {more} more' if more > 0 else ''}. Fix these and run the build again."
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
    if changes.kept:
        shown = ", ".join(changes.kept[:MAX_ISSUES_SHOWN])
        more = f" and {len(changes.kept) - MAX_ISSUES_SHOWN} more" if len(changes.kept) > MAX_ISSUES_SHOWN else ""
        warning = (f"kept the stored version of {len(changes.kept)} document(s) whose input was "
                   f"skipped this time ({shown}{more}); fix the input named above and build again, "
                   "or delete it from the source to remove it from the index")
        logger.warning("%s", warning)
        report.warnings.append(warning)


class PassageCutter:
    """Cuts documents into passages when first asked, and remembers them for the build.

    The build loop asks only for the documents a commit looks at (see `next_chunk`), so the
    first commit of a large build lands without cutting the whole source first.
    """

    def __init__(self, tokenizer, passage_tokens: int, overlap_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.passage_tokens = passage_tokens
        self.overlap_tokens = overlap_tokens
        self.cut: dict[str, list[PassageSpan]] = {}
        self.warnings: list[str] = []  # stretches left out of passages, one line each

    def __call__(self, doc: Document) -> list[PassageSpan]:
        spans = self.cut.get(doc.doc_id)
        if spans is None:
            spans = split_into_passages(doc.text, self.tokenizer, self.passage_tokens,
                                        self.overlap_tokens)
            self.cut[doc.doc_id] = spans
            for start, end in left_out(doc.text, spans):
                self.warnings.append(
                    f"{doc.location}: characters {start:,}-{end:,} ({end - start:,} characters "
                    "without a space, such as base64 or a minified line) are kept in the stored "
                    "text but left out of its passages: the model could only read them as one "
                    "unknown word")
        return spans


def next_chunk(changes: Plan, passages_of: Callable[[Document], Sequence[PassageSpan]],
               passages: int) -> Plan:
    """The part of `changes` one commit takes: the removals, and the first documents to embed
    up to `passages` passages (at least one document).

    `passages_of` gives a document's passages (cutting it if needed); it is asked for exactly
    the documents this function looks at, so no caller has to guess ahead which documents
    those are. Every commit of a build re-plans against what is stored and takes the next
    chunk of that plan, so an interrupted build, run again, resumes after its last commit.
    """
    take: set[str] = set()
    count = 0
    for doc in changes.to_embed:
        size = len(passages_of(doc))
        if take and count + size > passages:
            break
        take.add(doc.doc_id)
        count += size
    return Plan(
        add=[d for d in changes.add if d.doc_id in take],
        change=[d for d in changes.change if d.doc_id in take],
        remove=changes.remove,
        unchanged=changes.unchanged,
        moved=[m for m in changes.moved if m.doc_id in take],
        kept=changes.kept,
    )


def _commit_without_model(config: IndexConfig, documents: list[Document], origin: str,
                          spec: ModelSpec, report: BuildReport, started: float) -> bool:
    """Commit a plan that embeds nothing (an unchanged source, or removals only) without the
    bi-encoder, whose import and load cost seconds; True when it did.

    The stored build's settings are the commit's meta, and the commit still verifies the
    files. Anything else is left to the full build, which loads the model and checks it
    (False, nothing committed): --rebuild, a first build, another model or changed model
    files, other chunking settings, or something to embed (planned twice then, which is
    cheap beside embedding).
    """
    if config.rebuild or not config.index_dir.is_dir():
        return False  # a first build's folder is created only once the model has loaded
    index = Index.create(config.index_dir, config.db_url)
    try:
        if index.manifest is None:
            return False
        with index.build() as tx:
            info = tx.info
            if (info is None
                    or (info.model, info.model_fingerprint) != (spec.id, spec.fingerprint())
                    or config.overlap_tokens not in (None, info.overlap_tokens)
                    or config.embed_titles not in (None, info.embed_titles)
                    or config.passage_tokens not in (None, info.passage_tokens)):
                return False
            changes = plan_commit(tx, config, documents, origin, report)
            if changes.to_embed:
                return False
            meta = BuildMeta(spec, info.dimension, info.passage_tokens, info.overlap_tokens,
                             info.embed_titles, started, config.vector_index, config.segments)
            result = tx.commit(changes, origin, [], np.empty((0, info.dimension), np.float32), meta)
    except KeyboardInterrupt:
        raise BuildInterrupted(_interrupted_message(config, report)) from None
    finally:
        index.close()
    _count(report, changes)
    report.add_commit(result)
    return True


def plan_commit(tx, config: IndexConfig, documents: Sequence[Document], origin: str,
          report: BuildReport) -> Plan:
    """The plan of one commit: `documents` against what `tx` stores, keeping what the read skipped."""
    stored = tx.stored_documents([d.doc_id for d in documents], origin if config.prune else None)
    return plan(stored, documents, origin, prune=config.prune, skipped=Skipped.of(report.issues))


def build_index(config: IndexConfig, progress: ProgressCallback | None = None) -> BuildReport:
    """Bring the index in `config.index_dir` in line with `config.source`; return what changed.

    The source is read before the index folder is touched, so a missing or empty source
    fails harmlessly. The changes commit in chunks (see `next_chunk`), each one atomic; Ctrl-C
    raises `BuildInterrupted`, whose message says what was committed and how to resume.
    """
    if config.embeddings is not None:  # vectors computed elsewhere: nothing to embed here
        from indexer.ingest import ingest_embeddings

        return ingest_embeddings(config, config.embeddings, config.normalize_embeddings, progress)
    started = time.perf_counter()
    spec = ModelSpec.resolve(config.model)
    report = BuildReport(index_dir=config.index_dir, model=spec.id)
    origin = str(config.source.resolve())
    try:
        documents = _read(config, report)
        if _commit_without_model(config, documents, origin, spec, report, started):
            report.seconds = time.perf_counter() - started
            logger.debug("build finished without the model: %s", report.summary())
            return report
        model = load_bi_encoder(spec)
        chunking = chunking_for(config, model, None)  # explicit settings checked before mkdir
        meta = BuildMeta(spec, embedding_dimension(model), chunking.passage_tokens,
                         chunking.overlap_tokens, chunking.embed_titles, started,
                         config.vector_index, config.segments)
    except KeyboardInterrupt:
        raise interrupted_before_writing(config) from None
    return commit_in_chunks(config, report, started, "build", lambda index: _build_in_chunks(
        config, index, documents, origin, model, meta, report, progress))


def interrupted_before_writing(config: IndexConfig) -> BuildInterrupted:
    return BuildInterrupted(f"Interrupted before anything was written to {config.index_dir}; run the "
                            "same command again to build it.")


def commit_in_chunks(config: IndexConfig, report: BuildReport, started: float, what: str,
                     run: Callable[[Index], None]) -> BuildReport:
    """Open (or create) the index and `run` a build's chunked commits into it: Ctrl-C says what
    was committed and how to resume; `report` gets the total time. Shared by embedding and ingest."""
    index = Index.create(config.index_dir, config.db_url)
    try:
        run(index)
    except KeyboardInterrupt:
        raise BuildInterrupted(_interrupted_message(config, report)) from None
    finally:
        index.close()
    report.seconds = time.perf_counter() - started
    logger.debug("%s finished: %s", what, report.summary())
    return report


def nothing_to_embed(doc: Document) -> InputIssue:
    return InputIssue(doc.source, doc.line, "nothing the model can read (the tokenizer drops every "
                      "character: invisible, control or private-use ones); give it visible text",
                      doc_id=doc.doc_id)


def _build_in_chunks(config: IndexConfig, index: Index, documents: list[Document], origin: str,
                     model, meta: BuildMeta, report: BuildReport,
                     progress: ProgressCallback | None) -> None:
    """Commit the plan chunk by chunk, each chunk one `index.build()` transaction.

    A document the tokenizer leaves no passage of is reported as skipped input when its
    chunk comes: it is not stored, and a stored version of it is kept (`plan.Skipped`).
    """
    cutter = PassageCutter(model.tokenizer, meta.passage_tokens, meta.overlap_tokens)
    bar: tqdm | None = None
    embed_step: Callable[..., np.ndarray] = embed  # with --ray: a RayStream over the whole plan
    total = offset = 0
    rebuild, chunk_size, first = config.rebuild, min(FIRST_COMMIT_PASSAGES, config.commit_passages), True

    def step(done: int, _chunk_total: int) -> None:
        """One bar and one callback over the whole build, not one per chunk."""
        if bar is not None:
            bar.n = offset + done
            bar.refresh()
        if progress is not None:
            progress(offset + done, max(total, offset + done))

    try:
        while True:
            with index.build(rebuild=rebuild) as tx:
                if first:  # the index's own chunking where the build does not set it
                    chunking = chunking_for(config, model, tx.info)
                    meta = dataclasses.replace(meta, passage_tokens=chunking.passage_tokens,
                                               overlap_tokens=chunking.overlap_tokens,
                                               embed_titles=chunking.embed_titles)
                    cutter = PassageCutter(model.tokenizer, meta.passage_tokens, meta.overlap_tokens)
                tx.check_compatible(meta)  # before minutes of embedding, not after
                changes = plan_commit(tx, config, documents, origin, report)
                if first and tx.info is not None:  # an index that answers already: no small first commit
                    chunk_size = config.commit_passages
                if first and config.ray is not None:  # Ray streams the whole plan: cut it all now
                    for doc in changes.to_embed:
                        cutter(doc)
                # Only what this commit takes is cut into passages, so the first commit lands
                # within seconds; the bar's total is estimated from what is cut so far.
                taken = next_chunk(changes, cutter, chunk_size)
                empty = [doc for doc in taken.to_embed if not cutter(doc)]
                chunk = _without(taken, {doc.doc_id for doc in empty})
                docs = chunk.to_embed
                if first:
                    _count(report, changes)
                if empty:
                    _skip_empty(empty, changes, report)
                    gone = {doc.doc_id for doc in empty}
                    documents = [doc for doc in documents if doc.doc_id not in gone]
                total = report.passages_embedded + estimated_passages(
                    [d for d in changes.to_embed if d not in empty], cutter.cut)
                if first:
                    bar = tqdm(total=total, unit="passage", desc="embedding", dynamic_ncols=True,
                               disable=not config.show_progress or not total)
                    if config.ray is not None:  # one Ray pipeline for every chunk: see ray_embed.py
                        from indexer.ray_embed import RayStream

                        embed_step = RayStream(config.ray, meta.model, embedding_inputs(
                            changes.to_embed, [cutter(d) for d in changes.to_embed], model,
                            meta.embed_titles))
                elif bar is not None:
                    bar.total = total
                chunk_spans = [cutter(d) for d in docs]
                for warning in cutter.warnings:
                    logger.warning("%s", warning)
                report.warnings.extend(cutter.warnings)
                cutter.warnings.clear()
                texts = embedding_inputs(docs, chunk_spans, model, meta.embed_titles)
                offset = report.passages_embedded
                vectors = embed_step(model, texts, config.batch_size, False, step)
                result = tx.commit(chunk, origin, chunk_spans, vectors, meta)
            report.passages_embedded += len(texts)
            report.documents_committed += len(docs)
            report.add_commit(result)
            if len(taken.to_embed) == len(changes.to_embed):
                return
            rebuild, first = False, False
            chunk_size = next_commit_size(chunk_size, result.passages, config.commit_passages)
    finally:
        if bar is not None:
            bar.close()
        if embed_step is not embed:
            embed_step.close()


def _without(changes: Plan, ids: set[str]) -> Plan:
    if not ids:
        return changes
    return dataclasses.replace(changes, add=[d for d in changes.add if d.doc_id not in ids],
                               change=[d for d in changes.change if d.doc_id not in ids])


def _skip_empty(empty: Sequence[Document], changes: Plan, report: BuildReport) -> None:
    """Report documents with no passage as skipped input, and take them out of the counts."""
    added = {doc.doc_id for doc in changes.add}
    for doc in empty:
        issue = nothing_to_embed(doc)
        logger.warning("skipped %s", issue)
        report.issues.append(issue)
        if doc.doc_id in added:
            report.documents_added -= 1
        else:
            report.documents_updated -= 1


def estimated_passages(to_embed: Sequence[Document], spans: Mapping[str, Sequence[PassageSpan]]) -> int:
    """Passages of `to_embed`: counted where cut, else estimated from characters per passage."""
    cut = [d for d in to_embed if d.doc_id in spans]
    counted = sum(len(spans[d.doc_id]) for d in cut)
    chars = sum(len(d.text) for d in cut)
    rest = sum(len(d.text) for d in to_embed if d.doc_id not in spans)
    return counted + (round(rest * counted / chars) if chars and rest else 0)


def _interrupted_message(config: IndexConfig, report: BuildReport) -> str:
    if not report.commits:
        done = f"nothing new was committed to {config.index_dir}; it is as it was before"
    else:
        done = (f"{report.documents_committed} documents ({report.passages_embedded} passages) of "
                f"this build are committed to {config.index_dir}, which now holds "
                f"{report.total_documents} documents and can be searched")
    return f"Interrupted: {done}. Run the same command again to resume where it stopped."
