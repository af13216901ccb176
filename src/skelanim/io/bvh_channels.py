"""The channel columns of a BVH motion and the values written to them (:mod:`skelanim.io.bvh` writes with these).

Every joint's channels (any order, any subset of the six) are columns of the MOTION block: :func:`channel_layout`
says which. Writing, rotations go back to Euler angles in each joint's order, per joint, the solution and turn count
chosen for continuity over frames, and the file's own angles kept where a rotation is still the one read
(:func:`frame_values`; the rules are in :mod:`skelanim.io.bvh`'s "Writing").
"""

from __future__ import annotations

import numpy as np
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import euler_to_quat, quat_to_euler
from skelanim.core.skeleton import DEFAULT_ROOT_CHANNELS, POSITION_CHANNELS
from skelanim.io.common import warn_at_caller

__all__ = ["EULER_JOINTS_AT_ONCE", "channel_layout", "frame_values", "padded_order", "with_root_channels"]

_AXES = "XYZ"


def padded_order(rotation_axes: str) -> str:
    """A 3-letter Euler order starting with ``rotation_axes`` (0-3 letters, no letter twice in a row);
    the padding axes get angle 0, so they do not change the rotation."""
    order = rotation_axes
    for axis in _AXES:
        if len(order) == 3:
            break
        if axis not in order and (not order or order[-1] != axis):
            order += axis
    return order


def channel_layout(channels: list[tuple[str, ...]]) -> tuple[list[int], list[list[tuple[int, int]]],
                                                               list[list[int]], list[str]]:
    """Column bookkeeping: first column of each joint, ``(axis, column)`` of position channels,
    columns of rotation channels (in order) and each joint's rotation axes (e.g. ``"ZXY"``)."""
    first, positions, rotations, axes = [], [], [], []
    col = 0
    for chans in channels:
        first.append(col)
        pos, rot, letters = [], [], ""
        for name in chans:
            if name.endswith("position"):
                pos.append((_AXES.index(name[0]), col))
            else:
                rot.append(col)
                letters += name[0]
            col += 1
        positions.append(pos)
        rotations.append(rot)
        axes.append(letters)
    return first, positions, rotations, axes


_POSITION_CHANNELS = POSITION_CHANNELS
_ROTATION_CHANNELS = DEFAULT_ROOT_CHANNELS[3:]  # a root that had none gets the default root's: Z X Y


def with_root_channels(motion: Motion, precision: int) -> Motion:
    """``motion`` with root channels that hold its motion, where the root's own cannot.

    A root without position channels stays at its ``OFFSET`` when read, and one without rotation channels unturned;
    once an op has moved it (``ops.to_origin``, ``ops.normalize``, ``ops.face_forward`` on a file whose root had
    channels for neither, or a channel-less ``Reference`` joint above the hips) those channels are what the file
    needs. So the root gets all three position channels, first, where its positions leave the ``OFFSET`` on an axis
    without one by half a printed unit (``0.5 * 10**-precision``) or more, and ``Zrotation Xrotation Yrotation``
    where it has no rotation channels and turns (a quaternion component off identity by more than 1e-9, the
    threshold of the writer's warning). Its other channels keep their order; the other joints' are untouched, and
    the values the motion was read with (``metadata["bvh_values"]``) move with their columns (a new column was 0 in
    the file, as the root did not move or turn there). A motion whose root needs nothing comes back as it is.
    """
    skeleton = motion.skeleton
    channels = tuple(skeleton.channels[0])
    if not motion.num_frames:
        return motion
    held = {_POSITION_CHANNELS.index(c) for c in channels if c in _POSITION_CHANNELS}
    missing = [a for a in range(3) if a not in held]
    moved = bool(missing) and float((motion.root_positions[:, missing].detach().cpu().double()
                                     - skeleton.offsets[0, missing].double()).abs().max()) >= 0.5 * 10.0**-precision
    rotation_channels = tuple(c for c in channels if c.endswith("rotation"))
    turned = not rotation_channels and float(motion.rotations[:, 0, 1:].abs().max()) > 1e-9
    if not (moved or turned):
        return motion
    if moved:  # all three position channels first, then the rotation channels (the root's own, or new ones)
        new = _POSITION_CHANNELS + (_ROTATION_CHANNELS if turned else rotation_channels)
    else:  # rotation channels after the root's own position channels
        new = channels + _ROTATION_CHANNELS
    metadata = dict(motion.metadata)
    source = metadata.get("bvh_values")
    if isinstance(source, np.ndarray) and source.ndim == 2 and source.shape[1] == sum(map(len, skeleton.channels)):
        kept = [channels.index(c) if c in channels else -1 for c in new]
        root = np.stack([source[:, k] if k >= 0 else np.zeros(len(source)) for k in kept], axis=1)
        metadata["bvh_values"] = np.concatenate([root, source[:, len(channels):]], axis=1)
    else:
        metadata.pop("bvh_values", None)
    fitted = type(skeleton)(skeleton.names, skeleton.parents, skeleton.offsets, [new, *skeleton.channels[1:]],
                            skeleton.end_sites)
    return motion.copy(skeleton=fitted, metadata=metadata)


