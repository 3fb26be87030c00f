"""The Rust tokenizer inside a fast (transformers) tokenizer, for callers that tokenize many texts.

Through transformers' call, every text costs a BatchEncoding's Python and a reset of the Rust
tokenizer's truncation and padding, which also makes one tokenizer unsafe to share between
threads. The passage cutter (`indexer.sources.chunking`) and token counting and encoding
(`indexer.pipelined_encoding`) call the Rust tokenizer itself, through `bare_tokenizer`.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

# A copy of each tokenizer's Rust tokenizer with truncation and padding off, which nothing changes
# afterwards, so that threads may share it (`bare_tokenizer`).
_BARE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def bare_tokenizer(tokenizer: Any) -> Any:
    """A fast (transformers) tokenizer's Rust tokenizer, copied once, with truncation and padding
    off; None for a tokenizer without one (a slow, Python tokenizer)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    bare = _BARE.get(tokenizer)
    if bare is None:
        bare = copy.deepcopy(backend)
        bare.no_truncation()
        bare.no_padding()
        _BARE[tokenizer] = bare
    return bare
