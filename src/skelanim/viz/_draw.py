"""Drawing helpers shared by :mod:`skelanim.viz.plots` and :mod:`skelanim.viz.video`.

Geometry only, no matplotlib: bones as index pairs (End Sites included), left/right sides, colours, the
horizontal direction of travel, a pinhole camera that projects world points ``(..., 3)`` to pixels, joint
lookup by name and the joint angles the plots show.

Camera convention: right-handed world, ``up`` one of the axes. The camera looks from ``eye`` at
``target``; its image x axis is ``cross(forward, up)`` (to the right), image y points down (pixel rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_rotvec
from skelanim.core.skeleton import Skeleton
from skelanim.core.units import horizontal_axes
from skelanim.errors import ShapeError, SkeletonError
from skelanim.metrics.gait import angle_between, bone_ancestor

#: Colours per motion (matplotlib's tab10), RGB 0-255.
PALETTE: tuple[tuple[int, int, int], ...] = (
    (31, 119, 180), (214, 39, 40), (44, 160, 44), (255, 127, 14), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
)  # fmt: skip


def color(index: int) -> tuple[int, int, int]:
    """The ``index``-th palette colour (cycled)."""
    return PALETTE[index % len(PALETTE)]


def shade(rgb: tuple[int, int, int], amount: float) -> tuple[int, int, int]:
    """Lighter (``amount > 0``, towards white) or darker (``< 0``, towards black) version of ``rgb``."""
    target = 255.0 if amount > 0 else 0.0
    a = abs(amount)
    r, g, b = (round(c + (target - c) * a) for c in rgb)
    return r, g, b


def unit_color(index: int, amount: float = 0.0) -> tuple[float, float, float]:
    """:func:`color` (optionally :func:`shade`-d) as matplotlib's 0-1 RGB."""
    c = shade(color(index), amount) if amount else color(index)
    return (c[0] / 255, c[1] / 255, c[2] / 255)


def default_label(motion: Motion, index: int) -> str:
    """A motion's name for legends: ``metadata["name"]``, else the stem of ``metadata["path"]``, else
    ``motion <index + 1>``."""
    if motion.metadata.get("name"):
        return str(motion.metadata["name"])
    if motion.metadata.get("path"):
        return Path(str(motion.metadata["path"])).stem
    return f"motion {index + 1}"


def check_motion(motion: Motion, label: str = "motion") -> None:
    """Raise :class:`ShapeError` for a motion without frames."""
    if motion.num_frames == 0:
        raise ShapeError(f"{label} has no frames; nothing to draw")


def labelled_motions(
    motions: Motion | Sequence[Motion], labels: Sequence[str] | None, *, task: str = "plot"
) -> tuple[list[Motion], list[str]]:
    """The motions as a list and their legend labels (given, else :func:`default_label`).

    Raises :class:`ShapeError` for no motions (``"nothing to <task>"``), a label count that differs from
    the motion count, or a motion without frames.
    """
    ms = [motions] if isinstance(motions, Motion) else list(motions)
    if not ms:
        raise ShapeError(f"nothing to {task}: no motions given")
    names = list(labels) if labels is not None else [default_label(m, i) for i, m in enumerate(ms)]
    if len(names) != len(ms):
        raise ShapeError(f"{len(names)} labels for {len(ms)} motions")
    for m, name in zip(ms, names):
        check_motion(m, name)
    return ms, names


@dataclass(frozen=True)
class Figure3D:
    """What is needed to draw a skeleton: positions with End Sites, bones and per-bone side.

    Attributes
    ----------
    positions:
        ``(F, P, 3)`` joint positions followed by End Site positions.
    bones:
        ``(B, 2)`` int index pairs into ``P`` (parent, child); pairs whose distance varies by more than
        a tenth of the height over the motion are left out (not a rigid bone).
    sides:
        ``(B,)`` int: ``-1`` right, ``0`` centre, ``+1`` left (from the child joint's name).
    up:
        The up axis (0, 1, 2), :meth:`Motion.up_axis <skelanim.core.motion.Motion.up_axis>`.
    height:
        Body height in file units, :attr:`Motion.height <skelanim.core.motion.Motion.height>`.
    floor:
        Lowest up-coordinate over the whole motion.
    centre:
        ``(F, 3)`` body centre: the mean of all joints but the root (the root is static in some files,
        e.g. Bandai-Namco's ``joint_Root``), or the root for a one-joint skeleton.
    facing:
        ``(3,)`` level unit vector, the way the body faces on average (left/right joints across, crossed with up:
        :func:`~skelanim.ops.normalize.facing_directions`), in the drawn (upright) axes; ``None`` where the
        skeleton has no left/right pairs or the facing is undefined.
    """

    positions: np.ndarray
    bones: np.ndarray
    sides: np.ndarray
    up: int
    height: float
    floor: float
    centre: np.ndarray
    facing: np.ndarray | None = None


