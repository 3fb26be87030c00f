"""Writes over HTTP (search/api_writes.py, search/api_documents.py): upserts through the build
loop, deletes by id and by filter, a document read back with its passages, the lock wait, and a
kill -9 of a real server mid-write that loses no acknowledged write and leaves no half batch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient

from data.paths import PROJECT_ROOT
from indexer.layout import IndexLayout
from indexer.store.transaction import folder_lock
from search.api import ApiConfig, create_app
from search.api_collection_models import MAX_WRITE_DOCUMENTS
from tests.search.test_api_server import free_port, stop, wait_for

DOCS = [{"id": "oven", "title": "Bread", "text": "Bake the bread in a hot oven for forty minutes.",
         "metadata": {"topic": "baking", "year": 2024}},
        {"id": "roses", "title": "Garden", "text": "Prune the roses in early spring, above an outward bud.",
         "metadata": {"topic": "garden", "year": 2025}},
        {"id": "notes/soil.txt", "title": "Soil", "text": "Dig compost into the soil before planting.",
         "metadata": {"topic": "garden", "year": 2023}}]


@pytest.fixture()
def api(tmp_path, tiny_model_dir):
    config = ApiConfig(root=tmp_path / "root", rerank_model="none", default_model=str(tiny_model_dir),
                       write_wait_seconds=0.5)
    with TestClient(create_app(config)) as test_client:
        assert test_client.put("/collections/c", json={}).status_code == 201
        yield test_client


def write(api: TestClient, documents: list[dict]) -> dict:
    answer = api.post("/collections/c/documents", json={"documents": documents})
    assert answer.status_code == 200, answer.json()
    return answer.json()


def test_a_write_adds_then_leaves_alone_then_replaces_as_a_build_would(api):
    first = write(api, DOCS)
    assert (first["added"], first["updated"], first["unchanged"]) == (3, 0, 0)
    again = write(api, DOCS)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 3)
    assert again["build_id"] == first["build_id"], "nothing changed: no new build"
    changed = write(api, [{**DOCS[0], "text": "Bake rye bread slowly at a low heat."}, DOCS[1]])
    assert (changed["added"], changed["updated"], changed["unchanged"]) == (0, 1, 1)
    hit = api.post("/collections/c/search", json={"q": "rye bread low heat", "mode": "bm25", "k": 1}).json()
    assert hit["hits"][0]["doc_id"] == "oven" and "rye" in hit["hits"][0]["text"]
    assert api.get("/collections/c/stats").json()["documents"] == 3


def test_a_document_reads_back_with_its_passages(api):
    write(api, DOCS)
    found = api.get("/collections/c/documents/notes/soil.txt")
    assert found.status_code == 200
    body = found.json()
    assert (body["id"], body["title"], body["metadata"], body["source"]) == (
        "notes/soil.txt", "Soil", {"topic": "garden", "year": 2023}, "api")
    assert [p["text"] for p in body["passages"]] == [DOCS[2]["text"]]
    missing = api.get("/collections/c/documents/nothing")
    assert missing.status_code == 404 and missing.json()["error"] == "no_document"


def test_documents_are_deleted_by_id_by_ids_and_by_filter(api):
    write(api, DOCS)
    assert api.delete("/collections/c/documents/oven").json()["deleted"] == 1
    assert api.get("/collections/c/documents/oven").status_code == 404
    assert api.delete("/collections/c/documents/oven").status_code == 404
    by_filter = api.post("/collections/c/documents/delete", json={"filter": {"year": {"$gte": 2025}}}).json()
    assert by_filter["deleted"] == 1
    by_ids = api.post("/collections/c/documents/delete", json={"ids": ["notes/soil.txt", "never"]}).json()
    assert (by_ids["deleted"], by_ids["not_found"]) == (1, ["never"])
    assert api.get("/collections/c/stats").json()["documents"] == 0
    neither = api.post("/collections/c/documents/delete", json={})
    assert neither.status_code == 422 and "ids" in neither.json()["detail"] and "filter" in neither.json()["detail"]


def test_a_bad_batch_is_refused_whole_and_nothing_is_written(api):
    twice = api.post("/collections/c/documents", json={"documents": [DOCS[0], DOCS[0]]})
    assert twice.status_code == 400 and "appears twice" in twice.json()["detail"]
    too_many = [{"id": f"d{i}", "text": "words"} for i in range(MAX_WRITE_DOCUMENTS + 1)]
    assert api.post("/collections/c/documents", json={"documents": too_many}).status_code == 422
    nul = api.post("/collections/c/documents", json={"documents": [DOCS[0], {"id": "x", "text": "a\x00b"}]})
    assert nul.status_code == 400 and "'x'" in nul.json()["detail"]
    assert api.get("/collections/c/documents/oven").status_code == 404


def test_a_write_waits_for_another_build_then_answers_503_and_searches_go_on(api, tmp_path):
    write(api, DOCS[:1])
    with folder_lock(IndexLayout(tmp_path / "root" / "c").lock_file):  # another build holds the folder
        started = time.monotonic()
        busy = api.post("/collections/c/documents", json={"documents": DOCS[1:]})
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert "Nothing of this request was written" in busy.json()["detail"]
        assert time.monotonic() - started >= 0.5
        assert api.post("/collections/c/search", json={"q": "bread", "mode": "bm25"}).status_code == 200
    assert write(api, DOCS[1:])["added"] == 2


def test_writes_need_a_write_key(tmp_path, tiny_model_dir):
    keys = tmp_path / "keys"
    keys.write_text(f"read {'r' * 20}\nwrite {'w' * 20}\n")
    config = ApiConfig(root=tmp_path / "root", rerank_model="none", default_model=str(tiny_model_dir),
                       api_keys=str(keys))
    read, written = ({"Authorization": f"Bearer {key * 20}"} for key in ("r", "w"))
    with TestClient(create_app(config)) as keyed:
        assert keyed.put("/collections/c", json={}, headers=written).status_code == 201
        body = {"documents": DOCS[:1]}
        assert keyed.post("/collections/c/documents", json=body).status_code == 401
        assert keyed.post("/collections/c/documents", json=body, headers=read).status_code == 403
        assert keyed.post("/collections/c/documents", json=body, headers=written).status_code == 200
        assert keyed.get("/collections/c/documents/oven", headers=read).status_code == 200
        assert keyed.delete("/collections/c/documents/oven", headers=read).status_code == 403
        assert keyed.post("/collections/c/documents/delete", json={"ids": ["oven"]}, headers=read).status_code == 403


def start_server(root: Path, model: Path, port: int, log: Path) -> subprocess.Popen:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    return subprocess.Popen(
        [sys.executable, "-m", "search.api", "--root", str(root), "--port", str(port), "--rerank-model", "none",
         "--default-model", str(model), "--load-first", "--log-level", "warning"],
        cwd=PROJECT_ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)


def test_kill_9_mid_write_loses_no_acknowledged_write_and_leaves_no_half_batch(tmp_path, tiny_model_dir):
    root, port, log = tmp_path / "root", free_port(), tmp_path / "server.log"
    base = f"http://127.0.0.1:{port}"
    process = start_server(root, tiny_model_dir, port, log)
    acknowledged: list[list[str]] = []
    sent: list[list[str]] = []
    try:
        wait_for(lambda: httpx.get(f"{base}/health", timeout=5).status_code == 200, process, log, 180, "/health")
        assert httpx.put(f"{base}/collections/k", json={}, timeout=30).status_code == 201

        def writer() -> None:
            for batch in range(1000):
                ids = [f"b{batch}-{i}" for i in range(8)]
                sent.append(ids)
                docs = [{"id": i, "text": f"document {i} about bread, ovens and gardens " * 20} for i in ids]
                try:
                    answer = httpx.post(f"{base}/collections/k/documents", json={"documents": docs}, timeout=60)
                except httpx.TransportError:
                    return
                assert answer.status_code == 200, answer.text
                acknowledged.append(ids)

        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        wait_for(lambda: len(acknowledged) >= 3, process, log, 120, "three acknowledged writes")
        time.sleep(0.15)  # into the next write
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        thread.join(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    process = start_server(root, tiny_model_dir, port, log)
    try:
        wait_for(lambda: httpx.get(f"{base}/health", timeout=5).status_code == 200, process, log, 180, "restart")
        for ids in sent:
            present = [httpx.get(f"{base}/collections/k/documents/{i}", timeout=30).status_code == 200 for i in ids]
            if ids in acknowledged:
                assert all(present), f"an acknowledged write was lost: {ids}"
            else:
                assert all(present) or not any(present), f"half a batch is there: {ids} {present}"
        stats = httpx.get(f"{base}/collections/k/stats", timeout=30).json()
        assert stats["documents"] % 8 == 0 and stats["documents"] >= 8 * len(acknowledged)
    finally:
        stop(process)
