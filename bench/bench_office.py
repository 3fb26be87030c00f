"""Office files and RTF on real files: how fast and how completely the indexer reads OpenDocument
text and presentations, PowerPoint and RTF, beside a peer reader on the same files.

The corpus is documents Debian packages ship, written by their authors, not by us:
- ODT: manuals and specifications (coco-doc, aprx, davical-doc, discosnp, examl);
- ODP: talks (libmapsforge-java-doc, python-py7zr-doc, libtrompeloeil-cpp-dev);
- PPTX: r-cran-officer's example deck, and each ODP talk saved as .pptx by LibreOffice Impress
  (PowerPoint files are rare in Debian; Impress writes what PowerPoint reads);
- RTF: user guides and manuals (kannel-docs, muttprint-manual, libdds-dev, linuxdoc-tools, aft,
  cvs), most of them `.rtf.gz`.
The packages are fetched with `apt-get download` and unpacked with `dpkg -x` into
`.cache/office/` once (no install, nothing started); a package that cannot be fetched is named and
left out.

The reference for each file is what LibreOffice shows: the file exported to PDF by `soffice
--headless --convert-to pdf` (LibreOffice 7.4), read by `pdftotext`. Recall is the share of the
reference's words (runs of 3+ letters, lowercased, as a multiset) in our text; precision the
share of our words in the reference. Page headers, footers and slide numbers are in the reference
and not in ours, so recall below 1 is expected where they repeat; text LibreOffice does not render
(speaker notes) lowers precision. The peer reads the same files in the same process: odfpy's
`teletype.extractText` over every paragraph and heading (ODT, ODP), `unrtf --text` (RTF), and the
text runs (`a:t`) of each slide's XML read with zipfile and lxml (PPTX).

    python bench/bench_office.py [--cache .cache/office] [--no-record]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.record import markdown_table, record
from data.paths import PROJECT_ROOT
from indexer.sources.formats import Extracted, UnreadableDocument, detect, extract

PACKAGES = {
    "ODT": ("coco-doc", "aprx", "davical-doc", "discosnp", "examl"),
    "ODP": ("libmapsforge-java-doc", "python-py7zr-doc", "libtrompeloeil-cpp-dev"),
    "PPTX": ("r-cran-officer",),
    "RTF": ("kannel-docs", "muttprint-manual", "libdds-dev", "linuxdoc-tools", "aft", "cvs"),
}
SUFFIXES = {"ODT": (".odt",), "ODP": (".odp",), "PPTX": (".pptx",), "RTF": (".rtf", ".rtf.gz")}
_WORD = re.compile(r"[^\W\d_]{3,}")


@dataclass(frozen=True)
class BenchConfig:
    cache: Path = PROJECT_ROOT / ".cache" / "office"
    repeats: int = 3  # passes per reader over the files; the fastest counts


def words(text: str) -> Counter[str]:
    return Counter(word.lower() for word in _WORD.findall(text))


def overlap(reference: str, candidate: str) -> tuple[float, float]:
    """(recall, precision) of `candidate`'s words against `reference`'s."""
    ref, ours = words(reference), words(candidate)
    shared = sum((ref & ours).values())
    return shared / max(1, sum(ref.values())), shared / max(1, sum(ours.values()))


def fetch(cache: Path, log: Callable[[str], None]) -> Path:
    """The packages unpacked under `cache/root` (fetched once)."""
    root, debs = cache / "root", cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    for package in (p for group in PACKAGES.values() for p in group):
        if any(debs.glob(f"{package}_*.deb")):
            continue
        done = subprocess.run(["apt-get", "download", package], cwd=debs, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log(f"{package}: not fetched ({done.stderr.strip()[:120]}); its files are left out")
    for deb in sorted(debs.glob("*.deb")):
        marker = cache / "unpacked" / deb.name
        if not marker.exists():
            subprocess.run(["dpkg", "-x", str(deb), str(root)], check=True)
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
    return root


def _soffice(sources: Sequence[Path], target: str, outdir: Path, profile: Path) -> None:
    if sources:
        subprocess.run(["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--convert-to", target,
                        "--outdir", str(outdir), *map(str, sources)], capture_output=True, timeout=900, check=False)


def gather(cache: Path, root: Path) -> dict[str, list[Path]]:
    """Each format's files, copied flat into `cache/files/<format>` (`.rtf.gz` unpacked for the
    reference only), the ODP talks saved as PPTX beside them."""
    files: dict[str, list[Path]] = {}
    for kind, suffixes in SUFFIXES.items():
        folder = cache / "files" / kind
        folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name.lower().endswith(suffixes)):
            if kind == "PPTX" and "template" in path.parts:
                continue  # a layout without slides
            target = folder / path.name.replace(" ", "_")
            if not target.exists():
                shutil.copyfile(path, target)
        files[kind] = sorted(folder.iterdir())
    pptx = cache / "files" / "PPTX"
    missing = [p for p in files["ODP"] if not (pptx / f"{p.stem}.pptx").exists()]
    with tempfile.TemporaryDirectory() as profile:
        _soffice(missing, "pptx", pptx, Path(profile))
    files["PPTX"] = sorted(pptx.iterdir())
    return files


def reference_text(path: Path, cache: Path) -> str:
    """pdftotext's text of LibreOffice's PDF of `path` (cached)."""
    refs = cache / "reference"
    refs.mkdir(parents=True, exist_ok=True)
    out = refs / f"{path.parent.name}__{path.name}.txt"
    if out.exists():
        return out.read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as work:
        source = path
        if path.name.endswith(".gz"):
            source = Path(work) / path.name[:-3]
            source.write_bytes(gzip.decompress(path.read_bytes()))
        _soffice([source], "pdf", Path(work), Path(work) / "profile")
        pdf = Path(work) / f"{source.stem}.pdf"
        text = subprocess.run(["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True,
                              check=False).stdout if pdf.exists() else ""
    out.write_text(text, encoding="utf-8")
    return text


def ours(path: Path) -> Extracted:
    if path.name.endswith(".gz"):
        with tempfile.TemporaryDirectory() as work:
            unpacked = Path(work) / path.name[:-3]
            unpacked.write_bytes(gzip.decompress(path.read_bytes()))
            return ours(unpacked)
    kind = detect(path, path.read_bytes()[:8])  # by content, as the indexer tells it
    if kind is None:
        raise UnreadableDocument("read as text by the indexer")
    return extract(path, kind)


def _odfpy(path: Path) -> str:
    from odf import teletype, text
    from odf.opendocument import load

    document = load(str(path))
    return "\n".join(teletype.extractText(element) for tag in (text.H, text.P)
                     for element in document.getElementsByType(tag))


def _unrtf(path: Path) -> str:
    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    out = subprocess.run(["unrtf", "--text"], input=data, capture_output=True, check=False).stdout
    text = out.decode("utf-8", errors="replace")
    return text.split("-----------------\n", 1)[-1]  # unrtf's header of its version and the fonts


def _pptx_runs(path: Path) -> str:
    import lxml.etree as etree

    texts: list[str] = []
    with zipfile.ZipFile(path) as archive:
        for name in sorted(n for n in archive.namelist() if re.fullmatch(r"ppt/(slides|notesSlides)/\w+\.xml", n)):
            root = etree.fromstring(archive.read(name))
            texts.extend(t.text or "" for t in root.iter("{http://schemas.openxmlformats.org/drawingml/2006/main}t"))
    return "\n".join(texts)


PEERS: dict[str, tuple[str, Callable[[Path], str]]] = {
    "ODT": ("odfpy `teletype.extractText`", _odfpy),
    "ODP": ("odfpy `teletype.extractText`", _odfpy),
    "PPTX": ("slide XML text runs (zipfile + lxml)", _pptx_runs),
    "RTF": ("`unrtf --text`", _unrtf),
}


@dataclass
class FormatResult:
    files: int
    chars: int
    ours_seconds: float
    read: int
    recall: list[float]
    precision: list[float]
    peer: str
    peer_seconds: float
    peer_recall: list[float]
    peer_precision: list[float]


def read_all(files: Sequence[Path], read: Callable[[Path], str], refused: type[Exception]) -> dict[Path, str]:
    """The text `read` gives each file; a file it refuses (raising `refused`) is left out, counted
    as unread. Our reader's refusals are `UnreadableDocument`: anything else it raises is a bug."""
    texts: dict[Path, str] = {}
    for path in files:
        with contextlib.suppress(refused):
            texts[path] = read(path)
    return texts


