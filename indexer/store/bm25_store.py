"""The lexical side of an index: BM25 over the same passages as FAISS, keyed by passage id.

Scoring is Lucene's BM25 variant (Robertson & Zaragoza 2009; Kamphuis et al.
2020, "Which BM25 do you mean?") as implemented by bm25s, with k1=0.9, b=0.4
(Anserini's defaults, used for BEIR's BM25 baseline), NLTK's 179 English stop
words (`STOPWORDS`) and the Snowball English stemmer from PyStemmer. A passage's BM25 document is
`bm25_document(title, text)`: its document's title, written `TITLE_REPEATS`
times, then the passage text, so a title word matches every passage of its
document (as in BEIR's Elasticsearch baseline) and counts as a few words of
text would, as a field boost does in a search engine.

bm25s cannot add or remove documents from a built index. A small index is
rebuilt from all passages whenever they change (SciFact's 10,342 passages take
about 1.7 s). A large one takes its additions as *delta segments*
(`BM25Store.build_delta`), scored with the collection statistics of the base
segment (its document count, mean length and document frequencies, frozen at
its build), as Lucene scores a segment with statistics that are not its own:
every segment then scores a passage as one BM25 over the whole collection
would, with statistics as of the last full build. `indexer.store.segments` decides
when the drift is large enough to rebuild. Like the FAISS module, this one
never imports SQLAlchemy: it takes ids and texts.

A rebuild of the base (a merge) need not tokenize every text again: a base keeps
each score entry's term frequency and each passage's length in tokens beside
bm25s's files (`COUNTS_FILE`, `LENGTHS_FILE`), so `BM25Store.merged` drops the
removed rows, tokenizes only the passages the base lacks (its deltas' and the
commit's), and scores every entry again with the merged collection's idf and
mean length, through bm25s's own idf and term-frequency functions. The result
equals a build over all the texts (tested entry by entry).
"""

from __future__ import annotations

import copy
import functools
import itertools
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# bm25s runs a JAX top-k on import when JAX is installed (bm25s/selection.py), and JAX's first use
# takes 75% of the GPU's memory for itself: on an H100 the searcher's FAISS copy and the
# pretraining loop ran out of memory (bench/bench_gpu.py, 2026-11-27). bm25s's JAX work is on
# numpy arrays, so JAX stays on the CPU unless the user chose otherwise.
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import bm25s  # noqa: E402
import numpy as np
import scipy.sparse as sp
import Stemmer
from bm25s.scoring import (
    _build_idf_array,
    _build_scores_and_indices_for_matrix,
    _calculate_doc_freqs,
    _score_idf_lucene,
    _score_tfc_lucene,
)
from bm25s.stopwords import STOPWORDS_EN, STOPWORDS_EN_PLUS

from indexer.sources import workers

# bm25s sets its own logger to DEBUG at import, which would print a line per build in
# every CLI that configures logging; its messages are progress notes, not warnings.
logging.getLogger("bm25s").setLevel(logging.WARNING)

K1 = 0.9
B = 0.4
METHOD = "lucene"
# The stop words left out of every passage and query, by bm25s's name: NLTK's 179 English words
# ("en_plus"), which drop the words that ask ("how", "what", "do", "I", "can") where Lucene's
# classic 33 ("en") kept them. Chosen on the four dev sets (bench/bench_stopwords.py, BENCHMARKS.md
# "BM25 stop words on the dev sets"): on the questions of Debian's FAQs, BM25 nDCG@10 rose by
# 0.045 and the default hybrid's by 0.015, and no set lost beyond its resampling spread. A folder
# records the list it was built with, and its queries and delta segments use that list.
STOPWORDS = "en_plus"
# What folders from before the list was recorded were built with, and the names a folder may record.
LEGACY_STOPWORDS = "en"
STOPWORD_LISTS: dict[str, tuple[str, ...]] = {"en": tuple(STOPWORDS_EN), "en_plus": tuple(STOPWORDS_EN_PLUS)}
STEMMER_LANGUAGE = "english"
# Texts tokenized at a time when a base is built (`BM25Store.build_streamed`).
STREAM_BLOCK = 32_768
IDS_FILE = "passage_ids.npy"
META_FILE = "semsearch_bm25.json"
VOCAB_FILE = "vocab.index.json"  # bm25s's names for its vocabulary and CSC column pointers
INDPTR_FILE = "indptr.csc.index.npy"
# A base's term frequencies (uint16, aligned with bm25s's score entries) and passage lengths in
# tokens (int32 per row): what a merge rescores the base from without tokenizing its texts again.
COUNTS_FILE = "term_counts.npy"
RESCORE_SLICE = 1 << 22  # score entries a merge rescores at a time
LENGTHS_FILE = "passage_lengths.npy"
FORMAT = 1
# Times a passage's document title is written in its BM25 document. Chosen on the dev sets with
# the hybrid setting (bench/bench_relevance.py, "BM25 title weight"): written 2 or 3 times, the
# default hybrid scores higher on SciFact train queries and on Wikipedia leads than with the title
# once; 3 has the larger mean gain. A folder records the count it was built with; delta segments
# keep their base's.
TITLE_REPEATS = 3
# A block of at least this many texts is tokenized in the worker processes where there are any
# (`indexer.sources.workers`), in parts of at least half of it: below, sending the texts costs
# more than it saves.
WORKER_TEXTS = 2048
# What folders from before the setting was recorded were built with.
LEGACY_TITLE_REPEATS = 1


