"""The reranker committed in models/reranker: a standard folder that loads offline, within
the size budget, that ranks a relevant passage above unrelated ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from search.config import SHIPPED_RERANKER, shipped_reranker
from search.hits import Hit
from search.rerank import RERANK_CONFIG_FILE, CrossEncoderReranker, load_rerank_config

pytestmark = pytest.mark.skipif(shipped_reranker() is None, reason="models/reranker is not in this checkout")

QUERY = "Vitamin D deficiency increases the risk of multiple sclerosis."
RELEVANT = Hit(
    doc_id="ms", title="Serum vitamin D levels and the risk of multiple sclerosis",
    text="In this prospective study, low serum 25-hydroxyvitamin D levels were associated with a higher "
    "risk of developing multiple sclerosis among young adults.", score=0.1,
)
UNRELATED = [
    Hit(doc_id="football", title="Cup final", text="The striker scored twice as the home side won the cup final.",
        score=0.9),
    Hit(doc_id="kinase", title="Kinase signalling in yeast",
        text="We mapped phosphorylation sites of cyclin-dependent kinases during the yeast cell cycle.", score=0.5),
]


def test_shipped_folder_fits_the_budget_and_says_how_it_was_made() -> None:
    size = sum(path.stat().st_size for path in SHIPPED_RERANKER.rglob("*") if path.is_file())
    assert size <= 50 * 10**6, f"{size / 1e6:.1f} MB"
    readme = (SHIPPED_RERANKER / "README.md").read_text()
    assert "bench/bench_rerank.py" in readme and "python -m training cross-encoder" in readme
    assert (SHIPPED_RERANKER / RERANK_CONFIG_FILE).is_file()
    load_rerank_config(SHIPPED_RERANKER)  # valid


def test_loads_offline_and_puts_the_relevant_passage_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reranker = CrossEncoderReranker(SHIPPED_RERANKER)  # with its rerank_config.json
    scores = reranker.scores(QUERY, [RELEVANT, *UNRELATED])
    assert scores[0] > max(scores[1:]), scores
    alone = CrossEncoderReranker(SHIPPED_RERANKER, replace(load_rerank_config(SHIPPED_RERANKER), retriever_weight=0.0))
    reranked = alone.rerank(QUERY, [*UNRELATED, RELEVANT])  # the retriever put it last
    assert reranked[0].doc_id == "ms"
    assert reranked[0].rerank_score == pytest.approx(scores[0], abs=1e-5)


def test_plain_sentence_transformers_loads_it() -> None:
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(SHIPPED_RERANKER), device="cpu", local_files_only=True)
    relevant, unrelated = model.predict([(QUERY, f"{RELEVANT.title}. {RELEVANT.text}"),
                                         (QUERY, f"{UNRELATED[0].title}. {UNRELATED[0].text}")])
    assert relevant > unrelated
