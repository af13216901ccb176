"""glTF 2.0 (``.glb`` binary, ``.gltf`` JSON with the buffer embedded as base64): ``save`` and ``load``.

What :func:`save` writes
------------------------
* **Nodes**: node ``j`` is joint ``j`` (parents first), named like the joint, ``translation`` = rest offset
  (metres), rest ``rotation`` = identity (the root carries the up-axis turn); End Sites are leaf nodes
  ``<joint>_end``. All are joints of one skin; ``inverseBindMatrices`` invert the rest world transforms.
* **A bone mesh** (``bone_mesh=False`` leaves it out): an octahedron per bone, skinned rigidly to the
  bone's parent joint (``JOINTS_0``/``WEIGHTS_0``), with flat ``NORMAL``s, indices and one material.
* **One animation** (named after the file), LINEAR samplers at the frame times ``k / fps``: the rotation
  of every joint (sign-continuous over time), the translation of the root and of every other joint whose
  animated translation leaves its rest offset (Bandai-Namco files animate all joints' positions).

Conventions
-----------
Quaternions: skelanim ``(w, x, y, z)``, glTF ``(x, y, z, w)``, both Hamilton, acting on column vectors.
glTF is metres, +Y up, right-handed, facing +Z; a :class:`Motion` keeps its source's units and axes, so:

* **units**: ``scale`` is metres per source unit, a number or a name in :data:`UNITS`. By default it is
  ``UNITS[motion.metadata["units"]]`` when that names a unit, else it is guessed from the body's size ``h``,
  :attr:`Motion.stature` (the bone lengths from head to foot, or :attr:`Motion.height` where the joint names find
  no head or foot; not the posed height, since a crawl's is a third of the body's): the unit that brings ``h``
  closest, in ratio, to 1.7 m (:func:`~skelanim.core.units.guess_unit`). The boundaries lie halfway, in ratio,
  between neighbouring units' 1.7 m: ``h < 7.155``: metres; ``7.155 <= h < 44.90``: CMU units (the ASF length
  unit, ``1/0.45`` inch, kept by the CMU BVH conversions); ``44.90 <= h < 106.67``: inches;
  ``106.67 <= h < 537.6``: centimetres; above: millimetres.
* **up axis**: ``up_axis`` is ``"x"``, ``"y"`` or ``"z"``, or ``"-x"``, ``"-y"``, ``"-z"`` for a source whose
  heads point down its axis (default :meth:`Motion.up_direction`). A Z-up source is turned -90 degrees about X,
  ``(x, y, z) -> (x, z, -y)``; an X-up source +90 degrees about Z, ``(x, y, z) -> (-y, x, z)``; a -Y-up one a
  half turn about X (:func:`~skelanim.core.units.up_to_y_matrix`). The turn sits on the root joint, so world positions in the file are
  ``scale * C @ p``. The facing direction is kept as recorded. The scale, source up axis, fps, BVH
  channel layouts and End Site nodes are kept in ``extras`` (``{"skelanim": ...}``) for :func:`load`, and so is
  what the source said of the take that no glTF field holds (:data:`CLIP_METADATA`: DeepMimic's ``Loop`` and other
  keys, the file's own frame duration), so that a clip converted back writes them as they were.

What :func:`load` reads
-----------------------
The first skin's joints (without skins: the animated nodes) up to their common root node; nodes above it add
their rest transform (rotation, uniform scale, translation) to the root; joints must have unit scale. The
animation is sampled at a uniform frame rate (``extras``, else the keys' span over the frames of their median
spacing, read as a whole or NTSC rate where it is one, :func:`~skelanim.io.common.rate_within`) by STEP, LINEAR
(slerp) or CUBICSPLINE; unanimated joints keep their rest pose. The Motion is in metres, Y up, unless
``original_units=True`` undoes a skelanim export's conversion.

Before anything is read, the JSON is checked by :func:`skelanim.io.gltf_check.check_document`: a malformed file
(a negative or non-integer count, a null sampler or target, an index out of range, accessor data not aligned to
its components, a node transform of the wrong length, nodes that form a cycle or share a child, an
``extras.skelanim`` that is no object, ...) raises :class:`~skelanim.errors.FormatError` naming the file and the
JSON place, e.g. ``walk.gltf: accessors[6].count: expected a whole number >= 1, found -1``; so does an animation
channel whose data does not fit (wrong value type or count, key times that do not increase, values not finite).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from skelanim.core import rotations as rt
from skelanim.core.motion import MAX_FRAMES, Motion
from skelanim.core.skeleton import DEFAULT_JOINT_CHANNELS, DEFAULT_ROOT_CHANNELS, Skeleton
from skelanim.core.units import UNITS, canonical_unit, guess_unit, motion_unit, up_to_y_matrix
from skelanim.errors import FormatError, ShapeError, SkelanimError
from skelanim.io.atomic import atomic_open
from skelanim.io.common import rate_within, require_finite_motion
from skelanim.io.gltf_check import COMPONENT_TYPES as _COMPONENTS
from skelanim.io.gltf_check import WIDTHS as _WIDTH
from skelanim.io.gltf_check import check_document, check_track, json_document

__all__ = ["CLIP_METADATA", "UNITS", "export_scale", "guess_scale", "load", "node_trs", "save"]

_CODES = {np.dtype(v).type: k for k, v in _COMPONENTS.items()}
#: ``Motion.metadata`` keys about the take that a glTF file carries in its animation's extras and gives back.
CLIP_METADATA = ("loop", "deepmimic_extra", "frame_time", "frame_duration", "bvh_scene_root")
_ARRAY_BUFFER, _ELEMENT_ARRAY_BUFFER = 34962, 34963


# ------------------------------------------------------------------------------------------ conventions
def guess_scale(height: float) -> tuple[float, str]:
    """Metres per unit, and the unit's name, for a human ``height`` units tall (see the module docstring)."""
    name = guess_unit(height)
    return UNITS[name], name


