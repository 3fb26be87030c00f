"""The mixed read/write benchmark's own parts (bench/api_mixed.py); the run itself is in BENCHMARKS.md."""

from __future__ import annotations

import stat
from pathlib import Path

from bench.api_mixed import BATCH, document, key_file
from search.api_keys import ApiKeys


def test_each_document_holds_a_word_no_other_holds() -> None:
    docs = [document("m0", n) for n in range(3 * BATCH)]
    words = [d["text"].split()[0] for d in docs]
    assert len({d["id"] for d in docs}) == len(docs) and len(set(words)) == len(words)
    assert all(sum(w in d["text"].split() for d in docs) == 1 for w in words), "a search for it finds one document"


def test_the_keys_file_is_one_the_service_accepts_and_private(tmp_path: Path) -> None:
    path, read, write = key_file(tmp_path)
    keys = ApiKeys.load(path)
    assert (keys.scope_of(read), keys.scope_of(write)) == ("read", "write")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
