"""Negative passages for (query, positive) pairs: the seam where hard-negative mining plugs in.

`RandomNegativeMiner` samples from a passage pool. A miner backed by an existing
index (retrieve top-k for the query, drop the positives) only has to implement
`NegativeMiner.mine`; Qu et al. (2021, RocketQA) and Karpukhin et al. (2020, DPR)
show such retrieved negatives train much stronger rerankers than random ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np


class NegativeMiner(Protocol):
    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        """Up to `count` passages that are not in `positives`."""
        ...


class RandomNegativeMiner:
    def __init__(self, pool: Sequence[str]) -> None:
        self.pool = list(dict.fromkeys(pool))

    def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
        candidates = [passage for passage in self.pool if passage not in positives]
        if not candidates or count <= 0:
            return []
        picks = rng.choice(len(candidates), size=min(count, len(candidates)), replace=False)
        return [candidates[int(index)] for index in picks]
