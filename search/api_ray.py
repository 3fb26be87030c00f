"""The HTTP API on Ray Serve: `python -m search.api --index DIR --ray local|ADDRESS [--replicas R]`.

The same FastAPI app (`search.api.create_app`), with its routes, validation and errors, runs in
each of R Ray Serve replicas over one index; Ray Serve's HTTP proxy spreads the requests over
them. Each replica builds its own app from the `ApiConfig` when it starts (Ray Serve's
`serve.ingress` with a builder): the app holds threads, locks and a loaded model, which are
made where they run, never pickled. Only where the work runs changes.

What a replica needs is what one `python -m search.api` process needs, on the machine Ray puts
it on: the index folder (or a PostgreSQL `--db`), the model, the keys file. Prometheus counters
(`/metrics`) are each replica's own: a scrape sees the replica that answered it.

With `--shards N` (an index built with `python -m indexer build ... --shards N`) the service is
N + 1 deployments. Shard deployment s (`shard-<s>`, R replicas) loads shard s of each build from the
index folder (`indexer.store.shards.ShardReader`: 1/N of the vectors and BM25 rows, no SQL). The
app's deployment is the router: its Searcher loads no vector or BM25 file, and asks every shard
for its top list (`sharded_files`), merges them, fuses, groups and reads passages from SQL as over
one index. A shard that does not answer within `shard_timeout_s` fails the search with a 503 that
names it, unless the request allows partial results; Ray Serve restarts a replica that died.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from indexer.store.records import IndexInfo
from indexer.store.shards import (
    SHARD_TIMEOUT_S,
    ShardReader,
    SubsetBits,
    check_shard_count,
    sharded_files,
)
from search.api_service import ApiConfig

logger = logging.getLogger(__name__)

APP_NAME = "semsearch"
# Requests Ray Serve hands one replica at once. Its default, 5, made the proxy hold the rest and
# retry with backoff: at 16 clients one replica answered 24 requests/s at p50 767 ms, against 116
# at 137 ms for a plain process (BENCHMARKS.md, bench_distributed_search, first run). The app
# queues its own searches (`search_threads` at a time) without holding a thread, as under uvicorn.
MAX_ONGOING_REQUESTS = 256


@dataclass(frozen=True)
class RayServeConfig:
    """Where and how wide the service runs: `address` "local" starts a Ray on this machine (and
    stops it on exit), else it is a running cluster's address (`ray://host:10001`, or "auto");
    `replicas` copies of the service, each reserving `replica_cpus` of a node's CPUs (a replica
    searches with torch, which uses every core it is given)."""

    address: str = "local"
    replicas: int = 1
    replica_cpus: float = 1.0
    max_ongoing_requests: int = MAX_ONGOING_REQUESTS
    host: str = "127.0.0.1"
    port: int = 8000
    # 0: one index in every replica. N: the index's N shards, each a deployment of `replicas`
    # replicas reserving `shard_cpus` CPUs, behind the router (`replicas` replicas too).
    shards: int = 0
    shard_cpus: float = 1.0
    shard_timeout_s: float = SHARD_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"--replicas ({self.replicas}) must be at least 1.")
        if self.shards:
            check_shard_count(self.shards)
        if self.shard_cpus < 0:
            raise ValueError(f"--shard-cpus ({self.shard_cpus}) must not be negative.")
        if not self.shard_timeout_s > 0:
            raise ValueError(f"--shard-timeout ({self.shard_timeout_s}) must be a positive number of seconds.")
        if self.replica_cpus < 0:
            raise ValueError(f"--replica-cpus ({self.replica_cpus}) must not be negative.")


def _serve() -> Any:
    """Ray Serve, or an ImportError that says how to install it."""
    try:
        from ray import serve
    except ImportError as err:
        raise ImportError("--ray needs Ray Serve, which `make run` does not install: pip install -r "
                          "requirements-dev.txt (it pins ray[data,serve]), or make install-dev.") from err
    return serve


class SemsearchApi:
    """The deployment's class: the app built in each replica answers every request. Behind a
    sharded service it is the router, and gets the shard deployments (bound, so Ray Serve deploys
    them with it); its app reaches them by name (`shard_clients`)."""

    def __init__(self, *shards: Any) -> None:
        self.shards = shards


class ShardDeployment:
    """One shard of the index, in each of its replicas: `ShardReader`'s searches, called by the router."""

    def __init__(self, index_dir: str, shard: int) -> None:
        self.reader = ShardReader(index_dir, shard)

    def dense(self, info: IndexInfo, queries: Any, k: int, within: SubsetBits | None) -> Any:
        return self.reader.dense(info, queries, k, within)

    def bm25(self, info: IndexInfo, query: str, n: int, within: SubsetBits | None) -> Any:
        return self.reader.bm25(info, query, n, within)

    def passages(self, info: IndexInfo) -> int:
        return self.reader.passages(info)


