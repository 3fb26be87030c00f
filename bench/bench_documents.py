"""Document formats on real files: how fast and how well the indexer reads PDF, HTML, DOCX and EPUB,
beside a peer extractor on the same files, and what the whole build makes of them.

The corpus is real documents nobody here wrote, from Debian packages, gathered (and, for DOCX and
EPUB, converted with LibreOffice) into `.cache/documents/` once and reused while the sources and
settings are unchanged:
- PDF: a fixed-seed sample of the TeX Live manuals (`texlive-latex-base-doc`), at most
  `--max-pdf-pages` pages each;
- HTML: a fixed-seed sample of the Python 3.11 library reference pages (`python3.11-doc`);
- DOCX and EPUB: the content (`div.body`) of a few Python reference pages and some license texts
  from /usr/share/common-licenses, converted by `soffice --headless --convert-to`
  (`libreoffice-writer-nogui`).
A missing package skips its format with the apt package to install; nothing crashes.

Per format it reports files, pages (PDF), files/s and pages/s of our `extract` / `extract_html`,
the share of files read without warning (no `UnreadableDocument`, no `Extracted.warnings`), a peer
extractor's files/s on the same files (pdfminer.six `extract_text`, trafilatura `extract`,
docx2txt `process`, ebooklib + trafilatura `extract` per chapter), and passages/s of `build_index`
with the default model over a capped share of that format's files. A quality spot check scores
random PDF pages: the share of pdftotext's words (poppler-utils) that our text for that page holds.

    python bench/bench_documents.py [--pdfs 40] [--html 60] [--e2e-chars 400000] [--no-record]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench.record import markdown_table, record  # noqa: E402
from data.paths import PROJECT_ROOT  # noqa: E402
from indexer.sources.formats import (  # noqa: E402
    DOCX,
    EPUB,
    HTML,
    PDF,
    Extracted,
    UnreadableDocument,
    decode_html,
    detect,
    extract,
    extract_html,
)

FORMATS = (PDF, HTML, DOCX, EPUB)
TEXLIVE_DOC = Path("/usr/share/doc/texlive-doc")
PYTHON_HTML = Path("/usr/share/doc/python3.11/html")
LICENSES = Path("/usr/share/common-licenses")
SUFFIX = {PDF: ".pdf", HTML: ".html", DOCX: ".docx", EPUB: ".epub"}
QUALITY_TARGET = 0.95
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class BenchConfig:
    """What the bench reads and how much of it. Every sample is drawn from a sorted list with `seed`."""

    cache: Path = PROJECT_ROOT / ".cache" / "documents"
    seed: int = 42
    pdfs: int = 40  # PDFs sampled from texlive-doc
    max_pdf_pages: int = 300  # longer manuals are left out of the sample
    html: int = 60  # Python library reference pages
    office_pages: int = 6  # Python reference pages converted to DOCX and EPUB
    licenses: tuple[str, ...] = ("Apache-2.0", "GPL-3", "LGPL-2.1", "MPL-2.0", "GFDL-1.3", "Artistic")
    quality_pages: int = 20
    min_words: int = 10  # a quality page needs at least this many pdftotext words
    e2e_chars: int = 400_000  # extracted text per format that the end-to-end build indexes
    formats: tuple[str, ...] = FORMATS


# --- pure helpers (tests/bench/test_bench_documents.py) ------------------------------------------

def words(text: str) -> Counter[str]:
    """The word multiset of `text`: NFKC-normalised (so a ligature counts as its letters on either
    side), lowercased, runs of Unicode letters and digits."""
    return Counter(_WORD.findall(unicodedata.normalize("NFKC", text).lower()))


def word_recall(reference: str, candidate: str) -> float:
    """The share of `reference`'s words that `candidate` holds, counted as multisets:
    sum(min(ref[w], cand[w])) / sum(ref[w]). 1.0 when the reference has no words."""
    ref, cand = words(reference), words(candidate)
    total = sum(ref.values())
    if not total:
        return 1.0
    return sum(min(n, cand[w]) for w, n in ref.items()) / total


def page_slice(text: str, page_starts: Sequence[int], page: int) -> str:
    """The text an outline places on 1-based `page`: from `page_starts[page-1]` to the next page's
    start or the end of `text`; "" for a page past the last start (a trailing page without text)."""
    if page < 1:
        raise ValueError(f"pages are 1-based, got {page}")
    if page > len(page_starts):
        return ""
    end = page_starts[page] if page < len(page_starts) else len(text)
    return text[page_starts[page - 1]:end]


def sample(items: Sequence[str], k: int, seed: int) -> list[str]:
    """`k` of `items` (all when there are fewer), drawn with `seed` from the sorted list, returned sorted."""
    ordered = sorted(items)
    if k >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, k))


def fit_budget(sizes: Sequence[tuple[str, int]], budget: int) -> list[str]:
    """The names, in the given order, whose sizes fit `budget` when taken greedily (a file too large
    for what is left is passed over); the smallest one alone when none fits."""
    chosen, left = [], budget
    for name, size in sizes:
        if size <= left:
            chosen.append(name)
            left -= size
    if not chosen and sizes:
        chosen.append(min(sizes, key=lambda item: item[1])[0])
    return chosen


# --- the corpus -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Corpus:
    """One format's files (sorted), their page counts (PDF only), or why the format is skipped."""

    kind: str
    files: tuple[Path, ...] = ()
    pages: dict[str, int] = field(default_factory=dict)
    skipped: str = ""
    notes: tuple[str, ...] = ()