def export_scale(motion: Motion, scale: float | str | None = None, *, path: Any = None) -> tuple[float, str | None]:
    """Metres per unit of ``motion`` and the unit's name (``None`` for a bare number), as :func:`save` uses.

    ``scale`` is a number, a unit name in :data:`UNITS` (or spelled out, ``"inches"``), or ``None``:
    ``motion.metadata["units"]`` if it names a unit, else :func:`guess_scale` of the body's size
    (:attr:`Motion.stature`: a crawl's posed height is a third of it). ``path``
    only goes into the :class:`ShapeError` raised for a bad ``scale``.
    """
    if scale is None:
        unit = motion_unit(motion.metadata.get("units"), motion.stature)
        return UNITS[unit], unit
    if isinstance(scale, str):
        if (named := canonical_unit(scale)) is not None:
            return UNITS[named], named
        raise ShapeError(f"unknown unit {scale!r}; expected a number or one of {', '.join(UNITS)}", path=path)
    if not (float(scale) > 0 and np.isfinite(float(scale))):
        raise ShapeError(f"scale must be a positive number of metres per unit, got {scale}", path=path)
    return float(scale), None


def _key_rate(keys: np.ndarray) -> float:
    """The frame rate of ``(K,)`` sorted key times (``K >= 2``) stored as float32: the step is the span over the
    frames of the median step's grid, known to two float32 spacings over that many frames, and read as a whole
    (or NTSC) rate where it is one within that (:func:`~skelanim.io.common.rate_within`, the BVH rule), so keys
    at ``k / 30`` give 30 fps, not 30.00003."""
    frames = float(np.round((keys[-1] - keys[0]) / np.median(np.diff(keys))))
    step = (keys[-1] - keys[0]) / max(frames, 1.0)
    return rate_within(step, 2.0 * float(np.spacing(np.float32(np.abs(keys).max()))) / max(frames, 1.0))


# ------------------------------------------------------------------------------------------------- save
@dataclass
class _Buffer:
    """One binary buffer growing by one bufferView and one accessor per array."""

    data: bytearray = field(default_factory=bytearray)
    views: list[dict[str, Any]] = field(default_factory=list)
    accessors: list[dict[str, Any]] = field(default_factory=list)

    def add(self, array: np.ndarray, kind: str, *, target: int | None = None, bounds: bool = False) -> int:
        """Append ``array`` (``(count, width)``, float32 or unsigned ints); return the accessor index.
        ``ShapeError`` for a float that did not fit float32 (an infinity, which glTF's JSON bounds and every
        reader refuse)."""
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise ShapeError("a value is beyond the range of glTF's 32-bit floats (|x| > 3.4e38): scale the motion down")
        array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
        view = {"buffer": 0, "byteOffset": len(self.data), "byteLength": array.nbytes}
        self.views.append(view if target is None else {**view, "target": target})
        self.data += array.tobytes() + b"\0" * (-array.nbytes % 4)
        accessor = {"bufferView": len(self.views) - 1, "componentType": _CODES[array.dtype.type],
                    "count": int(array.shape[0]), "type": kind}
        if bounds:
            flat = array.reshape(array.shape[0], -1)
            accessor.update(min=flat.min(0).tolist(), max=flat.max(0).tolist())
        self.accessors.append(accessor)
        return len(self.accessors) - 1


