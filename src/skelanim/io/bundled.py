"""Files shipped inside the package (the DeepMimic humanoid URDF, the sample clips) as filesystem paths.

Readers such as :func:`skelanim.io.urdf.parse_urdf` and pybullet want a real file. In an ordinary
installation the packaged file is one; from a zip archive it is extracted to a temporary file that lives
until the interpreter exits.
"""

from __future__ import annotations

import atexit
import contextlib
from importlib import resources
from pathlib import Path

__all__ = ["bundled_file"]

_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def bundled_file(relative: str) -> Path:
    """Filesystem path of a file shipped with skelanim.

    Parameters
    ----------
    relative:
        ``/``-separated path below the ``skelanim`` package folder, e.g. ``"io/assets/humanoid.urdf"``.

    Returns
    -------
    Path
        The file (extracted to a temporary location when the package is installed as a zip archive).

    Raises
    ------
    FileNotFoundError
        The installation lacks the file (the package was installed without its data files).
    """
    ref = resources.files("skelanim").joinpath(relative)
    if not ref.is_file():
        raise FileNotFoundError(f"bundled file {relative!r} is missing from the installation ({ref})")
    if isinstance(ref, Path):
        return ref
    return Path(_extracted.enter_context(resources.as_file(ref)))
