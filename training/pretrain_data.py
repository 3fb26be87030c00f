"""BERT pretraining examples: `[CLS] A [SEP] B [SEP]` with segment ids and an NSP label.

Follows create_pretraining_data.py of Devlin et al. (2019): sentences of a
document are packed until the example is full, A is a random-length prefix of
the packed chunk and B is its true continuation half of the time, else text
from another document. Without NSP (RoBERTa, Liu et al. 2019) the whole chunk
is one segment. Every random choice draws from a generator seeded by
(seed, epoch, document position), so a resumed run replays the same stream.
Under torchrun each rank reads its own shard of every epoch's document order,
chosen by torch's `DistributedSampler`.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from torch.utils.data import DistributedSampler

from data.raw_text import Document, split_sentences

logger = logging.getLogger(__name__)

IS_NEXT, NOT_NEXT = 0, 1  # BertForPreTraining's convention: label 0 means B continues A

TokenizedDocument = list[np.ndarray]  # one int32 array of token ids per sentence


@dataclass(frozen=True)
class PretrainExample:
    input_ids: np.ndarray  # (T,) [CLS] A [SEP] B [SEP]
    token_type_ids: np.ndarray  # (T,) 0 for [CLS] A [SEP], 1 for B [SEP]
    next_sentence_label: int  # IS_NEXT or NOT_NEXT


def tokenize_documents(documents: Iterable[Document], tokenizer, batch_size: int = 256) -> list[TokenizedDocument]:
    """Split documents into sentences and tokenize them in batches; documents without tokens are dropped."""
    out: list[TokenizedDocument] = []
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, batch_size)):
        sentence_lists = [split_sentences(document.text) for document in batch]
        flat = [sentence for sentences in sentence_lists for sentence in sentences]
        if not flat:
            continue
        encoded = tokenizer(flat, add_special_tokens=False, return_attention_mask=False,
                            return_token_type_ids=False)["input_ids"]
        position = 0
        for sentences in sentence_lists:
            ids = [np.asarray(tokens, dtype=np.int32) for tokens in encoded[position : position + len(sentences)]]
            position += len(sentences)
            ids = [array for array in ids if array.size]
            if ids:
                out.append(ids)
    return out


def _truncate_pair(tokens_a: list[int], tokens_b: list[int], max_tokens: int, rng: np.random.Generator) -> None:
    """Trim the longer segment, from the front or the back at random, until both fit (BERT's truncate_seq_pair)."""
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def document_examples(
    corpus: list[TokenizedDocument],
    doc_index: int,
    rng: np.random.Generator,
    max_length: int,
    cls_id: int,
    sep_id: int,
    nsp: bool = True,
) -> list[PretrainExample]:
    """All examples built from document `doc_index`, B drawn from another document of `corpus` when random."""
    document = corpus[doc_index]
    max_tokens = max_length - (3 if nsp else 2)
    examples: list[PretrainExample] = []
    chunk: list[np.ndarray] = []
    length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= max_tokens:
            if not nsp:
                tokens_a = np.concatenate(chunk).tolist()[:max_tokens]
                examples.append(_example(tokens_a, [], IS_NEXT, cls_id, sep_id))
            else:
                tokens_a, tokens_b, label, unused = _split_chunk(corpus, doc_index, chunk, rng, max_tokens)
                i -= unused  # sentences not used by a random B are reused for the next example
                _truncate_pair(tokens_a, tokens_b, max_tokens, rng)
                if tokens_a and tokens_b:
                    examples.append(_example(tokens_a, tokens_b, label, cls_id, sep_id))
            chunk, length = [], 0
        i += 1
    return examples


def _split_chunk(
    corpus: list[TokenizedDocument], doc_index: int, chunk: list[np.ndarray], rng: np.random.Generator, max_tokens: int
) -> tuple[list[int], list[int], int, int]:
    """(A, B, label, sentences left unused) for one packed chunk; B is random with probability 0.5."""
    is_random = rng.random() < 0.5
    a_end = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
    if not is_random:
        if len(chunk) >= 2:
            return np.concatenate(chunk[:a_end]).tolist(), np.concatenate(chunk[a_end:]).tolist(), IS_NEXT, 0
        # One long sentence: its second part is still the true continuation of its first.
        tokens = chunk[0].tolist()
        if len(tokens) < 2:
            return tokens, [], IS_NEXT, 0
        cut = int(rng.integers(1, len(tokens)))
        return tokens[:cut], tokens[cut:], IS_NEXT, 0
    tokens_a = np.concatenate(chunk[:a_end]).tolist()
    other = int(rng.integers(len(corpus) - 1))
    other += other >= doc_index  # any document but this one
    random_document = corpus[other]
    start = int(rng.integers(len(random_document)))
    target_b = max(1, max_tokens - len(tokens_a))
    tokens_b: list[int] = []
    for sentence in random_document[start:]:
        tokens_b.extend(sentence.tolist())
        if len(tokens_b) >= target_b:
            break
    return tokens_a, tokens_b, NOT_NEXT, len(chunk) - a_end


def _example(tokens_a: list[int], tokens_b: list[int], label: int, cls_id: int, sep_id: int) -> PretrainExample:
    ids = [cls_id, *tokens_a, sep_id]
    types = [0] * len(ids)
    if tokens_b:
        ids += [*tokens_b, sep_id]
        types += [1] * (len(tokens_b) + 1)
    return PretrainExample(np.asarray(ids, dtype=np.int64), np.asarray(types, dtype=np.int64), label)


class ExampleStream:
    """Endless, resumable stream of examples: epochs over a seeded permutation of the documents.

    Its whole position is (epoch, document position, examples already taken from that
    document); every generator is re-derived from the seed, so `state_dict` is three ints.
    With `world_size` > 1 the stream walks rank `rank`'s shard of each epoch's permutation
    (`DistributedSampler`'s split: every world_size-th document, padded to equal length);
    random B segments still come from the whole corpus. One process reads every document,
    exactly as before sharding existed.
    """

    def __init__(self, corpus: list[TokenizedDocument], seed: int, max_length: int, cls_id: int, sep_id: int,
                 nsp: bool = True, rank: int = 0, world_size: int = 1, name: str = "training data") -> None:
        if nsp and len(corpus) < 2:
            raise ValueError(
                f"NSP needs at least 2 documents to draw random B segments, the corpus has {len(corpus)}. "
                "Add documents (separate them with blank lines in .txt) or disable NSP (--no-nsp)."
            )
        self.corpus, self.seed, self.max_length = corpus, seed, max_length
        self.cls_id, self.sep_id, self.nsp, self.name = cls_id, sep_id, nsp, name
        self.epoch, self.position, self.taken = 0, 0, 0
        # Positions in the epoch's permutation that this rank reads, in order.
        self._shard = np.fromiter(DistributedSampler(range(len(corpus)), num_replicas=world_size, rank=rank,
                                                     shuffle=False), dtype=np.int64)
        self._order: np.ndarray | None = None
        self._buffer: list[PretrainExample] | None = None

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "taken": self.taken}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.position, self.taken = state["epoch"], state["position"], state["taken"]
        self._order, self._buffer = None, None

    def _current(self) -> list[PretrainExample]:
        if self._order is None:
            self._order = np.random.default_rng([self.seed, self.epoch]).permutation(len(self.corpus))
        if self._buffer is None:
            position = int(self._shard[self.position])  # in the whole epoch's order: the same draws on any rank
            rng = np.random.default_rng([self.seed, self.epoch, position])
            self._buffer = document_examples(self.corpus, int(self._order[position]), rng, self.max_length,
                                             self.cls_id, self.sep_id, self.nsp)
        return self._buffer

    def _advance_document(self) -> None:
        self.position, self.taken, self._buffer = self.position + 1, 0, None
        if self.position == len(self._shard):
            self.epoch, self.position, self._order = self.epoch + 1, 0, None
            logger.info("%s (%d documents): starting epoch %d", self.name, len(self.corpus), self.epoch)

    def take(self, count: int) -> list[PretrainExample]:
        batch: list[PretrainExample] = []
        empty_documents = 0
        while len(batch) < count:
            examples = self._current()
            if self.taken >= len(examples):
                empty_documents = empty_documents + 1 if not examples else 0
                if empty_documents > len(self.corpus):
                    raise ValueError("No document yields a pretraining example; the corpus is too short.")
                self._advance_document()
                continue
            wanted = min(count - len(batch), len(examples) - self.taken)
            batch.extend(examples[self.taken : self.taken + wanted])
            self.taken += wanted
        return batch


def collate(examples: list[PretrainExample], pad_id: int) -> dict[str, np.ndarray]:
    """Pad a batch to its longest example: input_ids, token_type_ids, attention_mask (B, T), NSP labels (B,)."""
    width = max(len(example.input_ids) for example in examples)
    input_ids = np.full((len(examples), width), pad_id, dtype=np.int64)
    token_type_ids = np.zeros((len(examples), width), dtype=np.int64)
    attention_mask = np.zeros((len(examples), width), dtype=np.int64)
    for row, example in enumerate(examples):
        n = len(example.input_ids)
        input_ids[row, :n] = example.input_ids
        token_type_ids[row, :n] = example.token_type_ids
        attention_mask[row, :n] = 1
    labels = np.asarray([example.next_sentence_label for example in examples], dtype=np.int64)
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": attention_mask,
            "next_sentence_label": labels}
