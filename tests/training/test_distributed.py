"""Data-parallel training under torchrun, on 2 CPU processes (gloo), against 1 process at equal global batch.

Tolerances, from runs on this machine (2 cores): pretraining shards documents per rank, so its
2-process curve sees other examples than the 1-process one and matches statistically (measured:
5-step means within 0.05 nats, single steps within 0.12); the sentence-transformers trainer
splits the same shuffled batches between ranks, so its curve matches up to dropout (measured:
steps within 0.04). The asserted bounds are about twice those.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoTokenizer, BertForPreTraining, BertModel

from training.checkpoint import list_checkpoints, load_checkpoint
from training.config import PretrainConfig, SiameseConfig
from training.output_folder import MARKER, work_folder
from training.pretrain import pretrain
from training.pretrain_data import ExampleStream
from training.sentence_model import load_sentence_model
from training.siamese import train_siamese

REPO = Path(__file__).resolve().parents[2]
TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64}
PRETRAIN_STEP_TOLERANCE = 0.3  # nats, any single step
PRETRAIN_WINDOW_TOLERANCE = 0.12  # nats, mean over 5 steps
SIAMESE_STEP_TOLERANCE = 0.1  # cosine-similarity MSE, any single step


def torchrun(args: list[str], nproc: int = 2, timeout: int = 300) -> subprocess.CompletedProcess:
    """`python -m torch.distributed.run --standalone --nproc_per_node N ARGS` on one thread per process."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"torchrun failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return done


def _curve(losses: dict[int, float]) -> np.ndarray:
    return np.asarray([losses[step] for step in sorted(losses)])


def _pretrain_flags(corpus: Path, tokenizer: Path, out: Path, batch_size: int, **extra: str) -> list[str]:
    flags = {"corpus": corpus, "tokenizer": tokenizer, "out": out, "max-steps": 30, "batch-size": batch_size,
             "max-length": 48, "eval-documents": 4, "eval-every": 15, "log-every": 10, "save-every": 15,
             "warmup-steps": 4, "learning-rate": 2e-3, **extra}
    return [part for key, value in flags.items() for part in (f"--{key}", str(value))]


def test_stream_shards_split_each_epoch_between_ranks(tiny_corpus: Path, tiny_tokenizer_dir: Path) -> None:
    from training.pretrain import load_corpus, load_tokenizer

    config = PretrainConfig(corpus=tiny_corpus, out=Path("unused"), tokenizer=tiny_tokenizer_dir, eval_documents=4)
    tokenizer = load_tokenizer(config)
    docs, _ = load_corpus(config, tokenizer)
    ids = (tokenizer.cls_token_id, tokenizer.sep_token_id)

    def first_epoch(rank: int, world: int) -> list[int]:
        stream = ExampleStream(docs, 0, 48, *ids, rank=rank, world_size=world)
        seen = []
        while stream.epoch == 0:
            stream._current()
            seen.append(int(stream._order[stream._shard[stream.position]]))
            stream._advance_document()
        return seen

    one, rank0, rank1 = first_epoch(0, 1), first_epoch(0, 2), first_epoch(1, 2)
    assert one == list(np.random.default_rng([0, 0]).permutation(len(docs)))  # one process: unchanged order
    assert rank0 == one[0::2] and rank1 == one[1::2]
    # Same draws for the same document wherever it lands: rank 1's stream starts with one's second document.
    single = ExampleStream(docs, 0, 48, *ids)
    single._advance_document()
    assert [e.input_ids.tolist() for e in ExampleStream(docs, 0, 48, *ids, rank=1, world_size=2).take(2)] == \
        [e.input_ids.tolist() for e in single.take(2)]


