"""DDP plumbing: start a gloo (CPU) or NCCL (GPU) process group when launched by ``torchrun``.

``torchrun --nproc-per-node N -m skelanim ...`` sets ``WORLD_SIZE``/``RANK``/``MASTER_ADDR``; then
:func:`setup` joins the group. Run plainly, everything here is a no-op and the rank is 0 of 1.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

__all__ = ["all_reduce_mean", "barrier", "cleanup", "is_main", "rank", "setup", "world_size"]


def setup() -> bool:
    """Join the process group if launched by torchrun (``WORLD_SIZE > 1``).

    Returns
    -------
    bool
        Whether this process is part of a multi-process group.
    """
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size() > 1
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or not dist.is_available():
        return False
    backend = "nccl" if torch.cuda.is_available() and os.environ.get("SKELANIM_DDP_BACKEND") == "nccl" else "gloo"
    dist.init_process_group(backend=backend)
    return True


def cleanup() -> None:
    """Leave the process group (no-op when none)."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def world_size() -> int:
    """Number of processes (1 without DDP)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without DDP)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main() -> bool:
    """Whether this is rank 0 (the one that prints and writes files)."""
    return rank() == 0


def barrier() -> None:
    """Wait for all ranks (no-op without DDP)."""
    if world_size() > 1:
        dist.barrier()


def all_reduce_mean(value: float) -> float:
    """Mean of a float over ranks (the value itself without DDP)."""
    if world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return float(t) / world_size()