def bm25_document(title: str, text: str, title_repeats: int = TITLE_REPEATS) -> str:
    """The text BM25 indexes for one passage: the title `title_repeats` times in all, then `text`.

    A title that already opens the text (a Markdown file's first heading) counts as one of them,
    as `passage_text` counts it; `title_repeats=1` gives `passage_text(title, text)` itself.
    """
    if title_repeats < 0:
        raise ValueError(f"title_repeats ({title_repeats}) must be 0 or more.")
    title = title.strip()
    if not title or not title_repeats:
        return text
    copies = title_repeats - 1 if text.strip() and text.lstrip("# \n").startswith(title) else title_repeats
    return "\n".join([title] * copies + ([text] if text.strip() else []))


@dataclass(frozen=True)
class BM25Stats:
    """The collection statistics a base segment was scored with; delta segments reuse them."""

    n_docs: int
    avg_doc_len: float
    vocab: dict[str, int]  # term -> column of `df`
    df: np.ndarray  # documents holding each term
    title_repeats: int = LEGACY_TITLE_REPEATS  # how the base wrote titles: deltas write them alike
    stopwords: str = LEGACY_STOPWORDS  # the base's stop words: deltas leave out the same

    def idf(self, term: str) -> float | None:
        column = self.vocab.get(term)
        if column is None or column >= len(self.df) or not self.df[column]:
            return None
        return _score_idf_lucene(int(self.df[column]), self.n_docs)


class _FrozenStatsBM25(bm25s.BM25):
    """bm25s's Lucene BM25 with collection statistics given instead of measured on the corpus.

    bm25s documents `build_index_from_ids` as the step to override for building
    an index another way; this one uses bm25s's own document-frequency and
    scoring functions, with the base segment's idf and mean length.
    """

    def __init__(self, stats: BM25Stats, vocab: dict[str, int]) -> None:
        super().__init__(k1=K1, b=B, method=METHOD)
        self._stats = stats
        self._vocab = vocab

    def build_index_from_ids(self, unique_token_ids, corpus_token_ids, show_progress=True,
                             leave_progress=False):
        self.nonoccurrence_array = None  # Lucene BM25 has none
        n_docs, n_vocab = len(corpus_token_ids), len(unique_token_ids)
        doc_frequencies = _calculate_doc_freqs(corpus_token_ids, unique_token_ids, show_progress=False)
        idf = np.zeros(n_vocab, dtype=self.dtype)
        for term, column in self._vocab.items():
            df = doc_frequencies.get(column, 0)
            if df:  # a term the base lacks gets its idf from this segment's count
                base = self._stats.idf(term)
                idf[column] = base if base is not None else _score_idf_lucene(df, self._stats.n_docs + n_docs)
        flat, rows, columns = _build_scores_and_indices_for_matrix(
            corpus_token_ids=corpus_token_ids, idf_array=idf, avg_doc_len=self._stats.avg_doc_len,
            doc_frequencies=doc_frequencies, k1=self.k1, b=self.b, delta=self.delta,
            nonoccurrence_array=None, method=self.method, dtype=self.dtype,
            int_dtype=self.int_dtype, show_progress=False)
        matrix = sp.csc_matrix((flat, (rows, columns)), shape=(n_docs, n_vocab), dtype=self.dtype)
        return {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
                "num_docs": n_docs}


def _mean_length(lengths: np.ndarray) -> float:
    """The mean passage length in tokens that BM25 normalizes by; at least 1, so that passages all of
    stop words ("Who are you?": no token to score) make an index that matches nothing instead of
    dividing by zero."""
    return max(float(lengths.mean()), 1.0)


