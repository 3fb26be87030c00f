"""BERT pretraining with masked language modelling and next sentence prediction (Devlin et al. 2019).

From scratch (a size preset) or continued from an existing BERT folder. The MLM
head is applied to masked positions only, so the vocabulary projection costs 15%
of a full-sequence head. AdamW with linear warm-up and decay; bf16 autocast and
SDPA attention on GPU, fp32 on CPU. One process reads its losses back from the device only at
log, eval and save steps, so the CPU makes the next batch while the GPU runs the last one.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForPreTraining,
    get_linear_schedule_with_warmup,
)

from data.raw_text import iter_documents
from training.checkpoint import list_checkpoints, load_latest_checkpoint, save_checkpoint
from training.config import PRESETS, SPECIAL_TOKENS, PretrainConfig, resolve_base
from training.distributed import (
    DistributedContext,
    check_replicas_agree,
    gather_objects,
    init_distributed,
    launched_context,
    sum_over_ranks,
    training_device,
)
from training.input_files import checked_input
from training.interrupt import CtrlC, TrainingInterrupted
from training.masking import IGNORE_INDEX, MaskingVocab, mask_tokens
from training.output_folder import OutputFolder, finish, plan_output, prepare
from training.pretrain_data import (
    ExampleStream,
    PretrainExample,
    TokenizedDocument,
    collate,
    document_examples,
    tokenize_documents,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalMetrics:
    step: int
    mlm_loss: float
    mlm_accuracy: float
    nsp_accuracy: float | None


@dataclass(frozen=True)
class PretrainResult:
    out: Path
    step: int
    losses: dict[int, float] = field(default_factory=dict)  # step -> training loss (MLM + NSP)
    evals: list[EvalMetrics] = field(default_factory=list)
    tokens_per_second: float = 0.0
    fresh_heads: tuple[str, ...] = ()


def load_tokenizer(config: PretrainConfig):
    folder = config.tokenizer or config.base
    if not (Path(folder) / "vocab.txt").is_file() and not (Path(folder) / "tokenizer.json").is_file():
        raise ValueError(
            f"Tokenizer folder {str(folder)!r} has no vocab.txt or tokenizer.json. "
            "Train one with `python -m training tokenizer --corpus PATH --out DIR`."
        )
    return AutoTokenizer.from_pretrained(str(folder))


def masking_vocab(tokenizer) -> MaskingVocab:
    """The masking view of the tokenizer's trained vocabulary.

    Tokens the tokenizer adds on the fly (a [MASK] missing from vocab.txt) are
    left out on purpose, so a vocabulary without [MASK] fails here.
    """
    vocab = tokenizer.get_vocab()
    tokens = [""] * max(len(tokenizer), max(vocab.values()) + 1)
    for token, index in vocab.items():
        if index < tokenizer.vocab_size:
            tokens[index] = token
    return MaskingVocab.from_tokens(tokens, list(SPECIAL_TOKENS) + list(tokenizer.all_special_tokens))


def build_model(config: PretrainConfig, vocab_size: int, pad_id: int) -> tuple[BertForPreTraining, tuple[str, ...]]:
    """The model to train and the names of heads that start from random weights."""
    if config.base is not None:
        model, info = BertForPreTraining.from_pretrained(
            str(config.base), output_loading_info=True, attn_implementation=config.attention
        )
        missing = info["missing_keys"]
        fresh = tuple(name for name, prefix in (("MLM", "cls.predictions"), ("NSP", "cls.seq_relationship"))
                      if any(key.startswith(prefix) for key in missing))
        if fresh:
            logger.info("base %s has no %s head; initialised fresh", config.base, " or ".join(fresh))
        else:
            logger.info("base %s already has MLM and NSP heads", config.base)
        if model.config.vocab_size != vocab_size:
            raise ValueError(
                f"base model vocab size ({model.config.vocab_size}) differs from the tokenizer's ({vocab_size}); "
                "continue pretraining with the base folder's own tokenizer (omit --tokenizer)."
            )
        return model, fresh
    size = PRESETS[config.preset]
    hidden = config.resolved_hidden_size
    bert_config = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=config.num_layers or size.num_layers,
        num_attention_heads=config.resolved_num_heads,
        intermediate_size=config.intermediate_size or 4 * hidden,
        max_position_embeddings=max(512, config.max_length),
        type_vocab_size=2,
        pad_token_id=pad_id,
    )
    model = BertForPreTraining._from_config(bert_config, attn_implementation=config.attention)
    return model, ("MLM", "NSP")


def load_corpus(config: PretrainConfig, tokenizer) -> tuple[list[TokenizedDocument], list[TokenizedDocument]]:
    """(train, held-out) tokenized documents; the held-out slice is the last `eval_documents` documents."""
    documents = itertools.islice(iter_documents(checked_input(config.corpus, config.strict).path), config.max_documents)
    corpus = tokenize_documents(documents, tokenizer)
    if not corpus:
        raise ValueError(
            f"Corpus {str(config.corpus)!r} has no documents with text. Pass a non-empty .txt "
            "(documents separated by blank lines), .jsonl with 'text', or WikiExtractor file."
        )
    needed = config.eval_documents + (2 if config.nsp else 1)
    if len(corpus) < needed:
        raise ValueError(
            f"Corpus {str(config.corpus)!r} has {len(corpus)} documents with text, fewer than the {needed} needed "
            f"for {config.eval_documents} held-out documents plus training; lower --eval-documents or add text."
        )
    return corpus[: -config.eval_documents], corpus[-config.eval_documents :]


def held_out_examples(documents: list[TokenizedDocument], config: PretrainConfig, cls_id: int, sep_id: int,
                      nsp: bool) -> list[PretrainExample]:
    """The evaluation examples, built once: each held-out document's examples in order, up to
    `eval_batches` batches. Never cycled, so a small held-out slice is not counted twice."""
    wanted = config.eval_batches * config.batch_size
    examples: list[PretrainExample] = []
    for index in range(len(documents)):
        rng = np.random.default_rng([config.seed, 1, index])
        examples += document_examples(documents, index, rng, config.max_length, cls_id, sep_id, nsp)
        if len(examples) >= wanted:
            break
    return examples[:wanted]


def warn_if_batch_repeats(documents: list[TokenizedDocument], config: PretrainConfig, world_size: int) -> None:
    """Warn when one step's batch exceeds the examples the training documents make: it then
    repeats the corpus, and costs as much as that many epochs for what one epoch teaches."""
    room = config.max_length - (3 if config.nsp else 2)
    examples = sum(max(1, -(-sum(len(sentence) for sentence in document) // room)) for document in documents)
    batch = config.batch_size * world_size
    if batch > examples:
        logger.warning(
            "batch of %d examples per step, but the %d training documents make only about %d: each step repeats "
            "the corpus about %.0f times. Lower --batch-size to %d or less, or add documents.",
            batch, len(documents), examples, batch / examples, examples)


def to_tensors(batch: dict[str, np.ndarray], device: torch.device) -> dict[str, torch.Tensor]:
    return {key: torch.from_numpy(value).to(device) for key, value in batch.items()}


def make_batch(examples, rng: np.random.Generator, vocab: MaskingVocab, pad_id: int, config: PretrainConfig):
    batch = collate(examples, pad_id)
    batch["input_ids"], batch["labels"] = mask_tokens(batch["input_ids"], rng, vocab, config.mask_rate,
                                                       config.whole_word_masking)
    return batch


def pretraining_losses(model: BertForPreTraining, batch: dict[str, torch.Tensor], nsp: bool):
    """(total loss, MLM loss, NSP loss or None, MLM logits (N_masked, V), NSP logits (B, 2))."""
    sequence, pooled = model.bert(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], token_type_ids=batch["token_type_ids"]
    )[:2]  # (B, T, H), (B, H)
    selected = batch["labels"] != IGNORE_INDEX
    mlm_logits = model.cls.predictions(sequence[selected])  # (N_masked, V)
    if selected.any():
        mlm_loss = F.cross_entropy(mlm_logits.float(), batch["labels"][selected])
    else:  # nothing masked in this batch (tiny batches only): a zero that keeps the graph
        mlm_loss = mlm_logits.float().sum() * 0.0
    if not nsp:
        return mlm_loss, mlm_loss, None, mlm_logits, None
    nsp_logits = model.cls.seq_relationship(pooled)  # (B, 2)
    nsp_loss = F.cross_entropy(nsp_logits.float(), batch["next_sentence_label"])
    return mlm_loss + nsp_loss, mlm_loss, nsp_loss, mlm_logits, nsp_logits


class PretrainingObjective(nn.Module):
    """`pretraining_losses` as a module's forward, so DistributedDataParallel can wrap it.

    DDP syncs gradients only for a forward that goes through the wrapper, and the loss
    calls the encoder and the two heads separately (the MLM head on masked positions only).
    """

    def __init__(self, model: BertForPreTraining, nsp: bool) -> None:
        super().__init__()
        self.model, self.nsp = model, nsp

    def forward(self, batch: dict[str, torch.Tensor]):
        return pretraining_losses(self.model, batch, self.nsp)


def data_parallel(objective: PretrainingObjective, device: torch.device, nsp: bool) -> DistributedDataParallel:
    """The objective under DDP: gradients averaged over ranks during backward.

    Without NSP the pooler and NSP head get no gradient, which DDP must be told
    (find_unused_parameters). BERT's buffers are constant position and type ids, so
    they are not re-broadcast at every step.
    """
    return DistributedDataParallel(objective, device_ids=[device.index] if device.type == "cuda" else None,
                                   find_unused_parameters=not nsp, broadcast_buffers=False)


def _rank_state(stream: ExampleStream, device: torch.device) -> dict:
    """What differs between ranks: the data position and the random generators."""
    return {"stream": stream.state_dict(), "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None}


def _load_rank_state(state: dict, context: DistributedContext, stream: ExampleStream, device: torch.device,
                     path: Path) -> None:
    saved = state.get("world_size", 1)
    if saved != context.world_size:
        raise ValueError(
            f"The checkpoint in {path} was written by a run of {saved} process(es); this run has "
            f"{context.world_size}. Each process's data position is in the checkpoint, so resume with the same "
            f"number of processes (torchrun --nnodes N --nproc_per_node M with N*M = {saved}), or drop --resume "
            "and start a fresh run in a new --out."
        )
    own = state["ranks"][context.rank] if context.is_distributed else state
    stream.load_state_dict(own["stream"])
    torch.set_rng_state(own["torch_rng"])
    if device.type == "cuda" and own.get("cuda_rng") is not None:
        torch.cuda.set_rng_state(own["cuda_rng"], device)


@torch.no_grad()
def evaluate(model, batches: list[dict[str, torch.Tensor]], nsp: bool, step: int, autocast) -> EvalMetrics:
    model.eval()
    mlm_loss_sum = correct = total = nsp_correct = nsp_total = 0.0
    for batch in batches:
        with autocast():
            _, mlm_loss, _, mlm_logits, nsp_logits = pretraining_losses(model, batch, nsp)
        labels = batch["labels"][batch["labels"] != IGNORE_INDEX]
        mlm_loss_sum += float(mlm_loss) * len(labels)
        correct += float((mlm_logits.argmax(-1) == labels).sum())
        total += len(labels)
        if nsp_logits is not None:
            nsp_correct += float((nsp_logits.argmax(-1) == batch["next_sentence_label"]).sum())
            nsp_total += len(batch["next_sentence_label"])
    model.train()
    return EvalMetrics(step, mlm_loss_sum / max(total, 1), correct / max(total, 1),
                       nsp_correct / nsp_total if nsp_total else None)


def build_optimizer(model: torch.nn.Module, config: PretrainConfig) -> torch.optim.AdamW:
    """AdamW (Loshchilov and Hutter 2019) without decay on biases and LayerNorm weights, as in BERT."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        (no_decay if parameter.ndim < 2 or "LayerNorm" in name else decay).append(parameter)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate, betas=(0.9, 0.999), eps=1e-6)


