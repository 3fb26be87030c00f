"""Search fixtures: a tiny cross-encoder, and a small index built with the tiny bi-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexer import IndexConfig, build_index
from tests.search.helpers import CODE_DOC, build_tiny_cross_encoder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory) -> str:
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny_ce"))


@pytest.fixture()
def tiny_index(topic_corpus, tmp_path, tiny_model) -> Path:
    """The four topic documents plus the gardening minutes, indexed with the tiny model."""
    (topic_corpus / "minutes.txt").write_text(CODE_DOC, encoding="utf-8")
    index_dir = tmp_path / "tiny_idx"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    return index_dir
