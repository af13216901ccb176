"""A skeleton moving over time.

A :class:`Motion` holds local joint rotations as unit quaternions ``(F, J, 4)`` (w, x, y, z), the root's
world translation ``(F, 3)``, optional animated per-joint translations ``(F, J, 3)`` (BVH files that
put position channels on every joint, e.g. Bandai-Namco), and the frame rate. Values are float64 torch
tensors in the file's units; :mod:`skelanim.core.kinematics` turns them into world positions.

A reader may hand over the rotations as the Euler angles it read (:class:`EulerRotations`): they become
quaternions the first time :attr:`Motion.rotations` is read (and from then on that tensor is the motion's
rotations, in-place edits included), while :meth:`Motion.positions` and :meth:`Motion.world` work from the
angles directly as long as nobody has asked for the quaternions. Loading a file therefore costs no
conversion that the caller does not use.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np
import torch

from skelanim.core._tensor import as_tensor
from skelanim.core.euler import euler_quat_components, euler_to_quat, parse_order
from skelanim.core.kinematics import end_site_positions, forward_kinematics_components
from skelanim.core.rotations import quat_normalize
from skelanim.core.skeleton import Skeleton, head_and_feet, up_sign
from skelanim.core.units import axis_index
from skelanim.errors import ShapeError

#: How much larger a body's largest extent must be than the next for it to name the up axis, where joint names do not.
_CLEAR_EXTENT = 1.25
#: The share of its head-to-feet length a body lying along an axis travels along it for a crawl (:meth:`Motion.up_axis`).
_CRAWL_TRAVEL = 0.25


class EulerRotations:
    """Local joint rotations kept as the Euler angles of a file's channel columns until quaternions are needed.

    Parameters
    ----------
    values:
        ``(F, C)`` float64 channel values (degrees with ``degrees=True``, else radians); not copied.
    num_joints:
        ``J``.
    groups:
        ``(order, joints, columns)`` per Euler order: the joints rotated in that intrinsic order (a 3-letter
        string of :data:`~skelanim.core.rotations.EULER_ORDERS`) and, per joint, the 3 columns of ``values``
        holding its angles, ``-1`` for an angle that is 0 (a joint with fewer than 3 rotation channels).
        Joints in no group do not rotate.
    degrees:
        Whether ``values`` are in degrees.
    """

    def __init__(self, values: torch.Tensor, num_joints: int,
                 groups: Sequence[tuple[str, Sequence[int], Sequence[Sequence[int]]]], *, degrees: bool = True) -> None:
        self.values = values
        self.num_joints = num_joints
        self.groups = [(order, list(joints), [list(c) for c in cols]) for order, joints, cols in groups]
        self.degrees = degrees
        for order, joints, cols in self.groups:
            parse_order(order)
            if len(joints) != len(cols) or any(len(c) != 3 for c in cols):
                raise ShapeError(f"EulerRotations: each joint of order {order} needs 3 columns")

    @property
    def shape(self) -> torch.Size:
        """``(F, J, 4)``, the shape of the quaternions."""
        return torch.Size((self.values.shape[0], self.num_joints, 4))

    def __getitem__(self, frames: Any) -> EulerRotations:
        return EulerRotations(self.values[frames], self.num_joints, self.groups, degrees=self.degrees)

    def _angles(self, cols: list[list[int]]) -> torch.Tensor:
        """``(F, Jg, 3)`` angles of one group (a view where the columns allow)."""
        n_frames = self.values.shape[0]
        index = torch.tensor(cols, dtype=torch.long)
        first = int(index[0, 0])
        if (index < 0).any():  # the padding axes read a zero column
            padded = torch.cat([self.values, self.values.new_zeros(n_frames, 1)], 1)
            return padded[:, torch.where(index < 0, self.values.shape[1], index)]
        if torch.equal(index.reshape(-1), torch.arange(first, first + index.numel())):
            return self.values[:, first : first + index.numel()].reshape(n_frames, len(cols), 3)
        return self.values[:, index]

    def quaternions(self) -> torch.Tensor:
        """``(F, J, 4)`` contiguous float64 local quaternions (identity for joints in no group)."""
        n_frames = self.values.shape[0]
        whole = len(self.groups) == 1 and list(self.groups[0][1]) == list(range(self.num_joints))  # in joint order
        quats = None if whole else _identity(n_frames, self.num_joints)
        for order, joints, cols in self.groups:
            q = euler_to_quat(self._angles(cols), order, degrees=self.degrees)
            if quats is None:
                quats = q.contiguous()
            else:
                quats[:, joints] = q
        return quats if quats is not None else _identity(n_frames, self.num_joints)

    def components(self, start: int = 0, stop: int | None = None, joints: torch.Tensor | None = None
                   ) -> torch.Tensor:
        """``(4, R, F')`` the same quaternions, component-major, as forward kinematics works on them (the same
        closed form, so the same values up to rounding): of frames ``start`` to ``stop`` and of the ``R``
        joints listed in ``joints`` (default: all, in order)."""
        columns = self.values[start:stop].T.contiguous()  # (C, F'): each channel's values contiguous
        n_frames = columns.shape[1]
        rows = list(range(self.num_joints)) if joints is None else joints.tolist()
        out = None
        for order, members, cols in self.groups:
            where = {j: k for k, j in enumerate(members)}
            mine = [i for i, j in enumerate(rows) if j in where]  # positions in `rows` of this group's joints
            if not mine:
                continue
            index = torch.tensor([cols[where[rows[i]]] for i in mine], dtype=torch.long).T  # (3, Jg)
            if (index < 0).any():
                columns = torch.cat([columns, columns.new_zeros(1, n_frames)])
                index = torch.where(index < 0, columns.shape[0] - 1, index)
            angles = columns.index_select(0, index.reshape(-1)).view(3, len(mine), n_frames)
            q = torch.stack(euler_quat_components(angles, parse_order(order), degrees=self.degrees))
            if out is None and len(mine) == len(rows):
                return q
            if out is None:
                out = self.values.new_zeros(4, len(rows), n_frames)
                out[0] = 1.0
            out[:, mine] = q
        if out is None:  # none of these joints rotates
            out = self.values.new_zeros(4, len(rows), n_frames)
            out[0] = 1.0
        return out


def _identity(n_frames: int, n_joints: int) -> torch.Tensor:
    quats = torch.zeros(n_frames, n_joints, 4, dtype=torch.float64)
    quats[..., 0] = 1.0
    return quats


def _frame_index(frames: Any) -> Any:
    """``frames`` as :meth:`Motion.__getitem__` takes it: an int, a slice or a boolean array or tensor as it is,
    ``...`` and ``()`` as every frame, a list, tuple or range as an array (the one conversion indexing would make
    anyway), and an integer array or tensor of another integer type as int64 (torch reads a uint8 one as a mask);
    a one-line :class:`ShapeError` saying what is accepted for anything else. Types and dtypes only, not the values."""
    if isinstance(frames, (int, np.integer, slice)):
        return frames
    if frames is Ellipsis or (isinstance(frames, tuple) and not frames):
        return slice(None)
    given = frames
    if isinstance(frames, (list, tuple, range)):
        try:
            frames = np.asarray(frames) if len(frames) else np.zeros(0, np.int64)
        except ValueError:  # ragged
            pass
    if isinstance(frames, torch.Tensor):
        ok = frames.dtype == torch.bool or not (frames.is_floating_point() or frames.is_complex())
        if ok and frames.dtype not in (torch.bool, torch.int64):
            frames = frames.long()
    else:
        ok = isinstance(frames, np.ndarray) and frames.dtype.kind in "iub"
        if ok and frames.dtype.kind == "u":
            frames = frames.astype(np.int64)
    if ok and frames.ndim <= 1:
        return frames
    what = (f"a {frames.ndim}-d {type(given).__name__} of {frames.dtype}" if hasattr(frames, "dtype")
            else repr(given)[:40])
    raise ShapeError(f"a motion's frames are selected by an int, a slice or a sequence or array of ints (or "
                     f"booleans), not {what}")


class _Rotations:
    """The :attr:`Motion.rotations` field: a float64 tensor, or an :class:`EulerRotations` turned into one on
    first access (stored, so that in-place edits of the returned tensor are edits of the motion)."""

    def __get__(self, obj: Motion | None, owner: type | None = None) -> torch.Tensor:
        if obj is None:  # on the class: no default value for the dataclass field
            raise AttributeError("rotations")
        value = obj.__dict__["_rotations"]
        if isinstance(value, EulerRotations):
            value = value.quaternions()
            obj.__dict__["_rotations"] = value
        return value

    def __set__(self, obj: Motion, value: Any) -> None:
        """Store ``value`` (``(F, J, 4)``, as float64; :class:`EulerRotations` as it is) after the constructor's
        shape check: ``J`` the skeleton's joints, ``F`` the root positions' frames once they are set."""
        value = value if isinstance(value, EulerRotations) else as_tensor(value, dtype=torch.float64)
        _check_rotations(obj, value.shape)
        obj.__dict__["_rotations"] = value


def _check_rotations(motion: Motion, shape: torch.Size) -> None:
    """:class:`ShapeError` unless rotations of ``shape`` fit ``motion``: ``(F, J, 4)`` with ``J`` its skeleton's
    joints and, once its root positions are set (not yet while the constructor runs), ``F`` their frames. Shapes
    only: O(1)."""
    root = motion.__dict__.get("root_positions")
    frames = root.shape[0] if isinstance(root, torch.Tensor) and root.ndim else None
    n_joints = motion.skeleton.num_joints
    if len(shape) != 3 or shape[1:] != (n_joints, 4) or frames not in (None, shape[0]):
        want = "F" if frames is None else frames
        raise ShapeError(f"rotations must be ({want}, {n_joints}, 4), got {tuple(shape)}")


#: The most frames the library makes of a motion (a resample, a glTF animation sampled into frames): a guard
#: against absurd frame rates and key times, whose arrays would not fit in memory.
MAX_FRAMES = 10_000_000


@dataclass
class Motion:
    """Skeleton + local rotations + root translation + fps.

    Attributes
    ----------
    skeleton:
        The joint tree and rest pose.
    rotations:
        ``(F, J, 4)`` float64 local quaternions (w, x, y, z). May be given as :class:`EulerRotations`
        (converted on first access).
    root_positions:
        ``(F, 3)`` float64 world position of the root joint.
    fps:
        Frames per second.
    joint_translations:
        ``(F, J, 3)`` float64 local translations of every joint, or ``None`` when only the root is
        translated (then rest offsets are used). Row 0 (the root) is ignored in favour of
        ``root_positions``.
    metadata:
        Free-form facts from the source file (format, units hint, ...).
    """

    skeleton: Skeleton
    rotations: torch.Tensor  # stored through the _Rotations descriptor installed below the class
    root_positions: torch.Tensor
    fps: float
    joint_translations: torch.Tensor | None = None
    metadata: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root_positions = as_tensor(self.root_positions, dtype=torch.float64)
        if self.joint_translations is not None:
            self.joint_translations = as_tensor(self.joint_translations, dtype=torch.float64)
        f, j = self._rotation_shape()[:2]  # (F, J, 4): checked as they were set (_Rotations.__set__)
        if tuple(self.root_positions.shape) != (f, 3):
            raise ShapeError(f"root_positions must be ({f}, 3), got {tuple(self.root_positions.shape)}")
        if self.joint_translations is not None and tuple(self.joint_translations.shape) != (f, j, 3):
            raise ShapeError(
                f"joint_translations must be ({f}, {j}, 3), got {tuple(self.joint_translations.shape)}"
            )
        try:  # a number of any kind (a 0-d tensor too), not a string or None
            fps = float("nan") if isinstance(self.fps, (str, bytes)) else float(self.fps)
        except (TypeError, ValueError):
            fps = float("nan")
        if not (fps > 0 and np.isfinite(fps)):
            raise ShapeError(f"fps must be a positive number, got {self.fps!r}")

    def _rotation_shape(self) -> torch.Size:
        """The shape of :attr:`rotations`, without converting Euler angles."""
        return self.__dict__["_rotations"].shape

    # ------------------------------------------------------------------ sizes
    @property
    def num_frames(self) -> int:
        """Number of frames ``F``."""
        return int(self._rotation_shape()[0])

    def __len__(self) -> int:
        return self.num_frames

    @property
    def num_joints(self) -> int:
        """Number of joints ``J``: the skeleton's (:attr:`Skeleton.num_joints`)."""
        return self.skeleton.num_joints

    @property
    def duration(self) -> float:
        """Seconds from the first to the last frame, ``(F - 1) / fps``."""
        return max(self.num_frames - 1, 0) / self.fps

    def up_axis(self) -> int:
        """Guess the up axis (0=X, 1=Y, 2=Z) from the rest pose and from the motion itself.

        *Posed*: the axis along which joints named like head/neck lie farthest from joints named like
        feet/ankles/toes, averaged over up to 64 evenly spaced frames. *Rest*: :meth:`Skeleton.up_axis`.
        Where they agree that is the answer; where they differ, Y if either says Y (Bandai-Namco's rest
        pose lies along X; a crawl's mean pose lies flat), else the posed axis. One exception, a Y-up rest pose
        whose motion stands along another axis (a capture turned Z-up or X-up), judged in the axes of the body
        as if it lay flat (the horizontal part of its mean head-to-feet vector, Y, and across: a turn about Y
        changes nothing): unless the heads also rise above the feet along Y (0.45 times as far or more: a
        get-up), it is up along the posed axis when its left and right joints lie apart along Y (Y is then its
        side to side), Y when they lie apart along its length, and otherwise (apart across it, or undecided) Y
        if its pelvis travels more than 1.5 times as far along its length as along either other axis and by a
        quarter of that length or more (a crawl travels along its length; a figure standing along the posed axis
        only bobs along it), else the posed axis.
        A skeleton whose joint names name no head or feet: the axis of the largest median extent over the sampled
        frames where it is 1.25 times the next (a T-pose rest lies as wide as it is tall; a walk's arms hang),
        else the rest pose's.
        Checked on every file of the shared mocap set, unchanged, and on its turns to Z-up, Z-down and X-up, all
        right but those of the crawl and the get-up (which also read X-up when cut to their first second,
        lying flat: nothing in a still pose tells lying from standing). Windows of 15, 30 and 120 frames of 56
        of those files (500 windows per turn): all right unturned; turned, 18 of 1500 wrong (31 before the
        quarter-length rule), all but four in DeepMimic's spin, spinkick and kick, whose heads lean over their
        feet by half their height. The rule costs short windows of the lying clips left out above: 12 windows of
        0.25-0.5 s of the crawl and the get-up read Y before and X now (``up_axis`` on a short window of a lying or
        turned acrobatic clip is a guess: pass the axis where it is known).
        """
        rest = self.skeleton.up_axis()
        heads, feet = head_and_feet(self.skeleton.names)
        if self.num_frames == 0:
            return rest
        if not feet or not heads:  # no names to go by: the body's largest extent as it moves, where it is clear
            extent = self._sample_positions(end_sites=True)
            extent = (extent.max(1).values - extent.min(1).values).median(0).values  # (3,)
            first, second = extent.sort(descending=True).values[:2].tolist()
            return int(extent.argmax()) if first > _CLEAR_EXTENT * second else rest
        pos = self._sample_positions()
        head_to_feet = (pos[:, heads].mean(1) - pos[:, feet].mean(1)).mean(0).abs()
        posed = int(head_to_feet.argmax())
        if rest == posed:
            return rest
        if rest == 1:
            # measured in the body's own axes (along its head-to-feet line in the horizontal plane, Y, and across),
            # so that a turn of the clip about Y changes nothing (a crawl turned 30 degrees had read X-up)
            pos, length = _in_body_axes(pos, pos[:, heads].mean(1) - pos[:, feet].mean(1))
            if float(head_to_feet[1]) >= 0.45 * length:  # it stands along Y at times (a get-up)
                return 1
            lateral = self._lateral_axis(pos)
            if lateral == 1:  # the sides lie apart along Y: it is no up axis
                return posed
            if lateral == 0:  # apart along the body's own length
                return 1
            # a crawl travels along its body by a good part of its length: a figure standing along the posed axis
            # bobs along it too, but by a small part (a CMU stand turned Z-up: 0.34 of 19.2)
            travel = (pos[:, self.skeleton.pelvis].max(0).values - pos[:, self.skeleton.pelvis].min(0).values).tolist()
            crawls = travel[0] > _CRAWL_TRAVEL * length and travel[0] > 1.5 * max(travel[1:])
            return 1 if crawls else posed
        return posed

    def _lateral_axis(self, positions: torch.Tensor) -> int | None:
        """The axis along which the skeleton's left and right joints (:meth:`Skeleton.left_right_pairs`) lie
        farthest apart in ``(S, J, 3)`` sampled positions (``None`` without such pairs): the body's side to side,
        which no up axis is."""
        pairs = self.skeleton.left_right_pairs()
        if not pairs:
            return None
        left, right = (torch.tensor(side) for side in zip(*pairs))
        apart = (positions[:, left] - positions[:, right]).abs().mean((0, 1))
        first, second = apart.sort(descending=True).values[:2].tolist()
        return int(apart.argmax()) if first >= 1.5 * second else None  # a body that turns its side: undecided

    def up_direction(self) -> tuple[int, float]:
        """:meth:`up_axis` and its sign: ``-1.0`` when the heads lie below the feet along it (an upside-down
        source, :func:`~skelanim.core.skeleton.up_sign` over up to 64 evenly spaced frames), else ``+1.0``."""
        axis = self.up_axis()
        if self.num_frames == 0:
            return axis, 1.0
        return axis, up_sign(self.skeleton.names, self._sample_positions(), axis)

    @property
    def height(self) -> float:
        """Body height in the motion's units: the median over up to 64 evenly spaced frames of the extent
        of joints and End Sites along :meth:`up_axis` (the lower of the two middle values for an even count,
        ``torch.median``'s rule: always one frame's extent). Falls back to the rest pose for an empty motion.
        A property here (``motion.height``); on a skeleton a method (``skeleton.height()``, the rest pose's)."""
        return self.height_along(self.up_axis())

    @property
    def stature(self) -> float:
        """Body size for guessing the length unit, in the motion's units: :meth:`Skeleton.stature` (bone lengths
        from head to foot, which no pose changes), or :attr:`height` where the joint names find no head or foot.
        A crawl's :attr:`height` is a third of the body's; its stature is the standing body's.
        A property here (``motion.stature``); on a skeleton a method (``skeleton.stature()``, ``None`` without names)."""
        size = self.skeleton.stature()
        return self.height if size is None else size

    def height_along(self, axis: int | str) -> float:
        """:attr:`height` measured along ``axis`` instead of the guessed up axis (an empty motion: the rest pose's
        extent along it).

        ``axis`` is spelt as the ops spell it (:func:`~skelanim.core.units.axis_index`): ``0``, ``1``, ``2`` or
        ``"x"``, ``"y"``, ``"z"`` in either case, with an optional sign. An extent is the same either way along an
        axis, so a sign changes nothing: ``height_along("-y") == height_along("y")``.
        """
        index = axis_index(axis)
        if self.num_frames == 0:
            rest = self.skeleton.rest_positions(end_sites=True)[:, index]
            return float((rest.max() - rest.min()).detach())
        extent = self._sample_positions(end_sites=True)[..., index]
        return float((extent.max(-1).values - extent.min(-1).values).median().detach())  # a number: no gradient

    def _sample_positions(self, *, end_sites: bool = False, count: int = 64) -> torch.Tensor:
        """``(S, J(+E), 3)`` world positions at up to ``count`` evenly spaced frames."""
        frames = torch.linspace(0, self.num_frames - 1, min(count, self.num_frames)).round().long()
        return self[frames].positions(end_sites=end_sites)

    # ------------------------------------------------------------------ kinematics
    def local_translations(self) -> torch.Tensor:
        """``(F, J, 3)`` translation of each joint in its parent's frame; row 0 is the root position."""
        if self.joint_translations is not None:
            t = self.joint_translations.clone()
        else:
            t = self.skeleton.offsets.expand(self.num_frames, -1, -1).clone()
        t[:, 0] = self.root_positions
        return t

    def world(self) -> tuple[torch.Tensor, torch.Tensor]:
        """World rotation matrices ``(F, J, 3, 3)`` and positions ``(F, J, 3)``."""
        world_rot, world_pos = self._forward(rotations=True)
        assert world_rot is not None
        return world_rot, world_pos

    def _forward(self, *, rotations: bool) -> tuple[torch.Tensor | None, torch.Tensor]:
        """Forward kinematics (:func:`~skelanim.core.kinematics.forward_kinematics_components`) on the
        motion's tensors as they are: Euler angles not yet converted, rest offsets not repeated per frame."""
        source = self.__dict__["_rotations"]
        euler = isinstance(source, EulerRotations)
        local = source.components if euler else source.permute(2, 1, 0)
        if self.joint_translations is None:
            translations = self.skeleton.offsets.T[:, :, None]  # (3, J, 1): the same in every frame
        else:
            translations = self.joint_translations.permute(2, 1, 0)
        root = self.root_positions.T[:, None, :]  # (3, 1, F)
        return forward_kinematics_components(local, self.num_frames, translations.to(self.root_positions.dtype),
                                             root, self.skeleton.parents.tolist(), rotations=rotations, unit=euler)

    def positions(self, *, end_sites: bool = False) -> torch.Tensor:
        """``(F, J, 3)`` world joint positions, or ``(F, J+E, 3)`` with End Sites appended
        in the order of ``sorted(skeleton.end_sites)``."""
        if not end_sites or not self.skeleton.end_sites:
            return self._forward(rotations=False)[1]
        world_rot, world_pos = self.world()
        joints = sorted(self.skeleton.end_sites)
        offsets = torch.stack([self.skeleton.end_sites[j] for j in joints])
        return torch.cat([world_pos, end_site_positions(world_rot, world_pos, joints, offsets)], dim=-2)

    def end_site_names(self) -> list[str]:
        """Names for the End Sites appended by ``positions(end_sites=True)``: ``<joint>_end``."""
        return [f"{self.skeleton.names[j]}_end" for j in sorted(self.skeleton.end_sites)]

    # ------------------------------------------------------------------ editing
    def copy(self, **changes) -> Motion:
        """A shallow copy with the given fields replaced (tensors are not cloned; the metadata dict is copied, so
        setting a key on the copy's leaves this motion's as it was)."""
        changes.setdefault("metadata", dict(self.metadata))
        return replace(self, **changes)

    def __getitem__(self, frames: int | slice | Sequence[int] | np.ndarray | torch.Tensor) -> Motion:
        """Frames selected by an index (a one-frame motion; ``IndexError`` outside ``-F <= i < F``), a slice (a
        negative step too: ``motion[::-1]`` plays it backwards) or an index array, as a new Motion (same skeleton
        and fps). Anything else (a float, a string, a float array) is a one-line :class:`ShapeError`."""
        frames = _frame_index(frames)
        if isinstance(frames, (int, np.integer)) or (isinstance(frames, (np.ndarray, torch.Tensor)) and frames.ndim == 0):
            index = int(frames)  # also a NumPy integer or a 0-d array, e.g. from argmax
            if not -self.num_frames <= index < self.num_frames:
                raise IndexError(f"frame {index} of a motion of {self.num_frames} frames")
            frames = slice(index, index + 1 if index != -1 else None)
        elif isinstance(frames, slice) and frames.step is not None and frames.step < 0:  # torch slices step forward
            frames = torch.tensor(range(self.num_frames)[frames], dtype=torch.long)  # e.g. motion[::-1], played back
        elif isinstance(frames, slice) and frames.step is not None and frames.step > self.num_frames:
            frames = slice(frames.start, frames.stop, max(self.num_frames, 1))  # the same frame; torch's step x stride overflowed
        jt = None if self.joint_translations is None else self.joint_translations[frames]
        source = self.__dict__["_rotations"]  # Euler angles stay unconverted
        # which frames, to tell a cut from the whole: a slice's ends from a range, O(1) (a frame-by-frame loop over
        # m[k] had built an F-long arange per frame); an index array's from the array itself
        picked = range(self.num_frames)[frames] if isinstance(frames, slice) else torch.arange(self.num_frames)[frames]
        ends = {int(picked[0]), int(picked[-1])} if len(picked) else set()
        return replace(
            self,
            rotations=source[frames],
            root_positions=self.root_positions[frames],
            joint_translations=jt,
            metadata=_loop_kept(self.metadata, ends == {0, self.num_frames - 1}),
        )

    def normalized_rotations(self) -> Motion:
        """A copy whose quaternions are unit length."""
        return self.copy(rotations=quat_normalize(self.rotations))

    @staticmethod
    def concatenate(motions: Sequence[Motion]) -> Motion:
        """Join motions of the same skeleton topology and fps end to end (root positions as they are), on the first
        one's skeleton. Where another motion's bone offsets differ (the same skeleton in other units, another actor),
        every motion's own offsets go into ``joint_translations``, so each keeps its joint positions; End Sites are
        the first skeleton's."""
        if not motions:
            raise ShapeError("concatenate needs at least one motion")
        first = motions[0]
        for m in motions[1:]:
            if not first.skeleton.same_topology(m.skeleton):
                raise ShapeError("cannot concatenate motions of different skeletons")
            if abs(m.fps - first.fps) > 1e-9:
                raise ShapeError(f"cannot concatenate motions at {first.fps} and {m.fps} fps; resample first")
        offsets = first.skeleton.offsets
        other_bones = any(not torch.equal(m.skeleton.offsets.to(offsets.dtype), offsets) for m in motions[1:])
        has_jt = other_bones or any(m.joint_translations is not None for m in motions)
        jt = torch.cat([m.local_translations() for m in motions]) if has_jt else None
        return replace(
            first,
            rotations=torch.cat([m.rotations for m in motions]),
            root_positions=torch.cat([m.root_positions for m in motions]),
            joint_translations=jt,
            metadata=_loop_kept(first.metadata, len(motions) == 1),
        )

    @classmethod
    def from_euler(cls, skeleton: Skeleton, rotations: EulerRotations, root_positions: torch.Tensor, fps: float,
                   joint_translations: torch.Tensor | None = None, metadata: dict | None = None) -> Motion:
        """A motion whose rotations are Euler angles, converted to quaternions when first read (see the
        module docstring); the other arguments as for the constructor."""
        return cls(skeleton, cast(torch.Tensor, rotations), root_positions, fps, joint_translations,
                   {} if metadata is None else metadata)

    @classmethod
    def rest(cls, skeleton: Skeleton, num_frames: int = 1, fps: float = 30.0) -> Motion:
        """``num_frames`` frames of the rest pose (identity rotations, root at its rest offset)."""
        rot = torch.zeros(num_frames, skeleton.num_joints, 4, dtype=torch.float64)
        rot[..., 0] = 1.0
        root = skeleton.offsets[0].expand(num_frames, 3).clone()
        return cls(skeleton, rot, root, fps)