def _scored(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], vocab: dict[str, int], df: np.ndarray,
            avg_doc_len: float) -> tuple[bm25s.BM25, np.ndarray]:
    """The bm25s index of `build_streamed`'s blocks: what `BM25.index` sets, scored block by block.

    The score matrix is written straight into its compressed-column arrays: column t holds
    df[t] entries, so its place is known before any block is scored, and each block's entries
    go to the end of their columns (blocks come in row order, so rows stay sorted in a column).
    The arrays themselves (8 bytes an entry) are all a build holds besides one block's scores;
    collecting every block's (score, row, column) triples and converting them took three times
    that (2.4 GB at 1M passages). Also returns each entry's term frequency (`COUNTS_FILE`)."""
    index = bm25s.BM25(k1=K1, b=B, method=METHOD)
    n_docs = sum(len(p[2]) for p in parts)
    idf = _build_idf_array(dict(enumerate(df.tolist())), n_docs, _score_idf_lucene, index.dtype)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1 : len(df) + 1])
    indptr[len(df) + 1 :] = indptr[len(df)]
    data = np.empty(int(indptr[-1]), dtype=index.dtype)
    indices = np.empty(int(indptr[-1]), dtype=index.int_dtype)
    counts_out = np.empty(int(indptr[-1]), dtype=np.uint16)
    filled = indptr[:-1].copy()  # where each column's next entry goes
    width = len(vocab)
    first = 0
    for _, flat, lengths, nonzeros in parts:
        docs = [doc.tolist() for doc in np.split(flat, np.cumsum(lengths)[:-1])]
        # bm25s sizes its arrays by the sum of `doc_frequencies`: the block's nonzeros.
        block_scores, block_rows, block_columns = _build_scores_and_indices_for_matrix(
            corpus_token_ids=docs, idf_array=idf, avg_doc_len=avg_doc_len, doc_frequencies={0: nonzeros},
            k1=index.k1, b=index.b, delta=index.delta, nonoccurrence_array=None, method=index.method,
            dtype=index.dtype, int_dtype=index.int_dtype, show_progress=False)
        del docs
        order = np.lexsort((block_rows, block_columns))  # by column, then row
        columns = np.asarray(block_columns)[order]
        counts = np.bincount(columns, minlength=len(filled))
        starts = np.cumsum(counts) - counts  # each column's first entry within `order`
        places = filled[columns] + (np.arange(len(order)) - starts[columns])
        data[places] = np.asarray(block_scores)[order]
        indices[places] = np.asarray(block_rows)[order] + first
        pairs, frequencies = np.unique(np.repeat(np.arange(len(lengths)), lengths) * width + flat,
                                       return_counts=True)
        wanted = np.asarray(block_rows, dtype=np.int64)[order] * width + columns
        counts_out[places] = np.minimum(frequencies[np.searchsorted(pairs, wanted)], np.iinfo(np.uint16).max)
        filled += counts
        first += len(lengths)
    if not np.array_equal(filled, indptr[1:]):
        raise RuntimeError("BM25 build: the blocks' entries do not match their document frequencies")
    small = indptr[-1] < np.iinfo(np.int32).max  # the index type scipy would give the matrix
    index.scores = {"data": data, "indices": indices, "indptr": indptr.astype(np.int32) if small else indptr,
                    "num_docs": n_docs}
    index.nonoccurrence_array = None  # Lucene BM25 has none
    if "" not in vocab:  # as `BM25.index` does: the empty token, past the matrix's columns
        vocab[""] = len(vocab)
    index.vocab_dict = vocab
    index.unique_token_ids_set = set(vocab.values())
    return index, counts_out


def _rescored(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], lengths: np.ndarray,
              vocab: dict[str, int], avg_doc_len: float) -> tuple[bm25s.BM25, np.ndarray]:
    """The bm25s index of (rows, columns, term frequencies) parts, each sorted by column then row,
    every row of a part below those of the next: idf by bm25s's `_build_idf_array`, each entry's
    score by its Lucene term-frequency function (which takes arrays), entries placed in compressed
    columns with rows ascending, a part at a time (no sort of the whole)."""
    index = bm25s.BM25(k1=K1, b=B, method=METHOD)
    part_df = [np.bincount(columns, minlength=len(vocab)) for _, columns, _ in parts]
    df = np.sum(part_df, axis=0) if part_df else np.zeros(len(vocab), dtype=np.int64)
    idf = _build_idf_array(dict(enumerate(df.tolist())), len(lengths), _score_idf_lucene, index.dtype)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    data = np.empty(int(indptr[-1]), dtype=index.dtype)
    indices = np.empty(int(indptr[-1]), dtype=index.int_dtype)
    counts_out = np.empty(int(indptr[-1]), dtype=np.uint16)
    filled = indptr[:-1].copy()
    for column_counts in part_df:
        rows, columns, counts = parts.pop(0)  # `parts` is consumed, each part let go once placed
        starts = filled - (np.cumsum(column_counts) - column_counts)  # + an entry's index in the part
        for at in range(0, len(columns), RESCORE_SLICE):  # temporaries of a slice, not of the part
            cut = slice(at, at + RESCORE_SLICE)
            places = starts[columns[cut]] + np.arange(at, at + len(columns[cut]))
            tfc = _score_tfc_lucene(counts[cut].astype(index.dtype), lengths[rows[cut]].astype(index.dtype),
                                    avg_doc_len, index.k1, index.b)
            data[places] = idf[columns[cut]] * tfc
            indices[places] = rows[cut]
            counts_out[places] = counts[cut]
        filled += column_counts
        del rows, columns, counts
    small = indptr[-1] < np.iinfo(np.int32).max
    index.scores = {"data": data, "indices": indices, "indptr": indptr.astype(np.int32) if small else indptr,
                    "num_docs": len(lengths)}
    index.nonoccurrence_array = None
    vocab[""] = len(vocab)
    index.vocab_dict = vocab
    index.unique_token_ids_set = set(vocab.values())
    return index, counts_out


