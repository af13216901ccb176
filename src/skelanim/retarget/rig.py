r"""A skeleton seen through the canonical joints: rest bone frames, canonical offsets, encode and decode.

Rest-pose-aware rotations
-------------------------
Skeletons disagree on what "no rotation" means: a T-pose (CMU), an A- or I-pose (the DeepMimic humanoid's
arms hang down), or joint frames turned so that every bone lies along one local axis (Bandai-Namco's along
+X, the production rig's along +Y). Rotations are therefore never copied joint to joint. Each mapped joint
``c`` gets a **rest bone frame** ``G_c`` (world, in the rest pose), built by one recipe from rest positions
alone:

* first axis: the joint's bone direction (to the next canonical joint down its chain: hips and chest
  upwards, a limb joint towards the next limb joint, a leaf along its parent's bone; a foot without toes
  points forward); a foot's and its toe's are then turned level by the skeleton's stance pitch, so that a
  foot flat on the ground maps to a foot flat on the ground whatever the ankle joint's height (:mod:`.stance`);
* second axis: the body's lateral axis (centre joints, legs, feet) or its forward axis (arms), made
  orthogonal (Gram-Schmidt, :func:`~skelanim.core.rotations.rot6d_to_matrix`); the body axes come from the
  rest pose too: up from hips to chest, and lateral (forward = lateral x up) measured twice, apart: the
  **pelvis's** from the right to the left upper leg (for the hips, legs and feet) and the **chest's** from
  the right to the left upper arm (for the spine, chest, neck, head and arms). A zero pose need not be a
  physical pose: Bandai-Namco's turns the pelvis 90 degrees against the chest (legs along -Y, shoulders
  along +Z, and its spine joints turn with the chest), so one axis for the whole body (their mean) would
  put both frames 45 degrees off and twist every retarget from or onto it.

With ``W_c`` the joint's world rotation in the rest (bind) pose, ``F_c = W_c^T G_c`` is the bone frame in
the joint's own coordinates, and a posed joint with world rotation ``R_c`` has the bone frame

.. math:: Q_c = R_c F_c C_c^T ,

with ``C_c`` the frame of the same joint in a built-in canonical T-pose (facing +Z, Y up, left +X), so that
``Q = I`` everywhere is the T-pose. ``Q`` no longer depends on the skeleton's joint conventions: copying it
and going back with the target's frames, ``R^B_c = Q_c C_c F^B_c{}^T``, transfers world-space bone rotations
relative to each rest pose. Bone *directions* transfer exactly; the twist about a bone is matched through
the body axes. Where the zero pose is no body pose (a leg along the spine), which way a limb was turned into
the body is a guess, and the skeleton's own motion settles it (``calibration``, :func:`calibrated_frames`).

Canonical skeleton
------------------
Every rig also becomes a 22-joint skeleton in canonical coordinates (:data:`~.mapping.CANONICAL_PARENTS`):
``offsets[c] = C_p G_p^T (P_c - P_p)`` with ``p`` the nearest mapped canonical ancestor and ``P`` rest
positions; missing joints get zero offsets and (in ``Q``) their parent's frame. Forward kinematics of ``Q``
on these offsets gives exactly the mapped joints' world positions, so networks and losses work on one
22-joint layout for every skeleton.

Decoding to the full skeleton keeps joints outside the canonical set at their rest rotation relative to
their nearest mapped ancestor; joints above the hips (a static dummy root) keep their rest world rotation
and the root is translated so that the hips land where asked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from skelanim.core.kinematics import forward_kinematics, forward_kinematics_joints
from skelanim.core.rotations import matrix_to_quat, mean_rotations, quat_identity, quat_to_matrix, rot6d_to_matrix
from skelanim.core.skeleton import Skeleton
from skelanim.retarget.mapping import CANONICAL_JOINTS, CANONICAL_PARENTS, JointMapping, MappingError, map_skeleton
from skelanim.retarget.stance import level_feet, sole_height

__all__ = [
    "CALIBRATED_LIMBS", "CanonicalRig", "calibrate_rig", "calibrated_frames", "calibration_poses", "canonical_fk",
    "canonical_frames", "canonical_locals", "canonical_skeleton", "canonical_tpose", "frames_from_locals",
    "physical_zero_pose",
]  # fmt: skip

_EPS = 1e-9
_ARMS = {"clavicle", "upperarm", "forearm", "hand"}
_LOWER = {"hips", "upleg", "leg", "foot", "toe"}  # frames from the pelvis axes; the rest from the chest's
#: The limbs (per side) whose bone frames a calibration turns as motion shows (:func:`calibrated_frames`).
CALIBRATED_LIMBS = (("upleg", "leg", "foot", "toe"), ("clavicle", "upperarm", "forearm", "hand"))
_NEXT = {"hips": ("chest",), "spine": ("spine1", "chest"), "spine1": ("chest",), "chest": ("neck", "head"),
         "neck": ("head",)}  # fmt: skip
for _s in "lr":
    for _a, _b in (("clavicle", "upperarm"), ("upperarm", "forearm"), ("forearm", "hand"), ("upleg", "leg"),
                   ("leg", "foot"), ("foot", "toe")):  # fmt: skip
        _NEXT[f"{_s}_{_a}"] = (f"{_s}_{_b}",)
SLOT = {n: i for i, n in enumerate(CANONICAL_JOINTS)}


def canonical_tpose() -> Skeleton:
    """The canonical T-pose skeleton (22 joints, metres, Y up, facing +Z, left hand at +X, height ~1.7)."""
    off = {
        "hips": (0, 0, 0), "spine": (0, 0.1, 0), "spine1": (0, 0.12, 0), "chest": (0, 0.12, 0),
        "neck": (0, 0.2, 0), "head": (0, 0.1, 0), "l_clavicle": (0.02, 0.15, 0), "l_upperarm": (0.15, 0, 0),
        "l_forearm": (0.28, 0, 0), "l_hand": (0.25, 0, 0), "l_upleg": (0.09, -0.05, 0), "l_leg": (0, -0.42, 0),
        "l_foot": (0, -0.4, 0), "l_toe": (0, -0.05, 0.14),
    }  # fmt: skip
    rows = []
    for n in CANONICAL_JOINTS:
        if n.startswith("r_"):
            x, y, z = off["l_" + n[2:]]
            rows.append((-x, y, z))
        else:
            rows.append(off[n])
    return Skeleton(list(CANONICAL_JOINTS), np.array(CANONICAL_PARENTS), torch.tensor(rows, dtype=torch.float64))


def _unit(v: Tensor) -> Tensor | None:
    n = float(v.norm())
    return v / n if n > _EPS else None


def _frame(primary: Tensor, seconds: list[Tensor]) -> Tensor:
    for s in seconds:
        if float(torch.linalg.cross(primary, s).norm()) > 0.3:
            return rot6d_to_matrix(torch.cat([primary, s]))
    return rot6d_to_matrix(torch.cat([primary, seconds[0]]))


def _lateral(pos: Tensor, at: dict[str, int], part: str, up: Tensor) -> Tensor | None:
    """Unit right-to-left direction ``(3,)`` of a pair of joints, made orthogonal to ``up`` (``None``: degenerate)."""
    d = _unit(pos[at[f"l_{part}"]] - pos[at[f"r_{part}"]])
    return None if d is None else _unit(d - (d @ up) * up)


def _body_axes(pos: Tensor, at: dict[str, int]) -> tuple[Tensor, tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
    """The body's axes in the rest pose: ``up`` ``(3,)``, and ``(lateral, forward)`` ``(3,)`` each of the
    pelvis (from the hips, the upper legs' joints) and of the chest (from the shoulders, the upper arms'
    joints). Pelvis and chest are measured apart: a zero pose may turn one against the other (Bandai-Namco's
    legs lie along -Y, its shoulders along +Z); one that is degenerate takes the other's."""
    up = _unit(pos[at["chest"]] - pos[at["hips"]])
    up = up if up is not None else torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    pelvis, chest = _lateral(pos, at, "upleg", up), _lateral(pos, at, "upperarm", up)
    pelvis = pelvis if pelvis is not None else chest
    chest = chest if chest is not None else pelvis
    if pelvis is None or chest is None:
        side = torch.linalg.cross(up, torch.eye(3, dtype=torch.float64)[int(up.abs().argmin())])
        pelvis = chest = side / side.norm()
    return up, (pelvis, torch.linalg.cross(pelvis, up)), (chest, torch.linalg.cross(chest, up))