def _octahedra(starts: np.ndarray, ends: np.ndarray, height: float) -> tuple[np.ndarray, np.ndarray]:
    """Octahedra along segments ``(B, 3) -> (B, 3)``: positions and flat unit normals, ``(B * 24, 3)``;
    per bone 8 outward-facing (counter-clockwise) triangles; triangle ``2k + 1`` starts at the tip."""
    d = ends - starts
    e = d / (length := np.linalg.norm(d, axis=1, keepdims=True))
    u = np.cross(e, np.where(np.abs(e[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]]))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v = np.cross(e, u)
    width = np.minimum(0.1 * length, 0.03 * height)
    ring = [starts + 0.2 * d + width * (np.cos(a) * u + np.sin(a) * v) for a in np.arange(4) * np.pi / 2]
    faces = [f for k in range(4) for f in ((starts, ring[(k + 1) % 4], ring[k]), (ends, ring[k], ring[(k + 1) % 4]))]
    corners = np.stack([np.stack(f, axis=1) for f in faces], axis=1)  # (B, 8, 3, 3)
    normals = np.cross(corners[:, :, 1] - corners[:, :, 0], corners[:, :, 2] - corners[:, :, 0])
    normals /= np.linalg.norm(normals, axis=-1, keepdims=True)
    return corners.reshape(-1, 3), np.repeat(normals[:, :, None], 3, axis=2).reshape(-1, 3)


def _add_bone_mesh(doc: dict[str, Any], buf: _Buffer, edges: list[tuple[int, int]], rest: np.ndarray,
                   height: float, n_skin: int) -> None:
    """Add the bone mesh (mesh 0, material 0, for skin 0) to ``doc``: a bone per ``(parent, child)`` node
    edge, skinned to the parent; ``rest`` holds the nodes' rest world positions ``(N, 3)``."""
    seg = [(a, rest[a], rest[b]) for a, b in edges if np.linalg.norm(rest[b] - rest[a]) > 1e-4 * height]
    if not seg:  # a lone joint: a small upright marker
        seg = [(0, rest[0], rest[0] + [0.0, 0.1, 0.0])]
    positions, normals = _octahedra(np.stack([s[1] for s in seg]), np.stack([s[2] for s in seg]), max(height, 0.1))
    owners = np.repeat([s[0] for s in seg], 24)
    joints = np.pad(owners[:, None], ((0, 0), (0, 3))).astype(np.uint8 if n_skin < 256 else np.uint16)
    weights = np.repeat([[1.0, 0.0, 0.0, 0.0]], len(owners), axis=0).astype(np.float32)
    attributes = {
        "POSITION": buf.add(positions.astype(np.float32), "VEC3", target=_ARRAY_BUFFER, bounds=True),
        "NORMAL": buf.add(normals.astype(np.float32), "VEC3", target=_ARRAY_BUFFER),
        "JOINTS_0": buf.add(joints, "VEC4", target=_ARRAY_BUFFER),
        "WEIGHTS_0": buf.add(weights, "VEC4", target=_ARRAY_BUFFER),
    }
    index = np.arange(len(owners), dtype=np.uint16 if len(owners) < 65535 else np.uint32)[:, None]
    primitive = {"attributes": attributes, "indices": buf.add(index, "SCALAR", target=_ELEMENT_ARRAY_BUFFER)}
    doc["meshes"] = [{"name": "bones", "primitives": [{**primitive, "material": 0}]}]
    doc["materials"] = [{"name": "bone", "pbrMetallicRoughness": {
        "baseColorFactor": [0.8, 0.8, 0.75, 1.0], "metallicFactor": 0.0, "roughnessFactor": 0.6}}]


