"""Uploaded files into the index: saved under `<index_dir>/uploads/`, then indexed by `build_index`.

The uploads folder is an ordinary indexer source built with `prune=False`, so
documents from the index's original source stay, and re-uploading a file of
the same name updates its document instead of adding a second one. The app indexes
it in a child process (`start_upload`, `ui.background_build`), so searching goes on
while it embeds; `index_uploads` does the same in the caller's process.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from indexer import BadInputError, IndexConfig, build_index
from indexer.build.collections import CollectionSettings
from indexer.layout import IndexLayout
from indexer.sources.readers import RECORD_SUFFIXES, content_name
from ui.background_build import BackgroundBuild, BuildCounts, BuildStatus
from ui.csv_columns import CsvMapping, apply_mapping

# The longest file name (in bytes) that ext4, XFS, APFS and NTFS all accept.
MAX_NAME_BYTES = 255
# The indexer tells text by content, so the uploader accepts any file name (None: no filter).
ACCEPTED_TYPES: list[str] | None = None

ProgressCallback = Callable[[int, int], None]


@dataclass
class UploadResult:
    """What one batch of uploads did; `issues` (skipped), `left_out` (files a tool wrote from
    others, or their sources: `indexer.sources.generated`) and `caveats` (files indexed with a
    warning: pages without text, a workbook's sheet left out) name only this batch's files."""

    report: BuildCounts
    saved: list[str] = field(default_factory=list)
    issues: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    left_out_files: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)


def uploads_dir(index_dir: Path) -> Path:
    return IndexLayout(Path(index_dir)).uploads


def safe_upload_name(name: str) -> str:
    """The name to save an upload under: no folders (a browser may send a path), no leading dot,
    and at most `MAX_NAME_BYTES` bytes of UTF-8.

    The indexer skips hidden files, so ".notes.txt" is saved as "notes.txt".
    """
    base = PurePosixPath(name.replace("\\", "/")).name.lstrip(".").strip()
    if not base:
        raise ValueError(
            f"The uploaded file name {name!r} has no usable name; rename the file and upload it again."
        )
    return fit_name(base)


def fit_name(name: str, limit: int = MAX_NAME_BYTES) -> str:
    """`name`, or a shortened one that fits `limit` UTF-8 bytes, which file systems allow a name.

    A shortened name keeps its extension (the indexer reads files by it), is cut
    between characters, never inside one, and ends in a hash of the whole name,
    so two long names that begin alike stay two files, and uploading the same
    file again replaces it.
    """
    if len(name.encode("utf-8")) <= limit:
        return name
    stem, suffix = name, ""
    if "." in name.strip("."):
        stem, _, extension = name.rpartition(".")
        suffix = "." + extension
    if len(suffix.encode("utf-8")) > limit // 4:  # not a real extension: a dot inside a long name
        stem, suffix = name, ""
    tag = "-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:10]
    room = limit - len(tag.encode("utf-8")) - len(suffix.encode("utf-8"))
    cut = stem.encode("utf-8")[:room].decode("utf-8", errors="ignore").rstrip(" .")
    return f"{cut}{tag}{suffix}"


def save_uploads(files: Iterable[tuple[str, bytes]], folder: Path) -> list[str]:
    """Write each (name, bytes) pair into `folder`, replacing a file of the same name.

    Never through a symbolic link: a link planted in the uploads folder (or the folder itself
    being one) would have the app overwrite whatever it points at, so either is refused with a
    ValueError before anything is written, and a link that appears meanwhile fails the write
    (O_NOFOLLOW). The files of one batch share one modification time, so that of a source and
    the document made from it uploaded together (`paper.tex` and `paper.pdf`) the build keeps
    the document whichever came first (`indexer.sources.generated`).
    """
    files = [(safe_upload_name(name), data) for name, data in files]
    if folder.is_symlink():
        raise ValueError(f"{folder} is a symbolic link; the app does not write uploads through links. "
                         "Replace it with a real folder (or remove it) and upload again.")
    links = sorted({target for target, _ in files if (folder / target).is_symlink()})
    if links:
        raise ValueError(f"{folder / links[0]} is a symbolic link; the app does not write uploads through "
                         "links. Remove it, or rename the file you upload, and upload again.")
    folder.mkdir(parents=True, exist_ok=True)
    saved: list[str] = []
    now = time.time_ns()
    for target, data in files:
        descriptor = os.open(folder / target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(descriptor, "wb") as fh:
            fh.write(data)
            fh.flush()  # written before the time is set, so that the write does not move it
            os.utime(fh.fileno(), ns=(now, now))
        if target not in saved:
            saved.append(target)
    return saved


@dataclass(frozen=True)
class PreparedUploads:
    """A batch saved into the uploads folder: the build that indexes it, and the names saved."""

    config: IndexConfig
    saved: list[str]


def prepare_uploads(
    files: Iterable[tuple[str, bytes]],
    index_dir: Path,
    csv_mappings: Mapping[str, CsvMapping] | None = None,
    settings: CollectionSettings | None = None,
) -> PreparedUploads:
    """Save the uploads, ready to index the uploads folder through the same code path as the CLI.

    `csv_mappings` names, per uploaded CSV (by its name as uploaded), the columns that hold
    its text, title and id; such a file is saved with its header renamed to the columns every
    build of the uploads folder reads (`ui.csv_columns.apply_mapping`), so later uploads read
    it the same way. `settings` are the collection's (model, vector index, database), for one
    created before its first document. A mapping that does not fit its file raises ValueError before anything is
    saved, and so does an upload without a usable name.
    """
    index_dir = Path(index_dir)
    folder = uploads_dir(index_dir)
    mappings = csv_mappings or {}
    latest = dict(files)  # two files of one name: the last is saved, as `save_uploads` would
    files = [(name, apply_mapping(data, mappings[name], name) if name in mappings else data)
             for name, data in latest.items()]
    saved = save_uploads(files, folder)
    if not saved:
        raise ValueError(
            "No files were uploaded; choose one or more text files (.txt, .md, a README, ...), .jsonl or .csv files."
        )
    settings = settings or CollectionSettings()
    config = IndexConfig(source=folder, index_dir=index_dir, prune=False, show_progress=False,
                         model=settings.model, db_url=settings.db_url, vector_index=settings.vector_index)
    return PreparedUploads(config, saved)


def finish_uploads(prepared: PreparedUploads, counts: BuildCounts) -> UploadResult:
    """What the build did for this batch. A single-document file (any text file, or a binary one)
    with an issue was skipped as a whole, so it is deleted again rather than warned about with
    every later upload; a .jsonl or .csv stays, as its other records were indexed, and so does an
    mbox or a JSON export whose issues are about records in it (a line). A file left out on purpose
    (minified data, a LaTeX source uploaded with its PDF) is deleted too."""
    batch = set(prepared.saved)
    issues = [(path, text) for path, text in counts.issues if path in batch]
    left_out = [(batch.intersection(files), note) for files, note in counts.left_out if batch.intersection(files)]
    kept = set(counts.files_with_records)  # an mbox or JSON export with one bad record: the rest was indexed
    _forget_whole_file_uploads(prepared.config.source, [path for path, _ in issues if path not in kept]
                               + [name for files, _ in left_out for name in files])
    return UploadResult(report=counts, saved=prepared.saved, issues=[text for _, text in issues],
                        left_out=[note for _, note in left_out],
                        left_out_files=sorted(name for files, _ in left_out for name in files),
                        caveats=[text for path, text in counts.caveats if path in batch])


def index_uploads(
    files: Iterable[tuple[str, bytes]],
    index_dir: Path,
    progress: ProgressCallback | None = None,
    csv_mappings: Mapping[str, CsvMapping] | None = None,
) -> UploadResult:
    """Save the uploads (`prepare_uploads`) and index them in this process. Raises what
    `build_index` raises (`IndexerError`, `ValueError`) for an index it cannot write; a batch
    with nothing to index (`BadInputError`) is deleted again, as nothing of it was indexed."""
    prepared = prepare_uploads(files, index_dir, csv_mappings)
    try:
        report = build_index(prepared.config, progress=progress)
    except BadInputError:
        _forget_whole_file_uploads(prepared.config.source, prepared.saved)
        raise
    return finish_uploads(prepared, BuildCounts.of(report))


class UploadBuild:
    """A batch of uploads indexing in a child process (`ui.background_build`): the page keeps
    answering searches meanwhile, and reads the result when the child is done."""

    def __init__(self, prepared: PreparedUploads) -> None:
        self.prepared = prepared
        self.target = prepared.config.index_dir
        self.build = BackgroundBuild(prepared.config)
        self._result: UploadResult | None = None
        self._finished = False

    def status(self) -> BuildStatus:
        return self.build.status()

    def result(self) -> UploadResult | None:
        """What the batch added, once the build has ended well; None while it runs or after an error
        (`status().error` says why; a batch with nothing to index is deleted again)."""
        status = self.status()
        if status.running or self._finished:
            return self._result
        self._finished = True
        if status.error_kind == BadInputError.__name__:
            _forget_whole_file_uploads(self.prepared.config.source, self.prepared.saved)
        if status.counts is not None:
            self._result = finish_uploads(self.prepared, status.counts)
        return self._result


def start_upload(
    files: Iterable[tuple[str, bytes]],
    index_dir: Path,
    csv_mappings: Mapping[str, CsvMapping] | None = None,
    settings: CollectionSettings | None = None,
) -> UploadBuild:
    """Save the uploads and start indexing them into `index_dir` in the background; raises
    ValueError as `prepare_uploads` does, before anything is indexed."""
    return UploadBuild(prepare_uploads(files, index_dir, csv_mappings, settings))


def _forget_whole_file_uploads(folder: Path, names: Iterable[str]) -> None:
    """Delete the named uploads that are one document each (not .jsonl/.csv, whose other
    records were indexed), so a skipped file is not reported again with every later upload."""
    for name in names:
        if not content_name(Path(name)).lower().endswith(RECORD_SUFFIXES):
            (folder / name).unlink(missing_ok=True)