class BM25Store:
    """A bm25s index whose row i is the passage with id `ids[i]`; score 0 means no query term matched.

    An empty store (no passages) keeps no bm25s index, since bm25s cannot build one.
    """

    def __init__(self, ids: np.ndarray, index: bm25s.BM25 | None, avg_doc_len: float | None = None,
                 frozen_from: str | None = None, title_repeats: int = LEGACY_TITLE_REPEATS,
                 stopwords: str | Sequence[str] = STOPWORDS) -> None:
        self._ids = np.ascontiguousarray(ids, dtype=np.int64)
        self._index = index
        self.avg_doc_len = avg_doc_len  # None in folders written before delta segments existed
        self.frozen_from = frozen_from  # a delta: the base folder whose statistics it was scored with
        self.title_repeats = title_repeats  # what `bm25_document` was given for these texts
        # The stop words left out of texts and queries: a name in STOPWORD_LISTS (STOPWORDS in a base
        # built now, the base's in its deltas); a list of words only in a store built in memory
        # (bench/bench_stopwords.py measures lists).
        self.stopwords = stopwords
        # A base's term frequencies and passage lengths (`COUNTS_FILE`, `LENGTHS_FILE`); None in a
        # delta, and in a base written before they were kept (its merge tokenizes every text).
        self.term_counts: np.ndarray | None = None
        self.lengths: np.ndarray | None = None
        self._stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
        # PyStemmer objects are not thread-safe, and Streamlit serves sessions from threads.
        self._stemmer_lock = threading.Lock()

    @classmethod
    def build(cls, ids: Sequence[int] | np.ndarray, texts: Sequence[str],
              title_repeats: int = LEGACY_TITLE_REPEATS, stopwords: str | Sequence[str] = STOPWORDS) -> BM25Store:
        """A base over `texts`; `title_repeats` records how they wrote their titles
        (`bm25_document`), for the delta segments that follow."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts.")
        if len(np.unique(ids)) != len(ids):
            raise ValueError("passage ids must be unique; the same id appears more than once.")
        texts = list(texts)
        return cls.build_streamed(((ids[at:at + STREAM_BLOCK], texts[at:at + STREAM_BLOCK])
                                   for at in range(0, len(ids), STREAM_BLOCK)), title_repeats, stopwords)

    @classmethod
    def build_streamed(cls, blocks: Iterable[tuple[np.ndarray, Sequence[str]]],
                       title_repeats: int = LEGACY_TITLE_REPEATS,
                       stopwords: str | Sequence[str] = STOPWORDS) -> BM25Store:
        """A base over (ids, texts) blocks, as bm25s's `BM25.index` builds it over all the texts at
        once, in a fraction of its memory: each block is tokenized and kept as int32 token ids
        (4 bytes a token, against about 36 in the lists bm25s holds for every text), then scored by
        bm25s's own scoring function with the collection's idf and mean length. At 1M passages the
        lists alone took about 2 GB."""
        store = cls(np.empty(0, np.int64), None, title_repeats=title_repeats, stopwords=stopwords)
        vocab: dict[str, int] = {}
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []  # ids, tokens, lengths, nonzeros
        df = np.zeros(0, dtype=np.int64)
        for block_ids, texts in blocks:
            if not len(texts):
                continue
            lengths, flat = store._token_ids(texts, vocab)
            pairs = np.unique(np.repeat(np.arange(len(lengths)), lengths) * len(vocab) + flat)
            df = np.concatenate([df, np.zeros(len(vocab) - len(df), dtype=np.int64)])
            df += np.bincount(pairs % len(vocab), minlength=len(vocab))
            parts.append((np.asarray(block_ids, dtype=np.int64), flat.astype(np.int32), lengths, len(pairs)))
        if not parts:
            return store
        store._ids = np.concatenate([p[0] for p in parts])
        if len(np.unique(store._ids)) != len(store._ids):
            raise ValueError("passage ids must be unique; the same id appears more than once.")
        lengths = np.concatenate([p[2] for p in parts])
        store.avg_doc_len = _mean_length(lengths)
        store._index, store.term_counts = _scored(parts, vocab, df, store.avg_doc_len)
        store.lengths = lengths.astype(np.int32)
        return store

    @property
    def rescorable(self) -> bool:
        """Whether a merge can rescore this base from its term counts (`merged`)."""
        return (self._index is not None and self.term_counts is not None and self.lengths is not None
                and self.frozen_from is None and isinstance(self.stopwords, str))

    def changed_rules(self, title_repeats: int = TITLE_REPEATS, stopwords: str = STOPWORDS) -> list[str]:
        """How a base built with `title_repeats` and `stopwords` (a base built now: `TITLE_REPEATS`,
        `STOPWORDS`) reads passages otherwise than this store, in words; empty when alike. A merge
        keeps a base's rules, so a base whose rules changed is built again in full instead
        (`WriteTransaction`), as `indexer repair` builds it again."""
        changes = []
        if self.title_repeats != title_repeats:
            changes.append(f"the title written {self.title_repeats} time(s), not {title_repeats}")
        if self.stopwords != stopwords:
            changes.append(f"the stop words {self.stopwords!r}, not {stopwords!r}")
        return changes

    @classmethod
    def merged(cls, base: BM25Store, keep: np.ndarray,
               blocks: Iterable[tuple[np.ndarray, Sequence[str] | TokenizedTexts]],
               title_repeats: int = TITLE_REPEATS, stopwords: str = STOPWORDS) -> BM25Store:
        """A new base over `base`'s rows where `keep` (a mask over its rows) is True, then the
        passages of `blocks`, scored as `build_streamed` would score them all (idf, mean length and
        every score computed again over the merged collection), but tokenizing only the texts of
        `blocks`, or none where a block comes tokenized (`TokenizedTexts`, as `bm25_document`
        wrote them with `title_repeats`, less `stopwords`): the base's term frequencies and lengths
        are kept in its folder (`rescorable`), and it must have read its texts alike.
        Scores come from bm25s's own idf and term-frequency functions, applied to every entry at
        once. Rows: the kept base rows in order, then the blocks' passages. `base` is consumed (its
        score arrays are let go as they are placed), so that a merge holds them and the new ones
        at once only part by part."""
        if not base.rescorable or base.changed_rules(title_repeats, stopwords):
            raise ValueError("this BM25 base keeps no term counts (or another title weight or stop-word list); "
                             "build it again")
        assert base._index is not None and base.term_counts is not None and base.lengths is not None
        scores = base._index.scores
        vocab = {term: column for term, column in base._index.vocab_dict.items() if term != ""}
        indptr = np.asarray(scores["indptr"], dtype=np.int64)[: len(vocab) + 1]
        stored_rows = scores["indices"][: indptr[-1]]
        columns = np.repeat(np.arange(len(vocab), dtype=np.int32), np.diff(indptr))
        if keep.all():  # nothing removed: the base's own arrays, uncopied
            base_part = (stored_rows, columns, base.term_counts[: indptr[-1]])
        else:
            kept = keep[stored_rows]
            renumber = (np.cumsum(keep) - 1).astype(np.int32)
            base_part = (renumber[stored_rows[kept]], columns[kept], base.term_counts[: indptr[-1]][kept])
            del kept, renumber
        del columns, stored_rows, scores
        ids, lengths = [base._ids[keep]], [base.lengths[keep].astype(np.int64)]
        base._index = base.term_counts = base.lengths = None  # consumed: its arrays go once placed
        first = int(keep.sum())
        new: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # rows, term ids, counts
        store = cls(np.empty(0, np.int64), None, title_repeats=title_repeats, stopwords=stopwords)
        for block_ids, texts in blocks:
            if not len(texts):
                continue
            if isinstance(texts, TokenizedTexts):
                block_lengths, flat = texts.lengths, texts.mapped(vocab)
            else:
                block_lengths, flat = store._token_ids(texts, vocab)
            keys, tf = np.unique(np.repeat(np.arange(len(block_lengths)), block_lengths) * len(vocab) + flat,
                                 return_counts=True)
            new.append(((keys // len(vocab) + first).astype(np.int32), (keys % len(vocab)).astype(np.int32),
                        np.minimum(tf, np.iinfo(np.uint16).max).astype(np.uint16)))
            ids.append(np.asarray(block_ids, dtype=np.int64))
            lengths.append(block_lengths)
            first += len(block_lengths)
        store._ids = np.concatenate(ids)
        if len(np.unique(store._ids)) != len(store._ids):
            raise ValueError("passage ids must be unique; the same id appears more than once.")
        all_lengths = np.concatenate(lengths)
        if not len(all_lengths):
            return store
        parts = [base_part]
        del base_part
        if new:
            rows, columns, counts = (np.concatenate(column) for column in zip(*new, strict=True))
            new.clear()
            order = np.lexsort((rows, columns))
            parts.append((rows[order], columns[order], counts[order]))
            del rows, columns, counts, order
        store.avg_doc_len = _mean_length(all_lengths)
        store._index, store.term_counts = _rescored(parts, all_lengths, vocab, store.avg_doc_len)
        store.lengths = all_lengths.astype(np.int32)
        return store

    @classmethod
    def build_delta(cls, ids: Sequence[int] | np.ndarray, texts: Sequence[str], stats: BM25Stats,
                    frozen_from: str) -> BM25Store:
        """A delta segment over `texts`, scored with the base segment's `stats` (see the module doc)."""
        ids = np.asarray(ids, dtype=np.int64)
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts.")
        store = cls(ids, None, stats.avg_doc_len, frozen_from, stats.title_repeats, stats.stopwords)
        if len(ids):
            tokens = store._tokenize(list(texts), return_ids=True)
            index = _FrozenStatsBM25(stats, tokens.vocab)
            index.index(tokens, show_progress=False)
            store._index = index
        return store

    @staticmethod
    def stats_of(path: Path | str) -> BM25Stats | None:
        """The statistics of the base folder at `path`, read without loading its scores; None for
        a folder that predates them or holds no passages (the caller then rebuilds in full)."""
        path = Path(path)
        meta = json.loads((path / META_FILE).read_text())
        if meta.get("avg_doc_len") is None or not meta.get("passages"):
            return None
        vocab = json.loads((path / VOCAB_FILE).read_text())
        df = np.diff(np.load(path / INDPTR_FILE))
        return BM25Stats(int(meta["passages"]), float(meta["avg_doc_len"]), vocab, df,
                         int(meta.get("title_repeats", LEGACY_TITLE_REPEATS)), _stopwords_of(path, meta))

    @classmethod
    def load(cls, path: Path | str, mapped: bool = False) -> BM25Store:
        """The store in `path`. `mapped`: its arrays stay in their files, memory-mapped read-only
        (a reader's open then costs no reading; what searches touch is paged in). Readers and a
        merge's base (which reads only its rows and term counts) are mapped; `rows` copies what it
        cuts."""
        path = Path(path)
        if not (path / IDS_FILE).is_file():
            raise FileNotFoundError(
                f"BM25 folder {path} is missing or incomplete. Rebuild the index with "
                "`python -m indexer build --source PATH --index DIR --rebuild`."
            )
        meta = json.loads((path / META_FILE).read_text())
        if meta.get("format") != FORMAT:
            raise ValueError(
                f"BM25 folder {path} has format {meta.get('format')}, this version reads {FORMAT}. "
                "Rebuild the index with --rebuild."
            )
        ids = np.load(path / IDS_FILE)
        index = bm25s.BM25.load(str(path), show_progress=False, mmap=mapped) if len(ids) else None
        store = cls(ids, index, meta.get("avg_doc_len"), meta.get("frozen_from"),
                    int(meta.get("title_repeats", LEGACY_TITLE_REPEATS)), _stopwords_of(path, meta))
        if (path / COUNTS_FILE).is_file() and (path / LENGTHS_FILE).is_file():
            mode = "r" if mapped else None
            store.term_counts = np.load(path / COUNTS_FILE, mmap_mode=mode)
            store.lengths = np.load(path / LENGTHS_FILE, mmap_mode=mode)
        return store

    @property
    def ntotal(self) -> int:
        return len(self._ids)

    def ids(self) -> np.ndarray:
        return self._ids.copy()

    @functools.cached_property
    def dense_from(self) -> int | None:
        """The first id when row i holds passage `dense_from + i` (ids without gaps, in order: what
        a base build writes), so a mask over ids is a slice; else None."""
        ids = self._ids
        if len(ids) and int(ids[-1]) - int(ids[0]) + 1 == len(ids) and bool(np.all(np.diff(ids) == 1)):
            return int(ids[0])
        return None

    def ids_view(self) -> np.ndarray:
        """The row -> passage id array itself, read-only (no copy, for per-search masks)."""
        view = self._ids.view()
        view.flags.writeable = False
        return view

    def _tokenize(self, texts: list[str], return_ids: bool):
        with self._stemmer_lock:
            return bm25s.tokenize(
                texts,
                stopwords=self.stopwords,
                stemmer=self._stemmer,
                return_ids=return_ids,
                show_progress=False,
            )

    def _token_ids(self, texts: Sequence[str], vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """(tokens per text, every text's token ids in a row) for a block of texts, the ids being
        columns of `vocab`, which new terms join in order of first appearance: what a base build or
        merge holds of a block. A large block is tokenized in parts in the worker processes where
        there are any (`indexer.sources.workers`); the parts join `vocab` in order, so the ids are
        those of one pass."""
        parts = None
        if len(texts) >= WORKER_TEXTS and workers.worker_count() > 0:
            step = max(WORKER_TEXTS // 2, -(-len(texts) // workers.worker_count()))
            parts = workers.run_all(tokenized_block, [(list(texts[i:i + step]), self.stopwords)
                                                      for i in range(0, len(texts), step)])
        if parts is None:
            with self._stemmer_lock:
                parts = [tokenized_block(list(texts), self.stopwords, self._stemmer)]
        return np.concatenate([part.lengths for part in parts]), np.concatenate([part.mapped(vocab) for part in parts])

    def rows(self, rows: np.ndarray) -> BM25Store:
        """A store of these rows alone (ascending row numbers), their scores kept as they are: cut
        out of this store's score matrix, which bm25s scored with this whole store's collection
        statistics, and never rescored (`indexer.store.shards` splits a segment this way)."""
        rows = np.asarray(rows, dtype=np.int64)
        part = None
        if self._index is not None and len(rows):
            scores = self._index.scores
            matrix = sp.csc_matrix((scores["data"], scores["indices"], scores["indptr"]),
                                   shape=(scores["num_docs"], len(scores["indptr"]) - 1))[rows, :].tocsc()
            part = copy.copy(self._index)
            part.scores = {"data": matrix.data.astype(scores["data"].dtype, copy=False),
                           "indices": matrix.indices.astype(scores["indices"].dtype, copy=False),
                           "indptr": matrix.indptr.astype(scores["indptr"].dtype, copy=False),
                           "num_docs": len(rows)}
        return BM25Store(self._ids[rows], part, self.avg_doc_len, self.frozen_from, self.title_repeats,
                         self.stopwords)

    def rows_of(self, ids: np.ndarray) -> np.ndarray:
        """A mask over this store's rows: True where the row's passage id is in `ids`."""
        return np.isin(self._ids, ids)

    def search(self, query: str, n: int, exclude: np.ndarray | None = None,
               keep: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, ids) of at most n passages sharing a term with `query`, best first.

        Passages scoring 0 match no query term and are left out, so a query of
        only stop words or unknown words returns nothing. Ties go to the lower id.
        `exclude` (a mask from `rows_of`) leaves out deleted passages; `keep` (a mask over the
        rows, `dense_from`) keeps only a filter's passages.
        """
        if self._index is None or n < 1:
            return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
        terms = self._tokenize([query], return_ids=False)[0]
        term_ids = self._index.get_tokens_ids(terms)
        if not term_ids:
            return np.empty(0, dtype=np.float32), np.empty(0, dtype=np.int64)
        scores = self._index.get_scores_from_ids(term_ids)
        if exclude is not None:
            scores[exclude] = 0
        if keep is not None:
            scores *= keep
        matched = np.flatnonzero(scores > 0)
        if len(matched) > n:
            cut = scores[matched[np.argpartition(-scores[matched], n - 1)[:n]]].min()
            matched = matched[scores[matched] >= cut]  # every tie at the cut: the lower id takes it
        order = np.lexsort((self._ids[matched], -scores[matched]))[:n]
        rows = matched[order]
        return scores[rows].astype(np.float32), self._ids[rows]

    def save(self, path: Path | str) -> Path:
        """Write into a temp folder beside `path`, fsync every file, then rename it to `path`.

        The rename is atomic, so a reader sees either no folder or a complete one.
        `path` must not exist yet: builds write a new versioned folder each time.
        """
        if not isinstance(self.stopwords, str) or self.stopwords not in STOPWORD_LISTS:
            raise ValueError("A BM25 store built with a stop-word list of its own is measured in memory only: a "
                             f"folder records one of the named lists {sorted(STOPWORD_LISTS)}.")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
        try:
            if self._index is not None:
                self._index.save(str(tmp), show_progress=False)
            np.save(tmp / IDS_FILE, self._ids)
            if self.term_counts is not None and self.lengths is not None:
                np.save(tmp / COUNTS_FILE, self.term_counts)
                np.save(tmp / LENGTHS_FILE, self.lengths)
            meta = {
                "format": FORMAT,
                "k1": K1,
                "b": B,
                "method": METHOD,
                "stopwords": self.stopwords,
                "stemmer": STEMMER_LANGUAGE,
                "passages": self.ntotal,
                "avg_doc_len": self.avg_doc_len,
                "frozen_from": self.frozen_from,
                "title_repeats": self.title_repeats,
            }
            (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
            for file in tmp.iterdir():
                with open(file, "rb") as fh:
                    os.fsync(fh.fileno())
            os.chmod(tmp, 0o755)
            os.rename(tmp, path)
        except BaseException:
            for file in tmp.glob("*"):
                file.unlink(missing_ok=True)
            tmp.rmdir()
            raise
        _fsync_dir(path.parent)
        return path


def _stopwords_of(path: Path, meta: dict) -> str:
    """The stop-word list a folder's meta records (LEGACY_STOPWORDS where it records none)."""
    name = meta.get("stopwords", LEGACY_STOPWORDS)
    if name not in STOPWORD_LISTS:
        raise ValueError(f"BM25 folder {path} was built with the stop words {name!r}, which this version does not "
                         "know (a newer version wrote it). Rebuild the index with --rebuild.")
    return name


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class TokenizedTexts:
    """Texts as BM25 reads them, before any index's vocabulary: `terms` by local id (in order of
    first appearance), `lengths[i]` tokens of text i, and every text's local term ids in a row
    (`flat`). Made by `tokenized_block`, in worker processes too; `BM25Store.merged` takes them
    in place of texts (a build's workers tokenize each passage as they cut it)."""

    terms: list[str]
    lengths: np.ndarray  # int64, one per text
    flat: np.ndarray  # int32 local term ids
    whole: bool = True  # False: some texts of the block that made `terms` (`rows`)

    def __len__(self) -> int:
        return len(self.lengths)

    def rows(self, start: int, stop: int) -> TokenizedTexts:
        """Texts start..stop-1 (their `terms` the whole block's: only the used ones are mapped)."""
        if start == 0 and stop == len(self):
            return self
        offsets = self.offsets
        return TokenizedTexts(self.terms, self.lengths[start:stop], self.flat[offsets[start]:offsets[stop]], False)

    @functools.cached_property
    def offsets(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.lengths)])

    def mapped(self, vocab: dict[str, int]) -> np.ndarray:
        """`flat` as columns of `vocab`, which the used terms join (in local id order) when new."""
        # Every term of a whole block occurs in it; a part maps only its own, so that no term without
        # a passage joins the vocabulary.
        used = np.arange(len(self.terms)) if self.whole else np.unique(self.flat)
        lut = np.zeros(len(self.terms), dtype=np.int64)
        terms = self.terms
        lut[used] = np.fromiter((vocab.setdefault(terms[i], len(vocab)) for i in used.tolist()),
                                dtype=np.int64, count=len(used))
        return lut[self.flat]


