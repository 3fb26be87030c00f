"""The HTTP API against its own OpenAPI schema: Schemathesis (on PyPI) generates requests from
/openapi.json, ones the schema allows and ones it forbids, for every operation, and checks every
answer with all its checks: declared status codes and content types, bodies that match their
schemas, no server error, forbidden requests refused. A fixed seed and a bounded number of
examples keep it repeatable and within a minute."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from search.api import ApiConfig, create_app
from tests.search.test_api import build, write_corpus

EXAMPLES = 40


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory, tiny_model_dir, tiny_cross_encoder):
    """A server with a reranker, so that `rerank: true` is a request it can answer (one without
    answers it 400 no_reranker, a setting of the server rather than a wrong request)."""
    root = tmp_path_factory.mktemp("contract")
    index_dir = root / "idx"
    build(write_corpus(root / "corpus"), index_dir, str(tiny_model_dir))
    app = create_app(ApiConfig(index_dir=index_dir, rerank_model=tiny_cross_encoder,
                               similarity_model=str(tiny_model_dir)))
    assert app.state.service.try_open() is not None  # what the app's startup does
    return with_size_refusals(schemathesis.openapi.from_asgi("/openapi.json", app))


def with_size_refusals(schema):
    """The API refuses a request too large to read (413 body, 414 URL, 431 headers: declared in its
    schema) before parsing it; for generated invalid data that is a rejection as much as a 422, so
    the negative-data check accepts it (a long invalid query string once drew a 414)."""
    rejection = schema.config.checks.negative_data_rejection
    rejection.expected_statuses = [*rejection.expected_statuses, "413", "414", "431"]
    return schema


# The collection and document operations (search/api_collections.py, search/api_documents.py).
COLLECTIONS = ["PUT /collections/{name}", "DELETE /collections/{name}", "GET /collections/{name}/stats",
               "POST /collections/{name}/search", "POST /collections/{name}/search/batch",
               "POST /collections/{name}/similarity", "POST /collections/{name}/documents",
               "POST /collections/{name}/documents/delete", "GET /collections/{name}/documents/{doc_id}",
               "DELETE /collections/{name}/documents/{doc_id}"]
OPERATIONS = ["GET /health", "GET /stats", "GET /search", "POST /search", "POST /search/batch", "POST /similarity",
              "GET /metrics", "GET /collections", *COLLECTIONS]
# Operations with inputs, so that a request the schema forbids can be made.
WITH_INPUTS = ["GET /search", "POST /search", "POST /search/batch", "POST /similarity", *COLLECTIONS]


def test_the_schema_lists_the_operations_tested_here(api_schema):
    assert sorted(op.ok().label for op in api_schema.get_all_operations()) == sorted(OPERATIONS)


@pytest.mark.parametrize(("label", "mode"), [(label, GenerationMode.POSITIVE) for label in OPERATIONS]
                         + [(label, GenerationMode.NEGATIVE) for label in WITH_INPUTS])
def test_every_operation_keeps_its_contract(api_schema, label, mode):
    operation = next(op.ok() for op in api_schema.get_all_operations() if op.ok().label == label)

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def keeps_contract(case):
        case.call_and_validate()

    keeps_contract()


KEY = "contract-" + "k" * 24


@pytest.fixture(scope="module")
def keyed_schema(tmp_path_factory, tiny_model_dir, served_index, tiny_cross_encoder):
    """The same API with API keys (search/api_keys.py): its schema declares the bearer key and 401/403.
    With a reranker, as above: `rerank: true` is then a request the server can answer."""
    keys = tmp_path_factory.mktemp("contract-keys") / "keys"
    keys.write_text(f"read {KEY}\n")
    app = create_app(ApiConfig(index_dir=served_index, rerank_model=tiny_cross_encoder,
                               similarity_model=str(tiny_model_dir),
                               api_keys=str(keys)))
    assert app.state.service.try_open() is not None
    return schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.mark.parametrize("key", [KEY, None, "not-a-key-" + "x" * 20])
def test_with_api_keys_every_answer_keeps_the_contract(keyed_schema, key):
    """With a read key, without one, and with a wrong one: 200s and 401s alike match the schema."""
    operation = next(op.ok() for op in keyed_schema.get_all_operations() if op.ok().label == "POST /search")
    headers = {"Authorization": f"Bearer {key}"} if key else {}

    @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
    @settings(max_examples=10, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def keeps_contract(case):
        response = case.call_and_validate(headers=headers)
        assert (response.status_code == 401) == (key != KEY), response.status_code

    keeps_contract()