def best_time(files: Sequence[Path], read: Callable[[Path], str], refused: type[Exception], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        read_all(files, read, refused)
        best = min(best, time.perf_counter() - start)
    return best


def _our_text(path: Path) -> str:
    return ours(path).text


def run_format(kind: str, files: Sequence[Path], cfg: BenchConfig) -> FormatResult:
    peer_name, peer = PEERS[kind]
    texts = read_all(files, _our_text, UnreadableDocument)
    peer_texts = read_all(files, peer, Exception)  # a peer's failures are counted, not raised
    refs = {path: reference_text(path, cfg.cache) for path in files}
    scored = [p for p in files if len(words(refs[p])) >= 20]
    ours_scores = [overlap(refs[p], texts.get(p, "")) for p in scored]
    peer_scores = [overlap(refs[p], peer_texts.get(p, "")) for p in scored]
    return FormatResult(
        files=len(files), chars=sum(len(t) for t in texts.values()),
        ours_seconds=best_time(files, _our_text, UnreadableDocument, cfg.repeats), read=len(texts),
        recall=[r for r, _ in ours_scores], precision=[p for _, p in ours_scores], peer=peer_name,
        peer_seconds=best_time(files, peer, Exception, cfg.repeats),
        peer_recall=[r for r, _ in peer_scores], peer_precision=[p for _, p in peer_scores])


def _mean_min(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.3f} (min {min(values):.3f})" if values else "–"


def table(results: dict[str, FormatResult]) -> str:
    rows = [[kind, r.files, f"{r.chars:,}", f"{r.files / r.ours_seconds:.1f}", f"{r.read}/{r.files}",
             _mean_min(r.recall), _mean_min(r.precision), r.peer, f"{r.files / r.peer_seconds:.1f}",
             _mean_min(r.peer_recall), _mean_min(r.peer_precision)] for kind, r in results.items()]
    header = ["format", "files", "our chars", "ours files/s", "read", "recall (ours)", "precision (ours)", "peer",
              "peer files/s", "recall (peer)", "precision (peer)"]
    return ("Recall and precision against LibreOffice's rendering (PDF export read by pdftotext), mean over "
            "the files whose reference has at least 20 words, with the lowest file's; files/s is the fastest of "
            "3 passes over all the files, ours `formats.extract` (a `.rtf.gz` unpacked first, as the indexer "
            "does), the peer after it in the same process. Ours leaves out by design what the reference "
            "shows and a passage should not hold: a text file's table of contents (the peer keeps it) and "
            "the footer a presentation's master page repeats on every slide (neither reads it); speaker "
            "notes, which ours and the PPTX peer read, are not in the rendering.\n\n"
            + markdown_table(header, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=BenchConfig.cache)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    for tool, package in (("soffice", "libreoffice-writer-nogui libreoffice-impress-nogui"),
                          ("pdftotext", "poppler-utils"), ("unrtf", "unrtf"), ("apt-get", "apt")):
        if shutil.which(tool) is None:
            print(f"{tool} not found; apt-get install {package}", file=sys.stderr)
            return 2
    cfg = BenchConfig(cache=args.cache)
    files = gather(cfg.cache, fetch(cfg.cache, print))
    results = {kind: run_format(kind, found, cfg) for kind, found in files.items() if found}
    body = table(results)
    print(body)
    if not args.no_record:
        record("bench_office", "Office files and RTF", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
