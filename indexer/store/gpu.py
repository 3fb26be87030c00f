"""FAISS on the GPU: whether there is one, whether an index fits, and the copies both ways.

A searcher copies its vectors onto every visible GPU when the installed FAISS has GPU support
(`requirements-gpu.txt`) and the copy fits; the CPU index stays as it is beside it. The CPU
copy is what gets written (FAISS cannot write a GPU index), what filtered and exact searches
read, and what every search uses when there is no GPU copy. There is no flag to pass.

An index stays on the CPU, and the log says why, when:
- FAISS cannot hold its type on a GPU (HNSW; flat float16 storage);
- it would not fit: its codes need more than the GPU's free memory less `GPU_HEADROOM_BYTES`
  (the model, FAISS's own scratch space and the query batches need that room);
- the copy fails anyway (another process took the memory meanwhile).
"""

from __future__ import annotations

import logging

import faiss

logger = logging.getLogger(__name__)

# Left free on each GPU after the copy: FAISS's temporary memory (StandardGpuResources takes up
# to 1.5 GiB), the bi-encoder (90 MB for MiniLM in fp16, plus activations) and the query batches.
GPU_HEADROOM_BYTES = 2 * 2**30


def gpu_count() -> int:
    """Number of GPUs faiss can use; 0 for faiss-cpu builds, which lack the GPU symbols."""
    get = getattr(faiss, "get_num_gpus", None)
    return int(get()) if get is not None else 0


def index_bytes(index: faiss.Index) -> int:
    """The bytes an index's codes take (what a GPU copy needs, besides small per-list overhead)."""
    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexIDMap2 | faiss.IndexIDMap):
        inner = faiss.downcast_index(inner.index)
    try:
        per_vector = int(inner.sa_code_size())
    except RuntimeError:  # types without standalone codes: count float32 rows
        per_vector = 4 * int(index.d)
    return per_vector * int(index.ntotal)


def free_gpu_bytes() -> list[int]:
    """Free memory of each visible GPU, as the CUDA driver reports it (torch asks it)."""
    import torch

    return [int(torch.cuda.mem_get_info(device)[0]) for device in range(torch.cuda.device_count())]


def fits_on_gpus(need: int, free: list[int], headroom: int = GPU_HEADROOM_BYTES) -> bool:
    """Whether a copy of `need` bytes fits on each GPU (each holds a full replica) with `headroom` left."""
    return bool(free) and all(need + headroom <= available for available in free)


def to_gpu(index: faiss.Index) -> faiss.Index | None:
    """A copy of `index` on every visible GPU, or None (logged) where there is none, the type
    has no GPU form, or it does not fit."""
    if gpu_count() == 0:
        return None
    need = index_bytes(index)
    try:
        free = free_gpu_bytes()
    except Exception as error:  # noqa: BLE001 -- no torch CUDA view of the GPUs: try the copy anyway
        logger.debug("could not read free GPU memory (%s)", error)
        free = []
    if free and not fits_on_gpus(need, free):
        logger.warning(
            "The vector index needs %.1f GB on each GPU, and %s GB are free (%.0f GB kept for the model and "
            "FAISS's scratch space): searching on the CPU instead. Free GPU memory (other processes), or "
            "build a smaller index (--vector-index ivfpq).",
            need / 1e9, "/".join(f"{value / 1e9:.1f}" for value in free), GPU_HEADROOM_BYTES / 1e9)
        return None
    try:
        moved = faiss.index_cpu_to_all_gpus(index)
    except (RuntimeError, MemoryError) as error:
        logger.warning("FAISS could not copy this %s index to the GPU (%s): searching on the CPU.",
                       type(faiss.downcast_index(index)).__name__, str(error).strip().splitlines()[-1][:200])
        return None
    logger.info("searching %d vectors on %d GPU(s) (%.2f GB each)", index.ntotal, gpu_count(), need / 1e9)
    return moved


def set_gpu_search_param(index: faiss.Index, param: str, value: int) -> None:
    """nprobe on a GPU IVF copy (GpuParameterSpace reaches through replicas and wrappers)."""
    faiss.GpuParameterSpace().set_index_parameter(index, param, int(value))
