"""Length units of motion files, and the guess of a file's unit from a human body's height.

Files keep their own units in memory (see the README's *Conventions*); exporters and viewers that need
metres ask here. The guess picks the unit that brings the body height ``h`` closest, in ratio, to a
typical adult's 1.7 m: ``h < 7.2`` metres; ``7.2 <= h < 45`` CMU units (the ASF length unit, ``1/0.45``
inch, kept by the CMU BVH conversions); ``45 <= h < 107`` inches; ``107 <= h < 538`` centimetres; above,
millimetres.
"""

from __future__ import annotations

import math

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


def metres_per_unit(height: float) -> float:
    """Metres per file unit for a human figure ``height`` units tall (see :func:`guess_unit`)."""
    return UNITS[guess_unit(height)]
