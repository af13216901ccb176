"""Retargeting rules checked against hand values, numpy and closed forms on small synthetic skeletons (an audit:
each of these rules could be broken without any other test noticing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat, quat_identity, quat_to_rotvec
from skelanim.core.skeleton import Skeleton
from skelanim.io.deepmimic import humanoid_skeleton
from skelanim.ops import scale
from skelanim.retarget import MappingError, Retargeter, RetargetError, map_skeleton
from skelanim.retarget.blocks import clip_levels
from skelanim.retarget.evaluate import proportion_metrics
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_tpose
from skelanim.retarget.robot import hinge_limits, make_feasible
from skelanim.retarget.stance import level_feet, standing_level

F64 = torch.float64
_X = torch.tensor([1.0, 0.0, 0.0], dtype=F64)
_Z = torch.tensor([0.0, 0.0, 1.0], dtype=F64)
#: The built-in T-pose's hips stand this high over its toe joints (0.05 + 0.42 + 0.4 down to the ankle, 0.05 more)
_TPOSE_HIPS = 0.92


def _with_toes(toe: tuple[float, float, float]) -> Skeleton:
    """The canonical T-pose with both toe offsets (from the ankle) ``toe``."""
    sk = canonical_tpose()
    off = sk.offsets.clone()
    for s in "lr":
        off[sk.names.index(f"{s}_toe")] = torch.tensor(toe, dtype=F64)
    return Skeleton(sk.names, sk.parents, off)


def _clip(skeleton: Skeleton, root: torch.Tensor, fps: float = 30.0, rotations: torch.Tensor | None = None) -> Motion:
    """A clip of ``skeleton`` with ``(F, 3)`` root positions, in its zero pose unless ``rotations`` ``(F, J, 4)``."""
    if rotations is None:
        rotations = quat_identity((root.shape[0], skeleton.num_joints), dtype=F64)
    return Motion(skeleton, rotations, root, fps)


def _random_rotations(frames: int, joints: int, seed: int = 0, spread: float = 0.6) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    axes = torch.randn(frames, joints, 3, dtype=F64, generator=g)
    angles = torch.rand(frames, joints, dtype=F64, generator=g) * spread
    return axis_angle_to_quat(axes / axes.norm(dim=-1, keepdim=True), angles)


# ----------------------------------------------------------------------------------------------- stance (level feet)
def test_a_rest_foot_pointing_more_than_45_degrees_down_is_not_levelled():
    """A foot whose rest bone points 63.4 degrees down (toe offset (0, -0.2, 0.1): a pointed foot) is not standing
    (module doc of :mod:`.stance`): its foot and toe frames stay along the bone, so the canonical toe lies along
    the canonical foot, sqrt(0.05) ahead, and the sole is 0. One at 42.3 degrees (0, -0.1, 0.11) stands: levelled,
    its toe drops 0.1 below the ankle, 0.11 ahead."""
    pointed = _with_toes((0.0, -0.2, 0.1))
    rig = CanonicalRig(pointed)
    toes = [SLOT["l_toe"], SLOT["r_toe"]]
    assert rig.sole == pytest.approx(0.0, abs=1e-12)
    for t in toes:
        assert rig.offsets[t].tolist() == pytest.approx([0.0, 0.0, math.sqrt(0.05)], abs=1e-12)
    # the frames themselves: level_feet leaves a 63-degree rest foot's frames as they were given
    index, pos = np.arange(pointed.num_joints), pointed.rest_positions().to(F64)
    eye = torch.eye(3, dtype=F64).repeat(pointed.num_joints, 1, 1)
    frames = torch.linalg.qr(torch.randn(len(SLOT), 3, 3, dtype=F64, generator=torch.Generator().manual_seed(1)))[0]
    out = level_feet(frames, index, eye, pos, torch.tensor([0.0, 1.0, 0.0], dtype=F64))
    torch.testing.assert_close(out, frames, atol=0, rtol=0)

    standing = CanonicalRig(_with_toes((0.0, -0.1, 0.11)))
    assert standing.sole == pytest.approx(0.1, abs=1e-12)
    for t in toes:
        assert standing.offsets[t].tolist() == pytest.approx([0.0, -0.1, 0.11], abs=1e-12)


def test_standing_level_is_the_lower_quartile_of_each_frame_s_lowest_foot_joint():
    """:func:`standing_level` against numpy: the 0.25 quantile (linear) of each frame's lowest of the four joints;
    by hand, lowest heights 0..7 give 0.25 * 7 = 1.75."""
    lowest = np.array([5.0, 0.0, 7.0, 2.0, 1.0, 6.0, 3.0, 4.0])
    rng = np.random.default_rng(0)
    feet = lowest[:, None] + rng.uniform(0.0, 3.0, size=(8, 4))
    feet[np.arange(8), rng.integers(0, 4, size=8)] = lowest  # each frame's lowest joint, in a random column
    assert standing_level(torch.from_numpy(feet)) == pytest.approx(1.75, abs=1e-12)
    other = rng.normal(size=(37, 4))
    assert standing_level(torch.from_numpy(other)) == pytest.approx(float(np.quantile(other.min(-1), 0.25)), abs=1e-12)


# ------------------------------------------------------------------------------------------------------- mapping
def test_a_user_mapping_that_puts_a_joint_outside_its_canonical_parent_is_refused(clips):
    """``head`` mapped onto the left toe (not below the chest) is refused, the message naming both joints."""
    cmu = clips["cmu_mb"].skeleton
    with pytest.raises(MappingError, match=r"head \(LeftToeBase\) is not below chest"):
        map_skeleton(cmu, {"head": "LeftToeBase"})


# -------------------------------------------------------------------------------------------------- retargeter
@pytest.mark.parametrize(
    ("factor", "refused"), [(1.5, True), (1.02, True), (0.98, True), (1.005, False), (0.995, False)]
)
def test_a_motion_with_bones_more_than_one_percent_off_the_source_s_is_refused(factor, refused):
    """:data:`~.retargeter.SIZE_TOLERANCE` is 1 %: a clip of the source's joints whose bones are 1.5 or 1.02 times
    as long is refused (its size named), one 0.5 % off is retargeted."""
    sk = canonical_tpose()
    walk = _clip(sk, torch.tensor([[0.0, _TPOSE_HIPS, 0.1 * t] for t in range(4)], dtype=F64))
    retarget = Retargeter(walk, sk, "copy")
    if refused:
        with pytest.raises(RetargetError, match=rf"its bones not \({factor:.4g} times as long"):
            retarget(scale(walk, factor))
    else:
        assert retarget(scale(walk, factor)).num_frames == 4


def test_naive_onto_its_own_skeleton_copies_every_rotation():
    """``naive`` copies local rotations joint to joint: onto the same (fully mapped) skeleton they are the input's,
    to the bit."""
    sk = canonical_tpose()
    rotations = _random_rotations(6, sk.num_joints)
    root = torch.tensor([[0.0, _TPOSE_HIPS, 0.05 * t] for t in range(6)], dtype=F64)
    out = Retargeter(sk, sk, "naive", floor=0.0)(_clip(sk, root, rotations=rotations))
    assert torch.equal(out.rotations, rotations)


def test_a_bare_target_stands_as_far_above_its_floor_as_the_source_scaled_by_the_leg_ratio():
    """A target given as a bare skeleton has no floor of its own: the result's feet stand as high above y = 0 as the
    source's stand above their floor, times the leg-length ratio (:func:`~.blocks.clip_levels`). The T-pose with
    its toes 0.02 above y = 0 onto the T-pose twice as large: its toes 0.04 above it (by hand)."""
    sk = canonical_tpose()
    big = Skeleton(sk.names, sk.parents, sk.offsets * 2)
    c = 0.02
    walk = _clip(sk, torch.tensor([[0.0, _TPOSE_HIPS + c, 0.1 * t] for t in range(5)], dtype=F64))
    source, target = CanonicalRig(sk), CanonicalRig(big)
    assert target.leg_length / source.leg_length == pytest.approx(2.0, abs=1e-12)
    level, lift = clip_levels(source, target, torch.full((5, 4), c, dtype=F64), None)
    assert (level, lift) == pytest.approx((c, 2 * c), abs=1e-12)
    for method in ("copy", "naive"):  # naive had stood the toes at y = 0
        out = Retargeter(walk, big, method)(walk)
        toes = out.positions()[:, [big.names.index("l_toe"), big.names.index("r_toe")], 1]
        torch.testing.assert_close(toes, torch.full((5, 2), 2 * c, dtype=toes.dtype), atol=1e-9, rtol=0)


# -------------------------------------------------------------------------------------------------- evaluation
def test_skate_counts_frames_planted_in_this_frame_and_the_last():
    """``skate`` averages the target's horizontal foot speed over the frames whose source feet are planted in this
    frame and the one before (module doc of :mod:`.evaluate`). The source stands still on the floor but for frames
    0, 1 and 5, lifted 0.3 heights (at 1 fps its speeds stay under the contact threshold): contacts F F T T T F T T,
    planted at frames 3, 4 and 7. The target's root steps 1.0 at the touch-downs (frames 2 and 6), 0.1, 0.0 and 0.2
    on the planted frames: skate = (0.1 + 0 + 0.2) / 3 per second over the target's height."""
    sk = canonical_tpose()
    rig = CanonicalRig(sk)
    lifted = [True, True, False, False, False, True, False, False]
    probe = _clip(sk, torch.zeros(1, 3, dtype=F64))
    lift = 0.3 * probe.height
    src_root = torch.tensor([[0.0, _TPOSE_HIPS + (lift if up else 0.0), 0.0] for up in lifted], dtype=F64)
    steps = [0.0, 0.0, 1.0, 0.1, 0.0, 0.0, 1.0, 0.2]  # x step into each frame from the one before
    x = np.cumsum(steps)
    out_root = torch.tensor([[float(v), _TPOSE_HIPS, 0.0] for v in x], dtype=F64)
    source, out = _clip(sk, src_root, fps=1.0), _clip(sk, out_root, fps=1.0)
    metrics = proportion_metrics(source, out, rig, rig)
    assert metrics["skate"] == pytest.approx((0.1 + 0.0 + 0.2) / 3 / rig.height, abs=1e-12)
    assert metrics["penetration"] == pytest.approx(0.0, abs=1e-12)  # toes on y = 0, none below