def _manifest_ok(folder: Path, manifest: dict) -> bool:
    path = folder / "manifest.json"
    try:
        return json.loads(path.read_text()) == manifest
    except (OSError, ValueError):
        return False


def _write_manifest(folder: Path, manifest: dict) -> None:
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


def pdf_pages(path: Path) -> int | None:
    """The page count pdfinfo (poppler-utils) reports, or None when it cannot read the file."""
    done = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, errors="replace", timeout=60)
    found = re.search(r"^Pages:\s+(\d+)", done.stdout, re.M)
    return int(found.group(1)) if found else None


def gather_pdf(cfg: BenchConfig) -> Corpus:
    """A fixed-seed sample of texlive-doc's PDFs of at most `max_pdf_pages` pages, copied into the cache."""
    if not TEXLIVE_DOC.is_dir():
        return Corpus(PDF, skipped=f"{TEXLIVE_DOC} is missing: apt-get install texlive-latex-base-doc")
    if not shutil.which("pdfinfo") or not shutil.which("pdftotext"):
        return Corpus(PDF, skipped="pdfinfo/pdftotext are missing: apt-get install poppler-utils")
    folder = cfg.cache / PDF
    every = sorted(str(p) for p in TEXLIVE_DOC.rglob("*.pdf") if p.is_file())
    manifest = {"sources": every, "seed": cfg.seed, "pdfs": cfg.pdfs, "max_pages": cfg.max_pdf_pages}
    if not _manifest_ok(folder, manifest):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        order = every[:]
        random.Random(cfg.seed).shuffle(order)
        chosen: dict[str, int] = {}
        for source in order:
            if len(chosen) == cfg.pdfs:
                break
            pages = pdf_pages(Path(source))
            if pages is not None and pages > cfg.max_pdf_pages:
                continue
            # Many manuals share a name (doc.pdf, manual.pdf): the name carries its folder.
            name = str(Path(source).relative_to(TEXLIVE_DOC)).replace("/", "__")
            shutil.copyfile(source, folder / name)
            chosen[name] = pages or 0
        (folder / "pages.json").write_text(json.dumps(chosen, indent=1, sort_keys=True))
        _write_manifest(folder, manifest)
    pages = json.loads((folder / "pages.json").read_text())
    return Corpus(PDF, tuple(folder / name for name in sorted(pages)), pages,
                  notes=(f"{len(pages)} of {len(every)} texlive-doc PDFs (seed {cfg.seed}, "
                         f"at most {cfg.max_pdf_pages} pages each)",))


