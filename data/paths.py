"""Where the checkout and the shared public datasets live: `PROJECT_ROOT`, `$SEMSEARCH_DATA`.

`PROJECT_ROOT` is the one place the repository root is computed; the app, the
shipped reranker's path, the benchmarks and the tests all use it. It is the
checkout because the project installs editable (`make install`): its folders
beside the packages (models/, indexes/, BENCHMARKS.md) are not in a wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """The datasets folder: `$SEMSEARCH_DATA`, else `../shared/data`. It may not exist: a user's clone has none."""
    env = os.environ.get("SEMSEARCH_DATA")
    if env:
        return Path(env).expanduser().resolve()
    return (PROJECT_ROOT.parent / "shared" / "data").resolve()