def skeleton_figure(motion: Motion) -> Figure3D:
    """World positions and bones of ``motion`` for drawing (runs FK once)."""
    skeleton = motion.skeleton
    pos = motion.positions(end_sites=True).numpy()
    parents = skeleton.parents
    j = skeleton.num_joints
    bones = [(int(parents[c]), c) for c in range(1, j)]
    bones += [(jt, j + k) for k, jt in enumerate(sorted(skeleton.end_sites))]
    side_of = np.zeros(j, dtype=np.int64)
    for left, right in skeleton.left_right_pairs():
        side_of[left], side_of[right] = 1, -1
    # joints below a sided joint inherit its side (fingers, toes without markers)
    for c in range(1, j):
        if side_of[c] == 0:
            side_of[c] = side_of[parents[c]]
    sides = np.array([side_of[min(c, j - 1)] if c < j else side_of[p] for p, c in bones], dtype=np.int64)
    up, sign = motion.up_direction()
    height = motion.height
    if sign < 0:  # an upside-down source: a half turn about a horizontal axis puts its heads up
        flip = np.ones(3)
        flip[up], flip[(up + 1) % 3] = -1.0, -1.0
        pos = pos * flip
    if not height > 0:  # a skeleton of one joint (or all at one height): frame it by its spread, or one unit
        height = max(float(np.ptp(pos)), 1.0)
    centre = pos[:, 1:j].mean(axis=1) if j > 1 else pos[:, 0]
    edges = np.asarray(bones, dtype=np.int64).reshape(-1, 2)
    # a "bone" whose length changes by more than a tenth of the body is no bone: e.g. a static root
    # joint at the origin joined to a walking hip (Bandai-Namco's joint_Root)
    length = np.linalg.norm(pos[:, edges[:, 1]] - pos[:, edges[:, 0]], axis=-1)
    rigid = (length.max(axis=0) - length.min(axis=0)) <= 0.1 * height
    # nor is a bone from a joint above the body that carries it (the production rig's RL_BoneRoot on the floor)
    carriers = skeleton.chain(0, skeleton.pelvis)[:-1]
    drawn = rigid & ~np.isin(edges[:, 0], carriers)
    facing = None
    if skeleton.left_right_pairs() and motion.num_frames:
        from skelanim.errors import SkelanimError
        from skelanim.ops.normalize import facing_directions

        sample = torch.linspace(0, motion.num_frames - 1, min(64, motion.num_frames)).round().long()
        try:  # on up to 64 frames, as Motion.up_axis samples: the positions above are End Sites too, FK again is all
            mean = facing_directions(motion[sample]).mean(0).numpy() * (flip if sign < 0 else 1.0)
        except SkelanimError:  # left and right along the up axis (lying on the side): no facing
            mean = np.zeros(3)
        if np.linalg.norm(mean) > 1e-6:
            facing = mean / np.linalg.norm(mean)
    return Figure3D(pos, edges[drawn], sides[drawn], up, height, float(pos[..., up].min()), centre, facing)


def view_direction(figure: Figure3D) -> np.ndarray:
    """``(3,)`` the level direction a side view looks across (the pose strip projects onto it and up; the video's
    camera looks from its side, turned towards it): the main travel (:func:`travel_direction`) where the body's
    centre ends a height or more from where it began, else the way it faces (:attr:`Figure3D.facing`): in place
    (a bow, a wave) the path is sway, and had put the camera behind the actor in 15 of the 55 Bandai-Namco takes
    that travel under 30 cm, the strip seeing a bow from the front."""
    shift = figure.centre[-1] - figure.centre[0]
    shift[figure.up] = 0.0
    if figure.facing is None or np.linalg.norm(shift) >= figure.height:
        return travel_direction(figure.centre, figure.up)
    return figure.facing


