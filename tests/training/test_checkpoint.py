"""Checkpoints load with weights_only=True: plain values round-trip, pickled objects are refused unrun."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from training.checkpoint import checkpoint_dir, load_latest_checkpoint, save_checkpoint


class _OpensAFile:
    """Unpickling this calls open(path, "w"): code run by merely loading the file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def test_rng_optimizer_and_plain_state_round_trip(tmp_path: Path) -> None:
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()
    state = {
        "step": 7,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
        "numpy_rng": np.random.default_rng(3).bit_generator.state,
        "losses": {1: 0.5, 2: 0.25},
        "evals": [{"step": 2, "nsp_accuracy": None}],
    }
    save_checkpoint(tmp_path, 7, state)
    loaded = load_latest_checkpoint(tmp_path)
    assert loaded["step"] == 7 and loaded["losses"] == {1: 0.5, 2: 0.25} and loaded["evals"] == state["evals"]
    assert torch.equal(loaded["torch_rng"], state["torch_rng"])
    assert loaded["python_rng"] == state["python_rng"] and loaded["numpy_rng"] == state["numpy_rng"]
    assert all(torch.equal(loaded["model"][key], value) for key, value in state["model"].items())
    torch.optim.AdamW(model.parameters(), lr=1e-3).load_state_dict(loaded["optimizer"])


def test_a_checkpoint_that_pickles_an_object_is_refused_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = checkpoint_dir(tmp_path) / "step-3.pt"
    path.parent.mkdir()
    torch.save({"step": 3, "model": {}, "payload": _OpensAFile(marker)}, path)
    with pytest.raises(ValueError, match=rf"Checkpoint {re.escape(str(path))} pickles io.open, not only tensors.*"
                                         r"Delete it .* or drop --resume to start a fresh run"):
        load_latest_checkpoint(tmp_path)
    assert not marker.exists(), "the pickled call never ran"


def test_state_that_would_not_load_back_is_refused_at_save(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"checkpoint state\['extra'\]\[0\] is a ndarray: .*torch.from_numpy"):
        save_checkpoint(tmp_path, 1, {"step": 1, "extra": [np.zeros(2)]})
    with pytest.raises(TypeError, match=r"checkpoint state has a PosixPath key; use str or int keys"):
        save_checkpoint(tmp_path, 1, {tmp_path: 1})
    assert not checkpoint_dir(tmp_path).exists(), "nothing written"
