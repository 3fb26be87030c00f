"""Encodings: chosen by the machine, computing the model's own function, recorded by the index,
used for its queries, kept by later builds and never mixed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from indexer import IndexConfig, build_index
from indexer.embedding import encode_texts, load_bi_encoder
from indexer.encoding import (
    FP16,
    FP32,
    OPENVINO_BF16,
    OPENVINO_FP32,
    OpenVINOForward,
    check_encoding,
    choose_encoding,
    with_encoding,
)
from indexer.errors import IndexMismatchError
from indexer.index import Index
from indexer.sources.passage_text import bi_encoder_input
from search import Searcher

TEXTS = ["Lava and ash erupted from the volcano.", "Knead the dough, let it rise, then bake the bread.",
         "The striker scored twice in the second half.", "Share prices fell after the bank raised rates. " * 12]


@pytest.fixture(autouse=True)
def no_override(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SEMSEARCH_ENCODING", raising=False)
    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize(("device", "flags", "expected"), [
    ("cuda", frozenset({"amx_bf16", "avx512_bf16"}), FP16),  # a GPU: float16 whatever the CPU has
    ("cpu", frozenset({"avx2", "fma"}), OPENVINO_FP32),  # bf16 would be emulated: OpenVINO in f32
    ("cpu", frozenset({"asimd", "fp"}), FP32),  # ARM: OpenVINO not measured there
    ("cpu", frozenset({"avx2", "avx512_bf16"}), OPENVINO_BF16),  # AMD EPYC (Zen 4)
    ("cpu", frozenset({"avx2", "amx_bf16", "amx_tile"}), OPENVINO_BF16),  # Intel Xeon with AMX
])
def test_the_machine_chooses_a_new_index_encoding(device: str, flags: frozenset[str], expected: str) -> None:
    assert choose_encoding(device, flags) == expected


def test_without_openvino_a_cpu_encodes_in_fp32(monkeypatch) -> None:
    import indexer.encoding

    monkeypatch.setattr(indexer.encoding, "openvino_installed", lambda: False)
    assert choose_encoding("cpu", frozenset({"avx2"})) == choose_encoding("cpu", frozenset({"amx_bf16"})) == FP32
    assert choose_encoding("cuda", frozenset()) == FP16


def test_the_environment_overrides_the_choice_and_a_bad_name_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("SEMSEARCH_ENCODING", "fp32")
    assert choose_encoding("cpu", frozenset({"amx_bf16"})) == FP32
    monkeypatch.setenv("SEMSEARCH_ENCODING", "int4")
    with pytest.raises(ValueError, match="Unknown encoding 'int4'; choose one of: fp32 .*openvino-bf16"):
        choose_encoding("cpu")
    with pytest.raises(ValueError, match="choose one of"):
        IndexConfig(source=Path("docs"), index_dir=Path("index"), encoding="bf16")
    assert check_encoding(OPENVINO_BF16) == OPENVINO_BF16


def test_openvino_computes_the_model_own_function(tiny_model: str, tmp_path: Path) -> None:
    """The same vectors up to bf16 rounding, from the same tokens, pooling and normalisation."""
    model = load_bi_encoder(tiny_model)
    encoded = load_bi_encoder(tiny_model, encoding=OPENVINO_BF16)
    assert isinstance(encoded[0].forward, OpenVINOForward) and not isinstance(model[0].forward, OpenVINOForward)
    exact, fast = encode_texts(model, TEXTS), encode_texts(encoded, TEXTS)
    assert fast.shape == exact.shape == (len(TEXTS), 32) and fast.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    cosines = (exact * fast).sum(axis=1)
    assert cosines.min() > 0.99, cosines
    assert encoded.get_embedding_dimension() == model.get_embedding_dimension()
    assert load_bi_encoder(tiny_model, encoding=OPENVINO_BF16) is encoded  # loaded once per process


def test_openvino_in_f32_computes_the_model_own_function_to_float_rounding(tiny_model: str) -> None:
    model = load_bi_encoder(tiny_model)
    encoded = load_bi_encoder(tiny_model, encoding=OPENVINO_FP32)
    assert isinstance(encoded[0].forward, OpenVINOForward)
    exact, fast = encode_texts(model, TEXTS), encode_texts(encoded, TEXTS)
    assert fast.dtype == np.float32 and fast.shape == exact.shape
    np.testing.assert_allclose(fast, exact, atol=1e-4)


def test_fp16_is_a_float16_copy_with_the_same_vectors_up_to_rounding(tiny_model: str) -> None:
    """The GPU's default encoding runs on a CPU too (an fp16 index searched there), leaves the fp32
    model as it was, and gives unit float32 vectors within fp16 rounding of fp32's."""
    model = load_bi_encoder(tiny_model)
    half = load_bi_encoder(tiny_model, encoding=FP16)
    assert next(half.parameters()).dtype == torch.float16 and next(model.parameters()).dtype == torch.float32
    exact, rounded = encode_texts(model, TEXTS), encode_texts(half, TEXTS)
    assert rounded.dtype == np.float32 and rounded.shape == exact.shape
    np.testing.assert_allclose(np.linalg.norm(rounded, axis=1), 1.0, atol=1e-3)
    assert (exact * rounded).sum(axis=1).min() > 0.999


