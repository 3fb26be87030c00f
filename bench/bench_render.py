"""Time from the caption that announces the hits to the hits drawn, in a real browser.

The app serves an index (default: the demo index, `make demo-index`) with the model loaded before
the first answer; a headless Chromium (Debian's `chromium`, driven over the DevTools protocol as
tests/test_browser.py drives it) opens it with `?k=5` or `?k=50`, types each query, and a
MutationObserver in the page notes when the caption "N best matching documents" appears and when
the k-th hit's title does (its insertion into the page), and when the page last changed. Before
each query the box is emptied, so both appear afresh. Chromium's own count of its main thread's
busy time (`Performance.getMetrics`, TaskDuration) is reported beside: the browser's work, which
the load of other jobs on the machine stretches less than the wall-clock times.

The peer is an empty Streamlit page timed the same way: a query box, and for a query a caption
and k bordered boxes holding one title each, served by the same Streamlit to the same browser
driver. Its caption-to-hits time is what any page of k hits costs here; the app's excess over
it is the app's own per-hit work.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT))  # the browser driver lives with the browser test
from tests.test_browser import chromium, free_port, open_page, wait_for_url  # noqa: E402

QUERIES = ("how do I open a file", "sort a list in place", "parse command line arguments",
           "read a csv file", "current date and time", "join two paths", "copy a directory tree")
COUNTS = (5, 50)
TIMEOUT_S = 180
PEER_APP = """import streamlit as st
k = int(st.query_params.get("k", 5))
query = st.text_input("Query")
if query:
    st.caption(f"{k} best matching documents, best first.")
    for rank in range(1, k + 1):
        with st.container(border=True):
            st.markdown(f"**{rank}. hit {rank} for {query}**")
