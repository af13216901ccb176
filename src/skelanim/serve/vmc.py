r"""A live stream for avatars: motion as the VMC protocol (OSC over UDP) for VRM humanoids.

The `VMC protocol <https://protocol.vmc.info/english>`_ is how avatar applications pass motion to each other
(Virtual Motion Capture, VSeeFace, Warudo; EVMC4U in Unity, VMC4UE in Unreal, VMC4B in Blender). A *performer*
(this module) sends, per frame, OSC bundles of at most 1,400 bytes (:func:`vmc_bundles`) to a *marionette*
(the avatar; UDP port 39539 by default):

* ``/VMC/Ext/Root/Pos "root" p.x p.y p.z q.x q.y q.z q.w``: the model's root (here the origin, unturned);
* ``/VMC/Ext/Bone/Pos NAME p.x p.y p.z q.x q.y q.z q.w`` for each bone of :data:`HUMANOID_BONES` (Unity's
  ``HumanBodyBones`` names): the bone's **local** position and rotation;
* ``/VMC/Ext/OK 1`` (a model is loaded) and ``/VMC/Ext/T TIME`` (the sender's clock, seconds).

What the numbers mean
---------------------
A VRM humanoid is *normalised*: every bone's local rotation is the identity in its T-pose (facing +Z, arms
along X, legs down). That is exactly the canonical T-pose of :mod:`skelanim.retarget.rig`, whose world bone
frames ``Q`` are the identity in the T-pose whatever the source's joint conventions (an A-pose rest, Bandai's
joint axes along the bones, a Z-up file). So the stream sends the canonical local rotations
``Q_parent^T Q`` (:func:`~skelanim.retarget.rig.canonical_locals`) of the source's mapped joints, after turning
the world up onto +Y (:func:`~skelanim.core.units.up_to_y_matrix`). Canonical ``spine1`` and ``chest`` are
sent together as ``Chest`` (their product), because many VRM models have no ``UpperChest``.

Unity is left-handed (Y up, +Z forward, +X right); skelanim is right-handed. Mirroring X keeps a body a body
(its left hand, at +X here, lands at -X there, which is the left of a character facing +Z in Unity):
positions ``(x, y, z) -> (-x, y, z)``, rotations ``M R M`` with ``M = diag(-1, 1, 1)``, which for a quaternion
is ``(w, x, y, z) -> (w, x, -y, -z)`` (:func:`mirror_x`). Positions are in metres. ``Hips`` carries the
body's position over the floor (y = 0 is the floor; a clip whose feet are farther from y = 0 than
:data:`~skelanim.retarget.stance.CLEARANCE` of its height stands on its lowest foot joint,
:func:`~skelanim.retarget.stance.floor_level`: the ground under the feet, which the avatar's own feet then stand
on, not where the source's toe joints stand, :func:`~skelanim.retarget.stance.standing_level`, which retargeting
onto another skeleton's toe joints maps from); the other bones carry their T-pose offset from their parent bone. Some marionettes move every
bone to the offset received (EVMC4U, by default), so these should be the avatar's own: given its ``.vrm``
(:mod:`.avatar`) they are, and the bones sent are the avatar's (``UpperChest`` where it has one, a joint whose
bone it lacks folded into a neighbour, :func:`bone_plan`), the hips' travel scaled to its legs. Without it the
source's proportions go out, a joint the source lacks at the canonical T-pose's offset (never zero), and a bone
that carries several joints sits at the first of them the source has (``Chest`` at the chest joint of a clip
without ``spine1``), the point its rotation turns about.
"""

from __future__ import annotations

import math
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_quat, quat_continuous, quat_normalize
from skelanim.core.skeleton import Skeleton
from skelanim.core.units import up_to_y_matrix
from skelanim.errors import ShapeError, SkelanimError
from skelanim.io.gltf import export_scale
from skelanim.ops._common import signed_up
from skelanim.retarget.baselines import FEET
from skelanim.retarget.mapping import CANONICAL_JOINTS, CANONICAL_PARENTS, JointMapping
from skelanim.retarget.retargeter import floor_level, make_rig
from skelanim.retarget.rig import CanonicalRig, canonical_locals, canonical_tpose
from skelanim.serve.avatar import UNITY_PARENTS, AvatarRig

