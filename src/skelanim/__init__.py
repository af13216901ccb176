"""skelanim: skeleton-based human animation with deep learning.

The public API: :func:`load`, :func:`save`, :class:`Skeleton`, :class:`Motion`, and :func:`load_positions` with
the :class:`JointPositions` it returns. They, and the subpackages
(``skelanim.ops``, ...), are imported on first use (PEP 562), so that importing the package, and with it the
``skelanim`` console script (:mod:`skelanim.console`), does not wait for torch before it can answer Ctrl-C.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skelanim.core.motion import Motion
    from skelanim.core.skeleton import Skeleton
    from skelanim.io import load, load_positions, save
    from skelanim.io.positions import JointPositions

__version__ = "0.1.0"
__all__ = ["JointPositions", "Motion", "Skeleton", "__version__", "load", "load_positions", "save"]

_HOMES = {"JointPositions": "skelanim.io.positions", "Motion": "skelanim.core.motion",
          "Skeleton": "skelanim.core.skeleton", "load": "skelanim.io",
          "load_positions": "skelanim.io", "save": "skelanim.io"}  # fmt: skip


#: The subpackages and modules, imported on first use too (``skelanim.ops.filters`` without an import).
_SUBMODULES = ("core", "data", "errors", "ik", "io", "learn", "metrics", "nn", "ops", "retarget", "serve", "viz")


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"skelanim.{name}")
    else:
        raise AttributeError(f"module 'skelanim' has no attribute {name!r}")
    globals()[name] = value  # once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES, *_SUBMODULES})
