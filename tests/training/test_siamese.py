from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Pooling

from training.__main__ import main
from training.config import SiameseConfig
from training.pair_rows import LABELS_FILE
from training.sentence_model import load_sentence_model
from training.siamese import SiameseResult, saved_message, train_siamese
from training.siamese_data import detect_source, load_training_dataset

SICK_HEADER = ("pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\tentailment_BA\t"
               "sentence_A_original\tsentence_B_original\tsentence_A_dataset\tsentence_B_dataset\tSemEval_set")


def _config(base: Path | str, train: Path, out: Path, objective: str, **kwargs) -> SiameseConfig:
    values = {"base": str(base), "objective": objective, "train": train, "out": out, "max_steps": 4,
              "batch_size": 8, "learning_rate": 1e-3, "evaluate_on_dev": False, "max_seq_length": 32, **kwargs}
    return SiameseConfig(**values)


def _pooling(model: SentenceTransformer) -> Pooling:
    return next(module for module in model.children() if isinstance(module, Pooling))


def _stsb_folder(folder: Path, pairs: Path) -> Path:
    folder.mkdir()
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    lines = [f"g\tf\t2012\t{i:04d}\t{5 * row['score']:.3f}\t{row['sentence1']}\t{row['sentence2']}" for i, row in enumerate(rows)]
    for split, part in (("train", lines[:100]), ("dev", lines[100:140]), ("test", lines[140:])):
        (folder / f"sts-{split}.csv").write_text("\n".join(part) + "\n")
    return folder


def test_cosine_loss_falls_and_output_loads(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    out = tmp_path / "st"
    result = train_siamese(_config(tiny_bert_copy, tiny_pairs, out, "cosine", max_steps=40, batch_size=16))
    assert result.steps == 40 and len(result.train_losses) == 40
    assert np.mean(result.train_losses[-8:]) < np.mean(result.train_losses[:8])
    model = SentenceTransformer(str(out), device="cpu")
    assert _pooling(model).pooling_mode == "mean"
    embeddings = model.encode(["the cat sees the river", "a dog likes the garden"])
    assert embeddings.shape == (2, 32)


def test_dev_evaluation_keeps_best_checkpoint(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    stsb = _stsb_folder(tmp_path / "stsb", tiny_pairs)
    assert detect_source(stsb) == "stsb"
    result = train_siamese(_config(tiny_bert_copy, stsb, tmp_path / "st", "cosine", max_steps=6, eval_steps=2,
                                   evaluate_on_dev=True, eval_data=stsb))
    assert len(result.dev_spearman) == 3 and result.best_dev_spearman == max(result.dev_spearman)
    assert result.kept_step == [2, 4, 6][int(np.argmax(result.dev_spearman))]
    message = saved_message(result)
    if result.kept_step == 6:
        assert "after 6 steps: the weights of the last step (best dev Spearman" in message
    else:
        assert (f"after 6 steps: the weights of step {result.kept_step}, the best on STSb dev (Spearman "
                f"{result.best_dev_spearman:.2f}; the last step scored {result.dev_spearman[-1]:.2f})") in message
    earlier = SiameseResult(tmp_path, 80, dev_spearman=[85.12, 84.0], best_dev_spearman=85.12, kept_step=40)
    assert saved_message(earlier).startswith(f"saved {tmp_path} after 80 steps: the weights of step 40, the best on "
                                             "STSb dev (Spearman 85.12; the last step scored 84.00)")
    assert not (tmp_path / "st" / "checkpoints").exists()
    SentenceTransformer(str(tmp_path / "st"), device="cpu")


def test_softmax_on_sick_with_cls_pooling(tiny_bert_copy: Path, tmp_path: Path) -> None:
    sick = tmp_path / "SICK.txt"
    labels = ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]
    rows = [f"{i}\tthe cat sees the river {i}\ta dog likes the garden\t{labels[i % 3]}\t{1 + i % 5}\tx\tx\tx\tx\tF\tF\t"
            f"{'TRAIN' if i < 24 else 'TRIAL'}" for i in range(30)]
    sick.write_text(SICK_HEADER + "\n" + "\n".join(rows) + "\n")
    assert detect_source(sick) == "sick"
    dataset = load_training_dataset(sick, "softmax", np.random.default_rng(0))
    assert len(dataset) == 24 and dataset.column_names == ["sentence1", "sentence2", "label"]
    result = train_siamese(_config(tiny_bert_copy, sick, tmp_path / "st", "softmax", pooling="cls"))
    assert result.steps == 4
    assert _pooling(SentenceTransformer(str(tmp_path / "st"), device="cpu")).pooling_mode == "cls"
    saved = json.loads((tmp_path / "st" / LABELS_FILE).read_text())
    assert saved == {"labels": ["entailment", "neutral", "contradiction"]}  # SICK's ids, as named


def test_label_names_train_and_their_map_is_saved(tiny_bert_copy: Path, tmp_path: Path) -> None:
    nli = tmp_path / "nli.csv"
    names = ["entailment", "neutral", "contradiction"]
    nli.write_text("sentence1,sentence2,label\n" + "".join(f"the cat {i},a dog {i},{names[i % 3]}\n" for i in range(12)))
    train_siamese(_config(tiny_bert_copy, nli, tmp_path / "st", "softmax", max_steps=1))
    assert json.loads((tmp_path / "st" / LABELS_FILE).read_text()) == {"labels": sorted(names)}


def test_mnrl_on_raw_documents_uses_self_supervised_pairs(tiny_bert_copy: Path, tiny_jsonl_corpus: Path,
                                                          tmp_path: Path) -> None:
    assert detect_source(tiny_jsonl_corpus) == "documents"
    dataset = load_training_dataset(tiny_jsonl_corpus, "mnrl", np.random.default_rng(0))
    assert dataset.column_names == ["anchor", "positive"] and dataset[0]["anchor"].startswith("Notes on")
    result = train_siamese(_config(tiny_bert_copy, tiny_jsonl_corpus, tmp_path / "st", "mnrl", pooling="max"))
    assert result.steps == 4
    SentenceTransformer(str(tmp_path / "st"), device="cpu")


def test_triplet_objective_via_cli(tiny_bert_copy: Path, tiny_triplets: Path, tmp_path: Path) -> None:
    result = main(["siamese", "--base", str(tiny_bert_copy), "--objective", "triplet", "--train", str(tiny_triplets),
                   "--out", str(tmp_path / "st"), "--max-steps", "3", "--batch-size", "8", "--no-eval"])
    assert result.steps == 3
    SentenceTransformer(str(tmp_path / "st"), device="cpu")


def test_sentence_transformer_base_keeps_or_replaces_pooling(tiny_model_dir: Path) -> None:
    assert _pooling(load_sentence_model(tiny_model_dir)).pooling_mode == "mean"
    model = load_sentence_model(tiny_model_dir, pooling="cls")
    assert _pooling(model).pooling_mode == "cls" and len(list(model.children())) == 3  # Normalize kept


def test_bad_training_inputs_fail_with_fix(tiny_pairs: Path, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="neither an STSb folder.*nor a BEIR folder"):
        detect_source(tmp_path)
    with pytest.raises(ValueError, match="Objective 'softmax' cannot train on pairs.*it needs class labels"):
        load_training_dataset(tiny_pairs, "softmax", rng)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"left": "a", "right": "b"}) + "\n")
    with pytest.raises(ValueError, match="match no pair schema. Valid column sets"):
        load_training_dataset(bad, "cosine", rng)
    with pytest.raises(ValueError, match="neither a SentenceTransformer folder.*nor a BERT folder"):
        load_sentence_model(tmp_path)