def _document(motion: Motion, name: str, scale: float, unit: str | None, up: int, mesh: bool,
              sign: float = 1.0) -> tuple[dict, bytes]:  # fmt: skip
    """The glTF JSON document and its binary buffer for ``motion`` (see the module docstring); up is
    ``sign * e[up]``."""
    from skelanim import __version__

    sk, n_joints, ends = motion.skeleton, motion.skeleton.num_joints, sorted(motion.skeleton.end_sites)
    rot_c = up_to_y_matrix(up, sign)
    q_c = rt.matrix_to_quat(rot_c)
    rotations = rt.quat_normalize(motion.rotations).clone()
    rotations[:, 0] = rt.quat_multiply(q_c, rotations[:, 0])
    rotations[0] = rt.quat_canonical(rotations[0])  # then flip signs so that neighbouring frames' dot >= 0
    rotations = rt.quat_continuous(rotations)
    translations, offsets = motion.local_translations() * scale, sk.offsets * scale
    translations[:, 0], offsets[0] = translations[:, 0] @ rot_c.T, rot_c @ offsets[0]
    # rest pose: every joint's world rotation is C (identity below the root), positions scale * C @ p
    source_rest = (sk.rest_positions(end_sites=True) + sk.offsets[0]) * scale
    rest = (source_rest @ rot_c.T).numpy()
    height = max(motion.height * scale, 1e-9)

    nodes: list[dict[str, Any]] = [{"name": joint, "translation": offsets[j].tolist(),
                                    "extras": {"skelanim": {"channels": list(sk.channels[j])}}}
                                   for j, joint in enumerate(sk.names)]
    if (up, sign) != (1, 1.0):
        nodes[0]["rotation"] = q_c[[1, 2, 3, 0]].tolist()
    nodes += [{"name": f"{sk.names[j]}_end", "translation": (sk.end_sites[j] * scale).tolist(),
               "extras": {"skelanim": {"end_site": True}}} for j in ends]
    edges = [(int(p), j) for j, p in enumerate(sk.parents) if p >= 0] + [(j, n_joints + k) for k, j in enumerate(ends)]
    for parent, child in edges:
        nodes[parent].setdefault("children", []).append(child)

    buf = _Buffer()
    ibm = np.zeros((len(nodes), 4, 4))  # inverse of [C, P; 0, 1] is [C^T, -C^T P; 0, 1] = [C^T, -scale p; 0, 1]
    ibm[:, :3, :3], ibm[:, :3, 3], ibm[:, 3, 3] = rot_c.T.numpy(), -source_rest.numpy(), 1.0
    skin = {"name": "skeleton", "joints": list(range(len(nodes))), "skeleton": 0,
            "inverseBindMatrices": buf.add(ibm.transpose(0, 2, 1).reshape(-1, 16).astype(np.float32), "MAT4"),
            "extras": {"skelanim": {"scale": scale, "unit": unit, "up_axis": ("-" if sign < 0 else "") + "xyz"[up]}}}
    doc: dict[str, Any] = {"asset": {"version": "2.0", "generator": f"skelanim {__version__}"}, "scene": 0}
    if mesh:
        _add_bone_mesh(doc, buf, edges, rest, height, len(nodes))
        nodes.append({"name": f"{name}_bones", "mesh": 0, "skin": 0})

    with np.errstate(over="ignore"):
        key_times = (np.arange(motion.num_frames) / motion.fps).astype(np.float32)
    if not np.isfinite(key_times).all():
        beyond = int(np.argmin(np.isfinite(key_times)))
        raise ShapeError(f"{motion.fps:g} fps is too slow for glTF's 32-bit key times: frame {beyond} lies beyond "
                         "their range")
    if motion.num_frames > 1 and not (np.diff(key_times) > 0).all():
        stuck = int(np.argmin(np.diff(key_times) > 0)) + 1
        raise ShapeError(f"{motion.fps:g} fps is too fast for glTF's 32-bit key times: frame {stuck} gets the time "
                         f"of frame {stuck - 1} ({float(key_times[stuck]):g} s)")  # fmt: skip
    times = buf.add(key_times[:, None], "SCALAR", bounds=True)
    quats = rotations[..., [1, 2, 3, 0]].numpy().astype(np.float32)
    moving = (translations - offsets).abs().amax(dim=(0, 2)) > 1e-9 * height
    outputs = [(j, "rotation", buf.add(quats[:, j], "VEC4")) for j in range(n_joints)]
    outputs += [(j, "translation", buf.add(translations[:, j].numpy().astype(np.float32), "VEC3"))
                for j in range(n_joints) if j == 0 or bool(moving[j])]
    animation = {
        "name": str(motion.metadata.get("name") or name),
        "samplers": [{"input": times, "output": out, "interpolation": "LINEAR"} for _, _, out in outputs],
        "channels": [{"sampler": k, "target": {"node": j, "path": p}} for k, (j, p, _) in enumerate(outputs)],
        "extras": {"skelanim": {"fps": motion.fps, **_clip_metadata(motion.metadata)}},
    }
    scene = {"name": name, "nodes": [0, len(nodes) - 1] if mesh else [0]}
    doc.update(scenes=[scene], nodes=nodes, skins=[skin], animations=[animation], accessors=buf.accessors,
               bufferViews=buf.views, buffers=[{"byteLength": len(buf.data)}])
    return doc, bytes(buf.data)


