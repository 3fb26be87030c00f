"""Step one of a build: compare what the source holds with what the index stores. Pure.

Rules, each decided here and only here:
- a document whose id is stored with the same content hash is unchanged;
- a stored id with another hash is changed (its passages are re-embedded);
- a stored document of this build's source (`origin`) that the source no longer
  has is removed, unless pruning is off; documents another source added (the
  app's uploads, another folder) are never removed by this one;
- a stored document whose input was skipped this time (an unreadable file or
  folder, a file that turned invalid, a record that failed its checks: `Skipped`)
  is kept as stored, and listed in `kept` so the build warns: a file that is
  still there is never removed because it could not be read once;
- a document whose id is stored from another file (or another source) is
  replaced, and the plan lists it in `moved` so the build warns, naming both
  places: an id names one document, and the newest build of it wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from indexer.sources.documents import Document, InputIssue


@dataclass(frozen=True)
class StoredDocument:
    """What the index keeps of a document to plan the next build."""

    row_id: int
    content_hash: str
    origin: str
    source: str


@dataclass(frozen=True)
class Moved:
    """An id stored from one file that a build now reads from another."""

    doc_id: str
    stored_source: str
    stored_origin: str
    new_source: str
    new_line: int | None

    def __str__(self) -> str:
        new = f"{self.new_source}:{self.new_line}" if self.new_line is not None else self.new_source
        return (
            f"document id {self.doc_id!r} was indexed from {self.stored_source} "
            f"({self.stored_origin}) and is now replaced by the one in {new}; "
            "give one of them another id if both should stay"
        )


@dataclass(frozen=True)
class Skipped:
    """The inputs a read skipped, as the stored documents they stand for.

    A skipped file or folder (an issue without a line) stands for every document read from
    it or below it; a skipped record stands for its id when the reader knew it, else for
    every document of its file, since a record whose id is unknown could be any of them.
    """

    ids: frozenset[str] = frozenset()
    paths: frozenset[str] = frozenset()

    @classmethod
    def of(cls, issues: Iterable[InputIssue]) -> Skipped:
        ids: set[str] = set()
        paths: set[str] = set()
        for issue in issues:
            if not issue.retains_stored or issue.partial:
                continue
            if issue.doc_id is not None:
                ids.add(issue.doc_id)
            else:
                paths.add(issue.path)
        return cls(frozenset(ids), frozenset(paths))

    def covers(self, doc_id: str, source: str) -> bool:
        if doc_id in self.ids or source in self.paths:
            return True
        return any(source.startswith(path + "/") for path in self.paths if path not in ("", "."))


@dataclass(frozen=True)
class Plan:
    add: list[Document] = field(default_factory=list)
    change: list[Document] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # stored ids whose input was skipped: see Skipped

    @property
    def to_embed(self) -> list[Document]:
        """Documents whose passages must be (re-)embedded, added ones first."""
        return self.add + self.change

    @property
    def is_empty(self) -> bool:
        return not (self.add or self.change or self.remove)


def after_commit(changes: Plan, committed: Plan) -> Plan:
    """What `plan` gives again once `committed` (a chunk of `changes`, as `next_chunk` takes it,
    every document of which was stored) has committed and nothing else has: its documents are
    unchanged now, its removals done; the rest of `changes` is still to do."""
    done, removed = {doc.doc_id for doc in committed.to_embed}, set(committed.remove)
    return Plan(add=[d for d in changes.add if d.doc_id not in done],
                change=[d for d in changes.change if d.doc_id not in done],
                remove=[key for key in changes.remove if key not in removed],
                unchanged=changes.unchanged + [doc.doc_id for doc in committed.to_embed],
                moved=[m for m in changes.moved if m.doc_id not in done], kept=changes.kept)


def plan(
    existing: Mapping[str, StoredDocument],
    documents: Sequence[Document],
    origin: str,
    prune: bool = True,
    skipped: Skipped = Skipped(),
) -> Plan:
    """The changes that bring `existing` in line with `documents` read from `origin`.

    `documents` must have unique ids (the readers skip duplicates, naming both places).
    `skipped` names the inputs the read skipped: their stored documents are kept.
    """
    add: list[Document] = []
    change: list[Document] = []
    unchanged: list[str] = []
    moved: list[Moved] = []
    seen: set[str] = set()
    for doc in documents:
        if doc.doc_id in seen:
            raise ValueError(
                f"document id {doc.doc_id!r} appears twice in one build; the readers should have "
                "skipped the second copy."
            )
        seen.add(doc.doc_id)
        stored = existing.get(doc.doc_id)
        if stored is None:
            add.append(doc)
            continue
        same_place = stored.origin == origin and stored.source == doc.source
        if same_place and stored.content_hash == doc.content_hash():
            unchanged.append(doc.doc_id)
            continue
        change.append(doc)
        if not same_place:
            moved.append(Moved(doc.doc_id, stored.source, stored.origin, doc.source, doc.line))
    gone = sorted(key for key, stored in existing.items() if stored.origin == origin and key not in seen)
    kept = [key for key in gone if skipped.covers(key, existing[key].source)]
    kept_set = set(kept)
    remove = [key for key in gone if key not in kept_set] if prune else []
    return Plan(add=add, change=change, remove=remove, unchanged=unchanged, moved=moved,
                kept=kept if prune else [])