def test_end_effector_distance_is_height_normalised_on_each_side():
    """``ee`` compares hands, feet and head relative to the hips, each motion over its own skeleton's height: a clip
    against itself is 0, and a clip scaled by 2 on the skeleton twice as large is 0 too (divided by the source's
    height, the target's limbs had come out twice as long). The standing T-pose against one whose neck is 0.1
    longer (height 1.56 against 1.66): each end effector's rest offset from the hips over each side's height, the
    mean distance of the five (by hand, numpy for the norms)."""
    sk = canonical_tpose()
    rotations = _random_rotations(5, sk.num_joints, seed=3)
    root = torch.tensor([[0.1 * t, _TPOSE_HIPS, 0.0] for t in range(5)], dtype=F64)
    clip = _clip(sk, root, rotations=rotations)
    rig = CanonicalRig(sk)
    assert proportion_metrics(clip, clip, rig, rig)["ee"] == pytest.approx(0.0, abs=1e-12)
    big = scale(clip, 2.0)
    assert proportion_metrics(clip, big, rig, CanonicalRig(big.skeleton))["ee"] == pytest.approx(0.0, abs=1e-12)

    off = sk.offsets.clone()
    off[sk.names.index("neck"), 1] += 0.1
    tall = Skeleton(sk.names, sk.parents, off)
    standing = _clip(sk, root)
    tall_rig = CanonicalRig(tall)
    ee = proportion_metrics(standing, _clip(tall, root), rig, tall_rig)["ee"]
    # each side over its own height: the rest head 1.2 / h above the hips against 1.3 / h'
    head = 0.1 + 0.12 + 0.12 + 0.2 + 0.1
    hands = np.array([[0.02 + 0.15 + 0.28 + 0.25, 0.1 + 0.12 + 0.12 + 0.15, 0.0]])
    h, h2 = rig.height, tall_rig.height
    assert h2 == pytest.approx(h + 0.1, abs=1e-12)
    feet = np.array([[0.09, -0.05 - 0.42 - 0.4, 0.0]])
    per = [np.linalg.norm(hands / h - hands / h2)] * 2 + [np.linalg.norm(feet / h - feet / h2)] * 2
    per.append(abs(head / h - (head + 0.1) / h2))
    assert ee == pytest.approx(float(np.mean(per)), abs=1e-12)


