"""What the app holds for its process: the index folder and reranker the environment names, and
the Searcher, background build and model preload, each created once per process.

SEMSEARCH_INDEX names the index folder (default indexes/demo), SEMSEARCH_RERANKER a
CrossEncoder folder or "none", SEMSEARCH_MODEL_LOADING "background" (the default) or "eager",
and SEMSEARCH_BUILD_SOURCE a source the app indexes in the background (`make run` sets it to
the demo corpus until the demo index is complete); relative paths are taken from the
repository root.
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st

from indexer import IndexConfig, settings
from indexer.embedding import load_bi_encoder
from search import Hit, Searcher
from search.model_load import ModelLoad
from search.rerank import Reranker, RerankerChoice, resolve_reranker
from ui.background_build import BackgroundBuild

DEFAULT_INDEX = settings.DEFAULT_INDEX


def index_dir() -> Path:
    """SEMSEARCH_INDEX, or indexes/demo (`indexer.settings`)."""
    return settings.index_dir()


def reranker_setting() -> str | None:
    """SEMSEARCH_RERANKER: a CrossEncoder folder or "none"; None when unset, for the shipped reranker."""
    return settings.reranker()


def reranker_choice() -> RerankerChoice:
    """The reranker the app offers and whether its toggle starts on: the CLI's and the eval's rule."""
    return resolve_reranker(None, reranker_setting())


def model_loading() -> str:
    """SEMSEARCH_MODEL_LOADING: "background" (the default), or "eager" to wait for the bi-encoder
    before the first answer, so every search runs in the mode asked."""
    return settings.model_loading()


class BackgroundReranker:
    """A cross-encoder loading in a thread: it imports torch, seconds on a small CPU, which the
    first searches should not wait for when reranking starts off. A search that reranks waits."""

    def __init__(self, choice: RerankerChoice) -> None:
        self._model = ModelLoad(choice.load, "background")

    def rerank(self, query: str, hits: list[Hit]) -> list[Hit]:
        return self._model.get().rerank(query, hits)  # type: ignore[attr-defined]


@st.cache_resource(show_spinner="Loading the index and the models…")
def load_searcher(folder: str, reranker: str | None, loading: str) -> Searcher:
    """One Searcher (and so one model and one copy of the vectors) per index folder per process.

    It offers the reranker even when it starts off, so the toggle can turn it on.
    A failed load raises and is not cached, so building the index and reloading
    the page is enough. The Searcher itself loads builds that commit later.
    """
    choice = resolve_reranker(None, reranker)
    offered: Reranker | None
    if loading == "background" and choice.path is not None and not choice.enabled:
        offered = BackgroundReranker(choice)
    else:  # reranking from the first search on: its errors show at once
        offered = choice.load()
    return Searcher(folder, reranker=offered, model_loading=loading, rerank_by_default=choice.enabled)


def searcher_for(folder: Path) -> Searcher:
    return load_searcher(str(folder), reranker_setting(), model_loading())


@st.cache_resource(show_spinner=False)
def start_background_build(source: str, folder: str, stamp: str | None) -> BackgroundBuild:
    """One background build per (source, index) per app process, started by the first page view."""
    config = IndexConfig(source=Path(source), index_dir=Path(folder), show_progress=False)
    return BackgroundBuild(config, Path(stamp) if stamp else None)


@st.cache_resource(show_spinner=False)
def preload_default_model() -> threading.Thread:
    """Load the bi-encoder while the first chunk is embedded, so the first search need not wait
    for it: the Searcher gets the same object from `load_bi_encoder`'s cache."""
    thread = threading.Thread(target=load_bi_encoder, name="semsearch-preload", daemon=True)
    thread.start()
    return thread


def background_build(folder: Path) -> BackgroundBuild | None:
    """The build SEMSEARCH_BUILD_SOURCE asks for (relative to the repository root), if any: only
    ever into SEMSEARCH_INDEX, whichever collection the page shows."""
    source = settings.build_source()
    if source is None or folder.resolve() != index_dir().resolve():
        return None
    return start_background_build(str(source), str(folder), settings.build_stamp())
