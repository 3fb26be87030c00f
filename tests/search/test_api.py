"""search/api.py through FastAPI's TestClient: every endpoint, every bad request, 503 until an
index is built, and rebuilds picked up while requests keep succeeding."""

from __future__ import annotations

import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from indexer import IndexConfig, build_index
from search import Searcher
from search.api import CONFIG_ENV, ApiConfig, app_from_env, create_app, main
from search.api_models import MAX_BODY_BYTES, MAX_QUERY_CHARS, MAX_SIMILARITY_SENTENCES
from search.config import MAX_K
from search.sentence_similarity import similarity
from tests.conftest import TOPIC_DOCS
from tests.search.helpers import CODE_DOC, CODE_QUERY


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in {**TOPIC_DOCS, "minutes.txt": CODE_DOC}.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def build(corpus: Path, index_dir: Path, model: str) -> None:
    build_index(IndexConfig(source=corpus, index_dir=index_dir, model=model, show_progress=False))


def wait_until_ready(client: TestClient, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while client.get("/health").json()["index"] != "ready":
        assert time.monotonic() < deadline, client.get("/health").json()
        time.sleep(0.05)


@pytest.fixture()
def private_index(tmp_path, tiny_model) -> tuple[Path, Path, str]:
    """(corpus, index folder, model) of an index a test may rebuild."""
    corpus = write_corpus(tmp_path / "corpus")
    index_dir = tmp_path / "idx"
    build(corpus, index_dir, tiny_model)
    return corpus, index_dir, tiny_model


# --- the endpoints ----------------------------------------------------------------------------


def test_health_says_ready(client):
    assert client.get("/health").json() == {"status": "ok", "index": "ready", "detail": None}


def test_stats_describe_the_build(client, served_index):
    body = client.get("/stats").json()
    stats = Searcher(served_index).stats()
    assert (body["documents"], body["passages"]) == (5, stats.passages)
    assert body["build_id"] == stats.build_id
    assert body["model"] == f".../{Path(stats.model).name}" and str(served_index) not in str(body), "no paths"
    assert body["index_type"].startswith("exact") and body["recall_at_10"] == 1.0
    assert body["dimension"] == 32 and body["delta_segments"] == 0
    assert set(body["modes"]) == {"dense", "bm25", "hybrid"}
    assert body["reranker"] is None and body["rerank_default"] is False
    assert body["built_at"] and body["build_seconds"] >= 0


@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
def test_search_answers_what_the_searcher_answers(client, served_index, mode):
    expected = Searcher(served_index).search_detailed(CODE_QUERY, k=3, mode=mode)
    for response in (
        client.get("/search", params={"q": CODE_QUERY, "k": 3, "mode": mode}),
        client.post("/search", json={"q": CODE_QUERY, "k": 3, "mode": mode}),
    ):
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["mode"] == mode and body["k"] == 3 and body["reranked"] == 0
        assert body["fallback_reason"] is None and body["build_id"] == expected.stats.build_id
        assert [hit["doc_id"] for hit in body["hits"]] == [hit.doc_id for hit in expected.hits]
        assert [hit["score"] for hit in body["hits"]] == pytest.approx([hit.score for hit in expected.hits])
        assert set(body["timings"]) == {"encode_ms", "retrieve_ms", "rerank_ms", "total_ms"}


@pytest.mark.parametrize(("fusion", "weight"), [("minmax", 0.3), ("zscore", None), ("rrf", 1)])
def test_fusion_settings_reach_the_searcher(client, served_index, fusion, weight):
    expected = Searcher(served_index).search_detailed("bread rises", k=4, fusion=fusion, fusion_weight=weight)
    body = {"q": "bread rises", "k": 4, "fusion": fusion} | ({} if weight is None else {"fusion_weight": weight})
    for response in (client.get("/search", params=body), client.post("/search", json=body)):
        assert response.status_code == 200, response.text
        hits = response.json()["hits"]
        assert [hit["doc_id"] for hit in hits] == [hit.doc_id for hit in expected.hits]
        assert [hit["score"] for hit in hits] == pytest.approx([hit.score for hit in expected.hits])


def test_a_hit_carries_its_passage_offsets_metadata_and_both_scores(client):
    body = client.get("/search", params={"q": CODE_QUERY, "k": 1, "mode": "bm25"}).json()
    hit = body["hits"][0]
    assert hit["rank"] == 1 and hit["doc_id"] == "minutes.txt" and hit["title"] == "minutes"
    assert hit["text"] == CODE_DOC and (hit["start_char"], hit["end_char"]) == (0, len(CODE_DOC))
    assert hit["score"] == hit["retriever_score"] and hit["rerank_score"] is None
    assert isinstance(hit["metadata"], dict) and hit["source"]
    assert body["timings"]["encode_ms"] == 0  # BM25 embeds nothing


def test_mode_defaults_to_hybrid(client):
    assert client.get("/search", params={"q": "bread"}).json()["mode"] == "hybrid"


def test_similarity_of_two_sentences_and_of_two_lists(client, tiny_model_dir):
    a, b = "A man plays a guitar.", "Someone is playing an instrument."
    body = client.post("/similarity", json={"a": a, "b": b}).json()
    assert body["score"] == pytest.approx(similarity(a, b, model=str(tiny_model_dir)), abs=1e-5)
    assert body["matrix"] == [[body["score"]]]
    body = client.post("/similarity", json={"a": ["a cat", "a dog"], "b": ["a kitten", "a car", "a cat"]}).json()
    assert len(body["matrix"]) == 2 and all(len(row) == 3 for row in body["matrix"])
    assert body["matrix"][0][2] == pytest.approx(1.0, abs=1e-5) and body["score"] is None


def test_openapi_docs_list_every_endpoint(client):
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/health", "/stats", "/search", "/similarity"} <= set(paths)
    assert set(paths["/search"]) == {"get", "post"}


# --- bad requests -----------------------------------------------------------------------------


def assert_error(response, status: int, *phrases: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) <= {"error", "detail", "errors"} and body["error"]
    for phrase in phrases:
        assert phrase in body["detail"], body["detail"]
    assert "Traceback" not in response.text
    return body


@pytest.mark.parametrize(
    ("params", "phrases"),
    [
        ({"q": ""}, ["query.q", "at least 1 character"]),
        ({"q": "x", "k": 0}, ["query.k", "greater than or equal to 1", "got '0'"]),
        ({"q": "x", "k": MAX_K + 1}, ["query.k", f"less than or equal to {MAX_K}"]),
        ({"q": "x", "k": "ten"}, ["query.k", "valid integer"]),
        ({"q": "x", "mode": "fuzzy"}, ["query.mode", "'dense', 'bm25' or 'hybrid'"]),
        ({"q": "x", "candidates": 0}, ["query.candidates", "greater than or equal to 1"]),
        ({"q": "x", "fusion": "borda"}, ["query.fusion", "'rrf', 'minmax', 'tmm' or 'zscore'"]),
        ({"q": "x", "fusion_weight": 1.5}, ["query.fusion_weight", "less than or equal to 1"]),
        ({"q": "x", "fusion_weight": "nan"}, ["query.fusion_weight", "finite number"]),
        ({"q": "x" * (MAX_QUERY_CHARS + 1)}, ["query.q", f"at most {MAX_QUERY_CHARS} characters"]),
        ({}, ["query.q", "Field required"]),
    ],
)
def test_bad_get_search_is_a_422_naming_the_field_and_range(client, params, phrases):
    assert_error(client.get("/search", params=params), 422, *phrases)


@pytest.mark.parametrize(
    ("body", "phrases"),
    [
        ({"q": "x", "k": 0}, ["body.k", "greater than or equal to 1"]),
        ({"q": "x", "k": MAX_K + 1}, ["body.k", f"less than or equal to {MAX_K}", "got 1001"]),
        ({"q": "x", "mode": "fuzzy"}, ["body.mode", "'dense', 'bm25' or 'hybrid'"]),
        ({"q": "x" * (MAX_QUERY_CHARS + 1)}, ["body.q", f"at most {MAX_QUERY_CHARS} characters"]),
        ({"q": 5}, ["body.q", "valid string", "got 5"]),
        ({"q": "x", "k": "5"}, ["body.k", "valid integer", "got '5'"]),
        ({"q": "x", "k": 2.5}, ["body.k", "valid integer"]),
        ({"q": "x", "rerank": "yes"}, ["body.rerank", "valid boolean"]),
        ({"q": "x", "fusion": "borda"}, ["body.fusion", "'rrf', 'minmax', 'tmm' or 'zscore'"]),
        ({"q": "x", "fusion_weight": -0.1}, ["body.fusion_weight", "greater than or equal to 0"]),
        ({"q": "x", "fusion_weight": "0.5"}, ["body.fusion_weight", "valid number"]),
        ({"q": ["x"]}, ["body.q", "valid string"]),
        ({"q": "x", "limit": 3}, ["body.limit", "Extra inputs are not permitted"]),
        ([1, 2], ["body", "valid dictionary"]),
    ],
)
def test_bad_post_search_is_a_422_naming_the_field_and_range(client, body, phrases):
    assert_error(client.post("/search", json=body), 422, *phrases)


def test_malformed_json_is_a_422(client):
    body = assert_error(
        client.post("/search", content=b'{"q": "x",', headers={"content-type": "application/json"}),
        422, "JSON decode error",
    )
    assert body["error"] == "invalid_request"


@pytest.mark.parametrize("query", ["   ", "\n\t", "", "\x1e", "\ufeff"])
def test_an_empty_or_whitespace_query_is_a_422_as_its_schema_says(client, query):
    """The schema declares a query with words (a `pattern` of one non-whitespace character), so an
    empty and a blank query get one status, the one the schema predicts."""
    where = "at least 1 character" if not query else "should hold some words, not only whitespace"
    assert_error(client.get("/search", params={"q": query}), 422, "query.q", where)
    assert_error(client.post("/search", json={"q": query}), 422, "body.q", where)
    schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchRequest"]["properties"]["q"]
    from search.api_models import HAS_WORDS

    assert schema["pattern"] == HAS_WORDS and schema["minLength"] == 1


def test_times_in_answers_carry_their_zone(client):
    """RFC 3339: SQLite keeps no zone, and builds write UTC."""
    assert client.get("/stats").json()["built_at"].endswith(("Z", "+00:00"))


def test_rerank_without_a_reranker_is_a_400_naming_the_fix(client):
    body = assert_error(client.post("/search", json={"q": "x", "rerank": True}), 400, "--rerank-model PATH")
    assert body["error"] == "no_reranker"
    assert client.post("/search", json={"q": "bread", "rerank": False}).status_code == 200


def test_body_over_the_limit_is_a_413_by_length_and_by_stream(client):
    big = b'{"q": "' + b"x" * MAX_BODY_BYTES + b'"}'
    response = client.post("/search", content=big, headers={"content-type": "application/json"})
    assert_error(response, 413, f"over {MAX_BODY_BYTES} bytes")

    def chunks():  # no Content-Length: the limit counts what arrives
        for _ in range(MAX_BODY_BYTES // 1024 + 2):
            yield b" " * 1024

    response = client.post("/search", content=chunks(), headers={"content-type": "application/json"})
    assert "content-length" not in response.request.headers
    assert_error(response, 413, f"over {MAX_BODY_BYTES} bytes")


def test_similarity_limits_and_shapes(client):
    too_many = ["a"] * (MAX_SIMILARITY_SENTENCES + 1)
    assert_error(client.post("/similarity", json={"a": too_many, "b": ["b"]}), 422,
                 "body.a", f"at most {MAX_SIMILARITY_SENTENCES} items")
    assert_error(client.post("/similarity", json={"a": "x" * (MAX_QUERY_CHARS + 1), "b": "y"}), 422,
                 "body.a", f"at most {MAX_QUERY_CHARS} characters")
    assert_error(client.post("/similarity", json={"a": "one", "b": ["two"]}), 422, "body.b", "valid string")
    assert_error(client.post("/similarity", json={"a": ["one"], "b": "two"}), 422, "body.b", "valid list")
    assert_error(client.post("/similarity", json={"a": [], "b": []}), 422, "at least 1 item")
    assert_error(client.post("/similarity", json={"a": ["x", 3], "b": ["y"]}), 422, "body.a")
    assert_error(client.post("/similarity", json={"a": "x"}), 422, "body.b", "Field required")
    assert_error(client.post("/similarity", json={"a": "", "b": "y"}), 422, "body.a", "at least 1 character")
    assert_error(client.post("/similarity", json={"a": ["x", " "], "b": ["y"]}), 422, "body.a.1",
                 "should hold some words, not only whitespace")


def test_unknown_path_and_method_are_json(client):
    assert_error(client.get("/nowhere"), 404, "Not Found")
    assert_error(client.delete("/search"), 405, "Method Not Allowed")


def test_an_internal_error_is_a_500_without_internals(served_index, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("secret path /etc/internal and a stack")

    config = ApiConfig(index_dir=served_index, rerank_model="none")
    with TestClient(create_app(config), raise_server_exceptions=False) as broken_client:
        monkeypatch.setattr(Searcher, "search_detailed", broken)
        response = broken_client.get("/search", params={"q": "bread"})
    body = assert_error(response, 500, "its log says why")
    assert body["error"] == "internal_error" and "secret" not in response.text


# --- the reranker -----------------------------------------------------------------------------


def test_a_named_reranker_reranks_by_default_and_can_be_turned_off(served_index, tiny_cross_encoder):
    config = ApiConfig(index_dir=served_index, rerank_model=tiny_cross_encoder)
    with TestClient(create_app(config)) as reranking:
        stats = reranking.get("/stats").json()
        assert stats["reranker"] == Path(tiny_cross_encoder).name and stats["rerank_default"] is True
        body = reranking.post("/search", json={"q": "bread", "k": 3, "candidates": 5}).json()
        assert body["reranked"] == 5 and all(hit["rerank_score"] is not None for hit in body["hits"])
        assert body["timings"]["rerank_ms"] > 0
        body = reranking.get("/search", params={"q": "bread", "k": 3, "rerank": "false"}).json()
        assert body["reranked"] == 0 and body["hits"][0]["rerank_score"] is None
        # k above candidates is what the schema allows: k hits, the top `candidates` reranked and
        # the rest in the retriever's order (as the evaluation ranks).
        body = reranking.post("/search", json={"q": "bread", "k": 5, "candidates": 2}).json()
        assert len(body["hits"]) == 5 and body["reranked"] == 2
        assert [hit["rerank_score"] is not None for hit in body["hits"]] == [True, True, False, False, False]


def test_reranker_setting_comes_from_the_environment(served_index, monkeypatch):
    monkeypatch.setenv("SEMSEARCH_RERANKER", "none")
    with TestClient(create_app(ApiConfig(index_dir=served_index))) as plain:
        assert plain.get("/stats").json()["reranker"] is None


def test_rerank_on_without_any_reranker_refuses_to_start(served_index):
    with pytest.raises(ValueError, match="Reranking needs a reranker"):
        create_app(ApiConfig(index_dir=served_index, rerank_model="none", rerank=True))


def test_config_is_validated():
    with pytest.raises(ValueError, match=r"poll_seconds \(0\) must be a positive"):
        ApiConfig(index_dir=Path("x"), poll_seconds=0)
    with pytest.raises(ValueError, match=r"search_threads \(0\) must be at least 1"):
        ApiConfig(index_dir=Path("x"), search_threads=0)
    config = ApiConfig(index_dir=Path("x"), rerank=True, poll_seconds=0.5)
    assert ApiConfig.from_json(config.to_json()) == config


def test_workers_read_their_config_from_the_environment(served_index, monkeypatch):
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    with pytest.raises(RuntimeError, match=f"{CONFIG_ENV} is not set"):
        app_from_env()
    monkeypatch.setenv(CONFIG_ENV, ApiConfig(index_dir=served_index, rerank_model="none").to_json())
    with TestClient(app_from_env()) as worker:
        assert worker.get("/health").json()["index"] == "ready"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "0"], r"--workers \(0\) must be at least 1"),
        (["--rerank-model", "none", "--rerank"], "Reranking needs a reranker"),
        (["--poll-seconds", "-1"], r"poll_seconds \(-1.0\) must be a positive"),
    ],
)
def test_cli_refuses_bad_settings_before_serving(tmp_path, capsys, argv, message):
    assert main(["--index", str(tmp_path / "idx"), *argv]) == 2
    assert re.search(message, capsys.readouterr().err)


