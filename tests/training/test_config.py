from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.config import (
    PRESETS,
    CrossEncoderConfig,
    PretrainConfig,
    SiameseConfig,
    TokenizerConfig,
    config_from_file,
)


def _pretrain(**kwargs) -> PretrainConfig:
    return PretrainConfig(**{"corpus": "c.txt", "out": "o", "tokenizer": "t", **kwargs})


def test_presets_follow_bert_shapes() -> None:
    assert (PRESETS["tiny"].num_layers, PRESETS["tiny"].hidden_size) == (2, 128)
    base = PRESETS["base"]
    assert (base.num_layers, base.hidden_size, base.num_heads, base.intermediate_size) == (12, 768, 12, 3072)
    assert _pretrain(preset="base").resolved_num_heads == 12


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden_size": 32, "num_heads": 5}, r"hidden size \(32\) is not a multiple of heads \(5\)"),
        ({"hidden_size": 768, "num_heads": 5}, r"hidden size \(768\) is not a multiple of heads \(5\)"),
        ({"preset": "huge"}, r"Unknown preset 'huge'. Valid: tiny, mini, small, medium, base"),
        ({"tokenizer": None}, r"No tokenizer: pass --tokenizer DIR"),
        ({"mask_rate": 0.0}, r"mask rate \(0.0\) must lie strictly between 0 and 1"),
        ({"max_length": 4}, r"max length \(4\) is too short"),
        ({"max_steps": 0}, r"max_steps \(--max-steps\) must be positive, got 0"),
        ({"batch_size": -1}, r"batch_size \(--batch-size\) must be positive, got -1"),
        ({"learning_rate": 0}, r"learning_rate \(--learning-rate\) must be positive"),
        ({"warmup_steps": -1}, r"warmup steps \(-1\) must be 0 or more"),
        ({"precision": "fp16"}, r"Unknown precision 'fp16'. Valid: auto, fp32, bf16"),
        ({"attention": "flash"}, r"Unknown attention 'flash'. Valid: sdpa, eager"),
        ({"eval_documents": 0}, r"eval documents \(0\) must be at least 1"),
    ],
)
def test_bad_pretrain_configs_fail_at_once(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _pretrain(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objective": "contrastive"}, r"Unknown objective 'contrastive'. Valid: softmax, cosine, mnrl, triplet"),
        ({"pooling": "avg"}, r"Unknown pooling 'avg'. Valid: cls, mean, max"),
        ({"max_steps": 0}, r"--max-steps \(0\) must be positive, or -1"),
        ({"objective": "mnrl", "batch_size": 1}, r"batch size \(1\) must be at least 2 for mnrl"),
        ({"epochs": 0}, r"epochs \(--epochs\) must be positive"),
        ({"eval_steps": 0}, r"eval_steps \(--eval-steps\) must be positive"),
    ],
)
def test_bad_siamese_configs(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SiameseConfig(**{"base": "b", "objective": "cosine", "train": "t", "out": "o", **kwargs})


def test_bad_tokenizer_and_cross_encoder_configs() -> None:
    with pytest.raises(ValueError, match=r"vocab size \(3\) must exceed the 5 special tokens"):
        TokenizerConfig(corpus="c", out="o", vocab_size=3)
    with pytest.raises(ValueError, match=r"min_frequency \(--min-frequency\) must be positive"):
        TokenizerConfig(corpus="c", out="o", min_frequency=0)
    with pytest.raises(ValueError, match=r"negatives per query \(-1\) must be 0 or more"):
        CrossEncoderConfig(base="b", train="t", out="o", negatives_per_query=-1)
    with pytest.raises(ValueError, match=r"--max-steps \(-5\) must be positive"):
        CrossEncoderConfig(base="b", train="t", out="o", max_steps=-5)


def test_config_file_with_overrides_and_unknown_fields(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"corpus": "c.txt", "out": "o", "tokenizer": "t", "preset": "mini", "max_steps": 7}))
    config = config_from_file(PretrainConfig, path, max_steps=9)
    assert (config.preset, config.max_steps, config.corpus) == ("mini", 9, Path("c.txt"))
    path.write_text(json.dumps({"corpus": "c.txt", "layers": 3}))
    with pytest.raises(ValueError, match=r"unknown PretrainConfig fields \['layers'\]"):
        config_from_file(PretrainConfig, path)


def _cross(**kwargs) -> CrossEncoderConfig:
    return CrossEncoderConfig(**{"base": "b", "train": "t.jsonl", "out": "o", **kwargs})


def test_cross_encoder_train_takes_one_path_or_several() -> None:
    assert _cross().train == (Path("t.jsonl"),)
    assert _cross(train=Path("a.jsonl")).train == (Path("a.jsonl"),)
    several = _cross(train=["a.jsonl", Path("docs.txt"), "sts"])
    assert several.train == (Path("a.jsonl"), Path("docs.txt"), Path("sts"))
    assert all(isinstance(path, Path) for path in several.train)
    assert _cross(train=(p for p in ["x", "y"])).train == (Path("x"), Path("y"))
    for empty in ([], ()):
        with pytest.raises(ValueError, match=r"No training data: pass at least one --train path"):
            _cross(train=empty)


def test_cross_encoder_new_fields_defaults_and_valid_values() -> None:
    config = _cross()
    assert (config.negatives_depth, config.max_documents, config.num_layers, config.save_dtype) == (
        None, None, None, "float32")
    config = _cross(negatives_depth=1, max_documents=10, num_layers=1, save_dtype="float16")
    assert (config.negatives_depth, config.max_documents, config.num_layers, config.save_dtype) == (
        1, 10, 1, "float16")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"negatives_depth": 0}, r"negatives depth \(0\) must be at least 1"),
        ({"negatives_depth": -3}, r"negatives depth \(-3\) must be at least 1"),
        ({"num_layers": 0}, r"num_layers \(0\) must be at least 1"),
        ({"save_dtype": "bfloat16"}, r"save_dtype 'bfloat16' is not float32 or float16"),
        ({"save_dtype": "fp16"}, r"save_dtype 'fp16' is not float32 or float16"),
        ({"pooling": "max"}, r"pooling 'max' is not one of cls, mean"),
    ],
)
def test_bad_cross_encoder_fields(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _cross(**kwargs)


def test_cross_encoder_config_file_lists_several_sources(tmp_path: Path) -> None:
    path = tmp_path / "ce.json"
    path.write_text(json.dumps({"base": "b", "train": ["pairs.jsonl", "docs.jsonl"], "out": "o", "num_layers": 2}))
    config = config_from_file(CrossEncoderConfig, path, save_dtype="float16")
    assert config.train == (Path("pairs.jsonl"), Path("docs.jsonl"))
    assert (config.num_layers, config.save_dtype) == (2, "float16")


def test_base_models_resolve_through_model_spec(tmp_path: Path) -> None:
    from indexer.model_spec import ModelSpec
    from training.config import DEFAULT_BASE, resolve_base

    default = ModelSpec.resolve(None).path
    assert resolve_base(DEFAULT_BASE) == resolve_base("all-MiniLM-L6-v2") == default
    assert resolve_base(tmp_path) == resolve_base(str(tmp_path)) == tmp_path.resolve()
    with pytest.raises(ValueError, match=r"Base model folder 'nowhere' not found. Pass a BERT or SentenceTransformer "
                                         r"folder, or 'default' for all-MiniLM-L6-v2"):
        resolve_base("nowhere")
