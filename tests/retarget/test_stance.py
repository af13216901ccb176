"""Level feet (retarget.stance): a foot that stands flat on one skeleton stands flat on another, whatever the
height of each skeleton's ankle joint above its toe joint, and the copied hips stand on the target's own soles."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.ops import foot_contacts
from skelanim.retarget import Retargeter
from skelanim.retarget.baselines import FEET, RELEASE_DECAY, PinState, hang_step, pin_step
from skelanim.retarget.mapping import CANONICAL_JOINTS, map_skeleton
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_tpose
from skelanim.retarget.stance import level_feet, scaled_hips, sole_height


def _standing_pitch(motion: Motion) -> float:
    """Median pitch (degrees, toe below ankle) of the ankle-to-toe bone while the foot stands: both its joints
    slower than 5 % of the height per second (world positions, root motion included) and the ankle low."""
    index = map_skeleton(motion.skeleton).index
    at = {n: int(index[i]) for i, n in enumerate(CANONICAL_JOINTS) if index[i] >= 0}
    pos = motion.positions().double().numpy()
    speed = np.linalg.norm(np.gradient(pos, axis=0), axis=-1) * motion.fps / motion.height
    pitches = []
    for side in "lr":
        ankle, toe = at[f"{side}_foot"], at[f"{side}_toe"]
        bone = pos[:, toe] - pos[:, ankle]
        pitch = np.degrees(np.arctan2(-bone[:, 1], np.hypot(bone[:, 0], bone[:, 2])))
        low = pos[:, ankle, 1] <= np.quantile(pos[:, ankle, 1], 0.3)
        pitches.append(pitch[(speed[:, ankle] < 0.05) & (speed[:, toe] < 0.05) & low])
    return float(np.median(np.concatenate(pitches)))


def test_the_canonical_tpose_stands_on_level_feet():
    """The built-in T-pose's toe joints lie 0.05 below its ankles (its bone points 19.7 degrees down): that
    drop is its sole height, and its foot frames point level."""
    rig = CanonicalRig(canonical_tpose())
    assert rig.sole == pytest.approx(0.05, abs=1e-12)
    toes = [SLOT["l_toe"], SLOT["r_toe"]]
    assert float(sole_height(rig.offsets)) == pytest.approx(0.05, abs=1e-12)
    # by hand: toes 0.03 and 0.07 below their ankles stand on a sole of 0.05, a batch row by row; no toes, none
    offsets = torch.zeros(2, len(CANONICAL_JOINTS), 3, dtype=torch.float64)
    offsets[0, toes] = torch.tensor([[0.0, -0.03, 0.1], [0.0, -0.07, 0.12]], dtype=torch.float64)
    assert sole_height(offsets).tolist() == pytest.approx([0.05, 0.0], abs=1e-12)
    # level frames: the toe's offset seen in the foot's canonical frame drops by exactly the sole height
    assert rig.offsets[toes, 1].tolist() == pytest.approx([-0.05, -0.05], abs=1e-12)
    assert rig.offsets[toes, 2].tolist() == pytest.approx([0.14, 0.14], abs=1e-12)


def test_scaled_hips_stand_on_the_target_soles():
    """Closed form: a source standing with its toes ``c`` above the floor (hips at leg + sole + c) puts the
    target's hips at its leg + its sole + ratio * c. Without toes (sole 0) a skeleton's floor is where its ankles
    stand: a toeless source's ankles ``c`` above it (hips at leg + c) put a toed target's hips at its leg + its
    sole + ratio * c, and a toed source puts a toeless target's ankles ``ratio * c`` above its floor (the whole
    height scaled, as before 2026-12-05, had sunk a toeless source's target by its sole)."""
    leg_s, sole_s, leg_t, sole_t, c = 0.8, 0.09, 1.2, 0.03, 0.02
    hips = torch.tensor([0.1, leg_s + sole_s + c, -0.3], dtype=torch.float64)
    ratio = leg_t / leg_s
    out = scaled_hips(hips, leg_s, leg_t, sole_s, sole_t)
    assert out.tolist() == pytest.approx([0.1 * ratio, leg_t + sole_t + ratio * c, -0.3 * ratio], abs=1e-12)
    toeless_source = torch.tensor([0.1, leg_s + c, -0.3], dtype=torch.float64)
    out = scaled_hips(toeless_source, leg_s, leg_t, 0.0, sole_t, source_toeless=True)
    assert out.tolist() == pytest.approx([0.1 * ratio, leg_t + sole_t + ratio * c, -0.3 * ratio], abs=1e-12)
    out = scaled_hips(hips, leg_s, leg_t, sole_s, 0.0, target_toeless=True)
    assert out.tolist() == pytest.approx([0.1 * ratio, leg_t + ratio * c, -0.3 * ratio], abs=1e-12)
    for unlevel in ((0.0, sole_t), (sole_s, 0.0)):  # toes, but feet not level (no sole): the whole height scales
        assert scaled_hips(hips, leg_s, leg_t, *unlevel).tolist() == pytest.approx((hips * ratio).tolist(), abs=1e-12)
    # a review: a sole of a rounding's size (6.5e-16, Bandai's uncalibrated feet) is none, as 0 is (it had kept both
    # soles and moved the hips by 3 %)
    for rounding in ((6.5e-16, sole_t), (sole_s, -6.5e-16), (sole_s, 6.5e-16)):
        assert scaled_hips(hips, leg_s, leg_t, *rounding).tolist() == pytest.approx((hips * ratio).tolist(), abs=1e-12)
    # batched: (B, T, 3) hips with (B, 1) legs and soles, one pair of skeletons per row
    batch = hips.expand(2, 5, 3)
    legs = torch.tensor([[leg_s], [leg_s]], dtype=torch.float64)
    out = scaled_hips(
        batch,
        legs,
        legs * ratio,
        torch.tensor([[sole_s], [0.0]], dtype=torch.float64),
        torch.tensor([[sole_t], [sole_t]], dtype=torch.float64),
    )
    assert out[0, 3, 1] == pytest.approx(leg_t + sole_t + ratio * c, abs=1e-12)
    assert out[1, 3, 1] == pytest.approx(float(hips[1]) * ratio, abs=1e-12)  # toes without a sole


