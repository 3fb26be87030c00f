"""Training checkpoints that let `--resume` continue exactly: weights, optimizer, schedule, data position, RNG."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import torch

logger = logging.getLogger(__name__)

_NAME = re.compile(r"^step-(\d+)\.pt$")


def checkpoint_dir(out: Path) -> Path:
    return Path(out) / "checkpoints"


def list_checkpoints(out: Path) -> list[tuple[int, Path]]:
    """(step, path) of every checkpoint under `out`, oldest first."""
    folder = checkpoint_dir(out)
    if not folder.is_dir():
        return []
    found = [(int(match.group(1)), path) for path in folder.iterdir() if (match := _NAME.match(path.name))]
    return sorted(found)


def save_checkpoint(out: Path, step: int, state: dict[str, Any], keep: int = 2) -> Path:
    """Write step-N.pt atomically (temp file then rename) and delete all but the newest `keep`."""
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


def load_latest_checkpoint(out: Path) -> dict[str, Any]:
    checkpoints = list_checkpoints(out)
    if not checkpoints:
        raise ValueError(
            f"--resume given but {checkpoint_dir(out)} holds no step-N.pt checkpoint. "
            "Drop --resume to start a fresh run, or point --out at the run to continue."
        )
    step, path = checkpoints[-1]
    logger.info("resuming from %s (step %d)", path, step)
    return torch.load(path, map_location="cpu", weights_only=False)
