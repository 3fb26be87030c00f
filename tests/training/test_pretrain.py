from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM, BertForPreTraining, BertModel

from training.__main__ import main
from training.checkpoint import list_checkpoints
from training.config import PretrainConfig
from training.output_folder import MARKER, work_folder
from training.pretrain import pretrain

TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64}


def _config(corpus: Path, out: Path, tokenizer: Path | None, **kwargs) -> PretrainConfig:
    values = {"corpus": corpus, "out": out, "tokenizer": tokenizer, **TINY, "max_steps": 6, "batch_size": 8,
              "max_length": 48, "eval_documents": 4, "eval_batches": 2, "eval_every": 1000, "log_every": 1000,
              "save_every": 1000, "warmup_steps": 2, "learning_rate": 1e-3, **kwargs}
    return PretrainConfig(**values)


def test_loss_falls_and_output_is_a_standard_bert_folder(tiny_corpus: Path, tiny_tokenizer_dir: Path,
                                                         tmp_path: Path) -> None:
    out = tmp_path / "bert"
    result = pretrain(_config(tiny_corpus, out, tiny_tokenizer_dir, max_steps=60, batch_size=16, eval_every=30,
                              learning_rate=2e-3, warmup_steps=5))
    losses = [result.losses[step] for step in sorted(result.losses)]
    assert result.step == 60 and len(losses) == 60
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 1.0
    first, last = result.evals[0], result.evals[-1]
    assert [e.step for e in result.evals] == [30, 60]
    assert last.mlm_loss < np.log(len(AutoTokenizer.from_pretrained(str(out))))  # better than uniform
    assert 0.0 <= last.mlm_accuracy <= 1.0 and last.nsp_accuracy is not None and first.mlm_loss > 0
    assert result.tokens_per_second > 0 and result.fresh_heads == ("MLM", "NSP")
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    inputs = tokenizer("the cat sees the [MASK]", return_tensors="pt")
    for model_class in (BertModel, BertForMaskedLM, BertForPreTraining):
        model = model_class.from_pretrained(str(out))
        with torch.no_grad():
            model(**inputs)
    assert BertConfig.from_pretrained(str(out)).hidden_size == 32


def test_resume_continues_at_same_step_and_loss(tiny_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    straight = pretrain(_config(tiny_corpus, tmp_path / "a", tiny_tokenizer_dir, save_every=3))
    assert [step for step, _ in list_checkpoints(tmp_path / "a")] == [3, 6]
    # Simulate a run killed after step 3: its work folder holds its mark and its first checkpoint.
    partial = work_folder(tmp_path / "b")
    shutil.copytree(tmp_path / "a" / "checkpoints", partial / "checkpoints")
    shutil.copy(tmp_path / "a" / MARKER, partial)
    (partial / "checkpoints" / "step-6.pt").unlink()
    resumed = pretrain(_config(tiny_corpus, tmp_path / "b", tiny_tokenizer_dir, save_every=3, resume=True))
    assert resumed.step == 6
    for step in (4, 5, 6):
        assert resumed.losses[step] == pytest.approx(straight.losses[step], rel=1e-5)
    a = BertForPreTraining.from_pretrained(str(tmp_path / "a")).state_dict()
    b = BertForPreTraining.from_pretrained(str(tmp_path / "b")).state_dict()
    assert all(torch.allclose(a[key], b[key], atol=1e-6) for key in a)


def test_resume_and_overwrite_guards(tiny_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--resume given but there is no `python -m training pretrain` run"):
        pretrain(_config(tiny_corpus, tmp_path / "x", tiny_tokenizer_dir, resume=True))
    pretrain(_config(tiny_corpus, tmp_path / "y", tiny_tokenizer_dir, max_steps=1))
    with pytest.raises(ValueError, match="already holds the output of `python -m training pretrain`.*--overwrite"):
        pretrain(_config(tiny_corpus, tmp_path / "y", tiny_tokenizer_dir, max_steps=1))
    resumed = pretrain(_config(tiny_corpus, tmp_path / "y", tiny_tokenizer_dir, max_steps=2, resume=True))
    assert resumed.step == 2 and [step for step, _ in list_checkpoints(tmp_path / "y")] == [1, 2]


def test_base_without_weights_says_so_before_loading(tiny_corpus: Path, tiny_bert_dir: Path, tmp_path: Path) -> None:
    base = tmp_path / "no-weights"
    base.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_bert_dir / name, base)
    with pytest.raises(ValueError, match="has a config.json but no weights.*--tokenizer and --preset"):
        pretrain(_config(tiny_corpus, tmp_path / "o", None, base=base, **dict.fromkeys(TINY)))
    assert not (tmp_path / "o").exists() and not work_folder(tmp_path / "o").exists()


def test_held_out_examples_are_fixed_and_a_batch_over_the_corpus_warns(
        tiny_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="training"):
        pretrain(_config(tiny_corpus, tmp_path / "o", tiny_tokenizer_dir, max_steps=1, batch_size=100,
                         max_length=128, eval_batches=4))
    # 4 held-out documents make a few examples: taken once, never cycled into 4 batches of 100.
    held_out = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("held-out data"))
    assert int(held_out.split()[2]) < 40 and "the same at every evaluation" in held_out
    assert "starting epoch" not in " ".join(r.getMessage() for r in caplog.records if "held-out" in r.getMessage())
    assert any("training data (56 documents): starting epoch" in r.getMessage() for r in caplog.records)
    assert any("each step repeats the corpus about" in r.getMessage() and "Lower --batch-size" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_empty_and_too_small_corpus_fail_with_fix(tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"id": 1, "text": ""}) + "\n")
    with pytest.raises(ValueError, match="has no documents with text. Pass a non-empty"):
        pretrain(_config(empty, tmp_path / "o", tiny_tokenizer_dir))
    small = tmp_path / "small.txt"
    small.write_text("The cat sees the river.\n\nA dog likes the garden.\n")
    with pytest.raises(ValueError, match="fewer than the 6 needed.*lower --eval-documents"):
        pretrain(_config(small, tmp_path / "o", tiny_tokenizer_dir))


