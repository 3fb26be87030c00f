"""Where the shared public datasets live: `$SEMSEARCH_DATA`, else `../shared/data`."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """The datasets folder. It may not exist: a user's clone has none."""
    env = os.environ.get("SEMSEARCH_DATA")
    if env:
        return Path(env).expanduser().resolve()
    return (PROJECT_ROOT.parent / "shared" / "data").resolve()
