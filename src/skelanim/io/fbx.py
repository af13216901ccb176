"""FBX, through Blender: Autodesk's FBX SDK is not installable from PyPI, and Blender's FBX importer and exporter are
the ones animators already use (Mixamo downloads, Unity's Humanoid avatars, Unreal's FBX import).

* :func:`load` has Blender import the FBX and export its armature and animation as glTF, read by
  :func:`skelanim.io.gltf.load`: metres, Y up, the armature object's own placement (an FBX's 0.01 scale, its turn to
  Z up) applied to every joint;
* :func:`save` writes the motion as BVH, turned to Y up, and has Blender import it at the motion's metres per unit and
  export an FBX of its armature with the settings of docs/engines.md (baked at every frame, Simplify 0, no leaf
  bones, FBX units scale, forward -Z, up Y), which Unity and Unreal import as is. The armature and its one take
  are named after the file (``walk.fbx``: armature ``walk``, take ``walk|walk``, Blender's "object|action"). End Sites are not written: without leaf bones an FBX has no
  place for them (engines map bones, not tips), so a motion read back has none and measures to its last joints.

Blender is found, in this order: the environment variable ``SKELANIM_BLENDER`` (a Blender executable, or a Python
interpreter with Blender's ``bpy`` module: ``pip install bpy`` in a Python 3.11 environment), ``blender`` on the
``PATH``, and this interpreter if it has ``bpy`` (inside Blender itself, as an add-on: that Blender, in the
background). Without one, both raise :class:`BlenderNotFoundError` saying so.
Both are checked against Blender itself, joint by joint and frame by frame (``tests/io/test_fbx.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from skelanim.core.motion import Motion
from skelanim.errors import FormatError, ShapeError, SkelanimError
from skelanim.io import bvh, gltf
from skelanim.io.atomic import atomic_path
from skelanim.io.common import rate_within, require_finite_motion
from skelanim.ops.normalize import turned_up

__all__ = ["BLENDER_ENV", "BlenderNotFoundError", "blender_command", "load", "save"]

#: The environment variable naming Blender: its executable, or a Python interpreter that has its ``bpy`` module.
BLENDER_ENV = "SKELANIM_BLENDER"
#: Blender's side of the work (run by Blender, imports nothing of skelanim).
JOB = Path(__file__).with_name("assets") / "_blender_fbx.py"
#: How long one Blender run may take, in seconds (an FBX of a long take bakes every frame).
TIMEOUT = 1800.0
_ERROR_PREFIX = "skelanim-blender-error: "
#: How a binary FBX file starts (Blender reads no other kind).
BINARY_MAGIC = b"Kaydara FBX Binary  \x00"


class BlenderNotFoundError(FormatError):
    """FBX needs Blender, and none was found (:func:`blender_command`)."""


def blender_command() -> list[str]:
    """The command that runs a Blender script, up to the script's path: ``[python]`` for an interpreter with ``bpy``,
    ``[blender, --background, --factory-startup, --python]`` for Blender itself (see the module docstring).

    Raises
    ------
    BlenderNotFoundError
        No Blender: ``SKELANIM_BLENDER`` unset (or naming no file), no ``blender`` on the ``PATH``, no ``bpy`` here.
    """
    configured = os.environ.get(BLENDER_ENV)
    if configured:
        found = shutil.which(configured) or (configured if os.path.isfile(configured) else None)
        if found is None:
            raise BlenderNotFoundError(f"{BLENDER_ENV}={configured!r} names no file; it should name Blender or a "
                                       "Python interpreter that has Blender's bpy module")  # fmt: skip
        return _command(found)
    found = shutil.which("blender")
    if found is not None:
        return _command(found)
    if importlib.util.find_spec("bpy") is not None:
        inside = getattr(getattr(sys.modules.get("bpy"), "app", None), "binary_path", "")
        return _command(inside) if inside else [sys.executable]  # inside Blender (an add-on): that Blender
    raise BlenderNotFoundError("FBX is read and written through Blender, and none was found: install Blender (the "
                               f"`blender` command), or `pip install bpy` in a Python 3.11 environment and set "
                               f"{BLENDER_ENV} to that environment's python")  # fmt: skip


def _command(executable: str) -> list[str]:
    if Path(executable).name.lower().startswith("python"):
        return [executable]
    return [executable, "--background", "--factory-startup", "--python-exit-code", "3", "--python"]


def _run_blender(args: list[str], path: str | os.PathLike) -> None:
    """Run :data:`JOB` with ``args`` in Blender; its one-line failure becomes a :class:`FormatError` naming ``path``."""
    command = [*blender_command(), str(JOB), "--", *args]
    env = {**os.environ, "PYTHONPATH": ""}  # Blender's Python must not import this environment's packages
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=TIMEOUT, env=env,
                              check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise FormatError(f"Blender did not finish within {TIMEOUT:.0f} s", path=path) from None
    except OSError as exc:
        raise BlenderNotFoundError(f"Blender could not be started ({command[0]}): {exc.strerror or exc}") from None
    said = [line[len(_ERROR_PREFIX):] for line in done.stderr.splitlines() if line.startswith(_ERROR_PREFIX)]
    if said:
        raise FormatError(f"Blender: {said[-1]}", path=path)
    if done.returncode != 0:
        last = next((ln.strip() for ln in reversed(done.stderr.splitlines()) if ln.strip()), "no message")
        raise FormatError(f"Blender failed (exit status {done.returncode}): {last}", path=path)


def load(path: str | os.PathLike, *, animation: int | str | None = None) -> Motion:
    """Read an FBX file's armature and one of its animations (takes) as a Motion in metres, Y up.

    Parameters
    ----------
    path:
        The file.
    animation:
        The take to read: its name as Blender names it (``metadata["fbx_takes"]`` lists them) or its index there;
        by default the armature's active one. An armature without animation gives one rest-pose frame.

    Raises
    ------
    FileNotFoundError, IsADirectoryError, PermissionError
        ``path`` cannot be read.
    FormatError
        Blender cannot import it, or it holds no armature or several (the message is Blender's), or no take
        ``animation``.
    BlenderNotFoundError
        No Blender (:func:`blender_command`).
    """
    with open(path, "rb") as handle:  # the system's own error for a missing or unreadable file, before Blender starts
        head = handle.read(1024)
    if not head.startswith(BINARY_MAGIC):
        if b"FBXHeaderExtension" in head or head.lstrip().startswith(b"; FBX"):
            raise FormatError("an ASCII FBX file; Blender reads binary FBX only: export it again as binary FBX",
                              path=path)  # fmt: skip
        raise FormatError("not an FBX file (a binary FBX starts with 'Kaydara FBX Binary')", path=path)
    with tempfile.TemporaryDirectory(prefix="skelanim-fbx-") as work:
        glb, info = Path(work) / "armature.glb", Path(work) / "info.json"
        _run_blender(["read", str(Path(path).resolve()), str(glb), str(info)], path)
        if not glb.is_file() or not info.is_file():
            raise FormatError("Blender wrote no glTF of it", path=path)
        scene = json.loads(info.read_text(encoding="utf-8"))
        takes: list[str] = scene["takes"] if scene["active"] is not None else []
        try:
            motion = gltf.load(glb, animation=_take(animation, scene["active"], takes, path))
        except SkelanimError as exc:  # about the intermediate glTF: say it of the FBX
            raise FormatError(exc.message, path=path) from None
    # the glTF's keys are the file's frames timed at a whole rate (the Blender job's true_rate_frames); the file's
    # rate, as Blender read it (a BVH's 0.008333 s is 120.0005 fps to it), snapped to a whole or NTSC rate within
    # 1e-5, as skelanim reads a file's rounded frame time
    timed_at, rate = float(scene["timed_at"]), float(scene["fps"])
    fps = motion.fps
    if motion.num_frames > 1 and abs(motion.fps - timed_at) <= 1e-4 * timed_at:
        fps = rate_within(1.0 / rate, 1e-5 / rate)
    metadata = {k: v for k, v in motion.metadata.items() if k != "animation"}
    return motion.copy(fps=fps, metadata={**metadata, "format": "fbx", "path": str(path), "units": "m",
                                          "fbx_take": motion.metadata.get("animation"), "fbx_takes": takes})  # fmt: skip


def _take(animation: int | str | None, active: str | None, takes: list[str], path: str | os.PathLike) -> int | str:
    """The glTF animation (named as its take) that ``load``'s ``animation`` asks for: the active take by default."""
    if animation is None:
        return active or 0
    if isinstance(animation, str):
        if animation not in takes:
            raise FormatError(f"no take {animation!r}; its takes are {', '.join(map(repr, takes)) or 'none'}",
                              path=path)  # fmt: skip
        return animation
    if not 0 <= int(animation) < max(len(takes), 1):
        raise FormatError(f"no take {animation}; it has {len(takes)}", path=path)
    return takes[int(animation)] if takes else 0


def save(motion: Motion, path: str | os.PathLike, *, scale: float | str | None = None,
         up_axis: int | str | None = None) -> None:  # fmt: skip
    """Write ``motion`` as an FBX of its armature and animation, in metres, atomically.

    Parameters
    ----------
    motion:
        The motion: ``F >= 1`` frames of finite values.
    path:
        Output ``.fbx`` file.
    scale, up_axis:
        Metres per unit of ``motion`` and its up axis, as for :func:`skelanim.io.gltf.save` (by default from the
        motion's units, else guessed from its size, and from :meth:`Motion.up_direction`).

    Raises
    ------
    ShapeError
        No frames, a non-finite value (naming frame and joint), or a bad option.
    FormatError
        The suffix is not ``.fbx``, or Blender failed (its message).
    BlenderNotFoundError
        No Blender (:func:`blender_command`).
    """
    if Path(path).suffix.lower() != ".fbx":
        raise FormatError(f"expected an .fbx file name, got suffix {Path(path).suffix!r}", path=path)
    if motion.num_frames == 0:
        raise ShapeError("the motion has 0 frames; an FBX animation needs at least one", path=path)
    require_finite_motion(motion, path)
    try:
        upright, _ = turned_up(motion, 1, up_axis=up_axis)  # Blender's BVH import takes Y up, as BVH is
    except ShapeError as exc:
        raise ShapeError(exc.message, path=path) from None
    factor, _ = gltf.export_scale(motion, scale, path=path)
    blender_command()  # no Blender: say so before any work
    with tempfile.TemporaryDirectory(prefix="skelanim-fbx-") as work, atomic_path(path) as tmp:
        source = Path(work) / f"{Path(path).stem or 'motion'}.bvh"  # Blender names the armature and take after it
        bvh.save(upright, source)
        _run_blender(["write", str(source), str(tmp.resolve()), repr(factor), repr(float(motion.fps))], path)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise FormatError("Blender wrote no FBX", path=path)