#: Joints whose Euler angles are worked out together when writing (each joint's continuity is its own).
EULER_JOINTS_AT_ONCE = 4


def _wrap(deg: np.ndarray) -> np.ndarray:
    """Angles in degrees wrapped into ``[-180, 180)`` (a floor: seven times faster than ``%`` on floats)."""
    return deg - 360.0 * np.floor((deg + 180.0) / 360.0)


def _forward_fill(values: np.ndarray, known: np.ndarray) -> np.ndarray:
    """``values`` ``(F, ...)`` where ``known``, else the last known value before (0 before the first)."""
    frames = np.arange(known.shape[0]).reshape((-1,) + (1,) * (known.ndim - 1))
    last = np.maximum.accumulate(np.where(known, frames, -1), axis=0)
    filled = np.take_along_axis(values, np.maximum(last, 0).reshape(last.shape + (1,) * (values.ndim - last.ndim)),
                                axis=0)
    return np.where((last >= 0).reshape(filled.shape[:last.ndim] + (1,) * (values.ndim - last.ndim)), filled, 0)


def _continuous_euler(
    q: torch.Tensor, order: str, n_rot: int, ref: np.ndarray | None, precision: int = 6
) -> np.ndarray:
    """Euler angles in degrees for quaternions ``q`` ``(F, Jg, 4)``, continuous over frames.

    A 3-axis order has two solutions per rotation, ``(a, b, c)`` and ``(a+180, 180-b, c+180)``
    (Tait-Bryan) or ``(a+180, -b, c+180)`` (proper Euler), and every angle is defined modulo 360. Where
    ``ref`` ``(F, Jg, 3)`` (the angles the motion was read with) describes the same rotation, to within half a
    printed unit (``0.5 * 10**-precision`` degrees of rotation angle, at least 1e-13 radians of float64 noise),
    those angles are used (also at gimbal lock, where the outer angles are not otherwise defined), and the
    frames after it take the solution and turns nearest to it, so a file read and written comes back with its
    own numbers; elsewhere each frame continues the previous one: the solution that moves less (a parity
    cumsum, as both solution sequences move by the same amount between frames), then :func:`numpy.unwrap`.
    """
    matched = np.zeros(q.shape[:2], dtype=bool)
    if ref is not None:
        q_ref = euler_to_quat(torch.from_numpy(np.radians(ref)), order).numpy()
        q_now = q.detach().cpu().numpy()
        sign = np.where((q_ref * q_now).sum(-1, keepdims=True) < 0, -1.0, 1.0)
        # rotation angle between them, 4 asin(|q_ref - q| / 2): well conditioned where 2 acos(q_ref . q) is not
        angle = 4.0 * np.arcsin(np.minimum(np.linalg.norm(q_ref - sign * q_now, axis=-1) / 2.0, 1.0))
        matched = angle <= max(np.radians(0.5 * 10.0**-precision), 1e-13)
        if matched.all():  # every rotation is still the one read: the file's own angles, as the end below gives
            return ref.copy()
    with torch.inference_mode():  # numbers only (a third faster than with autograd's bookkeeping)
        principal = np.degrees(quat_to_euler(q.detach().contiguous(), order).numpy())  # (F, Jg, 3)
    n_frames = principal.shape[0]
    alt = principal + np.array([180.0, 0.0, 180.0])
    alt[..., 1] = (-principal[..., 1]) if order[0] == order[2] else (180.0 - principal[..., 1])
    alt = _wrap(alt)
    if n_rot < 3:  # the padding axes must stay at 0: take the solution where they are
        padding = slice(n_rot, 3)
        use_alt = np.abs(_wrap(alt[..., padding])).sum(-1) < np.abs(_wrap(principal[..., padding])).sum(-1)
    else:
        switch = np.zeros(principal.shape[:2], dtype=np.int64)
        if n_frames > 1:
            step_same = np.abs(_wrap(principal[1:] - principal[:-1])).sum(-1)
            step_switch = np.abs(_wrap(alt[1:] - principal[:-1])).sum(-1)
            switch[1:] = step_switch < step_same - 1e-9
        parity = np.cumsum(switch, axis=0) % 2
        if ref is not None:
            ref_alt = np.abs(_wrap(alt - ref)).sum(-1) < np.abs(_wrap(principal - ref)).sum(-1)
            parity = parity ^ _forward_fill(ref_alt.astype(np.int64) ^ parity, matched)
        use_alt = parity.astype(bool)
    chosen = np.where(use_alt[..., None], alt, principal)
    unwrapped = np.unwrap(chosen, period=360.0, axis=0)
    if ref is not None:
        turns = 360.0 * np.round((ref - unwrapped) / 360.0)
        unwrapped = unwrapped + _forward_fill(turns, matched)
        # a rotation still the one read is written with the file's angles: at gimbal lock (middle angle +-90
        # or 0/180) a whole line of triples gives it, and only the file's own splits the outer angles its way
        unwrapped = np.where(matched[..., None], ref, unwrapped)
    return unwrapped


