"""Blender as a peer: its own BVH and glTF importers and exporters, the ones animators and game studios use; and
ufbx (:func:`run_ufbx`), the FBX loader Godot imports with, as a second reader of FBX files.

Blender's Python module (``bpy``, Blender 4.5 LTS from PyPI) lives in its own environment, ``tools/blender/.venv``
(``make tools`` makes it from ``tools/blender/requirements.txt``), because its wheels need Python 3.11 and NumPy
1.x, and the project's environment must not be downgraded for a test. ``SKELANIM_BLENDER_PYTHON`` names another
interpreter with ``bpy``. The tests run :file:`blender_job.py` in that interpreter, one subprocess per job, and read
the world positions it writes; skelanim is never imported there.

Without that environment the tests skip with the reason, except under ``SKELANIM_REQUIRE_PEERS=1`` (CI), where
they fail; on a Python other than 3.11, which has no ``bpy`` wheel, they skip even there.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import TOOLS

JOB = Path(__file__).with_name("blender_job.py")
BLENDER_VENV = TOOLS / "blender" / ".venv"


def blender_python() -> Path:
    """The interpreter with Blender's ``bpy``; skips (or fails under ``SKELANIM_REQUIRE_PEERS=1``) without it."""
    configured = os.environ.get("SKELANIM_BLENDER_PYTHON")
    python = Path(configured) if configured else BLENDER_VENV / "bin" / "python"
    if python.is_file() and (configured or (BLENDER_VENV / ".installed").is_file()):  # made whole by `make tools`
        return python
    reason = f"Blender's Python (bpy) not found at {python} (`make tools` makes it): the Blender peer check is skipped"
    if sys.version_info[:2] != (3, 11) and not configured:
        pytest.skip(f"{reason}; bpy wheels exist for Python 3.11 only")
    if os.environ.get("SKELANIM_REQUIRE_PEERS") == "1":
        pytest.fail(f"{reason}, and SKELANIM_REQUIRE_PEERS=1")
    pytest.skip(reason)


def run_blender(spec: dict, work: Path, *, timeout: float = 300.0) -> dict[str, np.ndarray]:
    """Run one :file:`blender_job.py` job (its docstring describes ``spec``, less ``heads``, which this fills in)
    and return its arrays: ``names`` (J,), ``heads`` (F, J, 3) in Blender's world (Z up), ``frames`` (F,), ``fps``."""
    python = blender_python()
    heads = work / f"blender_heads_{len(list(work.glob('blender_heads_*')))}.npz"
    spec_path = heads.with_suffix(".json")
    spec_path.write_text(json.dumps({**spec, "heads": str(heads)}), encoding="utf-8")
    done = subprocess.run([str(python), str(JOB), str(spec_path)], check=False, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": ""})  # fmt: skip
    if done.returncode != 0 or not heads.is_file():
        raise AssertionError(f"Blender job failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with np.load(heads) as arrays:
        return {key: arrays[key] for key in arrays.files}


def z_up_to_y_up(points: np.ndarray) -> np.ndarray:
    """Blender's world (Z up, -Y forward) as glTF's (Y up, +Z forward): ``(x, y, z) -> (x, z, -y)``; (..., 3)."""
    return np.stack([points[..., 0], points[..., 2], -points[..., 1]], axis=-1)


def y_up_to_z_up(points: np.ndarray) -> np.ndarray:
    """The inverse of :func:`z_up_to_y_up` (how Blender's glTF importer places a file's points); (..., 3)."""
    return np.stack([points[..., 0], -points[..., 2], points[..., 1]], axis=-1)


def heads_by_name(job: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The job's heads of the joints ``names``, in that order; (F, len(names), 3). Every name must be a bone."""
    bones = [str(n) for n in job["names"]]
    missing = [n for n in names if n not in bones]
    assert not missing, f"Blender has no bone for {missing} (bones: {bones})"
    return job["heads"][:, [bones.index(n) for n in names]]


def run_ufbx(path: Path, work: Path, *, timeout: float = 300.0) -> dict[str, np.ndarray]:
    """Read the FBX ``path`` with ufbx (:file:`ufbx_job.py`, in a subprocess: the bindings crash when their objects
    are freed) and return its arrays: ``names`` (J,), ``heads`` (F, J, 3), ``fps``, ``key_times``, ``unit_meters``.
    Skips without ufbx, or fails under ``SKELANIM_REQUIRE_PEERS=1`` (a test extra)."""
    if importlib.util.find_spec("ufbx") is None:
        if os.environ.get("SKELANIM_REQUIRE_PEERS") == "1":
            pytest.fail("peer library ufbx required (pip install -e '.[test]')")
        pytest.skip("peer library ufbx not installed")
    out = work / f"ufbx_{path.stem}.npz"
    done = subprocess.run([sys.executable, str(JOB.with_name("ufbx_job.py")), str(path), str(out)], check=False,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    if done.returncode != 0 or not out.is_file():
        raise AssertionError(f"ufbx job failed (exit {done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    with np.load(out) as arrays:
        return {key: arrays[key] for key in arrays.files}
