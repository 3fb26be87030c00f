"""A folder of collections as the app and the service read it (indexer/build/collections.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from indexer.build.collections import (
    SETTINGS_FILE,
    CollectionSettings,
    is_collection_name,
    list_collections,
)
from indexer.layout import MANIFEST


def test_only_index_folders_with_a_collection_name_are_collections(tmp_path: Path) -> None:
    for name in ("support-en", "notes", ".hidden", "has space", "empty"):
        (tmp_path / name).mkdir()
    (tmp_path / "support-en" / MANIFEST).write_text("{}")
    CollectionSettings(model="models/tiny").save(tmp_path / "notes")  # made over HTTP, no document yet
    (tmp_path / ".hidden" / MANIFEST).write_text("{}")
    (tmp_path / "has space" / MANIFEST).write_text("{}")
    (tmp_path / "file.txt").write_text("not a folder")
    assert [folder.name for folder in list_collections(tmp_path)] == ["notes", "support-en"]
    assert list_collections(tmp_path / "missing") == []
    assert not is_collection_name("../escape") and not is_collection_name("a" * 65)


def test_settings_round_trip_private_to_their_owner(tmp_path: Path) -> None:
    settings = CollectionSettings(model="models/tiny", index_type="hnsw", db_url="postgresql://u:secret@h/db")
    settings.save(tmp_path)
    assert CollectionSettings.load(tmp_path) == settings
    assert stat.S_IMODE((tmp_path / SETTINGS_FILE).stat().st_mode) == 0o600, "a database URL may hold a password"
    assert CollectionSettings.load(tmp_path / "built-by-the-cli") == CollectionSettings()


def test_unreadable_settings_say_which_file_to_fix(tmp_path: Path) -> None:
    (tmp_path / SETTINGS_FILE).write_text("{not json")
    with pytest.raises(ValueError, match=f"{SETTINGS_FILE} cannot be read .*fix or delete it"):
        CollectionSettings.load(tmp_path)
    (tmp_path / SETTINGS_FILE).write_text(json.dumps({"index_type": "kdtree"}))
    with pytest.raises(ValueError, match="Unknown index_type 'kdtree'. Valid: "):
        CollectionSettings.load(tmp_path)
