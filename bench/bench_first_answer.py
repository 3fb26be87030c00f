"""Time from `make run` on a fresh clone to the first real search answered in a browser.

The working tree is copied (tracked and untracked files, none of .cache, indexes or
.venv) into a temporary folder, as a clone would be; `.venv` is linked from this
checkout, so the measurement starts where `make install` ends, and `make -o
.venv/.installed run` does not reinstall. A headless Chromium (Debian's `chromium`,
over the DevTools protocol, as tests/test_browser.py drives it) opens the page as
soon as the server answers, types a query and waits for the first hit.

With `--restart`, the app is stopped once the demo index is complete and started
again, and the same is measured: the restarted app's first answer.

With `--install`, two more copies come first, each with no `.venv` and pip's cache off (as on
a machine that never installed the project): in one, `make run` installs what it needs
(requirements.txt) and serves; in the other, the peer, `make install-dev` first installs
requirements.txt and requirements-dev.txt (everything `make run` installed before the two were
split), then `make run` serves.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
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
RESTARTS = 3
PEER_APP = """import streamlit as st
query = st.text_input("Query")
if query:
    st.markdown("**1. " + query + "**")
"""


def write_peer_app(folder: Path) -> None:
    """The smallest Streamlit page this bench can time: a query box and one result line, served
    by a `make run` of the same Streamlit, so the difference to the app is the app's own cost."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "app.py").write_text(PEER_APP)
    (folder / "Makefile").write_text(
        "run:\n\t" + f"{PROJECT_ROOT / '.venv/bin/streamlit'} run app.py --server.headless true "
        "--server.port $(PORT) --browser.gatherUsageStats false\n")


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"
TIMEOUT_S = 900
# Seconds without a hit after typing the query before looking whether a rerun swallowed it.
RETYPE_AFTER_S = 30