def _rest_up(pos: Tensor, index: np.ndarray) -> Tensor:
    """``(3,)`` the body's up in a pose of ``(J, 3)`` positions (:func:`_body_axes`)."""
    return _body_axes(pos, {n: int(index[i]) for i, n in enumerate(CANONICAL_JOINTS) if index[i] >= 0})[0]


def _rest_frames(skeleton: Skeleton, index: np.ndarray, world: Tensor, pos: Tensor) -> Tensor:
    """``(22, 3, 3)`` rest bone frames ``G`` (identity for missing joints); see the module docstring."""
    at = {n: int(index[i]) for i, n in enumerate(CANONICAL_JOINTS) if index[i] >= 0}
    up, pelvis, chest = _body_axes(pos, at)
    frames = torch.eye(3, dtype=torch.float64).repeat(len(CANONICAL_JOINTS), 1, 1)
    primary: dict[str, Tensor] = {}
    for i, name in enumerate(CANONICAL_JOINTS):
        if name not in at:
            continue
        j = at[name]
        direction = None
        for nxt in _NEXT.get(name, ()):
            if nxt in at:
                direction = _unit(pos[at[nxt]] - pos[j])
                if direction is not None:
                    break
        if direction is None and name.endswith(("forearm", "upperarm", "leg", "upleg")):
            ends = skeleton.end_sites.get(j)
            kids = [c for c in skeleton.children(j) if float(skeleton.offsets[c].norm()) > _EPS]
            if ends is not None and float(ends.norm()) > _EPS:
                direction = _unit(world[j] @ ends)
            elif kids:
                longest = max(kids, key=lambda c: float(skeleton.offsets[c].norm()))
                direction = _unit(pos[longest] - pos[j])
        part = name[2:] if name[:2] in ("l_", "r_") else name
        lat, fwd = pelvis if part in _LOWER else chest
        if direction is None and name.endswith("foot"):
            direction = fwd
        if direction is None:
            parent = CANONICAL_PARENTS[i]
            while parent >= 0 and CANONICAL_JOINTS[parent] not in primary:
                parent = CANONICAL_PARENTS[parent]
            if parent >= 0:
                direction = _unit(pos[j] - pos[at[CANONICAL_JOINTS[parent]]])
                direction = primary[CANONICAL_JOINTS[parent]] if direction is None else direction
            else:
                direction = up
        if name == "hips":
            direction = up
        primary[name] = direction
        seconds = [fwd, up] if part in _ARMS else [lat, fwd] if part in ("upleg", "leg") else \
            [lat, up] if part in ("foot", "toe") else [lat, fwd]  # fmt: skip
        frames[i] = _frame(direction, seconds)
    return frames