def test_bandai_sole_is_the_height_its_standing_ankle_holds(mocap_files):
    """Measured in the motion, Bandai's sole height is what its captured standing ankles hold above their toes."""
    bow = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_bow_normal_001.bvh"])[0])
    rig = CanonicalRig(bow.skeleton, calibration=bow.rotations)
    pos = bow.positions().double()
    names = bow.skeleton.names
    held = torch.stack([pos[:, names.index(f"Foot_{s}"), 1] - pos[:, names.index(f"Toes_{s}"), 1] for s in "LR"])
    assert rig.sole == pytest.approx(float(held.median()), rel=0.02)
    assert rig.sole / rig.height == pytest.approx(0.055, abs=0.005)
    assert CanonicalRig(bow.skeleton).sole == pytest.approx(0.0, abs=1e-9)  # its zero pose: toes level with ankles


@pytest.mark.parametrize(("source", "target"), [
    ("bandai_namco_1/dataset-1_walk_normal_001.bvh", "cmu_cgspeed_mb/01_01.bvh"),
    ("bandai_namco_1/dataset-1_walk_normal_001.bvh", "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"),
    ("cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh"),
])  # fmt: skip
def test_a_standing_foot_lands_as_the_target_stands(mocap_files, source, target):
    """Bandai's ankle-to-toe bone stands 39.6 degrees below level, CMU's and pymo's 14-15: copied as it lay, a
    Bandai walk stood on CMU's toes 25 degrees steeper than CMU's own walk, and a CMU walk on Bandai's heels.
    Level feet land each standing foot within 4 degrees of the target skeleton's own captures (measured 0.4-1.8)."""
    src, tgt = (skelanim.load(p) for p in mocap_files([source, target]))
    src = src[: int(8 * src.fps)]
    out = Retargeter(src, tgt, "copy")(src)
    own = _standing_pitch(tgt)
    assert abs(_standing_pitch(out) - own) < 4.0
    assert abs(_standing_pitch(src) - own) > 20.0  # what a copy of the bone's direction would have given


