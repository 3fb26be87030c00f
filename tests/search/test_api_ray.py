"""`python -m search.api --ray`: the same app on Ray Serve replicas answers as one process does."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from search.api import create_app, main
from search.api_service import ApiConfig

pytest.importorskip("ray.serve")
httpx = pytest.importorskip("httpx2")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_ray_flags_are_checked_before_anything_starts(served_index, capsys):
    assert main(["--index", str(served_index), "--ray", "local", "--replicas", "0"]) == 2
    assert "--replicas (0) must be at least 1" in capsys.readouterr().err
    assert main(["--index", str(served_index), "--ray", "local", "--workers", "2"]) == 2
    assert "with --ray give --replicas instead" in capsys.readouterr().err


# --- shards: an index split by passage id, behind a router (issue 33) -----------------------------

SHARD_QUERIES = ["river storm paper", "invoice refund", "printer crash network"]
SHARD_FILTER = {"$or": [{"tag": "billing"}, {"year": {"$gte": 2024}}]}


def _shard_answers(post) -> dict:
    """Hits (ids, passages, scores to 1e-4) in every mode, with and without a filter, two k."""
    out = {}
    for query in SHARD_QUERIES:
        for mode in ("dense", "bm25", "hybrid"):
            for k, flt in ((10, None), (4, None), (10, SHARD_FILTER)):
                body = {"q": query, "k": k, "mode": mode, **({"filter": flt} if flt else {})}
                hits = post("/search", body)["hits"]
                out[query, mode, k, str(flt)] = [(h["doc_id"], h["start_char"], round(h["score"], 4)) for h in hits]
    return out


def _wait_ready(client, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while client.get("/health").json()["index"] != "ready":
        assert time.monotonic() < deadline, client.get("/health").json()
        time.sleep(0.2)


@pytest.fixture(scope="module")
def sharded_indexes(tmp_path_factory, tiny_model_dir):
    """The same corpus built with 2 shards and with 1 (both hold the unsharded files too)."""
    import random

    from indexer import IndexConfig, build_index
    from tests.search.test_filters import write_corpus

    root = tmp_path_factory.mktemp("ray_shards")
    write_corpus(root / "src", random.Random(12), 120)
    for shards in (2, 1):
        build_index(IndexConfig(source=root / "src", index_dir=root / f"idx{shards}", model=str(tiny_model_dir),
                                show_progress=False, shards=shards))
    return root


def test_sharded_service_on_ray_serve_answers_as_one_index(sharded_indexes, tiny_model_dir):
    """2 shards of 1 replica each, then 1 shard of 2 replicas: the same hits as one process over
    the unsharded files, in every mode, with a filter and at two k, and from either replica the
    same errors and stats; a new build is served without a restart."""
    import random

    import ray

    from indexer import IndexConfig, build_index
    from search.api_ray import RayServeConfig, replica_states, shard_name, start
    from tests.search.test_filters import write_corpus

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    port = _free_port()  # Serve's HTTP proxy starts once, on the first deployment's port
    try:
        for shards, replicas in ((2, 1), (1, 2)):
            index_dir = sharded_indexes / f"idx{shards}"
            config = ApiConfig(index_dir=index_dir, rerank_model="none", similarity_model=str(tiny_model_dir))
            with TestClient(create_app(config)) as local:
                expected = _shard_answers(lambda path, body: local.post(path, json=body).json())
                bad = local.post("/search", json={"query": "no such field"})
                expected_bad = (bad.status_code, bad.json())
                expected_stats = local.get("/stats").json()
            assert expected_bad[1]["error"] == "invalid_request"
            ray_config = RayServeConfig(address="auto", replicas=replicas, replica_cpus=0.25, shard_cpus=0.25,
                                        shards=shards, port=port)
            start(config, ray_config, create_app)
            assert [replica_states(shard_name(s)) for s in range(shards)] == [{"RUNNING": replicas}] * shards
            with httpx.Client(base_url=f"http://127.0.0.1:{ray_config.port}", timeout=60) as client:
                _wait_ready(client)
                assert _shard_answers(lambda path, body: client.post(path, json=body).json()) == expected
                if replicas == 2:  # whichever replica answers: the app's own errors and stats, unchanged
                    for _ in range(3):
                        bad = client.post("/search", json={"query": "no such field"})
                        assert (bad.status_code, bad.json()) == expected_bad
                        assert client.get("/stats").json() == expected_stats
                if shards == 2:  # a build committed while serving: the router and shards pick it up
                    write_corpus(sharded_indexes / "src", random.Random(13), 140)
                    build_index(IndexConfig(source=sharded_indexes / "src", index_dir=index_dir,
                                            model=str(tiny_model_dir), show_progress=False))
                    with TestClient(create_app(config)) as local:
                        expected = _shard_answers(lambda path, body: local.post(path, json=body).json())
                        build_id = local.get("/stats").json()["build_id"]
                    assert client.get("/stats").json()["build_id"] == build_id
                    assert _shard_answers(lambda path, body: client.post(path, json=body).json()) == expected
            _serve_delete()
    finally:
        ray.shutdown()


def _serve_delete() -> None:
    from ray import serve

    from search.api_ray import APP_NAME

    serve.delete(APP_NAME)


def _shard_zero_only(index_dir, model_dir) -> list[str]:
    """What the search above finds in shard 0 alone, in this process."""
    from indexer.store.shards import LocalShard, ShardReader, partial_results, sharded_files
    from search import Searcher
    from tests.search.test_sharded import _Down

    files = sharded_files([LocalShard(ShardReader(index_dir, 0)), _Down()])
    with Searcher(index_dir, files=files) as searcher, partial_results() as missing:
        hits = searcher.search("invoice refund", k=5, mode="hybrid", rerank=False)
    assert missing == {1}
    return [hit.doc_id for hit in hits]


def test_a_dead_shard_is_a_503_naming_it_until_ray_serve_restarts_it(sharded_indexes, tiny_model_dir):
    import ray

    from search.api_ray import RayServeConfig, replica_states, shard_name, start, stop

    config = ApiConfig(index_dir=sharded_indexes / "idx2", rerank_model="none", similarity_model=str(tiny_model_dir))
    ray_config = RayServeConfig(address="local", replicas=1, replica_cpus=0.25, shard_cpus=0.25, shards=2,
                                port=_free_port(), shard_timeout_s=1.0)
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        start(config, ray_config, create_app)
        with httpx.Client(base_url=f"http://127.0.0.1:{ray_config.port}", timeout=60) as client:
            _wait_ready(client)
            body = {"q": "invoice refund", "k": 5, "mode": "hybrid"}
            # Both shards answering first: on a loaded machine a shard's first search (its files
            # opened) took longer than the router's 1 s wait, and the first answer was a 503 (CI).
            deadline = time.monotonic() + 60
            while (answer := client.post("/search", json=body)).status_code != 200:
                assert time.monotonic() < deadline, answer.json()
                time.sleep(0.5)
            whole = answer.json()
            assert whole["missing_shards"] == [] and len(whole["hits"]) == 5
            (replica,) = [a for a in ray.util.list_named_actors(all_namespaces=True)
                          if f"#{shard_name(1)}#" in a["name"]]
            ray.kill(ray.get_actor(replica["name"], namespace=replica["namespace"]), no_restart=True)
            # Both asked at once, while the shard is down (Ray Serve took about 5 s to replace it here;
            # the router waits shard_timeout_s = 1 s for it).
            with ThreadPoolExecutor(2) as pool:
                asked = [pool.submit(client.post, "/search", json=b) for b in (body, {**body, "allow_partial": True})]
                down, partial = (future.result().json() for future in asked)
            assert down["error"] == "shard_unavailable", down
            assert "Shard 1 of 2 did not answer" in down["detail"]
            assert partial["missing_shards"] == [1], partial
            assert [h["doc_id"] for h in partial["hits"]] == _shard_zero_only(config.index_dir, tiny_model_dir)
            deadline = time.monotonic() + 60  # Ray Serve starts a new replica of shard 1
            while client.post("/search", json=body).status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.5)
            assert replica_states(shard_name(1)) == {"RUNNING": 1}
            assert client.post("/search", json=body).json()["hits"] == whole["hits"]
    finally:
        stop(ray_config)
    assert not ray.is_initialized()  # "local": the Ray the service started is gone with it
