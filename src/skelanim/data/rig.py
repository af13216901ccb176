"""The skeleton a model learns on: which joints it models, the up axis, the floor and the normalising height.

A :class:`Rig` is stored in every model's ``config.json`` so that a model writes motion back onto the
skeleton it was trained on (bone lengths exact by construction: positions only ever come from FK on the
rig's rest offsets).

* **Body root** (:func:`body_root`): joint 0, unless joint 0 is a static dummy (one child and the same rotation
  in every frame, e.g. Bandai-Namco's ``joint_Root``, turned or not); then its child. Models see the ``M = J - r``
  joints from the body root on; joints above it get the identity rotation on the way out.
* **Height**: the median over clips of :attr:`Motion.height`; every length a model sees is divided by it.
* **Floor**: the median over clips of the lowest joint height in the clip (where feet rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_quat, quat_normalize
from skelanim.core.skeleton import Skeleton
from skelanim.errors import SkeletonError

__all__ = ["OTHER_UNIT", "Rig", "body_root", "require_rig", "require_same_rig", "require_size", "require_up", "rig_mismatch"]


def body_root(motion: Motion, tol: float = 1e-6) -> int:
    """1 when joint 0 is a static dummy (one child, the same rotation in every frame), else 0.

    The same rotation, not only the identity: an op that turns a whole motion (``ops.face_forward``,
    ``ops.rotate``, ``convert --face``, a Z-up copy) puts the turn on joint 0, and Bandai's ``joint_Root`` turned
    so is still a dummy (its rotation is folded into the body root's by :meth:`Rig.frames`); it had been taken for
    the body, its height 0 in every frame."""
    sk = motion.skeleton
    if sk.num_joints < 2 or sk.children(0) != [1]:
        return 0
    q = quat_normalize(motion.rotations[:, 0])
    if q.shape[0] == 0:
        return 1
    alignment = (q * q[:1]).sum(-1).abs()  # |cos(half the angle)| between each frame's rotation and the first's
    return 1 if float((1.0 - alignment).max()) < tol else 0


#: Relative difference of rest heights below which a skeleton counts as the rig's own size (:meth:`Rig.size_factor`).
SAME_SIZE = 1e-3


@dataclass
class Rig:
    """The learning skeleton.

    Attributes
    ----------
    skeleton : Skeleton
        The full skeleton motion is written on.
    root : int
        Body root joint index (0 or 1).
    up : int
        Up axis.
    height : float
        Normalising length (file units).
    floor : float
        Floor level along ``up`` (file units).
    feet : list of int
        Model-joint indices of the foot joints (left foot, right foot, left toe, right toe).
    """

    skeleton: Skeleton
    root: int
    up: int
    height: float
    floor: float
    feet: list[int] = field(default_factory=list)

    @property
    def num_joints(self) -> int:
        """Model joints ``M``."""
        return self.skeleton.num_joints - self.root

    @property
    def names(self) -> list[str]:
        """Names of the model joints."""
        return self.skeleton.names[self.root :]

    @property
    def parents(self) -> list[int]:
        """``(M,)`` parents among the model joints (``-1`` for the body root)."""
        return [-1] + [int(p) - self.root for p in self.skeleton.parents[self.root + 1 :]]

    @property
    def offsets(self) -> Tensor:
        """``(M, 3)`` float32 rest offsets of the model joints divided by :attr:`height` (row 0 unused)."""
        return (self.skeleton.offsets[self.root :] / self.height).to(torch.float32)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {"skeleton": self.skeleton.to_dict(), "root": self.root, "up": self.up, "height": self.height,
                "floor": self.floor, "feet": list(self.feet)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rig:
        """Inverse of :meth:`to_dict`."""
        return cls(Skeleton.from_dict(data["skeleton"]), int(data["root"]), int(data["up"]), float(data["height"]),
                   float(data["floor"]), [int(f) for f in data.get("feet", [])])  # fmt: skip

    def adopt(self, motion: Motion) -> Motion:
        """``motion`` as the rig's joints where it holds them in another form, else ``motion`` itself: the same named
        joints (the same parents by name) in another order put in the rig's (:func:`skelanim.ops.reorder_joints`; a
        BVH lists joints depth first, DeepMimic's humanoid does not, so a model trained on its clips had refused the
        BVH files written for it), or the rig without its dummy root put under it (:meth:`with_dummy_root`)."""
        given = motion.skeleton
        if given.names != self.skeleton.names and sorted(given.names) == sorted(self.skeleton.names):
            mine = {n: (self.skeleton.names[p] if p >= 0 else None) for n, p in zip(self.skeleton.names, self.skeleton.parents)}
            theirs = {n: (given.names[p] if p >= 0 else None) for n, p in zip(given.names, given.parents)}
            if mine == theirs:
                from skelanim.ops.subset import reorder_joints

                return reorder_joints(motion, self.skeleton.names)
        return self.with_dummy_root(motion)

    def with_dummy_root(self, motion: Motion) -> Motion:
        """``motion`` put under the rig's static dummy root where its skeleton is the rig's without it (the joints
        from the body root on, the body root as the root: ``convert --simple-channels`` writes Bandai-Namco files
        so), else ``motion`` itself. The dummy stays at the origin, unturned, and the body root's path becomes its
        animated translation (:attr:`Motion.joint_translations`), so world positions are unchanged: the models see
        the same motion as from the original file (it had been refused as "21 joints, not 22")."""
        given = motion.skeleton
        if self.root != 1 or given.names != self.names or [int(p) for p in given.parents] != self.parents:
            return motion
        frames, joints = motion.num_frames, self.skeleton.num_joints
        offsets = torch.cat([torch.zeros(1, 3, dtype=motion.skeleton.offsets.dtype), motion.skeleton.offsets])
        skeleton = Skeleton(self.skeleton.names, self.skeleton.parents, offsets)
        rotations = torch.zeros(frames, joints, 4, dtype=motion.rotations.dtype)
        rotations[..., 0] = 1.0
        rotations[:, 1:] = motion.rotations
        moved = offsets.expand(frames, joints, 3).clone()
        moved[:, 1] = motion.root_positions.to(moved.dtype)
        if motion.joint_translations is not None:
            moved[:, 2:] = motion.joint_translations[:, 1:].to(moved.dtype)
        return Motion(skeleton, rotations, torch.zeros(frames, 3, dtype=moved.dtype), motion.fps, moved,
                      dict(motion.metadata))

    def size_factor(self, skeleton: Skeleton) -> float:
        """How much a skeleton of this rig's topology must be scaled to be the rig's size: the ratio of the rest
        heights (:meth:`Skeleton.height`), 1.0 where they agree within :data:`SAME_SIZE`. The same joints in metres
        instead of centimetres give 100; a taller actor's capture less than 1. Models read lengths in the rig's
        units and size, so such motion is scaled before it is read (and a prediction scaled back)."""
        factor = self.skeleton.height() / skeleton.height()
        return 1.0 if abs(factor - 1.0) <= SAME_SIZE else factor

    def to_motion(self, rot: Tensor, pelvis: Tensor, fps: float, *, metadata: dict[str, Any] | None = None,
                  like: Motion | None = None) -> Motion:  # fmt: skip
        """A :class:`Motion` on :attr:`skeleton` (or ``like``'s) from model-joint rotations and the pelvis path.

        Parameters
        ----------
        rot : Tensor
            ``(F, M, 3, 3)`` rotation matrices (body root in world) or ``(F, M, 4)`` quaternions.
        pelvis : Tensor
            ``(F, 3)`` world body-root positions (file units).
        fps : float
            Frame rate.
        metadata : dict, optional
            Stored on the motion.
        like : Motion, optional
            A motion on a skeleton of the same topology (e.g. the one being continued): the result is on its
            skeleton, and its last frame gives the dummy root's place and the translations of the joints
            below the body root. Default: :attr:`skeleton` at rest.

        Returns
        -------
        Motion
            Joints above the body root get the identity. Under a static dummy root (``root == 1``) the dummy
            stays where it is and the body root's translation is animated (``joint_translations``) when the
            skeleton has position channels there or ``like`` animates translations, as the source files do;
            otherwise the root translation is set so that FK puts the body root at ``pelvis``. Every other
            joint keeps its offset.
        """
        skeleton = self.skeleton if like is None else like.skeleton
        if not skeleton.same_topology(self.skeleton):
            raise SkeletonError(f"cannot write a {self.skeleton.num_joints}-joint rig's motion on a "
                                f"{skeleton.num_joints}-joint skeleton")  # fmt: skip
        quats = matrix_to_quat(rot.double()) if rot.shape[-1] == 3 else quat_normalize(rot.double())
        frames = quats.shape[0]
        full = torch.zeros(frames, skeleton.num_joints, 4, dtype=torch.float64)
        full[..., 0] = 1.0
        full[:, self.root :] = quats
        pelvis = pelvis.double()
        held = like.local_translations()[-1] if like is not None else skeleton.offsets.clone()  # (J, 3); row 0: root
        animated = like is not None and like.joint_translations is not None
        if self.root == 0:
            translations = None
            if animated:
                translations = held.expand(frames, -1, -1).clone()
                translations[:, 0] = pelvis
            return Motion(skeleton, full, pelvis, float(fps), translations, dict(metadata or {}))
        if animated or skeleton.has_position_channels(self.root):
            translations = held.expand(frames, -1, -1).clone()
            translations[:, self.root] = pelvis - held[0]
            return Motion(skeleton, full, held[0].expand(frames, 3).clone(), float(fps), translations,
                          dict(metadata or {}))  # fmt: skip
        return Motion(skeleton, full, pelvis - skeleton.offsets[self.root], float(fps), None, dict(metadata or {}))


def require_up(clips: Any, up: int, whose: str = "the model's") -> None:
    """Refuse clips (each with ``up`` and ``path``/``name``) that lie along another up axis than ``up`` (``whose``
    it is, for the message): a dataset's windows are read as its files lie (a Z-up file's windows would be read as a
    Y-up model's input, silently wrong), while the commands given motions turn each onto the rig's up.

    Raises
    ------
    SkeletonError
        Naming the first such clip's file.
    """
    for clip in clips:
        if clip.up != up:
            raise SkeletonError(f"its up axis is {'XYZ'[clip.up]}, {whose} {'XYZ'[up]}: files in a data folder are "
                                "read as they lie; turn them first (skelanim.ops.turned_up)",
                                path=clip.path or clip.name)  # fmt: skip


#: Ratio of rest heights beyond which two skeletons of one topology are in different length units, not two actors
#: (a child beside an adult is 0.6; inches against centimetres 2.54, metres 100).
OTHER_UNIT = 2.0


def require_same_rig(given: Rig, rig: Rig, owner: str) -> None:
    """Refuse a dataset's rig ``given`` that is not ``rig``, ``owner``'s (``"the predictor"``): one measured on other
    data may have another body root, up axis or height (a moving dummy root makes every window one joint wider than
    the model's), and a model reads windows in its own rig's joints and height units.

    Raises
    ------
    ValueError
        Saying how to build the dataset on the model's rig.
    """
    same = given.root == rig.root and given.up == rig.up and abs(given.height - rig.height) <= 1e-6 * rig.height
    if not (same and given.skeleton.same_rig(rig.skeleton)):
        raise ValueError(f"the dataset's rig is not {owner}'s (body root {given.root} against {rig.root}, up "
                         f"{given.up} against {rig.up}, height {given.height:.6g} against {rig.height:.6g}): build it "
                         f"with MotionDataset(..., rig=model.rig)")  # fmt: skip


def rig_mismatch(owner: str, rig_skeleton: Skeleton, given: Skeleton) -> str:
    """The message for motion on another skeleton than a rig's: the skeleton ``owner`` (``"the predictor"``, ``"the
    rig"``) works on and the first way ``given`` differs (:meth:`~skelanim.core.skeleton.Skeleton.rig_difference`)."""
    return (f"{owner} works on a {rig_skeleton.num_joints}-joint skeleton ({', '.join(rig_skeleton.names[:4])}, ...); "
            f"this motion has {rig_skeleton.rig_difference(given) or 'the same joints'}")


def require_size(clips: Any, skeleton: Skeleton, owner: str) -> None:
    """Refuse clips (each with ``skeleton`` and ``path``/``name``) whose skeleton is more than :data:`OTHER_UNIT`
    times larger or smaller than ``skeleton`` (``owner``'s: ``"the predictor"``, ``"the first file"``): motion in
    other length units (metres among centimetres) is read as a giant or a doll without a word otherwise.

    Raises
    ------
    SkeletonError
        Naming the first such clip's file and the ``--scale`` that fixes it.
    """
    reference = skeleton.height()
    for clip in clips:
        ratio = clip.skeleton.height() / reference
        if not 1.0 / OTHER_UNIT <= ratio <= OTHER_UNIT:
            raise SkeletonError(f"its skeleton is {ratio:.3g} times {owner}'s size (another length unit?); scale it "
                                f"first: skelanim convert FILE OUT --scale {1.0 / ratio:.3g}",
                                path=clip.path or clip.name)  # fmt: skip


def require_rig(clips: Any, skeleton: Skeleton, owner: str = "the rig") -> None:
    """Refuse clips that are not on ``skeleton`` as a rig (:meth:`~skelanim.core.skeleton.Skeleton.rig_difference`:
    other joints, or the same joints with other rest axes) or not of its size (:func:`require_size`): a model's
    windows of them would be read joint for joint as its own, silently wrong.

    Raises
    ------
    SkeletonError
        Naming the first such clip's file.
    """
    for clip in clips:
        if not skeleton.same_rig(clip.skeleton):
            raise SkeletonError(rig_mismatch(owner, skeleton, clip.skeleton), path=clip.path or clip.name)
    require_size(clips, skeleton, owner)