def test_a_target_clip_of_one_frame_does_not_take_a_lifted_foot_for_a_standing_one(mocap_files):
    """In a clip of one frame every frame is among the lowest: a lifted foot's pitch (70-80 degrees) had become the
    stance pitch, and the CMU walk landed on the Bandai skeleton's toes (69.9 / 75.0 degrees against 39.2 / 44.5
    from the whole take). Frame 60 lifts both feet past 60 degrees in the lowest-quarter sense of each foot."""
    src, tgt = (skelanim.load(p) for p in mocap_files(["cmu_cgspeed_max/131_01.bvh",
                                                       "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))  # fmt: skip
    src = src[: int(4 * src.fps)]
    whole = _standing_pitch(Retargeter(src, tgt, "copy")(src))
    one = _standing_pitch(Retargeter(src, tgt[60:61], "copy")(src))
    assert abs(one - whole) < 6.0


def test_a_motion_of_the_same_joints_but_other_bones_is_refused(mocap_files):
    """``Retargeter.__call__`` checked the joints only: the same walk in metres through a Retargeter of the cm clip
    put the hips at 0.37 instead of 18.2 and the lowest joint 65 % of the height under the floor, silently."""
    from skelanim.ops import scale
    from skelanim.retarget import RetargetError

    walk, other = (skelanim.load(p)[:60] for p in mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh",
                                                                "bandai_namco_1/dataset-1_walk_normal_002.bvh"]))  # fmt: skip
    retarget = Retargeter(walk, walk, "copy")
    assert retarget(walk).num_frames == walk.num_frames
    # another take of the actor: other End Sites and Hips offset (its rest height 5 % more), the same bones
    assert other.skeleton.height() / walk.skeleton.height() > 1.04
    assert retarget(other).num_frames == other.num_frames
    with pytest.raises(RetargetError, match=r"its bones not \(0.01 times as long: other units"):
        retarget(scale(walk, 0.01))


def test_level_feet_turn_each_foot_and_its_toe_together(clips):
    """Levelling turns a foot's and its toe's frames by one rotation about the foot's lateral axis and leaves every
    other frame alone, so the toe's rotation against the foot is what it was; on the same skeleton a retarget is
    still the identity."""
    walk = clips["bandai"]
    sk = canonical_tpose()
    index, pos = np.arange(sk.num_joints), sk.rest_positions().to(torch.float64)
    eye = torch.eye(3, dtype=torch.float64).repeat(sk.num_joints, 1, 1)
    frames = torch.linalg.qr(
        torch.randn(len(SLOT), 3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    )[0]
    frames = frames * torch.linalg.det(frames)[:, None, None]  # proper rotations
    out = level_feet(frames, index, eye, pos, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64))
    for side in "lr":
        foot, toe = SLOT[f"{side}_foot"], SLOT[f"{side}_toe"]
        turn = out[foot] @ frames[foot].T
        torch.testing.assert_close(out[toe] @ frames[toe].T, turn, atol=1e-12, rtol=0)
        angle = math.degrees(math.acos((float(torch.trace(turn)) - 1) / 2))
        assert angle == pytest.approx(math.degrees(math.atan2(0.05, 0.14)), abs=1e-9)  # the bone's 19.7 degrees
        lateral = torch.tensor([1.0 if side == "l" else -1.0, 0.0, 0.0], dtype=torch.float64)
        assert float((turn @ lateral - lateral).norm()) < 1e-12  # about the lateral axis
    others = [i for i, n in enumerate(CANONICAL_JOINTS) if not n.endswith(("_foot", "_toe"))]
    torch.testing.assert_close(out[others], frames[others], atol=0, rtol=0)
    rig = CanonicalRig(walk.skeleton, calibration=walk.rotations)
    back = Retargeter(rig, rig, "copy")(walk)
    assert float((back.positions() - walk.positions()).abs().max()) < 1e-6 * walk.height


def test_an_ankle_hangs_from_its_planted_toe():
    """Closed form: while the toe alone is planted the ankle eases onto the toe's pin minus the copy's foot vector
    (the difference left shrinking by ``0.6`` per 1/30 s; it had jumped there at once, and the knee with it); once
    the toe lifts, the offset decays by ``0.6`` per 1/30 s."""
    ankle = torch.tensor(
        [[[0.0, 0.1, 0.0]], [[0.1, 0.12, 0.0]], [[0.2, 0.14, 0.0]], [[0.3, 0.2, 0.0]]], dtype=torch.float64
    )
    hung = torch.tensor(
        [[[0.0, 0.1, 0.0]], [[0.05, 0.11, 0.0]], [[0.06, 0.13, 0.0]], [[9.0, 9.0, 9.0]]], dtype=torch.float64
    )
    toe_only = torch.tensor([[False], [True], [True], [False]])
    offsets, rows = torch.zeros(1, 3, dtype=torch.float64), []
    for t in range(4):
        row, offsets = hang_step(ankle[t], hung[t], toe_only[t], RELEASE_DECAY, offsets)
        rows.append(row)
    out = torch.stack(rows)
    wanted = hung - ankle
    first = 0.4 * wanted[1]  # from no offset, 40 % of the way in one 1/30 s
    second = wanted[2] + 0.6 * (first - wanted[2])
    torch.testing.assert_close(out[0], ankle[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(out[1], ankle[1] + first, atol=1e-12, rtol=0)
    torch.testing.assert_close(out[2], ankle[2] + second, atol=1e-12, rtol=0)
    torch.testing.assert_close(out[3], ankle[3] + 0.6 * second, atol=1e-12, rtol=0)


def test_a_foot_is_pinned_where_it_touched_down_and_rejoins_the_copy():
    """Closed form of :func:`pin_step`, one joint at 60 fps (decay ``0.6 ** 0.5`` a frame): pinned where the
    copy was at touch-down, held while in contact, then the offset from the copy decays; a second touch-down
    while an offset remains pins at the copy plus the decayed offset; the state after a lift-off is unpinned."""
    copy = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, 0], [5, 0, 0]], dtype=torch.float64)
    contact = torch.tensor([True, True, False, False, True, True])
    decay = 0.6**0.5
    state = PinState.fresh()
    pins, flag, offsets, rows, pinned = state.pins[:1], state.pinned[:1], state.offsets[:1], [], []
    for t in range(6):
        row, pins, flag, offsets = pin_step(copy[t, None], contact[t, None], decay, pins, flag, offsets)
        rows.append(row[0])
        pinned.append(bool(flag[0] == 1))
    x = [float(r[0]) for r in rows]
    assert x[:2] == [0.0, 0.0]  # held where it touched down
    assert x[2] == pytest.approx(2 - 1 * decay) and x[3] == pytest.approx(3 - decay**2)  # the -1 offset decays
    assert x[4] == pytest.approx(4 - decay**3) and x[5] == pytest.approx(4 - decay**3)  # pinned at copy + offset
    assert pinned == [True, True, False, False, True, True]


