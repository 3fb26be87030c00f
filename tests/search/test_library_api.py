"""The Python API as a library (issue 39): k hits or a warning, named modes served, models passed
any way, one exception family, and objects that behave like Python's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

import search
from data.paths import PROJECT_ROOT
from indexer import IndexConfig, build_index
from indexer.model_spec import DEFAULT_MODEL_ID, ModelSpec, default_model_path
from search import (
    EmptyQueryError,
    FilterError,
    IndexMismatchError,
    IndexNotFoundError,
    IndexUnreadableError,
    ModelNotReadyError,
    NoRerankerError,
    QueryTruncatedWarning,
    SearchConfig,
    Searcher,
    SearchError,
    StaleBuildWarning,
    similarity,
    similarity_matrix,
    top_pairs,
)


def write_docs(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"d{i}", "title": f"note {i}", "text": f"printer {i} jammed on page {i}; paper tray {i % 5}"}
            for i in range(count)]
    (folder / "notes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture()
def notes_index(tmp_path, tiny_model) -> tuple[Path, Path, str]:
    source = write_docs(tmp_path / "src", 40)
    index_dir = tmp_path / "idx"
    build_index(IndexConfig(source=source, index_dir=index_dir, model=tiny_model, show_progress=False))
    return source, index_dir, tiny_model


def build_in_another_process(source: Path, index_dir: Path, model: str) -> None:
    code = ("import sys; from pathlib import Path; from indexer import IndexConfig, build_index; "
            "build_index(IndexConfig(source=Path(sys.argv[1]), index_dir=Path(sys.argv[2]), model=sys.argv[3], "
            "show_progress=False))")
    subprocess.run([sys.executable, "-c", code, str(source), str(index_dir), model], cwd=PROJECT_ROOT, check=True)


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_a_searcher_without_auto_refresh_still_returns_k_hits_after_another_process_deletes(notes_index, mode):
    source, index_dir, model = notes_index
    searcher = Searcher(index_dir, config=SearchConfig(auto_refresh=False))
    before = searcher.search("printer jammed paper", k=10, mode=mode)
    assert len(before) == 10
    kept = {f"d{i}" for i in range(40)} - {h.doc_id for h in before[:6]}
    rows = [json.loads(line) for line in (source / "notes.jsonl").read_text().splitlines()]
    (source / "notes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] in kept))
    build_in_another_process(source, index_dir, model)  # deletes 6 of the 10 hits' documents
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleBuildWarning)
        result = searcher.search_detailed("printer jammed paper", k=10, mode=mode)
    assert len(result.hits) == 10 and {h.doc_id for h in result.hits} <= kept
    assert result.skipped >= 6
    searcher.close()


def test_fewer_than_k_documents_left_is_said_with_a_warning(notes_index):
    source, index_dir, model = notes_index
    searcher = Searcher(index_dir, config=SearchConfig(auto_refresh=False))
    assert len(searcher.search("printer", k=10, mode="dense")) == 10
    write_docs(source, 4)
    build_in_another_process(source, index_dir, model)
    with pytest.warns(StaleBuildWarning, match="Call refresh"):
        result = searcher.search_detailed("printer", k=10, mode="dense")
    assert len(result.hits) == 4 and result.skipped == 36
    searcher.refresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleBuildWarning)
        assert len(searcher.search("printer", k=10, mode="dense")) == 4
    searcher.close()


def test_a_named_mode_waits_for_a_loading_model_and_only_a_default_falls_back(notes_index, monkeypatch):
    from indexer.index import Index

    _, index_dir, _ = notes_index
    gate, real = threading.Event(), Index.load_model
    monkeypatch.setattr(Index, "load_model", lambda self, device=None: gate.wait(60) and real(self, device))
    searcher = Searcher(index_dir, model_loading="background")
    try:
        fallback = searcher.search_detailed("printer")
        assert fallback.mode == "bm25" and "still loading" in fallback.fallback_reason
        with pytest.raises(ModelNotReadyError, match="still loading after 0.2 s, and mode 'dense' needs it"):
            searcher.search("printer", mode="dense", model_wait=0.2)
        threading.Timer(0.5, gate.set).start()
        started = time.monotonic()
        waited = searcher.search_detailed("printer", mode="dense")  # no model_wait: as long as it takes
        assert waited.mode == "dense" and waited.fallback_reason is None and time.monotonic() - started >= 0.3
    finally:
        gate.set()
        searcher.close()


def test_models_are_taken_as_str_path_or_loaded_and_anything_else_is_a_type_error(notes_index, tiny_model_dir):
    _, index_dir, model = notes_index
    assert similarity("a cat", "a kitten", model=Path(model)) == pytest.approx(
        similarity("a cat", "a kitten", model=model), abs=1e-6)
    for bad in (123, 1.5, ["folder"]):
        with pytest.raises(TypeError, match="model must be a model folder \\(a str or os.PathLike\\), a loaded "
                                            "SentenceTransformer, or None"):
            similarity("a", "b", model=bad)
        with pytest.raises(TypeError, match="model must be a model folder"):
            Searcher(index_dir, model=bad)
    from indexer.embedding import load_bi_encoder

    loaded = load_bi_encoder(model)
    with Searcher(index_dir, model=loaded) as searcher:
        assert searcher.model is loaded and len(searcher.search("printer", mode="dense")) == 10
    assert similarity("a cat", "a kitten", model=loaded) == pytest.approx(similarity("a cat", "a kitten", model=model))


def test_a_byte_identical_copy_of_the_model_is_the_same_model(notes_index, tmp_path):
    _, index_dir, model = notes_index
    copy = tmp_path / "copy"
    shutil.copytree(model, copy)
    with Searcher(index_dir, model=copy) as searcher:
        assert searcher.search("printer", k=3)
    weights = next(copy.rglob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(IndexMismatchError, match="unrelated vectors"):
        Searcher(index_dir, model=copy)


def test_the_default_model_named_by_its_folder_is_the_default(default_model):
    from indexer.embedding import load_bi_encoder

    assert ModelSpec.resolve(default_model_path()).id == DEFAULT_MODEL_ID
    assert ModelSpec.resolve(str(default_model_path())).id == DEFAULT_MODEL_ID
    assert load_bi_encoder(default_model_path()) is load_bi_encoder(None)  # one copy in memory


def test_a_cross_encoder_folder_is_refused_as_a_bi_encoder(tiny_cross_encoder):
    with pytest.raises(ValueError, match="holds a cross-encoder .* Use it as the reranker"):
        similarity("a cat", "a kitten", model=tiny_cross_encoder)


def test_one_exception_family_catches_every_search_error(tmp_path, notes_index):
    for error in (IndexNotFoundError, IndexUnreadableError, IndexMismatchError, EmptyQueryError, FilterError,
                  NoRerankerError, ModelNotReadyError):
        assert issubclass(error, SearchError), error
        assert error.__name__ in search.__all__
    with pytest.raises(SearchError, match="build"):
        Searcher(tmp_path / "nothing here")
    _, index_dir, _ = notes_index
    with Searcher(index_dir) as searcher, pytest.raises(SearchError):
        searcher.search("printer", filter={"year": {"$regex": "x"}})


def test_unclear_inputs_get_the_same_clear_checks_everywhere(notes_index):
    _, index_dir, model = notes_index
    with Searcher(index_dir) as searcher, pytest.raises(ValueError, match="query holds a lone surrogate .* character 1"):
        searcher.search("a\ud800b")
    with pytest.raises(ValueError, match="b holds a lone surrogate"):
        similarity("a cat", "\udcff", model=model)
    with pytest.raises(TypeError, match="sentences_a must be a list of strings, not NoneType"):
        similarity_matrix(None, ["a"], model=model)
    with pytest.raises(TypeError, match="not a set, which has no order"):
        similarity_matrix({"a", "b"}, model=model)
    for bad_k in (None, 2.5, True, "3"):
        with pytest.raises(TypeError, match="k must be a whole number"):
            top_pairs(["a cat", "a dog"], k=bad_k, model=model)
    with pytest.raises(ValueError, match="k \\(0\\) must be at least 1"):
        top_pairs(["a cat", "a dog"], k=0, model=model)
    with pytest.raises(EmptyQueryError, match="sentences\\[1\\] is empty"):
        top_pairs(["a cat", " "], model=model)


def test_similarity_warns_when_a_sentence_is_cut(tiny_model):
    with pytest.warns(QueryTruncatedWarning, match="b has .* tokens but the model reads 128"):
        similarity("a cat", "word " * 400, model=tiny_model)


def test_searcher_is_a_context_manager_and_refuses_to_search_once_closed(notes_index):
    _, index_dir, _ = notes_index
    with Searcher(index_dir) as searcher:
        assert searcher.search("printer")
    with pytest.raises(ValueError, match="This Searcher is closed"):
        searcher.search("printer")


def test_hits_are_hashable_immutable_and_serialise(notes_index):
    _, index_dir, _ = notes_index
    with Searcher(index_dir) as searcher:
        result = searcher.search_detailed("printer", k=3, filter={"_type": "jsonl"})
        again = searcher.search("printer", k=3, filter={"_type": "jsonl"})
    assert set(result.hits) == set(again) and len({*result.hits, *again}) == 3
    with pytest.raises(TypeError):
        result.hits[0].metadata["x"] = 1  # type: ignore[index]
    text = json.dumps(result.to_dict())
    back = json.loads(text)
    assert back["hits"][0]["doc_id"] == result.hits[0].doc_id and back["stats"]["built_at"].endswith("+00:00")
    assert json.loads(json.dumps(result.hits[0].to_dict()))["passage_id"] == result.hits[0].passage_id


def test_search_similarity_is_the_function():
    assert callable(search.similarity) and search.similarity is similarity


def test_the_readme_reference_names_every_public_field_and_error():
    import dataclasses

    from search import Hit, SearchParams, SearchResult, StageTimings

    readme = (PROJECT_ROOT / "docs" / "search.md").read_text(encoding="utf-8")
    reference = readme[readme.index("## Python API reference"):readme.index("## Filtering by metadata")]
    for cls in (Hit, SearchResult, SearchParams, StageTimings):
        for field in dataclasses.fields(cls):
            assert f"`{field.name}`" in reference, f"{cls.__name__}.{field.name} is not in the README's reference"
    for name in search.__all__:
        if name.endswith(("Error", "Warning")):
            assert f"`{name}`" in reference, name
    assert "`None`, `2.5` or `True` is a `TypeError`" in reference  # what k=None means
