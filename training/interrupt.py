"""Ctrl-C during training: finish the step, save a checkpoint, say how to resume, exit 130.

The first SIGINT only sets a flag that the training loop (ours, or the trainer callback in
`training.trainer_run`) reads after each step; a KeyboardInterrupt raised inside the optimizer would leave nothing to
resume from. A second Ctrl-C stops at once, without saving.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType, TracebackType

logger = logging.getLogger(__name__)

EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's status for a command stopped by Ctrl-C


class TrainingInterrupted(Exception):
    """Raised after Ctrl-C, once the checkpoint of `step` is saved in `folder`."""

    def __init__(self, step: int, folder: Path) -> None:
        self.step, self.folder = step, Path(folder)
        super().__init__(f"interrupted at step {step}; the checkpoint is in {folder}. "
                         "To continue, run the same command again with --resume.")


class CtrlC:
    """A context in which the first Ctrl-C is recorded in `requested` rather than raised."""

    def __init__(self) -> None:
        self.requested = False
        self._previous: object = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        logger.warning("Ctrl-C: saving a checkpoint after this step (Ctrl-C again stops without saving)")