def test_two_process_pretraining_follows_one_process_and_resumes(tiny_corpus: Path, tiny_tokenizer_dir: Path,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "tiny.json").write_text(json.dumps({**TINY, "eval_batches": 2}))
    shape = ["--config", str(tmp_path / "tiny.json")]
    single = pretrain(PretrainConfig(corpus=tiny_corpus, tokenizer=tiny_tokenizer_dir, out=tmp_path / "one", **TINY,
                                     max_steps=30, batch_size=16, max_length=48, eval_documents=4, eval_batches=2,
                                     eval_every=15, log_every=10, save_every=15, warmup_steps=4, learning_rate=2e-3))
    two_out = tmp_path / "two"
    torchrun(["-m", "training", "pretrain", *_pretrain_flags(tiny_corpus, tiny_tokenizer_dir, two_out, 8), *shape])

    state = load_checkpoint(list_checkpoints(two_out)[-1][1])
    assert state["step"] == 30 and state["world_size"] == 2 and len(state["ranks"]) == 2
    assert state["ranks"][0]["stream"] != state["ranks"][1]["stream"]  # each rank read its own shard
    one, two = _curve(single.losses), _curve(state["losses"])
    assert len(two) == 30 and two[-5:].mean() < two[:5].mean() - 0.5
    assert np.abs(one - two).max() < PRETRAIN_STEP_TOLERANCE, (one, two)
    assert np.abs(one.reshape(-1, 5).mean(1) - two.reshape(-1, 5).mean(1)).max() < PRETRAIN_WINDOW_TOLERANCE
    assert [e["step"] for e in state["evals"]] == [15, 30]  # rank 0 evaluated

    # The folder rank 0 wrote loads in transformers and sentence-transformers.
    tokenizer = AutoTokenizer.from_pretrained(str(two_out))
    with torch.no_grad():
        BertForPreTraining.from_pretrained(str(two_out))(**tokenizer("the cat sees the river", return_tensors="pt"))
    assert BertModel.from_pretrained(str(two_out)).config.hidden_size == 32
    assert load_sentence_model(two_out).encode(["the cat sees the river"]).shape == (1, 32)

    # A run stopped after step 15 resumes on 2 processes to the same losses and weights.
    resumed_out = tmp_path / "resumed"
    partial = work_folder(resumed_out)  # where the stopped run's checkpoints and mark are
    shutil.copytree(two_out / "checkpoints", partial / "checkpoints")
    shutil.copy(two_out / MARKER, partial)
    (partial / "checkpoints" / "step-30.pt").unlink()
    torchrun(["-m", "training", "pretrain", *_pretrain_flags(tiny_corpus, tiny_tokenizer_dir, resumed_out, 8),
              *shape, "--resume"])
    resumed = load_checkpoint(list_checkpoints(resumed_out)[-1][1])
    assert resumed["step"] == 30
    np.testing.assert_allclose(_curve(resumed["losses"]), two, rtol=1e-5)
    a, b = BertForPreTraining.from_pretrained(str(two_out)).state_dict(), \
        BertForPreTraining.from_pretrained(str(resumed_out)).state_dict()
    assert all(torch.allclose(a[key], b[key], atol=1e-5) for key in a)

    # Resuming a 2-process checkpoint in one process is refused: the data positions are per rank.
    with pytest.raises(ValueError, match=r"written by a run of 2 process\(es\); this run has 1.*--nproc_per_node"):
        pretrain(PretrainConfig(corpus=tiny_corpus, tokenizer=tiny_tokenizer_dir, out=resumed_out, **TINY,
                                max_steps=31, batch_size=8, max_length=48, eval_documents=4, resume=True))


