"""Ctrl-C, delivered for real (SIGINT to this process): the first is recorded, the second stops.

A whole command stopped by SIGINT in a subprocess, then resumed, is in test_journey.py: `siamese`
(the sentence-transformers trainer) and `adapt` in its MLM stage (our pretraining loop).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from training.interrupt import CtrlC, TrainingInterrupted


def test_the_first_ctrl_c_is_recorded_and_the_second_stops() -> None:
    before = signal.getsignal(signal.SIGINT)
    with CtrlC() as ctrl_c:
        os.kill(os.getpid(), signal.SIGINT)
        assert ctrl_c.requested  # the step goes on; the loop saves after it
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


def test_the_message_says_how_to_resume(tmp_path: Path) -> None:
    message = str(TrainingInterrupted(7, tmp_path / "bert.partial"))
    assert message == (f"interrupted at step 7; the checkpoint is in {tmp_path / 'bert.partial'}. "
                       "To continue, run the same command again with --resume.")