def save(motion: Motion, path: str | os.PathLike, *, scale: float | str | None = None,
         up_axis: int | str | None = None, bone_mesh: bool = True) -> None:
    """Write ``motion`` as ``.glb`` (binary) or ``.gltf`` (JSON, buffer embedded as base64), atomically.

    Parameters
    ----------
    motion:
        The motion: ``F >= 1`` frames of finite values.
    path:
        Output file; its suffix, ``.glb`` or ``.gltf``, picks the container.
    scale:
        Metres per unit of ``motion``: a number or a unit name in :data:`UNITS`; by default from
        ``motion.metadata["units"]``, else guessed from the height (:func:`export_scale`).
    up_axis:
        The motion's up axis, ``"x"``, ``"y"``, ``"z"`` (``"-x"`` ... for an upside-down source) or 0, 1, 2;
        default :meth:`Motion.up_direction`.
    bone_mesh:
        Whether to add the skinned bone mesh that makes the skeleton visible in viewers and engines.

    Raises
    ------
    ShapeError
        If the motion has no frames or a non-finite value (naming frame and joint), or a bad option.
    FormatError
        If the suffix is neither ``.glb`` nor ``.gltf``.
    """
    target = Path(path)
    if target.suffix.lower() not in (".glb", ".gltf"):
        raise FormatError(f"expected a .glb or .gltf file name, got suffix {target.suffix!r}", path=path)
    if motion.num_frames == 0:
        raise ShapeError("the motion has 0 frames; a glTF animation needs at least one keyframe", path=path)
    require_finite_motion(motion, path)
    if up_axis is None:
        up, sign = motion.up_direction()
    else:
        axis = str(up_axis).lower()
        sign, axis = (-1.0 if axis.startswith("-") else 1.0), axis.lstrip("+-")
        if axis not in ("0", "1", "2", "x", "y", "z"):
            raise ShapeError(f"up_axis must be 'x', 'y', 'z' (or '-x', ...) or 0, 1, 2, got {up_axis!r}", path=path)
        up = int(axis) if axis.isdigit() else "xyz".index(axis)
    factor, unit = export_scale(motion, scale, path=path)
    try:
        with np.errstate(over="ignore"):  # a float32 overflow is refused below, not warned about
            doc, blob = _document(motion, target.stem, factor, unit, up, bone_mesh, sign)
    except ShapeError as exc:
        raise ShapeError(exc.message, path=path) from None
    if target.suffix.lower() == ".gltf":
        doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(blob).decode("ascii")
        with atomic_open(target, "w") as handle:
            json.dump(doc, handle, separators=(",", ":"))
        return
    text = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 4)
    with atomic_open(target, "wb") as handle:
        handle.write(struct.pack("<4sII", b"glTF", 2, 12 + 8 + len(text) + 8 + len(blob)))
        handle.write(struct.pack("<I4s", len(text), b"JSON") + text)
        handle.write(struct.pack("<I4s", len(blob), b"BIN\0") + blob)


# ------------------------------------------------------------------------------------------------- load
def _clip_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``{"metadata": {...}}`` with the :data:`CLIP_METADATA` of ``metadata`` that JSON can hold, or ``{}``."""
    kept = {}
    for key in CLIP_METADATA:
        if key in metadata:
            try:
                json.dumps(metadata[key], allow_nan=False)
            except (TypeError, ValueError):
                continue
            kept[key] = metadata[key]
    return {"metadata": kept} if kept else {}


def _extras(item: Any) -> dict[str, Any]:
    """``item.extras["skelanim"]`` or ``{}``."""
    extras = getattr(item, "extras", None)
    return extras.get("skelanim") or {} if isinstance(extras, dict) else {}


def _buffers(gltf: Any, path: Path) -> list[bytes]:
    """The bytes of every buffer: the GLB chunk, a base64 data URI or a file beside ``path``."""
    out = []
    for i, buffer in enumerate(gltf.buffers):
        try:
            if buffer.uri is None:
                data = gltf.binary_blob() or b""
            elif buffer.uri.startswith("data:"):
                data = base64.b64decode(buffer.uri.split(",", 1)[1])
            else:
                data = (path.parent / urllib.parse.unquote(buffer.uri)).read_bytes()
        except (OSError, ValueError) as exc:
            raise FormatError(f"buffer {i} cannot be read: {exc}", path=path) from None
        if len(data) < (buffer.byteLength or 0):
            raise FormatError(f"buffer {i} holds {len(data)} bytes, its byteLength says {buffer.byteLength}", path=path)
        out.append(data)
    return out


def _read(gltf: Any, buffers: list[bytes], index: int, path: Path) -> np.ndarray:
    """Accessor ``index`` as a float64 ``(count, width)`` array (normalised integers mapped to [-1, 1])."""
    acc = gltf.accessors[index]
    if acc.sparse is not None:
        raise FormatError("sparse accessors are not supported", path=path, where=f"accessors[{index}]")
    dtype, width = np.dtype(_COMPONENTS[acc.componentType]), _WIDTH[acc.type]
    if acc.bufferView is None:
        return np.zeros((acc.count, width))
    view = gltf.bufferViews[acc.bufferView]
    stride = view.byteStride or dtype.itemsize * width
    start = (view.byteOffset or 0) + (acc.byteOffset or 0)
    end = start + stride * (acc.count - 1) + dtype.itemsize * width if acc.count else start
    if end > (view.byteOffset or 0) + view.byteLength or end > len(buffers[view.buffer]):
        raise FormatError(f"{acc.count} elements from byte {start} read past the end of bufferViews[{acc.bufferView}]"
                          f" (bytes {view.byteOffset or 0} to {(view.byteOffset or 0) + view.byteLength}) or of its"
                          f" buffer ({len(buffers[view.buffer])} bytes)", path=path, where=f"accessors[{index}]")
    with np.errstate(invalid="ignore"):  # a NaN bit pattern casts without a warning; check_track refuses it
        values = np.ndarray((acc.count, width), dtype, buffer=buffers[view.buffer], offset=start,
                            strides=(stride, dtype.itemsize)).astype(np.float64)
    return np.maximum(values / np.iinfo(dtype).max, -1.0) if acc.normalized and dtype.kind in "iu" else values


def node_trs(node: Any, path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A node's rest translation ``(3,)``, rotation ``(4,)`` (w, x, y, z) and scale ``(3,)``."""
    if node.matrix is not None:
        m = np.asarray(node.matrix, dtype=np.float64).reshape(4, 4).T  # column-major on disk
        s = np.linalg.norm(m[:3, :3], axis=0)
        if np.linalg.det(m[:3, :3]) <= 0:
            raise FormatError(f"node {node.name!r}: matrix is not a rotation with positive scale", path=path)
        return m[:3, 3].copy(), rt.matrix_to_quat(torch.from_numpy(m[:3, :3] / s)).numpy(), s
    q = np.asarray(node.rotation or [0.0, 0.0, 0.0, 1.0], dtype=np.float64)[[3, 0, 1, 2]]
    q /= np.linalg.norm(q)  # non-zero: checked by check_document
    return np.asarray(node.translation or [0.0] * 3, dtype=np.float64), q, np.asarray(node.scale or [1.0] * 3, float)


