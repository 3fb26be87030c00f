from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from training.output_folder import (
    MARKER,
    finish,
    open_output,
    plan_output,
    usual_modes,
    work_folder,
    written_by,
)


def _files(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_a_fresh_run_writes_aside_and_appears_only_when_complete(tmp_path: Path) -> None:
    out = tmp_path / "model"
    plan = open_output(out, "siamese")
    (plan.work / "weights").write_text("w")
    assert not out.exists() and written_by(plan.work) == "siamese"
    assert finish(plan) == out
    assert (out / "weights").read_text() == "w" and written_by(out) == "siamese" and not plan.work.exists()
    (tmp_path / "empty").mkdir()  # an empty folder made for the output is fine
    finish(open_output(tmp_path / "empty", "tokenizer"))
    assert written_by(tmp_path / "empty") == "tokenizer"


def test_a_folder_holding_anything_is_refused_with_the_fix_and_left_as_it_was(tmp_path: Path) -> None:
    user = tmp_path / "mine"
    user.mkdir()
    (user / "config.json").write_text("{}")
    (user / "notes.txt").write_text("keep")
    with pytest.raises(ValueError, match=r"already holds files no training command wrote \(config.json, notes.txt\)"
                                         r".*Pass --overwrite.*or choose a new --out folder"):
        plan_output(user, "pretrain")
    finish(open_output(tmp_path / "bert", "pretrain"))
    with pytest.raises(ValueError, match="already holds the output of `python -m training pretrain`.*--overwrite"):
        plan_output(tmp_path / "bert", "siamese")
    with pytest.raises(ValueError, match="holds the output of `python -m training pretrain`, not of `siamese`"):
        plan_output(tmp_path / "bert", "siamese", resume=True)
    assert _files(user) == {"config.json": b"{}", "notes.txt": b"keep"}
    assert not work_folder(user).exists()


def test_overwrite_moves_the_old_folder_aside_and_deletes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "model"
    out.mkdir()
    (out / "modules.json").write_text("old")
    plan = open_output(out, "pretrain", overwrite=True)
    assert (out / "modules.json").read_text() == "old"  # untouched until the new model is complete
    (plan.work / "config.json").write_text("new")
    finish(plan)
    assert sorted(_files(out)) == [MARKER, "config.json"]  # no stale modules.json from the old folder
    assert _files(tmp_path / "model.replaced") == {"modules.json": b"old"}
    plan = open_output(out, "pretrain", overwrite=True)
    finish(plan)
    assert (tmp_path / "model.replaced-2" / "config.json").read_text() == "new"


def test_an_interrupted_run_needs_resume_or_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "model"
    plan = open_output(out, "siamese")
    (plan.work / "checkpoints").mkdir()  # a crash or Ctrl-C after the first checkpoint
    with pytest.raises(ValueError, match=r"model.partial holds an interrupted `python -m training siamese` run\. "
                                         "Pass --resume to continue it, --overwrite to discard it"):
        plan_output(out, "siamese")
    resumed = open_output(out, "siamese", resume=True)
    assert resumed.resumed and (resumed.work / "checkpoints").is_dir()
    fresh = open_output(out, "siamese", overwrite=True)  # discards the interrupted run: this command's own
    assert not fresh.resumed and sorted(os.listdir(fresh.work)) == [MARKER]
    with pytest.raises(ValueError, match="model.partial is in the way.*holds the output of `python -m training si"):
        plan_output(out, "pretrain")


def test_a_run_that_failed_before_writing_leaves_nothing_to_resume(tmp_path: Path) -> None:
    out = tmp_path / "model"
    open_output(out, "pretrain")  # then the model failed to load: only the mark was written
    plan = plan_output(out, "pretrain")
    assert not plan.resumed
    with pytest.raises(ValueError, match="--resume given but there is no `python -m training pretrain` run"):
        plan_output(out, "pretrain", resume=True)


def test_resume_of_a_finished_run(tmp_path: Path) -> None:
    out = tmp_path / "bert"
    plan = open_output(out, "pretrain")
    (plan.work / "step").write_text("1")
    finish(plan)
    finish(open_output(tmp_path / "st", "siamese"))
    with pytest.raises(ValueError, match="holds a finished `python -m training siamese` run, with nothing left"):
        plan_output(tmp_path / "st", "siamese", resume=True)
    continued = open_output(out, "pretrain", resume=True, can_resume=lambda folder: (folder / "step").is_file())
    assert continued.resumed and not out.exists() and (continued.work / "step").is_file()
    finish(continued)
    assert (out / "step").read_text() == "1"


def test_files_get_the_usual_mode(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_text("x")
    path.chmod(0o600)  # as safetensors writes it
    usual_modes(tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask
