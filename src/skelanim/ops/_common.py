"""Small helpers shared by the ops modules: numpy/torch at the edges, axis and shape checks.

Not public: the ops modules re-export what users need.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from skelanim.errors import ShapeError

ArrayLike = np.ndarray | torch.Tensor

_AXIS_NAMES = {"x": 0, "y": 1, "z": 2}


def to_tensor(x: ArrayLike | Any, *, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, bool]:
    """``(tensor, was_numpy)``: ``x`` as a torch tensor (float64 unless ``dtype`` says otherwise), and whether
    it came in as something other than a tensor (so the result goes back as numpy)."""
    if isinstance(x, torch.Tensor):
        return (x if x.is_floating_point() else x.to(dtype)), False
    return torch.as_tensor(np.asarray(x), dtype=dtype), True


def to_numpy(x: ArrayLike | Any) -> np.ndarray:
    """``x`` as a numpy array (tensors are detached and moved to the CPU)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def back(x: torch.Tensor | np.ndarray, was_numpy: bool, like: torch.Tensor | None = None) -> ArrayLike:
    """Return ``x`` as numpy when the input was numpy, else as a tensor (dtype/device of ``like`` if given)."""
    if was_numpy:
        return to_numpy(x)
    t = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))
    if like is not None:
        t = t.to(dtype=like.dtype, device=like.device)
    return t


def axis_index(axis: int | str) -> int:
    """An axis given as ``0/1/2`` or ``"x"/"y"/"z"`` (case-insensitive, an optional sign is ignored)."""
    if isinstance(axis, (int, np.integer)):
        if not 0 <= int(axis) <= 2:
            raise ShapeError(f"axis must be 0, 1 or 2, got {axis}")
        return int(axis)
    key = str(axis).strip().lower().lstrip("+-")
    if key not in _AXIS_NAMES:
        raise ShapeError(f"axis must be one of x, y, z (or 0, 1, 2), got {axis!r}")
    return _AXIS_NAMES[key]


def direction_vector(direction: int | str | ArrayLike) -> torch.Tensor:
    """A unit ``(3,)`` float64 direction from ``"+z"``, ``"-x"``, an axis index or a 3-vector."""
    if isinstance(direction, (str, int, np.integer)):
        v = torch.zeros(3, dtype=torch.float64)
        sign = -1.0 if isinstance(direction, str) and direction.strip().startswith("-") else 1.0
        v[axis_index(direction)] = sign
        return v
    v = torch.as_tensor(to_numpy(direction), dtype=torch.float64).reshape(-1)
    if v.shape != (3,) or not torch.isfinite(v).all() or float(v.norm()) == 0.0:
        raise ShapeError(f"a direction must be a non-zero 3-vector, got {v.tolist()}")
    return v / v.norm()


def check_frames(x: torch.Tensor, *, name: str, min_ndim: int = 1) -> None:
    """Raise :class:`ShapeError` unless ``x`` has at least ``min_ndim`` dims and one frame."""
    if x.ndim < min_ndim or x.shape[0] < 1:
        raise ShapeError(
            f"{name} must have shape (F, ...) with F >= 1 and at least {min_ndim} dims, got {tuple(x.shape)}"
        )