# --- no index yet, then builds ----------------------------------------------------------------


def test_503_until_an_index_is_built_then_200_without_restart(tmp_path, tiny_model):
    index_dir = tmp_path / "later"
    config = ApiConfig(index_dir=index_dir, rerank_model="none", poll_seconds=0.05, similarity_model=tiny_model)
    with TestClient(create_app(config)) as waiting:
        health = waiting.get("/health").json()
        assert health["index"] == "missing" and "python -m indexer build" in health["detail"]
        # Answers name "<index>", not the server's folders: the log keeps those.
        assert "--index <index>" in health["detail"] and str(tmp_path) not in health["detail"]
        assert str(tmp_path) not in waiting.get("/stats").text
        for response in (waiting.get("/search", params={"q": "bread"}), waiting.get("/stats"),
                         waiting.post("/search", json={"q": "bread"})):
            body = assert_error(response, 503, "No index", "python -m indexer build", "no restart")
            assert body["error"] == "no_index" and response.headers["retry-after"] == "1"
        # Bad requests are still told what is wrong first.
        assert_error(waiting.get("/search", params={"q": "x", "k": 0}), 422, "query.k")
        # Similarity needs no index: it uses the configured model until one is open.
        assert waiting.post("/similarity", json={"a": "x", "b": "x"}).json()["score"] == pytest.approx(1.0)

        build(write_corpus(tmp_path / "corpus"), index_dir, tiny_model)
        wait_until_ready(waiting)
        body = waiting.get("/search", params={"q": CODE_QUERY, "mode": "bm25", "k": 1}).json()
        assert body["hits"][0]["doc_id"] == "minutes.txt"
        assert waiting.get("/stats").json()["documents"] == 5


