"""Write a benchmark table into BENCHMARKS.md under its own heading.

Each benchmark owns one block between HTML comment markers, so re-running a
script replaces its own figures and leaves the other benchmarks' tables alone.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
from pathlib import Path

from data.paths import PROJECT_ROOT

BENCHMARKS = PROJECT_ROOT / "BENCHMARKS.md"


def machine_description() -> str:
    """One line naming the CPU, core count, memory and the library versions."""
    import faiss
    import sentence_transformers
    import torch
    import transformers

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{cpu}, {os.cpu_count()} cores, {mem_gib:.0f} GiB; Python {platform.python_version()}, "
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"sentence-transformers {sentence_transformers.__version__}, faiss {faiss.__version__}"
    )


def markdown_table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    return "\n".join(lines)


def record(
    name: str, title: str, body: str, path: Path = BENCHMARKS, command: str | None = None,
    machine: str | None = None, measured: tuple[str, float | None] | None = None,
) -> None:
    """Replace (or append) the block for benchmark `name` in BENCHMARKS.md. `machine` describes
    where it ran when that is not this process's CPU alone, and `measured` (when, load average)
    when the figures were measured elsewhere and recorded here (a GPU: bench/bench_gpu.py)."""
    command = command or f"python bench/{name}.py"
    stamp, load = measured or (dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), os.getloadavg()[0])
    load_note = ("load average not recorded" if load is None
                 else f"1-minute load average {load:.1f} when recorded (other jobs share these cores)")
    block = (
        f"<!-- bench:{name} -->\n## {title}\n\n"
        f"Measured {stamp} on {machine or machine_description()}; {load_note}.\n"
        f"Command: `{command}`\n\n{body.strip()}\n<!-- /bench:{name} -->"
    )
    text = path.read_text() if path.exists() else "# Benchmarks\n\nEvery table below is written by a script in `bench/`.\n"
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->", re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)
