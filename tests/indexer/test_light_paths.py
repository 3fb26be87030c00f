"""A rebuild with nothing to do, and a BM25-only search, never import torch or sentence-transformers.

Importing them costs several seconds on a small CPU, which a no-op `python -m indexer build`
(a cron job, `make run` checking its demo index) and a keyword-only tool should not pay.
Checked with `python -X importtime` in a fresh interpreter, since this test process has long
imported both.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from indexer import IndexConfig, build_index

HEAVY = frozenset({"torch", "sentence_transformers", "transformers"})

BM25_SEARCH = """
import sys
from search import Searcher
searcher = Searcher(sys.argv[1], model_loading="lazy")
hits = searcher.search("bread dough", mode="bm25")
result = searcher.search_detailed("knead the dough", k=3, mode="bm25")
print(hits[0].doc_id, result.mode, result.hits[0].doc_id)
"""


def heavy_imports(importtime_log: str) -> set[str]:
    """The heavy top-level packages named in `python -X importtime` output (stderr)."""
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0]
             for line in importtime_log.splitlines() if line.startswith("import time:")}
    return names & HEAVY


def run_importtime(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "import time:" in done.stderr, "importtime wrote nothing: the check would pass vacuously"
    return done


def test_a_rebuild_with_nothing_to_do_imports_no_torch(topic_corpus: Path, tmp_path: Path, tiny_model: str) -> None:
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    done = run_importtime("-m", "indexer", "build", "--source", str(topic_corpus), "--index", str(index_dir),
                          "--model", tiny_model, "--quiet")
    assert "4 unchanged" in done.stdout + done.stderr
    assert heavy_imports(done.stderr) == set()


def test_a_bm25_search_through_the_searcher_imports_no_torch(topic_corpus: Path, tmp_path: Path,
                                                              tiny_model: str) -> None:
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    done = run_importtime("-c", BM25_SEARCH, str(index_dir))
    assert done.stdout.split() == ["baking.txt", "bm25", "baking.txt"]
    assert heavy_imports(done.stderr) == set()


def test_heavy_imports_reads_importtime_lines() -> None:
    log = ("import time: self [us] | cumulative | imported package\n"
           "import time:       120 |        120 |     torch._C\n"
           "import time:        80 |         80 | sentence_transformers\n"
           "import time:        10 |         10 | transformers_stream_generator\n")
    assert heavy_imports(log) == {"torch", "sentence_transformers"}