def test_an_unreadable_index_is_a_503_with_its_repair(private_index):
    _corpus, index_dir, _model = private_index
    for vectors in index_dir.glob("vectors-*.faiss"):
        vectors.write_bytes(b"damaged")
    with TestClient(create_app(ApiConfig(index_dir=index_dir, rerank_model="none", poll_seconds=0.05))) as damaged:
        assert damaged.get("/health").json()["index"] == "unreadable"
        body = assert_error(damaged.get("/search", params={"q": "bread"}), 503, "python -m indexer repair")
        assert body["error"] == "index_unavailable"


def test_a_rebuild_is_picked_up_and_no_request_fails_meanwhile(private_index):
    corpus, index_dir, model = private_index
    config = ApiConfig(index_dir=index_dir, rerank_model="none")
    with TestClient(create_app(config)) as live:
        before = live.get("/stats").json()["build_id"]

        def hammer(worker: int) -> list[int]:
            statuses = []
            for i in range(15):
                if i % 3 == 0:
                    statuses.append(live.get("/stats").status_code)
                else:
                    statuses.append(live.post("/search", json={"q": f"bread {worker} {i}", "k": 5}).status_code)
            return statuses

        with ThreadPoolExecutor(4) as pool:
            running = [pool.submit(hammer, worker) for worker in range(4)]
            (corpus / "comet.txt").write_text("A comet QX7 with a bright tail passed close to the Sun.")
            (corpus / "baking.txt").unlink()
            build(corpus, index_dir, model)
            statuses = [status for future in running for status in future.result()]
        assert statuses == [200] * len(statuses)
        stats = live.get("/stats").json()
        assert stats["build_id"] != before and stats["documents"] == 5
        hits = live.get("/search", params={"q": "QX7", "mode": "bm25", "k": 5}).json()["hits"]
        assert hits[0]["doc_id"] == "comet.txt"
        assert "baking.txt" not in {hit["doc_id"] for hit in live.get("/search", params={"q": "bread"}).json()["hits"]}


