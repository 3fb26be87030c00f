from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from sentence_transformers import CrossEncoder

from indexer.sources.passage_text import passage_text
from search.hits import Hit
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


def test_bad_inputs_fail_with_fix(tmp_path: Path) -> None:
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
    # The other document BM25 matches, behind its title (the file name) as the reranker reads it.
    assert negatives[0] == passage_text("baking", (topic_corpus / "baking.txt").read_text())
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


# --- raw documents, several sources, fewer layers, float16 ---------------------------------------


def _documents(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _by_query(rows: list[dict], label: float) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        if row["label"] == label:
            grouped[row["query"]].append(row["passage"])
    return grouped


def test_raw_documents_give_title_and_cloze_positives_with_bm25_negatives(tiny_jsonl_corpus: Path) -> None:
    documents = _documents(tiny_jsonl_corpus)
    rows = load_cross_encoder_rows(tiny_jsonl_corpus, np.random.default_rng(0), negatives_per_query=2)
    assert {row["label"] for row in rows} == {0.0, 1.0}
    positives, negatives = _by_query(rows, 1.0), _by_query(rows, 0.0)
    body_of = {document["title"]: document["text"] for document in documents}
    titled = {query: passages for query, passages in positives.items() if query in body_of}
    assert titled == {title: [body] for title, body in body_of.items()}, "title -> body for every document"
    cloze = {query: passages for query, passages in positives.items() if query not in body_of}
    assert 0 < len(cloze) <= len(documents)
    for sentence, (passage,) in cloze.items():  # inverse cloze: a sentence and the text around it
        assert any(sentence in text and passage.split(". ")[0] in text for text in body_of.values())

    assert set(negatives) == set(positives) and all(len(found) == 2 for found in negatives.values())
    pool = {passage for found in positives.values() for passage in found}
    for query, found in negatives.items():
        assert set(found) <= pool, "negatives come from the same documents"
        assert not set(found) & set(positives[query]), "a query's own positive is never its negative"
    # BM25 negatives share words with the query: a title's negatives talk about its topic (the stemmer
    # matches "gardening" to "garden"), where random ones would do so only one time in eight.
    for title, found in negatives.items():
        if title in body_of:
            topic = title.split()[2].removesuffix("ing")
            assert all(topic in passage for passage in found), (title, found)


def test_raw_document_negatives_never_hold_the_query_sentence(tiny_jsonl_corpus: Path) -> None:
    rows = load_cross_encoder_rows(tiny_jsonl_corpus, np.random.default_rng(0), negatives_per_query=2)
    titles = {document["title"] for document in _documents(tiny_jsonl_corpus)}
    cloze_negatives = [row for row in rows if row["label"] == 0.0 and row["query"] not in titles]
    holding = [row for row in cloze_negatives if row["query"] in row["passage"]]
    assert holding == []


def test_raw_documents_capped_by_max_documents_and_plain_text(tiny_jsonl_corpus: Path, tiny_corpus: Path,
                                                              tmp_path: Path) -> None:
    first = _documents(tiny_jsonl_corpus)[:5]
    rows = load_cross_encoder_rows(tiny_jsonl_corpus, np.random.default_rng(0), 1, max_documents=5)
    titles = {document["title"] for document in first}
    assert {row["query"] for row in rows if row["query"].startswith("Notes on")} == titles
    assert len([row for row in rows if row["label"] == 1.0]) <= 10
    for row in rows:  # every passage, negatives included, comes from the first five documents
        assert any(row["passage"].split(". ")[0] in document["text"] for document in first)

    text_rows = load_cross_encoder_rows(tiny_corpus, np.random.default_rng(0), 1, max_documents=20)
    text_positives, text_negatives = _by_query(text_rows, 1.0), _by_query(text_rows, 0.0)
    assert 0 < len(text_positives) <= 20, "untitled plain text: one inverse-cloze pair per document at most"
    assert all(query.endswith(".") and not query.startswith("Notes on") for query in text_positives)
    assert set(text_negatives) == set(text_positives) and all(len(found) == 1 for found in text_negatives.values())

    short = tmp_path / "short.txt"
    short.write_text("One line only.\n\nAnother one.\n")
    with pytest.raises(ValueError, match=r"yields no self-supervised pairs: its documents need titles or several"):
        load_cross_encoder_rows(short, np.random.default_rng(0), 1)


def test_several_sources_are_concatenated(tiny_bert_copy: Path, tiny_pairs: Path, tiny_triplets: Path,
                                          tmp_path: Path) -> None:
    sizes = [len(load_cross_encoder_rows(path, np.random.default_rng(0), 3)) for path in (tiny_pairs, tiny_triplets)]
    assert sizes[0] == 160 and 150 < sizes[1] <= 200  # 40 triplets: a positive, the negative and 3 mined per anchor
    config = CrossEncoderConfig(base=str(tiny_bert_copy), train=[tiny_pairs, tiny_triplets], out=tmp_path / "ce",
                                epochs=1, batch_size=64, max_length=32, learning_rate=1e-3)
    result = train_cross_encoder(config)
    assert result.steps == math.ceil(sum(sizes) / 64) == 6, "one epoch over both sources (either alone: 3 or 4 steps)"


def _tensors(folder: Path) -> dict:
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        names = weights.keys()  # safe_open is not iterable
        return {name: weights.get_tensor(name) for name in names}


def test_num_layers_keeps_the_first_layers(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"num_layers \(3\) exceeds the 2 layers of .*; pass at most 2"):
        train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=tiny_pairs, out=tmp_path / "x",
                                               num_layers=3, max_steps=1))
    assert not (tmp_path / "x").exists(), "it fails before training"

    out = tmp_path / "ce"
    # A vanishing learning rate leaves the kept weights where the base had them.
    train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=tiny_pairs, out=out, num_layers=1,
                                           max_steps=2, batch_size=8, max_length=32, learning_rate=1e-9))
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 1
    saved, base = _tensors(out), _tensors(tiny_bert_copy)
    assert not any(".layer.1." in name for name in saved)
    name = "bert.encoder.layer.0.attention.self.query.weight"
    assert torch.allclose(saved[name], base[name], atol=1e-6)
    assert not torch.allclose(saved[name], base[name.replace("layer.0", "layer.1")], atol=1e-3)
    assert {tensor.dtype for tensor in saved.values()} == {torch.float32}, "float32 unless asked otherwise"
    assert len(CrossEncoder(str(out), device="cpu").model.bert.encoder.layer) == 1


