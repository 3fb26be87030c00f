"""BERT pretraining with masked language modelling and next sentence prediction (Devlin et al. 2019).

From scratch (a size preset) or continued from an existing BERT folder. The MLM
head is applied to masked positions only, so the vocabulary projection costs 15%
of a full-sequence head. AdamW with linear warm-up and decay; bf16 autocast and
SDPA attention on GPU, fp32 on CPU.
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
from transformers import (
    AutoTokenizer,
    BertConfig,
    BertForPreTraining,
    get_linear_schedule_with_warmup,
)

from data.raw_text import iter_documents
from training.checkpoint import list_checkpoints, load_latest_checkpoint, save_checkpoint
from training.config import PRESETS, SPECIAL_TOKENS, PretrainConfig, resolve_base
from training.masking import IGNORE_INDEX, MaskingVocab, mask_tokens
from training.pretrain_data import ExampleStream, TokenizedDocument, collate, tokenize_documents

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
    documents = itertools.islice(iter_documents(config.corpus), config.max_documents)
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


def _device(config: PretrainConfig) -> torch.device:
    return torch.device(config.device or ("cuda" if torch.cuda.is_available() else "cpu"))


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
    if config.base is not None:  # "default" names all-MiniLM-L6-v2, as everywhere else
        config = replace(config, base=resolve_base(config.base))
    tokenizer = load_tokenizer(config)
    vocab = masking_vocab(tokenizer)
    pad_id, cls_id, sep_id = tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    if not config.resume and list_checkpoints(config.out):
        raise ValueError(
            f"{config.out} already holds checkpoints; pass --resume to continue that run or choose a new --out."
        )
    train_docs, eval_docs = load_corpus(config, tokenizer)
    logger.info("corpus: %d training documents, %d held out", len(train_docs), len(eval_docs))

    device = _device(config)
    torch.manual_seed(config.seed)
    model, fresh_heads = build_model(config, len(vocab.is_continuation), pad_id)
    model.to(device).train()
    use_bf16 = config.precision == "bf16" or (config.precision == "auto" and device.type == "cuda")

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_bf16)

    optimizer = build_optimizer(model, config)
    scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, config.max_steps)
    stream = ExampleStream(train_docs, config.seed, config.max_length, cls_id, sep_id, config.nsp)
    eval_nsp = config.nsp and len(eval_docs) >= 2  # random B segments need a second held-out document
    eval_stream = ExampleStream(eval_docs, config.seed + 1, config.max_length, cls_id, sep_id, eval_nsp)
    eval_rng = np.random.default_rng([config.seed, 1])
    eval_batches = [to_tensors(make_batch(eval_stream.take(config.batch_size), eval_rng, vocab, pad_id, config), device)
                    for _ in range(config.eval_batches)]

    step = 0
    losses: dict[int, float] = {}
    evals: list[EvalMetrics] = []
    if config.resume:
        state = load_latest_checkpoint(config.out)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        stream.load_state_dict(state["stream"])
        torch.set_rng_state(state["torch_rng"])
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"])
        step, losses = state["step"], dict(state["losses"])
        evals = [EvalMetrics(**metrics) for metrics in state["evals"]]

    def checkpoint_state() -> dict:
        return {
            "step": step,
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "stream": stream.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state() if device.type == "cuda" else None,
            "losses": losses,
            "evals": [metrics.__dict__ for metrics in evals],
        }

    tokens, train_seconds = 0, 0.0
    run_start = time.perf_counter()
    window_tokens, window_start = 0, time.perf_counter()
    while step < config.max_steps:
        started = time.perf_counter()
        rng = np.random.default_rng([config.seed, step])
        batch = to_tensors(make_batch(stream.take(config.batch_size), rng, vocab, pad_id, config), device)
        with autocast():
            loss, mlm_loss, nsp_loss, _, _ = pretraining_losses(model, batch, config.nsp)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
        losses[step] = loss.item()
        batch_tokens = int(batch["attention_mask"].sum())
        tokens += batch_tokens
        window_tokens += batch_tokens
        train_seconds += time.perf_counter() - started
        if step % config.log_every == 0 or step == config.max_steps:
            now = time.perf_counter()
            logger.info("step %d loss %.4f (mlm %.4f%s) lr %.2e %.0f tokens/s", step, loss.item(), mlm_loss.item(),
                        f", nsp {nsp_loss.item():.4f}" if nsp_loss is not None else "", scheduler.get_last_lr()[0],
                        window_tokens / max(now - window_start, 1e-9))
            window_tokens, window_start = 0, now
        if step % config.eval_every == 0 or step == config.max_steps:
            metrics = evaluate(model, eval_batches, eval_nsp, step, autocast)
            evals.append(metrics)
            logger.info("eval step %d: MLM loss %.4f, MLM accuracy %.4f, NSP accuracy %s", step, metrics.mlm_loss,
                        metrics.mlm_accuracy, "n/a" if metrics.nsp_accuracy is None else f"{metrics.nsp_accuracy:.4f}")
            window_start = time.perf_counter()
        out_of_time = config.max_minutes is not None and time.perf_counter() - run_start > 60 * config.max_minutes
        if step % config.save_every == 0 or step == config.max_steps or out_of_time:
            save_checkpoint(config.out, step, checkpoint_state())
            window_start = time.perf_counter()
        if out_of_time:
            logger.info("time budget of %.1f min reached at step %d; saving (continue with --resume)",
                        config.max_minutes, step)
            break

    model.save_pretrained(str(config.out))
    tokenizer.save_pretrained(str(config.out))
    throughput = tokens / train_seconds if train_seconds else 0.0
    logger.info("saved BERT folder %s at step %d (%.0f tokens/s)", config.out, step, throughput)
    return PretrainResult(config.out, step, losses, evals, throughput, fresh_heads)
