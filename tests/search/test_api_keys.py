"""search/api_keys.py and its use by the HTTP API: the keys file, 401/403 in the JSON error shape,
the scopes, the refusal to serve other machines without keys, and no key in /stats or the logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient

from data.paths import PROJECT_ROOT
from search.api import ApiConfig, create_app, main
from search.api_keys import KEYS_ENV, ApiKeys, ApiKeysError, is_loopback, keys_file
from tests.search.test_api_server import free_port, wait_for

READ_KEY = "r3ad-" + "a" * 27
WRITE_KEY = "wr1te-" + "b" * 26


def keys_text() -> str:
    return f"# team keys\nread {READ_KEY}\n\nwrite {WRITE_KEY}\n"


def test_a_keys_file_gives_each_key_its_scope_and_a_write_key_also_reads(tmp_path):
    path = tmp_path / "keys"
    path.write_text(keys_text())
    keys = ApiKeys.load(path)
    assert keys.scope_of(READ_KEY) == "read" and keys.scope_of(WRITE_KEY) == "write"
    assert keys.scope_of(READ_KEY[:-1]) is None and keys.scope_of("") is None and keys.scope_of(READ_KEY + "x") is None
    assert ApiKeys.allows("write", "read") and ApiKeys.allows("read", "read") and not ApiKeys.allows("read", "write")
    assert READ_KEY not in repr(keys)  # only digests are kept


@pytest.mark.parametrize(("text", "phrases"), [
    ("admin " + "k" * 20, ("keys:1", "'read KEY' or 'write KEY'")),
    ("read short", ("keys:1", "fewer than 16", "secrets.token_urlsafe")),
    (f"read {READ_KEY}\nwrite {READ_KEY}", ("keys:2", "same key as line 1")),
    ("# nothing\n\n", ("holds no key",)),
    (f"read {READ_KEY} extra", ("keys:1", "3 word(s)")),
])
def test_a_bad_keys_file_names_its_line_and_the_fix(tmp_path, text, phrases):
    path = tmp_path / "keys"
    path.write_text(text)
    with pytest.raises(ApiKeysError) as caught:
        ApiKeys.load(path)
    assert all(p in str(caught.value) for p in phrases), str(caught.value)
    with pytest.raises(ApiKeysError, match="does not exist"):
        ApiKeys.load(tmp_path / "missing")


def test_the_keys_file_comes_from_the_flag_else_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(KEYS_ENV, raising=False)
    assert keys_file(None) is None and keys_file("k.txt") == Path("k.txt")
    monkeypatch.setenv(KEYS_ENV, str(tmp_path / "env-keys"))
    assert keys_file(None) == tmp_path / "env-keys" and keys_file("k.txt") == Path("k.txt")
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3") and not is_loopback("example.org")


@pytest.fixture(scope="module")
def keyed(served_index, tiny_model_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "keys"
    path.write_text(keys_text())
    config = ApiConfig(index_dir=served_index, rerank_model="none", similarity_model=str(tiny_model_dir),
                       api_keys=str(path))
    with TestClient(create_app(config)) as client:
        yield client


def test_reads_need_a_key_and_answer_401_or_403_as_json(keyed):
    body = {"q": "bread oven", "k": 2}
    missing = keyed.post("/search", json=body)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert missing.json()["error"] == "unauthorized" and "Authorization: Bearer KEY" in missing.json()["detail"]
    wrong = keyed.post("/search", json=body, headers={"Authorization": f"Bearer {READ_KEY[:-1]}x"})
    assert wrong.status_code == 401 and "invalid_token" in wrong.headers["www-authenticate"]
    basic = keyed.post("/search", json=body, headers={"Authorization": f"Basic {READ_KEY}"})
    assert basic.status_code == 401
    for key in (READ_KEY, WRITE_KEY):
        auth = {"Authorization": f"Bearer {key}"}
        assert keyed.post("/search", json=body, headers=auth).status_code == 200
        assert keyed.get("/search", params={"q": "bread"}, headers=auth).status_code == 200
        assert keyed.get("/stats", headers=auth).status_code == 200
        assert keyed.get("/metrics", headers=auth).status_code == 200
    for path in ("/stats", "/metrics"):
        assert keyed.get(path).status_code == 401
    assert keyed.get("/health").status_code == 200  # load balancers probe without a key
    assert keyed.get("/docs").status_code == 200
    stats = keyed.get("/stats", headers={"Authorization": f"Bearer {READ_KEY}"}).text
    assert READ_KEY not in stats and WRITE_KEY not in stats and "keys" not in stats


def test_the_schema_declares_the_bearer_key_only_where_keys_are_set(keyed, client):
    keyed_schema, open_schema = keyed.get("/openapi.json").json(), client.get("/openapi.json").json()
    assert "HTTPBearer" in keyed_schema["components"]["securitySchemes"]
    assert keyed_schema["paths"]["/search"]["post"]["security"] == [{"HTTPBearer": []}]
    assert "401" in keyed_schema["paths"]["/search"]["post"]["responses"]
    assert "securitySchemes" not in open_schema.get("components", {})
    assert "401" not in open_schema["paths"]["/search"]["post"]["responses"]


def test_a_write_scope_refuses_a_read_key_with_403():
    from fastapi import FastAPI

    from search.api import guard
    from search.api_errors import install_error_handlers

    app = FastAPI()
    install_error_handlers(app)
    keys = ApiKeys.from_lines([f"read {READ_KEY}", f"write {WRITE_KEY}"])

    @app.post("/change", dependencies=guard(keys, "write"))
    def change() -> dict:
        return {"ok": True}

    with TestClient(app) as test_client:
        refused = test_client.post("/change", headers={"Authorization": f"Bearer {READ_KEY}"})
        assert refused.status_code == 403 and refused.json() == {
            "error": "forbidden", "detail": "This key may read only, and this request needs a write key."}
        assert test_client.post("/change", headers={"Authorization": f"Bearer {WRITE_KEY}"}).json() == {"ok": True}


def test_another_machines_address_without_keys_is_refused_at_start(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(KEYS_ENV, raising=False)
    assert main(["--index", str(tmp_path / "idx"), "--host", "0.0.0.0"]) == 2
    err = capsys.readouterr().err
    assert "--api-keys FILE" in err and "--insecure-no-auth" in err
    bad = tmp_path / "keys"
    bad.write_text("read short\n")
    assert main(["--index", str(tmp_path / "idx"), "--host", "0.0.0.0", "--api-keys", str(bad)]) == 2
    assert "keys:1" in capsys.readouterr().err


def test_a_real_server_with_two_workers_checks_keys_sums_metrics_and_logs_no_key(served_index, tmp_path):
    keys = tmp_path / "keys"
    keys.write_text(keys_text())
    port = free_port()
    log_path = tmp_path / "server.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "search.api", "--index", str(served_index), "--port", str(port), "--workers", "2",
             "--rerank-model", "none", "--api-keys", str(keys), "--log-level", "info"],
            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        base, auth = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {READ_KEY}"}
        try:
            wait_for(lambda: httpx.get(f"{base}/health", timeout=5).json().get("index") == "ready", process,
                     log_path, 180, "a ready index")
            assert httpx.post(f"{base}/search", json={"q": "bread"}, timeout=30).status_code == 401
            answered, deadline = 0, time.monotonic() + 180
            while answered < 6:  # new connections, so both workers answer; one may still be loading (503)
                status = httpx.post(f"{base}/search", json={"q": "bread", "k": 2}, headers=auth, timeout=30).status_code
                assert status in (200, 503) and time.monotonic() < deadline, status
                answered += status == 200
                time.sleep(0.0 if status == 200 else 0.5)
            metrics = httpx.get(f"{base}/metrics", headers=auth, timeout=30).text
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    searches = [line for line in metrics.splitlines()
                if line.startswith('semsearch_http_requests_total{') and 'route="/search"' in line]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in searches if 'status="200"' in line) == 6, searches
    assert any('status="401"' in line for line in searches)
    assert 'semsearch_search_stage_seconds_count{stage="encode"} 6.0' in metrics
    logged = log_path.read_text()
    assert "POST /search" in logged  # the access log is on, and holds no key
    assert READ_KEY not in logged and WRITE_KEY not in logged