def test_vocab_without_mask_fails(tiny_corpus: Path, tmp_path: Path) -> None:
    folder = tmp_path / "tok"
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat"]) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BertTokenizer"}))
    with pytest.raises(ValueError, match=r"has no \[MASK\] token.*python -m training tokenizer"):
        pretrain(_config(tiny_corpus, tmp_path / "o", folder))


def test_continued_pretraining_initialises_missing_heads(tiny_corpus: Path, tiny_bert_dir: Path, tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    encoder_only = tmp_path / "encoder"
    BertModel.from_pretrained(str(tiny_bert_dir)).save_pretrained(str(encoder_only))
    AutoTokenizer.from_pretrained(str(tiny_bert_dir)).save_pretrained(str(encoder_only))
    with caplog.at_level(logging.INFO, logger="training.pretrain"):
        result = pretrain(_config(tiny_corpus, tmp_path / "cont", None, base=encoder_only, max_steps=2,
                                  **dict.fromkeys(TINY)))
    assert result.fresh_heads == ("MLM", "NSP")
    assert "has no MLM or NSP head; initialised fresh" in caplog.text
    full = pretrain(_config(tiny_corpus, tmp_path / "full", None, base=tiny_bert_dir, max_steps=1,
                            **dict.fromkeys(TINY)))
    assert full.fresh_heads == ()


def test_base_with_other_vocab_fails(tiny_corpus: Path, tiny_bert_dir: Path, tiny_tokenizer_dir: Path,
                                     tmp_path: Path) -> None:
    other = tmp_path / "other"
    config = BertConfig.from_pretrained(str(tiny_bert_dir))
    config.vocab_size += 7
    BertForPreTraining(config).save_pretrained(str(other))
    with pytest.raises(ValueError, match=r"base model vocab size \(\d+\) differs from the tokenizer's"):
        pretrain(_config(tiny_corpus, tmp_path / "o", tiny_tokenizer_dir, base=other, **dict.fromkeys(TINY)))


def test_cli_mlm_only_whole_word(tiny_jsonl_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    config = tmp_path / "pretrain.json"
    config.write_text(json.dumps({**TINY, "batch_size": 4, "max_length": 32, "eval_documents": 3}))
    result = main(["pretrain", "--corpus", str(tiny_jsonl_corpus), "--tokenizer", str(tiny_tokenizer_dir),
                   "--out", str(tmp_path / "o"), "--max-steps", "3", "--no-nsp", "--whole-word-masking",
                   "--attention", "eager", "--config", str(config)])
    assert result.step == 3 and result.evals[-1].nsp_accuracy is None
    assert (tmp_path / "o" / "config.json").is_file() and (tmp_path / "o" / "tokenizer_config.json").is_file()


def test_tokenizer_folder_without_vocab_and_cli_without_out(tiny_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="has no vocab.txt or tokenizer.json. Train one with"):
        pretrain(_config(tiny_corpus, tmp_path / "o", tmp_path))
    with pytest.raises(SystemExit, match="pretrain needs --out"):
        main(["pretrain", "--corpus", str(tiny_corpus), "--tokenizer", str(tmp_path)])


def test_time_budget_saves_a_loadable_model_and_resumes(tiny_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    stopped = pretrain(_config(tiny_corpus, tmp_path / "t", tiny_tokenizer_dir, max_minutes=1e-9))
    assert stopped.step == 1
    assert [step for step, _ in list_checkpoints(tmp_path / "t")] == [1]
    BertForPreTraining.from_pretrained(str(tmp_path / "t"))
    resumed = pretrain(_config(tiny_corpus, tmp_path / "t", tiny_tokenizer_dir, resume=True))
    assert resumed.step == 6
    with pytest.raises(ValueError, match="max_minutes"):
        _config(tiny_corpus, tmp_path / "u", tiny_tokenizer_dir, max_minutes=0)


def test_every_steps_loss_is_kept_though_read_back_only_at_log_and_save_steps(
        tiny_corpus: Path, tiny_tokenizer_dir: Path, tmp_path: Path) -> None:
    """One process reads its losses back from the device at log, eval and save steps only (the
    GPU then never waits for the CPU's next batch); every step's loss is still recorded."""
    result = pretrain(_config(tiny_corpus, tmp_path / "out", tiny_tokenizer_dir, max_steps=7, log_every=5,
                              eval_every=100, save_every=100))
    assert sorted(result.losses) == list(range(1, 8))
    assert all(isinstance(value, float) and value > 0 for value in result.losses.values())