def test_the_service_closes_its_searcher_on_shutdown(private_index):
    _corpus, index_dir, _model = private_index
    app = create_app(ApiConfig(index_dir=index_dir, rerank_model="none"))
    with TestClient(app) as live:
        assert live.get("/health").json()["index"] == "ready"
    assert app.state.service.ready is False
    shutil.rmtree(index_dir)  # nothing holds it open


def test_redact_replaces_the_named_strings_and_shortens_other_absolute_paths():
    from search.api_errors import redact

    text = ("No index found in /srv/data/idx (postgresql+psycopg://u:***@db/x); see /srv/data/idx/store.sqlite, "
            "/home/me/models/reranker, http://host/docs and /docs")
    shown = redact(text, {"/srv/data/idx": "<index>", "postgresql+psycopg://u:***@db/x": "<database>"})
    assert shown == ("No index found in <index> (<database>); see <index>/store.sqlite, .../reranker, "
                     "http://host/docs and /docs")


def test_a_fallback_reason_names_no_server_path(private_index):
    """An index that lost its BM25 folder is searched dense, and the answer says so without
    the folder's path."""
    _, index_dir, model = private_index
    searcher = Searcher(index_dir)
    bm25_dir = index_dir / searcher.index.info.bm25_dir
    searcher.close()
    shutil.rmtree(bm25_dir)
    config = ApiConfig(index_dir=index_dir, rerank_model="none", similarity_model=model)
    with TestClient(create_app(config)) as served:
        wait_until_ready(served)
        body = served.get("/search", params={"q": "bread"}).json()
    assert body["mode"] == "dense" and "searched in dense mode instead of hybrid" in body["fallback_reason"]
    assert "--index <index>" in body["fallback_reason"] and str(index_dir) not in str(body)


