"""Every `SEMSEARCH_*` environment variable, read here and nowhere else; and which libraries'
log lines reach a user's console (`quiet_library_logs`).

A relative path in any of them is taken from the repository root (where `make run` and `make
serve` run), so the app, the API and the tools read one value alike. The README's
Configuration table lists them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INDEX = Path("indexes") / "demo"
# What SEMSEARCH_RERANKER may say for "no reranker".
NO_RERANKER = ("none", "off", "0")


# Libraries whose INFO lines say nothing a user acts on: FAISS's loader names the CPU build it
# could not load ("Could not load library with AVX2 support") on every start, and
# sentence-transformers announces each model load while our own progress says the same.
QUIET_LIBRARY_LOGGERS = ("faiss.loader", "sentence_transformers")


def quiet_library_logs() -> None:
    """Keep the libraries' INFO lines out of a command's console (warnings still show); every
    CLI calls it after configuring logging."""
    for name in QUIET_LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _text(name: str) -> str:
    return os.environ.get(name, "").strip()


def _path(value: str) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else PROJECT_ROOT / path


def index_dir() -> Path:
    """SEMSEARCH_INDEX: the index the app opens (default indexes/demo)."""
    return _path(_text("SEMSEARCH_INDEX") or str(DEFAULT_INDEX))


def collections_root() -> Path:
    """SEMSEARCH_ROOT: the folder whose index folders the app offers as collections (default: the
    folder that holds SEMSEARCH_INDEX, so `indexes/` for the demo, as `search.api --root indexes`)."""
    value = _text("SEMSEARCH_ROOT")
    return _path(value) if value else index_dir().parent


def db_url() -> str | None:
    """SEMSEARCH_DB: the SQLAlchemy URL for an index whose database needs a password; None when unset."""
    return os.environ.get("SEMSEARCH_DB") or None


def reranker() -> str | None:
    """SEMSEARCH_RERANKER: a CrossEncoder folder, or "none"; None when unset (the shipped one)."""
    value = _text("SEMSEARCH_RERANKER")
    if not value:
        return None
    return value if value.lower() in NO_RERANKER else str(_path(value))


def model_loading() -> str:
    """SEMSEARCH_MODEL_LOADING: how the app loads the bi-encoder, "background" (default) or "eager"."""
    return _text("SEMSEARCH_MODEL_LOADING").lower() or "background"


def encoding() -> str | None:
    """SEMSEARCH_ENCODING: how new indexes encode ("fp32", "openvino-fp32", "openvino-bf16"); None when unset (chosen
    by the CPU, `indexer.encoding.choose_encoding`)."""
    return _text("SEMSEARCH_ENCODING") or None


def cache_dir() -> Path:
    """SEMSEARCH_CACHE, else $XDG_CACHE_HOME/semsearch, else ~/.cache/semsearch: models converted
    for another runtime (OpenVINO), kept so that later loads skip the conversion, and the digests
    of large index files (`indexer.store.integrity`), so that a new reader need not hash them."""
    value = _text("SEMSEARCH_CACHE")
    if value:
        return _path(value)
    base = _text("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "semsearch"


def build_source() -> Path | None:
    """SEMSEARCH_BUILD_SOURCE: a source the app indexes in the background while it serves."""
    value = _text("SEMSEARCH_BUILD_SOURCE")
    return _path(value) if value else None


def build_stamp() -> str | None:
    """SEMSEARCH_BUILD_STAMP: a file the app touches when that background build succeeds."""
    return _text("SEMSEARCH_BUILD_STAMP") or None


def data_dir() -> Path:
    """SEMSEARCH_DATA, else ../shared/data beside the repository: the public datasets."""
    value = os.environ.get("SEMSEARCH_DATA")
    if value:
        return Path(value).expanduser().resolve()
    return (PROJECT_ROOT.parent / "shared" / "data").resolve()


def build_workers() -> int | None:
    """SEMSEARCH_BUILD_WORKERS: worker processes a build cuts passages and BM25-tokenizes in (0: none,
    everything in the build's process); None when unset (chosen by the cores, `indexer.sources.workers`)."""
    value = _text("SEMSEARCH_BUILD_WORKERS")
    if not value:
        return None
    if not value.isdigit():
        raise ValueError(f"SEMSEARCH_BUILD_WORKERS={value!r} is not a whole number; set it to 0 (no worker "
                         "processes), to a count such as 4, or unset it to choose by the cores.")
    return int(value)
