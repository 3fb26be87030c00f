"""What a build did: the report `build_index` returns and the CLI prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from indexer.sources.documents import InputIssue
from indexer.store.records import CommitResult

# (done, total) as a build goes: passages embedded, or documents ingested.
ProgressCallback = Callable[[int, int], None]


@dataclass
class BuildReport:
    """What a build did; `passages_per_second` counts committed passages over the whole run."""

    index_dir: Path
    model: str
    documents_added: int = 0
    documents_updated: int = 0
    documents_removed: int = 0
    documents_unchanged: int = 0
    passages_committed: int = 0  # new passages this build committed, embedded or precomputed
    passages_embedded: int = 0  # of those, the ones the model embedded (0 for --embeddings)
    passages_removed: int = 0
    total_documents: int = 0
    total_passages: int = 0
    seconds: float = 0.0
    # The build's phases: reading (and extracting) the source, loading the model, embedding;
    # the rest of `seconds` is cutting passages and writing SQL, FAISS and BM25 (BM25 alone:
    # `bm25_seconds`).
    read_seconds: float = 0.0
    model_seconds: float = 0.0
    embed_seconds: float = 0.0
    bm25_seconds: float = 0.0
    commits: int = 0
    documents_committed: int = 0
    issues: list[InputIssue] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Input left out on purpose (each also among `warnings`): a second path to a file, the files a
    # tool wrote from others (`indexer.sources.generated`).
    left_out: list[InputIssue] = field(default_factory=list)
    # Documents indexed with a caveat (each also among `warnings`): PDF pages without a text layer, a
    # workbook's sheet that holds no table of text.
    caveats: list[InputIssue] = field(default_factory=list)
    vector_index: str = ""  # the committed FAISS index, e.g. "IVF1024,SQ8 (nprobe 16, recall@10 0.962)"
    notes: list[str] = field(default_factory=list)  # merges that retrained or changed the index type

    def add_commit(self, result: CommitResult) -> None:
        """Count one commit's figures into the report."""
        self.passages_removed += result.passages_removed
        self.total_documents = result.documents
        self.total_passages = result.passages
        self.bm25_seconds += result.bm25_seconds
        self.commits += int(result.wrote_files)
        self.vector_index = result.vector_index or self.vector_index
        if result.note:
            self.notes.append(result.note)

    @property
    def passages_per_second(self) -> float:
        return self.passages_committed / self.seconds if self.seconds > 0 else 0.0

    def _added(self) -> str:
        precomputed = self.passages_committed - self.passages_embedded
        if precomputed:
            return f"ingested {precomputed:,} precomputed vectors"
        rate = f" ({self.passages_embedded / self.embed_seconds:.1f} passages/s)" if self.embed_seconds > 0 else ""
        return f"embedded {self.passages_embedded:,} passages in {self.embed_seconds:.1f} s{rate}"

    def _phases(self) -> str:
        """Where the whole build's time went, so loading the model is not charged to embedding."""
        written = max(0.0, self.seconds - self.read_seconds - self.model_seconds - self.embed_seconds)
        return (f"{self.seconds:.1f} s in all: reading {self.read_seconds:.1f} s, loading the model "
                f"{self.model_seconds:.1f} s, embedding {self.embed_seconds:.1f} s, cutting and writing "
                f"{written:.1f} s")

    def summary(self) -> str:
        return (
            f"{self.total_documents:,} documents, {self.total_passages:,} passages in the index "
            f"(+{self.documents_added:,} new, ~{self.documents_updated:,} changed, "
            f"-{self.documents_removed:,} removed, {self.documents_unchanged:,} unchanged); "
            f"{self._added()}; {self._phases()}; BM25 index built in "
            f"{self.bm25_seconds:.1f} s; vector index {self.vector_index or 'unchanged'}; "
            f"{len(self.issues)} input issue(s), {len(self.warnings)} warning(s)"
            + "".join(f"\n  note: {note}" for note in self.notes)
        )