def _library_pages() -> list[str]:
    return sorted(p.name for p in (PYTHON_HTML / "library").glob("*.html"))


def gather_html(cfg: BenchConfig) -> Corpus:
    """A fixed-seed sample of the Python library reference pages, copied into the cache."""
    if not (PYTHON_HTML / "library").is_dir():
        return Corpus(HTML, skipped=f"{PYTHON_HTML} is missing: apt-get install python3.11-doc")
    folder = cfg.cache / HTML
    every = _library_pages()
    chosen = sample(every, cfg.html, cfg.seed)
    manifest = {"sources": chosen}
    if not _manifest_ok(folder, manifest):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name in chosen:
            shutil.copyfile(PYTHON_HTML / "library" / name, folder / name)
        _write_manifest(folder, manifest)
    return Corpus(HTML, tuple(folder / name for name in chosen),
                  notes=(f"{len(chosen)} of {len(every)} Python 3.11 library pages (seed {cfg.seed})",))


def _body_only(page: Path) -> str:
    """A Sphinx page's `div.body` with its permalink signs dropped, as a standalone HTML document:
    what a person would paste into a word processor."""
    import lxml.html

    root = lxml.html.parse(str(page)).getroot()
    body = root.xpath('//div[@class="body"]')[0]
    for link in body.xpath('.//a[@class="headerlink"]'):
        link.drop_tree()
    title = page.stem
    return (f'<html><head><meta charset="utf-8"><title>{title}</title></head><body>'
            f'{lxml.html.tostring(body, encoding="unicode")}</body></html>')


def _soffice(sources: Sequence[Path], infilter: str, target: str, outdir: Path, profile: Path) -> None:
    if not sources:
        return
    subprocess.run(["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless",
                    f"--infilter={infilter}", "--convert-to", target, "--outdir", str(outdir),
                    *map(str, sources)], capture_output=True, timeout=600, check=False)


def gather_office(cfg: BenchConfig, kind: str) -> Corpus:
    """DOCX or EPUB files LibreOffice converts from `office_pages` Python reference pages (their
    `div.body`; HTML goes through the Writer import filter, or the export is refused) and from
    the license texts."""
    if not shutil.which("soffice"):
        return Corpus(kind, skipped="soffice is missing: apt-get install libreoffice-writer-nogui")
    if not (PYTHON_HTML / "library").is_dir():
        return Corpus(kind, skipped=f"{PYTHON_HTML} (its sources) is missing: apt-get install python3.11-doc")
    if not LICENSES.is_dir():
        return Corpus(kind, skipped=f"{LICENSES} (its sources) is missing: apt-get install base-files")
    pages = sample(_library_pages(), cfg.office_pages, cfg.seed + 1)
    licenses = sorted(name for name in cfg.licenses if (LICENSES / name).is_file())
    folder = cfg.cache / kind
    manifest = {"pages": pages, "licenses": licenses}
    if not _manifest_ok(folder, manifest):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        with tempfile.TemporaryDirectory(prefix="bench_documents_") as tmp:
            src = Path(tmp)
            html = []
            for name in pages:
                html.append(src / name)
                html[-1].write_text(_body_only(PYTHON_HTML / "library" / name), encoding="utf-8")
            texts = []
            for name in licenses:
                texts.append(src / f"{name}.txt")
                shutil.copyfile(LICENSES / name, texts[-1])
            target = "docx:MS Word 2007 XML" if kind == DOCX else "epub"
            profile = cfg.cache / "libreoffice-profile"
            _soffice(html, "HTML (StarWriter)", target, folder, profile)
            _soffice(texts, "Text (encoded):UTF8,LF,,,", target, folder, profile)
    expected = [Path(n).stem for n in pages] + licenses
    files = tuple(sorted(folder / f"{stem}{SUFFIX[kind]}" for stem in expected
                         if (folder / f"{stem}{SUFFIX[kind]}").is_file()))
    if len(files) == len(expected):  # a failed conversion is tried again on the next run
        _write_manifest(folder, manifest)
    notes = [f"LibreOffice {kind.upper()} from {len(pages)} Python reference pages (div.body) and "
             f"{len(licenses)} license texts"]
    if len(files) < len(expected):
        notes.append(f"{len(expected) - len(files)} conversions failed")
    if not files:
        return Corpus(kind, skipped="LibreOffice converted none of the sources", notes=tuple(notes))
    return Corpus(kind, files, notes=tuple(notes))


