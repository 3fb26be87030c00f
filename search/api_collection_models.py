"""The HTTP API's bodies for collections and documents, and the limits of a write.

A write batch holds at most MAX_WRITE_DOCUMENTS documents and, like every request, at most
`MAX_BODY_BYTES` of JSON (413 above it): a client splits a larger upload into batches, each
committed whole before it is answered.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from indexer.sources.documents import MAX_ID_CHARS
from indexer.store import metadata_filter
from search.api_models import FILTER_REF, HAS_WORDS, LocationOut

# Documents in one POST /collections/{name}/documents (422 above it): one commit, one embedding batch.
MAX_WRITE_DOCUMENTS = 64
# Ids in one POST /collections/{name}/documents/delete.
MAX_DELETE_IDS = 1000
# Characters of a document's title; its text is bounded by the request body's size.
MAX_TITLE_CHARS = 1000
VectorIndexKind = Literal["auto", "flat", "ivf", "hnsw", "ivfpq"]
DocumentId = Field(min_length=1, max_length=MAX_ID_CHARS, pattern=HAS_WORDS,
                   description=f"the document's id, 1..{MAX_ID_CHARS} characters: a later write of the "
                   "same id replaces it")


class CollectionSettingsIn(BaseModel):
    """PUT /collections/{name}: how the collection is built. `{}` takes every default."""

    model_config = ConfigDict(strict=True, extra="forbid")

    model: str | None = Field(None, min_length=1, max_length=1024, description=(
        "the bi-encoder: a SentenceTransformer folder on the server, or 'default' (all-MiniLM-L6-v2); "
        "default: the service's --default-model"))
    index_type: VectorIndexKind | None = Field(None, description=(
        "the FAISS index type (indexer --vector-index): auto picks by size; default auto"))
    database_url: str | None = Field(None, min_length=1, max_length=2048, description=(
        "a SQLAlchemy URL for the collection's rows (e.g. PostgreSQL); default: a SQLite file in its folder"))


class CollectionStatsOut(BaseModel):
    documents: int
    passages: int
    model_label: str
    index_type: str
    build_id: str
    built_at: dt.datetime


class CollectionOut(BaseModel):
    name: str
    state: Literal["ready", "loading", "empty", "unreadable"] = Field(description=(
        "ready: searchable; loading: opening; empty: created, no document written yet; unreadable: see detail"))
    detail: str | None = Field(description="why it is not ready, and the fix")
    model: str | None = Field(description="the model it was created with (null: the service's default)")
    stats: CollectionStatsOut | None = Field(description="the figures of its newest build; null before one")


class CollectionsResponse(BaseModel):
    collections: list[CollectionOut]


class DocumentIn(BaseModel):
    """One document to write: added when its id is new, replaced when its title, text or metadata
    changed, left alone when they did not (as `python -m indexer build` treats a source file)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    id: str = DocumentId
    title: str = Field("", max_length=MAX_TITLE_CHARS, description=f"0..{MAX_TITLE_CHARS} characters")
    text: str = Field(min_length=1, pattern=HAS_WORDS, description="the document's text; cut into passages")
    metadata: dict[str, Any] = Field(default_factory=dict, description=(
        "JSON values to filter on (keys starting with '_' are reserved)"))


class DocumentsRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_WRITE_DOCUMENTS, description=(
        f"1..{MAX_WRITE_DOCUMENTS} documents with distinct ids, committed together"))


def _checked(value: dict[str, Any]) -> dict[str, Any]:
    metadata_filter.parse_filter(value)  # a FilterError (a ValueError) is a 422 naming the fix
    return value


# A required filter: its $ref inside allOf, since pydantic resolves a bare $ref that has a sibling
# (the field's title), and the filter's schema is not one of its own (`filter_components`).
RequiredFilter = Annotated[dict[str, Any], WithJsonSchema({"allOf": [{"$ref": FILTER_REF}]}),
                           AfterValidator(_checked)]


class DeleteByIds(BaseModel):
    """POST /collections/{name}/documents/delete by ids."""

    model_config = ConfigDict(strict=True, extra="forbid")

    ids: list[str] = Field(min_length=1, max_length=MAX_DELETE_IDS, description=f"1..{MAX_DELETE_IDS} document ids")


class DeleteByFilter(BaseModel):
    """POST /collections/{name}/documents/delete of every document a metadata filter matches."""

    model_config = ConfigDict(strict=True, extra="forbid")

    filter: RequiredFilter = Field(description="delete every document whose metadata matches")


# One of the two: `{"ids": [...]}` or `{"filter": {...}}`.
DeleteDocumentsRequest = DeleteByIds | DeleteByFilter


class WriteResponse(BaseModel):
    collection: str
    build_id: str = Field(description="a committed build holding this write: searches from it on see it")
    added: int = Field(description="documents added")
    updated: int = Field(description="documents replaced (their text, title or metadata changed)")
    unchanged: int = Field(description="documents already stored as sent: left alone")
    deleted: int = Field(description="documents deleted")
    not_found: list[str] = Field(description="ids asked to delete that the collection does not hold")
    skipped: list[str] = Field(description="documents not written, each with the reason (no text the model reads)")


class PassageOut(BaseModel):
    passage_id: int
    text: str
    start_char: int
    end_char: int
    location: LocationOut


class DocumentOut(BaseModel):
    id: str
    title: str
    text: str
    metadata: dict[str, Any]
    source: str = Field(description="where it came from: 'api' for documents written over HTTP, else its file")
    passages: list[PassageOut] = Field(description="its passages in order, as searches return them")
