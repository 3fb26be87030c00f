"""One JSON-lines reader for every dataset format: objects with their line numbers, bad lines warned."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

logger = logging.getLogger(__name__)


def iter_json_objects(lines: Iterable[str], path: Path | str) -> Iterator[tuple[int, dict]]:
    """(line number, object) per non-blank line; malformed lines and non-objects are skipped
    with a warning that names `path` and the line.

    `lines` must be split on "\\n" only: a file opened with `newline="\\n"` (see
    `data.raw_text.open_text`), never `str.splitlines()`, which also splits on U+2028,
    U+0085, \\x1c and others that a valid JSON line may hold.
    """
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            logger.warning("%s:%d: skipping malformed JSON line (%s)", path, line_number, err.msg)
            continue
        except (ValueError, RecursionError) as err:  # a 5,000-digit number, or nesting too deep
            logger.warning("%s:%d: skipping malformed JSON line (%s)", path, line_number, err)
            continue
        if not isinstance(record, dict):
            logger.warning("%s:%d: expected a JSON object; skipping", path, line_number)
            continue
        yield line_number, record
