"""The app's Streamlit settings as Streamlit itself reads them from .streamlit/config.toml."""

from __future__ import annotations

import pytest
from streamlit import config

from data.paths import PROJECT_ROOT


def test_streamlit_run_listens_on_this_machine_only(monkeypatch: pytest.MonkeyPatch):
    """`streamlit run app.py` without `make run` must not open the app (which writes the index) to
    the network: the bind address comes from the repository's config file."""
    monkeypatch.chdir(PROJECT_ROOT)
    config.get_config_options(force_reparse=True)
    try:
        assert config.get_option("server.address") == "127.0.0.1"
        assert config.get_where_defined("server.address") == str(PROJECT_ROOT / ".streamlit" / "config.toml")
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)