def _in_body_axes(positions: torch.Tensor, head_to_feet: torch.Tensor) -> tuple[torch.Tensor, float]:
    """``(S, J, 3)`` sampled positions in the axes of a body lying in the horizontal plane (XZ): the horizontal
    direction of its mean ``(S, 3)`` head-to-feet vector, Y, and their cross product; and the length of that
    horizontal part (the body's length lying down)."""
    body = head_to_feet.mean(0)
    along = torch.stack([body[0], body.new_zeros(()), body[2]])
    length = float(along.norm())
    along = along / length if length > 0 else body.new_tensor([1.0, 0.0, 0.0])
    up = body.new_tensor([0.0, 1.0, 0.0])
    axes = torch.stack([along, up, torch.linalg.cross(along, up)])  # (3, 3): rows are the new axes
    return positions @ axes.T, length


def _loop_kept(metadata: dict, whole: bool) -> dict:
    """A copy of ``metadata`` for a motion made from frames of one with it: a loop flag (``metadata["loop"]``, read
    from DeepMimic's ``Loop`` or glTF extras) is kept where the frames still run from the first to the last
    (``whole``: the clip, reversed or taken every n-th frame), and set to ``"none"`` for a cut or a join, whose last
    frame does not lead back to its first (a 7-frame cut of a looping run had been written as a loop)."""
    out = dict(metadata)
    if not whole and out.get("loop") not in (None, "none"):
        out["loop"] = "none"
    return out


Motion.rotations = _Rotations()  # type: ignore[assignment]  # after @dataclass: a field without default


def require_motion(value: object, what: str = "motion") -> Motion:
    """``value`` where it is a :class:`Motion`, else a ``TypeError`` saying what it is (a file's path: load it
    first; the models had failed on it with ``AttributeError: 'str' object has no attribute 'skeleton'``)."""
    if isinstance(value, Motion):
        return value
    hint = " (load a file with skelanim.load first)" if isinstance(value, (str, os.PathLike)) else ""
    raise TypeError(f"{what} must be a Motion, got {type(value).__name__}{hint}")


def as_motions(value: object, what: str = "motions") -> list[Motion]:
    """One :class:`Motion` or a sequence of them as a list (a single motion had been read as a sequence of its
    frames); ``TypeError`` for anything else, ``ValueError`` for none."""
    if isinstance(value, Motion):
        return [value]
    if isinstance(value, (str, os.PathLike)) or not isinstance(value, Sequence):
        require_motion(value, what)
    motions = [require_motion(m, f"{what}[{i}]") for i, m in enumerate(cast(Sequence[object], value))]
    if not motions:
        raise ValueError(f"no {what} given")
    return motions
