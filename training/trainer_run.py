"""One run of a sentence-transformers trainer (siamese, cross-encoder): resumable, Ctrl-C safe.

The trainer writes its checkpoints under `WORK/checkpoints`; `--resume` continues from the last
one with the trainer's own `resume_from_checkpoint` (weights, optimizer, schedule, data order
and random state), and Ctrl-C saves one at the current step (`training.interrupt`).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from transformers import Trainer, TrainerCallback
from transformers.trainer_utils import get_last_checkpoint

from training.distributed import is_main_process
from training.interrupt import CtrlC, TrainingInterrupted
from training.output_folder import OutputFolder

logger = logging.getLogger(__name__)


class SaveOnCtrlC(TrainerCallback):
    """For the sentence-transformers trainers: after the step in which Ctrl-C came, save a
    checkpoint (the trainer's own, which `resume_from_checkpoint` reads) and stop."""

    def __init__(self, ctrl_c: CtrlC) -> None:
        self.ctrl_c = ctrl_c

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN201 (TrainerCallback's signature)
        if self.ctrl_c.requested:
            control.should_save = True
            control.should_training_stop = True
        return control


def checkpoints_folder(output: OutputFolder) -> Path:
    return output.work / "checkpoints"


def run_trainer(trainer: Trainer, output: OutputFolder) -> None:
    """`trainer.train()`, from the last checkpoint of the run `output` continues, if any."""
    folder = checkpoints_folder(output)
    last = get_last_checkpoint(str(folder)) if output.resumed and folder.is_dir() else None
    if output.resumed and is_main_process():
        logger.info("resuming from %s", last) if last else logger.info(
            "the interrupted run in %s saved no checkpoint; starting at step 0", output.work)
    with CtrlC() as ctrl_c:
        trainer.add_callback(SaveOnCtrlC(ctrl_c))
        trainer.train(resume_from_checkpoint=last)
    if ctrl_c.requested:
        raise TrainingInterrupted(trainer.state.global_step, output.work)


def drop_checkpoints(output: OutputFolder) -> None:
    """The trainer's checkpoints, once the model is saved: this run wrote them."""
    if is_main_process():
        shutil.rmtree(checkpoints_folder(output), ignore_errors=True)
