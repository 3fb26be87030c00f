"""Where a training command writes, decided once for every command: never over a user's work.

A run writes into a temporary sibling, `OUT.partial`, and renames it to `OUT` only when the
model is complete, so a crash or Ctrl-C never leaves a half-written model in `OUT`. The
folder is marked (`.training-run.json`, hidden, so a model's fingerprint ignores it) with the
command that wrote it; that mark is how `--resume` knows a run is its own.

The rules, in `plan_output`:
- `OUT` that holds anything is refused, unless `--overwrite` (the old folder is then moved
  aside to `OUT.replaced`, never deleted, when the new model is complete) or `--resume` of
  a run of the same command.
- `--resume` continues `OUT.partial` (an interrupted run) or, when a command can continue a
  finished run (pretraining to more steps), `OUT` itself.
- Nothing this module did not create is ever deleted: `--overwrite` discards only an
  interrupted run of the same command in `OUT.partial`.
Under torchrun, rank 0 alone changes folders; the others wait for it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from training.distributed import barrier, is_main_process

logger = logging.getLogger(__name__)

MARKER = ".training-run.json"
PARTIAL_SUFFIX = ".partial"
REPLACED_SUFFIX = ".replaced"
_SHOWN_NAMES = 4


def work_folder(out: Path) -> Path:
    """The temporary sibling a run of `out` writes into until it is complete."""
    out = Path(out)
    return out.with_name(out.name + PARTIAL_SUFFIX)


def written_by(folder: Path) -> str | None:
    """The training command that wrote `folder` (its mark), or None for anything else."""
    try:
        return str(json.loads((Path(folder) / MARKER).read_text())["command"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def holds_anything(path: Path) -> bool:
    path = Path(path)
    if path.is_dir():
        return any(path.iterdir())
    return path.exists() or path.is_symlink()


def holds_run_state(work: Path) -> bool:
    """Whether a work folder holds more than its mark: a run that stopped before writing
    anything (it failed while loading its model, say) leaves nothing to resume."""
    work = Path(work)
    if not work.is_dir():
        return holds_anything(work)
    return any(entry.name != MARKER for entry in work.iterdir())


def _contents(path: Path) -> str:
    """What `path` holds, for a refusal: the command that wrote it, or some of its names."""
    command = written_by(path)
    if command is not None:
        return f"the output of `python -m training {command}`"
    if not path.is_dir():
        return "a file"
    names = sorted(entry.name for entry in path.iterdir())
    shown = ", ".join(names[:_SHOWN_NAMES]) + (f" and {len(names) - _SHOWN_NAMES} more" if len(names) > _SHOWN_NAMES else "")
    return f"files no training command wrote ({shown})"


@dataclass(frozen=True)
class OutputFolder:
    """One run's output: it writes into `work`; `finish` renames `work` to `out`.

    `resumed`: `work` holds an earlier run of the same command to continue. `replaces`: `out`
    holds something (`--overwrite`), moved aside by `finish`.
    """

    out: Path
    command: str
    resumed: bool = False
    replaces: bool = False
    resume_from_out: bool = False  # `--resume` of a finished run: `out` becomes `work` first

    @property
    def work(self) -> Path:
        return work_folder(self.out)


def plan_output(out: Path, command: str, overwrite: bool = False, resume: bool = False,
                can_resume: Callable[[Path], bool] | None = None) -> OutputFolder:
    """The decision alone (nothing is touched): a ValueError that names the fix, or the plan.

    `can_resume(folder)` says whether a folder of this command holds state to continue from;
    None means a finished run cannot be continued (only an interrupted one, in `OUT.partial`).
    """
    out = Path(out)
    work = work_folder(out)
    if holds_anything(work) and written_by(work) != command:
        raise ValueError(
            f"{work} is in the way: this run writes there until it is complete, and it holds "
            f"{_contents(work)}. Move or rename it, or choose a new --out folder."
        )
    if resume:
        return _plan_resume(out, command, overwrite, can_resume)
    if holds_run_state(work) and not overwrite:
        raise ValueError(
            f"{work} holds an interrupted `python -m training {command}` run. Pass --resume to continue it, "
            f"--overwrite to discard it and start again, or choose a new --out folder."
        )
    if holds_anything(out) and not overwrite:
        raise ValueError(
            f"--out {out} already holds {_contents(out)}; nothing was written. Pass --overwrite to replace it "
            f"once the new model is complete (the old folder is kept as {out.name}{REPLACED_SUFFIX}), "
            f"or choose a new --out folder."
        )
    return OutputFolder(out, command, replaces=holds_anything(out))


def _plan_resume(out: Path, command: str, overwrite: bool,
                 can_resume: Callable[[Path], bool] | None) -> OutputFolder:
    work = work_folder(out)
    if holds_run_state(work):  # an interrupted run of this command
        if holds_anything(out) and not overwrite:
            raise ValueError(
                f"--out {out} holds {_contents(out)}, and the interrupted run in {work} would replace it. "
                "Pass --overwrite with --resume to replace it when the run ends, or move it away."
            )
        return OutputFolder(out, command, resumed=True, replaces=holds_anything(out))
    owner = written_by(out)
    if owner is not None and owner != command:
        raise ValueError(
            f"--resume: {out} holds the output of `python -m training {owner}`, not of `{command}`; "
            f"drop --resume and choose a new --out folder."
        )
    if owner == command and can_resume is not None and can_resume(out):
        return OutputFolder(out, command, resumed=True, resume_from_out=True)
    if owner == command:
        raise ValueError(
            f"--resume: {out} holds a finished `python -m training {command}` run, with nothing left to "
            "continue. Pass --overwrite (without --resume) to train it again, or choose a new --out folder."
        )
    if holds_anything(out):
        raise ValueError(
            f"--resume: {out} holds {_contents(out)}, not a run of `python -m training {command}`. "
            "Drop --resume and choose a new --out folder."
        )
    raise ValueError(
        f"--resume given but there is no `python -m training {command}` run to continue in {out} or {work}. "
        "Drop --resume to start a fresh run, or point --out at the run to continue."
    )


def open_output(out: Path, command: str, overwrite: bool = False, resume: bool = False,
                can_resume: Callable[[Path], bool] | None = None) -> OutputFolder:
    """`plan_output`, then `prepare`."""
    return prepare(plan_output(out, command, overwrite, resume, can_resume))


def prepare(plan: OutputFolder) -> OutputFolder:
    """(Rank 0) make, or take over, the work folder of `plan`. Called after the inputs are checked,
    so a run refused for its input leaves no folder behind."""
    barrier()  # every rank has planned before rank 0 changes anything
    if is_main_process():
        if plan.resume_from_out:
            plan.out.rename(plan.work)
            logger.info("continuing the run in %s (in %s until it is complete)", plan.out, plan.work)
        elif plan.resumed:
            logger.info("continuing the interrupted run in %s", plan.work)
        else:
            if holds_anything(plan.work):  # this command's: an empty start, or a run --overwrite discards
                shutil.rmtree(plan.work)
            plan.work.mkdir(parents=True)
            (plan.work / MARKER).write_text(json.dumps({"command": plan.command}) + "\n")
    barrier()
    return plan


def finish(plan: OutputFolder) -> Path:
    """Rename the complete work folder to `out` (moving a replaced folder aside first); `out`."""
    if is_main_process():
        usual_modes(plan.work)
        if plan.out.is_dir() and not holds_anything(plan.out):
            plan.out.rmdir()  # an empty folder the user made for the output
        if holds_anything(plan.out):
            kept = _free_name(plan.out.with_name(plan.out.name + REPLACED_SUFFIX))
            plan.out.rename(kept)
            logger.warning("--overwrite: moved the folder this run replaces to %s; delete it when you no longer "
                           "need it", kept)
        plan.work.rename(plan.out)
    barrier()
    return plan.out


def _free_name(path: Path) -> Path:
    candidate, number = path, 2
    while candidate.exists() or candidate.is_symlink():
        candidate, number = path.with_name(f"{path.name}-{number}"), number + 1
    return candidate


def usual_modes(folder: Path) -> None:
    """Give every file and folder under `folder` the mode a new file gets (0644 under umask 022).

    transformers and safetensors write weights through a private temporary file (mode 0600), so a
    server running under another account could not read the model.
    """
    umask = os.umask(0)
    os.umask(umask)
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o777 & ~umask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~umask)