def test_the_converted_model_is_cached_and_threads_do_not_share_a_request(tiny_model: str, tmp_path: Path) -> None:
    from indexer.embedding import _load

    model = load_bi_encoder(tiny_model)
    cache = tmp_path / "converted"
    first = with_encoding(model, OPENVINO_BF16, cache)
    assert (cache / "model.xml").is_file() and (cache / "model.bin").is_file()
    assert not list(tmp_path.glob(".converted.*.partial"))
    second = with_encoding(model, OPENVINO_BF16, cache)  # read from the cache, not converted again
    np.testing.assert_array_equal(encode_texts(first, TEXTS), encode_texts(second, TEXTS))
    (cache / "model.xml").write_text("not a model")  # damaged: converted again, and replaced
    np.testing.assert_array_equal(encode_texts(with_encoding(model, OPENVINO_BF16, cache), TEXTS),
                                  encode_texts(first, TEXTS))
    assert (cache / "model.xml").read_text() != "not a model"

    alone = {i: encode_texts(first, [text]) for i, text in enumerate(TEXTS)}
    together: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        for _ in range(5):
            together[i] = encode_texts(first, [TEXTS[i]])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(TEXTS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in alone:
        np.testing.assert_array_equal(together[i], alone[i])
    _load.cache_clear()


def test_an_index_records_its_encoding_and_queries_use_it(tiny_model: str, topic_corpus: Path, tmp_path: Path,
                                                          monkeypatch) -> None:
    index_dir = tmp_path / "index"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                            encoding=OPENVINO_BF16))
    with Index.open(index_dir) as index:
        assert index.stats().encoding == OPENVINO_BF16
    searcher = Searcher(index_dir)
    assert isinstance(searcher.model[0].forward, OpenVINOForward)
    hits = searcher.search("volcano ash", k=4, mode="dense")
    query = encode_texts(load_bi_encoder(tiny_model, encoding=OPENVINO_BF16), ["volcano ash"])[0]
    vectors = encode_texts(searcher.model, [bi_encoder_input(hit.title, hit.text, searcher.model, True)
                                            for hit in hits])
    np.testing.assert_allclose([hit.score for hit in hits], vectors @ query, atol=1e-5)

    # A later build keeps the index's encoding whatever this machine would choose...
    (topic_corpus / "more.txt").write_text("The glacier melted into the fjord in spring.")
    monkeypatch.setenv("SEMSEARCH_ENCODING", FP32)
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    with Index.open(index_dir) as index:
        assert index.stats().encoding == OPENVINO_BF16 and index.stats().documents == 5
    # ...refuses to mix in another...
    (topic_corpus / "again.txt").write_text("A new bakery opened on the corner.")
    with pytest.raises(IndexMismatchError, match=r"encoded as openvino-bf16; this build asks for fp32.*--rebuild"):
        build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                                encoding=FP32))
    with Index.open(index_dir) as index:
        assert index.stats().documents == 5  # nothing of the refused build was written
    # ...and a rebuild chooses again.
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                            rebuild=True))
    with Index.open(index_dir) as index:
        assert index.stats().encoding == FP32 and index.stats().documents == 6
    assert not isinstance(Searcher(index_dir).model[0].forward, OpenVINOForward)


def test_an_index_from_before_encodings_is_fp32(tiny_model: str, topic_corpus: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False,
                            encoding=FP32))
    with sqlite3.connect(index_dir / "store.sqlite") as db:  # as an older version left it
        db.execute("ALTER TABLE semsearch_index_info DROP COLUMN encoding")
    with Index.open(index_dir) as index:
        assert index.info.encoding is None and index.stats().encoding == FP32
    (topic_corpus / "more.txt").write_text("The glacier melted into the fjord in spring.")
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    with Index.open(index_dir) as index:
        assert index.info.encoding == FP32 and index.stats().documents == 5


def test_openvino_sends_no_telemetry(tiny_model: str, tmp_path: Path) -> None:
    """OpenVINO's telemetry (opt-out) counts each import and conversion in ~/intel and sends them to
    Google Analytics; loading an encoder through indexer.encoding leaves no trace of it."""
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.mkdir()
    script = ("from indexer.embedding import load_bi_encoder\n"
              f"load_bi_encoder({tiny_model!r}, encoding='openvino-bf16').encode(['a passage'])\n"
              "import sys; print(sys.modules['openvino_telemetry'])\n")
    # openvino_telemetry stays silent where it sees a CI job (CI=true, TF_BUILD, JENKINS_URL): the
    # check would then pass without the block, and its control below would fail. Both run as a user's.
    env = {name: value for name, value in os.environ.items()
           if name not in ("CI", "TF_BUILD", "JENKINS_URL", "XDG_CACHE_HOME")}
    env.update(HOME=str(home), SEMSEARCH_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "None"
    assert (tmp_path / "cache").is_dir()
    assert not (home / "intel").exists(), sorted(p.name for p in (home / "intel").iterdir())

    # The same in a process that imports openvino as OpenVINO's own documentation does leaves it.
    subprocess.run([sys.executable, "-c", "import openvino"], env=env, timeout=120, check=True)
    assert (home / "intel").exists()


def test_a_new_index_gets_the_machine_choice(tiny_model: str, topic_corpus: Path, tmp_path: Path) -> None:
    """With neither --encoding nor SEMSEARCH_ENCODING, a new index takes `choose_encoding()`: on this
    machine's CPU, whatever it is (openvino-bf16 with AMX or AVX-512 bf16, else openvino-fp32)."""
    index_dir = tmp_path / "index"
    build_index(IndexConfig(source=topic_corpus, index_dir=index_dir, model=tiny_model, show_progress=False))
    with Index.open(index_dir) as index:
        assert index.stats().encoding == choose_encoding()
    opened = Searcher(index_dir).model
    assert isinstance(opened[0].forward, OpenVINOForward) == (choose_encoding() in (OPENVINO_BF16, OPENVINO_FP32))
