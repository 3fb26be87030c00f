"""Search fixtures: a tiny cross-encoder, a small index built with the tiny bi-encoder, and for
the HTTP API tests a read-only index with a TestClient over it."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from indexer import IndexConfig, build_index
from search.api import ApiConfig, create_app
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


@pytest.fixture(scope="module")
def served_index(tiny_model_dir, tmp_path_factory) -> Path:
    """The topic documents and the gardening minutes, indexed with the tiny model; read-only."""
    from tests.search.test_api import build, write_corpus

    root = tmp_path_factory.mktemp("api")
    index_dir = root / "idx"
    build(write_corpus(root / "corpus"), index_dir, str(tiny_model_dir))
    return index_dir


@pytest.fixture(scope="module")
def client(served_index, tiny_model_dir):
    config = ApiConfig(index_dir=served_index, rerank_model="none", similarity_model=str(tiny_model_dir))
    with TestClient(create_app(config)) as test_client:
        yield test_client
