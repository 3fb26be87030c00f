"""Turn any supported --train source into the columns a sentence-transformers loss expects.

Sources: an STSb folder (train split), the SICK file (TRAIN split), a BEIR folder
(train qrels), a .jsonl/.csv of pairs or triplets (see data/pairs.py), or raw
documents (.txt, .jsonl with `text`, WikiExtractor) turned into self-supervised pairs.
Column order matters: the loss reads the text columns in order and `label`/`score` as the target.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from datasets import Dataset

from data.pairs import SCHEMAS, peek_columns
from data.raw_text import iter_documents, open_text
from data.sick import LABELS, iter_sick
from data.stsb import MAX_SCORE, iter_stsb
from indexer.sources.passage_text import passage_text
from training.input_files import CheckedInput, checked_input
from training.pair_rows import class_labels, read_pair_rows, scaled_scores
from training.self_supervised import inverse_cloze_pairs, title_body_pairs

logger = logging.getLogger(__name__)

SOURCES = ("stsb", "sick", "beir", "pairs", "documents")
# Which label shape each objective needs; used in error messages.
NEEDS = {
    "softmax": "class labels: the SICK file or a pair file with sentence1, sentence2, label",
    "cosine": "scored pairs: an STSb folder, the SICK file or a pair file with sentence1, sentence2, score",
    "mnrl": "positive pairs: a BEIR folder, raw documents, an STSb folder or a pair file with anchor, positive[, negative]",
    "triplet": "triplets: a BEIR folder, raw documents or a pair file with anchor, positive, negative",
}
MNRL_STSB_THRESHOLD = 4.0
SICK_LABELS = tuple(label.lower() for label in LABELS)


@dataclass(frozen=True)
class TrainingData:
    dataset: Dataset
    label_names: tuple[str, ...] | None = None  # class names of `label` ids, saved beside the model


def detect_source(path: Path) -> str:
    """Which of SOURCES a --train path is."""
    path = Path(path)
    if path.is_dir():
        if (path / "sts-train.csv").is_file():
            return "stsb"
        if (path / "qrels").is_dir() and (path / "corpus.jsonl").is_file():
            return "beir"
        raise ValueError(
            f"Training folder {str(path)!r} is neither an STSb folder (sts-train.csv) nor a BEIR folder "
            "(corpus.jsonl, queries.jsonl, qrels/). Pass one of those or a .jsonl/.csv pair file."
        )
    if not path.is_file():
        raise ValueError(f"Training data {str(path)!r} does not exist.")
    name = path.name.removesuffix(".gz")
    if name.endswith(".txt"):
        with open_text(path) as handle:
            first = handle.readline()
        return "sick" if "entailment_label" in first else "documents"
    if name.endswith((".jsonl", ".csv", ".tsv", ".json")):
        columns = set(peek_columns(path))
        if any(all(column in columns for column in schema) for schema in SCHEMAS):
            return "pairs"
        if "text" in columns:
            return "documents"
        return "pairs"  # iter_pairs raises with the list of valid column sets
    raise ValueError(
        f"Unsupported training file {str(path)!r}. Valid: an STSb or BEIR folder, the SICK .txt, "
        ".jsonl/.csv pairs or triplets, or raw documents (.txt, .jsonl with 'text', WikiExtractor)."
    )


def _incompatible(source: str, objective: str, path: Path) -> ValueError:
    return ValueError(f"Objective {objective!r} cannot train on {source} data ({path}); it needs {NEEDS[objective]}.")


def load_training_dataset(
    path: Path,
    objective: str,
    rng: np.random.Generator,
    max_examples: int | None = None,
    score_range: tuple[float, float] | None = None,
    strict: bool = False,
) -> Dataset:
    """A `datasets.Dataset` whose columns fit the loss of `objective` (`load_training_data`'s)."""
    return load_training_data(path, objective, rng, max_examples, score_range, strict).dataset


def load_training_data(
    path: Path,
    objective: str,
    rng: np.random.Generator,
    max_examples: int | None = None,
    score_range: tuple[float, float] | None = None,
    strict: bool = False,
) -> TrainingData:
    """The training rows of any --train source, read by the input rules (training/input_files.py,
    training/pair_rows.py) before any model loads."""
    source = detect_source(Path(path))
    checked = checked_input(path, strict)
    names = None
    rows: list[dict]
    if source == "stsb":
        rows = _stsb_rows(checked.path, objective, Path(path))
    elif source == "sick":
        rows = _sick_rows(checked.path, objective, Path(path))
        names = SICK_LABELS if objective == "softmax" else None
    elif source == "beir":
        rows = beir_rows(Path(path), objective, rng)
    elif source == "pairs":
        rows, names = _pair_rows(checked, objective, rng, score_range, strict)
    else:
        rows = _document_rows(checked.path, objective, rng, max_examples)
    if max_examples is not None:
        rows = rows[:max_examples]
    if not rows:
        raise ValueError(f"No training examples for objective {objective!r} in {path}; it needs {NEEDS[objective]}.")
    return TrainingData(Dataset.from_list(rows), names)


def _stsb_rows(folder: Path, objective: str, shown: Path) -> list[dict]:
    pairs = list(iter_stsb(folder, "train"))
    if objective == "cosine":
        logger.info("scores in %s: STSb's scale 0-%g, mapped to 0-1", shown, MAX_SCORE)
        return [{"sentence1": p.sentence1, "sentence2": p.sentence2, "score": p.score / MAX_SCORE} for p in pairs]
    if objective == "mnrl":
        rows = [{"anchor": p.sentence1, "positive": p.sentence2} for p in pairs if p.score >= MNRL_STSB_THRESHOLD]
        logger.info("mnrl on STSb: kept %d pairs scored >= %.1f as positives", len(rows), MNRL_STSB_THRESHOLD)
        return rows
    raise _incompatible("stsb", objective, shown)


def _sick_rows(path: Path, objective: str, shown: Path) -> list[dict]:
    pairs = list(iter_sick(path, ("TRAIN",)))
    if objective == "softmax":
        return [{"sentence1": p.sentence_a, "sentence2": p.sentence_b, "label": p.label} for p in pairs]
    if objective == "cosine":
        logger.info("scores in %s: SICK's relatedness scale 1-5, mapped to 0-1", shown)
        return [{"sentence1": p.sentence_a, "sentence2": p.sentence_b, "score": (p.relatedness - 1) / 4} for p in pairs]
    raise _incompatible("sick", objective, shown)


def _with_random_negatives(rows: list[dict], pool: list[str], rng: np.random.Generator) -> list[dict]:
    """Add a random `negative` from `pool` to each row (skipping the row's own positive)."""
    out = []
    for row in rows:
        negative = pool[int(rng.integers(len(pool)))]
        if negative == row["positive"] and len(pool) > 1:
            negative = pool[(pool.index(negative) + 1) % len(pool)]
        out.append({**row, "negative": negative})
    return out


def beir_rows(path: Path, objective: str, rng: np.random.Generator) -> list[dict]:
    if objective not in ("mnrl", "triplet"):
        raise _incompatible("beir", objective, path)
    try:
        from data.beir import iter_beir_corpus, load_beir_qrels, load_beir_queries
    except ImportError as err:
        raise ImportError("Training on a BEIR folder needs data/beir.py (iter_beir_corpus, load_beir_queries, "
                          "load_beir_qrels); it is part of this repository, update your checkout.") from err
    queries = load_beir_queries(path)
    qrels = load_beir_qrels(path, "train")
    wanted = {doc_id for judged in qrels.values() for doc_id, score in judged.items() if score > 0}
    texts: dict[str, str] = {}
    pool: list[str] = []
    for document in iter_beir_corpus(path):
        doc_id, title, text = _beir_fields(document)
        passage = passage_text(title, text)  # as the indexer embeds it and the reranker reads it
        pool.append(passage)
        if doc_id in wanted:
            texts[doc_id] = passage
    rows = [
        {"anchor": queries[query_id], "positive": texts[doc_id]}
        for query_id, judged in qrels.items()
        for doc_id, score in judged.items()
        if score > 0 and query_id in queries and doc_id in texts
    ]
    return _with_random_negatives(rows, pool, rng) if objective == "triplet" else rows


def _beir_fields(document: object) -> tuple[str, str, str]:
    """(id, title, text) from whatever iter_beir_corpus yields: a dict, a Document or a tuple."""
    if isinstance(document, dict):
        return str(document.get("_id", document.get("id"))), document.get("title", "") or "", document.get("text", "")
    if isinstance(document, tuple):
        if len(document) == 3:
            return str(document[0]), document[1] or "", document[2]
        return str(document[0]), "", document[1]
    return str(document.id), getattr(document, "title", "") or "", document.text


def _pair_rows(source: CheckedInput, objective: str, rng: np.random.Generator,
               score_range: tuple[float, float] | None, strict: bool) -> tuple[list[dict], tuple[str, ...] | None]:
    """(rows for the loss, class names when the labels were names)."""
    pair_rows = read_pair_rows(source, strict)
    rows = [row.values for row in pair_rows]
    if not rows:
        return rows, None
    if "margin" in rows[0]:  # a distillation file: the bi-encoder losses read its triplets only
        rows = [{key: value for key, value in row.items() if key != "margin"} for row in rows]
    columns = set(rows[0])
    if objective == "cosine" and "score" in columns:
        scores = scaled_scores(pair_rows, source.shown, score_range)
        return [{**row, "score": score} for row, score in zip(rows, scores, strict=True)], None
    if objective == "softmax" and {"sentence1", "label"} <= columns:
        ids, names = class_labels(pair_rows, source.shown)
        return [{**row, "label": label} for row, label in zip(rows, ids, strict=True)], names
    if objective == "mnrl" and "anchor" in columns:
        return rows, None
    if objective == "mnrl" and "query" in columns:
        return [{"anchor": r["query"], "positive": r["passage"]} for r in rows if relevant(r.get("label", 1))], None
    if objective == "triplet" and {"anchor", "negative"} <= columns:
        return rows, None
    if objective == "triplet" and "anchor" in columns:
        return _with_random_negatives(rows, [row["positive"] for row in rows], rng), None
    raise _incompatible(f"pairs with columns {sorted(columns)}", objective, source.shown)


def relevant(label: object) -> bool:
    """A (query, passage) row's label as relevance: a number above 0 (1, "1", 2.0)."""
    try:
        return float(label) > 0  # type: ignore[arg-type]
    except (TypeError, ValueError) as err:
        raise ValueError(f"relevance label {label!r} is not a number; write 1 for relevant, 0 for not.") from err


def sample_in_proportion(groups: list[list[dict]], count: int | None, rng: np.random.Generator) -> list[dict]:
    """At most `count` rows drawn from every group in proportion to its size (order kept), so a
    cap never leaves a kind of example out."""
    total = sum(len(group) for group in groups)
    if count is None or total <= count:
        return [row for group in groups for row in group]
    out: list[dict] = []
    for index, group in enumerate(groups):
        share = count - len(out) if index == len(groups) - 1 else round(count * len(group) / total)
        share = min(share, len(group))
        picked = np.sort(rng.choice(len(group), size=share, replace=False))
        out += [group[int(i)] for i in picked]
    return out


def _document_rows(path: Path, objective: str, rng: np.random.Generator, max_examples: int | None) -> list[dict]:
    if objective not in ("mnrl", "triplet"):
        raise _incompatible("raw document", objective, path)
    titled = [{"anchor": anchor, "positive": positive} for anchor, positive in title_body_pairs(iter_documents(path))]
    cloze = [{"anchor": anchor, "positive": positive}
             for anchor, positive in inverse_cloze_pairs(iter_documents(path), rng)]
    rows = sample_in_proportion([titled, cloze], max_examples, rng)
    logger.info("self-supervised pairs from %s: %d title -> body, %d inverse-cloze%s", path, len(titled), len(cloze),
                f"; {len(rows)} sampled in proportion (--max-train-examples)" if len(rows) < len(titled) + len(cloze)
                else "")
    if objective == "triplet" and rows:
        rows = _with_random_negatives(rows, [row["positive"] for row in rows], rng)
    return rows