def test_unknown_get_parameters_are_refused_as_unknown_post_fields_are(client):
    body = assert_error(client.get("/search", params={"q": "bread", "mdoe": "bm25"}), 422,
                        "query.mdoe", "Extra inputs are not permitted")
    assert body["error"] == "invalid_request"
    assert_error(client.post("/search", json={"q": "bread", "mdoe": "bm25"}), 422, "body.mdoe",
                 "Extra inputs are not permitted")
    assert client.get("/search", params={"q": "bread", "mode": "bm25", "k": 2}).status_code == 200


def test_a_long_url_or_long_headers_get_a_json_refusal(client):
    from search.api_models import MAX_HEADER_BYTES, MAX_URL_BYTES

    body = assert_error(client.get("/search", params={"q": "x" * (MAX_URL_BYTES + 1)}), 414,
                        f"over the {MAX_URL_BYTES} this API accepts", "POST /search")
    assert body["error"] == "uri_too_long"
    body = assert_error(client.get("/health", headers={"X-Big": "y" * MAX_HEADER_BYTES}), 431,
                        f"over the {MAX_HEADER_BYTES} this API accepts")
    assert body["error"] == "headers_too_large"
    assert client.get("/health", headers={"X-Small": "y" * 1000}).status_code == 200


def test_cors_is_off_by_default_and_allows_only_the_origins_given(served_index, tiny_model_dir, client):
    preflight = {"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"}
    assert "access-control-allow-origin" not in client.get("/health", headers={"Origin": "http://x.org"}).headers
    assert "access-control-allow-origin" not in client.options("/search", headers=preflight).headers
    config = ApiConfig(index_dir=served_index, rerank_model="none", similarity_model=str(tiny_model_dir),
                       cors_origins=("http://localhost:3000",))
    with TestClient(create_app(config)) as allowed:
        answer = allowed.options("/search", headers=preflight)
        assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = allowed.get("/health", headers={"Origin": "http://elsewhere.org"})
        assert "access-control-allow-origin" not in other.headers
    assert ApiConfig.from_json(config.to_json()).cors_origins == ("http://localhost:3000",)
    with pytest.raises(ValueError, match="is not an origin; give scheme and host"):
        ApiConfig(index_dir=served_index, cors_origins=("localhost:3000/app",))


