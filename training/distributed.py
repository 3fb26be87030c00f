"""Data-parallel training under `torchrun`: which process this is, and its process group.

torchrun sets RANK, LOCAL_RANK and WORLD_SIZE in every process it starts. Without
them (or with WORLD_SIZE=1) a run is one process, no process group is started and
every function here is a no-op, so single-process training is exactly as before.
The backend follows PyTorch's advice: NCCL between GPUs, gloo on the CPU.

The process group stays up until the process exits (`shutdown` in the CLI), so the
stages of `training adapt` (our pretraining loop, then the sentence-transformers
trainer, which reuses an initialised group through accelerate) share one group.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class DistributedContext:
    """This process's place in a data-parallel run; rank 0 logs, evaluates and writes files."""

    rank: int = 0
    local_rank: int = 0
    world_size: int = 1

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launched_context() -> DistributedContext:
    """The rank and world size torchrun gave this process; one process when not launched by torchrun."""
    return DistributedContext(
        rank=int(os.environ.get("RANK", 0)),
        local_rank=int(os.environ.get("LOCAL_RANK", 0)),
        world_size=int(os.environ.get("WORLD_SIZE", 1)),
    )


def training_device(requested: str | None, context: DistributedContext) -> torch.device:
    """`requested` (--device), else this process's GPU (cuda:LOCAL_RANK) when there is one, else the CPU."""
    if requested is not None:
        device = torch.device(requested)
    else:
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", context.local_rank if context.is_distributed else 0)
    return device


def init_distributed(device: torch.device) -> DistributedContext:
    """Join torchrun's process group (NCCL for a GPU device, gloo otherwise) unless already joined."""
    context = launched_context()
    if not context.is_distributed or dist.is_initialized():
        return context
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return context


def trainer_uses_cpu() -> bool:
    """`use_cpu` for the sentence-transformers trainers: the CPU only where there is no GPU.

    With `use_cpu=True`, accelerate starts a gloo group and trains on the CPU even on
    a GPU machine; without it, on a CPU-only machine, accelerate sees no device to
    spread over and each torchrun process would train alone, unsynchronised.
    """
    return not torch.cuda.is_available()


def world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def is_main_process() -> bool:
    """Rank 0 of the group, or of torchrun's launch before the group is up (RANK), or a lone process."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    return launched_context().is_main


def barrier() -> None:
    """Wait for every process (e.g. until rank 0 has written the model the next stage loads).

    Under torchrun, a barrier before the process group is up (the sentence-transformers trainers
    start it late, in their arguments) joins the group first, with the backend `init_distributed`
    picks, which accelerate then reuses: otherwise every process would pass it at once and each
    take itself for rank 0 (two processes once raced to make the same work folder).
    """
    if not dist.is_available():
        return
    if not dist.is_initialized():
        context = launched_context()
        if not context.is_distributed:
            return
        init_distributed(training_device(None, context))
    dist.barrier()


def gather_objects(value: Any) -> list[Any]:
    """Every rank's `value`, in rank order, on every rank; `[value]` in a single process."""
    if not (dist.is_available() and dist.is_initialized()):
        return [value]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, value)
    return gathered


def check_replicas_agree(module: torch.nn.Module) -> None:
    """Raise if the ranks' copies of the weights differ, e.g. after a forward that bypassed DDP's wrapper.

    DDP all-reduces gradients only for a forward through its wrapper; any other path
    trains each rank alone, silently. Compared at each checkpoint, one number per rank.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    with torch.no_grad():
        checksum = float(sum(parameter.double().sum() for parameter in module.parameters()))
    sums = gather_objects(checksum)
    if max(sums) - min(sums) > 1e-6 * max(1.0, abs(sums[0])):
        raise RuntimeError(
            f"The processes' weights differ (parameter sums {sums}): gradients were not all-reduced. "
            "Every training forward must go through the DistributedDataParallel wrapper."
        )


def sum_over_ranks(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sums of `values` over every rank, in one all-reduce; `values` in a single process."""
    if not (dist.is_available() and dist.is_initialized()):
        return list(values)
    totals = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(totals)
    return totals.tolist()


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
