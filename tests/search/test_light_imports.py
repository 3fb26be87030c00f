"""`import search` and a BM25 lookup through `Index` stay light: no torch, no sentence-transformers.

They cost several seconds to import on a small CPU, which the app's first page, the HTTP
service's start and BM25-only tools should not pay. Checked in a fresh interpreter, since
this test process has long imported both.
"""

from __future__ import annotations

import subprocess
import sys

from indexer import IndexConfig, build_index

PROBE = """
import sys
import search
from indexer import Index
with Index.open(sys.argv[1], use_gpu=False) as index:
    scores, ids = index.snapshot().bm25.search("bread dough", 5)
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules)
print(len(ids), ",".join(heavy) or "none")
"""


def test_import_search_and_a_bm25_lookup_import_no_torch(topic_corpus, tmp_path, tiny_model):
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    out = subprocess.run([sys.executable, "-c", PROBE, str(index_dir)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["1", "none"], f"found {out[0]} BM25 hits; heavy modules imported: {out[1]}"