def shard_name(shard: int) -> str:
    return f"shard-{shard}"


class RayShard:
    """A `ShardClient` over a shard deployment's handle: each call returns Ray Serve's response,
    whose `result(timeout_s=...)` the router waits on (all shards are asked before it waits)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def dense(self, info: IndexInfo, queries: Any, k: int, within: SubsetBits | None) -> Any:
        return self.handle.dense.remote(info, queries, k, within)

    def bm25(self, info: IndexInfo, query: str, n: int, within: SubsetBits | None) -> Any:
        return self.handle.bm25.remote(info, query, n, within)


def shard_clients(count: int) -> list[RayShard]:
    """The router's clients of the application's shard deployments, found by name."""
    serve = _serve()
    return [RayShard(serve.get_deployment_handle(shard_name(s), app_name=APP_NAME)) for s in range(count)]


def application(config: ApiConfig, ray_config: RayServeConfig, make_app: Callable[..., Any]) -> Any:
    """The Ray Serve application: one deployment of `ray_config.replicas` replicas, each serving
    `make_app(config)` (`search.api.create_app`, a module-level function: pickled by name); with
    `shards`, the app's replicas are routers over that many shard deployments."""
    serve = _serve()
    count, timeout_s = ray_config.shards, ray_config.shard_timeout_s

    def build() -> Any:  # runs in each replica
        if not count:
            return make_app(config)
        return make_app(config, files=sharded_files(shard_clients(count), timeout_s))

    ingress = serve.ingress(build)(SemsearchApi)
    deployment = serve.deployment(name=APP_NAME, num_replicas=ray_config.replicas,
                                  max_ongoing_requests=ray_config.max_ongoing_requests,
                                  ray_actor_options={"num_cpus": ray_config.replica_cpus})(ingress)
    if config.index_dir is None and count:
        raise ValueError("--shards serves one index: give --index DIR, not --root.")
    shards = [serve.deployment(name=shard_name(s), num_replicas=ray_config.replicas,
                               max_ongoing_requests=ray_config.max_ongoing_requests,
                               ray_actor_options={"num_cpus": ray_config.shard_cpus})(ShardDeployment)
              .bind(str(config.index_dir), s) for s in range(count)]
    return deployment.bind(*shards)


def start(config: ApiConfig, ray_config: RayServeConfig, make_app: Callable[..., Any]) -> None:
    """Connect to (or start) Ray, start Serve's HTTP proxy on `host:port`, deploy the service, and
    return once every replica is up."""
    serve = _serve()
    import ray

    if not ray.is_initialized():
        # Ray's own "local" starts a new instance even where RAY_ADDRESS names another.
        ray.init(address=ray_config.address, log_to_driver=False,
                 include_dashboard=False if ray_config.address == "local" else None)
    serve.start(http_options={"host": ray_config.host, "port": ray_config.port})
    serve.run(application(config, ray_config, make_app), name=APP_NAME, route_prefix="/")
    logger.info("serving on Ray Serve at http://%s:%d/ with %d replica(s)%s", ray_config.host, ray_config.port,
                ray_config.replicas, f" over {ray_config.shards} shards" if ray_config.shards else "")


def replica_states(deployment: str = APP_NAME) -> dict[str, int]:
    """How many of a deployment's replicas are in each state (RUNNING, STARTING, ...): the app's
    (the router, when sharded), or a shard's (`shard_name(s)`)."""
    status = _serve().status().applications[APP_NAME].deployments[deployment]
    return {str(state): int(count) for state, count in status.replica_states.items()}


def stop(ray_config: RayServeConfig) -> None:
    """Take the service down, and the Ray this process started."""
    import ray

    serve = _serve()
    serve.delete(APP_NAME)
    if ray_config.address == "local":
        serve.shutdown()
        ray.shutdown()


def serve_until_interrupted(config: ApiConfig, ray_config: RayServeConfig,
                            make_app: Callable[..., Any]) -> int:
    """`start`, then wait for Ctrl-C and `stop` (the CLI's `--ray`)."""
    start(config, ray_config, make_app)
    shards = f" over {ray_config.shards} shards" if ray_config.shards else ""
    print(f"serving on Ray Serve at http://{ray_config.host}:{ray_config.port}/ with {ray_config.replicas} "
          f"replica(s){shards}; Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stop(ray_config)
    return 0
