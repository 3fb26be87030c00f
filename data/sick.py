"""Reader for SICK (Marelli et al. 2014): sentence pairs with an entailment label and relatedness.

The file is tab-separated with a header row; the last column names the split
(TRAIN, TRIAL, TEST), so one file serves all splits and the caller picks.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

LABELS = ("ENTAILMENT", "NEUTRAL", "CONTRADICTION")
REQUIRED_COLUMNS = ("sentence_A", "sentence_B", "entailment_label", "relatedness_score", "SemEval_set")


@dataclass(frozen=True)
class SickPair:
    sentence_a: str
    sentence_b: str
    label: int  # index into LABELS
    relatedness: float  # 1 to 5
    split: str


def iter_sick(path: Path | str, splits: Iterable[str] = ("TRAIN",)) -> Iterator[SickPair]:
    """Stream the pairs whose split column is in `splits` (upper case: TRAIN, TRIAL, TEST)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"SICK file {str(path)!r} not found. Pass e.g. ../shared/data/sick/SICK_train_trial.txt.")
    wanted = {split.upper() for split in splits}
    with path.open("r", encoding="utf-8") as handle:
        header = handle.readline().rstrip("\n").split("\t")
        missing = [column for column in REQUIRED_COLUMNS if column not in header]
        if missing:
            raise ValueError(
                f"{path}: header lacks SICK columns {missing}; found {header}. "
                "Pass the original tab-separated SICK file with its header row."
            )
        index = {column: header.index(column) for column in REQUIRED_COLUMNS}
        for line_number, line in enumerate(handle, start=2):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < len(header):
                logger.warning("%s:%d: expected %d fields, found %d; skipping", path, line_number, len(header), len(fields))
                continue
            split = fields[index["SemEval_set"]].strip().upper()
            if split not in wanted:
                continue
            label_name = fields[index["entailment_label"]].strip().upper()
            try:
                relatedness = float(fields[index["relatedness_score"]])
                label = LABELS.index(label_name)
            except ValueError:
                logger.warning("%s:%d: bad label %r or relatedness %r; skipping", path, line_number,
                               label_name, fields[index["relatedness_score"]])
                continue
            yield SickPair(
                sentence_a=fields[index["sentence_A"]],
                sentence_b=fields[index["sentence_B"]],
                label=label,
                relatedness=relatedness,
                split=split,
            )