def test_siamese_output_works_with_indexer_and_search(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    indexer = pytest.importorskip("indexer")
    search = pytest.importorskip("search")
    if not hasattr(indexer, "build_index") or not hasattr(search, "Searcher"):
        pytest.skip("indexer.build_index / search.Searcher not available yet")
    out = tmp_path / "st"
    train_siamese(_config(tiny_bert_copy, tiny_pairs, out, "cosine", max_steps=2, max_seq_length=128))
    source = tmp_path / "docs"
    source.mkdir()
    (source / "a.txt").write_text("The cat sees the river while talking about weather.")
    (source / "b.txt").write_text("A dog likes the garden while talking about music.")
    (source / "c.txt").write_text("The farmer visits the market while talking about travel.")
    index_dir = tmp_path / "index"
    indexer.build_index(indexer.IndexConfig(source=source, index_dir=index_dir, model=str(out), show_progress=False))
    hits = search.Searcher(index_dir, model=str(out)).search("cat river", k=3)
    assert 1 <= len(hits) <= 3


def test_beir_train_qrels_become_pairs_and_triplets(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": f"d{i}", "title": f"Title {i}", "text": f"passage {i}"}) + "\n" for i in range(5)))
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n" for i in range(3)))
    (beir / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq2\td3\t0\n")
    assert detect_source(beir) == "beir"
    pairs = load_training_dataset(beir, "mnrl", np.random.default_rng(0))
    assert pairs.to_list() == [{"anchor": "query 0", "positive": "Title 0\npassage 0"},  # passage_text(title, text)
                               {"anchor": "query 1", "positive": "Title 1\npassage 1"}]
    triplets = load_training_dataset(beir, "triplet", np.random.default_rng(0))
    assert all(row["negative"] != row["positive"] for row in triplets)
    with pytest.raises(ValueError, match="Objective 'cosine' cannot train on beir data"):
        load_training_dataset(beir, "cosine", np.random.default_rng(0))


def test_training_path_errors(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="Training data .* does not exist"):
        load_training_dataset(tmp_path / "none.jsonl", "mnrl", rng)
    (tmp_path / "data.parquet").write_text("x")
    with pytest.raises(ValueError, match="Unsupported training file .* Valid: an STSb or BEIR folder"):
        load_training_dataset(tmp_path / "data.parquet", "mnrl", rng)
    (tmp_path / "short.txt").write_text("Tiny.\n\nAlso tiny.\n")
    with pytest.raises(ValueError, match="No training examples for objective 'mnrl'"):
        load_training_dataset(tmp_path / "short.txt", "mnrl", rng)
    with pytest.raises(ValueError, match="Unknown pooling 'avg'. Valid: cls, mean, max"):
        load_sentence_model(tmp_path, pooling="avg")