def _sample(times: np.ndarray, keys: np.ndarray, values: np.ndarray, mode: str, rotation: bool) -> np.ndarray:
    """Sampler output ``(K, C)`` (``(3K, C)`` for CUBICSPLINE) at ``times`` ``(F,)``, clamped -> ``(F, C)``."""
    if mode == "CUBICSPLINE":
        tangent_in, values, tangent_out = values[0::3], values[1::3], values[2::3]
    i = np.clip(np.searchsorted(keys, times, side="right") - 1, 0, len(keys) - 1)
    k = np.minimum(i + 1, len(keys) - 1)
    span = np.where(k > i, keys[k] - keys[i], 1.0)[:, None]
    u = np.clip((times[:, None] - keys[i, None]) / span, 0.0, 1.0)
    if mode == "STEP" or len(keys) == 1:
        out = values[i]
    elif mode == "CUBICSPLINE":
        h = (2 * u**3 - 3 * u**2 + 1, u**3 - 2 * u**2 + u, -2 * u**3 + 3 * u**2, u**3 - u**2)
        out = h[0] * values[i] + h[1] * span * tangent_out[i] + h[2] * values[k] + h[3] * span * tangent_in[k]
    elif rotation:
        return rt.quat_slerp(torch.from_numpy(values[i]), torch.from_numpy(values[k]), torch.from_numpy(u[:, 0])).numpy()
    else:
        out = (1 - u) * values[i] + u * values[k]
    return rt.quat_normalize(torch.from_numpy(out)).numpy() if rotation else out


def _skeleton_nodes(gltf: Any, anim: Any, path: Path) -> tuple[list[int], list[int], dict[int, int]]:
    """Joint nodes (parents first, root first), End Site nodes, and every node's parent."""
    nodes = gltf.nodes
    parent = {c: p for p, n in enumerate(nodes) for c in (n.children or [])}
    if gltf.skins:
        members = set(gltf.skins[0].joints)
    else:
        members = {c.target.node for c in (anim.channels if anim else []) if c.target.node is not None}
    if not members:
        raise FormatError("no skin and no animated nodes: nothing to read as a skeleton", path=path)
    chains = [[m] for m in members]
    for chain in chains:  # the nodes form trees (check_document), so every chain ends
        while chain[-1] in parent and len(chain) <= len(nodes):
            chain.append(parent[chain[-1]])
    common = set.intersection(*(set(c) for c in chains))
    if not common:
        raise FormatError("the skeleton's joints have no common root node", path=path)
    root = next(n for n in chains[0] if n in common)
    members |= {n for c in chains for n in c[: c.index(root) + 1]}
    order = sorted(members)  # file order when it is parents-first (as save writes it), else breadth-first
    position = {n: i for i, n in enumerate(order)}
    if order[0] != root or any(position[parent[n]] > i for i, n in enumerate(order[1:], 1)):
        order = [root]
        for n in order:
            order.extend(c for c in (nodes[n].children or []) if c in members)
    end_nodes = [n for n in order[1:] if _extras(nodes[n]).get("end_site") and not nodes[n].children]
    return [n for n in order if n not in end_nodes], end_nodes, parent


