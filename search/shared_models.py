"""`SharedModels`: the bi-encoders of a service with many collections, loaded once per model.

Collections built with the same model (the same id and the same files, by fingerprint) and encoding share one
loaded copy: a service of twenty collections on the default model holds it once in memory, not
twenty times, and a new collection on it opens without loading anything.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from indexer.encoding import FP32
from indexer.model_spec import ModelSpec

if TYPE_CHECKING:
    from search.searcher import Searcher


class SharedModels:
    """Loaded bi-encoders by (model id, fingerprint, encoding); each loaded by the first thread that asks."""

    def __init__(self) -> None:
        self._models: dict[tuple[str, str, str], Any] = {}
        self._loading: dict[tuple[str, str, str], threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, spec: ModelSpec, encoding: str = FP32) -> Any:
        """The loaded bi-encoder of `spec` computing as `encoding`, loading it if no collection has yet."""
        from indexer.embedding import load_bi_encoder

        key = (spec.id, spec.fingerprint(), encoding)
        with self._lock:
            lock = self._loading.setdefault(key, threading.Lock())
        with lock:  # one load per model, while other models load beside it
            model = self._models.get(key)
            if model is None:
                model = load_bi_encoder(spec, encoding=encoding)
                self._models[key] = model
            return model

    def attach(self, searcher: Searcher) -> None:
        """Give `searcher` (opened with model_loading="lazy") the shared copy of its index's model,
        checked against the index as the searcher's own load would check it."""
        from indexer.embedding import embedding_dimension

        spec = searcher.index.model_spec
        searcher.index.check_model(spec)
        model = self.get(spec, searcher.index.info.vector_encoding)
        searcher.index.check_dimension(embedding_dimension(model))
        searcher.model = model

    @property
    def loaded(self) -> int:
        """How many distinct models are loaded."""
        return len(self._models)
