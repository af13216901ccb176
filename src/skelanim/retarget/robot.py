r"""Retargeting onto the DeepMimic humanoid robot and writing DeepMimic motion files.

The humanoid (``humanoid.urdf`` at pybullet's ``globalScaling`` 0.25, :func:`skelanim.io.deepmimic.humanoid_skeleton`)
has spherical hips, ankles, shoulders, chest and neck, and **1-DoF knees and elbows** about their local +z,
with limits (knees ``[-3.14, 0]``, elbows ``[0, 3.14]``). A general retarget gives knees and elbows
rotations off that axis, which the file format would silently drop. :func:`make_feasible` therefore
re-solves each limb as a hinge chain, keeping where the retarget put the ankle (wrist) and the limb's
bending plane:

* the hinge angle comes from the hip-ankle distance (law of cosines), its sign from the joint's limits;
* the hip (shoulder) rotation is the frame alignment carrying the rest chain's hip-to-ankle vector and
  hinge axis onto the wanted hip-to-ankle vector and the retarget's hinge axis (Gram-Schmidt);
* the ankle keeps its world orientation.

Then the clip is moved vertically so that, in nine frames out of ten, the lowest corner of the foot boxes
(the URDF's ankle collision boxes) is on or above the ground plane ``y = 0`` and the stance feet touch it;
the remaining frames are lifted just enough that no frame goes below the ground.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from skelanim.core.kinematics import end_site_positions
from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, matrix_to_quat, quat_to_matrix, rot6d_to_matrix
from skelanim.io import deepmimic
from skelanim.io.deepmimic import URDF_SCALE, humanoid_skeleton

if TYPE_CHECKING:
    from skelanim.retarget.rig import CanonicalRig

__all__ = ["FOOT_BOX", "HINGES", "hinge_limits", "humanoid_rigs", "make_feasible", "save_deepmimic", "to_deepmimic"]

#: (upper joint, hinge joint, end joint or None for the hinge's End Site, sign of the bend).
HINGES: tuple[tuple[str, str, str | None, float], ...] = (
    ("right_hip", "right_knee", "right_ankle", -1.0),
    ("left_hip", "left_knee", "left_ankle", -1.0),
    ("right_shoulder", "right_elbow", None, 1.0),
    ("left_shoulder", "left_elbow", None, 1.0),
)
#: The ankle collision box of the URDF (centre and half extents in the ankle frame, metres, scaled).
FOOT_BOX: tuple[tuple[float, float, float], tuple[float, float, float]] = (
    (0.18 * URDF_SCALE, -0.09 * URDF_SCALE, 0.0),
    (0.354 * URDF_SCALE, 0.11 * URDF_SCALE, 0.18 * URDF_SCALE),
)


def hinge_limits(urdf: str | os.PathLike | None = None) -> dict[str, tuple[float, float]]:
    """``{joint: (lower, upper)}`` of the revolute joints of the humanoid URDF (default: the bundled copy)."""
    path = Path(urdf) if urdf is not None else deepmimic.bundled_urdf_path()
    limits = {"right_knee": (-3.14, 0.0), "left_knee": (-3.14, 0.0), "right_elbow": (0.0, 3.14), "left_elbow": (0.0, 3.14)}
    if path is None:
        return limits
    raw = path.read_bytes()
    end = raw.find(b"</robot>")
    root = ET.fromstring(raw[: end + len(b"</robot>")] if end >= 0 else raw)
    for joint in root.iter("joint"):
        limit = joint.find("limit")
        if joint.get("type") == "revolute" and limit is not None and joint.get("name") in limits:
            limits[joint.get("name", "")] = (float(limit.get("lower", "-3.14")), float(limit.get("upper", "3.14")))
    return limits


def _hinge(world: Tensor, pos: Tensor, o_mid: Tensor, o_end: Tensor, upper: int, end: Tensor, sign: float,
           limits: tuple[float, float]) -> tuple[Tensor, Tensor]:  # fmt: skip
    """New world rotation ``(F, 3, 3)`` of the ``upper`` joint and hinge angles ``(F,)`` of one limb whose
    hinge hangs at ``o_mid`` from it and whose end hangs at ``o_end`` from the hinge; ``end`` ``(F, 3)`` is
    where the end should be."""
    a, b = float(o_mid.norm()), float(o_end.norm())
    want = end - pos[:, upper]
    d = want.norm(dim=-1).clamp(abs(a - b) + 1e-9, a + b - 1e-9)
    cos_inner = ((a * a + b * b - d * d) / (2 * a * b)).clamp(-1.0, 1.0)
    angle = (sign * (torch.pi - torch.acos(cos_inner))).clamp(*limits)
    z = torch.tensor([0.0, 0.0, 1.0], dtype=world.dtype)
    hinge = quat_to_matrix(axis_angle_to_quat(z, angle))
    rest_vec = o_mid + (hinge @ o_end)
    local_frame = rot6d_to_matrix(torch.cat([rest_vec, z.expand_as(rest_vec)], dim=-1))
    axis_world = world[:, upper] @ z
    world_frame = rot6d_to_matrix(torch.cat([want, axis_world], dim=-1))
    return world_frame @ local_frame.transpose(-1, -2), angle


def make_feasible(motion: Motion, limits: Mapping[str, tuple[float, float]] | None = None) -> Motion:
    """Hinge-exact knees and elbows within their limits, and feet above the ground (see the module docstring).

    Parameters
    ----------
    motion : Motion
        A motion on :func:`~skelanim.io.deepmimic.humanoid_skeleton` (``F`` frames).
    limits : mapping, optional
        ``{joint: (lower, upper)}`` hinge limits (default :func:`hinge_limits`).

    Returns
    -------
    Motion
        The same skeleton; knee and elbow rotations exactly about +z.
    """
    limits = limits or hinge_limits()
    sk = motion.skeleton
    world, pos = motion.world()
    world = world.clone()
    names = sk.names
    rot = motion.rotations.clone()
    for upper_name, mid_name, end_name, sign in HINGES:
        upper, mid = names.index(upper_name), names.index(mid_name)
        if end_name is None:
            end = end_site_positions(world, pos, [mid], sk.end_sites[mid][None])[:, 0]
        else:
            end = pos[:, names.index(end_name)]
        o_end = sk.end_sites[mid] if end_name is None else sk.offsets[names.index(end_name)]
        new_upper, angle = _hinge(world, pos, sk.offsets[mid], o_end, upper, end, sign, limits[mid_name])
        parent = int(sk.parents[upper])
        rot[:, upper] = matrix_to_quat(world[:, parent].transpose(-1, -2) @ new_upper)
        rot[:, mid] = axis_angle_to_quat(torch.tensor([0.0, 0.0, 1.0], dtype=rot.dtype), angle)
        new_mid = new_upper @ quat_to_matrix(rot[:, mid])
        if end_name is not None:
            e = names.index(end_name)
            rot[:, e] = matrix_to_quat(new_mid.transpose(-1, -2) @ world[:, e])
        world[:, upper], world[:, mid] = new_upper, new_mid
    fixed = motion.copy(rotations=rot, metadata=dict(motion.metadata))
    world, pos = fixed.world()
    centre, half = (torch.tensor(v, dtype=pos.dtype) for v in FOOT_BOX)
    signs = torch.tensor([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=pos.dtype)
    corners = centre + signs * half  # (8, 3)
    lows = []
    for foot in ("right_ankle", "left_ankle"):
        j = names.index(foot)
        pts = pos[:, j, None] + (world[:, j, None] @ corners[..., None])[..., 0]
        lows.append(pts[..., 1].min(-1).values)
    lowest = torch.stack(lows, -1).min(-1).values
    ground = torch.quantile(lowest, 0.1)  # stance: the lowest foot point of most frames on the ground
    root = fixed.root_positions.clone()
    root[:, 1] += torch.relu(ground - lowest) - ground  # and no frame below it
    return fixed.copy(root_positions=root)


def humanoid_rigs(
    motion: Motion,
    *,
    source_map: Mapping[str, Any] | str | os.PathLike | None = None,
    target_map: Mapping[str, Any] | str | os.PathLike | None = None,
    urdf: str | os.PathLike | None = None,
    calibrate: bool = True,
    source: str | None = None,
    target: str | None = None,
) -> tuple[CanonicalRig, CanonicalRig]:
    """The rigs :func:`to_deepmimic` retargets between: ``motion``'s skeleton (calibrated on ``motion`` where its
    zero pose is no body pose, if ``calibrate``) and the humanoid of ``urdf``, each with its mapping (e.g. to show
    it). ``source`` and ``target``: file names for error messages.

    Raises
    ------
    MappingError, FormatError
        A skeleton that cannot be mapped, a bad mapping or mapping file (the target's named as ``--target-map``).
    """
    from skelanim.retarget.retargeter import make_rig, upright

    # calibrated on the motion as it stands in the Y-up canonical space
    source_rig = make_rig(upright(motion)[0] if calibrate else motion.skeleton, source_map, source=source)
    target_rig = make_rig(humanoid_skeleton(urdf), target_map, source=target, option="--target-map")
    return source_rig, target_rig


def to_deepmimic(
    motion: Motion,
    *,
    method: str = "copy",
    source_map: Mapping[str, Any] | str | os.PathLike | None = None,
    target_map: Mapping[str, Any] | str | os.PathLike | None = None,
    model: Any = None,
    urdf: str | os.PathLike | None = None,
    calibrate: bool = True,
    device: str | None = None,
) -> Motion:
    """Retarget ``motion`` onto the DeepMimic humanoid and make it feasible for the robot.

    Parameters
    ----------
    motion : Motion
        Any mappable source motion.
    method : str
        A :data:`~.retargeter.METHODS` entry.
    source_map : mapping or path, optional
        User mapping for the source.
    target_map : mapping or path, optional
        User mapping for the humanoid (default: its joints found by name, :func:`~.mapping.map_skeleton`).
    model : optional
        NKN model (folder or loaded) for ``method="nkn"``.
    urdf : path, optional
        The humanoid URDF (default: the bundled copy of pybullet's).
    calibrate : bool
        Calibrate the source's bone frames on the motion itself where its zero pose is no body pose
        (:func:`~.rig.calibrate_rig`; the humanoid's is one).
    device : str, optional
        Where the NKN runs (:class:`~.retargeter.Retargeter`'s ``device``).

    Returns
    -------
    Motion
        On :func:`~skelanim.io.deepmimic.humanoid_skeleton`, metres, Y up, the source's frame rate;
        ``metadata["loop"] = "none"``.
    """
    from skelanim.retarget.retargeter import Retargeter, world_turn

    source, target = humanoid_rigs(motion, source_map=source_map, target_map=target_map, urdf=urdf,
                                   calibrate=calibrate)  # fmt: skip
    out = Retargeter(source, target, method, model=model, device=device, source_turn=world_turn(motion))(motion)
    out.metadata["loop"] = "none"
    return make_feasible(out, hinge_limits(urdf))


def save_deepmimic(motion: Motion, path: str | os.PathLike) -> None:
    """Write a humanoid motion as a DeepMimic clip (:func:`skelanim.io.deepmimic.save`, atomic)."""
    deepmimic.save(motion, path)
