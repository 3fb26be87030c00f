from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import CrossEncoder

from training.__main__ import main
from training.config import CrossEncoderConfig
from training.cross_encoder import load_cross_encoder_rows, train_cross_encoder, with_negatives
from training.negatives import RandomNegativeMiner


def test_scored_pairs_loss_falls_and_output_loads(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    out = tmp_path / "ce"
    result = train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=tiny_pairs, out=out, max_steps=40,
                                                    batch_size=16, learning_rate=1e-3, max_length=64))
    assert result.steps == 40
    assert np.mean(result.train_losses[-8:]) < np.mean(result.train_losses[:8])
    model = CrossEncoder(str(out), device="cpu")
    scores = model.predict([("the cat sees the river", "a dog likes the garden"), ("a", "b")])
    assert scores.shape == (2,)


def test_positives_get_mined_negatives(tiny_triplets: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = load_cross_encoder_rows(tiny_triplets, rng, negatives_per_query=2)
    positives = [row for row in rows if row["label"] == 1.0]
    negatives = [row for row in rows if row["label"] == 0.0]
    queries = {row["query"] for row in positives}
    assert len(positives) == 40 and len(negatives) == 2 * len(queries) + 40  # 2 mined per query + 1 explicit per row
    relevant = {(row["query"], row["passage"]) for row in positives}
    assert not any((row["query"], row["passage"]) in relevant for row in negatives)


def test_miner_seam_is_pluggable() -> None:
    class FixedMiner:
        def mine(self, query: str, positives: set[str], count: int, rng: np.random.Generator) -> list[str]:
            return ["hard negative"] * count

    rows = with_negatives([("q", "p")], FixedMiner(), 2, np.random.default_rng(0))
    assert rows == [{"query": "q", "passage": "p", "label": 1.0},
                    {"query": "q", "passage": "hard negative", "label": 0.0},
                    {"query": "q", "passage": "hard negative", "label": 0.0}]
    assert RandomNegativeMiner(["p"]).mine("q", {"p"}, 3, np.random.default_rng(0)) == []


def test_query_passage_file_via_cli(tiny_bert_copy: Path, tmp_path: Path) -> None:
    path = tmp_path / "qp.jsonl"
    path.write_text("".join(json.dumps({"query": f"question {i}", "passage": f"answer number {i}", "label": 1}) + "\n"
                            for i in range(12)))
    result = main(["cross-encoder", "--base", str(tiny_bert_copy), "--train", str(path), "--out", str(tmp_path / "ce"),
                   "--max-steps", "2", "--batch-size", "8"])
    assert result.steps == 2
    CrossEncoder(str(tmp_path / "ce"), device="cpu")


def test_bad_inputs_fail_with_fix(tiny_jsonl_corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="holds raw documents; it needs scored pairs"):
        load_cross_encoder_rows(tiny_jsonl_corpus, np.random.default_rng(0), 1)
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"sentence1": "a", "sentence2": "b", "score": 1}) + "\n")
    with pytest.raises(ValueError, match="is not a BERT or CrossEncoder folder"):
        train_cross_encoder(CrossEncoderConfig(base=str(tmp_path), train=tmp_path / "pairs.jsonl", out=tmp_path / "o"))


def test_pair_files_that_cannot_train_a_scorer(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(json.dumps({"sentence1": "a", "sentence2": "b", "label": 2}) + "\n")
    with pytest.raises(ValueError, match="class labels cannot train a cross-encoder scorer"):
        load_cross_encoder_rows(labelled, np.random.default_rng(0), 1)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps({"query": "q", "passage": ""}) + "\n")
    with pytest.raises(ValueError, match="holds no usable rows"):
        load_cross_encoder_rows(broken, np.random.default_rng(0), 1)


def test_index_miner_returns_retrieved_non_positives(topic_corpus: Path, tmp_path: Path, tiny_bert_copy: Path) -> None:
    from indexer import IndexConfig, build_index
    from training.negatives import IndexNegativeMiner

    build_index(IndexConfig(source=topic_corpus, index_dir=tmp_path / "idx", show_progress=False))
    positive = (topic_corpus / "volcano.txt").read_text()
    miner = IndexNegativeMiner(tmp_path / "idx", mode="bm25")
    negatives = miner.mine("lava erupted and bread was baked", {positive}, 2, np.random.default_rng(0))
    assert positive not in negatives
    assert negatives[0] == (topic_corpus / "baking.txt").read_text()  # the other document BM25 matches
    skipping = IndexNegativeMiner(tmp_path / "idx", mode="bm25", skip=1)
    assert skipping.mine("lava erupted and bread was baked", {positive}, 2, np.random.default_rng(0))[:1] != negatives[:1]
    with pytest.raises(ValueError, match=r"skip \(-1\) must be 0 or more"):
        IndexNegativeMiner(tmp_path / "idx", skip=-1)

    path = tmp_path / "qp.jsonl"
    path.write_text(json.dumps({"query": "volcano eruption", "passage": positive, "label": 1}) + "\n")
    result = main(["cross-encoder", "--base", str(tiny_bert_copy), "--train", str(path), "--out", str(tmp_path / "ce"),
                   "--max-steps", "1", "--batch-size", "4", "--negatives-index", str(tmp_path / "idx"),
                   "--negatives-mode", "bm25"])
    assert result.steps == 1
