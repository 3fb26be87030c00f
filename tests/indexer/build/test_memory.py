"""A build's memory grows with its passages by a bounded amount (issue 31), measured for real.

Two ingests of the same kind of source, 8,000 and 40,000 documents (one passage each, about 700
characters, vectors of 384 given in a .npy, one commit, auto index type), each in its own process;
the peak RSS of each (`getrusage`, which counts every page the process ever held) is taken after
imports, so the difference divided by the 32,000 documents between them is what a passage costs,
without the fixed costs of imports and libraries.

What the bound catches: the ORM rows of a commit kept until it ends (about 8 KB a passage), a
.jsonl decoded into one string (up to 4 bytes a character), every vector concatenated again in a
merge (1.5 KB a copy at 384 dimensions), BM25's score triples gathered before conversion. At 1M
passages of the scale corpus the same ingest peaked at 3.8 GB (about 3.7 KB a passage, imports
included; BENCHMARKS.md), against 15.3 GB before the build streamed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from tests.indexer.sources.test_vector_input import fake_model

REPO = Path(__file__).resolve().parents[3]
DIM = 384
SMALL, LARGE = 8_000, 40_000
# Bytes of peak RSS a passage may add; measured at 5.8 KB here (text held in the window,
# its SQL rows, BM25 tokens and scores, its vector through the merge).
BOUND = 7_000
# A Zipf-like vocabulary, so that a passage holds about as many distinct terms as real text does.
VOCABULARY = 30_000

PROBE = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    from indexer import IndexConfig, build_index
    from indexer.sources import vector_input
    from indexer.store import bm25_store, transaction, vector_parts

    source, vectors, model, index = map(Path, sys.argv[1:5])
    vector_input.SPILL_BYTES = 1 << 20  # the spill path, as for any large table
    # Blocks far below both sizes, as they are below a large collection: what a block holds
    # while it is worked on is a fixed cost, which the difference between the sizes must not see.
    bm25_store.STREAM_BLOCK = transaction.STREAM_BLOCK = 2048
    vector_parts.BLOCK_ROWS = 4096
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = build_index(IndexConfig(source=source, index_dir=index, embeddings=vectors, model=str(model),
                                     show_progress=False, commit_passages=1_000_000))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"before_kb": before, "peak_kb": peak, "passages": report.total_passages}))
""")


def _corpus(folder: Path, n: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(n)
    words = np.array([f"w{i}" for i in range(VOCABULARY)])
    weights = 1 / np.arange(1, VOCABULARY + 1)
    tokens = rng.choice(VOCABULARY, size=(n, 100), p=weights / weights.sum())
    folder.mkdir(parents=True)
    source = folder / "corpus.jsonl"
    with source.open("w") as out:
        for i in range(n):
            text = " ".join(words[tokens[i]])
            out.write(json.dumps({"id": f"d{i}", "title": f"Document {i}", "text": text}) + "\n")
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(folder / "vectors.npy", vectors)
    (folder / "vectors.ids.txt").write_text("".join(f"d{i}\n" for i in range(n)))
    return source, folder / "vectors.npy"


def _peak(tmp_path: Path, n: int, model: str) -> dict:
    source, vectors = _corpus(tmp_path / f"c{n}", n)
    done = subprocess.run([sys.executable, "-c", PROBE, str(source), str(vectors), model, str(tmp_path / f"i{n}")],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["passages"] == n
    return result


def test_a_passage_costs_a_bounded_amount_of_memory(tmp_path: Path) -> None:
    model = fake_model(tmp_path / "model", dim=DIM)
    small, large = _peak(tmp_path, SMALL, model), _peak(tmp_path, LARGE, model)
    per_passage = (large["peak_kb"] - small["peak_kb"]) * 1024 / (LARGE - SMALL)
    print(f"peak RSS {small['peak_kb'] / 1024:.0f} MB at {SMALL:,}, {large['peak_kb'] / 1024:.0f} MB at "
          f"{LARGE:,}: {per_passage:,.0f} bytes a passage")
    assert per_passage < BOUND, f"a passage costs {per_passage:,.0f} bytes of peak RSS (bound {BOUND:,})"
