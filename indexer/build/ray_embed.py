"""Embedding a build's passages with Ray Data, on a local Ray or a running cluster.

A build commits in chunks (`build._build_in_chunks`), each chunk embedding its passages
with `embed(model, texts, batch_size, show_progress, progress)`. With `--ray`, that call
is a `RayStream` instead: one Ray Data pipeline over every passage of the build's plan,
started on the first call, which `map_batches` over an actor pool (each actor loads
the bi-encoder once, one GPU per actor where the cluster has GPUs, and encodes with
`encode_texts`, the function the single-process build uses). Each chunk's call takes
the next vectors from that stream, so the vectors reach the same commit path in
bounded blocks and no actor pool is started twice; Ray's back-pressure bounds how far
the pipeline runs ahead of the commits.

Reading, chunking, SQL, BM25 and the atomic commits stay in the driver, unchanged. On a
cluster every node needs this project installed and the model folder at the same path
(a shared filesystem); each actor checks that its model files hash to the driver's.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from indexer.embedding import embedding_dimension, encode_texts, load_bi_encoder
from indexer.encoding import FP32
from indexer.errors import IndexerError
from indexer.model_spec import ModelSpec

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int], None]

# Passages per Ray block and per actor call: the granularity of streaming, retries and
# back-pressure. Vectors come back to the driver one block at a time.
BLOCK_PASSAGES = 256
# A worker that dies (a lost node, an out-of-memory kill) is restarted and its block
# retried this many times; a worker that keeps dying fails the build, which then commits
# nothing. Ray Data's default is to retry forever, which would hang the build instead.
MAX_RETRIES = 2


class RayEmbeddingError(IndexerError):
    """Ray could not embed the passages (workers kept dying, a cluster went away); nothing of
    the chunk being embedded was committed."""


class PassageEncoder:
    """The Ray actor: loads the bi-encoder once, then encodes one block of passages per call."""

    def __init__(self, model_path: str, fingerprint: str, batch_size: int, device: str | None,
                 encoding: str = FP32) -> None:
        spec = ModelSpec.resolve(model_path)
        if spec.fingerprint() != fingerprint:
            raise RuntimeError(
                f"The model files at {model_path} on this Ray worker (fingerprint {spec.fingerprint()[:12]}) "
                f"differ from the driver's ({fingerprint[:12]}). Put the model folder on a filesystem every "
                "node shares, at the same path."
            )
        self.model = load_bi_encoder(spec, device=device, encoding=encoding)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = encode_texts(self.model, list(batch["text"]), batch_size=self.batch_size)  # (B, dim)
        return {"position": batch["position"], "vector": vectors}


@dataclass(frozen=True)
class ActorPool:
    """How many encoder actors to run, and what each one reserves."""

    size: int
    num_cpus: float
    num_gpus: float

    @classmethod
    def for_cluster(cls, resources: dict[str, float]) -> ActorPool:
        """One actor per GPU when the cluster has GPUs, else one single-threaded actor per CPU."""
        gpus = int(resources.get("GPU", 0))
        if gpus:
            return cls(size=gpus, num_cpus=1, num_gpus=1)
        return cls(size=max(1, int(resources.get("CPU", 1))), num_cpus=1, num_gpus=0)


def connect(address: str) -> bool:
    """Start a local Ray ("local") or join the cluster at `address`; True when this call started Ray."""
    try:
        import ray
    except ImportError as err:
        raise ImportError("--ray needs the ray package, which `make run` does not install: "
                          "pip install -r requirements-dev.txt (it pins ray[data,serve]), or make install-dev.") from err
    if ray.is_initialized():
        return False
    # Ray's own "local" starts a new instance even where RAY_ADDRESS or `ray start` names another
    # (a bare ray.init() would join that one).
    ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False,
             include_dashboard=False if address == "local" else None)
    return True


class RayStream:
    """The vectors of a fixed, ordered list of passages, embedded on Ray, handed out in consecutive slices.

    Called like `build.embed`; each call must ask for the next passages of the list (the
    build's chunks are consecutive slices of its plan). A call for anything else raises,
    rather than pair vectors with the wrong passages.
    """

    def __init__(self, address: str, spec: ModelSpec, texts: list[str], encoding: str = FP32,
                 encoder: type | None = None) -> None:
        self.address, self.spec, self.texts, self.encoding = address, spec, texts, encoding
        self.encoder = encoder or PassageEncoder
        self._next = 0  # passages handed out so far
        self._blocks: Iterator[np.ndarray] | None = None
        self._leftover: np.ndarray | None = None  # rows of the last block beyond the last call

    def __call__(self, model, texts: list[str], batch_size: int, show_progress: bool,
                 progress: ProgressCallback | None) -> np.ndarray:
        if texts != self.texts[self._next : self._next + len(texts)]:
            raise RuntimeError(
                f"The build asked Ray for passages other than the next {len(texts)} of its plan (passage "
                f"{self._next} on); another build may have written the index between commits. The "
                "commits so far are kept: run the same command again to resume."
            )
        parts: list[np.ndarray] = []
        have = 0
        while have < len(texts):
            if self._leftover is not None:
                block, self._leftover = self._leftover, None
            else:
                if self._blocks is None:
                    self._blocks = self._embed_all(batch_size)
                block = next(self._blocks, None)
                if block is None:
                    raise RuntimeError(f"Ray returned {self._next + have} vectors for {len(self.texts)} passages.")
            wanted = len(texts) - have
            if len(block) > wanted:
                block, self._leftover = block[:wanted], block[wanted:]
            parts.append(block)
            have += len(block)
            if progress is not None:
                progress(have, len(texts))
        self._next += len(texts)
        if self._next == len(self.texts):
            self.close()
        if not parts:
            return np.empty((0, embedding_dimension(model)), dtype=np.float32)
        return np.concatenate(parts)

    def close(self) -> None:
        """Stop the pipeline (and a Ray this stream started); safe to call twice."""
        if self._blocks is not None:
            self._blocks.close()
            self._blocks = None

    def __del__(self) -> None:  # an abandoned build (Ctrl-C, an error) must not leave Ray running
        self.close()

    def _embed_all(self, batch_size: int) -> Iterator[np.ndarray]:
        """Vector blocks for `self.texts`, in order, as Ray finishes them."""
        import pyarrow as pa
        import ray

        started_ray = connect(self.address)
        context = ray.data.DataContext.get_current()
        saved = (context.execution_options.preserve_order, context.enable_progress_bars)
        # Blocks must come back in passage order: the commits pair them with passage ids.
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        try:
            pool = ActorPool.for_cluster(ray.cluster_resources())
            logger.info("embedding %d passages on Ray (%s): %d actor(s), %s each", len(self.texts), self.address,
                        pool.size, f"{pool.num_gpus:g} GPU" if pool.num_gpus else f"{pool.num_cpus:g} CPU")
            n = len(self.texts)
            tables = [pa.table({"position": np.arange(begin, min(begin + BLOCK_PASSAGES, n)),
                                "text": self.texts[begin : begin + BLOCK_PASSAGES]})
                      for begin in range(0, n, BLOCK_PASSAGES)]
            with warnings.catch_warnings():  # Ray 2.60 takes the retry limits only as generic remote
                warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated")  # args
                dataset = ray.data.from_arrow(tables).map_batches(
                    self.encoder,
                    batch_size=BLOCK_PASSAGES,
                    batch_format="numpy",
                    fn_constructor_kwargs={"model_path": str(self.spec.path),
                                           "fingerprint": self.spec.fingerprint(), "batch_size": batch_size,
                                           "device": "cuda" if pool.num_gpus else None,
                                           "encoding": self.encoding},
                    compute=ray.data.ActorPoolStrategy(size=min(pool.size, len(tables))),
                    num_cpus=pool.num_cpus,
                    num_gpus=pool.num_gpus,
                    max_restarts=MAX_RETRIES,
                    max_task_retries=MAX_RETRIES,
                )
            done = 0
            try:
                for batch in dataset.iter_batches(batch_size=BLOCK_PASSAGES, batch_format="numpy"):
                    positions = batch["position"]  # (B,)
                    if len(positions) == 0:
                        continue
                    if positions[0] != done or positions[-1] != done + len(positions) - 1:
                        raise RuntimeError(
                            f"Ray returned passages {positions[0]}..{positions[-1]} where {done} was next.")
                    done += len(positions)
                    yield np.ascontiguousarray(batch["vector"], dtype=np.float32)  # (B, dim)
            except ray.exceptions.RayError as err:
                raise RayEmbeddingError(
                    f"Embedding on Ray ({self.address}) failed after {done} of {len(self.texts)} passages: "
                    f"{str(err).splitlines()[0]} The chunk being embedded was not committed; earlier commits "
                    "are kept. Run the same command again to resume (without --ray to embed here)."
                ) from err
        finally:
            context.execution_options.preserve_order, context.enable_progress_bars = saved
            if started_ray:
                ray.shutdown()

