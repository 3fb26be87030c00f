"""Every training input file is read by one rule, the indexer's: a line that is not UTF-8 is
skipped with a `file:line` warning, and is an error under `--strict`.

The dataset readers in data/ either stop at the first bad byte with a bare UnicodeDecodeError
(STSb, SICK) or read it as U+FFFD without a word (raw text, pair files). So each command
checks its inputs with `checked_input` before any model loads: a clean file (the usual case)
is read as it is; a file with bad lines is read from a copy without them, in a temporary
folder that lives as long as the process. A bad line becomes an empty line, which every row
format skips and which keeps the other lines' numbers, except in plain-text corpora, where an
empty line would split a document and so the line is left out instead.
"""

from __future__ import annotations

import atexit
import gzip
import logging
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from indexer.errors import BadInputError
from indexer.sources.documents import InputIssue

logger = logging.getLogger(__name__)

_ROW_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv")


@dataclass(frozen=True)
class CheckedInput:
    """The file (or folder) to read, and the name messages give it: the user's path."""

    path: Path
    shown: Path


def report_issue(issue: InputIssue, strict: bool) -> None:
    """The indexer's rule for input that cannot be used: a warning naming file:line, or under
    --strict an error (`indexer.build.loop.read_source` does the same for an index build)."""
    if strict:
        raise BadInputError(f"{issue} (--strict turns skipped input into an error)")
    logger.warning("skipped %s", issue)


def _lines(path: Path) -> list[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return handle.read().split(b"\n")


def _first_bad_byte(line: bytes) -> int | None:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.start
    return None


def _is_row_file(path: Path) -> bool:
    """A file of one record per line (JSON lines, CSV, STSb, SICK), where a line is a row."""
    if path.name.removesuffix(".gz").endswith(_ROW_SUFFIXES):
        return True
    return b"entailment_label" in _lines(path)[0]  # SICK: a .txt with a header row


def _bad_lines(path: Path, strict: bool) -> set[int]:
    """The numbers of the lines of `path` that are not UTF-8, each reported."""
    bad: set[int] = set()
    for number, line in enumerate(_lines(path), start=1):
        at = _first_bad_byte(line)
        if at is not None:
            report_issue(InputIssue(str(path), number, f"invalid UTF-8 at byte {at} of the line; re-save the "
                                    "file as UTF-8"), strict)
            bad.add(number)
    return bad


def _clean_copy(path: Path, bad: set[int], folder: Path) -> Path:
    """`path` without its `bad` lines, in `folder`: emptied in a row file, left out of a corpus."""
    rows = _is_row_file(path)
    kept = [b"" if number in bad else line for number, line in enumerate(_lines(path), start=1)
            if rows or number not in bad]
    target = folder / path.name
    data = b"\n".join(kept)
    if path.suffix == ".gz":
        with gzip.open(target, "wb") as handle:
            handle.write(data)
    else:
        target.write_bytes(data)
    return target


@cache
def _temporary_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="semsearch-utf8-checked-"))
    atexit.register(shutil.rmtree, root, True)
    return root


@cache
def _checked(path: Path, size: int, mtime_ns: int, strict: bool) -> Path:
    """Cached per file version, so a file read by several stages (adapt) is reported once."""
    if path.is_dir():
        files = sorted(child for child in path.iterdir() if child.is_file() and child.name.startswith("sts-"))
        bad = {child: _bad_lines(child, strict) for child in files}
        if not any(bad.values()):
            return path
        folder = Path(tempfile.mkdtemp(dir=_temporary_root()))
        for child in path.iterdir():
            if bad.get(child):
                _clean_copy(child, bad[child], folder)
            elif child.is_file():
                (folder / child.name).symlink_to(child.resolve())
        return folder
    bad_lines = _bad_lines(path, strict)
    if not bad_lines:
        return path
    return _clean_copy(path, bad_lines, Path(tempfile.mkdtemp(dir=_temporary_root())))


def checked_input(path: Path | str, strict: bool = False) -> CheckedInput:
    """The file (or STSb folder) to read for `path`: itself when every line is UTF-8, else a copy
    without the lines that are not, each reported (`report_issue`). A path that does not exist,
    or a BEIR folder, is returned as it is, for its reader to report."""
    path = Path(path)
    if not path.exists():
        return CheckedInput(path, path)
    stat = path.stat()
    return CheckedInput(_checked(path, stat.st_size, stat.st_mtime_ns, strict), path)
