"""SQL schema of an index: documents, their passages, and one row of index info."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, deferred, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class DocumentRow(Base):
    __tablename__ = "semsearch_documents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    doc_key: Mapped[str] = mapped_column(String(512), unique=True, index=True)
    title: Mapped[str] = mapped_column(Text, default="")
    source: Mapped[str] = mapped_column(Text, default="")
    text: Mapped[str] = mapped_column(Text)
    content_hash: Mapped[str] = mapped_column(String(64))
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    indexed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))

    passages: Mapped[list[PassageRow]] = relationship(
        back_populates="document", cascade="all, delete-orphan", passive_deletes=True
    )


class PassageRow(Base):
    """A passage's primary key is its FAISS id."""

    __tablename__ = "semsearch_passages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("semsearch_documents.id", ondelete="CASCADE"), index=True
    )
    ordinal: Mapped[int] = mapped_column(Integer)
    start_char: Mapped[int] = mapped_column(Integer)
    end_char: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)

    document: Mapped[DocumentRow] = relationship(back_populates="passages")


class IndexInfoRow(Base):
    """A single row (id 1) that says how the vectors were made and where they and the BM25 index are.

    `bm25_dir` is None for an index built before BM25 existed; the next build adds it.
    It is deferred so that a searcher can still read, for dense search, the info row
    of such an index whose table lacks the column (see `sql_store.bm25_dir_of`).
    """

    __tablename__ = "semsearch_index_info"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model: Mapped[str] = mapped_column(Text)
    dimension: Mapped[int] = mapped_column(Integer)
    normalized: Mapped[bool] = mapped_column(Boolean, default=True)
    vector_file: Mapped[str] = mapped_column(String(255))
    passage_tokens: Mapped[int] = mapped_column(Integer)
    overlap_tokens: Mapped[int] = mapped_column(Integer)
    built_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    build_seconds: Mapped[float] = mapped_column(default=0.0)
    bm25_dir: Mapped[str | None] = deferred(mapped_column(String(255), nullable=True, default=None))
