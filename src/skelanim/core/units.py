"""Length units and up axes of motion files: the guess of a file's unit from a human body's size, and
the turn that stands a file's up axis on +Y.

Files keep their own units and axes in memory (see the README's *Conventions*); exporters and viewers
that need metres, Y up, ask here, with the body's size in file units: callers pass a motion's
:attr:`~skelanim.core.motion.Motion.stature` (its bone lengths from head to foot, which no pose changes), or a
rig's height. The guess picks the unit that brings that size ``h`` closest, in ratio, to a typical adult's
1.7 m, so it switches between neighbouring units ``a`` and ``b`` (``u`` metres per unit) at
``h = 1.7 / sqrt(u_a u_b)``, the geometric mean of a 1.7 m body's sizes in the two. To three decimals:
``h < 7.155`` metres; ``7.155 <= h < 44.897`` CMU units (the ASF length unit, ``1/0.45`` inch, kept by the CMU
BVH conversions); ``44.897 <= h < 106.667`` inches; ``106.667 <= h < 537.587`` centimetres; above, millimetres.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from skelanim.errors import ShapeError

__all__ = [
    "TYPICAL_HEIGHT_M", "UNITS", "UNIT_ALIASES", "axis_index", "canonical_unit", "guess_unit", "horizontal_axes",
    "metres_per_unit", "motion_unit", "signed_axis_name", "up_to_y_matrix",
]  # fmt: skip

#: Metres per unit.
UNITS: dict[str, float] = {"m": 1.0, "cmu": 0.0254 / 0.45, "in": 0.0254, "cm": 0.01, "mm": 0.001}
#: Spelled-out names accepted for the keys of :data:`UNITS`.
UNIT_ALIASES: dict[str, str] = {
    "metres": "m", "meters": "m", "inches": "in", "inch": "in", "centimetres": "cm", "centimeters": "cm",
    "millimetres": "mm", "millimeters": "mm",
}  # fmt: skip
TYPICAL_HEIGHT_M = 1.7


def canonical_unit(name: str) -> str | None:
    """The key of :data:`UNITS` that ``name`` means (case-insensitive, aliases allowed), or None."""
    key = UNIT_ALIASES.get(name.strip().lower(), name.strip().lower())
    return key if key in UNITS else None


def guess_unit(height: float) -> str:
    """The unit (a key of :data:`UNITS`) of a human figure ``height`` units tall; ``"m"`` if not positive."""
    if not (height > 0 and math.isfinite(height)):
        return "m"
    return min(UNITS, key=lambda unit: abs(math.log(height * UNITS[unit] / TYPICAL_HEIGHT_M)))


def motion_unit(declared: object, height: float) -> str:
    """The length unit of a motion (a key of :data:`UNITS`): ``declared`` (its ``metadata["units"]``) where it names
    one (aliases such as ``"inches"`` allowed, :func:`canonical_unit`), else the unit guessed from the body
    ``height`` (:func:`guess_unit`). Every exporter, viewer and metric that needs metres reads the unit here."""
    return canonical_unit(str(declared if declared is not None else "")) or guess_unit(height)


def metres_per_unit(height: float) -> float:
    """Metres per file unit for a human figure ``height`` units tall (see :func:`guess_unit`)."""
    return UNITS[guess_unit(height)]


_AXIS_NAMES = {"x": 0, "y": 1, "z": 2}


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


def signed_axis_name(axis: int, sign: float) -> str:
    """``"+y"``, ``"-z"``, ...: an up direction as the ``up_axis`` options take it (the inverse of reading one)."""
    return ("-" if sign < 0 else "+") + "xyz"[axis]


def horizontal_axes(up: int) -> tuple[int, int]:
    """The two horizontal axes ``(a, b)`` of up axis ``up``, in the cyclic order after it (right-handed:
    ``(a, b, up)``): ``((up + 1) % 3, (up + 2) % 3)``."""
    return (up + 1) % 3, (up + 2) % 3


def up_to_y_matrix(axis: int, sign: float = 1.0) -> torch.Tensor:
    """The proper rotation (handedness kept) that turns the up direction ``sign * e[axis]`` onto +Y.

    The smallest such turn: the identity for +Y, a half turn about X for -Y, otherwise a quarter turn
    about ``up x Y``. So a Z-up file goes ``(x, y, z) -> (x, z, -y)`` (-90 degrees about X) and an X-up
    file ``(x, y, z) -> (-y, x, z)`` (+90 degrees about Z). The entries are exactly 0, 1 or -1.

    Parameters
    ----------
    axis:
        The up axis, 0 = X, 1 = Y, 2 = Z (as :meth:`skelanim.core.motion.Motion.up_axis` returns it).
    sign:
        ``+1`` if up is the positive direction of ``axis``, ``-1`` if the negative one.

    Returns
    -------
    Tensor
        ``(3, 3)`` float64 matrix ``R`` acting on column vectors, ``v' = R @ v``.
    """
    if axis not in (0, 1, 2):
        raise ShapeError(f"up axis must be 0, 1 or 2, got {axis!r}")
    s = 1.0 if sign >= 0 else -1.0
    if axis == 1:  # the identity, or a half turn about X when upside down
        return torch.diag(torch.tensor([1.0, s, s], dtype=torch.float64))
    up = torch.zeros(3, dtype=torch.float64)
    up[axis] = s
    k = torch.linalg.cross(up, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    hat = torch.zeros(3, 3, dtype=torch.float64)  # hat @ v == k x v
    hat[0, 1], hat[0, 2], hat[1, 2] = -k[2], k[1], -k[0]
    hat = hat - hat.T
    return torch.eye(3, dtype=torch.float64) + hat + hat @ hat  # Rodrigues with sin = 1, cos = 0