def test_ik_retargeting_continues_a_stream_across_calls(mocap_files):
    """The foot pins are the stream's state: a walk cut into chunks, the state handed from one call to the next,
    gives the frames of one call over the whole walk (a stale or dropped state would re-pin the feet)."""
    from skelanim.core.rotations import quat_to_matrix
    from skelanim.retarget.baselines import IKRetarget, causal_contacts
    from skelanim.retarget.rig import CanonicalRig

    walk, cmu = (skelanim.load(p) for p in mocap_files(["bandai_namco_2/dataset-2_walk_normal_001.bvh",
                                                         "cmu_cgspeed_mb/01_01.bvh"]))  # fmt: skip
    walk = walk[:90]
    source, target = CanonicalRig(walk.skeleton), CanonicalRig(cmu.skeleton)
    frames, pos, _ = source.encode_matrices(quat_to_matrix(walk.rotations), walk.local_translations(), None)
    contacts, _ = causal_contacts(pos[:, list(FEET)], walk.fps, source.height)
    ik = IKRetarget(target)
    whole, _ = ik(frames, pos[:, 0], contacts, walk.fps)
    state, parts = None, []
    for start in range(0, 90, 25):
        part, state = ik(frames[start : start + 25], pos[start : start + 25, 0], contacts[start : start + 25], walk.fps, state)
        parts.append(part)
    torch.testing.assert_close(torch.cat(parts), whole, atol=1e-12, rtol=0)
    assert 0.2 < float(contacts.float().mean()) < 0.8  # feet touch down and lift off in the walk
    fresh_each_time = torch.cat([ik(frames[s : s + 25], pos[s : s + 25, 0], contacts[s : s + 25], walk.fps)[0]
                                 for s in range(0, 90, 25)])  # fmt: skip
    assert float((fresh_each_time - whole).abs().max()) > 1e-3


