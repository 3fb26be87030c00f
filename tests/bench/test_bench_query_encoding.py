"""bench_query_encoding times every encoding on every query, in turn, through the product's path."""

from __future__ import annotations

import numpy as np
import pytest

from bench.bench_query_encoding import ALL_THREADS, agreement, encoders_of, latencies
from indexer.encoding import FP32, OPENVINO_FP32, openvino_installed, with_encoding

QUERIES = ["what is a context manager", "bread rises with yeast", "who won the 1998 world cup",
           "a claim about protein folding in the cell"]


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(tiny_model_dir), device="cpu")


@pytest.mark.skipif(not openvino_installed(), reason="OpenVINO is in requirements.txt")
def test_every_encoding_is_timed_on_every_query_and_agrees_with_fp32(tiny):
    encoders = encoders_of({FP32: tiny, OPENVINO_FP32: with_encoding(tiny, OPENVINO_FP32)})
    ms = latencies(encoders, QUERIES)
    assert set(ms) == {FP32, OPENVINO_FP32, ALL_THREADS}
    for values in ms.values():
        assert values.shape == (len(QUERIES),) and (values > 0).all()
    lowest = agreement(encoders, QUERIES)
    assert lowest[FP32] == pytest.approx(1.0, abs=1e-5) and lowest[ALL_THREADS] == pytest.approx(1.0, abs=1e-5)
    assert 0.9999 <= lowest[OPENVINO_FP32] <= 1.0 + 1e-5  # the same function in float32: rounding only
    assert not np.isnan(list(lowest.values())).any()