def test_float16_save_halves_the_weights_and_keeps_the_scores(tiny_bert_copy: Path, tiny_pairs: Path,
                                                              tmp_path: Path) -> None:
    from transformers import AutoModelForSequenceClassification

    from search.config import RerankConfig
    from search.rerank import CrossEncoderReranker

    outs = {}
    for dtype in ("float32", "float16"):
        torch.manual_seed(0)  # the same classifier head for both runs
        outs[dtype] = tmp_path / dtype
        train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=tiny_pairs, out=outs[dtype],
                                               max_steps=3, batch_size=16, max_length=32, learning_rate=1e-3,
                                               save_dtype=dtype))
    assert {tensor.dtype for tensor in _tensors(outs["float16"]).values()} == {torch.float16}
    loaded = AutoModelForSequenceClassification.from_pretrained(str(outs["float16"]), dtype="auto")
    assert next(loaded.parameters()).dtype == torch.float16
    size = {dtype: (out / "model.safetensors").stat().st_size for dtype, out in outs.items()}
    assert size["float16"] < 0.6 * size["float32"]

    hits = [Hit(doc_id=str(i), title="", text=text, score=0.0) for i, text in enumerate(
        ["a dog likes the garden while talking about music.", "the farmer feeds the river.", "my sister paints."])]
    half = CrossEncoderReranker(str(outs["float16"]), RerankConfig(quantize=False))
    full = CrossEncoderReranker(str(outs["float32"]), RerankConfig(quantize=False))
    assert {parameter.dtype for parameter in half.model.parameters()} == {torch.float32}
    assert half.scores("the cat sees the river", hits) == pytest.approx(full.scores("the cat sees the river", hits),
                                                                        abs=1e-3)


def test_cli_trains_on_documents_and_pairs_with_the_new_flags(tiny_bert_copy: Path, tiny_pairs: Path,
                                                              tiny_jsonl_corpus: Path, tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    from search.rerank import CrossEncoderReranker

    out = tmp_path / "ce"
    caplog.set_level(logging.INFO, logger="training.cross_encoder")
    result = main(["cross-encoder", "--base", str(tiny_bert_copy), "--train", str(tiny_pairs), str(tiny_jsonl_corpus),
                   "--out", str(out), "--num-layers", "1", "--save-dtype", "float16", "--max-length", "24",
                   "--max-documents", "6", "--negatives-depth", "4", "--max-steps", "2", "--batch-size", "8"])
    assert result.steps == 2
    messages = [record.getMessage() for record in caplog.records]
    assert any(message.startswith(f"{tiny_pairs}: 160 pairs") for message in messages), "both sources are read"
    # 6 documents: 6 title -> body and up to 6 cloze positives, each with 3 negatives.
    documents = next(message for message in messages if message.startswith(f"{tiny_jsonl_corpus}: "))
    assert int(documents.split(": ")[1].split()[0]) in range(24, 49)
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 1
    assert {tensor.dtype for tensor in _tensors(out).values()} == {torch.float16}
    assert CrossEncoder(str(out), device="cpu").max_seq_length == 24
    reranker = CrossEncoderReranker(str(out))
    assert reranker.quantized is True
    hit = Hit(doc_id="0", title="Notes", text="the cat sees the river", score=0.0)
    assert np.isfinite(reranker.scores("cat", [hit])[0])


def test_mean_pooling_head_trains_loads_and_reranks_in_float32(tiny_bert_copy: Path, tiny_pairs: Path,
                                                               tmp_path: Path) -> None:
    from search.config import RerankConfig
    from search.hits import Hit
    from search.rerank import CrossEncoderReranker

    out = tmp_path / "ce-mean"
    result = train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=tiny_pairs, out=out, max_steps=30,
                                                    batch_size=16, learning_rate=1e-3, max_length=64, pooling="mean",
                                                    save_dtype="float16"))
    assert np.mean(result.train_losses[-6:]) < np.mean(result.train_losses[:6])
    modules = [module["type"].rsplit(".", 1)[-1] for module in json.loads((out / "modules.json").read_text())]
    assert modules == ["Transformer", "Pooling", "Dense"]
    loaded = CrossEncoder(str(out), device="cpu")
    pairs = [("the cat sees the river", "a dog likes the garden"), ("a", "b")]
    assert loaded.predict(pairs).shape == (2,)
    hits = [Hit(doc_id=str(i), title="", text=text, score=0.0) for i, (_, text) in enumerate(pairs)]
    for quantize in (False, True):  # the float16 head is upcast with the encoder, or the matmul would fail
        reranker = CrossEncoderReranker(out, RerankConfig(quantize=quantize))
        assert all(p.dtype == torch.float32 for p in reranker.model[2].parameters())
        assert len(reranker.scores("the cat", hits)) == 2


