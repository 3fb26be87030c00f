"""How a passage reads to every model and to BM25: one function, so training and serving agree.

The bi-encoder, the reranker and every training-pair builder call
`passage_text(title, text)`; BM25 calls `indexer.bm25_store.bm25_document`, the same with
the title written more than once (a field weight). A passage carries its document title in front,
because a title word is evidence for every passage of its document (BEIR's
Elasticsearch baseline and SBERT's BEIR runs do the same). A Markdown file's
title is its first heading, already at the start of its text, so it is not
repeated.
"""

from __future__ import annotations


def passage_text(title: str, text: str) -> str:
    """`title` and `text` joined by a newline; the text alone when the title is empty or already
    opens it, and the title alone when the text is empty."""
    title = title.strip()
    if not text.strip():
        return title
    if not title or text.lstrip("# \n").startswith(title):
        return text
    return f"{title}\n{text}"
