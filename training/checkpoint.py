"""Training checkpoints that let `--resume` continue exactly: weights, optimizer, schedule, data position, RNG.

A checkpoint holds only tensors and plain values (dict, list, tuple, str, int,
float, bool, None), so `--resume` loads it with `torch.load(weights_only=True)`,
which builds no other object and so cannot run code hidden in the file.
`save_checkpoint` refuses any other value up front, rather than writing a
checkpoint that `--resume` would then refuse.
"""

from __future__ import annotations

import logging
import pickle
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^step-(\d+)\.pt$")
_SCALARS = (str, int, float, bool, type(None))
_CONTAINERS = (dict, OrderedDict, list, tuple, torch.Size)


def checkpoint_dir(out: Path) -> Path:
    return Path(out) / "checkpoints"


def list_checkpoints(out: Path) -> list[tuple[int, Path]]:
    """(step, path) of every checkpoint under `out`, oldest first."""
    folder = checkpoint_dir(out)
    if not folder.is_dir():
        return []
    found = [(int(match.group(1)), path) for path in folder.iterdir() if (match := _NAME.match(path.name))]
    return sorted(found)


def check_plain(value: Any, where: str = "state") -> None:
    """Raise TypeError naming the first value `torch.load(weights_only=True)` would not load back."""
    if isinstance(value, torch.Tensor) or type(value) in _SCALARS:
        return
    if type(value) in _CONTAINERS:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if type(key) not in _SCALARS:
                raise TypeError(f"checkpoint {where} has a {type(key).__name__} key; use str or int keys.")
            check_plain(item, f"{where}[{key!r}]")
        return
    raise TypeError(
        f"checkpoint {where} is a {type(value).__name__}: a checkpoint holds only tensors, dicts, lists, tuples, "
        "str, int, float, bool and None, so that --resume can load it without unpickling code. Store it as one "
        "of those (an array as torch.from_numpy(...), a dataclass as dataclasses.asdict(...))."
    )


def save_checkpoint(out: Path, step: int, state: dict[str, Any], keep: int = 2) -> Path:
    """Write step-N.pt atomically (temp file then rename) and delete all but the newest `keep`."""
    check_plain(state)
    folder = checkpoint_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step-{step}.pt"
    temporary = path.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(path)
    for _, old in list_checkpoints(out)[:-keep]:
        old.unlink()
    logger.info("saved checkpoint %s", path)
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Tensors and plain values only: a file that pickles anything else is refused, never executed."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"Unsupported global: GLOBAL (\S+)", str(err))
        what = found.group(1) if found else "an object"
        raise ValueError(
            f"Checkpoint {path} pickles {what}, not only tensors and plain values, so it was not written by "
            "`python -m training pretrain` and loading it could run code. It was not loaded. Delete it (or "
            "move it out of the checkpoints folder) to resume from an earlier checkpoint, or drop --resume "
            "to start a fresh run."
        ) from err


def load_latest_checkpoint(out: Path) -> dict[str, Any]:
    checkpoints = list_checkpoints(out)
    if not checkpoints:
        raise ValueError(
            f"--resume given but {checkpoint_dir(out)} holds no step-N.pt checkpoint. "
            "Drop --resume to start a fresh run, or point --out at the run to continue."
        )
    step, path = checkpoints[-1]
    logger.info("resuming from %s (step %d)", path, step)
    return load_checkpoint(path)