def gather(cfg: BenchConfig, kind: str) -> Corpus:
    return {PDF: gather_pdf, HTML: gather_html}.get(kind, lambda c: gather_office(c, kind))(cfg)


# --- extraction -----------------------------------------------------------------------------------

def ours(path: Path, kind: str) -> Extracted:
    """What the indexer reads from a file of this format."""
    if kind == HTML:
        return extract_html(decode_html(path.read_bytes()))
    with path.open("rb") as fh:
        head = fh.read(8)
    return extract(path, detect(path, head) or kind)


def _pdfminer(path: Path) -> str:
    from pdfminer.high_level import extract_text
    return extract_text(str(path))


def _trafilatura(path: Path) -> str:
    import trafilatura
    return trafilatura.extract(decode_html(path.read_bytes())) or ""


def _docx2txt(path: Path) -> str:
    import docx2txt
    return docx2txt.process(str(path))


def _ebooklib_trafilatura(path: Path) -> str:
    import ebooklib
    import trafilatura
    from ebooklib import epub

    book = epub.read_epub(str(path), {"ignore_ncx": True})
    parts = []
    for entry in book.spine:
        item = book.get_item_with_id(entry[0] if isinstance(entry, tuple) else entry)
        if item is not None and item.get_type() == ebooklib.ITEM_DOCUMENT:
            parts.append(trafilatura.extract(item.get_content().decode("utf-8", "replace")) or "")
    return "\n\n".join(parts)


# Each format's peer: its name in the table, the pip package it needs, the module to import, and the call.
PEERS: dict[str, tuple[str, str, str, Callable[[Path], str]]] = {
    PDF: ("pdfminer.six `extract_text`", "pdfminer.six", "pdfminer", _pdfminer),
    HTML: ("trafilatura `extract`", "trafilatura", "trafilatura", _trafilatura),
    DOCX: ("docx2txt `process`", "docx2txt", "docx2txt", _docx2txt),
    EPUB: ("ebooklib + trafilatura `extract` per chapter", "ebooklib trafilatura", "ebooklib", _ebooklib_trafilatura),
}


@dataclass
class Run:
    """One extractor over one format's files: seconds in all, what each file gave, and the failures."""

    seconds: float = 0.0
    results: dict[str, object] = field(default_factory=dict)  # file name -> Extracted or str
    failed: dict[str, str] = field(default_factory=dict)  # file name -> error
    warned: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def files_per_second(self, files: int) -> float:
        return files / self.seconds if self.seconds else 0.0


def time_extractor(files: Sequence[Path], read: Callable[[Path], object]) -> Run:
    """Call `read` on each file in turn; an exception is a failed file, an `Extracted` with warnings a warned one."""
    run = Run()
    for path in files:
        started = time.perf_counter()
        try:
            got = read(path)
        except UnreadableDocument as err:
            run.failed[path.name] = str(err)
            got = None
        except Exception as err:  # noqa: BLE001 - a peer's failure is a result to report
            run.failed[path.name] = f"{type(err).__name__}: {err}"
            got = None
        run.seconds += time.perf_counter() - started
        if got is not None:
            run.results[path.name] = got
            if isinstance(got, Extracted) and got.warnings:
                run.warned[path.name] = got.warnings
    return run


# --- end to end -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class EndToEnd:
    files: int
    chars: int
    passages: int
    seconds: float
    issues: int
    warnings: int
    load: float  # 1-minute load average when the build started (other jobs share these cores)


