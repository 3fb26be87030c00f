"""`make run` starts quietly (issue 30, item 7): pip installs without its logs, a model loads
without a "Loading weights" bar, and the last line make prints is the app's address."""

from __future__ import annotations

import subprocess
import sys

from data.paths import PROJECT_ROOT


def test_loading_a_model_draws_no_weights_bar():
    # The default model: transformers draws its bar for it (the tiny test model is too small to).
    code = ("from indexer.embedding import load_bi_encoder; from indexer.model_spec import ModelSpec, "
            "default_model_path; load_bi_encoder(ModelSpec.resolve(str(default_model_path())))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert "Loading weights" not in done.stderr + done.stdout, done.stderr[-500:]


def test_make_run_installs_quietly_and_says_where_to_look():
    # `make -n` prints the recipe's commands without running them: the real targets, as make reads them.
    done = subprocess.run(["make", "-n", "-B", "run", "VENV=/nonexistent-venv"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60, check=True)
    installs = [line for line in done.stdout.splitlines() if " -m pip install" in line]
    assert installs and all(" -qq " in line for line in installs), installs  # errors only
    assert "semsearch: open http://127.0.0.1:8501" in done.stdout
    recipe = done.stdout[done.stdout.index("semsearch: open"):]
    assert "streamlit run app.py" in recipe  # the address is the last thing said before the app starts
