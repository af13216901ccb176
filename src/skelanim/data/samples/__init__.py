"""Sample data bundled with the package, so examples and tests run without any download.

========================  ===================================================================
name                      file
========================  ===================================================================
``"walk"``                ``deepmimic/walk.txt`` — DeepMimic humanoid walk, 39 frames, ~30 fps
``"run"``                 ``deepmimic/run.txt`` — DeepMimic humanoid run, 25 frames, ~30 fps
``"jump"``                ``deepmimic/jump.txt`` — DeepMimic humanoid jump, 107 frames, ~60 fps
``"humanoid.urdf"``       the DeepMimic humanoid these clips animate, which ships with its reader
                          (:data:`skelanim.io.deepmimic.BUNDLED_URDF`; loaded at ``globalScaling`` 0.25)
========================  ===================================================================

The files are unmodified copies of pybullet's ``pybullet_data`` files (zlib license); see the
``NOTICE`` beside them for the credits and the license text.

Example
-------
>>> from skelanim.data.samples import sample_path
>>> from skelanim.io import deepmimic
>>> motion = deepmimic.load(sample_path("walk"))
"""

from __future__ import annotations

from pathlib import Path

from skelanim.io.bundled import bundled_file
from skelanim.io.deepmimic import BUNDLED_URDF

__all__ = ["CLIPS", "SAMPLES", "sample_names", "sample_path"]

#: Sample name -> path relative to the ``skelanim`` package folder.
SAMPLES: dict[str, str] = {
    "walk": "data/samples/deepmimic/walk.txt",
    "run": "data/samples/deepmimic/run.txt",
    "jump": "data/samples/deepmimic/jump.txt",
    "humanoid.urdf": BUNDLED_URDF,
}
#: The samples that are motion clips (the others describe a skeleton).
CLIPS = tuple(name for name, relative in SAMPLES.items() if relative.endswith(".txt"))


def sample_names() -> list[str]:
    """Names accepted by :func:`sample_path`."""
    return list(SAMPLES)


def sample_path(name: str = "walk") -> Path:
    """Filesystem path of a bundled sample.

    Parameters
    ----------
    name:
        A key of :data:`SAMPLES` (``"walk"``, ``"run"``, ``"jump"``, ``"humanoid.urdf"``); a file name
        such as ``"walk.txt"`` is accepted too.

    Returns
    -------
    Path
        The file. When the package is installed in a zip archive the file is extracted to a temporary
        location that lives until the interpreter exits.

    Raises
    ------
    ValueError
        Unknown sample name (the message lists the known ones).
    FileNotFoundError
        The package was installed without its data files.
    """
    relative = SAMPLES.get(name)
    if relative is None:
        relative = next((rel for rel in SAMPLES.values() if rel.rsplit("/", 1)[-1] == name), None)
    if relative is None:
        raise ValueError(f"unknown sample {name!r}; available: {', '.join(SAMPLES)}")
    return bundled_file(relative)
