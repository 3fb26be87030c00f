"""Text files not in UTF-8: how often each way of reading them gives back the text that was written.

Ground truth comes from real translated text: Debian's manual pages in 20 languages
(`/usr/share/man/LANG/man1`, UTF-8, as groff reads them), each saved again in the legacy
encodings its language was written in (Windows-1252 and ISO-8859-1/15 for Western European
languages, Windows-1250 and ISO-8859-2 for Central European, Windows-1251 and KOI8-R for
Cyrillic, Windows-1254 for Turkish, Shift-JIS and EUC-JP for Japanese, EUC-KR for Korean). A
page that does not fit an encoding, or whose bytes there are still valid UTF-8 (ASCII only), is
left out of that encoding. Each reading decodes the bytes; a file counts as recovered when the
text equals the original exactly.

Readings, side by side on the same files:
- refuse: what the indexer did before (`invalid UTF-8 ...; re-save the file as UTF-8`);
- cp1252: Windows-1252 for every file (what browsers assume for an undeclared legacy page, and what
  `formats.decode_html` falls back to);
- charset-normalizer: its best guess (`from_bytes(raw).best()`);
- ours: `indexer.sources.legacy_text.decode_legacy`, what the indexer does now.

    python bench/bench_encodings.py [--per-language 12] [--no-record]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from bench.record import markdown_table, record

MAN = Path("/usr/share/man")
# Language folder -> the legacy encodings its text was commonly saved in.
FAMILIES = {
    "Western European": (("de", "fr", "es", "it", "pt", "pt_BR", "nl", "da", "fi", "sv", "id"),
                         ("cp1252", "iso-8859-1", "iso-8859-15")),
    "Central European": (("cs", "pl", "hu", "hr", "ro", "sl"), ("cp1250", "iso-8859-2")),
    "Cyrillic": (("ru", "sr"), ("cp1251", "koi8-r")),
    "Turkish": (("tr",), ("cp1254",)),
    "Japanese": (("ja",), ("shift_jis", "euc-jp")),
    "Korean": (("ko",), ("euc-kr",)),
}


def pages(language: str, count: int) -> list[str]:
    """Up to `count` of the language's manual pages (section 1) with non-ASCII text, as text."""
    found = []
    for path in sorted((MAN / language / "man1").glob("*.1*")):
        if path.is_symlink():
            continue
        raw = path.read_bytes()
        try:
            text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
        except (UnicodeDecodeError, OSError, EOFError):
            continue
        if not text.isascii():
            found.append(text)
        if len(found) == count:
            break
    return found


def samples(per_language: int) -> list[tuple[str, str, str, bytes]]:
    """(family, encoding, original text, its bytes in that encoding) for every page that fits."""
    out = []
    for family, (languages, encodings) in FAMILIES.items():
        for language in languages:
            for text in pages(language, per_language):
                for encoding in encodings:
                    try:
                        raw = text.encode(encoding)
                        raw.decode("utf-8")
                        continue  # still UTF-8: never reaches a fallback
                    except UnicodeEncodeError:
                        continue
                    except UnicodeDecodeError:
                        out.append((family, encoding, text, raw))
    return out


def _charset_normalizer(raw: bytes) -> str | None:
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    return None if best is None else str(best)


def _ours(raw: bytes) -> str | None:
    from indexer.sources.legacy_text import decode_legacy

    decoded = decode_legacy(raw)
    return None if decoded is None else decoded[0]


READINGS: dict[str, Callable[[bytes], str | None]] = {
    "refuse": lambda raw: None,
    "cp1252": lambda raw: raw.decode("cp1252", errors="replace"),
    "charset-normalizer": _charset_normalizer,
    "ours": _ours,
}


def measure(items: list[tuple[str, str, str, bytes]]) -> dict[tuple[str, str], tuple[int, int, list[float]]]:
    """(family, reading) -> (files, recovered exactly, seconds per file); family "all" sums them."""
    results: dict[tuple[str, str], tuple[int, int, list[float]]] = {}
    for family, _encoding, text, raw in items:
        for name, read in READINGS.items():
            started = time.perf_counter()
            decoded = read(raw)
            seconds = time.perf_counter() - started
            for key in ((family, name), ("all", name)):
                files, recovered, times = results.get(key, (0, 0, []))
                results[key] = (files + 1, recovered + (decoded == text), [*times, seconds])
    return results


def table(results: dict[tuple[str, str], tuple[int, int, list[float]]], items: list) -> str:
    families = [*FAMILIES, "all"]
    rows = []
    for family in families:
        if (family, "refuse") not in results:
            continue
        files = results[(family, "refuse")][0]
        encodings = sorted({e for f, e, _, _ in items if f == family or family == "all"})
        row: list[object] = [family, files, ", ".join(encodings) if family != "all" else f"{len(encodings)} encodings"]
        for name in READINGS:
            _, recovered, times = results[(family, name)]
            row.append(f"{recovered / files:.0%} ({statistics.median(times) * 1000:.1f} ms)")
        rows.append(row)
    return markdown_table(["languages", "files", "saved as", *[f"{n}: recovered (median time)" for n in READINGS]], rows)


NOTES = """Recovered: the decoded text equals the page as written, exactly; the time is the median per
file (a manual page is a few KB). Refusing was the indexer's behaviour before: every such file
skipped. Windows-1252 alone reads nearly every Western European file but turns other scripts into
accented Latin letters; charset-normalizer alone recognises Cyrillic, Japanese and Korean but
reads most Western European pages as Windows-1250 (è as č), Big5 or Shift-JIS. Ours reads each
byte that is not UTF-8 as Windows-1252 when the text then looks Western European (at most 30% of
letters accented, no run of 4 accented letters; a UTF-8 file with older Latin-1 lines keeps
both), and takes charset-normalizer's guess among the code pages of other scripts otherwise; Central European and Turkish files then come back with a few letters wrong (ř as ø,
ş as þ), and the indexer's warning names the encoding it used."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-language", type=int, default=12, help="manual pages per language (default 12)")
    parser.add_argument("--no-record", action="store_true", help="print the table only, leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    items = samples(args.per_language)
    if not items:
        print(f"no translated manual pages under {MAN}: apt-get install manpages-de manpages-fr ... (or man-db)")
        return 1
    body = table(measure(items), items) + "\n\n" + NOTES
    print(body)
    if not args.no_record:
        record("bench_encodings", "Text files not in UTF-8: which reading gives back what was written", body,
               command=f"python -m bench.bench_encodings --per-language {args.per_language}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