def test_ik_keeps_a_planted_toe_still_on_other_proportions(mocap_files):
    """A Bandai walk onto the CMU skeleton by ``ik``: the toes slid 0.046 heights/s while Bandai's were planted once
    the feet were level (the copy's ankle pivots about Bandai's toe, not the target's), 0.022-0.027 before; hung
    from their planted toes, the ankles keep the toes within 0.006-0.009 (bound 0.02)."""
    walk, cmu = (skelanim.load(p) for p in mocap_files(["bandai_namco_2/dataset-2_walk_normal_001.bvh",
                                                         "cmu_cgspeed_mb/01_01.bvh"]))  # fmt: skip
    retarget = Retargeter(walk, cmu, "ik")
    out = retarget(walk)
    src, tgt = retarget.source, retarget.target
    planted = foot_contacts(walk, joints=[int(src.joint_of_slot[k]) for k in FEET])
    _, pos = tgt.encode(out.rotations, out.local_translations())
    toes = pos[:, [SLOT["l_toe"], SLOT["r_toe"]]]
    speed = (toes[1:] - toes[:-1])[..., [0, 2]].norm(dim=-1) * out.fps / tgt.height
    still = planted[1:, 2:] & planted[:-1, 2:]
    assert float(speed[still].mean()) < 0.02