def calibration_poses(skeleton: Skeleton, frames: Tensor, samples: int = 100) -> tuple[Tensor, Tensor]:
    """World rotations ``(S, J, 3, 3)`` and positions ``(S, J, 3)`` of at most ``samples`` frames of local
    quaternions ``(T, J, 4)`` (evenly spread), on the skeleton's rest offsets with the root at the origin."""
    pick = np.unique(np.linspace(0, len(frames) - 1, min(samples, len(frames))).round().astype(int))
    trans = skeleton.offsets.clone().to(torch.float64)
    trans[0] = 0.0
    return forward_kinematics(torch.as_tensor(frames, dtype=torch.float64)[pick], trans.expand(len(pick), -1, -1),
                              skeleton.parents.tolist())  # fmt: skip


def calibrated_frames(
    skeleton: Skeleton, index: np.ndarray, rest_world: Tensor, rest_frames: Tensor, world: Tensor, pos: Tensor
) -> Tensor:
    """``(22, 3, 3)`` rest bone frames with the limbs' turned as the skeleton's motion shows them.

    In a zero pose that is no body pose a limb may point up or along the spine, and which way it was turned
    into the body is a guess of the rest-frame recipe (module docstring): the truth differs from the guess by
    a quarter or half turn that maps the frame's axes onto its axes. The motion tells which: each posed frame
    ``t`` (physical) gives ``F_t = W_t^T G_t``, the joint's frame by the same recipe in its own coordinates, and
    the nearest of those 24 turns to their chordal mean ``W_rest mean(F_t)`` is the answer. It is measured at
    each limb's first joint (:data:`CALIBRATED_LIMBS`: the upper leg, the clavicle), whose twist a motion moves
    least, and applied to the limb's every joint: such a zero pose lays a limb out straight with one set of axes
    (Bandai-Namco's along +X, the production rig's along +Y), so one turn holds for all of it. Measured at the
    joint itself the turn of a forearm or hand depends on the take (its mean pronation turns it); at the limb's
    first joint it is the same from every take (Bandai-Namco walks, runs, bows, byes, guides: a half turn for the
    legs, a quarter turn for the arms; the production rig: a half turn for the legs, none for the arms).

    Parameters
    ----------
    skeleton : Skeleton
        ``J`` joints.
    index : ndarray
        ``(22,)`` skeleton joint per canonical joint (``-1``: missing).
    rest_world : Tensor
        ``(J, 3, 3)`` world rotations of the rest pose.
    rest_frames : Tensor
        ``(22, 3, 3)`` bone frames by the rest-frame recipe (the guess).
    world, pos : Tensor
        ``(S, J, 3, 3)`` and ``(S, J, 3)``: posed frames of the skeleton (:func:`calibration_poses`).
    """
    limbs = [[SLOT[f"{side}_{part}"] for part in chain if index[SLOT[f"{side}_{part}"]] >= 0]
             for side in "lr" for chain in CALIBRATED_LIMBS]  # fmt: skip
    limbs = [limb for limb in limbs if limb]
    roots = np.array([limb[0] for limb in limbs])
    joints = torch.from_numpy(index[roots])
    per_frame = torch.stack([world[t, joints].transpose(-1, -2) @ _rest_frames(skeleton, index, world[t], pos[t])[roots]
                             for t in range(len(world))])  # fmt: skip
    measured = rest_world[joints] @ mean_rotations(per_frame)
    turns = _axis_turns()
    in_guess = rest_frames[roots].transpose(-1, -2) @ measured  # the measured frame in the guessed one's axes
    best = torch.einsum("sij,kij->sk", in_guess, turns).argmax(-1)
    frames = rest_frames.clone()
    for limb, turn in zip(limbs, turns[best]):
        frames[limb] = rest_frames[limb] @ turn
    return frames