def frame_values(motion: Motion, order: list[int], precision: int) -> np.ndarray:
    """``(F, C)`` channel values in file order (joints in ``order``), degrees for rotations."""
    skeleton = motion.skeleton
    n_frames = motion.num_frames

    def translation(j: int) -> np.ndarray:
        """``(F, 3)`` joint ``j``'s translation in its parent's frame (the root's: its position); one joint at a
        time, as :meth:`Motion.local_translations` for all of them would add a copy of ``(F, J, 3)``."""
        if j == 0:
            return motion.root_positions.detach().cpu().numpy()
        if motion.joint_translations is not None:
            return motion.joint_translations[:, j].detach().cpu().numpy()
        return np.broadcast_to(skeleton.offsets[j].numpy(), (n_frames, 3))

    first_col, positions, rotations, axes = channel_layout(skeleton.channels)
    n_cols = sum(len(c) for c in skeleton.channels)
    # one row per channel in file order (joints in DFS `order`; -1: a channel not written), filled row by row
    # and returned transposed: a column gather of the (F, C) array had taken a quarter of a long take's write
    written = [first_col[j] + k for j in order for k in range(len(skeleton.channels[j]))]
    file_row = np.full(n_cols, -1)
    file_row[written] = np.arange(len(written))
    out = np.zeros((len(written), n_frames))
    # the values the motion was read with, if any: they pick among equivalent Euler angles
    source = motion.metadata.get("bvh_values")
    if not (isinstance(source, np.ndarray) and source.shape == (n_frames, n_cols)):
        source = None
    groups: dict[str, list[int]] = {}
    for j in range(skeleton.num_joints):
        if axes[j]:
            groups.setdefault(padded_order(axes[j]) + str(len(axes[j])), []).append(j)
        elif n_frames and float(motion.rotations[:, j, 1:].abs().max()) > 1e-9:
            warn_at_caller(f"joint {skeleton.names[j]!r} has no rotation channels; its rotation is not written")
        if j and motion.joint_translations is not None:
            missing = [a for a in range(3) if a not in {axis for axis, _ in positions[j]}]
            if missing and not np.allclose(translation(j)[:, missing], skeleton.offsets[j, missing].numpy()):
                warn_at_caller(f"joint {skeleton.names[j]!r} lacks position channels for its animated translation;"
                               " it is not written")
    for key, group in groups.items():
        order_str, n_rot = key[:3], int(key[3:])
        # each joint's angles continue over its own frames only, so joints go a few at a time: the working
        # arrays of a long take stay small (100k frames of 31 joints at once peaked near 0.8 GB)
        for start in range(0, len(group), EULER_JOINTS_AT_ONCE):
            joints = group[start:start + EULER_JOINTS_AT_ONCE]
            ref = None
            if source is not None:
                ref = np.zeros((n_frames, len(joints), 3))
                for i, j in enumerate(joints):
                    ref[:, i, :n_rot] = source[:, rotations[j]]
            degrees = _continuous_euler(motion.rotations[:, joints], order_str, n_rot, ref, precision)
            if n_rot < 3 and n_frames:  # the padding axes' angles are what the joint's channels cannot hold
                lost = np.abs(_wrap(degrees[..., n_rot:])).max(axis=(0, 2))
                for i in np.flatnonzero(lost > 0.5 * 10.0**-precision).tolist():
                    held = " ".join(c for c in skeleton.channels[joints[i]] if c.endswith("rotation"))
                    warn_at_caller(f"joint {skeleton.names[joints[i]]!r} turns about an axis its channels ({held}) "
                                   f"lack, by up to {float(lost[i]):.3g} degrees; that part is not written")
            for i, j in enumerate(joints):
                for k, col in enumerate(rotations[j]):
                    if file_row[col] >= 0:
                        out[file_row[col]] = degrees[:, i, k]
    for j in range(skeleton.num_joints):
        for axis, col in positions[j]:
            if file_row[col] >= 0:
                out[file_row[col]] = translation(j)[:, axis]
    for row in out:  # no "-0.000000"; a row at a time, as a mask of the whole would add a copy of it
        row[np.abs(row) < 0.5 * 10.0**-precision] = 0.0
    return out.T