@pytest.mark.parametrize("method", ["copy", "ik", "nkn"])
def test_a_toeless_skeleton_stands_on_the_floor_of_a_toed_one_and_back(mocap_files, method):
    """The DeepMimic humanoid has no toes: its floor is where its ankles stand. Its walk onto Bandai-Namco stood
    Bandai's feet 4-5 % of the height below the floor the ``--to`` clip stands on (its ankles put where Bandai's
    toes stand), and a Bandai walk onto the humanoid floated it 6 % above; now each lands within 1.5 %."""
    from skelanim.core.rotations import quat_to_matrix
    from skelanim.retarget.retargeter import standing_level

    humanoid, bandai = (skelanim.load(p) for p in mocap_files(["deepmimic/humanoid3d_walk.txt",
                                                               "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))  # fmt: skip
    for source, target in ((humanoid, bandai), (bandai, humanoid)):
        retarget = Retargeter(source, target, method)
        out = retarget(source)
        _, pos, _ = retarget.target.encode_matrices(quat_to_matrix(out.rotations), out.local_translations(), None)
        stands = standing_level(pos[:, list(FEET), 1])
        assert retarget.target_floor is not None
        assert abs(stands - retarget.target_floor) < 0.015 * retarget.target.height, (source.skeleton.num_joints, stands)


def test_copied_hips_travel_as_far_as_the_strides_allow():
    """Two skeletons with the same thigh and shin, one with its legs hung 0.1 lower below the hips (CMU's hips sit
    11 % of the leg above the thighs, Bandai-Namco's 2.7 %): the hips rise by the leg-length ratio, but they
    travel as far as the source's, since the strides are as long. Scaled by the leg-length ratio, the travel had
    outrun the target's strides and its planted feet slid."""
    from skelanim.retarget.baselines import copy_hips
    from skelanim.retarget.rig import leg_length, stride_leg

    source_sk = canonical_tpose()
    offsets = source_sk.offsets.clone()
    for side in "lr":
        offsets[source_sk.names.index(f"{side}_upleg"), 1] -= 0.1
    target_sk = type(source_sk)(source_sk.names, source_sk.parents, offsets)
    source, target = CanonicalRig(source_sk), CanonicalRig(target_sk)
    assert float(stride_leg(target.offsets)) == pytest.approx(float(stride_leg(source.offsets)), abs=1e-12)
    assert target.leg_length == pytest.approx(source.leg_length + 0.1, abs=1e-12)
    # by hand: the T-pose's hips stand 0.05 (to the thighs) + 0.42 + 0.4 above its ankles, the target's 0.1 more
    assert float(leg_length(source.offsets)) == pytest.approx(0.87, abs=1e-12)
    assert float(leg_length(target.offsets)) == pytest.approx(0.97, abs=1e-12)
    assert float(stride_leg(target.offsets)) == pytest.approx(0.82, abs=1e-12)  # thigh 0.42 + shin 0.4
    f64 = {"dtype": torch.float64}
    walk = torch.stack([torch.linspace(0.0, 3.0, 20, **f64), torch.full((20,), source.leg_length + source.sole, **f64),
                        torch.linspace(0.0, -1.0, 20, **f64)], dim=-1)  # fmt: skip
    copied = copy_hips(walk, source, target)
    torch.testing.assert_close(copied[:, [0, 2]], walk[:, [0, 2]], atol=1e-12, rtol=0)
    assert copied[:, 1].tolist() == pytest.approx([target.leg_length + target.sole] * 20, abs=1e-12)


def test_a_pinned_foot_settles_onto_the_floor_but_does_not_slide():
    """Closed form of :func:`pin_step`: a foot that touched down 0.1 above where the copy's then goes keeps its
    horizontal place and follows the copy down, never up (a pin frozen at its touch-down height had kept feet
    hovering: an audit, CMU iClone's 007_01 onto Bandai, 84 of 157 frames more than 1 % of the height above the
    copy's feet)."""
    copy = torch.tensor([[0.0, 0.1, 0.0], [0.2, 0.05, 0.1], [0.4, 0.0, 0.2], [0.6, 0.03, 0.3]], dtype=torch.float64)
    state = PinState.fresh()
    pins, flag, offsets, rows = state.pins[:1], state.pinned[:1], state.offsets[:1], []
    for t in range(4):
        row, pins, flag, offsets = pin_step(copy[t, None], torch.tensor([True]), 0.6, pins, flag, offsets)
        rows.append(row[0])
    out = torch.stack(rows)
    torch.testing.assert_close(out[:, [0, 2]], copy[:1, [0, 2]].expand(4, 2), atol=0, rtol=0)  # held in place
    assert out[:, 1].tolist() == pytest.approx([0.1, 0.05, 0.0, 0.0])  # down with the copy, not back up


def test_ik_feet_do_not_hover_above_the_copy_s(mocap_files):
    """The audit's case: CMU iClone 007_01 onto the Bandai skeleton, ``ik`` against ``copy``: the lowest foot joint's
    height over the copy's, in heights, was 0.011 at the median and above 0.01 in 84 of 157 frames."""
    src, tgt = (skelanim.load(p) for p in mocap_files(["cmu_iclone_ccrig/007_01.bvh",
                                                       "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))  # fmt: skip
    index = map_skeleton(tgt.skeleton).joints
    feet = [index[k] for k in ("l_foot", "r_foot", "l_toe", "r_toe")]
    low = {m: Retargeter(src, tgt, m)(src).positions()[:, feet, 1].min(1).values for m in ("copy", "ik")}
    above = (low["ik"] - low["copy"]) / tgt.height
    assert float(above.median()) < 0.003 and int((above > 0.01).sum()) == 0


def test_a_foot_whose_heel_and_toes_are_lowest_in_other_frames_gets_a_stance(mocap_files):
    """A review: a generated bow's left foot was lowest at the ankle in some frames and at the toes in others, never
    both, so no frame stood, the stance pitch was the mean of nothing (NaN), and every frame and joint the
    retargeter gave (copy, ik, nkn) was NaN. Here a Bandai walk's left foot is tipped toes-up wherever its ankle is
    among the lowest quarter, toes-down elsewhere: either set of lowest frames stands now, and the output is finite."""
    from skelanim.core.rotations import axis_angle_to_quat, quat_multiply
    from skelanim.retarget.rig import calibration_poses
    from skelanim.retarget.stance import STANDING_QUANTILE

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:64]
    names = walk.skeleton.names
    foot, toes = names.index("Foot_L"), names.index("Toes_L")
    ankle = calibration_poses(walk.skeleton, walk.rotations)[1][:, foot, 1]
    low = ankle <= torch.quantile(ankle, STANDING_QUANTILE)
    angle = torch.where(low, torch.tensor(-0.7), torch.tensor(0.2)).to(torch.float64)
    rotations = walk.rotations.clone()  # about the foot's own Y (Bandai's bones lie along +X): toes up or down
    axis = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64).expand(len(angle), 3)
    rotations[:, foot] = quat_multiply(rotations[:, foot], axis_angle_to_quat(axis, angle))
    rocking = walk.copy(rotations=rotations)
    pos = calibration_poses(walk.skeleton, rocking.rotations)[1]
    heel, tip = pos[:, foot, 1], pos[:, toes, 1]
    assert not bool(((heel <= torch.quantile(heel, STANDING_QUANTILE)) & (tip <= torch.quantile(tip, STANDING_QUANTILE))).any())
    for method in ("copy", "ik"):
        out = Retargeter(rocking, walk, method=method)(rocking)
        assert bool(torch.isfinite(out.rotations).all()) and bool(torch.isfinite(out.positions()).all()), method