__all__ = ["BONE_OF_JOINT", "DEFAULT_PORT", "HUMANOID_BONES", "MAX_DATAGRAM", "AvatarEncoder", "AvatarFrames", "AvatarStream",
           "StreamError", "avatar_frames", "bone_plan", "host_port", "loop_travel", "mirror_x", "seamless_loop", "vmc_bundle",
           "vmc_bundles"]  # fmt: skip

#: The port marionettes listen on by default.
DEFAULT_PORT = 39539
#: The largest datagram :class:`AvatarStream` sends (bytes): under Ethernet's 1,472-byte UDP payload (1,452 over
#: IPv6), so that no frame is fragmented on the way (:func:`vmc_bundles`).
MAX_DATAGRAM = 1400
#: An OSC bundle's bytes before its elements: ``#bundle`` and the time tag.
_BUNDLE_HEADER = 16

#: The humanoid bone each canonical joint is (``spine1``/``chest``: ``Chest``/``UpperChest``).
BONE_OF_JOINT: dict[str, str] = {"hips": "Hips", "spine": "Spine", "spine1": "Chest", "chest": "UpperChest",
                                 "neck": "Neck", "head": "Head"}  # fmt: skip
for _side, _name in (("l", "Left"), ("r", "Right")):
    BONE_OF_JOINT.update({f"{_side}_clavicle": f"{_name}Shoulder", f"{_side}_upperarm": f"{_name}UpperArm",
                          f"{_side}_forearm": f"{_name}LowerArm", f"{_side}_hand": f"{_name}Hand",
                          f"{_side}_upleg": f"{_name}UpperLeg", f"{_side}_leg": f"{_name}LowerLeg",
                          f"{_side}_foot": f"{_name}Foot", f"{_side}_toe": f"{_name}Toes"})  # fmt: skip
#: Where a joint goes when the avatar lacks its bone: up the spine (its bone has one child, the next spine bone),
#: down to the only child otherwise (a missing shoulder's turn is the upper arm's; a missing neck's, the head's).
_FOLD = {"UpperChest": "Chest", "Chest": "Spine", "LeftShoulder": "LeftUpperArm", "RightShoulder": "RightUpperArm",
         "Neck": "Head"}  # fmt: skip


def bone_plan(bones: set[str] | frozenset[str]) -> dict[str, tuple[str, ...]]:
    """Humanoid bone -> the canonical joints whose local rotations it carries (their product, parents first), for
    an avatar with ``bones`` (an unlisted bone's joint goes where :data:`_FOLD` says; toes without ``Toes`` are
    left out), in Unity's hierarchy order."""
    plan: dict[str, list[str]] = {}
    for joint in CANONICAL_JOINTS:
        bone = BONE_OF_JOINT[joint]
        while bone not in bones and bone in _FOLD:
            bone = _FOLD[bone]
        if bone in bones:
            plan.setdefault(bone, []).append(joint)
    return {b: tuple(plan[b]) for b in UNITY_PARENTS if b in plan}


#: The bones sent when the avatar is not known: those a VRM 0.x model has (no ``UpperChest``, which many lack).
#: A VRM 1.0 model may also lack ``Chest``, ``Neck``, the shoulders or the toes, and a marionette drops what a
#: bone it lacks receives: give the avatar (:class:`AvatarEncoder`) so that those turns go into bones it has.
HUMANOID_BONES: dict[str, tuple[str, ...]] = bone_plan(frozenset(BONE_OF_JOINT.values()) - {"UpperChest"})
_SLOT = {n: i for i, n in enumerate(CANONICAL_JOINTS)}
_HIPS = _SLOT["hips"]