def test_two_process_siamese_follows_one_process_and_indexes(tiny_bert_copy: Path, tiny_pairs: Path,
                                                             tmp_path: Path) -> None:
    from indexer import IndexConfig, build_index
    from search import Searcher

    common = {"base": str(tiny_bert_copy), "objective": "cosine", "train": tiny_pairs, "max_steps": 20,
              "learning_rate": 1e-3, "evaluate_on_dev": False}
    single = train_siamese(SiameseConfig(out=tmp_path / "one", batch_size=16, **common))
    two_out, result_file = tmp_path / "two", tmp_path / "two.json"
    torchrun(["tests/training/torchrun_entry.py", str(result_file), "siamese", "--base", str(tiny_bert_copy),
              "--objective", "cosine", "--train", str(tiny_pairs), "--out", str(two_out), "--max-steps", "20",
              "--batch-size", "8", "--learning-rate", "1e-3", "--no-eval"])
    two = json.loads(result_file.read_text())
    assert two["steps"] == 20 and len(two["train_losses"]) == 20
    one_curve, two_curve = np.asarray(single.train_losses), np.asarray(two["train_losses"])
    assert np.abs(one_curve - two_curve).max() < SIAMESE_STEP_TOLERANCE, (one_curve, two_curve)
    assert two_curve[-5:].mean() < two_curve[:5].mean() - 0.2
    assert not (two_out / "checkpoints").exists()

    # The model rank 0 saved indexes and searches.
    model = SentenceTransformer(str(two_out), device="cpu")
    assert model.encode(["the cat sees the river"]).shape == (1, 32)
    source = tmp_path / "docs"
    source.mkdir()
    for name, text in {"a.txt": "The cat sees the river while talking about weather.",
                       "b.txt": "A dog likes the garden while talking about music.",
                       "c.txt": "The farmer visits the market while talking about travel."}.items():
        (source / name).write_text(text)
    build_index(IndexConfig(source=source, index_dir=tmp_path / "index", model=str(two_out), show_progress=False))
    hits = Searcher(tmp_path / "index", model=str(two_out)).search("cat river", k=3)
    assert 1 <= len(hits) <= 3


def test_two_process_cross_encoder_trains_and_loads(tiny_bert_copy: Path, tiny_pairs: Path, tmp_path: Path) -> None:
    """Mean pooling leaves BERT's pooler without a gradient, which DDP refuses unless it is frozen."""
    from sentence_transformers import CrossEncoder

    out, result_file = tmp_path / "reranker", tmp_path / "result.json"
    torchrun(["tests/training/torchrun_entry.py", str(result_file), "cross-encoder", "--base", str(tiny_bert_copy),
              "--train", str(tiny_pairs), "--out", str(out), "--max-steps", "4", "--batch-size", "4",
              "--max-length", "32", "--pooling", "mean"])
    assert json.loads(result_file.read_text())["steps"] == 4
    scores = CrossEncoder(str(out), device="cpu").predict([("the cat sees the river", "a dog likes the garden")])
    assert np.isfinite(scores).all()


RANK_SCRIPT = """
import json, sys
from pathlib import Path
import torch.distributed as dist
from training.distributed import barrier, is_main_process, shutdown
before = is_main_process()
barrier()
row = {"rank": dist.get_rank(), "main_before_group": before, "group_after_barrier": dist.is_initialized(),
       "main_after": is_main_process()}
Path(sys.argv[1], f"rank{dist.get_rank()}.json").write_text(json.dumps(row))
shutdown()
"""


def test_ranks_are_known_before_the_process_group_starts(tmp_path: Path) -> None:
    """The sentence-transformers trainers start the group late (in their arguments), after the work
    folder is made: before it, rank 1 must not take itself for rank 0, and a barrier must wait for
    the other process (two ranks once raced to make the same folder)."""
    script = tmp_path / "ranks.py"
    script.write_text(RANK_SCRIPT)
    torchrun([str(script), str(tmp_path)], timeout=120)
    ranks = [json.loads(path.read_text()) for path in sorted(tmp_path.glob("rank*.json"))]
    assert [row["rank"] for row in ranks] == [0, 1]
    assert [row["main_before_group"] for row in ranks] == [True, False]
    assert [row["main_after"] for row in ranks] == [True, False]
    assert all(row["group_after_barrier"] for row in ranks)
