from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from indexer.errors import BadInputError
from training.config import TokenizerConfig
from training.input_files import checked_input
from training.siamese_data import load_training_dataset
from training.tokenizer import train_tokenizer


def _stsb(folder: Path, train_lines: list[bytes]) -> Path:
    folder.mkdir()
    (folder / "sts-train.csv").write_bytes(b"\n".join(train_lines) + b"\n")
    (folder / "sts-dev.csv").write_bytes(b"g\tf\t2012\t0001\t4.0\ta cat\ta dog\n")
    return folder


def test_a_latin1_row_in_stsb_is_skipped_with_file_and_line(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rows = [b"g\tf\t2012\t0001\t5.0\tthe cat sits\ta cat sits", b"g\tf\t2012\t0002\t1.0\tcaf\xe9 au lait\ta dog",
            b"g\tf\t2012\t0003\t2.5\ta river\tthe sea"]
    stsb = _stsb(tmp_path / "stsb", rows)
    with caplog.at_level(logging.WARNING, logger="training"):
        dataset = load_training_dataset(stsb, "cosine", np.random.default_rng(0))
    assert [row["sentence1"] for row in dataset] == ["the cat sits", "a river"]  # the other rows, as they were
    assert f"skipped {stsb / 'sts-train.csv'}:2: invalid UTF-8 at byte 21 of the line" in caplog.text
    with pytest.raises(BadInputError, match=r"sts-train.csv:2: invalid UTF-8.*--strict turns skipped input"):
        load_training_dataset(stsb, "cosine", np.random.default_rng(0), strict=True)


def test_a_latin1_line_in_a_corpus_or_pair_file_is_skipped_not_replaced(tmp_path: Path,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"The cat sees the river. The dog likes it.\nA caf\xe9 opens.\nThe end came soon.\n\nNext one.\n")
    with caplog.at_level(logging.WARNING, logger="training"):
        text = checked_input(corpus).path.read_text(encoding="utf-8")
    assert text == "The cat sees the river. The dog likes it.\nThe end came soon.\n\nNext one.\n"  # one document kept
    assert f"{corpus}:2: invalid UTF-8" in caplog.text
    pairs = tmp_path / "pairs.csv"
    pairs.write_bytes(b"sentence1,sentence2,score\na cat,a dog,0.5\ncaf\xe9,tea,0.2\nsun,moon,0.9\n")
    dataset = load_training_dataset(pairs, "cosine", np.random.default_rng(0))
    assert [row["sentence1"] for row in dataset] == ["a cat", "sun"] and "\ufffd" not in str(dataset.to_list())
    assert f"{pairs}:3: invalid UTF-8" in caplog.text
    with pytest.raises(BadInputError, match=r"corpus.txt:2: invalid UTF-8"):
        train_tokenizer(TokenizerConfig(corpus=corpus, out=tmp_path / "tok", vocab_size=50, strict=True))
    assert not (tmp_path / "tok").exists()
