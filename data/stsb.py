"""Reader for the STS Benchmark (Cer et al. 2017) in its original tab-separated layout.

Each row has 7 leading fields (genre, file, year, id, score, sentence1, sentence2);
some rows carry 2 extra trailing fields, and sentences contain unbalanced quotes,
so rows are split on tabs with quoting off rather than read as CSV.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
MAX_SCORE = 5.0


@dataclass(frozen=True)
class StsPair:
    sentence1: str
    sentence2: str
    score: float  # gold similarity, 0 to 5
    genre: str = ""


def stsb_file(data_dir: Path | str, split: str) -> Path:
    """The file of one split inside an STSb folder."""
    if split not in SPLITS:
        raise ValueError(f"Unknown STSb split {split!r}. Valid: {', '.join(SPLITS)}.")
    path = Path(data_dir) / f"sts-{split}.csv"
    if not path.is_file():
        raise ValueError(
            f"STSb file {str(path)!r} not found. Pass the folder holding sts-train.csv, "
            "sts-dev.csv and sts-test.csv (e.g. ../shared/data/stsb)."
        )
    return path


def iter_stsb(data_dir: Path | str, split: str = "train") -> Iterator[StsPair]:
    """Stream the pairs of one split; rows with too few fields or a bad score are skipped with a warning."""
    path = stsb_file(data_dir, split)
    with path.open("r", encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 7:
                logger.warning("%s:%d: expected at least 7 tab-separated fields, found %d; skipping",
                               path, line_number, len(fields))
                continue
            try:
                score = float(fields[4])
            except ValueError:
                logger.warning("%s:%d: score %r is not a number; skipping", path, line_number, fields[4])
                continue
            if not 0.0 <= score <= MAX_SCORE:
                logger.warning("%s:%d: score %s outside 0-5; skipping", path, line_number, score)
                continue
            yield StsPair(sentence1=fields[5], sentence2=fields[6], score=score, genre=fields[0])


def load_stsb(data_dir: Path | str, split: str = "train") -> list[StsPair]:
    return list(iter_stsb(data_dir, split))
