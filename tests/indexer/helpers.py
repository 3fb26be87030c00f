"""Shared checks for the index reliability tests: id sets of the three stores, tiny models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sqlalchemy import select

from indexer import Index, IndexConfig
from indexer.build.pipeline import embedded_title
from indexer.embedding import encode_texts
from indexer.index import IndexSnapshot, PassageRecord
from indexer.sources.passage_text import passage_text
from indexer.store.schema import PassageRow
from indexer.store.sql_store import make_engine


def config(source: Path, index_dir: Path, model: str, **kw) -> IndexConfig:
    return IndexConfig(source=source, index_dir=index_dir, model=model, show_progress=False, **kw)


def write_corpus(folder: Path, docs: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in docs.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)  # "sub/b.txt": in a subfolder
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def sql_passage_ids(db_url: str) -> set[int]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return set(conn.scalars(select(PassageRow.id)))
    finally:
        engine.dispose()


def assert_consistent(index_dir: Path, db_url: str | None = None) -> set[int]:
    """Open the committed index and check that FAISS, BM25 and SQL hold the same passage ids
    (as sets, not merely as counts); return them."""
    with Index.open(index_dir, db_url, use_gpu=False) as index:
        snap = index.snapshot()
        faiss_ids = set(snap.vectors.ids().tolist())
        bm25_ids = set(snap.bm25.ids().tolist()) if snap.bm25 is not None else set()
        sql_ids = sql_passage_ids(index.db_url)
    assert faiss_ids == sql_ids, f"FAISS {sorted(faiss_ids)} != SQL {sorted(sql_ids)}"
    assert bm25_ids == sql_ids, f"BM25 {sorted(bm25_ids)} != SQL {sorted(sql_ids)}"
    assert len(faiss_ids) == snap.vectors.ntotal, "FAISS holds an id twice"
    return sql_ids


def stored_vector(snapshot: IndexSnapshot, passage_id: int) -> np.ndarray:
    """The vector a snapshot holds for one passage id (IndexIDMap2 reconstructs by id)."""
    return snapshot.vectors.vector(int(passage_id))


def embedding_of(model, record: PassageRecord) -> np.ndarray:
    """What the indexer embeds for a stored passage (or a search hit): `passage_text(title, text)`."""
    return encode_texts(model, [passage_text(embedded_title(record.title, model), record.text)])[0]


def make_tiny_model(out: Path, seed: int, hidden: int = 32) -> Path:
    """A tiny SentenceTransformer as tests/conftest.py builds it, with another seed or width."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel, BertTokenizer

    from indexer.model_spec import default_model_path

    torch.manual_seed(seed)
    bert_dir = out.parent / f"{out.name}_bert"
    tokenizer = BertTokenizer.from_pretrained(str(default_model_path()))
    bert = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=2,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    BertModel(bert).save_pretrained(bert_dir)
    tokenizer.save_pretrained(bert_dir)
    transformer = Transformer(str(bert_dir), max_seq_length=128)
    model = SentenceTransformer(modules=[transformer, Pooling(hidden, "mean"), Normalize()], device="cpu")
    model.save(str(out))
    return out
