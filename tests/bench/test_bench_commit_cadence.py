"""bench_commit_cadence times every commit of a real ingest under each rule, and puts the build back."""

from __future__ import annotations

import json

import numpy as np

from bench.bench_commit_cadence import run_rule
from indexer.build import loop
from indexer.store.transaction import WriteTransaction


def test_each_rule_ingests_everything_and_every_commit_is_timed(tmp_path):
    n = 300
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"p{i}", "title": f"t{i}", "text": f"passage {i} about topic {i % 7}"})
                              + "\n" for i in range(n)))
    vectors = np.random.default_rng(0).standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(tmp_path / "vectors.npy", vectors)
    (tmp_path / "vectors.ids.txt").write_text("".join(f"p{i}\n" for i in range(n)))
    before = (loop.commit_cap, loop.commit_ceiling, WriteTransaction.commit, WriteTransaction._merge_reason)
    for rule in ("quarter", "ceiling"):
        found = run_rule(rule, corpus, tmp_path / "vectors.npy", tmp_path / rule, rate=60.0)
        assert found["passages"] == n
        assert sum(c["passages"] for c in found["commits"]) == n
        assert all(c["seconds"] > 0 for c in found["commits"])
        assert found["commits"][0]["merge"], "a first build builds its base"
    assert (loop.commit_cap, loop.commit_ceiling, WriteTransaction.commit, WriteTransaction._merge_reason) == before
