"""Reproducible scale corpora for `bench_scale`: 100k to 1M passages with MiniLM-like vectors.

Text. The shared Wikipedia slice and Wikinews (`$SEMSEARCH_DATA/corpus`) are cut into
passages of 40-120 words on sentence boundaries, within one article, the article's title
kept as the passage title. Exact duplicate texts are dropped. They are shuffled once with a
fixed seed, so any prefix is a sample of both sources. The shared text yields 142,979
distinct real passages (median 106 words, 135 MiniLM tokens), fewer than 1M, so row
`i >= real_count` is a recombination: the leading sentences of real passage `a` (about half
its words) followed by the trailing sentences of real passage `b`, filled up to `a`'s length
(at most 120 words), with `a` and `b` drawn by an RNG seeded with `(SEED, i)`. Its title is
`a`'s. Every word and sentence is real, so BM25's term statistics stay realistic in shape;
the limit is that the vocabulary stops growing after the real rows and each real sentence
recurs about `N / real_count` times (document frequencies scale up, idf ratios keep).
Row `i` depends on `i` alone, so a smaller corpus is a prefix of a larger one.

Vectors. The first R rows carry the embeddings the indexer itself would make
(`embedding_inputs`: `passage_text(embedded_title(title), text)` through the default
all-MiniLM-L6-v2, normalised) for one passage per corpus line, as `indexer.build.ingest` takes
them; about 0.2% of passages exceed the 221-token passage budget, which a `python -m indexer
build` of the JSONL would split in two, and whose single vector saw the first 256 tokens.
R is what this CPU encodes in `--real-seconds` (resumable: blocks are saved as they finish;
`--real-count` fixes it): 6,144 in 15 minutes on 2 cores shared with other jobs (5.6/s).
Rows after R are synthetic: k-means on the real vectors (256-1024 clusters), then a cluster
drawn with probability proportional to its size, and a Gaussian draw from its mean and
covariance, that covariance shrunk a quarter of the way toward its diagonal
(`DIAGONAL_SHARE`), L2-normalised. Per-dimension noise alone is too isotropic: its nearest
neighbours are far less similar than real ones (`resemblance` prints both). A synthetic
row's vector does not describe its text: dense search quality at scale cannot be measured
with them, only cost and behaviour on a realistic neighbour distribution.

Files under `.cache/scale/` (git-ignored):
  corpus-<N>.jsonl          {"id", "title", "text"} per line, what `python -m indexer build` reads
  embeddings-<N>.npy        float32 (N, 384), row i for corpus line i
  embeddings-<N>.ids.txt    the corpus ids, one a line, same order
  embeddings-<N>.json       how its synthetic rows were drawn (R, clusters, share, seed)
  real-<R>.npy / .ids.txt   the real embeddings alone
  real-blocks/              encoding progress (one .npy + .ids.txt per block)

Usage: python -m bench.scale_data --sizes 100000 300000 1000000 [--real-seconds 900]
       [--real-count R] [--data DIR] [--cache DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import html
import json
import logging
import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data.paths import PROJECT_ROOT, shared_data_dir

logger = logging.getLogger(__name__)

SEED = 20240607
MIN_WORDS, MAX_WORDS = 40, 120
# Sentences longer than this are cut into word runs, so greedy packing never overshoots MAX_WORDS.
MAX_SENTENCE_WORDS = MAX_WORDS // 2
ENCODE_BLOCK = 1024
SYNTHETIC_BLOCK = 65_536
DIM = 384
DEFAULT_CACHE = PROJECT_ROOT / ".cache" / "scale"
WIKI_FILE = "corpus/enwiki_slice.txt.gz"
NEWS_FILE = "corpus/enwikinews.jsonl.gz"

_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])")
_DOC_OPEN = re.compile(r'<doc id="([^"]*)"[^>]*title="([^"]*)"')
# Lines that are markup left by WikiExtractor, not prose.
_MARKUP = re.compile(r"[<>{}|]|__|\[\[|&lt;|&gt;")
_MIN_LINE_WORDS = 6  # shorter lines are section headings or list debris


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    sentences: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    def row(self) -> dict[str, str]:
        return {"id": self.id, "title": self.title, "text": self.text}


# ---------------------------------------------------------------- text

def _wiki_articles(path: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(id, title, body lines) per `<doc>` block; the first body line repeats the title."""
    doc_id, title, lines = None, "", []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if doc_id is None:
                match = _DOC_OPEN.match(line)
                if match:
                    doc_id, title, lines = match.group(1), html.unescape(match.group(2)), []
            elif line.startswith("</doc>"):
                yield f"w{doc_id}", title, lines[1:]
                doc_id = None
            else:
                lines.append(line)


