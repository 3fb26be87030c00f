"""SQL schema of an index: documents, their passages, and one row of index info.

Row ids are never reused (SQLite AUTOINCREMENT; PostgreSQL sequences never go
back). A passage's id is its FAISS id, so a searcher still holding an older
build's vectors can only ever read that passage's own text, or nothing once
it is deleted, never another passage that took over its id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from indexer.sources.documents import MAX_ID_CHARS

# Bumped when the tables change shape; an index of another format must be rebuilt.
SCHEMA_FORMAT = 2


class Base(DeclarativeBase):
    pass


class DocumentRow(Base):
    """`origin` is the source a build read the document from (a folder or file, resolved), so a
    build prunes only documents of its own source; `source` is the file within it."""

    __tablename__ = "semsearch_documents"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    doc_key: Mapped[str] = mapped_column(String(MAX_ID_CHARS), unique=True, index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    origin: Mapped[str] = mapped_column(Text, default="", index=True)
    source: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    # JSONB on PostgreSQL, with a GIN index (`sql_store.create_schema`), so containment and key
    # queries on metadata (`metadata @> '{"tag": "billing"}'`) use an index; JSON text on SQLite,
    # read with its JSON functions.
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON().with_variant(JSONB(), "postgresql"),
                                                 default=dict)
    indexed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))

    passages: Mapped[list[PassageRow]] = relationship(
        back_populates="document", cascade="all, delete-orphan", passive_deletes=True
    )


class PassageRow(Base):
    """A passage's primary key is its FAISS id and its BM25 id."""

    __tablename__ = "semsearch_passages"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("semsearch_documents.id", ondelete="CASCADE"), index=True
    )
    ordinal: Mapped[int] = mapped_column(Integer)
    start_char: Mapped[int] = mapped_column(Integer)
    end_char: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    # `passage_checksum(document title, text)`, written with the row; None in rows of an index
    # built before checksums (`repair` fills them in).
    text_hash: Mapped[str | None] = mapped_column(String(16), nullable=True, default=None)
    # Where the passage is in its document (`indexer.sources.outline.Location`): its first and last
    # page (PDF) and its heading path joined by " › "; None where the document has no pages or
    # headings, and in rows of an index built before locations (added in place by
    # `sql_store.create_schema`).
    page_first: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    page_last: Mapped[int | None] = mapped_column(Integer, nullable=True, default=None)
    section: Mapped[str | None] = mapped_column(Text, nullable=True, default=None)

    document: Mapped[DocumentRow] = relationship(back_populates="passages")


def passage_checksum(title: str, text: str) -> str:
    """16 hex digits of BLAKE2b over a passage's document title and its text: what a hit shows.
    A read that finds another value knows the row was altered since it was written."""
    return hashlib.blake2b(f"{title}\x1f{text}".encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class IndexInfoRow(Base):
    """A single row (id 1): which index owns the tables, which model made the vectors, and which
    files hold the committed build, with the digests that prove they are the ones committed.

    `owner` is the index id in the folder's manifest: a second folder pointed at the same
    database is refused instead of overwriting this one's rows.
    """

    __tablename__ = "semsearch_index_info"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    format: Mapped[int] = mapped_column(Integer)
    owner: Mapped[str] = mapped_column(String(64))
    owner_path: Mapped[str] = mapped_column(Text)
    build_id: Mapped[str] = mapped_column(String(64))
    model: Mapped[str] = mapped_column(Text)
    model_fingerprint: Mapped[str] = mapped_column(String(64))
    dimension: Mapped[int] = mapped_column(Integer)
    vector_file: Mapped[str] = mapped_column(String(255))
    vector_digest: Mapped[str] = mapped_column(String(64))
    bm25_dir: Mapped[str] = mapped_column(String(255))
    bm25_digest: Mapped[str] = mapped_column(String(64))
    documents: Mapped[int] = mapped_column(Integer)
    passages: Mapped[int] = mapped_column(Integer)
    id_checksum: Mapped[str] = mapped_column(String(32))
    passage_tokens: Mapped[int] = mapped_column(Integer)
    overlap_tokens: Mapped[int] = mapped_column(Integer)
    embed_titles: Mapped[bool] = mapped_column(Boolean)
    built_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    build_seconds: Mapped[float] = mapped_column(default=0.0)
    # Delta segments, tombstones and the FAISS index type (`indexer.store.segments.SegmentLayout`).
    # NULL: one exact flat base, as every index was before index types. Added in place to older
    # tables of this format by `sql_store.create_schema`, so they need no rebuild.
    layout: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True, default=None)
    # How the vectors were computed (`indexer.encoding`): "fp32", "openvino-bf16". NULL: fp32, as
    # every index was before encodings; added in place like `layout`.
    encoding: Mapped[str | None] = mapped_column(String(32), nullable=True, default=None)