def travel_direction(path: np.ndarray, up: int) -> np.ndarray:
    """``(3,)`` horizontal unit direction of the main travel (principal component of the horizontal
    ``(F, 3)`` path, e.g. :attr:`Figure3D.centre`); the first horizontal axis for a motion in place."""
    root = path.astype(float).copy()
    root[:, up] = 0.0
    centred = root - root.mean(axis=0)
    fallback = np.zeros(3)
    fallback[horizontal_axes(up)[0]] = 1.0
    if len(root) < 2 or np.abs(centred).max() < 1e-9:
        return fallback
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    d = vt[0]
    d[up] = 0.0
    n = np.linalg.norm(d)
    if n < 1e-9:
        return fallback
    d /= n
    if float((root[-1] - root[0]) @ d) < 0:  # point along the way travelled
        d = -d
    return d


def nice_step(x: float) -> float:
    """A round number (1, 2 or 5 times a power of ten) close to ``x`` > 0."""
    if not x > 0:
        return 1.0
    e = np.floor(np.log10(x))
    m = x / 10**e
    return float((1 if m < 1.5 else 2 if m < 3.5 else 5 if m < 7.5 else 10) * 10**e)


@dataclass(frozen=True)
class Camera:
    """A pinhole camera.

    Attributes
    ----------
    eye, target:
        ``(3,)`` world points.
    up:
        ``(3,)`` world up vector (unit).
    focal:
        Focal length in pixels.
    center:
        ``(2,)`` principal point in pixels (x right, y down).
    near:
        Points closer than this along the view axis are clipped.
    """

    eye: np.ndarray
    target: np.ndarray
    up: np.ndarray
    focal: float
    center: tuple[float, float]
    near: float

    def basis(self) -> np.ndarray:
        """``(3, 3)`` rows: camera right, camera up, forward (unit)."""
        fwd = self.target - self.eye
        fwd = fwd / np.linalg.norm(fwd)
        right = np.cross(fwd, self.up)
        right = right / max(np.linalg.norm(right), 1e-12)
        return np.stack([right, np.cross(right, fwd), fwd])

    def to_camera(self, points: np.ndarray) -> np.ndarray:
        """``(..., 3)`` world points to camera coordinates (x right, y up, z depth)."""
        return (points - self.eye) @ self.basis().T

    def project(self, cam: np.ndarray) -> np.ndarray:
        """``(..., 3)`` camera coordinates to ``(..., 2)`` pixels (depth clamped to ``near``)."""
        z = np.maximum(cam[..., 2], self.near)
        return np.stack([self.center[0] + self.focal * cam[..., 0] / z,
                         self.center[1] - self.focal * cam[..., 1] / z], axis=-1)

    def segments(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Project world segments ``a -> b`` (``(N, 3)`` each), clipping them at the near plane.

        Returns
        -------
        pa, pb:
            ``(M, 2)`` pixel end points of the visible segments.
        depth:
            ``(M,)`` mean camera depth of each visible segment (for painter's ordering).
        keep:
            ``(N,)`` bool, which input segments are visible (``M = keep.sum()``).
        """
        ca, cb = self.to_camera(a), self.to_camera(b)
        keep = (ca[:, 2] > self.near) | (cb[:, 2] > self.near)
        ca, cb = ca[keep], cb[keep]
        dz = cb[:, 2] - ca[:, 2]
        t = (self.near - ca[:, 2]) / np.where(np.abs(dz) < 1e-12, 1e-12, dz)
        on_near = ca + (cb - ca) * t[:, None]
        ca = np.where((ca[:, 2] < self.near)[:, None], on_near, ca)
        cb = np.where((cb[:, 2] < self.near)[:, None], on_near, cb)
        return self.project(ca), self.project(cb), 0.5 * (ca[:, 2] + cb[:, 2]), keep


def follow_camera(
    target: np.ndarray,
    view_dir: np.ndarray,
    up: int,
    *,
    distance: float,
    elevation_deg: float,
    size: tuple[int, int],
    fov_deg: float = 35.0,
) -> Camera:
    """A camera at ``distance`` from ``target``, seen from the horizontal direction ``view_dir`` (unit,
    from target to eye) raised by ``elevation_deg``; the field of view spans the smaller image side."""
    up_vec = np.zeros(3)
    up_vec[up] = 1.0
    el = np.radians(elevation_deg)
    eye = target + distance * (np.cos(el) * view_dir + np.sin(el) * up_vec)
    w, h = size
    focal = 0.5 * min(w, h) / np.tan(np.radians(fov_deg) / 2)
    return Camera(eye, target, up_vec, float(focal), (w / 2.0, h / 2.0), 0.05 * distance)


def floor_grid(center: np.ndarray, up: int, floor: float, step: float, half: float) -> tuple[np.ndarray, np.ndarray]:
    """Grid lines on the floor plane around ``center``: ``(N, 3)`` starts and ends, lines every ``step``
    within ``half`` of the centre (aligned to multiples of ``step`` so the grid stays put in the world)."""
    a, b = horizontal_axes(up)
    lo_a, hi_a = center[a] - half, center[a] + half
    lo_b, hi_b = center[b] - half, center[b] + half
    starts, ends = [], []
    for axis, other, lo, hi, olo, ohi in ((a, b, lo_a, hi_a, lo_b, hi_b), (b, a, lo_b, hi_b, lo_a, hi_a)):
        for v in np.arange(np.ceil(lo / step), np.floor(hi / step) + 1) * step:
            p, q = np.zeros(3), np.zeros(3)
            p[axis] = q[axis] = v
            p[other], q[other] = olo, ohi
            p[up] = q[up] = floor
            starts.append(p)
            ends.append(q)
    return np.asarray(starts).reshape(-1, 3), np.asarray(ends).reshape(-1, 3)


# ----------------------------------------------------------------------------------- joints and angles
def resolve_joints(skeleton: Skeleton, joints: list[str | int] | tuple[str | int, ...]) -> list[int]:
    """Joint indices for names or indices, reporting *every* unknown name at once.

    Raises
    ------
    SkeletonError
        Naming the unknown joint(s) and listing the skeleton's joints.
    """
    bad = [str(j) for j in joints if not isinstance(j, (int, np.integer)) and j not in skeleton.names]
    bad += [str(j) for j in joints if isinstance(j, (int, np.integer)) and not 0 <= int(j) < skeleton.num_joints]
    if bad:
        plural = "s" if len(bad) > 1 else ""
        raise SkeletonError(
            f"unknown joint{plural} {', '.join(repr(b) for b in bad)}; available: {', '.join(skeleton.names)}"
        )
    return [int(j) if isinstance(j, (int, np.integer)) else skeleton.names.index(j) for j in joints]


def _bone_child(skeleton: Skeleton, joint: int) -> int | None:
    """The first descendant (first child first) at a rest distance above a thousandth of the height, else the joint's End Site
    as index ``J + k`` (``k`` its rank in ``sorted(end_sites)``), else ``None``."""
    tiny = 1e-3 * max(skeleton.height(), 1e-9)  # a twist bone 2e-4 cm from its joint is no bone (the rig's forearm)
    rest = skeleton.rest_positions()
    stack = skeleton.children(joint)
    while stack:
        c = stack.pop(0)
        if float((rest[c] - rest[joint]).norm()) > tiny:
            return c
        stack = skeleton.children(c) + stack
    if joint in skeleton.end_sites and float(skeleton.end_sites[joint].norm()) > tiny:
        return skeleton.num_joints + sorted(skeleton.end_sites).index(joint)
    return None


def joint_flexion(motion: Motion, joints: list[int], *, positions: np.ndarray | None = None) -> np.ndarray:
    """Bone flexion at joints: the angle between the bone arriving at the joint (from its nearest
    ancestor at non-zero distance) and the bone leaving it (to its first child at non-zero distance, or
    its End Site).

    Parameters
    ----------
    motion:
        The motion.
    joints:
        ``K`` joint indices.
    positions:
        ``(F, J+E, 3)`` ``motion.positions(end_sites=True)`` if already computed.

    Returns
    -------
    ``(F, K)`` degrees in ``[0, 180]``: 0 when the two bones are aligned (a straight limb).

    Raises
    ------
    SkeletonError
        For the root or a leaf without End Site (no bone on one side); use :func:`local_rotation_angle`.
    """
    skeleton = motion.skeleton
    pos = motion.positions(end_sites=True).numpy() if positions is None else positions
    out = np.zeros((pos.shape[0], len(joints)))
    for k, j in enumerate(joints):
        a, c = bone_ancestor(skeleton, j), _bone_child(skeleton, j)
        if a is None or c is None:
            what = "parent" if a is None else "child"
            raise SkeletonError(
                f"joint {skeleton.names[j]!r} has no {what} bone, so no flexion angle; use the local rotation angle"
            )
        out[:, k] = angle_between(pos[:, j] - pos[:, a], pos[:, c] - pos[:, j])
    return out


def local_rotation_angle(motion: Motion, joints: list[int]) -> np.ndarray:
    """``(F, K)`` angle in degrees (``[0, 180]``) of each joint's local rotation (relative to its rest pose)."""
    rotvec = quat_to_rotvec(motion.rotations[:, joints])
    return np.degrees(torch.linalg.vector_norm(rotvec, dim=-1).numpy())