def _filled_rest(rig: CanonicalRig) -> Tensor:
    """``(22, 3)`` canonical T-pose joint positions of ``rig`` (its units), a joint it lacks placed: between its
    nearest present ancestor and the next present joint down its chain at the canonical T-pose's share of that
    length (spine joints, clavicles, a neck), else, at a chain's end (hands, toes, head), the canonical T-pose's
    offset at the rig's size."""
    tpose = canonical_tpose()
    tpose_rest = tpose.rest_positions()
    feet = [_SLOT["l_foot"], _SLOT["r_foot"]]
    size = rig.leg_length / float(tpose_rest[_HIPS, 1] - tpose_rest[feet, 1].mean())
    present = rig.present.tolist()
    rest = rig.canonical_rest.clone()
    children = {s: [c for c, p in enumerate(CANONICAL_PARENTS) if p == s] for s in range(len(CANONICAL_JOINTS))}
    for s in range(1, len(CANONICAL_JOINTS)):  # parents first
        if present[s]:
            continue
        ancestor, chain = CANONICAL_PARENTS[s], [s]
        while len(children[chain[-1]]) == 1 and not present[chain[-1]]:
            chain.append(children[chain[-1]][0])
        below = chain[-1] if present[chain[-1]] else None
        if below is None:  # nothing present below: the T-pose's bone at the rig's size
            rest[s] = rest[ancestor] + tpose.offsets[s] * size
            continue
        lengths = [float(tpose.offsets[c].norm()) for c in chain]  # ancestor -> s -> ... -> below, canonically
        share = lengths[0] / max(sum(lengths), 1e-12)
        rest[s] = rest[ancestor] + (rig.canonical_rest[below] - rest[ancestor]) * share
    return rest


