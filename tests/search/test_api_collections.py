"""Collections (search/api_collections.py): `--root DIR` serves every index under DIR by name;
PUT creates, DELETE removes, each collection searches with its own model, loaded once per model."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from search.api import ApiConfig, create_app
from search.api_collections import SETTINGS_FILE
from tests.search.test_api import build, write_corpus
from tests.search.test_api_metrics import samples, value

WRITE_KEY = "write-" + "w" * 24
READ_KEY = "read-" + "r" * 24
DOCS = [{"id": "oven", "title": "Bread", "text": "Bake the bread in a hot oven for forty minutes."},
        {"id": "roses", "title": "Garden", "text": "Prune the roses in early spring, above an outward bud."}]


@pytest.fixture(scope="module")
def root(tmp_path_factory, tiny_model_dir) -> Path:
    """A root holding one index built by `python -m indexer build`'s function, named 'docs'."""
    folder = tmp_path_factory.mktemp("root")
    build(write_corpus(folder.parent / f"{folder.name}-corpus"), folder / "docs", str(tiny_model_dir))
    return folder


@pytest.fixture(scope="module")
def service(root, tiny_model_dir):
    config = ApiConfig(root=root, rerank_model="none", default_model=str(tiny_model_dir),
                       similarity_model=str(tiny_model_dir))
    with TestClient(create_app(config)) as test_client:
        yield test_client


def test_the_root_s_index_folders_are_listed_with_their_figures(service):
    listed = {c["name"]: c for c in service.get("/collections").json()["collections"]}
    assert listed["docs"]["state"] == "ready" and listed["docs"]["stats"]["documents"] == 5
    hits = service.post("/collections/docs/search", json={"q": "bread oven", "k": 2})
    assert hits.status_code == 200 and hits.json()["hits"]
    assert service.get("/collections/docs/stats").json()["documents"] == 5
    batch = service.post("/collections/docs/search/batch", json={"queries": ["bread", "roses"], "k": 1})
    assert [len(r["hits"]) for r in batch.json()["results"]] == [1, 1]
    similarity = service.post("/collections/docs/similarity", json={"a": "bread", "b": "oven"})
    assert similarity.status_code == 200 and -1.0 <= similarity.json()["score"] <= 1.0


def test_a_collection_is_created_written_searched_and_deleted(service, root):
    made = service.put("/collections/notes", json={})
    assert made.status_code == 201 and made.json()["state"] == "empty" and made.json()["stats"] is None
    assert (root / "notes" / SETTINGS_FILE).is_file()
    assert service.put("/collections/notes", json={}).status_code == 200  # the same settings: nothing new
    other = service.put("/collections/notes", json={"index_type": "hnsw"})
    assert other.status_code == 409 and "DELETE it first" in other.json()["detail"]
    before = service.post("/collections/notes/search", json={"q": "bread"})
    assert before.status_code == 503 and before.json()["error"] == "no_index"
    written = service.post("/collections/notes/documents", json={"documents": DOCS})
    assert written.status_code == 200 and written.json()["added"] == 2, written.json()
    hits = service.post("/collections/notes/search", json={"q": "roses spring", "k": 2, "mode": "bm25"}).json()
    assert hits["hits"][0]["doc_id"] == "roses" and hits["build_id"] == written.json()["build_id"]
    listed = {c["name"]: c for c in service.get("/collections").json()["collections"]}
    assert listed["notes"]["state"] == "ready" and listed["notes"]["stats"]["documents"] == 2
    assert service.delete("/collections/notes").status_code == 204
    assert not (root / "notes").exists()
    assert "notes" not in {c["name"] for c in service.get("/collections").json()["collections"]}
    gone = service.post("/collections/notes/search", json={"q": "bread"})
    assert gone.status_code == 404 and gone.json()["error"] == "no_collection"


def test_collections_of_one_model_share_one_loaded_copy(service):
    for name in ("one", "two"):
        assert service.put(f"/collections/{name}", json={}).status_code == 201
        assert service.post(f"/collections/{name}/documents", json={"documents": DOCS}).status_code == 200
    collections = service.app.state.collections
    models = {id(collections.get(name).service.opened.model) for name in ("docs", "one", "two")}
    assert len(models) == 1 and collections.models.loaded == 1
    for name in ("one", "two"):
        assert service.delete(f"/collections/{name}").status_code == 204


