"""What the document routes answer: a collection's documents written, deleted and read back.

Each function runs in a worker thread (the routes hand it to `anyio.to_thread`), never in the
event loop, so searches and /health keep answering while a batch embeds. Writes to one
collection queue on its `write_lock`, for at most `wait_seconds` (then a 503 with
Retry-After), before `api_writes` takes the indexer's own locks.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

from indexer.encoding import choose_encoding
from indexer.errors import BadInputError, IndexerError, IndexMismatchError
from indexer.model_spec import ModelSpec
from indexer.store.metadata_filter import parse_filter
from search.api_collection_models import (
    DeleteByIds,
    DeleteDocumentsRequest,
    DocumentOut,
    DocumentsRequest,
    PassageOut,
    WriteResponse,
)
from search.api_collections import Collection
from search.api_errors import ApiError
from search.api_models import LocationOut
from search.api_writes import (
    WriteBusy,
    WriteOutcome,
    WriteTarget,
    as_documents,
    matching_ids,
    remove_documents,
    upsert,
)
from search.shared_models import SharedModels


def busy(name: str, seconds: float, why: str) -> ApiError:
    return ApiError(503, "collection_busy", f"Another build is writing collection {name!r} and held its lock "
                    f"for the {seconds:g} s a write waits ({why}). Nothing of this request was written; "
                    "send it again after Retry-After seconds.", {"Retry-After": str(max(1, math.ceil(seconds)))})


@contextlib.contextmanager
def write_turn(collection: Collection, wait_seconds: float) -> Iterator[None]:
    """This process's turn to write `collection`, waited for up to `wait_seconds`."""
    if not collection.write_lock.acquire(timeout=wait_seconds):
        raise busy(collection.name, wait_seconds, "another request of this service")
    try:
        yield
    finally:
        collection.write_lock.release()


def write_target(collection: Collection, models: SharedModels, default_model: str | None) -> WriteTarget:
    """The model of the collection's committed build, else the one it was created with."""
    settings = collection.settings
    searcher = collection.service.opened
    try:
        if searcher is not None:
            spec = searcher.index.model_spec
            model = searcher.model
        else:
            spec = ModelSpec.resolve(settings.model or default_model)
            model = models.get(spec, choose_encoding())  # what the new collection's first build picks
    except (OSError, ValueError) as err:
        raise ApiError(409, "model_unavailable", collection.service.public(
            f"Collection {collection.name!r} cannot load its model: {err}")) from err
    return WriteTarget(collection.folder, settings.db_url, settings.vector_index, spec, model)


def committed(collection: Collection, outcome: WriteOutcome) -> WriteResponse:
    """The answer to a committed write, once the collection serves a build that holds it."""
    build_id = collection.service.after_write()
    return WriteResponse(collection=collection.name, build_id=build_id, added=outcome.added,
                         updated=outcome.updated, unchanged=outcome.unchanged, deleted=outcome.deleted,
                         not_found=outcome.not_found, skipped=outcome.skipped)


@contextlib.contextmanager
def write_errors(collection: Collection, wait_seconds: float) -> Iterator[None]:
    """The indexer's errors as the API's: busy 503, bad input 400, a model mismatch 409."""
    try:
        yield
    except WriteBusy as err:
        raise busy(collection.name, wait_seconds, "another process") from err
    except IndexMismatchError as err:
        raise ApiError(409, "index_mismatch", collection.service.public(str(err))) from err
    except BadInputError as err:
        raise ApiError(400, "bad_request", collection.service.public(str(err))) from err
    except IndexerError as err:
        raise collection.service.unavailable(err) from err


def write_documents(collection: Collection, request: DocumentsRequest, models: SharedModels,
                    default_model: str | None, wait_seconds: float) -> WriteResponse:
    """Insert new documents, replace changed ones, leave unchanged ones alone; one commit."""
    try:
        documents = as_documents([(d.id, d.title, d.text, d.metadata) for d in request.documents])
    except ValueError as err:
        raise ApiError(400, "bad_request", str(err)) from err
    with write_turn(collection, wait_seconds), write_errors(collection, wait_seconds):
        target = write_target(collection, models, default_model)
        return committed(collection, upsert(target, documents, wait_seconds))


def delete_documents(collection: Collection, ids: list[str], wait_seconds: float) -> WriteResponse:
    """Delete the documents `ids` names; the ones not stored come back as `not_found`."""
    with write_turn(collection, wait_seconds), write_errors(collection, wait_seconds):
        outcome = remove_documents(collection.folder, collection.settings.db_url, ids, wait_seconds)
        return committed(collection, outcome)


def delete_request(collection: Collection, request: DeleteDocumentsRequest, wait_seconds: float) -> WriteResponse:
    """POST .../documents/delete: by ids, or every committed document that the filter matches."""
    if isinstance(request, DeleteByIds):
        return delete_documents(collection, request.ids, wait_seconds)
    searcher = collection.service.opened
    if searcher is None:  # nothing committed: nothing matches
        return WriteResponse(collection=collection.name, build_id="", added=0, updated=0, unchanged=0,
                             deleted=0, not_found=[], skipped=[])
    flt = parse_filter(request.filter)
    try:
        ids = matching_ids(searcher.index, flt) if flt is not None else []
    except IndexerError as err:
        raise collection.service.unavailable(err) from err
    return delete_documents(collection, ids, wait_seconds) if ids else committed(collection, WriteOutcome())


def read_document(collection: Collection, doc_id: str) -> DocumentOut:
    """The committed document `doc_id` with its passages; 404 when the collection has none such."""
    searcher = collection.service.opened
    try:
        found = None if searcher is None else searcher.index.document(doc_id)
    except IndexerError as err:
        raise collection.service.unavailable(err) from err
    if found is None:
        raise ApiError(404, "no_document", f"Collection {collection.name!r} holds no document {doc_id[:200]!r}.")
    return DocumentOut(
        id=found.doc_id, title=found.title, text=found.text, metadata=found.metadata, source=found.source,
        passages=[PassageOut(passage_id=p.passage_id, text=p.text, start_char=p.start_char, end_char=p.end_char,
                             location=LocationOut(**p.location.to_dict())) for p in found.passages])


def write_counts(outcome: WriteResponse) -> dict[str, int]:
    """The documents a write counted into `semsearch_writes_total`, by op."""
    return {"added": outcome.added, "updated": outcome.updated, "unchanged": outcome.unchanged,
            "deleted": outcome.deleted}