def host_port(host: str, port: int) -> str:
    """``host:port`` as a person writes it: an IPv6 address in brackets (``[::1]:39539``, not ``::1:39539``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class StreamError(SkelanimError):
    """A stream that cannot start or goes wrong (an unknown host, a port out of range, a network error)."""


def mirror_x(quaternions: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
    """Right-handed ``(..., 4)`` quaternions (w, x, y, z) and ``(..., 3)`` positions in Unity's left-handed
    axes (X mirrored; the same function goes back): ``(w, x, -y, -z)`` (:func:`~skelanim.ops.mirror.mirror_quat`
    across X) and ``(-x, y, z)``."""
    from skelanim.ops.mirror import mirror_quat

    return mirror_quat(quaternions, axis=0), positions * positions.new_tensor([-1.0, 1, 1])


@dataclass(frozen=True)
class AvatarFrames:
    """Humanoid poses ready to stream (Unity's left-handed axes, metres).

    Attributes
    ----------
    rotations : Tensor
        ``(F, B, 4)`` local quaternions (w, x, y, z).
    positions : Tensor
        ``(F, B, 3)`` local positions: ``Hips`` over the floor, the other bones their T-pose offset.
    fps : float
        Frame rate.
    bones : tuple of str
        The ``B`` bones' names (Unity's), default those of :data:`HUMANOID_BONES`.
    """

    rotations: Tensor
    positions: Tensor
    fps: float
    bones: tuple[str, ...] = tuple(HUMANOID_BONES)

    @property
    def num_frames(self) -> int:
        """``F``."""
        return int(self.rotations.shape[0])


def _up_direction(motion: Motion | None, up: Any, up_axis: int | str | None) -> tuple[int, float]:
    """The source's up axis and sign from ``up`` (an ``(axis, sign)`` pair) or ``up_axis`` (``0/1/2``, ``"y"``,
    ``"-z"``: :func:`~skelanim.ops._common.signed_up`, as every ops function reads it), at most one of them given;
    neither: ``motion.up_direction()``, +Y for a bare skeleton."""
    if up is None:
        return signed_up(motion, up_axis)
    if up_axis is not None:
        raise StreamError(f"give the up axis once, up={up!r} or up_axis={up_axis!r}, not both")
    axis, sign = up if isinstance(up, (tuple, list)) and len(up) == 2 else (None, None)
    if (not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not 0 <= axis <= 2
            or not isinstance(sign, (int, float, np.integer, np.floating)) or isinstance(sign, bool)
            or not math.isfinite(sign) or sign == 0):  # fmt: skip
        raise StreamError(f"up is an (axis, sign) pair such as (1, 1.0) or (2, -1.0), axis 0, 1 or 2, got {up!r} "
                          "(or give up_axis=1, 'y' or '-z')")  # fmt: skip
    return int(axis), 1.0 if sign > 0 else -1.0


def loop_travel(frames: AvatarFrames) -> Tensor:
    """``(3,)`` the horizontal travel of ``Hips`` from the first frame to the last (``y`` zero; zeros without a
    ``Hips`` bone): how far a looped clip moves on at each play."""
    travel = torch.zeros(3, dtype=frames.positions.dtype)
    if "Hips" in frames.bones and frames.num_frames > 0:
        hips = frames.bones.index("Hips")
        travel = frames.positions[-1, hips] - frames.positions[0, hips]
        travel[1] = 0.0
    return travel


def seamless_loop(frames: AvatarFrames, tol: float = 1e-6) -> bool:
    """Whether a clip's last pose is its first: every bone's rotation the same (quaternion dot product within
    ``tol`` of 1 in absolute value) and the ``Hips`` at the same height (within ``tol`` metres), wherever it has
    travelled to, as a DeepMimic ``Loop: wrap`` clip ends."""
    if frames.num_frames < 2:
        return False
    first, last = frames.rotations[0], frames.rotations[-1]
    if float((first * last).sum(-1).abs().min()) < 1 - tol:
        return False
    if "Hips" not in frames.bones:
        return True
    hips = frames.bones.index("Hips")
    return abs(float(frames.positions[-1, hips, 1] - frames.positions[0, hips, 1])) <= tol


class AvatarEncoder:
    """Turns local joint rotations of one skeleton into :class:`AvatarFrames`, a clip or one live frame at a time.

    Parameters
    ----------
    skeleton : Skeleton, Motion or CanonicalRig
        The source skeleton; a motion also calibrates the bone frames on itself where its zero pose is no body
        pose (:func:`~skelanim.retarget.retargeter.make_rig`), which a live source should do on a recorded clip.
    mapping : JointMapping, mapping or path, optional
        The source's joint mapping: a user mapping or its file, as :func:`~skelanim.retarget.mapping.map_skeleton`
        takes it, or the :class:`~skelanim.retarget.mapping.JointMapping` it returns for this skeleton.
    up : (int, float), optional
        The source's up axis and sign, ``(1, 1.0)`` for +Y (default: ``motion.up_direction()``, or +Y for a bare
        skeleton).
    up_axis : int or str, optional
        The same as the ops take it: ``0``, ``1``, ``2`` or ``"x"``, ``"y"``, ``"z"`` with an optional sign (``"-y"``:
        Y down). Give ``up`` or ``up_axis``, not both.
    metres_per_unit : float, optional
        Default: from the motion's unit, else guessed from its stature (:func:`~skelanim.io.gltf.export_scale`).
    floor : float
        Height of the floor along the up axis, in the source's units (``avatar_frames`` finds a clip's).
    avatar : AvatarRig, optional
        The receiving avatar (:func:`~skelanim.serve.avatar.load_vrm`): its bones are sent (:func:`bone_plan`),
        with its own offsets, and the hips' travel is scaled by its leg length over the source's. Without it the
        bones of :data:`HUMANOID_BONES` go out with the source's offsets (a joint the source lacks: the canonical
        T-pose's, at the source's size).
    """

    def __init__(
        self,
        skeleton: Skeleton | Motion | CanonicalRig,
        *,
        mapping: JointMapping | Mapping[str, Any] | str | os.PathLike | None = None,
        up: tuple[int, float] | None = None,
        up_axis: int | str | None = None,
        metres_per_unit: float | None = None,
        floor: float = 0.0,
        avatar: AvatarRig | None = None,
    ) -> None:
        motion = skeleton if isinstance(skeleton, Motion) else None
        direction = _up_direction(motion, up, up_axis)  # checked before the rig's work
        self.rig = make_rig(skeleton, mapping)
        self.turn = up_to_y_matrix(*direction)
        if metres_per_unit is None:
            metres_per_unit = export_scale(motion if motion is not None else Motion.rest(self.rig.skeleton))[0]
        if not (math.isfinite(metres_per_unit) and metres_per_unit > 0):
            raise StreamError(f"metres per unit must be a positive number, got {metres_per_unit}")
        self.metres_per_unit = float(metres_per_unit)
        self.floor = float(floor)
        self.plan = HUMANOID_BONES if avatar is None else bone_plan(frozenset(avatar.offsets))
        # one scale for the hips' height and travel: an avatar's bone table gives its leg length, not the thigh
        # and shin apart as retargeting's stride legs (retarget.rig.stride_leg) would need
        self.hips_scale = 1.0 if avatar is None else avatar.leg_length / (self.rig.leg_length * self.metres_per_unit)
        if avatar is not None:
            self._rest_offsets = torch.tensor(np.stack([avatar.offsets[b] for b in self.plan]), dtype=torch.float64)
        else:
            self._rest_offsets = self._source_offsets()

    def _source_offsets(self) -> Tensor:
        """``(B, 3)`` each bone's T-pose offset from its parent bone, Unity's axes, metres, in the source's
        proportions.

        A bone sits at the first of its joints the source has: a joint it lacks turns with its parent (its local
        rotation is the identity), so the product a bone carries turns about that joint. ``Chest`` carries
        ``spine1`` and ``chest``; a clip without ``spine1`` (Bandai, DeepMimic, pymo) bends its upper body at its
        chest joint, and a ``Chest`` at a made-up ``spine1`` point below it had put the neck, head and arms 12-50 mm
        off. A bone none of whose joints the source has sits at the joint it is named for (:func:`_filled_rest`
        places it)."""
        rest = _filled_rest(self.rig) * self.metres_per_unit
        present = self.rig.present.tolist()
        at: dict[str, str] = {}
        for bone, joints in self.plan.items():
            have = [j for j in joints if present[_SLOT[j]]]
            at[bone] = have[0] if have else next((j for j in joints if BONE_OF_JOINT[j] == bone), joints[0])
        bone_of_joint = {j: b for b, joints in self.plan.items() for j in joints}
        rows = []
        for bone, joints in self.plan.items():
            parent = CANONICAL_PARENTS[_SLOT[joints[0]]]
            rows.append(torch.zeros(3, dtype=rest.dtype) if parent < 0 else
                        rest[_SLOT[at[bone]]] - rest[_SLOT[at[bone_of_joint[CANONICAL_JOINTS[parent]]]]])  # fmt: skip
        return mirror_x(torch.zeros(4, dtype=rest.dtype), torch.stack(rows))[1]  # Unity's axes

    def canonical(self, rotations: Tensor, translations: Tensor) -> tuple[Tensor, Tensor]:
        """Y-up canonical bone frames ``(F, 22, 3, 3)`` and joint positions ``(F, 22, 3)`` (source units) from
        ``(F, J, 4)`` local quaternions and ``(F, J, 3)`` local translations (row 0 the root position, as
        :meth:`Motion.local_translations` gives them), or one frame, ``(J, 4)`` and ``(J, 3)`` (``F`` = 1)."""
        rot = torch.as_tensor(rotations, dtype=torch.float64)
        trans = torch.as_tensor(translations, dtype=torch.float64)
        given = f"{tuple(rot.shape)} and {tuple(trans.shape)}"
        rot, trans = (rot[None] if rot.ndim == 2 else rot), (trans[None] if trans.ndim == 2 else trans)
        n = self.rig.skeleton.num_joints
        if rot.ndim != 3 or rot.shape[1:] != (n, 4) or trans.shape != (rot.shape[0], n, 3):
            raise ShapeError(f"AvatarEncoder: rotations must be (F, {n}, 4) or ({n}, 4) and translations (F, {n}, 3) "
                             f"or ({n}, 3), got {given}")  # fmt: skip
        frames, pos = self.rig.encode(rot, trans)
        return self.turn @ frames, pos @ self.turn.T

    def encode(self, rotations: Tensor, translations: Tensor, fps: float = 30.0) -> AvatarFrames:
        """Avatar frames (``F`` of them) from ``(F, J, 4)`` local quaternions and ``(F, J, 3)`` local translations,
        or from one live frame, ``(J, 4)`` and ``(J, 3)`` as :meth:`~skelanim.retarget.Retargeter.step` gives it
        (``F`` = 1: what ``(1, J, 4)`` and ``(1, J, 3)`` give)."""
        return self.from_canonical(*self.canonical(rotations, translations), fps)

    def from_canonical(self, frames: Tensor, positions: Tensor, fps: float) -> AvatarFrames:
        """Avatar frames from the output of :meth:`canonical`."""
        hips = positions[:, _HIPS] * self.metres_per_unit
        hips[:, 1] -= self.floor * self.metres_per_unit
        local = canonical_locals(frames)
        bones = []
        for joints in self.plan.values():
            r = local[:, _SLOT[joints[0]]]
            for more in joints[1:]:
                r = r @ local[:, _SLOT[more]]
            bones.append(r)
        quats, hips = mirror_x(quat_normalize(matrix_to_quat(torch.stack(bones, dim=1))), hips * self.hips_scale)
        offsets = self._rest_offsets.expand(quats.shape[0], -1, -1).clone()
        offsets[:, 0] = hips
        return AvatarFrames(quats, offsets, float(fps), tuple(self.plan))


def avatar_frames(
    motion: Motion,
    *,
    mapping: JointMapping | Mapping[str, Any] | str | os.PathLike | None = None,
    up: tuple[int, float] | None = None,
    up_axis: int | str | None = None,
    avatar: AvatarRig | None = None,
) -> AvatarFrames:
    """A whole clip as avatar frames (its floor found as the retargeter finds it; see the module docstring and
    :class:`AvatarEncoder` for the options)."""
    encoder = AvatarEncoder(motion, mapping=mapping, up=up, up_axis=up_axis, avatar=avatar)
    frames, positions = encoder.canonical(motion.rotations, motion.local_translations())
    if motion.num_frames:
        encoder.floor = floor_level(positions[:, list(FEET), 1], encoder.rig.height)
    return encoder.from_canonical(frames, positions, motion.fps)


def _message(address: str, *values: Any) -> Any:
    builder = OscMessageBuilder(address=address)
    for v in values:
        builder.add_arg(v)
    return builder.build()


def _frame_messages(frames: AvatarFrames, index: int, time_s: float) -> list[Any]:
    """The OSC messages of frame ``index``: root, every bone, ``OK`` and the time ``time_s``."""
    messages = [_message("/VMC/Ext/Root/Pos", "root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)]
    rot, pos = frames.rotations[index].tolist(), frames.positions[index].tolist()
    for name, (w, x, y, z), p in zip(frames.bones, rot, pos):
        messages.append(_message("/VMC/Ext/Bone/Pos", name, *p, x, y, z, w))
    return [*messages, _message("/VMC/Ext/OK", 1), _message("/VMC/Ext/T", float(time_s))]


def _bundle(messages: list[Any]) -> bytes:
    bundle = OscBundleBuilder(IMMEDIATELY)
    for message in messages:
        bundle.add_content(message)
    return bundle.build().dgram


def vmc_bundle(frames: AvatarFrames, index: int, time_s: float) -> bytes:
    """The OSC bundle (bytes) of frame ``index``: root, every bone, ``OK`` and the time ``time_s``."""
    return _bundle(_frame_messages(frames, index, time_s))


def vmc_bundles(frames: AvatarFrames, index: int, time_s: float, max_bytes: int = MAX_DATAGRAM) -> list[bytes]:
    """Frame ``index`` as :func:`vmc_bundle`'s messages in order, cut into bundles of at most ``max_bytes`` each (one
    message per bundle at least): a frame of 21 bones is 1,752 bytes, more than one Ethernet datagram carries
    unfragmented, and a network that drops one fragment loses the whole frame. ``OK`` and the time end the last
    bundle, so a receiver closes the frame there (:mod:`.record` does)."""
    out: list[bytes] = []
    part: list[Any] = []
    size = _BUNDLE_HEADER
    for message in _frame_messages(frames, index, time_s):
        grown = size + 4 + len(message.dgram)  # each element is its size (4 bytes) and its bytes
        if part and grown > max_bytes:
            out.append(_bundle(part))
            part, grown = [], _BUNDLE_HEADER + 4 + len(message.dgram)
        part.append(message)
        size = grown
    return [*out, _bundle(part)]


class AvatarStream:
    """Send avatar frames over UDP as the VMC protocol.

    Parameters
    ----------
    host : str
        The marionette's host name or address.
    port : int
        Its UDP port (:data:`DEFAULT_PORT`).

    Attributes
    ----------
    target : str
        ``host:port`` sent to, for messages (an IPv6 address in brackets: ``[::1]:39539``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
        port = int(port) if isinstance(port, np.integer) else port  # numpy's integers are ports; a bool is not
        if not (isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536):
            raise StreamError(f"port must be 1-65535, got {port!r}")
        try:
            family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        except (OSError, UnicodeError) as err:
            raise StreamError(f"cannot resolve host {host!r}: {getattr(err, 'strerror', None) or err}") from None
        self.target = host_port(host, port)  # for messages: ``[::1]:39539`` for an IPv6 address
        self._address = address
        self._socket = socket.socket(family, kind, proto)
        if family == socket.AF_INET:  # a LAN's broadcast address (x.x.x.255) is refused without it
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        self._sent: tuple[tuple[str, ...], Tensor] | None = None  # the bones and (1, B, 4) rotations sent last

    def close(self) -> None:
        """Close the socket."""
        self._socket.close()

    def __enter__(self) -> AvatarStream:  # noqa: PYI034 (Python 3.10 has no typing.Self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, frames: AvatarFrames, index: int = 0, time_s: float = 0.0, *, shift: Tensor | None = None) -> int:
        """Send frame ``index`` stamped ``time_s``, ``Hips`` moved by ``shift`` ``(3,)`` if given (a loop's
        travel); returns the bytes sent. Each bone's quaternion goes out in the hemisphere of the one sent before
        it (the same rotation), so that a receiver that slerps without checking does not spin a body turning
        through w = 0 a full turn; live frames sent one by one, skipped frames and loops included."""
        rotations = frames.rotations[index : index + 1]
        if self._sent is not None and self._sent[0] == frames.bones:
            rotations = quat_continuous(torch.cat([self._sent[1], rotations]))[1:]
        self._sent = (frames.bones, rotations)
        positions = frames.positions[index : index + 1]
        if shift is not None and "Hips" in frames.bones:
            positions = positions.clone()
            positions[0, frames.bones.index("Hips")] += shift.to(positions.dtype)
        frame = AvatarFrames(rotations, positions, frames.fps, frames.bones)
        try:
            return sum(self._socket.sendto(datagram, self._address) for datagram in vmc_bundles(frame, 0, time_s))
        except OSError as err:
            raise StreamError(f"cannot send to {self.target}: {err.strerror or err}") from None

    def play(
        self,
        frames: AvatarFrames,
        *,
        speed: float = 1.0,
        loop: bool = False,
        wrap: bool | None = None,
        max_frames: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        on_frame: Callable[[int], None] | None = None,
    ) -> int:
        """Play ``frames`` in real time: at each moment the frame its clip time falls in, so a slow receiver or
        a busy machine skips frames rather than falling behind. Returns the number of frames sent.

        ``speed`` scales time; ``loop`` starts over at the end (until ``max_frames`` are sent or Ctrl-C), each play
        moved on so that a looped walk walks on instead of jumping back to its start (a turning clip is repeated
        without its turn): a clip whose last frame is its next play's first (``wrap=True``: DeepMimic's ``Loop:
        wrap``, whose last frame lasts no time; ``None``: where the last pose is the first, :func:`seamless_loop`)
        plays its frames but the last and moves on by the hips' travel from the first frame to the last
        (:func:`loop_travel`); any other clip plays every frame and
        moves on by that travel and one mean step more, so the moved first frame follows the last a step on (the
        hips had held for a frame at every wrap: a 33 ms hitch every 1.3 s of DeepMimic's walk).
        ``clock``/``sleep`` are injectable for tests; ``on_frame(index)`` is called after each send."""
        if not (math.isfinite(speed) and speed > 0):
            raise StreamError(f"speed must be a positive number, got {speed}")
        total = frames.num_frames
        if total == 0:
            return 0
        rate = frames.fps * speed
        travel = loop_travel(frames)
        period = total
        if loop and total > 1:
            if wrap if wrap is not None else seamless_loop(frames):
                period = total - 1  # its last frame is its first, moved on: played once, as the next play's first
            else:
                travel = travel * (total / (total - 1))  # one mean step more: no frame held at the wrap
        start, sent, last = clock(), 0, -1
        while max_frames is None or sent < max_frames:
            elapsed = clock() - start
            tick = math.floor(elapsed * rate + 1e-9)
            if tick >= total and not loop:
                break
            if tick != last:  # stamped with the frame's own moment (the sending moment was up to a frame late)
                self.send(frames, tick % period, tick / rate,
                          shift=(tick // period) * travel if tick >= period else None)  # fmt: skip
                sent, last = sent + 1, tick
                if on_frame is not None:
                    on_frame(tick % period)
            sleep(max(0.0, (tick + 1) / rate - (clock() - start)))
        return sent