@pytest.mark.parametrize("name", ["bad.name", "-dash", "a" * 65, "_hidden", "%2E%2E"])
def test_a_name_that_is_no_plain_folder_name_is_refused_with_the_rule(service, root, name):
    answer = service.put(f"/collections/{name}", json={})
    assert answer.status_code == 422 and "path.name: a collection name is 1 to 64 letters" in answer.json()["detail"]
    assert not (root / name).exists()


def test_the_registry_checks_names_too(service):
    from search.api_collections import CollectionSettings
    from search.api_errors import ApiError

    with pytest.raises(ApiError, match="cannot name a collection: a collection name is 1 to 64"):
        service.app.state.collections.create("../escape", CollectionSettings())


def test_a_path_cannot_name_a_collection(service, root):
    for path in ("/collections/..%2Fescape", "/collections/%2E%2E", "/collections/../escape"):
        assert service.put(path, json={}).status_code in (404, 422)
    assert not (root.parent / "escape").exists()


def test_bad_settings_are_refused_with_the_fix(service):
    missing = service.put("/collections/x1", json={"model": "/no/such/model"})
    assert missing.status_code == 400 and "Model folder" in missing.json()["detail"]
    assert service.put("/collections/x2", json={"index_type": "btree"}).status_code == 422
    assert service.put("/collections/x3", json={"colour": "red"}).status_code == 422


def test_an_unknown_collection_is_a_404_that_says_how_to_list_them(service):
    for answer in (service.post("/collections/nothing/search", json={"q": "x"}),
                   service.get("/collections/nothing/stats"), service.delete("/collections/nothing")):
        assert answer.status_code == 404 and "GET /collections" in answer.json()["detail"]


def test_the_one_index_paths_ask_for_a_collection_under_a_root(service):
    answer = service.post("/search", json={"q": "bread"})
    assert answer.status_code == 404 and answer.json()["error"] == "collection_required"
    assert service.get("/health").json()["index"] == "ready"


def test_every_collection_has_its_gauges(service):
    assert service.put("/collections/gauged", json={}).status_code == 201
    found = samples(service)
    assert value(found, "semsearch_collection_documents", collection="docs") == 5
    assert value(found, "semsearch_index_state", collection="gauged", state="missing") == 1.0
    service.post("/collections/gauged/documents", json={"documents": DOCS})
    service.post("/collections/gauged/documents", json={"documents": DOCS})
    found = samples(service)
    assert value(found, "semsearch_collection_documents", collection="gauged") == 2
    assert value(found, "semsearch_writes_total", collection="gauged", op="added") == 2
    assert value(found, "semsearch_writes_total", collection="gauged", op="unchanged") == 2
    assert service.delete("/collections/gauged").status_code == 204


def test_with_index_the_one_collection_cannot_be_created_or_deleted(client, served_index):
    assert [c["name"] for c in client.get("/collections").json()["collections"]] == [served_index.name]
    for answer in (client.put("/collections/other", json={}), client.delete(f"/collections/{served_index.name}")):
        assert answer.status_code == 409 and "--root DIR" in answer.json()["detail"]
    assert client.post(f"/collections/{served_index.name}/search", json={"q": "bread"}).status_code == 200


@pytest.fixture(scope="module")
def keyed(root, tiny_model_dir, tmp_path_factory):
    keys = tmp_path_factory.mktemp("keys") / "keys"
    keys.write_text(f"write {WRITE_KEY}\nread {READ_KEY}\n")
    config = ApiConfig(root=root, rerank_model="none", default_model=str(tiny_model_dir), api_keys=str(keys))
    with TestClient(create_app(config)) as test_client:
        yield test_client


def test_creating_and_deleting_need_a_write_key_and_listing_a_read_key(keyed):
    write, read = ({"Authorization": f"Bearer {key}"} for key in (WRITE_KEY, READ_KEY))
    assert keyed.get("/collections").status_code == 401
    assert keyed.get("/collections", headers=read).status_code == 200
    assert keyed.put("/collections/scoped", json={}).status_code == 401
    refused = keyed.put("/collections/scoped", json={}, headers=read)
    assert refused.status_code == 403 and "needs a write key" in refused.json()["detail"]
    assert keyed.put("/collections/scoped", json={}, headers=write).status_code == 201
    assert keyed.delete("/collections/scoped", headers=read).status_code == 403
    assert keyed.post("/collections/docs/search", json={"q": "bread"}, headers=read).status_code == 200
    assert keyed.delete("/collections/scoped", headers=write).status_code == 204
