"""DDP plumbing: start a gloo (CPU) or NCCL (GPU) process group when launched by ``torchrun``.

``torchrun --nproc-per-node N -m skelanim ...`` sets ``WORLD_SIZE``/``RANK``/``MASTER_ADDR``; then
:func:`setup` joins the group. Run plainly, everything here is a no-op and the rank is 0 of 1.
"""

from __future__ import annotations

import atexit
import faulthandler
import os
import sys
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

import torch
import torch.distributed as dist

T = TypeVar("T")

#: Seconds the exit barrier waits for the other ranks.
LEAVE_TIMEOUT_S = 60

__all__ = [
    "any_rank", "backend", "barrier", "broadcast_object", "cleanup", "collective_device", "exit_worker",
    "gather_objects", "is_main",
    "rank", "setup", "world_size",
]  # fmt: skip


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
    if not faulthandler.is_enabled():  # a rank that aborts in C++ still says where its Python threads were
        faulthandler.enable()
    dist.init_process_group(backend=backend)
    atexit.register(cleanup)
    return True


def cleanup() -> None:
    """Leave the process group (no-op when none). With gloo, all ranks leave together: first gloo's monitored
    barrier (it gives up after :data:`LEAVE_TIMEOUT_S` when a rank has died), so no rank tears its connections
    down while another still uses them (once in CI a rank aborted in gloo with "terminate called without an
    active exception" at exit). NCCL has no barrier with a timeout, so it leaves as before."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    if dist.get_backend() == "gloo":
        try:
            dist.monitored_barrier(timeout=timedelta(seconds=LEAVE_TIMEOUT_S))
        except RuntimeError:  # a rank is gone (torchrun is ending the run): just leave
            pass
    dist.destroy_process_group()


def exit_worker(code: int) -> NoReturn:
    """End a process that joined a group: run the exit handlers (:func:`cleanup` among them), flush, and exit
    without interpreter finalization.

    Gloo's C++ objects that outlive :func:`cleanup` (a work item, a hook holding the group) are otherwise torn
    down during finalization, when a thread of theirs may still be joinable or need the GIL, which can abort the
    process with "terminate called without an active exception" after its work is done (pytorch/pytorch#179291
    describes the mechanism; a rank aborted so twice in CI, neither time reproduced here). Everything the run
    writes is closed by then.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


def world_size() -> int:
    """Number of processes (1 without DDP)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without DDP)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main() -> bool:
    """Whether this is rank 0 (the one that prints and writes files); before the process group is set up, the
    launcher's ``RANK`` says (torchrun sets it), so that a note printed while the data loads is printed once."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank() == 0
    try:  # only a launch of several processes has others (a RANK set by hand, alone, had written nothing)
        several = int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
    except ValueError:
        several = False
    return not several or os.environ.get("RANK", "0").strip() in ("", "0")


def barrier() -> None:
    """Wait for all ranks (no-op without DDP)."""
    if world_size() > 1:
        dist.barrier()


def backend() -> str | None:
    """The process group's backend (``"gloo"``, ``"nccl"``), ``None`` without one."""
    return str(dist.get_backend()) if dist.is_available() and dist.is_initialized() else None


def collective_device() -> torch.device:
    """Where the tensors of a collective must live: this rank's GPU under NCCL, which reduces nothing on the CPU;
    the CPU under gloo."""
    if backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def any_rank(flag: bool) -> bool:
    """Whether ``flag`` is true on any rank (``flag`` itself without DDP)."""
    if world_size() == 1:
        return flag
    t = torch.tensor([1 if flag else 0], dtype=torch.int64, device=collective_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def gather_objects(value: T) -> list[T]:
    """``value`` (picklable) from every rank, in rank order (``[value]`` without DDP)."""
    if world_size() == 1:
        return [value]
    out: list[Any] = [None] * world_size()
    dist.all_gather_object(out, value)
    return out


def broadcast_object(value: T) -> T:
    """Rank 0's ``value`` (picklable) on every rank (``value`` itself without DDP)."""
    if world_size() == 1:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]
