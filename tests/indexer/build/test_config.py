from __future__ import annotations

import pytest

from indexer import IndexConfig


def test_paths_are_coerced():
    cfg = IndexConfig(source="a", index_dir="b")
    assert cfg.source.name == "a" and cfg.index_dir.name == "b"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"batch_size": 0}, r"batch_size \(0\) must be at least 1"),
        ({"overlap_tokens": -1}, r"overlap_tokens \(-1\) must not be negative"),
        ({"passage_tokens": 8}, r"passage_tokens \(8\) is too small"),
        ({"passage_tokens": 64, "overlap_tokens": 64}, r"overlap_tokens \(64\) must be smaller than passage_tokens \(64\)"),
    ],
)
def test_invalid_values_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        IndexConfig(source="a", index_dir="b", **kwargs)