"""
# Notes, from the moment the query is sent, when the caption and the k-th hit's title enter the
# page, and the last change to the page before it stays still for QUIET_MS after the hits.
QUIET_MS = 1500
WATCH = """((k) => {
    const w = window.__render = {start: performance.now(), caption: null, hits: null, count: 0,
                                 last: null, settled: false};
    const titles = () => [...document.querySelectorAll('[data-testid="stMarkdownContainer"] strong')]
        .filter(e => /^\\d+\\. /.test(e.textContent));
    let quiet = null;
    const settle = () => { w.settled = true; observer.disconnect(); };
    const check = () => {
        const now = w.last = performance.now();
        if (w.caption === null && [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
                .some(c => c.textContent.includes('best matching documents'))) w.caption = now;
        if (w.hits === null && titles().some(e => e.textContent.startsWith(k + '. '))) {
            w.hits = now;
            w.count = titles().length;
        }
        if (w.hits !== null) {
            clearTimeout(quiet);
            quiet = setTimeout(settle, QUIET_MS);
        }
    };
    const observer = new MutationObserver(check);
    observer.observe(document.body, {childList: true, subtree: true, characterData: true});
})""".replace("QUIET_MS", str(QUIET_MS))
CLEARED = """!document.querySelector('input[aria-label="Query"]').value &&
    ![...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
        .some(c => c.textContent.includes('best matching documents')) &&
    ![...document.querySelectorAll('[data-testid="stMarkdownContainer"] strong')]
        .some(e => /^\\d+\\. /.test(e.textContent))"""


@contextlib.contextmanager
def streamlit_server(script: Path, env: dict[str, str]) -> Iterator[str]:
    """`streamlit run script` on a free port; yields its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_url(f"http://127.0.0.1:{port}/_stcore/health", TIMEOUT_S, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


async def clear(page, selector: str) -> None:
    """Empty the box as a person would (select all, Backspace) and press Enter."""
    await page.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
    await page.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
    for key, code, text in (("Backspace", 8, ""), ("Enter", 13, "\r")):
        for kind in ("keyDown", "keyUp"):
            await page.send("Input.dispatchKeyEvent", type=kind, key=key, code=key, windowsVirtualKeyCode=code,
                            text=text if kind == "keyDown" else "")


async def busy_seconds(page) -> float:
    """The page's main-thread time so far, in seconds (Chromium's TaskDuration)."""
    metrics = (await page.send("Performance.getMetrics"))["metrics"]
    return next(m["value"] for m in metrics if m["name"] == "TaskDuration")


async def time_queries(url: str, k: int, queries: tuple[str, ...], profile: Path) -> list[dict]:
    """For each query: seconds from sending it to the caption and to the k-th hit, and the hits drawn.
    The first query warms the page up and is not counted."""
    rows = []
    with chromium(profile) as port:
        connection, page = await open_page(port, f"{url}/?k={k}")
        async with connection:
            box = 'input[aria-label="Query"]'
            await page.wait_for(f"!!document.querySelector('{box}')", "the query box", TIMEOUT_S)
            await page.send("Performance.enable")
            for i, query in enumerate(queries):
                await clear(page, box)
                await page.wait_for(CLEARED, "the page without hits", TIMEOUT_S)
                await page.evaluate(f"{WATCH}({k})")
                before = await busy_seconds(page)
                await page.type_into(box, query)
                seen = await page.wait_for(
                    "(() => { const w = window.__render; return w.caption !== null && w.settled"
                    " ? {caption: (w.caption - w.start) / 1000, hits: (w.hits - w.start) / 1000,"
                    " last: (w.last - w.start) / 1000, count: w.count} : null; })()",
                    f"the hits for {query!r}", TIMEOUT_S)
                seen["busy"] = await busy_seconds(page) - before
                if i:
                    rows.append(seen)
                print(f"  k={k} {query!r}: {json.dumps(seen)}", flush=True)
    return rows


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def table_row(page: str, k: int, runs: list[dict]) -> list[object]:
    gaps = [r["hits"] - r["caption"] for r in runs]
    return [page, k, len(runs), spread([r["caption"] for r in runs]), spread([r["hits"] for r in runs]),
            spread(gaps), spread([r["last"] - r["caption"] for r in runs]), spread([r["busy"] for r in runs]),
            min(r["count"] for r in runs)]


def measure(index: Path, queries: tuple[str, ...]) -> tuple[list[list[object]], list[float]]:
    env = {**os.environ, "SEMSEARCH_INDEX": str(index), "SEMSEARCH_RERANKER": "none",
           "SEMSEARCH_MODEL_LOADING": "eager", "HF_HUB_OFFLINE": "1"}
    env.pop("SEMSEARCH_BUILD_SOURCE", None)
    rows, loads = [], []
    with tempfile.TemporaryDirectory(prefix="semsearch-render-") as tmp:
        peer = Path(tmp) / "peer.py"
        peer.write_text(PEER_APP)
        pages = (("app (ui/search_page.py)", PROJECT_ROOT / "app.py"),
                 ("peer: an empty Streamlit page (a query box, a caption, k boxes of one title)", peer))
        for label, script in pages:
            with streamlit_server(script, env) as url:
                for k in COUNTS:
                    loads.append(os.getloadavg()[0])
                    print(f"{label}, k={k}", flush=True)
                    runs = asyncio.run(time_queries(url, k, queries, Path(tmp) / f"profile-{len(loads)}"))
                    rows.append(table_row(label, k, runs))
                    print(rows[-1], flush=True)
    return rows, loads


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=PROJECT_ROOT / "indexes" / "demo",
                        help="the index the app serves (default: the demo index, `make demo-index`)")
    parser.add_argument("--queries", type=int, default=len(QUERIES),
                        help=f"queries per row, the first a warm-up (2 to {len(QUERIES)})")
    parser.add_argument("--record", action="store_true", help="write the table into BENCHMARKS.md")
    args = parser.parse_args(argv)
    if not 2 <= args.queries <= len(QUERIES):
        raise SystemExit(f"--queries ({args.queries}) must be from 2 to {len(QUERIES)}.")
    started = time.monotonic()
    rows, loads = measure(args.index, QUERIES[: args.queries])
    body = markdown_table(
        ["page", "k", "queries", "query sent → caption (s)", "query sent → k-th hit (s)",
         "caption → k-th hit (s)", "caption → page complete (s)",
         "browser main thread busy (s)", "hits drawn"], rows)
    body += (f"\n\nMedian and, in brackets, range over the queries after a warm-up one; hybrid mode, "
             f"no reranker, model loaded before the first answer, index `{args.index.name}`. Load average "
             f"(1 min) at the start of each row: {', '.join(f'{load:.1f}' for load in loads)}; "
             f"{time.monotonic() - started:.0f} s in all. The issue's target: the hits drawn within "
             "0.5 s of the caption at k=50.")
    print(body)
    if args.record:
        record("bench_render", "Hits drawn after their caption, in a browser", body,
               command="python bench/bench_render.py --record")
    return 0


if __name__ == "__main__":
    sys.exit(main())
