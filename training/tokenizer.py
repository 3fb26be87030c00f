"""Train a BERT WordPiece vocabulary (Wu et al. 2016; Devlin et al. 2019) with the tokenizers library.

The output folder loads with `BertTokenizer.from_pretrained` / `AutoTokenizer.from_pretrained`:
it holds vocab.txt, tokenizer.json and a tokenizer_config.json naming BertTokenizer.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator

from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)
from transformers import BertTokenizer

from data.raw_text import iter_documents
from indexer.sources.passage_text import passage_text
from training.config import SPECIAL_TOKENS, TokenizerConfig
from training.input_files import checked_input
from training.output_folder import finish, plan_output, prepare

logger = logging.getLogger(__name__)


def _texts(config: TokenizerConfig) -> Iterator[str]:
    documents = itertools.islice(iter_documents(checked_input(config.corpus, config.strict).path), config.max_documents)
    for document in documents:
        text = passage_text(document.title, document.text)
        if text.strip():
            yield text


def train_tokenizer(config: TokenizerConfig) -> BertTokenizer:
    """Train WordPiece on the corpus, save it to `config.out` and return it reloaded from there.

    Like every training command it never writes over a folder it did not make (`output_folder`)."""
    output = plan_output(config.out, "tokenizer", config.overwrite)
    texts = _texts(config)
    first = next(texts, None)
    if first is None:
        raise ValueError(f"Corpus {str(config.corpus)!r} holds no text; pass a non-empty .txt, .jsonl or WikiExtractor file.")
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                      strip_accents=None, lowercase=config.lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=config.vocab_size,
        min_frequency=config.min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        continuing_subword_prefix="##",
        show_progress=False,
    )
    tokenizer.train_from_iterator(itertools.chain([first], texts), trainer)
    work = prepare(output).work
    tokenizer.model.save(str(work))  # vocab.txt, ids in training order: specials first
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    tokenizer.save(str(work / "tokenizer.json"))
    # BertTokenizer built from the saved vocab writes the config files that from_pretrained expects.
    bert = BertTokenizer.from_pretrained(str(work), do_lower_case=config.lowercase, model_max_length=512)
    bert.save_pretrained(str(work))
    finish(output)
    reloaded = BertTokenizer.from_pretrained(str(config.out))
    logger.info("trained WordPiece with %d tokens on %s -> %s", len(reloaded), config.corpus, config.out)
    return reloaded
