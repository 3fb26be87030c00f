"""End to end: `python -m search.api` as a real uvicorn process on a free port, started before its
index exists, then queried over HTTP once a build has committed."""

from __future__ import annotations

import json
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


def stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """Ctrl-C the server (it drains its requests); killed when it has not ended after `timeout` s."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


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
        stop(process)
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



def raw_request(base: str, head: bytes) -> tuple[int, str, bytes]:
    """Send `head` (request line and headers, as bytes) over a socket; (status, content type, body)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    headers, _, body = rest.partition(b"\r\n\r\n")
    kind = next((line.split(b":", 1)[1].strip().decode() for line in headers.split(b"\r\n")
                 if line.lower().startswith(b"content-type:")), "")
    return int(status_line.split()[1]), kind, body


def test_the_real_server_refuses_a_long_url_and_long_headers_in_json(server):
    """Up to MAX_HTTP_HEAD_BYTES the app sees the request and answers in its JSON shape; what
    uvicorn refuses by itself (a Content-Length that is not a number) stays its plain-text 400,
    as the README says."""
    status, kind, body = raw_request(server.base, b"GET /search?q=" + b"x" * 1_000_000 + b" HTTP/1.1\r\nHost: x\r\n"
                                     b"Connection: close\r\n\r\n")
    assert (status, kind) == (414, "application/json") and json.loads(body)["error"] == "uri_too_long"
    status, kind, body = raw_request(server.base, b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 1_000_000
                                     + b"\r\nConnection: close\r\n\r\n")
    assert (status, kind) == (431, "application/json") and json.loads(body)["error"] == "headers_too_large"
    status, kind, _ = raw_request(server.base, b"POST /search HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n"
                                  b"Connection: close\r\n\r\n")
    assert status == 400 and kind.startswith("text/plain")
