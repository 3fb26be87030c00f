"""GET /metrics (search/api_metrics.py): Prometheus text with requests by route template and
status, search stage timings, and the collection's documents, passages, build and model state."""

from __future__ import annotations

from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from search import Searcher
from search.api import ApiConfig, create_app


def samples(client: TestClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_are_counted_by_route_template_and_status(client):
    before = samples(client)
    assert client.post("/search", json={"q": "bread oven", "k": 2}).status_code == 200
    assert client.get("/search", params={"q": "bread", "k": 0}).status_code == 422
    assert client.get("/no/such/path/123").status_code == 404
    assert client.post("/search/batch", json={"queries": ["bread", "garden"], "k": 1}).status_code == 200
    after = samples(client)
    for route, method, status in (("/search", "POST", "200"), ("/search", "GET", "422"),
                                  ("unmatched", "GET", "404"), ("/search/batch", "POST", "200")):
        name = "semsearch_http_requests_total"
        assert value(after, name, route=route, method=method, status=status) == value(
            before, name, route=route, method=method, status=status) + 1, (route, status)
    assert not any("/no/such" in str(labels) for _, labels in after)  # paths never become labels
    seconds = "semsearch_http_request_duration_seconds_count"
    assert value(after, seconds, route="/search", method="POST") == value(before, seconds, route="/search", method="POST") + 1
    # three searches ran (one, then a batch of two): each stage observed once per search
    for stage in ("encode", "retrieve", "rerank"):
        name = "semsearch_search_stage_seconds_count"
        assert value(after, name, stage=stage) == value(before, name, stage=stage) + 3


def test_the_collection_figures_are_read_from_the_newest_build(client, served_index):
    found = samples(client)
    stats = Searcher(served_index, model_loading="lazy").stats()
    name = served_index.name
    assert value(found, "semsearch_collection_documents", collection=name) == stats.documents > 0
    assert value(found, "semsearch_collection_passages", collection=name) == stats.passages
    info = [labels for metric, labels in found if metric == "semsearch_collection_info"]
    assert dict(info[0])["build_id"] == stats.build_id and dict(info[0])["collection"] == name
    assert value(found, "semsearch_index_state", collection=name, state="ready") == 1.0
    assert value(found, "semsearch_index_state", collection=name, state="loading") == 0.0
    client.post("/search", json={"q": "bread", "mode": "dense"})
    assert value(samples(client), "semsearch_model_loaded", collection=name) == 1.0


def test_a_service_without_an_index_reports_it_missing(tmp_path, tiny_model_dir):
    config = ApiConfig(index_dir=tmp_path / "none-yet", rerank_model="none", similarity_model=str(tiny_model_dir))
    with TestClient(create_app(config)) as client:
        found = samples(client)
        assert value(found, "semsearch_index_state", collection="none-yet", state="missing") == 1.0
        assert value(found, "semsearch_model_loaded", collection="none-yet") == 0.0
        assert not any(metric == "semsearch_collection_documents" for metric, _ in found)
