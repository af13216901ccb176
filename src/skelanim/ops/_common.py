"""Small helpers shared by the ops modules: axis names and directions (:func:`axis_index` lives in
:mod:`skelanim.core.units`, where :class:`~skelanim.core.motion.Motion` reads axes too).

Not public: the ops modules re-export what users need. Conversion between numpy and torch lives in
:mod:`skelanim.core._tensor` (:func:`~skelanim.core._tensor.numpy_in_numpy_out`).
"""

from __future__ import annotations

import numpy as np
import torch

from skelanim.core._tensor import ArrayLike, as_tensor, to_numpy
from skelanim.core.motion import Motion
from skelanim.core.units import axis_index
from skelanim.errors import ShapeError

__all__ = ["axis_index", "direction_vector", "signed_up"]  # axis_index: core.units', here for the ops


def signed_up(motion: Motion | None, up_axis: int | str | None) -> tuple[int, float]:
    """The up axis and its sign: ``up_axis`` given (``"-y"``: ``(1, -1.0)``, an index or an unsigned name: sign
    ``+1``), else the motion's :meth:`Motion.up_direction` (``-1`` for an upside-down source: camera-space poses
    with Y down), else Y up."""
    if up_axis is not None:
        sign = -1.0 if isinstance(up_axis, str) and up_axis.strip().startswith("-") else 1.0
        return axis_index(up_axis), sign
    return motion.up_direction() if motion is not None else (1, 1.0)


def direction_vector(direction: int | str | ArrayLike) -> torch.Tensor:
    """A unit ``(3,)`` float64 direction from ``"+z"``, ``"-x"``, an axis index or a 3-vector."""
    if isinstance(direction, (str, int, np.integer)):
        v = torch.zeros(3, dtype=torch.float64)
        sign = -1.0 if isinstance(direction, str) and direction.strip().startswith("-") else 1.0
        v[axis_index(direction)] = sign
        return v
    v = as_tensor(to_numpy(direction), dtype=torch.float64).reshape(-1)
    if v.shape != (3,) or not torch.isfinite(v).all() or float(v.norm()) == 0.0:
        raise ShapeError(f"a direction must be a non-zero 3-vector, got {v.tolist()}")
    return v / v.norm()