def end_to_end(corpus: Corpus, extracted: Run, budget: int, work: Path) -> EndToEnd:
    """`build_index` with the default model over the files (in name order) whose extracted text fits `budget`."""
    from indexer import IndexConfig, build_index

    paths = {p.name: p for p in corpus.files if p.name in extracted.results}
    sizes = [(name, len(extracted.results[name].text)) for name in paths]
    chosen = fit_budget(sizes, budget)
    source = work / f"{corpus.kind}-source"
    source.mkdir(parents=True)
    for name in chosen:
        shutil.copyfile(paths[name], source / name)
    load = os.getloadavg()[0]
    report = build_index(IndexConfig(source=source, index_dir=work / f"{corpus.kind}-index", show_progress=False))
    return EndToEnd(len(chosen), sum(size for name, size in sizes if name in chosen), report.passages_committed,
                    report.seconds, len(report.issues), len(report.warnings), load)


# --- quality --------------------------------------------------------------------------------------

def pdftotext_page(path: Path, page: int) -> str:
    done = subprocess.run(["pdftotext", "-enc", "UTF-8", "-f", str(page), "-l", str(page), str(path), "-"],
                          capture_output=True, timeout=60)
    return done.stdout.decode("utf-8", "replace")


@dataclass(frozen=True)
class PageScore:
    file: str
    page: int
    reference_words: int
    recall: float
    peer_recall: float | None


def quality(corpus: Corpus, ours_run: Run, peer_run: Run | None, cfg: BenchConfig) -> list[PageScore]:
    """`quality_pages` random pages (seed `cfg.seed`) with at least `min_words` pdftotext words, each
    scored as the share of pdftotext's words in our text for that page (and in the peer's, split on
    form feeds). A file we could not read scores 0 on its pages."""
    candidates = [(path, page) for path in corpus.files for page in range(1, corpus.pages.get(path.name, 0) + 1)]
    random.Random(cfg.seed).shuffle(candidates)
    scores: list[PageScore] = []
    for path, page in candidates:
        if len(scores) == cfg.quality_pages:
            break
        reference = pdftotext_page(path, page)
        count = sum(words(reference).values())
        if count < cfg.min_words:
            continue
        got = ours_run.results.get(path.name)
        mine = page_slice(got.text, got.outline.page_starts, page) if isinstance(got, Extracted) else ""
        peer = None
        if peer_run is not None and isinstance(peer_run.results.get(path.name), str):
            pages = peer_run.results[path.name].split("\f")
            peer = word_recall(reference, pages[page - 1] if page <= len(pages) else "")
        scores.append(PageScore(path.name, page, count, word_recall(reference, mine), peer))
    return scores


# --- the run --------------------------------------------------------------------------------------

@dataclass
class FormatResult:
    corpus: Corpus
    ours: Run | None = None
    peer: Run | None = None
    peer_skipped: str = ""
    e2e: EndToEnd | None = None
    e2e_skipped: str = ""


def _peer_available(kind: str) -> str:
    """"" when the peer for `kind` imports, else what to pip install."""
    _, package, module, _ = PEERS[kind]
    try:
        __import__(module)
    except ImportError:
        return f"not installed: pip install {package}"
    return ""


def run_format(cfg: BenchConfig, kind: str, work: Path, log: Callable[[str], None]) -> FormatResult:
    corpus = gather(cfg, kind)
    result = FormatResult(corpus)
    if corpus.skipped:
        log(f"{kind}: skipped ({corpus.skipped})")
        return result
    for path in corpus.files:  # page cache warm for both extractors
        path.read_bytes()
    result.ours = time_extractor(corpus.files, lambda p: ours(p, kind))
    log(f"{kind}: ours {len(corpus.files)} files in {result.ours.seconds:.1f} s, "
        f"{len(result.ours.failed)} failed, {len(result.ours.warned)} warned")
    result.peer_skipped = _peer_available(kind)
    if not result.peer_skipped:
        result.peer = time_extractor(corpus.files, PEERS[kind][3])
        log(f"{kind}: peer {len(corpus.files)} files in {result.peer.seconds:.1f} s, {len(result.peer.failed)} failed")
    if not result.ours.results:
        result.e2e_skipped = "no file was read"
        return result
    try:
        result.e2e = end_to_end(corpus, result.ours, cfg.e2e_chars, work)
    except Exception as err:  # noqa: BLE001 - the other formats' figures still count
        result.e2e_skipped = f"build failed: {type(err).__name__}: {err}"
        log(f"{kind}: end to end {result.e2e_skipped}")
        return result
    log(f"{kind}: end to end {result.e2e.passages} passages in {result.e2e.seconds:.1f} s")
    return result


