"""How a passage reads to every model and to BM25: one function, so training and serving agree.

The bi-encoder, the reranker and every training-pair builder call
`passage_text(title, text)`; BM25 calls `indexer.store.bm25_store.bm25_document`, the same with
the title written more than once (a field weight). A passage carries its document title in front,
because a title word is evidence for every passage of its document (BEIR's
Elasticsearch baseline and SBERT's BEIR runs do the same). A Markdown file's
title is its first heading, already at the start of its text, so it is not
repeated.
"""

from __future__ import annotations

from collections.abc import Sequence

from indexer.rust_tokenizer import bare_tokenizer

# Room for the title prefix of what the bi-encoder reads: at most 32 tokens, and at most an
# eighth of what the model reads, so that the passage always fits.
MAX_TITLE_TOKENS = 32


def passage_text(title: str, text: str) -> str:
    """`title` and `text` joined by a newline; the text alone when the title is empty or already
    opens it, and the title alone when the text is empty."""
    title = title.strip()
    if not text.strip():
        return title
    if not title or text.lstrip("# \n").startswith(title):
        return text
    return f"{title}\n{text}"


def title_token_budget(model_max: int) -> int:
    return min(MAX_TITLE_TOKENS, model_max // 8)


def embedded_title(title: str, model) -> str:
    """The title as embedded: cut to its token budget so the passage always fits."""
    return embedded_titles([title], model)[0]


def embedded_titles(titles: Sequence[str], model) -> list[str]:
    """`embedded_title` of each of `titles`: a title over its token budget is cut to it. Tokenized
    in one batch by the Rust tokenizer (`bare_tokenizer`), which runs it without holding the
    interpreter lock (transformers' call cost about 170 us a title in a GPU build); a slow
    tokenizer is called per title."""
    wanted = [i for i, title in enumerate(titles) if title]
    out = list(titles)
    if not wanted:
        return out
    budget = title_token_budget(int(model.max_seq_length))
    bare = bare_tokenizer(model.tokenizer)
    if bare is not None:
        token_ids = [e.ids for e in bare.encode_batch([titles[i] for i in wanted], add_special_tokens=False)]
    else:
        token_ids = [model.tokenizer(titles[i], add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
                     for i in wanted]
    for i, ids in zip(wanted, token_ids, strict=True):
        if len(ids) > budget:
            out[i] = model.tokenizer.decode(ids[:budget])
    return out


def bi_encoder_inputs_of(titles: Sequence[str], passages: Sequence[Sequence[str]], model,
                         embed_titles: bool) -> list[str]:
    """`bi_encoder_inputs` of several documents (their `titles` and each one's `passages`), in order,
    their titles tokenized in one batch."""
    prefixes = embedded_titles([title if embed_titles and doc_passages else "" for title, doc_passages in
                                zip(titles, passages, strict=True)], model)
    return [passage_text(prefix, passage) for prefix, doc_passages in zip(prefixes, passages, strict=True)
            for passage in doc_passages]


def bi_encoder_input(title: str, passage: str, model, embed_titles: bool) -> str:
    """What the bi-encoder reads for a passage of a document titled `title`: the one rule for
    the build, a repair's re-embedding and the app's relevance labels (`embed_titles` is the
    index's setting)."""
    return bi_encoder_inputs(title, [passage], model, embed_titles)[0]


def bi_encoder_inputs(title: str, passages: Sequence[str], model, embed_titles: bool) -> list[str]:
    """`bi_encoder_input` for each of one document's passages, its title tokenized once (one
    tokenizer call per passage cost a build about 2 s per 40,000 passages)."""
    return bi_encoder_inputs_of([title], [passages], model, embed_titles)