def pretrain(config: PretrainConfig) -> PretrainResult:
    """Train, checkpoint and save; under torchrun, data-parallel over the launched processes.

    Each rank reads its own shard of the documents and masks with its own generator; DDP
    averages the gradients, so a step sees `batch_size` examples per process. The loss
    recorded per step is the mean over ranks. Rank 0 alone evaluates, logs and writes
    checkpoints and the model folder (which must be on storage every rank can read for
    `--resume`).
    """
    if config.base is not None:  # "default" names all-MiniLM-L6-v2, as everywhere else
        base = resolve_base(config.base)
        check_weights(base)
        config = replace(config, base=base)
    output = plan_output(config.out, "pretrain", config.overwrite, config.resume,
                         can_resume=lambda folder: bool(list_checkpoints(folder)))
    trainer = Pretrainer(config, output)
    if output.resumed:
        trainer.resume()
    return trainer.run()


WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")


def check_weights(base: Path) -> None:
    """A --base folder must hold a BERT's config and weights; say so before anything loads."""
    if not (base / "config.json").is_file():
        raise ValueError(
            f"Base model {str(base)!r} is not a BERT folder (no config.json). Pass a BERT or SentenceTransformer "
            "folder, e.g. the output of `python -m training pretrain`, or 'default' for all-MiniLM-L6-v2."
        )
    if not any((base / name).is_file() for name in WEIGHT_FILES):
        raise ValueError(
            f"Base model {str(base)!r} has a config.json but no weights ({' or '.join(WEIGHT_FILES[:2])}). "
            "Pass the folder a model was saved to (save_pretrained writes both), or train one from scratch "
            "with --tokenizer and --preset instead of --base."
        )


