"""Where training and inference run: the CPU, or a GPU when one is present.

Data are built on the CPU (the dataset, its augmentation, the seeded generators) and moved to the compute device
batch by batch, so a seeded run draws the same samples on every device. A model package's :class:`~.train.Task`
keeps the tensors its loss needs (rest offsets, normalisation statistics, validation windows) and moves them in
its ``to_device(device)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

import torch
from torch import nn

from skelanim.errors import SkelanimError

__all__ = ["AUTO", "module_device", "rank_device", "resolve_device", "to_device"]

#: The device name that picks a GPU when torch sees one, else the CPU.
AUTO = "auto"

T = TypeVar("T")


def resolve_device(name: str) -> torch.device:
    """The device a name stands for: ``"auto"`` (CUDA when available, else the CPU), ``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, ``"mps"``; any other name torch knows is passed through.

    Raises
    ------
    SkelanimError
        For a name torch does not know, or a CUDA / MPS device this machine does not have.
    """
    if name == AUTO:  # not MPS: Apple GPUs are only used when asked for (--device mps)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise SkelanimError(f"unknown device {name!r} (expected auto, cpu, cuda, cuda:N or mps)") from None
    if device.type == "meta":
        raise SkelanimError("device 'meta' holds shapes, not values: nothing can be trained on it")
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SkelanimError(f"device {name!r}: this torch sees no CUDA GPU (use --device cpu or auto)")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise SkelanimError(f"device {name!r}: only {torch.cuda.device_count()} CUDA device(s) here")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise SkelanimError(f"device {name!r}: MPS is not available here (use --device cpu or auto)")
    return device


def rank_device(device: torch.device) -> torch.device:
    """The device this process computes on, made current. A CUDA device without an index becomes this process's
    GPU under ``torchrun`` (``LOCAL_RANK``), else the current one; torch's current CUDA device is then set to it
    (NCCL and tensors made with a bare ``"cuda"`` follow it).

    Raises
    ------
    SkelanimError
        For a GPU index under ``torchrun`` (every rank would take that one GPU) or one this machine lacks.
    """
    if device.type != "cuda":
        return device
    ranks = int(os.environ.get("WORLD_SIZE", "1"))
    if device.index is not None and ranks > 1:
        raise SkelanimError(f"device {device}: under torchrun each of the {ranks} processes takes its own GPU; give "
                            "--device cuda (or auto), not one GPU for all")  # fmt: skip
    if device.index is None:
        index = int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else torch.cuda.current_device()
        device = torch.device("cuda", index)
    if device.index is not None and device.index >= torch.cuda.device_count():
        raise SkelanimError(f"device {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s) (under "
                            "torchrun, one process per GPU at most)")  # fmt: skip
    torch.cuda.set_device(device)  # needs the index: a bare "cuda" is refused there
    return device


def to_device(value: T, device: torch.device | str) -> T:
    """``value`` with every tensor in it (in dicts, lists and tuples, at any depth) moved to ``device``."""
    if isinstance(value, torch.Tensor):
        return value.to(device)  # type: ignore[return-value]  # T is Tensor here
    if isinstance(value, Mapping):
        return type(value)({k: to_device(v, device) for k, v in value.items()})  # type: ignore[call-arg]
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def module_device(module: nn.Module) -> torch.device:
    """The device of a module's first parameter (or buffer); the CPU for a module that holds neither."""
    for parameter in module.parameters():
        return parameter.device
    for buffer in module.buffers():
        return buffer.device
    return torch.device("cpu")