def test_health_says_unreadable_while_searches_fail_on_a_damaged_store(tmp_path, tiny_model):
    """A zeroed page among the rows: the index opens and /stats answers, but searches cannot be
    answered, so /health must not say ready; a rebuild makes it ready again."""
    from tests.indexer.helpers import write_corpus as write_docs
    from tests.indexer.test_reliability import zeroed_page_copies

    docs = {f"d{i}.txt": " ".join(f"word{i} text{j}" for j in range(300)) for i in range(40)}
    source = write_docs(tmp_path / "corpus", docs)
    build(source, tmp_path / "idx", tiny_model)
    damaged, _ = next(zeroed_page_copies(tmp_path / "idx", tmp_path, "malformed"))
    config = ApiConfig(index_dir=damaged, rerank_model="none", similarity_model=tiny_model)
    with TestClient(create_app(config)) as served:
        wait_until_ready(served)
        assert served.get("/stats").status_code == 200
        assert_error(served.get("/search", params={"q": "word3 text7", "mode": "bm25", "k": 40}), 503,
                     "is damaged", "--rebuild")
        health = served.get("/health").json()
        assert health["index"] == "unreadable" and "is damaged" in health["detail"]
        build_index(IndexConfig(source=source, index_dir=damaged, model=tiny_model, rebuild=True,
                                show_progress=False))
        assert served.get("/search", params={"q": "word3 text7", "mode": "bm25", "k": 40}).status_code == 200
        assert served.get("/health").json()["index"] == "ready"


