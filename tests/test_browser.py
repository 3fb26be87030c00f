"""The app in a real headless Chromium: what a person sees, not only what AppTest reads.

`streamlit run app.py` serves a small index on a free port; Debian's `chromium` is
driven through the DevTools protocol (a websocket, no Playwright download). Every
step waits for the app's own elements, because Streamlit renders after the page
loads: a bare `chromium --screenshot` captures a blank page. Screenshots are
saved under SEMSEARCH_SCREENSHOTS (a folder CI keeps), else a pytest temp folder,
and their paths are printed.

Skipped, with the reason, where no Chromium is installed: `apt-get install chromium`
(CI's `.ci/run` does that).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from data.paths import PROJECT_ROOT
from indexer.layout import IndexLayout
from search import SearchConfig
from tests.indexer.sources.formats.samples import PAGE_TEXTS, write_pdf

pytestmark = pytest.mark.integration

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
START_TIMEOUT_S = 120
STEP_TIMEOUT_S = 90
VIEWPORT = (1400, 1000)
DOCS = {
    "pasta.txt": "To cook spaghetti, bring a large pot of salted water to a rolling boil, add the "
    "pasta and boil it for about ten minutes until it is al dente, then drain it.",
    "jupiter.txt": "Jupiter is the largest planet in the solar system, a gas giant with a great red "
    "spot, dozens of moons and faint rings.",
    "tomatoes.txt": "Tomato plants need full sun, deep watering and a stake or cage to support the "
    "vines; pinch off suckers and mulch the soil in the garden.",
    # A docstring as the demo corpus holds them: reST emphasis and a doctest example.
    "pathjoin.txt": "Join path components with *os.path.join*; it inserts the separator.\n\n"
    "    >>> import os\n    >>> os.path.join('usr', 'lib')\n    'usr/lib'\n",
}
# Notes on another subject, so that the app's first build commits in four chunks (16, 32, 64 and
# the rest: `indexer.build.loop.next_commit_size`) and the page can be seen following them.
FILLERS = 240 - len(DOCS)
# An upload long enough (about forty passages) that a search runs while it indexes.
UPLOAD = ("glaciers.md", "# Glaciers\n\nGlaciers are rivers of ice that carve valleys as they creep downhill.\n\n"
          + "\n\n".join(f"Survey {i}: the glacier's tongue retreated {i} metres this year; moraines, "
                        "crevasses and meltwater streams were mapped from the ridge, and the snow line "
                        f"rose above the {1000 + 10 * i} metre cairn. " * 4 for i in range(40)))


def filler(i: int) -> str:
    return (f"Minutes of meeting {i}: the committee of district {i} reviewed invoice {1000 + i} and "
            f"approved the budget for repairs to hall {i % 7}.")


def browser_path() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_url(url: str, timeout: float, process: subprocess.Popen | None = None) -> bytes:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read()
        except OSError:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited with {process.returncode}") from None
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("SEMSEARCH_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class App:
    url: str
    index: Path


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[App]:
    """`streamlit run app.py` with no index yet and a source to build it from, as `make run` starts
    it on a fresh clone: the first page view starts the build, in chunks, in the background."""
    if browser_path() is None:
        pytest.skip("no Chromium found (looked for " + ", ".join(BROWSERS) + "); install Debian's "
                    "`chromium` package to run the browser test: apt-get install chromium")
    root = tmp_path_factory.mktemp("browser_app")
    source = root / "source"
    source.mkdir()
    for name, text in DOCS.items():
        (source / name).write_text(text, encoding="utf-8")
    (source / "minutes.jsonl").write_text(
        "".join(json.dumps({"id": f"minutes-{i}", "text": filler(i)}) + "\n" for i in range(FILLERS)))
    port = free_port()
    env = {**os.environ, "SEMSEARCH_INDEX": str(root / "index"), "SEMSEARCH_RERANKER": "none",
           "HF_HUB_OFFLINE": "1", "SEMSEARCH_BUILD_SOURCE": str(source),
           "SEMSEARCH_BUILD_STAMP": str(root / "built")}
    log = (root / "streamlit.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "app.py"),
         "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"],
        cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/_stcore/health", START_TIMEOUT_S, server)
        yield App(f"http://127.0.0.1:{port}", root / "index")
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


class DevTools:
    """The few DevTools protocol calls the test needs, over one page's websocket."""

    def __init__(self, socket_connection) -> None:
        self._ws = socket_connection
        self._ids = itertools.count(1)

    async def send(self, method: str, **params) -> dict:
        message_id = next(self._ids)
        await self._ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(await self._ws.recv())
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    async def evaluate(self, expression: str):
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True,
                                 awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, what: str, timeout: float = STEP_TIMEOUT_S):
        """Poll a JavaScript expression until it is truthy; its value is returned."""
        deadline = time.monotonic() + timeout
        while True:
            value = await self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                text = await self.evaluate("document.body.innerText.slice(0, 2000)")
                raise AssertionError(f"timed out waiting for {what}; the page reads:\n{text}")
            await asyncio.sleep(0.5)

    async def screenshot(self, path: Path) -> Path:
        await asyncio.sleep(1.0)  # let charts and fonts settle
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))
        print(f"screenshot: {path}")
        return path

    async def type_into(self, selector: str, text: str) -> None:
        """Focus an input, replace its text and press Enter, as a person would."""
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).select()")
        await self.send("Input.insertText", text=text)
        for kind in ("keyDown", "keyUp"):
            await self.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                            windowsVirtualKeyCode=13, text="\r" if kind == "keyDown" else "")

    async def click(self, selector: str, text: str | None = None) -> None:
        """Click the first element matching `selector` (and holding `text`) at its centre."""
        box = await self.evaluate(
            f"""(() => {{
                const all = [...document.querySelectorAll({json.dumps(selector)})];
                const el = all.find(e => {json.dumps(text)} === null || e.innerText.includes({json.dumps(text)}));
                if (!el) return null;
                el.scrollIntoView({{block: 'center'}});
                const r = el.getBoundingClientRect();
                return [r.x + r.width / 2, r.y + r.height / 2];
            }})()"""
        )
        assert box, f"nothing matches {selector} {text or ''}"
        for kind in ("mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                            clickCount=1)

    async def set_files(self, selector: str, paths: list[Path]) -> None:
        document = await self.send("DOM.getDocument", depth=-1, pierce=True)
        node = await self.send("DOM.querySelector", nodeId=document["root"]["nodeId"], selector=selector)
        assert node.get("nodeId"), f"no file input {selector}"
        await self.send("DOM.setFileInputFiles", nodeId=node["nodeId"], files=[str(p) for p in paths])


@contextlib.contextmanager
def chromium(user_data: Path, *extra: str) -> Iterator[int]:
    """A headless Chromium with the DevTools protocol on a free port; yields the port."""
    port = free_port()
    process = subprocess.Popen(
        [browser_path(), "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-dev-shm-usage", f"--remote-debugging-port={port}", f"--user-data-dir={user_data}",
         f"--window-size={VIEWPORT[0]},{VIEWPORT[1]}", *extra, "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/json/version", 60, process)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()


async def open_page(port: int, url: str):
    import websockets

    targets = json.loads(wait_for_url(f"http://127.0.0.1:{port}/json/list", 30))
    page = next(t for t in targets if t["type"] == "page")
    connection = await websockets.connect(page["webSocketDebuggerUrl"], max_size=64 * 2**20)
    tools = DevTools(connection)
    await tools.send("Page.enable")
    await tools.send("Emulation.setDeviceMetricsOverride", width=VIEWPORT[0], height=VIEWPORT[1],
                     deviceScaleFactor=1, mobile=False)
    await tools.send("Page.navigate", url=url)
    return connection, tools


RESULT_TITLES = """[...document.querySelectorAll('[data-testid="stMarkdownContainer"] strong')]
    .map(e => e.innerText).filter(t => /^\\d+\\. /.test(t))"""
HIGHLIGHTS = """[...document.querySelectorAll('[data-testid="stMarkdownContainer"] span strong')]
    .map(e => e.innerText)"""


# What the page shows of a build: the Documents counter and the progress bars' texts.
BUILD_VIEW = """(() => {
    const m = [...document.querySelectorAll('[data-testid="stMetric"]')]
        .find(e => e.innerText.startsWith('Documents'));
    const bars = [...document.querySelectorAll('[data-testid="stProgress"]')].map(e => e.innerText);
    return {documents: m ? m.querySelector('[data-testid="stMetricValue"]').innerText : null, bars,
            done: !!document.body && document.body.innerText.includes('Background indexing finished')};
})()"""
UPLOAD_BAR = """[...document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stProgress"]')]
    .map(e => e.innerText).join(' ')"""


def committed(index: Path) -> tuple[int, int] | None:
    """(passages committed, pid of the build) of a build growing `index` in chunks, from the file
    it writes after each commit but the last; None before the first and after the last."""
    try:
        found = json.loads(IndexLayout(index).progress_file.read_text())
        return int(found["done"]), int(found["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


async def watch_first_build(page: DevTools, index: Path, screenshots: Path) -> tuple[list[dict], Path]:
    """What the page showed, every quarter second or sooner, from the first view until the build
    ended and the counters show all its documents.

    After each commit but the last, the build's process is paused (SIGSTOP) until the page shows
    a new Documents count, then resumed: on a fast machine the whole build took less time than
    one run of the page, and the test saw the bar end before any counter; a pause makes the
    build as slow as the test needs without changing what the page must do (follow commits,
    without a click). A page that never follows a commit fails at the deadline."""
    seen: list[dict] = []
    shot = None
    deadline = time.monotonic() + 4 * STEP_TIMEOUT_S
    last_commit, paused, shown_when_paused = 0, None, None
    try:
        while True:
            view = await page.evaluate(BUILD_VIEW)
            seen.append(view)
            if view["done"] and view["documents"] == f"{len(DOCS) + FILLERS:,}":
                return seen, shot or await page.screenshot(screenshots / "first-build.png")
            if shot is None and view["documents"] is not None and view["bars"]:
                shot = await page.screenshot(screenshots / "first-build.png")
            if paused is not None and view["documents"] not in (None, shown_when_paused) and view["bars"]:
                os.kill(paused, signal.SIGCONT)
                paused = None
            if paused is None and (commit := committed(index)) is not None and commit[0] > last_commit:
                last_commit, paused, shown_when_paused = commit[0], commit[1], view["documents"]
                os.kill(paused, signal.SIGSTOP)
            if time.monotonic() > deadline:
                text = await page.evaluate("document.body.innerText.slice(0, 3000)")
                raise AssertionError(f"the first build did not end, or its counters did not follow; "
                                     f"the page showed {seen[-1]} and reads:\n{text}")
            await asyncio.sleep(0.05 if paused is None else 0.25)
    finally:
        if paused is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(paused, signal.SIGCONT)


def check_first_build(seen: list[dict]) -> None:
    """The counters followed the commits (16 documents, then 48 or 112, then all) without a click,
    and the bar's total stayed put once shown."""
    counts = [int(v["documents"].replace(",", "")) for v in seen if v["documents"] and v["bars"]]
    final = len(DOCS) + FILLERS
    views = [v for i, v in enumerate(seen) if i == 0 or v != seen[i - 1]]
    assert counts and counts == sorted(counts), f"the Documents counter went back: {counts}; seen {views}"
    assert {48, 112} & set(counts), f"the counter skipped the middle commits: {sorted(set(counts))}"
    totals = {found.group(1) for v in seen for bar in v["bars"]
              if (found := re.search(r"of ([\d,]+) passages embedded", bar))}
    assert len(totals) == 1, f"the total moved: {totals}"
    assert counts[-1] < final, "the build ended before the test saw it: no bar beside the counters"


async def search_during_upload(page: DevTools, query_box: str, upload: Path,
                               screenshots: Path) -> tuple[list[str], Path]:
    """Upload `upload`, and while its bar moves in the sidebar, search: the bar's texts seen, and a
    screenshot of the hits beside the bar."""
    await page.set_files('[data-testid="stFileUploaderDropzoneInput"]', [upload])
    await page.wait_for(
        """[...document.querySelectorAll('[data-testid="stSidebar"] button')]
           .some(b => b.innerText.includes('Index these files') && !b.disabled)""",
        "the Index button to enable",
    )
    await page.click('[data-testid="stSidebar"] button', "Index these files")
    bars = [await page.wait_for(UPLOAD_BAR, "the upload's progress bar")]
    await page.type_into(query_box, "largest planet gas giant")
    found = await page.wait_for(
        f"""(() => {{ const t = {RESULT_TITLES}; const bar = {UPLOAD_BAR};
            return t[0] === '1. jupiter' ? {{bar}} : null; }})()""", "hits while the upload indexes")
    assert found["bar"], "the upload had ended before the search answered: no search during an upload"
    bars.append(found["bar"])
    shot = await page.screenshot(screenshots / "search-during-upload.png")
    while bar := await page.evaluate(UPLOAD_BAR):
        bars.append(bar)
        await asyncio.sleep(0.25)
    return bars, shot


async def drive_app(app: App, screenshots: Path, tmp_path: Path) -> dict[str, Path]:
    shots: dict[str, Path] = {}
    with chromium(tmp_path / "profile") as port:
        connection, page = await open_page(port, app.url)
        async with connection:
            # The first build: the search box appears with the first commit, the counters follow.
            seen, shots["first-build"] = await watch_first_build(page, app.index, screenshots)
            check_first_build(seen)
            # Search: type a query, hits appear with titles, relevance labels and highlights.
            query_box = 'input[aria-label="Query"]'
            await page.wait_for(f"!!document.querySelector('{query_box}')", "the query box")
            await page.type_into(query_box, "boil the pasta")
            titles = await page.wait_for(f"(() => {{ const t = {RESULT_TITLES}; return t.length ? t : null; }})()",
                                         "search results")
            assert titles[0] == "1. pasta", titles
            highlights = await page.evaluate(HIGHLIGHTS)
            assert {"boil", "pasta"} <= {h.lower() for h in highlights}, highlights
            # The bi-encoder loads in the background: the first answer may be BM25 without labels,
            # and the page searches again by itself once the model is ready. Each hit's details
            # are drawn after all the hits (ui/search_page.show_hits), so the page is read once both are.
            body = await page.wait_for(
                "(() => { const b = document.body.innerText; return b.includes('strong match') "
                "&& b.includes('Full passage and scores') ? b : null; })()",
                "the relevance labels, once the model has loaded, and each hit's details")
            assert "fused" not in body, "raw scores stay in the details"
            # The dense share shows the default: a rerun that cut a run short (typing, the model
            # arriving) once left the method set and the share at the slider's minimum, 0.
            share = await page.evaluate(
                """(() => { const v = document.querySelector('[data-testid="stSliderThumbValue"]');
                   return v ? v.innerText : null; })()""")
            assert share == f"{SearchConfig().fusion_for().weight:.2f}", f"dense share shown: {share}"
            shots["search"] = await page.screenshot(screenshots / "search.png")

            # Reading a passage: emphasis in italics, the doctest in monospace, details inside.
            await page.type_into(query_box, "join path components")
            await page.wait_for(f"(() => {{ const t = {RESULT_TITLES}; return t[0] === '1. pathjoin'; }})()",
                                "the docstring passage")
            # Opened from inside the wait: a click that lands while the page reruns for the new
            # query hits the expander being replaced, so a closed one is clicked again.
            code = await page.wait_for(
                """(() => { const e = [...document.querySelectorAll('[data-testid="stExpander"]')]
                       .find(x => x.innerText.includes('Full passage'));
                   const d = e && e.querySelector('details');
                   if (d && !d.open) d.querySelector('summary').click();
                   const c = e && e.querySelector('pre code');
                   return c && c.offsetHeight > 0 && c.innerText.trim()
                       ? [c.innerText, getComputedStyle(c).fontFamily] : null; })()""",
                "the doctest as code",
            )
            assert code[0].startswith(">>> import os") and "'usr/lib'" in code[0], code
            assert "mono" in code[1].lower(), f"doctest font: {code[1]}"
            inline = await page.evaluate(
                """[...document.querySelectorAll('[data-testid="stMarkdownContainer"] code')]
                   .filter(c => !c.closest('pre') && !c.closest('[data-testid="stExpander"]'))
                   .map(c => [c.innerText, getComputedStyle(c).fontFamily])""")
            assert any(text.startswith(">>> import os") and "mono" in font.lower() for text, font in inline), \
                f"the snippet's doctest as inline code: {inline}"
            emphasis = await page.evaluate(
                """[...document.querySelectorAll('[data-testid="stMarkdownContainer"] em')].map(e => e.innerText)""")
            assert "os.path.join" in emphasis, emphasis
            shown = await page.evaluate("document.querySelector('[data-testid=\"stMain\"]').innerText")
            assert "*os.path.join*" not in shown
            assert "characters 0–" in shown and "of the document" in shown
            shots["passage"] = await page.screenshot(screenshots / "passage.png")

            # Compare: the heatmap renders (a Vega chart with its canvas or svg drawn).
            await page.click('[data-testid="stSidebar"] label', "Compare")
            await page.wait_for(
                """(() => { const c = document.querySelector('[data-testid="stVegaLiteChart"] canvas, '
                   + '[data-testid="stVegaLiteChart"] svg, .vega-embed canvas, .vega-embed svg');
                   return c && c.getBoundingClientRect().height > 100; })()""",
                "the heatmap",
            )
            assert "Most similar pairs" in await page.evaluate("document.body.innerText")
            await page.evaluate("""document.querySelector('[data-testid="stVegaLiteChart"], .vega-embed')
                                   .scrollIntoView({block: 'center'})""")
            shots["compare"] = await page.screenshot(screenshots / "compare.png")

            # Upload: a Markdown file indexes in the background while a search answers; its bar
            # counts passages embedded, and its notice says what was added. The counters follow.
            await page.click('[data-testid="stSidebar"] label', "Search")
            await page.wait_for(f"!!document.querySelector('{query_box}')", "the search page again")
            upload = tmp_path / UPLOAD[0]
            upload.write_text(UPLOAD[1], encoding="utf-8")
            bars, shots["search-during-upload"] = await search_during_upload(page, query_box, upload, screenshots)
            assert any(re.search(r"Embedded [\d,]+ of [\d,]+ passages", bar) for bar in bars), bars
            notice = await page.wait_for(
                """(() => { const s = document.querySelector('[data-testid="stSidebar"] [data-testid="stAlertContentSuccess"]');
                   return s ? s.innerText : null; })()""", "the upload's notice")
            assert notice.startswith("Added 1 new document and updated 0 documents from 1 file ("), notice
            await page.wait_for(BUILD_VIEW + f".documents === '{len(DOCS) + FILLERS + 1:,}'",
                                "the Documents counter to count the upload, without a click")
            await page.type_into(query_box, "ice carving valleys")
            await page.wait_for(f"(() => {{ const t = {RESULT_TITLES}; return t[0] === '1. Glaciers'; }})()",
                                "the uploaded document as the first hit")
            shots["upload"] = await page.screenshot(screenshots / "upload.png")

            # A PDF uploaded the same way: a phrase from its second page finds it, labelled p. 2,
            # with a link that opens the file at that page.
            pdf = write_pdf(tmp_path / "nature.pdf", [" ".join([text] * 30) for text in PAGE_TEXTS],
                            title="Nature and craft")
            await page.set_files('[data-testid="stFileUploaderDropzoneInput"]', [pdf])
            # The button is still enabled from the first upload: wait until the PDF is listed (its
            # upload done), and click again if a rerun swallowed the click.
            await page.wait_for(
                """document.querySelector('[data-testid="stSidebar"]').innerText.includes('nature.pdf')""",
                "the PDF in the upload list")
            indexed = f"document.body.innerText.includes('Collection index now holds {len(DOCS) + FILLERS + 2:,} documents')"
            for attempt in range(3):
                await page.wait_for(
                    """[...document.querySelectorAll('[data-testid="stSidebar"] button')]
                       .some(b => b.innerText.includes('Index these files') && !b.disabled)""",
                    "the Index button to enable for the PDF")
                await page.click('[data-testid="stSidebar"] button', "Index these files")
                try:
                    await page.wait_for(indexed, "the PDF to be indexed",
                                        timeout=STEP_TIMEOUT_S if attempt == 2 else STEP_TIMEOUT_S / 4)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
            await page.type_into(query_box, "sourdough bread wild yeast")
            await page.wait_for(f"(() => {{ const t = {RESULT_TITLES}; return t[0] === '1. Nature and craft'; }})()",
                                "the PDF as the first hit")
            # The PDF is read only when asked: its button, then its link. A press that a rerun
            # swallowed is pressed again, but only after the page had time to answer: pressed on
            # every poll, each press restarted the run before it drew the link, and on a slow
            # machine (a run over the poll's 0.5 s) the stale button stayed forever (CI, 2026-11-28).
            link_href = """(() => { const a = [...document.querySelectorAll('[data-testid="stMain"] a')]
                               .find(x => x.innerText.includes('Open nature.pdf at p. 2'));
                           return a ? a.href : null; })()"""
            for attempt in range(4):
                await page.evaluate("""(() => { const b = [...document.querySelectorAll('[data-testid="stMain"] button')]
                                                     .find(x => x.innerText.includes('Open at p. 2'));
                                                 if (b) b.click(); })()""")
                try:
                    link = await page.wait_for(link_href, "the link to page 2",
                                               timeout=STEP_TIMEOUT_S if attempt == 3 else STEP_TIMEOUT_S / 6)
                    break
                except AssertionError:
                    if attempt == 3:
                        raise
            assert link.endswith("#page=2"), link
            sources = await page.evaluate(
                """[...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"]')]
                   .map(c => c.innerText)""")
            assert any("nature.pdf · p. 2" in c for c in sources), sources
            with urllib.request.urlopen(link.split("#")[0], timeout=30) as served:
                assert served.read(5) == b"%PDF-"
            shots["pdf"] = await page.screenshot(screenshots / "pdf.png")
    return shots


def test_search_compare_and_upload_in_a_real_browser(app: App, screenshots: Path, tmp_path: Path) -> None:
    shots = asyncio.run(drive_app(app, screenshots, tmp_path))
    for name, path in shots.items():
        assert path.stat().st_size > 10_000, f"the {name} screenshot is nearly empty"


# Every host name but the machine's own resolves to nothing: a page that needs a CDN breaks.
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"


async def read_api_docs(url: str, screenshots: Path, tmp_path: Path) -> tuple[list[str], Path]:
    with chromium(tmp_path / "docs-profile", OFFLINE) as port:
        connection, page = await open_page(port, url)
        async with connection:
            operations = await page.wait_for(
                """(() => { const o = [...document.querySelectorAll('.opblock-summary-path')]
                   .map(e => e.innerText.trim()); return o.length >= 4 ? o : null; })()""",
                "the operations listed by Swagger UI")
            shot = await page.screenshot(screenshots / "api-docs.png")
    return operations, shot


def test_the_api_docs_render_in_a_browser_without_a_network(screenshots: Path, tmp_path: Path) -> None:
    """/docs is Swagger UI from the server's own assets: with every outside host unreachable it
    still lists the operations (it was a blank page without internet, loading from a CDN)."""
    if browser_path() is None:
        pytest.skip("no Chromium found; install Debian's `chromium` package: apt-get install chromium")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "search.api", "--index", str(tmp_path / "no-index-yet"), "--port", str(port),
         "--rerank-model", "none", "--log-level", "warning"],
        cwd=PROJECT_ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_url(f"http://127.0.0.1:{port}/openapi.json", 120, server)
        operations, shot = asyncio.run(read_api_docs(f"http://127.0.0.1:{port}/docs", screenshots, tmp_path))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert {"/health", "/stats", "/search", "/similarity"} <= set(operations), operations
    assert shot.stat().st_size > 10_000