def summary(recalls: Sequence[float], peer_recalls: Sequence[float]) -> str:
    """The quality verdict: our mean and min page recall, the peer's, and whether the mean meets the target."""
    mean = statistics.mean(recalls)
    line = f"**Mean recall {mean:.3f}, min {min(recalls):.3f}**"
    if peer_recalls:
        line += f" (pdfminer.six: mean {statistics.mean(peer_recalls):.3f}, min {min(peer_recalls):.3f})"
    line += (f"; target mean ≥ {QUALITY_TARGET}: **{'met' if mean >= QUALITY_TARGET else 'NOT met'}**; "
             f"pages at or above {QUALITY_TARGET}: {sum(r >= QUALITY_TARGET for r in recalls)}/{len(recalls)}.")
    return line


def _rate(count: float, seconds: float) -> str:
    return f"{count / seconds:.1f}" if seconds else "–"


def tables(results: dict[str, FormatResult], scores: list[PageScore], cfg: BenchConfig) -> str:
    """The markdown the bench prints and records."""
    extraction, e2e, notes = [], [], []
    for kind, res in results.items():
        corpus = res.corpus
        if corpus.skipped:
            extraction.append([kind.upper(), f"skipped: {corpus.skipped}", *["–"] * 8])
            e2e.append([kind.upper(), "skipped", *["–"] * 7])
            continue
        notes.extend(f"{kind.upper()}: {note}" for note in corpus.notes)
        n = len(corpus.files)
        pages = sum(corpus.pages.values()) if kind == PDF else None
        mine = res.ours
        clean = n - len(mine.failed) - len(mine.warned)
        peer_name = PEERS[kind][0]
        if res.peer is not None:
            peer_cells = [peer_name, _rate(n, res.peer.seconds),
                          _rate(pages, res.peer.seconds) if pages else "–", f"{n - len(res.peer.failed)}/{n}"]
        else:
            peer_cells = [f"{peer_name}: {res.peer_skipped}", "–", "–", "–"]
        extraction.append([kind.upper(), n, pages if pages else "–", _rate(n, mine.seconds),
                           _rate(pages, mine.seconds) if pages else "–",
                           f"{clean}/{n} ({clean / n:.0%})", *peer_cells])
        for name, error in sorted(mine.failed.items()):
            notes.append(f"{kind.upper()} {name} unreadable: {error}")
        for name, warnings in sorted(mine.warned.items()):
            notes.append(f"{kind.upper()} {name} warned: {'; '.join(warnings)}")
        if res.e2e is not None:
            r = res.e2e
            e2e.append([kind.upper(), f"{r.files} of {n} (≤ {cfg.e2e_chars:,} extracted chars)", f"{r.chars:,}",
                        r.passages, f"{r.seconds:.1f}", f"**{_rate(r.passages, r.seconds)}**", r.issues, r.warnings,
                        f"{r.load:.1f}"])
        else:
            e2e.append([kind.upper(), res.e2e_skipped, "–", "–", "–", "–", "–", "–", "–"])
    parts = [
        "Extraction, one pass per extractor over the same files, one after the other in this process "
        "(the files read once beforehand so both find them in the page cache). Ours is "
        "`indexer.sources.formats.extract` (HTML: `extract_html(decode_html(bytes))`); "
        "\"read without warning\" counts files with no `UnreadableDocument` and no `Extracted.warnings`; "
        "\"peer read\" counts files the peer returned without raising.",
        markdown_table(["format", "files", "pages", "ours files/s", "ours pages/s", "read without warning",
                        "peer", "peer files/s", "peer pages/s", "peer read"], extraction),
        "End to end: `build_index` (default model all-MiniLM-L6-v2 on the CPU, loaded beforehand; read, "
        "extract, split, embed, SQL, FAISS, BM25, atomic write) over each format's files in name order "
        "that fit the extracted-character cap; passages/s is committed passages over the build's seconds.",
        markdown_table(["format", "files indexed", "extracted chars", "passages", "seconds", "passages/s",
                        "skipped inputs", "warnings", "load at start"], e2e),
    ]
    if scores:
        recalls = [s.recall for s in scores]
        peers = [s.peer_recall for s in scores if s.peer_recall is not None]
        rows = [[s.file, s.page, s.reference_words, f"{s.recall:.3f}",
                 f"{s.peer_recall:.3f}" if s.peer_recall is not None else "–"] for s in scores]
        parts += [
            f"PDF quality: {len(scores)} random pages (seed {cfg.seed}) of the PDFs above where "
            f"`pdftotext -enc UTF-8 -f N -l N` finds at least {cfg.min_words} words. Recall is the share "
            "of pdftotext's words (NFKC, lowercased, runs of letters and digits, as a multiset) found in "
            "our text for page N, the slice `text[page_starts[N-1]:page_starts[N]]` that our outline "
            "places on that page (what its passages are cut from); pdfminer.six's page is its text "
            "between form feeds.",
            markdown_table(["file", "page", "pdftotext words", "recall (ours)", "recall (pdfminer.six)"], rows),
            summary(recalls, peers),
        ]
        low = [f"{s.file} p. {s.page} ({s.recall:.3f})" for s in scores if s.recall < QUALITY_TARGET]
        if low:
            parts[-1] += " Below the target: " + ", ".join(low) + " (see the warnings below)."
    elif PDF in results and not results[PDF].corpus.skipped:
        parts.append("PDF quality: no page was scored.")
    if notes:
        parts.append("\n".join(f"- {note}" for note in notes))
    return "\n\n".join(parts)