def _axis_turns() -> Tensor:
    """``(24, 3, 3)`` the rotations that map the coordinate axes onto (signed) coordinate axes."""
    eye = torch.eye(3, dtype=torch.float64)
    mats = [torch.diag(torch.tensor(signs, dtype=torch.float64)) @ eye[list(order)]
            for order in ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))
            for signs in ((1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1), (-1, 1, 1), (-1, 1, -1), (-1, -1, 1), (-1, -1, -1))]  # fmt: skip
    return torch.stack([m for m in mats if torch.linalg.det(m) > 0])


def physical_zero_pose(skeleton: Skeleton, mapping: JointMapping | None = None) -> bool:
    """Whether the skeleton's zero pose is a body pose: both upper legs point down, away from the chest (not so
    for Bandai-Namco, whose zero pose lays every bone along +X, one leg along the spine)."""
    index = (mapping or map_skeleton(skeleton)).index
    pos = skeleton.rest_positions().to(torch.float64)
    at = {n: int(index[i]) for i, n in enumerate(CANONICAL_JOINTS) if index[i] >= 0}
    up = _unit(pos[at["chest"]] - pos[at["hips"]])
    if up is None:  # no spine direction: no leg can be told to point up
        return True
    for side in "lr":
        knee, hip = at.get(f"{side}_leg"), at.get(f"{side}_upleg")
        thigh = None if knee is None or hip is None else _unit(pos[knee] - pos[hip])
        if thigh is not None and float(thigh @ up) > -0.5:
            return False
    return True


def _ancestors(skeleton: Skeleton, joint: int) -> list[int]:
    parents, out = skeleton.parents, []
    while int(parents[joint]) >= 0:
        joint = int(parents[joint])
        out.append(joint)
    return out


def calibrate_rig(rig: CanonicalRig, rotations: Tensor) -> CanonicalRig:
    """``rig`` with its bone frames calibrated on ``(T, J, 4)`` local quaternions of its skeleton's own motion
    when its zero pose is no body pose (:func:`physical_zero_pose`; Bandai-Namco's, the production rig's), else
    ``rig`` itself: the rule of ``skelanim retarget`` and of NKN's training families."""
    if rig.calibration is not None or physical_zero_pose(rig.skeleton, rig.mapping):
        return rig
    return CanonicalRig(rig.skeleton, rig.mapping, rig.rest, calibration=rotations)


_CANONICAL_FRAMES: Tensor | None = None


def canonical_frames() -> Tensor:
    """``(22, 3, 3)`` rest bone frames ``C`` of :func:`canonical_tpose` (float64, cached)."""
    global _CANONICAL_FRAMES
    if _CANONICAL_FRAMES is None:
        sk = canonical_tpose()
        eye = torch.eye(3, dtype=torch.float64).repeat(sk.num_joints, 1, 1)
        index, pos = np.arange(sk.num_joints), sk.rest_positions().to(torch.float64)
        _CANONICAL_FRAMES = level_feet(_rest_frames(sk, index, eye, pos), index, eye, pos, _rest_up(pos, index))
    return _CANONICAL_FRAMES


