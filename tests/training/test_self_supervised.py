from __future__ import annotations

import numpy as np
import pytest

from data.raw_text import Document
from training.self_supervised import inverse_cloze_pairs, title_body_pairs

DOC = Document("1", "Volcanoes", "Lava erupted from the mountain at dawn. Ash covered the nearby town quickly. "
               "Flights across Europe were grounded for days. Scientists measured the plume from space.")


def test_title_body_pairs_skip_untitled() -> None:
    pairs = list(title_body_pairs([DOC, Document("2", "", "body only")], max_body_words=5))
    assert pairs == [("Volcanoes", "Lava erupted from the mountain")]


def test_inverse_cloze_removes_query_from_passage_mostly() -> None:
    pairs = list(inverse_cloze_pairs([DOC] * 400, np.random.default_rng(0), window=4))
    assert len(pairs) > 300
    kept = np.mean([query in passage for query, passage in pairs])
    assert 0.03 < kept < 0.2  # keep_sentence_probability 0.1 (Lee et al. 2019)
    again = list(inverse_cloze_pairs([DOC] * 400, np.random.default_rng(0), window=4))
    assert again == pairs


def test_window_too_small() -> None:
    with pytest.raises(ValueError, match=r"ICT window \(1\) must be at least 2"):
        list(inverse_cloze_pairs([DOC], np.random.default_rng(0), window=1))