def fresh_copy(target: Path, link_venv: bool = True) -> None:
    """The files a clone of this working tree would hold, and (`link_venv`) a link to this
    checkout's .venv."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=PROJECT_ROOT, check=True, capture_output=True).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = PROJECT_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    if link_venv:
        (target / ".venv").symlink_to(PROJECT_ROOT / ".venv")


async def first_answer(url: str, profile: Path, started: float) -> tuple[float, float, str]:
    """(seconds to the page's query box, seconds to the first hit, its title) from `started`."""
    with chromium(profile) as port:
        connection, page = await open_page(port, url)
        async with connection:
            box = 'input[aria-label="Query"]'
            await page.wait_for(f"!!document.querySelector('{box}')", "the query box", TIMEOUT_S)
            box_at = time.monotonic() - started
            hits = f"(() => {{ const t = {RESULT_TITLES}; return t.length ? t : null; }})()"
            deadline = time.monotonic() + TIMEOUT_S
            while True:  # a rerun of the page (a commit landing) can swallow what was typed: type again
                await page.type_into(box, QUERY)
                try:
                    titles = await page.wait_for(hits, "the first hit", RETYPE_AFTER_S)
                    return box_at, time.monotonic() - started, titles[0]
                except AssertionError:
                    if time.monotonic() > deadline:
                        raise


def no_cache_env(**extra: str) -> dict[str, str]:
    """This environment with pip's cache off, as on a machine that never installed anything."""
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", **extra}
    env.pop("SEMSEARCH_INDEX", None)
    return env


def serve(folder: Path, port: int, install: bool = False) -> tuple[subprocess.Popen, float]:
    """`make run` in `folder`; with `install`, installing what it lacks (pip's cache off)."""
    env = no_cache_env(PORT=str(port)) if install else {**os.environ, "PORT": str(port)}
    env.pop("SEMSEARCH_INDEX", None)
    started = time.monotonic()
    process = subprocess.Popen(["make", "run"] if install else ["make", "-o", ".venv/.installed", "run"],
                               cwd=folder, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    return process, started


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=60)


def measure(folder: Path, profile: Path, install: bool = False) -> dict[str, float | str]:
    port = free_port()
    process, started = serve(folder, port, install)
    try:
        wait_for_url(f"http://127.0.0.1:{port}/_stcore/health", TIMEOUT_S, process)
        healthy = time.monotonic() - started
        box, answered, title = asyncio.run(first_answer(f"http://127.0.0.1:{port}", profile, started))
    finally:
        stop(process)
    return {"healthy_s": healthy, "query_box_s": box, "first_answer_s": answered, "first_hit": title}


def install_rows(tmp: Path) -> list[list[object]]:
    """The --install rows: a fresh clone whose `make run` installs requirements.txt, and the peer
    that first installs requirements.txt and requirements-dev.txt, each with pip's cache off."""
    rows: list[list[object]] = []
    own = tmp / "clone-install"
    own.mkdir()
    fresh_copy(own, link_venv=False)
    load = os.getloadavg()[0]
    got = measure(own, tmp / "profile-install", install=True)
    rows.append(["true fresh clone: `make run` installs requirements.txt (pip cache off)", f"{load:.1f}",
                 "in the next columns", f"{got['healthy_s']:.1f}", f"{got['query_box_s']:.1f}",
                 f"{got['first_answer_s']:.1f}", got["first_hit"]])
    print(rows[-1], flush=True)
    peer = tmp / "clone-install-dev"
    peer.mkdir()
    fresh_copy(peer, link_venv=False)
    load = os.getloadavg()[0]
    started = time.monotonic()
    subprocess.run(["make", "install-dev"], cwd=peer, env=no_cache_env(), check=True, stdout=subprocess.DEVNULL)
    installed = time.monotonic() - started
    got = measure(peer, tmp / "profile-install-dev")
    rows.append(["peer: the same with requirements-dev.txt too (`make install-dev`, then `make run`; what "
                 "`make run` installed before the split)", f"{load:.1f}", f"{installed:.1f}",
                 *(f"{installed + float(got[name]):.1f}" for name in ("healthy_s", "query_box_s", "first_answer_s")),
                 got["first_hit"]])
    print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restart", action="store_true",
                        help="also finish the demo index, restart, and time the restarted app")
    parser.add_argument("--install", action="store_true",
                        help="first time two copies without .venv, installing with pip's cache off")
    parser.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="semsearch-fresh-") as tmp:
        if args.install:
            rows += install_rows(Path(tmp))
        folder = Path(tmp) / "clone"
        folder.mkdir()
        fresh_copy(folder)
        load = os.getloadavg()[0]
        fresh = measure(folder, Path(tmp) / "profile1")
        rows.append(["fresh clone, after make install", f"{load:.1f}", "—", f"{fresh['healthy_s']:.1f}",
                     f"{fresh['query_box_s']:.1f}", f"{fresh['first_answer_s']:.1f}", fresh["first_hit"]])
        print(rows[-1], flush=True)
        if args.restart:
            subprocess.run(["make", "-o", ".venv/.installed", "demo-index"], cwd=folder, check=True,
                           stdout=subprocess.DEVNULL)
            peer = Path(tmp) / "peer"
            write_peer_app(peer)
            # Restart and peer take turns, RESTARTS times each: the median of each, its range beside.
            runs: dict[str, list[dict]] = {"restart": [], "peer": []}
            loads = []
            for i in range(RESTARTS):
                loads.append(os.getloadavg()[0])
                runs["restart"].append(measure(folder, Path(tmp) / f"profile-r{i}"))
                runs["peer"].append(measure(peer, Path(tmp) / f"profile-p{i}"))
            for label, key in (("restart, demo index complete", "restart"),
                               ("peer: an empty Streamlit page (one text box), same browser driver", "peer")):
                rows.append([f"{label} (median of {RESTARTS})", f"{statistics.median(loads):.1f}", "—",
                             *(spread([r[name] for r in runs[key]])
                               for name in ("healthy_s", "query_box_s", "first_answer_s")),
                             runs[key][0]["first_hit"]])
                print(rows[-1], flush=True)
    body = markdown_table(
        ["run", "load avg (1 min) at start", "install (s)", "server healthy (s)", "query box shown (s)",
         f"first search answered (s), query {QUERY!r}", "first hit"], rows)
    body += ("\n\nSeconds from `make run` in a copy of the working tree: after `make install` (its .venv "
             "linked), or, in the install rows, in a copy with no .venv and pip's cache off, as on a machine "
             "that never installed the project (the peer's columns add its `make install-dev` time). The app "
             "serves at once and indexes the demo corpus in the background, committing 16, 32, 64, ... "
             "passages at a time, so the first search answers from the first committed chunk."
             + (" The restart rows give the median and, in brackets, the range of their runs; the peer is "
                "the floor this machine and browser driver set for any Streamlit page." if args.restart else ""))
    print(body)
    if args.record:  # the install rows have their own section, so each can be measured again alone
        flags = " ".join(f for f, on in (("--install", args.install), ("--restart", args.restart)) if on)
        record("bench_first_answer_install" if args.install else "bench_first_answer",
               "First answer on a machine that never installed the project"
               if args.install else "First answer after make run", body,
               command=f"python bench/bench_first_answer.py {flags} --record".replace("  ", " "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
