"""skelanim: skeleton-based human animation with deep learning.

The public API: :func:`load`, :func:`save`, :class:`Skeleton`, :class:`Motion`.
"""

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.io import load, load_positions, save

__version__ = "0.1.0"
__all__ = ["Motion", "Skeleton", "__version__", "load", "load_positions", "save"]