def tokenized_block(texts: list[str], stopwords: str | None, stemmer=None) -> TokenizedTexts:
    """`texts` tokenized by `bm25s.tokenize` with the store's stop words and stemmer: what
    `BM25Store._token_ids` maps into a vocabulary. A module function, so that worker processes
    run it (with a stemmer of their own: PyStemmer objects are not thread-safe)."""
    tokens = bm25s.tokenize(texts, stopwords=stopwords, stemmer=stemmer or Stemmer.Stemmer(STEMMER_LANGUAGE),
                            return_ids=True, show_progress=False)
    terms = [""] * len(tokens.vocab)
    for term, local in tokens.vocab.items():
        terms[local] = term
    lengths = np.fromiter(map(len, tokens.ids), dtype=np.int64, count=len(tokens.ids))
    flat = np.fromiter(itertools.chain.from_iterable(tokens.ids), dtype=np.int32, count=int(lengths.sum()))
    return TokenizedTexts(terms, lengths, flat)


def tokenized_passages(titled: list[tuple[str, str]]) -> TokenizedTexts:
    """The BM25 documents of passages given as (document title, passage text), tokenized as a base
    built now tokenizes them (`TITLE_REPEATS`, `STOPWORDS`): what a build's worker processes make
    as they cut passages (`indexer.sources.workers.cut_task`)."""
    return tokenized_block([bm25_document(title, text, TITLE_REPEATS) for title, text in titled], STOPWORDS)