def canonical_locals(frames: Tensor) -> Tensor:
    """Canonical local rotations ``Q_parent^T Q`` from ``(..., 22, 3, 3)`` world bone frames (hips: ``Q``)."""
    parent = torch.tensor([max(p, 0) for p in CANONICAL_PARENTS])
    local = frames.index_select(-3, parent).transpose(-1, -2) @ frames
    return torch.cat([frames[..., :1, :, :], local[..., 1:, :, :]], dim=-3)


def canonical_skeleton(offsets: Tensor) -> Skeleton:
    """A :class:`Skeleton` of the 22 canonical joints with the given ``(22, 3)`` canonical offsets."""
    return Skeleton(list(CANONICAL_JOINTS), np.array(CANONICAL_PARENTS), offsets.detach().to(torch.float64))


@dataclass
class CanonicalRig:
    """A skeleton prepared for retargeting (see the module docstring).

    Parameters
    ----------
    skeleton : Skeleton
        The skeleton (``J`` joints).
    mapping : JointMapping, optional
        Its canonical mapping, made for this skeleton (default: :func:`~.mapping.map_skeleton`, which also makes
        one from a user mapping or its file; :func:`~.retargeter.make_rig` takes those directly).
    rest : Tensor, optional
        ``(J, 4)`` local quaternions of the rest (bind) pose the frames are measured in; default the
        identity (the file's zero pose).
    calibration : Tensor, optional
        ``(T, J, 4)`` local quaternions of frames of this skeleton's own motion: the limbs' bone frames are then
        turned as the motion shows (:func:`calibrated_frames`) instead of guessed from the rest pose, and joints
        outside the canonical chains (face, fingers, twist bones) are held against their anchor as the motion
        holds them on average. For a zero pose that is no body pose (:func:`physical_zero_pose`), where the
        twist of a limb that points up is a guess.
    """

    skeleton: Skeleton
    mapping: JointMapping | None = None
    rest: Tensor | None = None
    calibration: Tensor | None = None

    def __post_init__(self) -> None:
        sk = self.skeleton
        if self.mapping is None:
            self.mapping = map_skeleton(sk)
        elif not isinstance(self.mapping, JointMapping):
            raise TypeError(f"CanonicalRig's mapping is a JointMapping (map_skeleton(skeleton, mapping) makes one from "
                            f"a dict or a mapping file), got {type(self.mapping).__name__}")  # fmt: skip
        elif list(self.mapping.skeleton.names) != list(sk.names):
            raise MappingError("the joint mapping given to CanonicalRig was made for another skeleton (its joint "
                               "names differ): map this skeleton with map_skeleton")  # fmt: skip
        n = sk.num_joints
        rest = quat_identity((n,)) if self.rest is None else torch.as_tensor(self.rest, dtype=torch.float64)
        self.rest = rest
        trans = sk.offsets.clone()
        trans[0] = 0.0
        world, pos = forward_kinematics(rest, trans, sk.parents.tolist())
        self.rest_world, self.rest_positions = world, pos
        index = self.mapping.index
        self.present = torch.from_numpy(index >= 0)
        fill = np.arange(len(CANONICAL_JOINTS))
        for c in range(len(CANONICAL_JOINTS)):
            while index[fill[c]] < 0:
                fill[c] = CANONICAL_PARENTS[fill[c]]
        self.fill = torch.from_numpy(fill)
        self.joint_of_slot = torch.from_numpy(index[fill])  # (22,) skeleton joint per slot (missing: parent's)
        posed = None if self.calibration is None else calibration_poses(sk, self.calibration)
        g = _rest_frames(sk, index, world, pos)
        g = g if posed is None else calibrated_frames(sk, index, world, g, *posed)
        g = level_feet(g, index, world, pos, _rest_up(pos, index), posed)
        self.rest_frames = g
        cf = canonical_frames()
        f = world[self.joint_of_slot].transpose(-1, -2) @ g[self.fill]  # (22, 3, 3) F
        self.to_canonical = f @ cf.transpose(-1, -2)  # K = F C^T: Q = R K
        self.from_canonical = self.to_canonical.transpose(-1, -2)  # M = C F^T: R = Q M
        # canonical offsets: C_p G_p^T (P_c - P_p), p = nearest present ancestor
        offsets = torch.zeros(len(CANONICAL_JOINTS), 3, dtype=torch.float64)
        for s in range(1, len(CANONICAL_JOINTS)):
            if index[s] < 0:
                continue
            p = int(fill[CANONICAL_PARENTS[s]])
            offsets[s] = cf[p] @ g[p].T @ (pos[index[s]] - pos[index[p]])
        self.offsets = offsets
        canon = canonical_skeleton(offsets).rest_positions()
        self.canonical_rest = canon
        self.leg_length = float(leg_length(offsets))
        self.stride_leg = float(stride_leg(offsets))
        lows = [SLOT[k] for k in ("l_foot", "r_foot", "l_toe", "r_toe")]
        self.height = float(canon[:, 1].max() - canon[lows, 1].min())
        self.sole = float(sole_height(offsets))
        # decoding: every joint hangs from its nearest mapped ancestor-or-self (slot 22 = none: rest world)
        slot_of_joint = {int(j): s for s, j in enumerate(index) if j >= 0}
        anchor = np.full(n, len(CANONICAL_JOINTS))
        on_chains = {int(p) for j in slot_of_joint for p in _ancestors(sk, j)}  # joints between mapped ones
        rel = torch.empty(n, 3, 3, dtype=torch.float64)
        for k in range(n):
            a = k
            while a >= 0 and a not in slot_of_joint:
                a = int(sk.parents[a])
            if a < 0:
                rel[k] = world[k]
                continue
            anchor[k] = slot_of_joint[a]
            # the joint against its anchor as in the rest pose, or, off the canonical chains (face, fingers, twist
            # bones), as the calibration motion holds it on average
            if posed is None or k in on_chains:
                held = world[a].T @ world[k]
            else:
                held = mean_rotations(posed[0][:, a].transpose(-1, -2) @ posed[0][:, k])
            rel[k] = self.from_canonical[anchor[k]] @ held
        self.anchor = torch.from_numpy(anchor)
        self.decode_rel = rel
        self.parent_index = torch.tensor([max(int(p), 0) for p in sk.parents])
        self.hips_rest = pos[index[SLOT["hips"]]].clone()
        self.parents = [int(p) for p in sk.parents]
        h = int(index[SLOT["hips"]])
        self.hips_translated = h != 0 and sk.has_position_channels(h)
        self._cache: dict[torch.dtype, tuple[Tensor, ...]] = {}
        self._plans: dict[tuple[tuple[int, ...], torch.dtype], tuple[Tensor, Tensor, Tensor, Tensor]] = {}
        self._varying = self.varying_joints()

    # ------------------------------------------------------------------ tables in a dtype
    def tables(self, dtype: torch.dtype) -> tuple[Tensor, ...]:
        """``(to_canonical per slot's joint (22,3,3), decode_rel (J,3,3), offsets (22,3), hips_rest (3,))`` in
        ``dtype`` (cached)."""
        if dtype not in self._cache:
            with torch.inference_mode(False):  # cached: must serve autograd too
                self._cache[dtype] = tuple(t.to(dtype) for t in (self.to_canonical[self.fill], self.decode_rel,
                                                              self.offsets, self.hips_rest))  # fmt: skip
        return self._cache[dtype]

    # ------------------------------------------------------------------ encode / decode
    def encode_matrices(
        self, local: Tensor, translations: Tensor, extra: list[int] | None = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """World bone frames and positions of the canonical joints from local rotation matrices.

        Parameters
        ----------
        local : Tensor
            ``(F, J, 3, 3)`` local rotation matrices of the skeleton.
        translations : Tensor
            ``(F, J, 3)`` local translations (row 0: the root position), as :meth:`Motion.local_translations`.
        extra : list of int, optional
            ``E`` more joints whose world rotations are wanted.

        Returns
        -------
        tuple
            ``(F, 22, 3, 3)`` bone frames ``Q`` (missing joints: their parent's), ``(F, 22, 3)`` positions
            (missing joints: their parent's), and ``(F, E, 3, 3)`` world rotations of the ``extra`` joints
            (or ``None``).
        """
        k = self.tables(local.dtype)[0]
        joints = self.joint_of_slot.tolist() + list(extra or [])
        world, pos = forward_kinematics_joints(local, translations.to(local.dtype), self.parents, joints)
        n = len(CANONICAL_JOINTS)
        frames = world[..., :n, :, :] @ k
        return frames, pos[..., :n, :], (None if extra is None else world[..., n:, :, :])

    def slot_positions(self, local: Tensor, translations: Tensor, slots: list[int]) -> Tensor:
        """``(F, S, 3)`` positions of the canonical ``slots`` only, as :meth:`encode_matrices` gives them (the same
        products along their root paths): what a clip's feet need (:mod:`.blocks`)."""
        joints = [int(self.joint_of_slot[s]) for s in slots]
        return forward_kinematics_joints(local, translations.to(local.dtype), self.parents, joints)[1]

    def encode(self, rotations: Tensor, translations: Tensor) -> tuple[Tensor, Tensor]:
        """Bone frames ``(F, 22, 3, 3)`` and positions ``(F, 22, 3)`` from ``(F, J, 4)`` local quaternions
        (see :meth:`encode_matrices`)."""
        frames, pos, _ = self.encode_matrices(quat_to_matrix(rotations), translations)
        return frames, pos

    def decode_world(self, frames: Tensor) -> Tensor:
        """World rotations ``(F, J, 3, 3)`` of the full skeleton from ``(F, 22, 3, 3)`` bone frames ``Q``
        (joints outside the canonical set at their rest rotation relative to their nearest mapped ancestor)."""
        rel = self.tables(frames.dtype)[1]
        eye = torch.eye(3, dtype=frames.dtype).expand(*frames.shape[:-3], 1, 3, 3)
        return torch.cat([frames, eye], dim=-3).index_select(-3, self.anchor) @ rel

    def varying_joints(self, changed: list[int] | None = None) -> list[int]:
        """Joints whose local rotation after :meth:`decode_world` can differ from frame to frame: those whose
        anchor differs from their parent's (a root anchored to a slot included), and ``changed`` joints (world
        rotations set otherwise) with their children. The others keep ``rel_p^T rel_k``, a constant."""
        changed_set = set(changed or [])
        anchor, parents = self.anchor.tolist(), self.parents
        return [k for k in range(len(parents))
                if (anchor[k] != len(CANONICAL_JOINTS) if parents[k] < 0 else anchor[k] != anchor[parents[k]])
                or k in changed_set or parents[k] in changed_set]  # fmt: skip

    def _local_plan(self, varying: tuple[int, ...], dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """``(varying (V,), their parents with the root's as J (V,), constant quaternions (J, 4), gather index
        (J,) into [constants, varying])`` (cached)."""
        key = (varying, dtype)
        if key not in self._plans:
            with torch.inference_mode(False):  # cached: must serve autograd too
                self._plans[key] = self._build_plan(varying, dtype)
        return self._plans[key]

    def _build_plan(self, varying: tuple[int, ...], dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        n = self.skeleton.num_joints
        rel = self.decode_rel
        parent_rel = torch.cat([rel, torch.eye(3, dtype=rel.dtype)[None]])[[p if p >= 0 else n for p in self.parents]]
        constant = matrix_to_quat(parent_rel.transpose(-1, -2) @ rel).to(dtype)
        at = {k: i for i, k in enumerate(varying)}
        gather = torch.tensor([n + at[k] if k in at else k for k in range(n)])
        idx = torch.tensor(varying, dtype=torch.long)
        par = torch.tensor([p if p >= 0 else n for p in (self.parents[k] for k in varying)], dtype=torch.long)
        return idx, par, constant, gather

    def locals_from_world(self, world: Tensor, varying: list[int] | None = None) -> Tensor:
        """Local quaternions ``(F, J, 4)`` from world rotations ``(F, J, 3, 3)`` made by :meth:`decode_world`.

        Only the ``varying`` joints (default :meth:`varying_joints`) are converted; the others, whose local
        rotation the decoding fixes, are constants (a quarter of the work on the 100-joint production rig).
        """
        idx, par, constant, gather = self._local_plan(tuple(self._varying if varying is None else varying), world.dtype)
        eye = torch.eye(3, dtype=world.dtype).expand(*world.shape[:-3], 1, 3, 3)
        padded = torch.cat([world, eye], dim=-3)
        local = padded.index_select(-3, par).transpose(-1, -2) @ world.index_select(-3, idx)
        lead = world.shape[:-3]
        quats = torch.cat([constant.expand(*lead, -1, -1), matrix_to_quat(local)], dim=-2)
        return quats.index_select(-2, gather)

    def place_root(self, hips: Tensor) -> tuple[Tensor, Tensor | None]:
        """Root positions ``(F, 3)`` (and ``(F, J, 3)`` joint translations or ``None``) putting the hips at
        ``hips`` ``(F, 3)``. When the hips are not the root but carry position channels (Bandai-Namco), the
        root stays at its rest offset and the hips' translation is animated, as in the source files."""
        h = self.mapping.joints["hips"]  # type: ignore[union-attr]  # set in __post_init__
        hips_rest = self.tables(hips.dtype)[3]
        if not self.hips_translated:
            return hips - hips_rest, None
        p = int(self.skeleton.parents[h])
        root = self.skeleton.offsets[0].to(hips.dtype)
        trans = self.skeleton.offsets.to(hips.dtype).expand(hips.shape[0], -1, -1).clone()
        anchor = root + self.rest_positions[p].to(hips.dtype)
        trans[:, h] = (hips - anchor) @ self.rest_world[p].to(hips.dtype)
        trans[:, 0] = root
        return root.expand(hips.shape[0], 3).clone(), trans

    def decode(self, frames: Tensor, hips: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """Local quaternions ``(F, J, 4)``, root positions ``(F, 3)`` and joint translations (or ``None``) of
        the full skeleton from ``(F, 22, 3, 3)`` bone frames and ``(F, 3)`` hips positions."""
        root, trans = self.place_root(hips)
        return self.locals_from_world(self.decode_world(frames)), root, trans

    def canonical_fk(self, local: Tensor, hips: Tensor, offsets: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Forward kinematics on the canonical skeleton.

        Parameters
        ----------
        local : Tensor
            ``(..., 22, 3, 3)`` canonical local rotation matrices.
        hips : Tensor
            ``(..., 3)`` hips positions.
        offsets : Tensor, optional
            ``(..., 22, 3)`` canonical offsets (default: this rig's).

        Returns
        -------
        tuple of Tensor
            ``(..., 22, 3, 3)`` bone frames and ``(..., 22, 3)`` positions.
        """
        return canonical_fk(local, hips, self.offsets.to(local.dtype) if offsets is None else offsets)


_ALL_SLOTS = tuple(range(len(CANONICAL_JOINTS)))


def canonical_fk(local: Tensor, hips: Tensor, offsets: Tensor) -> tuple[Tensor, Tensor]:
    """FK on the canonical skeleton: ``(..., 22, 3, 3)`` local matrices, ``(..., 3)`` hips positions and
    ``(..., 22, 3)`` canonical offsets to ``(..., 22, 3, 3)`` bone frames and ``(..., 22, 3)`` positions."""
    off = offsets.to(local.dtype).expand(*local.shape[:-3], -1, -1)
    trans = torch.cat([hips[..., None, :].to(local.dtype), off[..., 1:, :]], dim=-2)
    return forward_kinematics_joints(local, trans, CANONICAL_PARENTS, _ALL_SLOTS)


def leg_length(offsets: Tensor) -> Tensor:
    """``(...)`` leg lengths (hips height above the feet in the canonical T-pose) of ``(..., 22, 3)`` offsets."""
    eye = torch.eye(3, dtype=offsets.dtype).expand(*offsets.shape[:-2], 22, 3, 3)
    _, pos = canonical_fk(eye, torch.zeros(*offsets.shape[:-2], 3, dtype=offsets.dtype), offsets)
    return pos[..., 0, 1] - pos[..., [SLOT["l_foot"], SLOT["r_foot"]], 1].mean(-1)


def stride_leg(offsets: Tensor) -> Tensor:
    """``(...)`` thigh plus shin, the leg from its hip joint to the ankle (mean of the sides), of ``(..., 22, 3)``
    canonical offsets: what sets the length of a stride. :func:`leg_length` (the hips' height over the ankles)
    also counts the drop from the hips joint to the legs (CMU 11 % of it, Bandai-Namco 2.7 %, none on the DeepMimic
    humanoid), which takes no part in a step."""
    bones = [SLOT[f"{side}_{part}"] for side in "lr" for part in ("leg", "foot")]  # knee and ankle offsets
    return offsets[..., bones, :].norm(dim=-1).sum(-1) / 2.0


def frames_from_locals(local: Tensor) -> Tensor:
    """World bone frames ``(..., 22, 3, 3)`` from canonical local rotation matrices ``(..., 22, 3, 3)``."""
    zeros = torch.zeros(*local.shape[:-3], 3, dtype=local.dtype)
    return canonical_fk(local, zeros, torch.zeros(len(CANONICAL_JOINTS), 3, dtype=local.dtype))[0]

