"""Load a SentenceTransformer from either a SentenceTransformer folder or a bare BERT folder."""

from __future__ import annotations

import logging
from pathlib import Path

from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

from training.config import POOLINGS, resolve_base

logger = logging.getLogger(__name__)


def is_sentence_transformer_folder(path: Path | str) -> bool:
    return (Path(path) / "modules.json").is_file()


def load_sentence_model(base: str | Path, pooling: str | None = None, max_seq_length: int | None = None) -> SentenceTransformer:
    """A SentenceTransformer whose pooling is `pooling` (or the folder's own, else mean); `base` as `resolve_base`."""
    if pooling is not None and pooling not in POOLINGS:
        raise ValueError(f"Unknown pooling {pooling!r}. Valid: {', '.join(POOLINGS)}.")
    path = resolve_base(base)
    if is_sentence_transformer_folder(path):
        model = SentenceTransformer(str(path), device="cpu")
        if pooling is not None:
            modules = list(model.children())
            dimension = modules[0].get_embedding_dimension()
            rest = [module for module in modules[1:] if not isinstance(module, Pooling)]
            model = SentenceTransformer(modules=[modules[0], Pooling(dimension, pooling_mode=pooling), *rest], device="cpu")
            logger.info("replaced the pooling of %s with %s pooling", path, pooling)
    elif (path / "config.json").is_file():
        transformer = Transformer(str(path), max_seq_length=max_seq_length)
        mode = pooling or "mean"
        model = SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=mode)], device="cpu"
        )
        logger.info("built a SentenceTransformer from BERT folder %s with %s pooling", path, mode)
    else:
        raise ValueError(
            f"Base model {str(path)!r} is neither a SentenceTransformer folder (modules.json) nor a BERT "
            "folder (config.json). Pass a local folder, e.g. the output of `python -m training pretrain`."
        )
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model
