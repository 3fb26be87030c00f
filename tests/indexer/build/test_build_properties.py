"""Properties of the build loop (indexer/build/pipeline.py, indexer/build/ingest.py), drawn by Hypothesis.

A corpus of 0 to 40 documents, each 0 to 120 passages long, some identical and some with
nothing to embed, meets an index that is empty, partly built, or holds documents to change,
remove or skip as unreadable; commits hold 1 passage to more than the whole corpus; the source
is read in one window or in windows of 1 to 12 documents; and the build may be interrupted
after any commit. Whatever is drawn:

- the build finishes (a rerun after an interruption);
- every readable document is stored once, with exactly the passages `split_into_passages`
  gives it, and FAISS, BM25 and SQL hold the same passage ids;
- removed documents are gone, and skipped ones keep what was stored;
- the report's counts, the index's stats and an open index's refreshed stats equal what is stored.

Since every run must equal the one state the source defines, an interrupted build, run
again, stores what one uninterrupted build stores. The cases Hypothesis found are kept as
`@example`s.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from indexer import BadInputError, BuildInterrupted, Index, IndexConfig, build_index
from indexer.build import source_stream
from indexer.sources.chunking import short_tail_tokens, split_into_passages
from indexer.sources.readers import read_documents
from indexer.store.schema import DocumentRow, PassageRow
from indexer.store.sql_store import make_engine
from tests.indexer.helpers import assert_consistent

PASSAGE_TOKENS = 16
VOCAB = ["river", "glacier", "valley", "mountain", "forest", "ocean", "desert", "island", "harbour",
         "bridge", "castle", "market", "garden", "library", "station", "museum", "theatre",
         "village", "meadow", "canyon"]
# Texts the reader refuses or the tokenizer reads as nothing: not stored, named in an issue.
NOTHING = ("", "\u200b\ufeff\u00ad \u200b", "\ufffd\ufffd \ufffd")
FATES = ("new", "unchanged", "changed", "removed", "skipped", "identical", "nothing")
# A document's fate across the two builds: what the first build stores, what the second reads.
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


def text_of(seed: int, passages: int, overlap: int) -> str:
    """About `passages` passages of one-token words (each VOCAB word is one WordPiece)."""
    words = passages * (PASSAGE_TOKENS - overlap)
    return " ".join(VOCAB[(seed * 7 + i * 13 + i // 5) % len(VOCAB)] for i in range(words))


@dataclass(frozen=True)
class DocSpec:
    fate: str
    passages: int
    seed: int


doc_spec = st.builds(DocSpec, fate=st.sampled_from(FATES),
                     passages=st.one_of(st.integers(0, 3), st.integers(4, 120)), seed=st.integers(0, 50))
# The length drawn first, uniformly: Hypothesis' own lists stay short, and the crash needed long corpora.
doc_specs = st.integers(0, 40).flatmap(lambda n: st.lists(doc_spec, min_size=n, max_size=n))
# Documents per window of the source (`source_stream`): None, the default (every corpus here is one window).
windows = st.one_of(st.none(), st.integers(1, 12))


def stored_state(index_dir: Path) -> dict[str, tuple[str, list[tuple[int, int, str]]]]:
    """doc id -> (text, [(start, end, text) of each passage by ordinal]), read from SQL."""
    engine = make_engine(f"sqlite:///{index_dir / 'store.sqlite'}")
    try:
        with engine.connect() as conn:
            docs = {row.id: (row.doc_key, row.text) for row in conn.execute(
                select(DocumentRow.id, DocumentRow.doc_key, DocumentRow.text))}
            passages: dict[int, list] = {key: [] for key in docs}
            for row in conn.execute(select(PassageRow.document_id, PassageRow.ordinal, PassageRow.start_char,
                                           PassageRow.end_char, PassageRow.text).order_by(PassageRow.ordinal)):
                passages[row.document_id].append((row.start_char, row.end_char, row.text))
    finally:
        engine.dispose()
    return {key: (text, passages[row_id]) for row_id, (key, text) in docs.items()}


def check_state(index_dir: Path, expected: dict[str, str], tokenizer, overlap: int, report) -> None:
    state = stored_state(index_dir)
    assert sorted(state) == sorted(expected), "stored documents differ from the source's"
    for doc_id, text in expected.items():
        stored_text, passages = state[doc_id]
        assert stored_text == text, doc_id
        spans = split_into_passages(text, tokenizer, PASSAGE_TOKENS, overlap,
                                    min_tail_tokens=short_tail_tokens(PASSAGE_TOKENS))
        assert [(p[0], p[1]) for p in passages] == [(s.start_char, s.end_char) for s in spans], doc_id
        assert all(p[2] == text[p[0]:p[1]] for p in passages), doc_id
        assert passages, f"{doc_id} is stored without a passage"
    ids = assert_consistent(index_dir)
    total_passages = sum(len(p) for _, p in state.values())
    assert len(ids) == total_passages
    assert (report.total_documents, report.total_passages) == (len(state), total_passages)
    with Index.open(index_dir, use_gpu=False) as index:
        stats = index.stats()
        assert (stats.documents, stats.passages) == (len(state), total_passages)


@dataclass(frozen=True)
class Totals:
    total_documents: int
    total_passages: int


def build_report_of(index_dir: Path) -> Totals:
    """The committed counts, standing in for a report where the build failed."""
    with Index.open(index_dir, use_gpu=False) as index:
        return Totals(index.info.documents, index.info.passages)


def write(folder: Path, name: str, content: str | bytes) -> None:
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@contextlib.contextmanager
def windows_of(window: int | None):
    """Builds inside read their source in windows of `window` documents (None: the default)."""
    with pytest.MonkeyPatch.context() as patch:
        if window is not None:
            patch.setattr(source_stream, "WINDOW_DOCUMENTS", window)
        yield


def interrupt_after(passages: int | None):
    """A progress callback that presses Ctrl-C once `passages` passages are embedded."""
    def progress(done: int, _total: int) -> None:
        if passages is not None and done >= passages:
            raise KeyboardInterrupt
    return progress


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from indexer.embedding import load_bi_encoder

    return load_bi_encoder(str(tiny_model_dir)).tokenizer


@SETTINGS
@given(specs=doc_specs, overlap=st.integers(0, 8),
       commit=st.one_of(st.integers(1, 40), st.integers(41, 3000)),
       interrupt=st.one_of(st.none(), st.integers(1, 2000)), window=windows)
# The crash of issue 36: a first document longer than the first commit, then another one.
@example(specs=[DocSpec("new", 40, 1), DocSpec("new", 1, 2)], overlap=0, commit=4096, interrupt=None,
         window=None)
@example(specs=[DocSpec("new", 1, 1), DocSpec("new", 60, 2), DocSpec("new", 1, 3)], overlap=4,
         commit=4096, interrupt=None, window=None)
# A stored file that turns unreadable keeps its stored version; one with nothing to embed is skipped.
@example(specs=[DocSpec("skipped", 3, 1), DocSpec("nothing", 1, 2), DocSpec("removed", 2, 3)],
         overlap=2, commit=1, interrupt=1, window=None)
# A source read in windows of one document: removals after the last, the skipped one kept.
@example(specs=[DocSpec("removed", 2, 1), DocSpec("skipped", 3, 2), DocSpec("changed", 2, 3),
                DocSpec("new", 3, 4), DocSpec("removed", 1, 5)], overlap=2, commit=2, interrupt=3, window=1)
def test_a_build_stores_exactly_what_the_source_holds(specs, overlap, commit, interrupt, window, tiny_model_dir,
                                                      tokenizer, tmp_path_factory):
    with windows_of(window):
        stores_exactly_what_the_source_holds(specs, overlap, commit, interrupt, tokenizer, tiny_model_dir,
                                             tmp_path_factory)


def stores_exactly_what_the_source_holds(specs, overlap, commit, interrupt, tokenizer, tiny_model_dir,
                                         tmp_path_factory):
    root = tmp_path_factory.mktemp("prop")
    source, index_dir = root / "src", root / "idx"
    source.mkdir()
    model = str(tiny_model_dir)

    def config() -> IndexConfig:
        return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False,
                           passage_tokens=PASSAGE_TOKENS, overlap_tokens=overlap, commit_passages=commit)

    names = [f"d{i:02}.txt" for i in range(len(specs))]
    old = {name: text_of(s.seed, max(s.passages, 1), overlap) for name, s in zip(names, specs, strict=True)
           if s.fate in ("unchanged", "changed", "removed", "skipped")}
    served = None
    if old:
        for name, text in old.items():
            write(source, name, text)
        check_state(index_dir, old, tokenizer, overlap, build_index(config()))
        served = Index.open(index_dir, use_gpu=False)

    expected: dict[str, str] = {}  # what the index must hold after the second build
    written: dict[str, str] = {}  # readable texts written for the second build
    for i, (name, spec) in enumerate(zip(names, specs, strict=True)):
        if spec.fate == "removed":
            (source / name).unlink()
        elif spec.fate == "skipped":  # now invalid UTF-8: the stored version stays
            write(source, name, b"\x80\x81 not UTF-8 " + old[name].encode())
            expected[name] = old[name]
        elif spec.fate == "nothing":
            write(source, name, NOTHING[spec.seed % len(NOTHING)])
        else:
            text = text_of(spec.seed + (100 if spec.fate == "changed" else 0), spec.passages, overlap)
            if spec.fate == "unchanged":
                text = old[name]
            elif spec.fate == "identical" and i > 0 and names[i - 1] in written:
                text = written[names[i - 1]]  # the same text as the document before it, another id
            write(source, name, text)
            if text:
                written[name] = expected[name] = text
            elif name in old:  # emptied: skipped as an empty document, so the stored one stays
                expected[name] = old[name]
    if not any(doc for doc in read_documents(source, on_issue=lambda issue: None)):
        with pytest.raises(BadInputError, match="Nothing in .* can be indexed|No documents found"):
            build_index(config())
        if old:  # nothing stored is lost
            check_state(index_dir, old, tokenizer, overlap, build_report_of(index_dir))
            served.close()
        return

    if interrupt is not None:
        with contextlib.suppress(BuildInterrupted):
            build_index(config(), progress=interrupt_after(interrupt))
    report = build_index(config())
    event(f"documents stored: {len(expected) // 10 * 10}+")
    event(f"commits of the last build: {min(report.commits, 5)}{'+' if report.commits >= 5 else ''}")
    check_state(index_dir, expected, tokenizer, overlap, report)
    if served is not None:  # an index opened before the build sees what is stored after refresh()
        try:
            served.refresh()
            stats = served.stats()
            assert (stats.documents, stats.passages) == (report.total_documents, report.total_passages)
        finally:
            served.close()
    shutil.rmtree(root)


@SETTINGS
@given(count=st.integers(1, 40), keep=st.integers(0, 40), change=st.integers(0, 40),
       commit=st.integers(1, 60), interrupt=st.one_of(st.none(), st.integers(1, 40)), window=windows)
@example(count=5, keep=2, change=1, commit=1, interrupt=1, window=None)
@example(count=9, keep=3, change=2, commit=2, interrupt=4, window=2)
def test_an_embeddings_ingest_stores_exactly_the_vectors_it_is_given(
        count, keep, change, commit, interrupt, window, tiny_model_dir, tmp_path_factory):
    """The --embeddings ingest under the same draws: each document one passage, its vector the
    one given, whatever the commit size and window, and wherever it is interrupted."""
    with windows_of(window):
        ingest_stores_exactly_the_vectors_it_is_given(count, keep, change, commit, interrupt, tiny_model_dir,
                                                      tmp_path_factory)


def ingest_stores_exactly_the_vectors_it_is_given(count, keep, change, commit, interrupt, tiny_model_dir,
                                                  tmp_path_factory):
    import json

    root = tmp_path_factory.mktemp("ingest")
    model = str(tiny_model_dir)
    rng = np.random.default_rng(count * 1000 + keep * 10 + change)
    dimension = 32

    def corpus(n: int, changed: int) -> tuple[Path, dict[str, np.ndarray], dict[str, str]]:
        path = root / "corpus.jsonl"
        vectors, texts = {}, {}
        with path.open("w", encoding="utf-8") as fh:
            for i in range(n):
                vector = rng.normal(size=dimension).astype(np.float32)
                vector /= np.linalg.norm(vector)
                text = f"{VOCAB[i % len(VOCAB)]} document {i}" + (" revised" if i < changed else "")
                vectors[f"doc-{i}"], texts[f"doc-{i}"] = vector, text
                fh.write(json.dumps({"id": f"doc-{i}", "text": text, "embedding": vector.tolist()}) + "\n")
        return path, vectors, texts

    def config(path: Path) -> IndexConfig:
        return IndexConfig(source=path, index_dir=root / "idx", model=model, show_progress=False,
                           embeddings=path, commit_passages=commit)

    first_path, first_vectors, _ = corpus(count, 0)
    build_index(config(first_path))
    second_path, second_vectors, texts = corpus(min(keep, count) or 1, min(change, count))
    expected_vectors = {key: (second_vectors[key] if int(key.split("-")[1]) < min(change, count)
                              else first_vectors[key]) for key in second_vectors}
    if interrupt is not None:
        with contextlib.suppress(BuildInterrupted):
            build_index(config(second_path), progress=interrupt_after(interrupt))
    report = build_index(config(second_path))
    state = stored_state(root / "idx")
    assert {key: text for key, (text, _) in state.items()} == texts
    assert all(p == [(0, len(texts[key]), texts[key])] for key, (_, p) in state.items())
    assert_consistent(root / "idx")
    assert (report.total_documents, report.total_passages) == (len(texts), len(texts))
    engine = make_engine(f"sqlite:///{root / 'idx' / 'store.sqlite'}")
    with engine.connect() as conn:
        id_of = dict(conn.execute(select(DocumentRow.doc_key, PassageRow.id).join(PassageRow.document)).all())
    engine.dispose()
    with Index.open(root / "idx", use_gpu=False) as index:
        snap = index.snapshot()
        for key, vector in expected_vectors.items():
            np.testing.assert_allclose(snap.vectors.vector(id_of[key]), vector, atol=1e-6)
    shutil.rmtree(root)