# ------------------------------------------------------------------------------------------------------ the robot
def test_make_feasible_clamps_a_hinge_to_the_limits_it_is_given():
    """A right knee bent 2 rad (about -z, the humanoid's knees bend negative) made feasible under limits
    ``(-1, 0)`` comes out at exactly -1 rad about +z; the default limits ``(-3.14, 0)`` keep it at -2."""
    sk = humanoid_skeleton()
    rotations = quat_identity((1, sk.num_joints), dtype=F64)
    knee = sk.index("right_knee")
    rotations[0, knee] = axis_angle_to_quat(_Z, torch.tensor(-2.0, dtype=F64))
    motion = Motion(sk, rotations, torch.tensor([[0.0, 1.0, 0.0]], dtype=F64), 30.0)
    narrow = {**hinge_limits(), "right_knee": (-1.0, 0.0)}
    for limits, want in ((narrow, -1.0), (hinge_limits(), -2.0)):
        v = quat_to_rotvec(make_feasible(motion, limits).rotations[0, knee])
        assert v.tolist() == pytest.approx([0.0, 0.0, want], abs=1e-9)


# -------------------------------------------------------------------------------------------------------- training
def test_a_training_window_turns_the_hips_with_the_body():
    """The training augmentation's turn about +Y (:func:`~.train._turn`) turns the hips' path as it turns the body:
    a body facing +Z (root rotation the identity) walking along +Z, turned a quarter turn, faces +X (by hand: the
    turn about +Y carries +Z onto +X) and walks along +X."""
    from skelanim.retarget.train import _turn

    local = torch.eye(3).repeat(4, 22, 1, 1)
    hips = torch.tensor([[0.0, 0.9, 0.3 * t] for t in range(4)])
    turned_local, turned_hips = _turn(local, hips, math.pi / 2)
    facing = turned_local[:, 0] @ torch.tensor([0.0, 0.0, 1.0])
    torch.testing.assert_close(facing, torch.tensor([[1.0, 0.0, 0.0]] * 4), atol=1e-6, rtol=0)
    torch.testing.assert_close(turned_hips, torch.tensor([[0.3 * t, 0.9, 0.0] for t in range(4)]), atol=1e-6, rtol=0)
    # against numpy's rotation of the path about +Y by 0.7 rad: x' = x cos + z sin, z' = -x sin + z cos
    path = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    c, s = math.cos(0.7), math.sin(0.7)
    want = np.stack([path[:, 0] * c + path[:, 2] * s, path[:, 1], -path[:, 0] * s + path[:, 2] * c], axis=-1)
    np.testing.assert_allclose(_turn(local, torch.from_numpy(path), 0.7)[1].numpy(), want, atol=1e-6, rtol=0)


