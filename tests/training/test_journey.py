"""The README's journey with tiny models: every command into a fresh folder, then every command
again into the same folder, where each is refused with its fix, `--resume` continues and
`--overwrite` replaces, and no file is ever deleted or changed without one of them."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from training.__main__ import main
from training.checkpoint import list_checkpoints
from training.interrupt import EXIT_INTERRUPTED
from training.output_folder import work_folder

REPO = Path(__file__).resolve().parents[2]
TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "eval_batches": 1}
RESUME_LINE = "To continue, run the same command again with --resume."


def interrupt_when(args: list[str], ready: str, timeout: float = 240) -> tuple[int, list[str]]:
    """Run `python -m training ARGS`, send SIGINT (Ctrl-C) once a line holds `ready`; (exit status, lines)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    process = subprocess.Popen([sys.executable, "-m", "training", *args], cwd=REPO, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        if ready in line:
            process.send_signal(signal.SIGINT)
            break
    rest, _ = process.communicate(timeout=timeout)
    return process.returncode, lines + rest.splitlines()


def interrupted_step(status: int, lines: list[str]) -> int:
    """The step a run stopped by Ctrl-C saved, from its last line (which says how to resume)."""
    assert status == EXIT_INTERRUPTED and lines[-1].endswith(RESUME_LINE), lines[-5:]
    assert not any("Traceback" in line for line in lines), lines
    return int(lines[-1].split()[4].rstrip(";"))


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """(sha256, mtime, mode) of every file under `root`."""
    return {str(path.relative_to(root)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns,
                                          stat.S_IMODE(path.stat().st_mode))
            for path in sorted(root.rglob("*")) if path.is_file()}


def test_the_journey_never_destroys_work(tiny_corpus: Path, tiny_jsonl_corpus: Path, tiny_pairs: Path,
                                         tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    (tmp_path / "tiny.json").write_text(json.dumps(TINY))
    tok, bert, sbert, reranker, adapted = (runs / name for name in ("tok", "bert", "sbert", "reranker", "adapted"))

    def pretrain_args(steps: int) -> list[str]:
        return ["pretrain", "--corpus", str(tiny_corpus), "--tokenizer", str(tok), "--out", str(bert), "--config",
                str(tmp_path / "tiny.json"), "--max-steps", str(steps), "--batch-size", "4", "--max-length", "32",
                "--eval-documents", "4"]

    commands = {
        "tokenizer": ["tokenizer", "--corpus", str(tiny_corpus), "--out", str(tok), "--vocab-size", "300",
                      "--min-frequency", "1"],
        "pretrain": pretrain_args(2),
        "siamese": ["siamese", "--base", str(bert), "--objective", "cosine", "--train", str(tiny_pairs), "--out",
                    str(sbert), "--max-steps", "2", "--batch-size", "4", "--no-eval"],
        "cross-encoder": ["cross-encoder", "--base", str(bert), "--train", str(tiny_pairs), "--out", str(reranker),
                          "--max-steps", "2", "--batch-size", "4", "--max-length", "32"],
    }
    first = {name: main(args) for name, args in commands.items() if name != "siamese"}
    # siamese, stopped by Ctrl-C (a real SIGINT), saves a checkpoint of that step; --resume continues from it.
    status, lines = interrupt_when([*commands["siamese"][:-4], "100000", *commands["siamese"][-3:]], "'loss'")
    step = interrupted_step(status, lines)
    assert (work_folder(sbert) / "checkpoints" / f"checkpoint-{step}").is_dir() and not sbert.exists()
    resumed_siamese = main([*commands["siamese"][:-4], str(step + 2), *commands["siamese"][-3:], "--resume"])
    assert resumed_siamese.steps == step + 2 and not work_folder(sbert).exists()
    assert not (sbert / "checkpoints").exists()
    adapt_args = ["adapt", "--corpus", str(tiny_jsonl_corpus), "--base", str(bert), "--out", str(adapted),
                  "--mlm-batch-size", "4", "--siamese-steps", "2", "--siamese-batch-size", "4", "--max-seq-length", "32"]
    status, lines = interrupt_when([*adapt_args, "--mlm-steps", "100000"], "step 50 loss")  # Ctrl-C in stage 1
    step = interrupted_step(status, lines)
    assert not adapted.exists() and list_checkpoints(work_folder(adapted) / "mlm.partial") == [
        (step, work_folder(adapted) / "mlm.partial" / "checkpoints" / f"step-{step}.pt")]
    before = snapshot(runs)

    for name, args in commands.items():  # the same command again, into the same folder
        with pytest.raises(ValueError, match=rf"already holds the output of `python -m training {re.escape(name)}`; "
                                             r"nothing was written\. Pass --overwrite .* or choose a new --out folder"):
            main(args)
    with pytest.raises(ValueError, match=r"adapted.partial holds an interrupted `python -m training adapt` run\. Pass "
                                         r"--resume to continue it, --overwrite to discard it"):
        main([*adapt_args, "--mlm-steps", "4"])
    # Another command's folder: siamese onto the BERT it starts from, pretrain onto a SentenceTransformer,
    # a tokenizer onto a model.
    for args, owner in ((["siamese", *commands["siamese"][1:-7], "--out", str(bert)], "pretrain"),
                        ([*pretrain_args(2)[:6], str(sbert), *pretrain_args(2)[7:]], "siamese"),
                        ([*commands["tokenizer"][:4], str(bert)], "pretrain")):
        with pytest.raises(ValueError, match=rf"--out {re.escape(str(args[args.index('--out') + 1]))} already holds "
                                             rf"the output of `python -m training {owner}`.*--overwrite"):
            main(args)
    with pytest.raises(ValueError, match="holds a finished `python -m training siamese` run, with nothing left"):
        main([*commands["siamese"], "--resume"])
    assert snapshot(runs) == before  # nothing deleted, nothing changed

    resumed = main([*pretrain_args(4), "--resume"])  # a finished pretraining continues to more steps
    assert resumed.step == 4 and sorted(resumed.losses) == [1, 2, 3, 4]
    assert [resumed.losses[s] for s in (1, 2)] == [first["pretrain"].losses[s] for s in (1, 2)]
    result = main([*adapt_args, "--mlm-steps", str(step + 2), "--resume"])  # stage 1 from its checkpoint, then 2
    assert result.stages == ("mlm", "mnrl") and result.model == adapted / "model"
    assert [saved for saved, _ in list_checkpoints(adapted / "mlm")] == [step, step + 2]
    assert SentenceTransformer(str(result.model), device="cpu").encode(["a cat"]).shape == (1, 32)
    main([*commands["siamese"], "--overwrite"])  # replaces; the old folder is kept beside it, unchanged
    old = {name[len("sbert/"):]: value for name, value in before.items() if name.startswith("sbert/")}
    assert snapshot(runs / "sbert.replaced") == old and snapshot(sbert).keys() == old.keys()

    umask = os.umask(0)
    os.umask(umask)
    weights = list(runs.rglob("model.safetensors"))
    assert len(weights) >= 6 and {stat.S_IMODE(path.stat().st_mode) for path in weights} == {0o666 & ~umask}
    assert not list(runs.glob("*.partial"))