def bm25_terms(text: str, stopwords: str = STOPWORDS) -> list[tuple[int, int, str]]:
    """(start, end, term) for each word of `text` that BM25 indexes, in order.

    `text[start:end]` is the word as written and `term` the stem BM25 stores
    and matches on. This is `BM25Store`'s analysis (bm25s.tokenize with its
    default token pattern, lower-case, the stop words `stopwords` (a name in
    `STOPWORD_LISTS`: a base built now reads `STOPWORDS`), the Snowball English
    stemmer) redone with offsets, so a highlighter marks exactly the words a
    BM25 search matched; stop words and one-letter words are left out, as BM25
    leaves them out.
    """
    import re

    if stopwords not in STOPWORD_LISTS:
        raise ValueError(f"Unknown stop-word list {stopwords!r}; name one of {sorted(STOPWORD_LISTS)}.")
    lowered = text.lower()  # as bm25s does, on the whole text (Greek final sigma depends on context)
    # Lower-casing may lengthen a character ("İ" -> "i" + a combining dot): map offsets back.
    source = range(len(text))
    if len(lowered) != len(text):
        source = [i for i, char in enumerate(text) for _ in char.lower()]
    stop = set(STOPWORD_LISTS[stopwords])
    words = [m for m in re.finditer(r"(?u)\b\w\w+\b", lowered) if m.group() not in stop]
    # A new stemmer per call: PyStemmer objects are not thread-safe, and one costs about a microsecond.
    stems = Stemmer.Stemmer(STEMMER_LANGUAGE).stemWords([m.group() for m in words])
    return [(source[m.start()], source[m.end() - 1] + 1, stem) for m, stem in zip(words, stems, strict=True)]
