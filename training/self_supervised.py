"""Self-supervised (anchor, positive) pairs from unlabelled documents, for users without labels.

Two sources, both used for retrieval pretraining of dual encoders:
- title -> body: the title is a short query for its own article (Chang et al. 2020,
  "Pre-training Tasks for Embedding-based Large-scale Retrieval").
- inverse cloze task: a sentence is the query and its surrounding passage the
  positive; the sentence is left in the passage only a small fraction of the time
  so the model learns more than word overlap (Lee et al. 2019, "Latent Retrieval
  for Weakly Supervised Open Domain Question Answering").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from data.raw_text import Document, split_sentences


def title_body_pairs(documents: Iterable[Document], max_body_words: int = 200) -> Iterator[tuple[str, str]]:
    """(title, first `max_body_words` words of the body) for every document that has both."""
    for document in documents:
        body = " ".join(document.text.split()[:max_body_words])
        if document.title.strip() and body:
            yield document.title.strip(), body


def inverse_cloze_pairs(
    documents: Iterable[Document],
    rng: np.random.Generator,
    window: int = 4,
    keep_sentence_probability: float = 0.1,
    pairs_per_document: int = 1,
    min_sentence_words: int = 5,
) -> Iterator[tuple[str, str]]:
    """(sentence, passage of up to `window` sentences around it) pairs, sampled with `rng`."""
    if window < 2:
        raise ValueError(f"ICT window ({window}) must be at least 2 sentences: the query and its context.")
    for document in documents:
        sentences = split_sentences(document.text)
        if len(sentences) < 2:
            continue
        starts = rng.choice(max(1, len(sentences) - window + 1), size=pairs_per_document, replace=True)
        for start in starts:
            passage = sentences[start : start + window]
            query_index = int(rng.integers(len(passage)))
            query = passage[query_index]
            if len(query.split()) < min_sentence_words:
                continue
            if rng.random() >= keep_sentence_probability:
                passage = passage[:query_index] + passage[query_index + 1 :]
            if passage:
                yield query, " ".join(passage)