def test_stats_say_how_far_a_growing_build_has_got(private_index):
    import json
    import os

    _, index_dir, model = private_index
    config = ApiConfig(index_dir=index_dir, rerank_model="none", similarity_model=model)
    with TestClient(create_app(config)) as served:
        wait_until_ready(served)
        assert served.get("/stats").json()["building"] is None
        (index_dir / ".build-progress.json").write_text(json.dumps({"done": 16, "total": 90, "pid": os.getpid()}))
        assert served.get("/stats").json()["building"] == {"done": 16, "total": 90}


def test_a_whole_number_written_with_a_fraction_is_an_integer_as_json_schema_says(client):
    assert client.post("/search", json={"q": "bread", "k": 3.0, "mode": "bm25"}).json()["k"] == 3
    assert_error(client.post("/search", json={"q": "bread", "k": 2.5}), 422, "body.k")
    assert_error(client.post("/search", json={"q": "bread", "k": "3"}), 422, "body.k")
    assert_error(client.post("/search", json={"q": "bread", "k": True}), 422, "body.k")


def test_docs_load_nothing_from_outside_the_server(client):
    """/docs and /redoc reference only the server's own assets, so they render offline."""
    import re

    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        assets = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", html) + re.findall(r"""url: ?['"]([^'"]+)['"]""", html)
        assert assets, page
        for asset in assets:
            assert not asset.startswith(("http://", "https://", "//")), f"{page} loads {asset}"
            assert client.get(asset).status_code == 200, asset


def test_each_hit_names_the_words_the_query_matched(client):
    from indexer import bm25_terms
    from search.matches import query_terms

    query = "Bread dough rises"
    body = client.post("/search", json={"q": query, "k": 5, "mode": "hybrid"}).json()
    wanted = set(query_terms(query))
    assert any(hit["matches"] for hit in body["hits"]), body["hits"]
    for hit in body["hits"]:
        for match in hit["matches"]:
            word = hit["text"][match["start"]:match["end"]]
            assert match["term"] in wanted and [t for _, _, t in bm25_terms(word)] == [match["term"]], (word, match)
    schema = client.get("/openapi.json").json()["components"]["schemas"]["HitOut"]
    assert "matches" in schema["required"]


def test_offset_gives_the_next_page_of_the_same_ranking(client):
    whole = client.get("/search", params={"q": "bread", "k": 5, "mode": "dense"}).json()["hits"]
    page = client.post("/search", json={"q": "bread", "k": 2, "offset": 2, "mode": "dense"}).json()
    assert page["offset"] == 2 and [h["doc_id"] for h in page["hits"]] == [h["doc_id"] for h in whole[2:4]]
    assert [h["rank"] for h in page["hits"]] == [3, 4]
    assert_error(client.get("/search", params={"q": "bread", "offset": -1}), 422, "query.offset")
    assert client.post("/search", json={"q": "bread", "k": 1000, "offset": 999}).status_code == 200


def test_a_batch_answers_each_query_as_search_does(client):
    from search.api_models import MAX_BATCH_QUERIES

    queries = ["bread dough", "volcano eruption", CODE_QUERY]
    body = client.post("/search/batch", json={"queries": queries, "k": 3, "mode": "dense"}).json()
    assert [r["query"] for r in body["results"]] == queries
    for query, result in zip(queries, body["results"], strict=True):
        alone = client.post("/search", json={"q": query, "k": 3, "mode": "dense"}).json()
        assert [h["doc_id"] for h in result["hits"]] == [h["doc_id"] for h in alone["hits"]]
        assert [h["score"] for h in result["hits"]] == pytest.approx([h["score"] for h in alone["hits"]], abs=1e-5)
    assert_error(client.post("/search/batch", json={"queries": ["x"] * (MAX_BATCH_QUERIES + 1)}), 422,
                 "body.queries", f"at most {MAX_BATCH_QUERIES} items")
    assert_error(client.post("/search/batch", json={"queries": ["ok", "  "]}), 422, "body.queries.1")
    assert_error(client.post("/search/batch", json={"queries": []}), 422, "body.queries")


def test_a_filter_keeps_only_matching_documents_in_search_and_batch(client):
    everything = client.post("/search", json={"q": "bread", "k": 10, "mode": "dense"}).json()["hits"]
    assert {h["doc_id"] for h in everything} >= {"football.md", "baking.txt"}
    only_md = client.post("/search", json={"q": "bread", "k": 10, "mode": "dense", "filter": {"_type": "md"}}).json()
    assert [h["doc_id"] for h in only_md["hits"]] == ["football.md"]
    not_md = client.post("/search", json={"q": "bread", "k": 10, "filter": {"$not": {"_type": "md"}}}).json()
    assert "football.md" not in {h["doc_id"] for h in not_md["hits"]} and len(not_md["hits"]) == len(everything) - 1
    batch = client.post("/search/batch", json={"queries": ["bread", "lava"], "mode": "bm25",
                                               "filter": {"_id": {"$in": ["baking.txt", "volcano.txt"]}}}).json()
    assert [[h["doc_id"] for h in r["hits"]] for r in batch["results"]] == [["baking.txt"], ["volcano.txt"]]


def test_a_filter_on_a_field_no_document_has_answers_with_a_note_naming_it(client):
    misspelt = client.post("/search", json={"q": "bread", "k": 10, "filter": {"_typ": "md"}})
    assert misspelt.status_code == 200 and misspelt.json()["hits"] == []
    assert "no document of this index has the field '_typ'. Did you mean '_type'?" in misspelt.json()["filter_note"]
    assert client.post("/search", json={"q": "bread", "filter": {"_type": "md"}}).json()["filter_note"] is None
    batch = client.post("/search/batch", json={"queries": ["bread", "lava"], "filter": {"_type": "pdf"}}).json()
    assert all(r["hits"] == [] and "no document's values meet" in r["filter_note"] for r in batch["results"])


def test_a_bad_filter_is_a_422_naming_the_fix_and_get_points_to_post(client):
    body = assert_error(client.post("/search", json={"q": "bread", "filter": {"year": {"$regex": "2"}}}), 422)
    assert "filter" in json.dumps(body)
    wrong_date = client.post("/search", json={"q": "bread", "filter": {"d": {"$gt": "last week"}}})
    assert wrong_date.status_code == 422 and "ISO 8601" in wrong_date.text
    assert_error(client.get("/search", params={"q": "bread", "filter": '{"_type": "md"}'}), 422)
    assert "POST /search" in client.get("/search", params={"q": "bread", "filter": "{}"}).text


def test_the_schema_publishes_the_filter_shape(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"MetadataFilter", "FieldCondition"} <= set(schemas)
    assert schemas["MetadataFilter"]["properties"]["$not"] == {"$ref": "#/components/schemas/MetadataFilter"}


def test_similarity_flags_text_the_model_cannot_read(client):
    body = client.post("/similarity", json={"a": "🐧🐧🐧", "b": "😀🎉"}).json()
    assert (body["score"], body["matrix"], body["unreadable"]) == (None, [[None]], ["a[0]", "b[0]"])
    body = client.post("/similarity", json={"a": ["a cat", "🐧🐧🐧"], "b": ["a kitten"]}).json()
    assert body["unreadable"] == ["a[1]"] and body["matrix"][1] == [None]
    assert -1.0 <= body["matrix"][0][0] <= 1.0


def test_min_relevance_is_checked_and_passed_on(client):
    assert_error(client.get("/search", params={"q": "bread", "min_relevance": 1.5}), 422, "min_relevance")
    body = client.post("/search", json={"q": "bread", "mode": "dense", "min_relevance": 0.5}).json()
    assert body["hits"] and body["relevance_note"].startswith("min_relevance was not applied")


def test_a_server_opening_in_the_background_answers_loading_until_ready(served_index, tiny_model_dir, monkeypatch):
    import threading

    from search.shared_models import SharedModels

    # The service loads each model once for all its collections, through SharedModels: hold that load.
    gate, real = threading.Event(), SharedModels.get
    monkeypatch.setattr(SharedModels, "get", lambda self, spec, *args: gate.wait(60) and real(self, spec, *args))
    config = ApiConfig(index_dir=served_index, rerank_model="none", similarity_model=str(tiny_model_dir),
                       open_in_background=True)
    with TestClient(create_app(config)) as loading:
        try:
            assert loading.get("/health").json() == {"status": "ok", "index": "loading",
                                                     "detail": "The index and its models are loading."}
            response = loading.get("/search", params={"q": "bread"})
            assert response.status_code == 503 and response.headers["Retry-After"] == "1"
            assert response.json()["error"] == "loading"
        finally:
            gate.set()
        wait_until_ready(loading)
        assert loading.get("/search", params={"q": "bread"}).status_code == 200
