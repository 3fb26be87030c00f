"""The HTTP API on Ray Serve: `python -m search.api --index DIR --ray local|ADDRESS [--replicas R]`.

The same FastAPI app (`search.api.create_app`), with its routes, validation and errors, runs in
each of R Ray Serve replicas over one index; Ray Serve's HTTP proxy spreads the requests over
them. Each replica builds its own app from the `ApiConfig` when it starts (Ray Serve's
`serve.ingress` with a builder): the app holds threads, locks and a loaded model, which are
made where they run, never pickled. Only where the work runs changes.

What a replica needs is what one `python -m search.api` process needs, on the machine Ray puts
it on: the index folder (or a PostgreSQL `--db`), the model, the keys file. Prometheus counters
(`/metrics`) are each replica's own: a scrape sees the replica that answered it.

Shards (an index split by passage id across deployments, with a router) are not built yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"--replicas ({self.replicas}) must be at least 1.")
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
    """The deployment's class: the app built in each replica answers every request."""


def application(config: ApiConfig, ray_config: RayServeConfig, make_app: Callable[[ApiConfig], Any]) -> Any:
    """The Ray Serve application: one deployment of `ray_config.replicas` replicas, each serving
    `make_app(config)` (`search.api.create_app`, a module-level function: pickled by name)."""
    serve = _serve()

    def build() -> Any:  # runs in each replica
        return make_app(config)

    ingress = serve.ingress(build)(SemsearchApi)
    deployment = serve.deployment(name=APP_NAME, num_replicas=ray_config.replicas,
                                  max_ongoing_requests=ray_config.max_ongoing_requests,
                                  ray_actor_options={"num_cpus": ray_config.replica_cpus})(ingress)
    return deployment.bind()


def start(config: ApiConfig, ray_config: RayServeConfig, make_app: Callable[[ApiConfig], Any]) -> None:
    """Connect to (or start) Ray, start Serve's HTTP proxy on `host:port`, deploy the service, and
    return once every replica is up."""
    serve = _serve()
    import ray

    if not ray.is_initialized():
        if ray_config.address == "local":
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=ray_config.address, log_to_driver=False)
    serve.start(http_options={"host": ray_config.host, "port": ray_config.port})
    serve.run(application(config, ray_config, make_app), name=APP_NAME, route_prefix="/")
    logger.info("serving on Ray Serve at http://%s:%d/ with %d replica(s)", ray_config.host, ray_config.port,
                ray_config.replicas)


def replica_states() -> dict[str, int]:
    """How many of the service's replicas are in each state (RUNNING, STARTING, ...)."""
    status = _serve().status().applications[APP_NAME].deployments[APP_NAME]
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
                            make_app: Callable[[ApiConfig], Any]) -> int:
    """`start`, then wait for Ctrl-C and `stop` (the CLI's `--ray`)."""
    start(config, ray_config, make_app)
    print(f"serving on Ray Serve at http://{ray_config.host}:{ray_config.port}/ with {ray_config.replicas} "
          "replica(s); Ctrl-C stops it", flush=True)
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        stop(ray_config)
    return 0