def run(cfg: BenchConfig, log: Callable[[str], None] = print) -> tuple[dict[str, FormatResult], list[PageScore]]:
    """Gather the corpus, time both extractors and the build per format, and score PDF pages."""
    from indexer.embedding import load_bi_encoder

    load_bi_encoder(None).encode(["warm-up"] * 8)  # cached in process: no build's timing includes loading it
    results: dict[str, FormatResult] = {}
    work = Path(tempfile.mkdtemp(prefix="bench_documents_"))
    try:
        for kind in cfg.formats:
            results[kind] = run_format(cfg, kind, work, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scores: list[PageScore] = []
    pdf = results.get(PDF)
    if pdf is not None and pdf.ours is not None:
        scores = quality(pdf.corpus, pdf.ours, pdf.peer, cfg)
    return results, scores


def main(argv: list[str] | None = None) -> int:
    defaults = BenchConfig()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=defaults.cache)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--pdfs", type=int, default=defaults.pdfs)
    parser.add_argument("--max-pdf-pages", type=int, default=defaults.max_pdf_pages)
    parser.add_argument("--html", type=int, default=defaults.html)
    parser.add_argument("--office-pages", type=int, default=defaults.office_pages)
    parser.add_argument("--quality-pages", type=int, default=defaults.quality_pages)
    parser.add_argument("--e2e-chars", type=int, default=defaults.e2e_chars)
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(defaults.formats))
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    cfg = BenchConfig(cache=args.cache, seed=args.seed, pdfs=args.pdfs, max_pdf_pages=args.max_pdf_pages,
                      html=args.html, office_pages=args.office_pages, quality_pages=args.quality_pages,
                      e2e_chars=args.e2e_chars, formats=tuple(args.formats))
    print(json.dumps({k: str(v) for k, v in asdict(cfg).items()}), flush=True)
    results, scores = run(cfg, log=lambda line: print(line, flush=True))
    body = tables(results, scores, cfg)
    print(body)
    if not args.no_record:
        record("bench_documents", "Documents", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
