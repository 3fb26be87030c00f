"""`repair_index`: rebuild an index's derived files (vectors, BM25) from its SQL rows.

The rows hold every passage's text, so a damaged or lost file never needs the
original source; only a changed model makes it re-embed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.errors import IndexMismatchError, IndexNotFoundError, IndexUnreadableError
from indexer.store.faiss_store import VectorStore
from indexer.index import Index
from indexer.model_spec import ModelSpec
from indexer.sources.passage_text import bi_encoder_input
from indexer.store.manifest import read_manifest
from indexer.store.records import BuildMeta, repair_command


@dataclass(frozen=True)
class RepairReport:
    index_dir: Path
    vectors_reembedded: int
    bm25_rebuilt: bool
    problems: list[str]
    manifest_rewritten: bool = False

    def summary(self) -> str:
        if not self.problems:
            return f"{self.index_dir}: nothing to repair; the vectors and BM25 match the stored rows."
        done = ["rewrote index.json from the database"] if self.manifest_rewritten else []
        done += [f"re-embedded {self.vectors_reembedded} passages"] if self.vectors_reembedded else []
        done += ["rebuilt BM25"] if self.bm25_rebuilt else []
        return f"{self.index_dir}: found {'; '.join(self.problems)}; {', '.join(done)}."


def repair_index(
    index_dir: Path | str,
    db_url: str | None = None,
    reembed: bool = False,
    batch_size: int = 64,
    show_progress: bool = True,
) -> RepairReport:
    """Rebuild damaged or missing derived files from the SQL rows, which hold every passage.

    BM25 is always rebuilt when the commit writes; the vectors are re-embedded only when
    their file is damaged, or when `reembed` asks (the model's files changed: the message
    that refuses such an index says to pass it).
    """
    started = time.perf_counter()
    index = Index.create(index_dir, db_url)
    lost = read_manifest(index.layout.manifest) is None  # the transaction recovers it from the rows
    problems: list[str] = [f"a missing or unreadable {index.layout.manifest.name}"] if lost else []
    try:
        with index.transaction() as tx:
            info = tx.info
            if info is None:
                raise IndexNotFoundError(
                    f"No committed index in {index.index_dir} to repair. Build one with: "
                    f"python -m indexer build --source PATH --index {index.index_dir}"
                )
            spec = ModelSpec.resolve(info.model)
            if spec.fingerprint() != info.model_fingerprint:
                if not reembed:
                    raise IndexMismatchError(
                        f"The model files in {spec.path} changed since the index was built. Pass "
                        f"--reembed to re-embed every stored passage with the model now there: "
                        f"{repair_command(index.index_dir)} --reembed"
                    )
                problems.append("the model's files changed")
            vectors: VectorStore | None
            try:
                vectors = tx.committed_vectors()
            except (IndexUnreadableError, FileNotFoundError) as err:
                problems.append(f"damaged vectors ({err})".split(" Its text is safe")[0])
                vectors = None
            if not tx.committed_bm25_ok():
                problems.append("a damaged or missing BM25 folder")
            if reembed and "the model's files changed" not in problems:
                problems.append("re-embedding asked for")
            if problems == [] or (lost and len(problems) == 1):
                tx.keep_committed()
                return RepairReport(index.index_dir, 0, False, problems, manifest_rewritten=lost)
            model = load_bi_encoder(spec)
            meta = BuildMeta(spec, embedding_dimension(model), info.passage_tokens,
                             info.overlap_tokens, info.embed_titles, started)
            reembedded = 0
            if vectors is None or reembed:
                vectors = VectorStore.create(meta.dimension)
                bar = tqdm(total=info.passages, unit="passage", desc="re-embedding",
                           disable=not show_progress, dynamic_ncols=True)
                for ids, titles, texts in tx.stored_passages():
                    inputs = [bi_encoder_input(t, x, model, info.embed_titles)
                              for t, x in zip(titles, texts, strict=True)]
                    vectors.add(ids, encode_texts(model, inputs, batch_size=batch_size))
                    reembedded += len(ids)
                    bar.update(len(ids))
                bar.close()
            tx.replace_vectors(vectors, meta)
    finally:
        index.close()
    return RepairReport(index.index_dir, reembedded, True, problems, manifest_rewritten=lost)