class Pretrainer:
    """One pretraining run: its model, optimizer, data streams and history; `step` trains one
    batch, `evaluate` and `checkpoint` record, `run` loops until the step or time budget."""

    def __init__(self, config: PretrainConfig, output: OutputFolder) -> None:
        self.config = config
        self.tokenizer = load_tokenizer(config)
        self.vocab = masking_vocab(self.tokenizer)
        self.pad_id = self.tokenizer.pad_token_id
        cls_id, sep_id = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        train_docs, eval_docs = load_corpus(config, self.tokenizer)
        self.device = device = training_device(config.device, launched_context())
        self.context = context = init_distributed(device)
        self.output = prepare(output)  # the inputs are read: now the work folder
        self.work = self.output.work
        if context.is_main:
            logger.info("corpus: %d training documents, %d held out", len(train_docs), len(eval_docs))
        if context.is_distributed and context.is_main:
            logger.info("data-parallel over %d processes (%s): %d examples per step", context.world_size,
                        "nccl" if device.type == "cuda" else "gloo", context.world_size * config.batch_size)
        torch.manual_seed(config.seed)
        self.model, self.fresh_heads = build_model(config, len(self.vocab.is_continuation), self.pad_id)
        self.model.to(device).train()
        objective = PretrainingObjective(self.model, config.nsp)
        self.trained: nn.Module = objective
        if context.is_distributed:
            self.trained = data_parallel(objective, device, config.nsp)  # rank 0's initial weights, broadcast
            torch.manual_seed(config.seed + context.rank)  # dropout differs between ranks
        self.use_bf16 = config.precision == "bf16" or (config.precision == "auto" and device.type == "cuda")
        self.optimizer = build_optimizer(self.model, config)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, config.warmup_steps, config.max_steps)
        self.stream = ExampleStream(train_docs, config.seed, config.max_length, cls_id, sep_id, config.nsp,
                                    rank=context.rank, world_size=context.world_size)
        self.eval_nsp = config.nsp and len(eval_docs) >= 2  # random B segments need a second held-out document
        self.eval_batches = []
        if context.is_main:
            examples = held_out_examples(eval_docs, config, cls_id, sep_id, self.eval_nsp)
            eval_rng = np.random.default_rng([config.seed, 1])
            self.eval_batches = [
                to_tensors(make_batch(examples[start : start + config.batch_size], eval_rng, self.vocab, self.pad_id,
                                      config), device) for start in range(0, len(examples), config.batch_size)]
            logger.info("held-out data: %d examples from %d documents, the same at every evaluation",
                        len(examples), len(eval_docs))
            warn_if_batch_repeats(train_docs, config, context.world_size)
        self.step_no = 0
        self.losses: dict[int, float] = {}
        # In one process, each step's loss stays on the device until `settle` reads them all at
        # once: a read per step made the CPU wait for the GPU, then the GPU for the CPU's next batch.
        self._unsettled: dict[int, torch.Tensor] = {}
        self.evals: list[EvalMetrics] = []

    def autocast(self):
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.use_bf16)

    def resume(self) -> None:
        state = load_latest_checkpoint(self.work)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        _load_rank_state(state, self.context, self.stream, self.device, self.work)
        self.step_no, self.losses = state["step"], dict(state["losses"])
        self.evals = [EvalMetrics(**metrics) for metrics in state["evals"]]

    def settle(self) -> None:
        """Read back the losses of the steps since the last call (waits for the device's queued work)."""
        if self._unsettled:
            values = torch.stack(list(self._unsettled.values())).tolist()
            self.losses.update(zip(self._unsettled, values, strict=True))
            self._unsettled.clear()

    def checkpoint_state(self) -> dict:
        """The whole run's state; every rank must call it (it gathers each rank's position and generators)."""
        self.settle()
        check_replicas_agree(self.model)
        ranks = gather_objects(_rank_state(self.stream, self.device))
        state = {
            "step": self.step_no,
            "world_size": self.context.world_size,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            **ranks[0],
            "losses": self.losses,
            "evals": [metrics.__dict__ for metrics in self.evals],
        }
        if self.context.is_distributed:
            state["ranks"] = ranks
        return state

    def step(self) -> tuple[int, torch.Tensor, torch.Tensor | None]:
        """Train one batch: (tokens over all ranks, this rank's MLM loss, NSP loss or None)."""
        config, context = self.config, self.context
        seeds = [config.seed, self.step_no, context.rank] if context.is_distributed else [config.seed, self.step_no]
        rng = np.random.default_rng(seeds)
        arrays = make_batch(self.stream.take(config.batch_size), rng, self.vocab, self.pad_id, config)
        own_tokens = int(arrays["attention_mask"].sum())  # counted on the CPU: no wait for the device
        batch = to_tensors(arrays, self.device)
        with self.autocast():
            loss, mlm_loss, nsp_loss, _, _ = self.trained(batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.step_no += 1
        if not context.is_distributed:
            self._unsettled[self.step_no] = loss.detach()
            return own_tokens, mlm_loss, nsp_loss
        loss_sum, batch_tokens = sum_over_ranks([loss.item(), float(own_tokens)], self.device)
        self.losses[self.step_no] = loss_sum / context.world_size
        return int(batch_tokens), mlm_loss, nsp_loss

    def evaluate(self) -> None:
        metrics = evaluate(self.model, self.eval_batches, self.eval_nsp, self.step_no, self.autocast)
        self.evals.append(metrics)
        logger.info("eval step %d: MLM loss %.4f, MLM accuracy %.4f, NSP accuracy %s", self.step_no,
                    metrics.mlm_loss, metrics.mlm_accuracy,
                    "n/a" if metrics.nsp_accuracy is None else f"{metrics.nsp_accuracy:.4f}")

    def agreed(self, flag: bool) -> bool:
        """`flag` on any rank, so that under DDP every rank stops at the same step."""
        if self.context.is_distributed:
            return sum_over_ranks([float(flag)], self.device)[0] > 0
        return flag

    def out_of_time(self, run_start: float) -> bool:
        """Past --max-minutes."""
        minutes = self.config.max_minutes
        return minutes is not None and self.agreed(time.perf_counter() - run_start > 60 * minutes)

    def log_step(self, mlm_loss: torch.Tensor, nsp_loss: torch.Tensor | None, tokens_per_second: float) -> None:
        logger.info("step %d loss %.4f (mlm %.4f%s) lr %.2e %.0f tokens/s", self.step_no, self.losses[self.step_no],
                    mlm_loss.item(), f", nsp {nsp_loss.item():.4f}" if nsp_loss is not None else "",
                    self.scheduler.get_last_lr()[0], tokens_per_second)

    def checkpoint(self) -> None:
        state = self.checkpoint_state()
        if self.context.is_main:
            save_checkpoint(self.work, self.step_no, state)

    def run(self) -> PretrainResult:
        """Train to --max-steps; Ctrl-C saves a checkpoint of the current step and raises TrainingInterrupted."""
        config, context = self.config, self.context
        tokens, train_seconds = 0, 0.0
        run_start = time.perf_counter()
        window_tokens, window_start = 0, time.perf_counter()
        with CtrlC() as ctrl_c:
            while self.step_no < config.max_steps:
                started = time.perf_counter()
                batch_tokens, mlm_loss, nsp_loss = self.step()
                step = self.step_no
                last = step == config.max_steps
                if last or ctrl_c.requested or any(step % every == 0 for every in
                                                   (config.log_every, config.eval_every, config.save_every)):
                    self.settle()  # the device's queued steps end here, inside the timed steps
                tokens += batch_tokens
                window_tokens += batch_tokens
                train_seconds += time.perf_counter() - started
                if context.is_main and (step % config.log_every == 0 or last):
                    now = time.perf_counter()
                    self.log_step(mlm_loss, nsp_loss, window_tokens / max(now - window_start, 1e-9))
                    window_tokens, window_start = 0, now
                if context.is_main and (step % config.eval_every == 0 or last):
                    self.evaluate()
                    window_start = time.perf_counter()
                if self.agreed(ctrl_c.requested):
                    self.checkpoint()
                    raise TrainingInterrupted(step, self.work)
                out_of_time = self.out_of_time(run_start)
                if step % config.save_every == 0 or last or out_of_time:
                    self.checkpoint()
                    window_start = time.perf_counter()
                if out_of_time:
                    if context.is_main:
                        logger.info("time budget of %.1f min reached at step %d; saving (continue with --resume)",
                                    config.max_minutes, step)
                    break
        return self.save(tokens / train_seconds if train_seconds else 0.0)

    def save(self, throughput: float) -> PretrainResult:
        self.settle()
        if self.context.is_main:
            self.model.save_pretrained(str(self.work))
            self.tokenizer.save_pretrained(str(self.work))
        out = finish(self.output)  # the next stage (training adapt) loads this folder on every rank
        if self.context.is_main:
            logger.info("saved BERT folder %s at step %d (%.0f tokens/s over %d process(es))", out,
                        self.step_no, throughput, self.context.world_size)
        return PretrainResult(out, self.step_no, self.losses, self.evals, throughput, self.fresh_heads)
