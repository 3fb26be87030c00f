"""One frozen, validated config per training stage; CLIs parse into these and nothing else.

Validation happens in `__post_init__` so a bad value fails before any model or
corpus is loaded, with a message naming the value and how to fix it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from data.paths import shared_data_dir

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
POOLINGS = ("cls", "mean", "max")
OBJECTIVES = ("softmax", "cosine", "mnrl", "triplet")
PRECISIONS = ("auto", "fp32", "bf16")
ATTENTIONS = ("sdpa", "eager")


@dataclass(frozen=True)
class ModelSize:
    """BERT shape: heads = hidden / 64 and FFN = 4 * hidden, as in the BERT and Turc et al. (2019) grid."""

    num_layers: int
    hidden_size: int

    @property
    def num_heads(self) -> int:
        return max(1, self.hidden_size // 64)

    @property
    def intermediate_size(self) -> int:
        return 4 * self.hidden_size


PRESETS: dict[str, ModelSize] = {
    "tiny": ModelSize(2, 128),
    "mini": ModelSize(4, 256),
    "small": ModelSize(4, 512),
    "medium": ModelSize(8, 512),
    "base": ModelSize(12, 768),
}


def default_data_dir() -> Path:
    """SEMSEARCH_DATA, else ../shared/data next to the repository root."""
    return shared_data_dir()


def _check_positive(name: str, value: float, hint: str = "") -> None:
    """A setting that must be above 0; the message names the field and its command-line flag."""
    if value <= 0:
        raise ValueError(f"{name} (--{name.replace('_', '-')}) must be positive, got {value}. {hint}".strip())


def check_score_range(config: Any) -> None:
    """`score_range` as a (low, high) tuple with low < high; set on a frozen config."""
    if config.score_range is None:
        return
    low, high = (float(value) for value in config.score_range)
    if not low < high:
        raise ValueError(f"--score-range {low:g} {high:g}: the low end must be below the high end, e.g. 0 5.")
    object.__setattr__(config, "score_range", (low, high))


def config_from_file(cls: type, path: Path | str, **overrides: Any) -> Any:
    """Build a config from a JSON file of its fields, with `overrides` (e.g. CLI flags) taking precedence."""
    raw = json.loads(Path(path).read_text())
    valid = {field.name for field in fields(cls)}
    unknown = sorted(set(raw) - valid)
    if unknown:
        raise ValueError(f"{path}: unknown {cls.__name__} fields {unknown}. Valid: {', '.join(sorted(valid))}.")
    raw.update({key: value for key, value in overrides.items() if value is not None})
    return cls(**raw)


@dataclass(frozen=True)
class TokenizerConfig:
    corpus: Path
    out: Path
    vocab_size: int = 30522
    lowercase: bool = True
    min_frequency: int = 2
    max_documents: int | None = None
    overwrite: bool = False  # replace a non-empty --out (see training/output_folder.py)
    strict: bool = False  # a line that cannot be read fails the run instead of being skipped

    def __post_init__(self) -> None:
        object.__setattr__(self, "corpus", Path(self.corpus))
        object.__setattr__(self, "out", Path(self.out))
        if self.vocab_size < len(SPECIAL_TOKENS) + 1:
            raise ValueError(
                f"vocab size ({self.vocab_size}) must exceed the {len(SPECIAL_TOKENS)} special tokens; "
                "use --vocab-size 8000 or more for real text."
            )
        _check_positive("min_frequency", self.min_frequency)


@dataclass(frozen=True)
class PretrainConfig:
    """MLM + NSP pretraining. Shape fields left at None come from `preset` (or from `base`)."""

    corpus: Path
    out: Path
    tokenizer: Path | None = None
    base: Path | None = None
    preset: str = "tiny"
    num_layers: int | None = None
    hidden_size: int | None = None
    num_heads: int | None = None
    intermediate_size: int | None = None
    max_steps: int = 1000
    batch_size: int = 32
    max_length: int = 128
    learning_rate: float = 1e-4
    weight_decay: float = 0.01
    warmup_steps: int = 100
    mask_rate: float = 0.15
    whole_word_masking: bool = False
    nsp: bool = True
    eval_documents: int = 200
    eval_batches: int = 4
    eval_every: int = 200
    save_every: int = 500
    log_every: int = 50
    max_documents: int | None = None
    seed: int = 0
    precision: str = "auto"
    attention: str = "sdpa"
    resume: bool = False
    overwrite: bool = False
    strict: bool = False
    device: str | None = None
    max_minutes: float | None = None  # wall-clock budget: checkpoint and save the model folder when spent

    def __post_init__(self) -> None:
        for name in ("corpus", "out", "tokenizer", "base"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value))
        if self.tokenizer is None and self.base is None:
            raise ValueError(
                "No tokenizer: pass --tokenizer DIR (train one with `python -m training tokenizer`) "
                "or --base DIR of a BERT folder that holds its tokenizer."
            )
        if self.base is None and self.preset not in PRESETS:
            raise ValueError(f"Unknown preset {self.preset!r}. Valid: {', '.join(PRESETS)}.")
        hidden, heads = self.resolved_hidden_size, self.resolved_num_heads
        if hidden is not None and heads is not None and hidden % heads:
            raise ValueError(
                f"hidden size ({hidden}) is not a multiple of heads ({heads}); "
                f"pick heads dividing {hidden}, e.g. {max(1, hidden // 64)}."
            )
        _check_positive("max_steps", self.max_steps)
        if self.max_minutes is not None:
            _check_positive("max_minutes", self.max_minutes)
        _check_positive("batch_size", self.batch_size)
        _check_positive("learning_rate", self.learning_rate)
        if self.max_length < 8:
            raise ValueError(f"max length ({self.max_length}) is too short for [CLS] A [SEP] B [SEP]; use 32 or more.")
        if not 0.0 < self.mask_rate < 1.0:
            raise ValueError(f"mask rate ({self.mask_rate}) must lie strictly between 0 and 1; BERT uses 0.15.")
        if self.warmup_steps < 0:
            raise ValueError(f"warmup steps ({self.warmup_steps}) must be 0 or more.")
        if self.precision not in PRECISIONS:
            raise ValueError(f"Unknown precision {self.precision!r}. Valid: {', '.join(PRECISIONS)}.")
        if self.attention not in ATTENTIONS:
            raise ValueError(f"Unknown attention {self.attention!r}. Valid: {', '.join(ATTENTIONS)}.")
        if self.eval_documents < 1:
            raise ValueError(f"eval documents ({self.eval_documents}) must be at least 1 to hold out a validation slice.")

    @property
    def resolved_hidden_size(self) -> int | None:
        if self.hidden_size is not None:
            return self.hidden_size
        return None if self.base is not None else PRESETS[self.preset].hidden_size

    @property
    def resolved_num_heads(self) -> int | None:
        if self.num_heads is not None:
            return self.num_heads
        hidden = self.resolved_hidden_size
        return None if hidden is None else max(1, hidden // 64)


@dataclass(frozen=True)
class SiameseConfig:
    """SBERT fine-tuning (Reimers and Gurevych 2019) of a BERT or SentenceTransformer folder."""

    base: str
    objective: str
    train: Path
    out: Path
    pooling: str | None = None  # None keeps a SentenceTransformer's own pooling, mean for a bare BERT
    max_steps: int = -1  # -1: train for `epochs`
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 128
    eval_data: Path | None = None  # STSb folder whose dev split selects the best checkpoint
    evaluate_on_dev: bool = True  # False: no dev evaluation, keep the last step
    eval_steps: int | None = None  # None: evaluate once per epoch
    max_train_examples: int | None = None
    triplet_margin: float = 5.0
    seed: int = 0
    score_range: tuple[float, float] | None = None  # the scale of a pair file's scores; None: known datasets' own
    strict: bool = False  # a row that cannot be read fails the run instead of being skipped
    resume: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "train", Path(self.train))
        object.__setattr__(self, "out", Path(self.out))
        if self.eval_data is not None:
            object.__setattr__(self, "eval_data", Path(self.eval_data))
        if self.objective not in OBJECTIVES:
            raise ValueError(f"Unknown objective {self.objective!r}. Valid: {', '.join(OBJECTIVES)}.")
        if self.pooling is not None and self.pooling not in POOLINGS:
            raise ValueError(f"Unknown pooling {self.pooling!r}. Valid: {', '.join(POOLINGS)}.")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"--max-steps ({self.max_steps}) must be positive, or -1 to train for --epochs.")
        _check_positive("epochs", self.epochs)
        _check_positive("batch_size", self.batch_size)
        _check_positive("learning_rate", self.learning_rate)
        if self.objective == "mnrl" and self.batch_size < 2:
            raise ValueError(f"batch size ({self.batch_size}) must be at least 2 for mnrl: it uses in-batch negatives.")
        if self.eval_steps is not None:
            _check_positive("eval_steps", self.eval_steps)
        check_score_range(self)


CROSS_ENCODER_POOLINGS = ("cls", "mean")


@dataclass(frozen=True)
class CrossEncoderConfig:
    """`training cross-encoder`: one or more training sources, concatenated.

    `train` takes scored pairs (STSb, SICK, a pair file with a score), (query,
    passage) positives (a BEIR folder's train qrels, a query/passage or
    anchor/positive file), which get `negatives_per_query` mined negatives
    each, or raw documents, whose title -> body and inverse-cloze pairs get
    BM25 negatives from the same documents (`max_documents` of them).
    `num_layers` keeps the base's first layers only (a faster reranker);
    `save_dtype` "float16" halves the saved folder. `pooling` "cls" is BERT's
    own head over [CLS] (a `BertForSequenceClassification`, right for a base
    pretrained with NSP); "mean" scores the mean of the token vectors (a
    Transformer, Pooling and Dense CrossEncoder), right for a base trained for
    mean pooling such as all-MiniLM-L6-v2, whose [CLS] vector barely depends on
    the input: from it, the [CLS] head stays at the label prior for hundreds of steps.
    """

    base: str
    train: tuple[Path, ...]
    out: Path
    max_steps: int = -1
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    max_length: int = 256
    negatives_per_query: int = 3
    negatives_depth: int | None = None
    max_train_examples: int | None = None
    max_documents: int | None = None
    num_layers: int | None = None
    save_dtype: str = "float32"
    pooling: str = "cls"
    seed: int = 0
    score_range: tuple[float, float] | None = None
    strict: bool = False
    resume: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        train = (self.train,) if isinstance(self.train, (str, Path)) else tuple(self.train)
        if not train:
            raise ValueError("No training data: pass at least one --train path.")
        object.__setattr__(self, "train", tuple(Path(path) for path in train))
        object.__setattr__(self, "out", Path(self.out))
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"--max-steps ({self.max_steps}) must be positive, or -1 to train for --epochs.")
        _check_positive("epochs", self.epochs)
        _check_positive("batch_size", self.batch_size)
        _check_positive("learning_rate", self.learning_rate)
        if self.negatives_per_query < 0:
            raise ValueError(f"negatives per query ({self.negatives_per_query}) must be 0 or more.")
        if self.negatives_depth is not None and self.negatives_depth < 1:
            raise ValueError(f"negatives depth ({self.negatives_depth}) must be at least 1.")
        if self.num_layers is not None and self.num_layers < 1:
            raise ValueError(f"num_layers ({self.num_layers}) must be at least 1, or left out to keep every layer.")
        if self.save_dtype not in ("float32", "float16"):
            raise ValueError(f"save_dtype {self.save_dtype!r} is not float32 or float16.")
        if self.pooling not in CROSS_ENCODER_POOLINGS:
            raise ValueError(f"pooling {self.pooling!r} is not one of {', '.join(CROSS_ENCODER_POOLINGS)}.")
        check_score_range(self)


# `training adapt`'s --base when none is given: all-MiniLM-L6-v2 from its package (`ModelSpec`).
DEFAULT_BASE = "default"


def resolve_base(base: str | Path) -> Path:
    """The folder a --base names, through `ModelSpec.resolve` as indexing and search name models:
    "default" or "all-MiniLM-L6-v2" is the default bi-encoder, anything else a local folder."""
    from indexer.model_spec import ModelSpec

    try:
        return ModelSpec.resolve(str(base)).path
    except FileNotFoundError as err:
        raise ValueError(
            f"Base model folder {str(base)!r} not found. Pass a BERT or SentenceTransformer folder, "
            f"or '{DEFAULT_BASE}' for all-MiniLM-L6-v2."
        ) from err


@dataclass(frozen=True)
class AdaptConfig:
    corpus: Path
    out: Path
    base: str = DEFAULT_BASE
    mlm_steps: int = 1000
    mlm_batch_size: int = 32
    mlm_learning_rate: float = 5e-5
    mlm_eval_documents: int | None = None  # None: a tenth of the corpus, at most 200 (training/adapt.py)
    siamese_steps: int = 1000
    siamese_batch_size: int = 32
    max_seq_length: int = 256
    pairs: Path | None = None
    pairs_objective: str = "cosine"
    pairs_steps: int = -1
    max_documents: int | None = None
    seed: int = 0
    strict: bool = False
    resume: bool = False
    overwrite: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "corpus", Path(self.corpus))
        object.__setattr__(self, "out", Path(self.out))
        if self.pairs is not None:
            object.__setattr__(self, "pairs", Path(self.pairs))
        if self.mlm_steps < 0 or self.siamese_steps < 1:
            raise ValueError(
                f"mlm_steps ({self.mlm_steps}) must be 0 or more (0 skips MLM) and "
                f"siamese_steps ({self.siamese_steps}) at least 1."
            )
        if self.pairs_objective not in OBJECTIVES:
            raise ValueError(f"Unknown objective {self.pairs_objective!r}. Valid: {', '.join(OBJECTIVES)}.")
        if self.mlm_eval_documents is not None:
            _check_positive("mlm_eval_documents", self.mlm_eval_documents)
