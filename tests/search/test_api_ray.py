"""`python -m search.api --ray`: the same app on Ray Serve replicas answers as one process does."""

from __future__ import annotations

import socket
import time

import pytest
from fastapi.testclient import TestClient

from search.api import create_app, main
from search.api_service import ApiConfig

pytest.importorskip("ray.serve")
httpx = pytest.importorskip("httpx2")

QUERIES = ["volcano ash over Europe", "how long to knead the dough", "interest rates and share prices"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(get, post) -> dict:
    """What a client sees for the checks below, ids and scores, a bad request, and the stats."""
    out = {}
    for query in QUERIES:
        body = post("/search", {"q": query, "k": 3, "mode": "hybrid"})
        out[query] = [(h["doc_id"], round(h["score"], 5)) for h in body["hits"]]
    out["bad"] = post("/search", {"query": "no such field"})
    out["stats"] = get("/stats")
    return out


def test_two_replicas_on_ray_serve_answer_as_one_process(served_index, tiny_model_dir):
    import ray

    from search.api_ray import RayServeConfig, replica_states, start, stop

    config = ApiConfig(index_dir=served_index, rerank_model="none", similarity_model=str(tiny_model_dir))
    with TestClient(create_app(config)) as local:
        expected = _answers(lambda path: local.get(path).json(),
                            lambda path, body: local.post(path, json=body).json())
    ray_config = RayServeConfig(address="local", replicas=2, replica_cpus=0.5, port=_free_port())
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        start(config, ray_config, create_app)
        assert replica_states() == {"RUNNING": 2}
        base = f"http://127.0.0.1:{ray_config.port}"
        with httpx.Client(base_url=base, timeout=60) as client:
            deadline = time.monotonic() + 90
            while client.get("/health").json()["index"] != "ready":  # each replica opens the index itself
                assert time.monotonic() < deadline
                time.sleep(0.2)
            answers = [_answers(lambda path: client.get(path).json(),
                                lambda path, body: client.post(path, json=body).json()) for _ in range(3)]
        for answer in answers:  # whichever replica answered
            assert answer == expected
        assert expected["bad"]["error"] == "invalid_request"  # the app's own errors, unchanged
    finally:
        stop(ray_config)
    assert not ray.is_initialized()


def test_ray_flags_are_checked_before_anything_starts(served_index, capsys):
    assert main(["--index", str(served_index), "--ray", "local", "--replicas", "0"]) == 2
    assert "--replicas (0) must be at least 1" in capsys.readouterr().err
    assert main(["--index", str(served_index), "--ray", "local", "--workers", "2"]) == 2
    assert "with --ray give --replicas instead" in capsys.readouterr().err
