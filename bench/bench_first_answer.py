"""Time from `make run` on a fresh clone to the first real search answered in a browser.

The working tree is copied (tracked and untracked files, none of .cache, indexes or
.venv) into a temporary folder, as a clone would be; `.venv` is linked from this
checkout, so the measurement starts where `make install` ends, and `make -o
.venv/.installed run` does not reinstall. A headless Chromium (Debian's `chromium`,
over the DevTools protocol, as tests/test_browser.py drives it) opens the page as
soon as the server answers, types a query and waits for the first hit.

With `--restart`, the app is stopped once the demo index is complete and started
again, and the same is measured: the restarted app's first answer.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT))  # the browser driver lives with the browser test
from tests.test_browser import (  # noqa: E402
    RESULT_TITLES,
    chromium,
    free_port,
    open_page,
    wait_for_url,
)

QUERY = "os.path.join"
TIMEOUT_S = 900


def fresh_copy(target: Path) -> None:
    """The files a clone of this working tree would hold, and a link to this checkout's .venv."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=PROJECT_ROOT, check=True, capture_output=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    (target / ".venv").symlink_to(PROJECT_ROOT / ".venv")


async def first_answer(url: str, profile: Path, started: float) -> tuple[float, float, str]:
    """(seconds to the page's query box, seconds to the first hit, its title) from `started`."""
    with chromium(profile) as port:
        connection, page = await open_page(port, url)
        async with connection:
            box = 'input[aria-label="Query"]'
            await page.wait_for(f"!!document.querySelector('{box}')", "the query box", TIMEOUT_S)
            box_at = time.monotonic() - started
            await page.type_into(box, QUERY)
            titles = await page.wait_for(
                f"(() => {{ const t = {RESULT_TITLES}; return t.length ? t : null; }})()",
                "the first hit", TIMEOUT_S)
            return box_at, time.monotonic() - started, titles[0]


def serve(folder: Path, port: int) -> tuple[subprocess.Popen, float]:
    env = {**os.environ, "PORT": str(port)}
    env.pop("SEMSEARCH_INDEX", None)
    started = time.monotonic()
    process = subprocess.Popen(["make", "-o", ".venv/.installed", "run"], cwd=folder, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    return process, started


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def measure(folder: Path, profile: Path) -> dict[str, float | str]:
    port = free_port()
    process, started = serve(folder, port)
    try:
        wait_for_url(f"http://127.0.0.1:{port}/_stcore/health", TIMEOUT_S, process)
        healthy = time.monotonic() - started
        box, answered, title = asyncio.run(first_answer(f"http://127.0.0.1:{port}", profile, started))
    finally:
        stop(process)
    return {"healthy_s": healthy, "query_box_s": box, "first_answer_s": answered, "first_hit": title}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restart", action="store_true",
                        help="also finish the demo index, restart, and time the restarted app")
    parser.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="semsearch-fresh-") as tmp:
        folder = Path(tmp) / "clone"
        folder.mkdir()
        fresh_copy(folder)
        load = os.getloadavg()[0]
        fresh = measure(folder, Path(tmp) / "profile1")
        rows.append(["fresh clone, after make install", f"{load:.1f}", f"{fresh['healthy_s']:.1f}",
                     f"{fresh['query_box_s']:.1f}", f"{fresh['first_answer_s']:.1f}", fresh["first_hit"]])
        print(rows[-1], flush=True)
        if args.restart:
            subprocess.run(["make", "-o", ".venv/.installed", "demo-index"], cwd=folder, check=True,
                           stdout=subprocess.DEVNULL)
            load = os.getloadavg()[0]
            again = measure(folder, Path(tmp) / "profile2")
            rows.append(["restart, demo index complete", f"{load:.1f}", f"{again['healthy_s']:.1f}",
                         f"{again['query_box_s']:.1f}", f"{again['first_answer_s']:.1f}", again["first_hit"]])
            print(rows[-1], flush=True)
    body = markdown_table(
        ["run", "load avg (1 min) at start", "server healthy (s)", "query box shown (s)",
         f"first search answered (s), query {QUERY!r}", "first hit"], rows)
    body += ("\n\nSeconds from `make run` (after `make install`) in a copy of the working tree. The app "
             "serves at once and indexes the demo corpus in the background, committing 16, 32, 64, ... "
             "passages at a time, so the first search answers from the first committed chunk.")
    print(body)
    if args.record:
        record("bench_first_answer", "First answer after make run", body,
               command="python bench/bench_first_answer.py --restart --record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