def _margin_file(path: Path, rows: int = 48) -> Path:
    rng = np.random.default_rng(0)
    words = ["river", "bread", "stars", "chess", "volcano", "garden"]
    lines = []
    for _ in range(rows):
        topic, other = rng.choice(words, size=2, replace=False)
        lines.append(json.dumps({"anchor": f"about the {topic}", "positive": f"the {topic} is here",
                                 "negative": f"the {other} is there", "margin": 2.0}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_margin_file_trains_by_distillation(tiny_bert_copy: Path, tmp_path: Path) -> None:
    """Teacher margins (anchor, positive, negative, margin) train with margin-MSE: the student's
    margin between positive and negative moves towards the teacher's."""
    path = _margin_file(tmp_path / "margins.jsonl")
    rows = load_cross_encoder_rows(path, np.random.default_rng(0), negatives_per_query=3)
    assert set(rows[0]) == {"query", "positive", "negative", "label"} and rows[0]["label"] == 2.0
    out = tmp_path / "ce"
    result = train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=path, out=out, max_steps=30,
                                                    batch_size=16, learning_rate=1e-3, max_length=32,
                                                    pooling="mean"))
    assert result.steps == 30
    assert np.mean(result.train_losses[-5:]) < np.mean(result.train_losses[:5])
    model = CrossEncoder(str(out), device="cpu")
    pos, neg = model.predict([("about the river", "the river is here"), ("about the river", "the chess is there")],
                             activation_fn=torch.nn.Identity())  # raw scores: their margin was trained
    assert pos - neg > 0.5  # towards the teacher's 2.0 after 30 steps; an untrained head gives about 0


def test_a_margin_file_cannot_be_mixed_with_pairs(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    path = _margin_file(tmp_path / "margins.jsonl", rows=4)
    with pytest.raises(ValueError, match="pass it alone"):
        train_cross_encoder(CrossEncoderConfig(base=str(tiny_bert_copy), train=[tiny_pairs, path],
                                               out=tmp_path / "ce", max_steps=1))


def test_ctrl_c_saves_a_checkpoint_and_resume_continues_from_it(tiny_bert_copy: Path, tiny_pairs: Path,
                                                                 tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A real SIGINT to `python -m training cross-encoder`: it saves the step it reached, says how to
    resume and exits 130; `--resume` then continues from that checkpoint to the new --max-steps."""
    from tests.training.test_journey import interrupt_when, interrupted_step
    from training.output_folder import work_folder

    out = tmp_path / "ce"
    args = ["cross-encoder", "--base", str(tiny_bert_copy), "--train", str(tiny_pairs), "--out", str(out),
            "--batch-size", "4", "--max-length", "32"]
    step = interrupted_step(*interrupt_when([*args, "--max-steps", "100000"], "'loss'"))
    assert (work_folder(out) / "checkpoints" / f"checkpoint-{step}").is_dir() and not out.exists()
    with caplog.at_level(logging.INFO, logger="training"):
        result = main([*args, "--max-steps", str(step + 2), "--resume"])
    checkpoint = work_folder(out) / "checkpoints" / f"checkpoint-{step}"
    assert result.steps == step + 2 and f"resuming from {checkpoint}" in caplog.text, "continued, not started again"
    assert CrossEncoder(str(out), device="cpu").predict([("a", "b")]).shape == (1,)
    assert not work_folder(out).exists()