def test_the_clip_cache_fingerprint_tells_apart_rigs_of_other_rest_frames():
    """Two rigs of the T-pose, one calibrated on motion that turns each clavicle a quarter turn about its bone: the
    canonical offsets are the same to the bit (the limbs lie along those bones), but the arm frames, and so every
    encoded arm rotation, differ: the clip cache must not hand one the other's encoding."""
    from skelanim.retarget.data import _fingerprint

    sk = canonical_tpose()
    calibration = quat_identity((5, sk.num_joints), dtype=F64)
    for s in "lr":
        calibration[:, sk.index(f"{s}_clavicle")] = axis_angle_to_quat(_X, torch.tensor(math.pi / 2, dtype=F64))
    plain, turned = CanonicalRig(sk), CanonicalRig(sk, calibration=calibration)
    assert torch.equal(plain.offsets, turned.offsets)
    arm = [SLOT[f"{s}_{p}"] for s in "lr" for p in ("clavicle", "upperarm", "forearm", "hand")]
    assert float((plain.rest_frames[arm] - turned.rest_frames[arm]).abs().max()) > 0.5
    assert _fingerprint(plain) != _fingerprint(turned)
    assert _fingerprint(plain) == _fingerprint(CanonicalRig(sk))
    # a rest pose turning each upper arm a quarter turn about its bone (+-X in the T-pose) leaves offsets and rest
    # frames as they are, to the bit, but the clips' rotations are encoded relative to it: another fingerprint too
    rest = quat_identity((sk.num_joints,), dtype=F64)
    for s in "lr":
        rest[sk.index(f"{s}_upperarm")] = axis_angle_to_quat(_X, torch.tensor(math.pi / 2, dtype=F64))
    twisted = CanonicalRig(sk, rest=rest)
    assert torch.equal(plain.offsets, twisted.offsets) and torch.equal(plain.rest_frames, twisted.rest_frames)
    assert _fingerprint(plain) != _fingerprint(twisted)