def load(path: str | os.PathLike, *, animation: int | str = 0, original_units: bool = False) -> Motion:
    """Read a skeleton and one of its animations from a ``.glb`` or ``.gltf`` file.

    Parameters
    ----------
    path:
        The file.
    animation:
        Index or name of the animation to read; a file without animations gives one rest-pose frame.
    original_units:
        For a file written by :func:`save`: undo its scale and up-axis turn, giving back the source's
        units and axes. Otherwise (and for other files) the Motion is in metres, Y up.

    Returns
    -------
    Motion
        ``joint_translations`` is set when a non-root joint's translation is animated; ``metadata`` has
        ``format="gltf"``, ``units``, ``animation`` (its name), ``gltf_scale``/``gltf_up_axis`` (exports).

    Raises
    ------
    FormatError
        If the file is not glTF 2.0 or is malformed (see the module docstring; node cycles included),
        lacks the animation asked for, has sparse accessors, joints with a scale, or no common root; the
        message names the file and the JSON place, node or accessor. No other exception type escapes
        for any file content.
    """
    import pygltflib

    path = Path(path)
    try:
        raw = path.read_bytes()
        check_document(json_document(raw), path)  # names the place of a problem, and rules out loops
        gltf = pygltflib.GLTF2.load_from_bytes(raw) if raw[:4] == b"glTF" else pygltflib.GLTF2.from_json(raw.decode())
        anims = gltf.animations or []
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", path=path) from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, OverflowError, RecursionError,
            struct.error) as exc:  # malformed input
        raise FormatError(f"not a glTF 2.0 file: {exc}", path=path) from None
    names = [a.name for a in anims]
    if (animation not in names) if isinstance(animation, str) else anims and not -len(anims) <= animation < len(anims):
        raise FormatError(f"no animation {animation!r}; the file has {names or 'none'}", path=path)
    a = (names.index(animation) if isinstance(animation, str) else animation % len(anims)) if anims else None
    try:
        return _motion(gltf, a, path, original_units)
    except SkelanimError as exc:
        if isinstance(exc, FormatError) and exc.path is not None:
            raise
        raise FormatError(exc.message, path=path, where=exc.where) from None
    except (ValueError, KeyError, IndexError, TypeError, AttributeError, ZeroDivisionError, OverflowError,
            MemoryError, RuntimeError, struct.error) as exc:  # a bug if reached: keep the one-error-type promise
        raise FormatError(f"could not read ({type(exc).__name__}: {exc})", path=path) from exc


