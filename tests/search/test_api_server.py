"""End to end: `python -m search.api` as a real uvicorn process on a free port, started before its
index exists, then queried over HTTP once a build has committed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest

from data.paths import PROJECT_ROOT
from tests.search.helpers import CODE_QUERY
from tests.search.test_api import build, write_corpus


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(check, process: subprocess.Popen, log: Path, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}) before {what}: {log.read_text()}")
        try:
            value = check()
        except httpx.TransportError:
            value = None
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


@dataclass
class Server:
    base: str
    index_dir: Path
    process: subprocess.Popen
    log: Path


@pytest.fixture()
def server(tmp_path):
    """The service over a folder with no index yet."""
    index_dir = tmp_path / "idx"
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    log_path = tmp_path / "server.log"
    log = log_path.open("w")  # a file, not a pipe nobody reads, which could fill and stall the server
    process = subprocess.Popen(
        [sys.executable, "-m", "search.api", "--index", str(index_dir), "--port", str(port),
         "--rerank-model", "none", "--poll-seconds", "0.2", "--log-level", "warning"],
        cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: httpx.get(f"{base}/health", timeout=5).status_code == 200, process, log_path, 180, "/health")
        yield Server(base, index_dir, process, log_path)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_real_server_answers_503_then_searches_after_a_build(server, tmp_path: Path, tiny_model):
    with httpx.Client(base_url=server.base, timeout=30) as client:
        assert client.get("/health").json()["index"] == "missing"
        response = client.get("/search", params={"q": "bread"})
        assert response.status_code == 503 and response.json()["error"] == "no_index"
        assert "Traceback" not in response.text

        build(write_corpus(tmp_path / "corpus"), server.index_dir, tiny_model)
        wait_for(lambda: client.get("/health").json()["index"] == "ready", server.process, server.log, 60, "the index")

        response = client.post("/search", json={"q": CODE_QUERY, "k": 2, "mode": "bm25"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["hits"][0]["doc_id"] == "minutes.txt" and body["mode"] == "bm25"
        assert client.get("/search", params={"q": "bread", "k": 3}).json()["mode"] == "hybrid"
        assert client.get("/stats").json()["documents"] == 5
        matrix = client.post("/similarity", json={"a": ["a cat", "a dog"], "b": ["a cat"]}).json()["matrix"]
        assert matrix[0][0] == pytest.approx(1.0, abs=1e-5) and len(matrix) == 2
        bad = client.post("/search", json={"q": "x", "k": 0})
        assert bad.status_code == 422 and "body.k" in bad.json()["detail"]
        assert client.get("/docs").status_code == 200

