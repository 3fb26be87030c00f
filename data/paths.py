"""Where the checkout and the shared public datasets live: `PROJECT_ROOT`, `$SEMSEARCH_DATA`.

`PROJECT_ROOT` is the repository root (computed in `indexer.settings`, which reads every
`SEMSEARCH_*` variable); the app, the shipped reranker's path, the benchmarks and the tests all use it. It is the
checkout because the project installs editable (`make install`): its folders
beside the packages (models/, indexes/, BENCHMARKS.md) are not in a wheel.
"""

from __future__ import annotations

from pathlib import Path

from indexer import settings
from indexer.settings import PROJECT_ROOT

__all__ = ["PROJECT_ROOT", "shared_data_dir"]


def shared_data_dir() -> Path:
    """The datasets folder: `$SEMSEARCH_DATA`, else `../shared/data`. It may not exist: a user's clone has none."""
    return settings.data_dir()