def _motion(gltf: Any, a: int | None, path: Path, original_units: bool) -> Motion:
    """Animation ``a`` (``None``: a file without animations) of a document that passed :func:`check_document`."""
    nodes, anim = gltf.nodes, gltf.animations[a] if a is not None else None
    buffers = _buffers(gltf, path)
    joints, end_nodes, parent = _skeleton_nodes(gltf, anim, path)
    index = {n: j for j, n in enumerate(joints)}
    rest = [node_trs(nodes[n], path) for n in joints]
    for n, (_, _, s) in zip(joints, rest):
        if np.abs(s - 1).max() > 1e-4:
            raise FormatError(f"joint node {nodes[n].name!r} has scale {s.tolist()}; joints must not scale", path=path)
    base, above = np.eye(4), parent.get(joints[0])  # the rest transform of the nodes above the root
    while above is not None:
        t, q, s = node_trs(nodes[above], path)
        m = np.eye(4)
        m[:3, :3], m[:3, 3] = rt.quat_to_matrix(torch.from_numpy(q)).numpy() * s, t
        base, above = m @ base, parent.get(above)

    tracks: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, str]] = {}
    anim_channels, samplers = (anim.channels, anim.samplers) if anim else ([], [])
    for channel in anim_channels:
        node, kind = channel.target.node, channel.target.path
        if node in index and kind in ("rotation", "translation", "scale"):
            sampler, mode = samplers[channel.sampler], samplers[channel.sampler].interpolation or "LINEAR"
            keys, values = _read(gltf, buffers, sampler.input, path), _read(gltf, buffers, sampler.output, path)
            check_track(keys, values, kind=kind, mode=mode, place=f"animations[{a}].samplers[{channel.sampler}]",
                        path=path)
            keys = keys[:, 0]
            if kind == "scale" and np.abs((values[1::3] if mode == "CUBICSPLINE" else values) - 1).max() > 1e-4:
                raise FormatError(f"joint node {nodes[node].name!r} has animated scale", path=path)
            tracks[(index[node], kind)] = (keys, values, mode)
    keys = np.unique(np.concatenate([k for k, _, _ in tracks.values()])) if tracks else np.zeros(1)
    fps = float(_extras(anim).get("fps") or (_key_rate(keys) if len(keys) > 1 else 30.0))
    count = (keys[-1] - keys[0]) * fps + 1
    if not count <= MAX_FRAMES:
        raise FormatError(f"animations[{a}]: keys from {keys[0]:g} s to {keys[-1]:g} s at {fps:g} fps give "
                          f"{count:.3g} frames, more than {MAX_FRAMES}", path=path)
    times = keys[0] + np.arange(round(count - 1) + 1) / fps
    hi = np.clip(np.searchsorted(keys, times), 0, len(keys) - 1)
    nearest = np.where(np.abs(keys[np.maximum(hi - 1, 0)] - times) < np.abs(keys[hi] - times), keys[hi - 1], keys[hi])
    times = np.where(np.abs(nearest - times) < 1e-3 / fps, nearest, times)  # keys rounded to float32 stay keys

    rotations = np.repeat(np.stack([q for _, q, _ in rest])[None], len(times), axis=0)
    translations = np.repeat(np.stack([t for t, _, _ in rest])[None], len(times), axis=0)
    for (j, kind), (key, values, mode) in tracks.items():
        if kind == "rotation":
            rotations[:, j] = _sample(times, key, values, mode, True)[:, [3, 0, 1, 2]]
        elif kind == "translation":
            translations[:, j] = _sample(times, key, values, mode, False)
    offsets = np.stack([t for t, _, _ in rest] + [node_trs(nodes[n], path)[0] for n in end_nodes])

    info = _extras(gltf.skins[0]) if gltf.skins else {}
    metadata: dict[str, Any] = {"format": "gltf", "units": "m", "animation": anim.name if anim else None}
    carried = _extras(anim).get("metadata") if anim else None
    if isinstance(carried, dict):
        metadata.update({k: v for k, v in carried.items() if k in CLIP_METADATA})
    if info and original_units:  # undo save's conversion P = scale * C @ p
        undo = np.eye(4)
        recorded = str(info["up_axis"])
        turn = up_to_y_matrix("xyz".index(recorded.lstrip("-")), -1.0 if recorded.startswith("-") else 1.0)
        undo[:3, :3] = turn.numpy().T / float(info["scale"])
        base = undo @ base
        metadata["units"] = info.get("unit") or "unknown"
    elif info:
        metadata.update(gltf_scale=info.get("scale"), gltf_up_axis=info.get("up_axis"))
    factor = float(np.cbrt(np.linalg.det(base[:3, :3])))  # ``base`` turns and moves the root, scales all lengths
    rot_base = base[:3, :3] / factor if factor > 0 else np.zeros((3, 3))
    if not (factor > 0 and np.allclose(rot_base.T @ rot_base, np.eye(3), atol=1e-6)):
        raise FormatError("the nodes above the skeleton's root have a non-uniform scale, shear or mirror", path=path)
    rot = torch.from_numpy(rotations)
    rot[:, 0] = rt.quat_multiply(rt.matrix_to_quat(torch.from_numpy(rot_base)), rot[:, 0])
    translations, offsets = translations * factor, offsets * factor
    translations[:, 0] = translations[:, 0] @ rot_base.T + base[:3, 3]
    offsets[0] = rot_base @ offsets[0] + base[:3, 3]
    if not (np.isfinite(translations).all() and np.isfinite(offsets).all() and torch.isfinite(rot).all()):
        raise FormatError("the node transforms and animation give non-finite positions or rotations "
                          "(numbers too large?)", path=path)
    end_sites = {index[parent[n]]: torch.from_numpy(offsets[len(joints) + k]) for k, n in enumerate(end_nodes)}

    moved = [j == 0 or (j, "translation") in tracks for j in range(len(joints))]
    default = [DEFAULT_ROOT_CHANNELS if m else DEFAULT_JOINT_CHANNELS for m in moved]
    channels = [tuple(_extras(nodes[n]).get("channels") or default[j]) for j, n in enumerate(joints)]
    parents = np.array([-1] + [index[parent[n]] for n in joints[1:]])
    skeleton = Skeleton([nodes[n].name or f"node{n}" for n in joints], parents, torch.from_numpy(offsets[: len(joints)]),
                        channels, end_sites)  # fmt: skip
    return Motion(skeleton, rot, torch.from_numpy(translations[:, 0].copy()), fps,
                  joint_translations=torch.from_numpy(translations) if any(moved[1:]) else None, metadata=metadata)
