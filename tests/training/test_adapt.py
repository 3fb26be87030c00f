from __future__ import annotations

from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer

from training.__main__ import main
from training.adapt import AdaptConfig, adapt, held_out_documents
from training.output_folder import work_folder


def test_adapt_runs_mlm_then_mnrl_and_writes_a_sentence_model(tiny_bert_copy: Path, tiny_jsonl_corpus: Path, tmp_path: Path) -> None:
    result = main(["adapt", "--corpus", str(tiny_jsonl_corpus), "--base", str(tiny_bert_copy), "--out", str(tmp_path / "a"),
                   "--mlm-steps", "3", "--mlm-batch-size", "4", "--mlm-eval-documents", "5", "--siamese-steps", "3", "--siamese-batch-size", "4", "--max-seq-length", "64"])
    assert result.stages == ("mlm", "mnrl")
    assert result.mlm_folder is not None and (result.mlm_folder / "config.json").is_file()
    vectors = SentenceTransformer(str(result.model), device="cpu").encode(["a sentence", "another one"])
    model = SentenceTransformer(str(result.model), device="cpu")
    assert model.max_seq_length == 64
    assert vectors.shape == (2, 32)


def test_bad_adapt_configs_say_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"siamese_steps \(0\) at least 1"):
        AdaptConfig(corpus=tmp_path, out=tmp_path, siamese_steps=0)
    with pytest.raises(ValueError, match="Unknown objective 'nli'. Valid:"):
        AdaptConfig(corpus=tmp_path, out=tmp_path, pairs_objective="nli")
    with pytest.raises(ValueError, match="Base model folder 'nowhere' not found"):
        adapt(AdaptConfig(corpus=tmp_path, out=tmp_path, base="nowhere"))


def test_small_corpus_names_the_adapt_flag_and_the_default_held_out_scales(tmp_path: Path) -> None:
    corpus = tmp_path / "small.txt"
    corpus.write_text("\n\n".join(f"Document {i} is short. It has two sentences." for i in range(5)) + "\n")
    with pytest.raises(ValueError, match=r"has 5 documents with text, fewer than the 11 needed for 10 held-out "
                                         r"documents \(--mlm-eval-documents\) plus training; lower --mlm-eval-documents"):
        adapt(AdaptConfig(corpus=corpus, out=tmp_path / "a", mlm_eval_documents=10))
    assert not (tmp_path / "a").exists() and not work_folder(tmp_path / "a").exists()
    assert held_out_documents(AdaptConfig(corpus=corpus, out=tmp_path / "a")) == 1  # a tenth, at least 1
    many = tmp_path / "many.txt"
    many.write_text("\n\n".join(f"Document {i}." for i in range(2500)) + "\n")
    assert held_out_documents(AdaptConfig(corpus=many, out=tmp_path / "a")) == 200
