"""`ModelLoad`: a model loaded now, in a background thread, or on first use.

The searcher loads its bi-encoder through it, and the app its reranker.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

# How a Searcher loads its bi-encoder; see `Searcher`.
MODEL_LOADING = ("eager", "background", "lazy")


class ModelLoad:
    """A model (the searcher's bi-encoder, the app's reranker) loaded now, in a background
    thread, or by the first `get`.

    Importing torch and sentence-transformers and loading a model take seconds on a small
    CPU, most of a restarted app's wait for its first answer. A load that
    fails raises its error from every `get`, so each search that needs the model says why.
    """

    def __init__(self, load: Callable[[], object], how: str) -> None:
        if how not in MODEL_LOADING:
            raise ValueError(f"Unknown model_loading {how!r}. Valid: {', '.join(MODEL_LOADING)}.")
        self._load = load
        self._model: object | None = None
        self._error: Exception | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()  # held by whichever thread loads
        self._background = how == "background"
        if how == "eager":
            self._model = load()  # raises here, as Searcher(...) always has
            self._done.set()
        elif self._background:
            threading.Thread(target=self._run, name="semsearch-model-load", daemon=True).start()

    def _run(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            try:
                self._model = self._load()
            except Exception as err:  # kept, and raised by every `get`
                self._error = err
            self._done.set()  # not after Ctrl-C in a lazy load: the next `get` loads again

    @property
    def loading(self) -> bool:
        """True while a background load runs: a search needing the model would wait for it."""
        return self._background and not self._done.is_set()

    @property
    def loaded(self) -> bool:
        """True once the model has loaded (and not failed)."""
        return self._done.is_set() and self._error is None

    def get(self, timeout: float | None = None) -> object:
        """The model, loaded in this thread if no other has started; waits at most `timeout`
        seconds for a load in progress, then raises TimeoutError."""
        if not self._done.is_set():
            if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
                raise TimeoutError(f"The model did not load within {timeout} s; wait longer.")
            self._lock.release()
            self._run()  # returns at once when the load that held the lock has finished
        if self._error is not None:
            raise self._error
        return self._model