def _news_articles(path: Path) -> Iterator[tuple[str, str, list[str]]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            yield f"n{row['id']}", row.get("title") or "", html.unescape(row.get("text") or "").splitlines()


def split_sentences(paragraph: str) -> list[str]:
    """Sentences on `. ! ?` before a capital or digit (abbreviations such as "U.S. Army" split too),
    each at most `MAX_SENTENCE_WORDS` words."""
    out: list[str] = []
    for sentence in _SENTENCE_END.split(paragraph):
        words = sentence.split()
        for begin in range(0, len(words), MAX_SENTENCE_WORDS):
            out.append(" ".join(words[begin : begin + MAX_SENTENCE_WORDS]))
    return out


def article_passages(article_id: str, title: str, lines: Sequence[str]) -> list[Passage]:
    """Sentences of the article's prose lines packed greedily into passages of 40-120 words;
    a tail under 40 words is dropped (as is an article that short)."""
    sentences = [
        s
        for line in lines
        if len(line.split()) >= _MIN_LINE_WORDS and not _MARKUP.search(line)
        for s in split_sentences(line.strip())
    ]
    passages: list[Passage] = []
    current: list[str] = []
    words = 0
    for sentence in sentences:
        n = len(sentence.split())
        if words + n > MAX_WORDS and words >= MIN_WORDS:
            passages.append(Passage(f"{article_id}-{len(passages)}", title, tuple(current)))
            current, words = [], 0
        current.append(sentence)
        words += n
    if words >= MIN_WORDS:
        passages.append(Passage(f"{article_id}-{len(passages)}", title, tuple(current)))
    return passages


def real_passages(data_dir: Path, seed: int = SEED) -> list[Passage]:
    """Every distinct real passage of the two shared corpora, in a seeded random order."""
    missing = [str(data_dir / name) for name in (WIKI_FILE, NEWS_FILE) if not (data_dir / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"Scale corpora need {', '.join(missing)}; set SEMSEARCH_DATA or pass --data to the "
            "shared data folder (see its README)."
        )
    seen: set[bytes] = set()
    passages: list[Passage] = []
    for articles in (_wiki_articles(data_dir / WIKI_FILE), _news_articles(data_dir / NEWS_FILE)):
        for article_id, title, lines in articles:
            for passage in article_passages(article_id, title, lines):
                key = hashlib.blake2b(passage.text.encode(), digest_size=12).digest()
                if key not in seen:
                    seen.add(key)
                    passages.append(passage)
    order = np.random.default_rng(seed).permutation(len(passages))
    return [passages[i] for i in order]


def _words(sentences: Sequence[str]) -> int:
    return sum(len(s.split()) for s in sentences)


def recombined_passage(i: int, real: Sequence[Passage], seed: int = SEED) -> Passage:
    """Row `i`'s passage: `a`'s leading sentences (about half its words, at least one) and then
    `b`'s trailing sentences up to `a`'s length, at most MAX_WORDS; redrawn while the result
    repeats `a` or is under MIN_WORDS (at most 16 draws)."""
    rng = np.random.default_rng([seed, i])
    for _ in range(16):
        a, b = (real[int(j)] for j in rng.choice(len(real), size=2, replace=False))
        target = _words(a.sentences)
        head: list[str] = [a.sentences[0]]
        for sentence in a.sentences[1:]:
            if _words(head) + len(sentence.split()) > target / 2:
                break
            head.append(sentence)
        tail: list[str] = []
        for sentence in reversed(b.sentences):
            n = len(sentence.split())
            if _words(head) + _words(tail) >= target or _words(head) + _words(tail) + n > MAX_WORDS:
                break
            tail.insert(0, sentence)
        sentences = tuple(head + tail)
        if tail and _words(sentences) >= MIN_WORDS:
            return Passage(f"x{i}", a.title, sentences)
    return Passage(f"x{i}", a.title, sentences)


def corpus_rows(n: int, real: Sequence[Passage], seed: int = SEED) -> Iterator[Passage]:
    """The first `n` rows: the real passages, then recombinations."""
    yield from real[:n]
    for i in range(len(real), n):
        yield recombined_passage(i, real, seed)


def _atomic_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_corpus(n: int, real: Sequence[Passage], cache_dir: Path = DEFAULT_CACHE) -> Path:
    """`cache_dir/corpus-<n>.jsonl`, written once (a smaller cached corpus is reused as its prefix)."""
    path = cache_dir / f"corpus-{n}.jsonl"
    if path.is_file():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = _atomic_path(path)
    with tmp.open("w", encoding="utf-8") as f:
        for passage in corpus_rows(n, real):
            f.write(json.dumps(passage.row(), ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path


def read_corpus_ids(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line)["id"] for line in f]


# ---------------------------------------------------------------- real vectors

def embedding_texts(passages: Sequence[Passage], model) -> list[str]:
    """What the indexer embeds for these passages: each is one document whose single span is
    its whole text (40-120 words fit the model's window, so the chunker would not split it)."""
    from indexer.build.pipeline import embedding_inputs
    from indexer.sources.documents import Document, PassageSpan

    documents = [Document(doc_id=p.id, title=p.title, text=p.text, source="scale") for p in passages]
    spans = [[PassageSpan(0, 0, len(d.text))] for d in documents]
    return embedding_inputs(documents, spans, model, embed_titles=True)


def _block_paths(blocks_dir: Path, block_no: int) -> tuple[Path, Path]:
    stem = blocks_dir / f"block-{block_no:05d}"
    return stem.with_suffix(".npy"), stem.with_suffix(".ids.txt")


def _done_blocks(blocks_dir: Path, real: Sequence[Passage]) -> int:
    """How many leading blocks are saved and belong to these passages (their ids match)."""
    block_no = 0
    while True:
        vectors_path, ids_path = _block_paths(blocks_dir, block_no)
        if not (vectors_path.is_file() and ids_path.is_file()):
            return block_no
        expected = [p.id for p in real[block_no * ENCODE_BLOCK : (block_no + 1) * ENCODE_BLOCK]]
        ids = ids_path.read_text().split("\n")[:-1]
        if len(ids) < len(expected) and ids == expected[: len(ids)]:
            return block_no  # a block cut short by --real-count: encoded again in full
        if ids != expected:
            raise ValueError(
                f"{ids_path} holds other passages than the corpus now gives (the data or the "
                f"passage rules changed); delete {blocks_dir} and encode again."
            )
        block_no += 1


@dataclass(frozen=True)
class EncodingReport:
    encoded: int  # passages encoded by this call
    total: int  # passages encoded in all, this call's included
    seconds: float
    passages_per_second: float


def encode_real(
    real: Sequence[Passage],
    cache_dir: Path = DEFAULT_CACHE,
    seconds: float = 900.0,
    count: int | None = None,
) -> EncodingReport:
    """Encode further blocks of `real`, in corpus order, until `seconds` have passed (a block
    started before then is finished) or `count` passages are done; each block is saved as it
    finishes, so a killed run loses one block at most."""
    from indexer.embedding import encode_texts, load_bi_encoder

    blocks_dir = cache_dir / "real-blocks"
    blocks_dir.mkdir(parents=True, exist_ok=True)
    block_no = _done_blocks(blocks_dir, real)
    limit = len(real) if count is None else min(count, len(real))
    began = time.perf_counter()
    encoded = 0
    model = None
    while block_no * ENCODE_BLOCK < limit:
        if count is None and time.perf_counter() - began >= seconds:
            break
        model = model or load_bi_encoder(None)
        block = real[block_no * ENCODE_BLOCK : min((block_no + 1) * ENCODE_BLOCK, limit)]
        vectors = encode_texts(model, embedding_texts(block, model), batch_size=64)
        vectors_path, ids_path = _block_paths(blocks_dir, block_no)
        tmp = _atomic_path(vectors_path).with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(vectors_path)
        ids_path.write_text("".join(f"{p.id}\n" for p in block))
        encoded += len(block)
        block_no += 1
        elapsed = time.perf_counter() - began
        logger.info("encoded %d passages (%d this run) in %.0f s: %.1f/s",
                    min(block_no * ENCODE_BLOCK, limit), encoded, elapsed, encoded / elapsed)
    elapsed = time.perf_counter() - began
    return EncodingReport(encoded, min(block_no * ENCODE_BLOCK, limit), elapsed,
                          encoded / elapsed if encoded else 0.0)


def real_embeddings(cache_dir: Path = DEFAULT_CACHE) -> tuple[np.ndarray, list[str]]:
    """The encoded blocks joined, also saved as `real-<R>.npy` and `real-<R>.ids.txt`."""
    blocks_dir = cache_dir / "real-blocks"
    parts, ids = [], []
    block_no = 0
    while True:
        vectors_path, ids_path = _block_paths(blocks_dir, block_no)
        if not (vectors_path.is_file() and ids_path.is_file()):
            break
        parts.append(np.load(vectors_path))
        ids.extend(ids_path.read_text().split("\n")[:-1])
        block_no += 1
    if not parts:
        raise FileNotFoundError(
            f"No real embeddings under {blocks_dir}; run `python -m bench.scale_data` with "
            "--real-seconds above 0 first."
        )
    vectors = np.concatenate(parts)
    path = cache_dir / f"real-{len(ids)}.npy"
    if not path.is_file():
        for stale in cache_dir.glob("real-*.npy"):
            stale.unlink()
            stale.with_suffix(".ids.txt").unlink(missing_ok=True)
        np.save(path, vectors)
        path.with_suffix(".ids.txt").write_text("".join(f"{i}\n" for i in ids))
    return vectors, ids


# ---------------------------------------------------------------- synthetic vectors

# Share of each cluster's noise variance drawn per dimension (the rest along its members'
# residuals): the covariance is shrunk toward its diagonal, Ledoit-Wolf style, so it has full
# rank though a cluster holds fewer members than dimensions. Chosen on 6,144 real vectors (see
# `resemblance`): 0 copies their low-rank spread (top-1 cosine too high, 0.61 against 0.53 with
# 256 clusters), 1 is a diagonal Gaussian (0.38, too low); 0.25 gives 0.53.
DIAGONAL_SHARE = 0.25


@dataclass(frozen=True)
class VectorModel:
    """A Gaussian per k-means cluster of the real vectors: its mean, and its covariance shrunk
    toward the diagonal (`diagonal_share`), kept as the members' scaled residuals plus stds."""

    centroids: np.ndarray  # (k, d) cluster means
    weights: np.ndarray  # (k,) cluster sizes / R
    stds: np.ndarray  # (k, d) per-dimension std; the global one for a cluster of one member
    residuals: np.ndarray  # (R, d) member - mean, / sqrt(members - 1), grouped by cluster
    offsets: np.ndarray  # (k + 1,) cluster c's residuals are rows offsets[c]:offsets[c+1]
    diagonal_share: float = DIAGONAL_SHARE

    def __post_init__(self) -> None:
        k, d = self.centroids.shape
        if self.stds.shape != (k, d) or self.weights.shape != (k,) or self.offsets.shape != (k + 1,):
            raise ValueError(
                f"centroids {self.centroids.shape}, stds {self.stds.shape}, weights "
                f"{self.weights.shape} and offsets {self.offsets.shape} must be (k, d), (k, d), (k,) "
                "and (k + 1,)."
            )
        if not 0.0 <= self.diagonal_share <= 1.0:
            raise ValueError(f"diagonal_share ({self.diagonal_share}) must be in [0, 1].")


def clusters_for(n_real: int) -> int:
    """256-1024 clusters, about 40 real vectors each once there are more than 10,240."""
    return int(min(1024, max(256, n_real // 40)))


def fit_vector_model(real: np.ndarray, k: int | None = None, seed: int = SEED,
                     diagonal_share: float = DIAGONAL_SHARE) -> VectorModel:
    import faiss

    k = k or clusters_for(len(real))
    if len(real) < 2 * k:
        raise ValueError(f"{len(real)} real vectors cannot fit {k} clusters; encode more (raise --real-seconds).")
    real = np.ascontiguousarray(real, dtype=np.float32)
    kmeans = faiss.Kmeans(real.shape[1], k, niter=20, seed=seed, spherical=True, verbose=False)
    kmeans.train(real)
    _, assign = kmeans.index.search(real, 1)
    assign = assign[:, 0]
    counts = np.bincount(assign, minlength=k)
    order = np.argsort(assign, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(counts)])
    centroids = np.asarray(kmeans.centroids, dtype=np.float32).copy()
    residuals = np.zeros_like(real)
    stds = np.zeros_like(centroids)
    for c in range(k):
        members = real[order[offsets[c] : offsets[c + 1]]]
        if len(members):
            centroids[c] = members.mean(axis=0)
        if len(members) > 1:
            residuals[offsets[c] : offsets[c + 1]] = (members - centroids[c]) / np.sqrt(len(members) - 1)
            stds[c] = members.std(axis=0)
    global_std = (real - centroids[assign]).std(axis=0)
    stds[counts < 2] = global_std
    return VectorModel(centroids, counts / counts.sum(), stds, residuals, offsets, diagonal_share)


def synthetic_vectors(model: VectorModel, start: int, count: int, seed: int = SEED) -> np.ndarray:
    """Synthetic rows `start .. start+count` (counted from the first synthetic row), unit float32.

    Row = centroid + sqrt(1 - share) * (standard normal weights over the cluster's scaled member
    residuals) + sqrt(share) * (normal noise * the cluster's stds); a cluster of one member
    takes all its noise from the (global) stds. Drawn in blocks of `SYNTHETIC_BLOCK` rows, each
    from an RNG seeded with (seed, block), so a row does not depend on how many are asked for.
    """
    k, d = model.centroids.shape
    out = np.empty((count, d), dtype=np.float32)
    if count == 0:
        return out
    first_block, last_block = start // SYNTHETIC_BLOCK, (start + count - 1) // SYNTHETIC_BLOCK
    for block in range(first_block, last_block + 1):
        rng = np.random.default_rng([seed, 1, block])
        cluster = rng.choice(k, size=SYNTHETIC_BLOCK, p=model.weights)
        vectors = model.centroids[cluster] + rng.standard_normal((SYNTHETIC_BLOCK, d), dtype=np.float32) * (
            model.stds[cluster]
        )  # (B, d): the diagonal part, rescaled below where a span part is added
        for c in np.unique(cluster):
            span = model.residuals[model.offsets[c] : model.offsets[c + 1]]
            if len(span) < 2:
                continue
            rows = np.flatnonzero(cluster == c)
            weights = rng.standard_normal((len(rows), len(span)), dtype=np.float32)  # (rows, members)
            diagonal = vectors[rows] - model.centroids[c]
            vectors[rows] = (model.centroids[c] + np.sqrt(model.diagonal_share) * diagonal
                             + np.sqrt(1 - model.diagonal_share) * (weights @ span))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        lo = max(start, block * SYNTHETIC_BLOCK)
        hi = min(start + count, (block + 1) * SYNTHETIC_BLOCK)
        out[lo - start : hi - start] = vectors[lo - block * SYNTHETIC_BLOCK : hi - block * SYNTHETIC_BLOCK]
    return out


def write_embeddings(
    n: int, real: np.ndarray, real_ids: Sequence[str], model: VectorModel, corpus: Path,
    cache_dir: Path = DEFAULT_CACHE,
) -> Path:
    """`embeddings-<n>.npy` (float32 (n, d)) and its `.ids.txt`: real rows first, then synthetic."""
    path = cache_dir / f"embeddings-{n}.npy"
    ids_path = path.with_suffix(".ids.txt")
    ids = read_corpus_ids(corpus)
    if len(ids) != n:
        raise ValueError(f"{corpus} holds {len(ids)} rows, not {n}; delete it and run again.")
    r = min(n, len(real_ids))
    if ids[:r] != list(real_ids[:r]):
        raise ValueError(f"The real embeddings' ids do not match {corpus}'s first rows; delete {cache_dir} and run again.")
    recipe = {"real": len(real_ids), "clusters": len(model.weights), "diagonal_share": model.diagonal_share,
              "seed": SEED, "synthetic_block": SYNTHETIC_BLOCK}
    recipe_path = path.with_suffix(".json")
    if (path.is_file() and ids_path.is_file() and recipe_path.is_file()
            and json.loads(recipe_path.read_text()) == recipe and ids_path.read_text().split("\n")[:-1] == ids):
        return path
    tmp = _atomic_path(path).with_suffix(".tmp.npy")
    matrix = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, real.shape[1]))
    matrix[:r] = real[:r]
    for begin in range(r, n, SYNTHETIC_BLOCK):
        end = min(n, begin + SYNTHETIC_BLOCK)
        matrix[begin:end] = synthetic_vectors(model, begin - len(real_ids), end - begin)
    matrix.flush()
    del matrix
    tmp.replace(path)
    ids_path.write_text("".join(f"{i}\n" for i in ids))
    recipe_path.write_text(json.dumps(recipe) + "\n")
    return path


def load_embeddings(path: Path, mmap: bool = True) -> tuple[np.ndarray, list[str]]:
    """An embeddings file and its ids, as `write_embeddings` wrote them."""
    vectors = np.load(path, mmap_mode="r" if mmap else None)
    ids = path.with_suffix(".ids.txt").read_text().split("\n")[:-1]
    if len(ids) != len(vectors):
        raise ValueError(f"{path} has {len(vectors)} rows but its .ids.txt {len(ids)}; write it again.")
    return vectors, ids


# ---------------------------------------------------------------- resemblance

@dataclass(frozen=True)
class NeighbourStats:
    label: str
    sample: int
    top1: tuple[float, float, float, float]  # mean, p5, p50, p95 of the nearest neighbour's cosine
    top10: tuple[float, float, float, float]  # the same for the 10th nearest


def neighbour_stats(label: str, vectors: np.ndarray, k: int = 10) -> NeighbourStats:
    """Cosine similarity of each vector to its 1st and k-th nearest other vector in the same set."""
    import faiss

    x = np.ascontiguousarray(vectors, dtype=np.float32)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    sims, _ = index.search(x, k + 1)  # column 0 is the vector itself

    def summary(column: np.ndarray) -> tuple[float, float, float, float]:
        p5, p50, p95 = np.percentile(column, [5, 50, 95])
        return float(column.mean()), float(p5), float(p50), float(p95)

    return NeighbourStats(label, len(x), summary(sims[:, 1]), summary(sims[:, k]))


def resemblance(real: np.ndarray, model: VectorModel, sample: int = 20_000, seed: int = SEED) -> list[NeighbourStats]:
    """Real and synthetic vectors' neighbour similarities on equal-size samples; the diagonal-only
    model is shown for comparison."""
    n = min(sample, len(real))
    rng = np.random.default_rng([seed, 2])
    real_sample = real[np.sort(rng.choice(len(real), size=n, replace=False))]
    diagonal = dataclasses.replace(model, diagonal_share=1.0)
    return [
        neighbour_stats("real", real_sample),
        neighbour_stats(f"synthetic (diagonal share {model.diagonal_share:g})", synthetic_vectors(model, 0, n)),
        neighbour_stats("synthetic, diagonal only (share 1)", synthetic_vectors(diagonal, 0, n)),
    ]


def resemblance_table(stats: Sequence[NeighbourStats]) -> str:
    from bench.record import markdown_table

    rows = [
        [s.label, f"{s.sample:,}", *(f"{v:.3f}" for v in s.top1), *(f"{v:.3f}" for v in s.top10)]
        for s in stats
    ]
    return markdown_table(
        ["vectors", "sample", "top-1 mean", "top-1 p5", "top-1 p50", "top-1 p95",
         "top-10 mean", "top-10 p5", "top-10 p50", "top-10 p95"],
        rows,
    )


# ---------------------------------------------------------------- entry point

@dataclass(frozen=True)
class ScaleDataConfig:
    sizes: tuple[int, ...]
    data_dir: Path
    cache_dir: Path = DEFAULT_CACHE
    real_seconds: float = 900.0
    real_count: int | None = None  # encode exactly this many real passages instead of by time
    resemblance_sample: int = 20_000

    def __post_init__(self) -> None:
        if not self.sizes or min(self.sizes) < 1:
            raise ValueError(f"sizes ({self.sizes}) must be one or more positive passage counts.")
        if self.real_seconds < 0:
            raise ValueError(f"real_seconds ({self.real_seconds}) must not be negative.")
        if self.real_count is not None and self.real_count < 1:
            raise ValueError(f"real_count ({self.real_count}) must be at least 1, or left out to encode by time.")


@dataclass(frozen=True)
class ScaleData:
    real_passages: int
    corpora: dict[int, Path]
    embeddings: dict[int, Path]
    encoding: EncodingReport
    real_vectors: int
    resemblance: list[NeighbourStats]


def prepare(config: ScaleDataConfig) -> ScaleData:
    """Corpora for every size, the real embeddings (continued within the time budget), then the
    embedding files; each step reuses what the cache already holds."""
    began = time.perf_counter()
    real = real_passages(config.data_dir)
    logger.info("%d distinct real passages in %.0f s", len(real), time.perf_counter() - began)
    encoding = encode_real(real, config.cache_dir, config.real_seconds, config.real_count)
    corpora = {n: write_corpus(n, real, config.cache_dir) for n in sorted(config.sizes)}
    vectors, ids = real_embeddings(config.cache_dir)
    if config.real_count is not None:
        vectors, ids = vectors[: config.real_count], ids[: config.real_count]
    model = fit_vector_model(vectors)
    embeddings = {n: write_embeddings(n, vectors, ids, model, corpora[n], config.cache_dir) for n in corpora}
    stats = resemblance(vectors, model, config.resemblance_sample)
    return ScaleData(len(real), corpora, embeddings, encoding, len(ids), stats)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--data", type=Path, default=None, help="shared data folder (default $SEMSEARCH_DATA)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--real-seconds", type=float, default=900.0,
                        help="time to spend encoding real passages in this run (saved blocks are kept)")
    parser.add_argument("--real-count", type=int, default=None,
                        help="encode exactly this many real passages (for a reproducible R)")
    parser.add_argument("--resemblance-sample", type=int, default=20_000)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    config = ScaleDataConfig(
        sizes=tuple(args.sizes), data_dir=args.data or shared_data_dir(), cache_dir=args.cache,
        real_seconds=args.real_seconds, real_count=args.real_count,
        resemblance_sample=args.resemblance_sample,
    )
    result = prepare(config)
    print(f"real passages: {result.real_passages:,}")
    print(f"real vectors R: {result.real_vectors:,} (this run encoded {result.encoding.encoded:,} "
          f"in {result.encoding.seconds:.0f} s, {result.encoding.passages_per_second:.1f}/s)")
    for n in result.corpora:
        print(f"{n:>9,}: {result.corpora[n]}  {result.embeddings[n]}")
    print()
    print(resemblance_table(result.resemblance))
    return 0


if __name__ == "__main__":
    sys.exit(main())
