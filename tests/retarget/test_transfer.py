"""Rest-pose-aware transfer, the baselines and the stateful Retargeter."""

from __future__ import annotations

import warnings

import pytest
import torch

import skelanim
from skelanim.core.kinematics import forward_kinematics, forward_kinematics_joints
from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_quat, quat_apply, quat_conjugate, quat_multiply, quat_to_matrix
from skelanim.core.skeleton import Skeleton
from skelanim.ops.contacts import foot_contacts
from skelanim.retarget import Retargeter, RetargetError
from skelanim.retarget.baselines import FEET, two_bone
from skelanim.retarget.rig import SLOT, CanonicalRig


def _rotated_frames(motion: Motion, seed: int, *, same: bool) -> tuple[Motion, torch.Tensor]:
    """The same body with every joint frame turned by B_j (one B for all joints when ``same``): offsets
    ``B_p^T o``, rotations ``B_p^T L B_j``; returns the motion and the bind pose that shows the original rest."""
    sk = motion.skeleton
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(1 if same else sk.num_joints, 3, 3, generator=g, dtype=torch.float64))
    b = matrix_to_quat(q * torch.linalg.det(q)[:, None, None]).expand(sk.num_joints, 4)
    one = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    bp = torch.stack([b[p] if p >= 0 else one for p in sk.parents.tolist()])
    offsets = quat_apply(quat_conjugate(bp), sk.offsets)
    rot = quat_multiply(quat_multiply(quat_conjugate(bp), motion.rotations), b)
    bind = quat_multiply(quat_conjugate(bp), b)
    moved = Motion(Skeleton(sk.names, sk.parents, offsets), rot, motion.root_positions, motion.fps)
    torch.testing.assert_close(moved.positions(), motion.positions())  # the construction itself
    return moved, bind


@pytest.mark.parametrize("family", ["cmu_mb", "bandai", "ccrig"])
def test_copy_onto_same_skeleton_is_identity(clips, family):
    motion = clips[family]
    out = Retargeter(motion.skeleton, motion.skeleton, "copy", floor=0.0)(motion)
    torch.testing.assert_close(out.positions(), motion.positions(), atol=1e-4 * motion.height, rtol=0)


def test_rotated_bind_frames_transfer_exactly(clips):
    motion = clips["cmu_mb"]
    rotated, bind = _rotated_frames(motion, 0, same=False)
    out = Retargeter(rotated.skeleton, motion.skeleton, "copy", source_rest=bind, floor=0.0)(rotated)
    torch.testing.assert_close(out.positions(), motion.positions(), atol=1e-9, rtol=0)
    back = Retargeter(motion.skeleton, rotated.skeleton, "copy", target_rest=bind, floor=0.0)(motion)
    torch.testing.assert_close(back.positions(), motion.positions(), atol=1e-9, rtol=0)


def test_turned_rest_pose_needs_no_bind_pose(clips):
    motion = clips["cmu_mb"]
    rotated, _ = _rotated_frames(motion, 1, same=True)  # its zero pose is the T-pose turned as a whole
    out = Retargeter(rotated.skeleton, motion.skeleton, "copy", floor=0.0)(rotated)
    torch.testing.assert_close(out.positions(), motion.positions(), atol=1e-9, rtol=0)
    naive = Retargeter(rotated.skeleton, motion.skeleton, "naive", floor=0.0)(rotated)
    assert float((naive.positions() - motion.positions()).norm(dim=-1).mean()) > 0.05 * motion.height


def test_fk_of_selected_joints_matches_core_fk(clips):
    """The few-joint path of core FK (used for streamed frames) against the per-joint one, with quaternions and
    matrices, many frames and one, joints in any order and repeated."""
    motion = clips["ccrig"]
    sk = motion.skeleton
    joints = list(range(sk.num_joints - 1, 0, -7)) + [0, 3, 3]
    ref_world, ref_pos = forward_kinematics(motion.rotations, motion.local_translations(), sk.parents.tolist())
    for rotations in (motion.rotations, quat_to_matrix(motion.rotations)):
        world, pos = forward_kinematics_joints(rotations, motion.local_translations(), sk.parents, joints)
        torch.testing.assert_close(world, ref_world[:, joints])
        torch.testing.assert_close(pos, ref_pos[:, joints])
    world, pos = forward_kinematics_joints(motion.rotations[5], motion.local_translations()[5], sk.parents, joints)
    torch.testing.assert_close(pos, ref_pos[5, joints])


def test_canonical_fk_reproduces_mapped_positions(clips):
    # exact where no unmapped joint between two mapped ones is animated (the production rig animates
    # its neck twist bones, which canonical space folds into the rest)
    for motion in (clips["bandai"], clips["pymo"], clips["deepmimic"]):
        rig = CanonicalRig(motion.skeleton)
        frames, pos = rig.encode(motion.rotations, motion.local_translations())
        from skelanim.retarget.rig import canonical_locals

        _, again = rig.canonical_fk(canonical_locals(frames), pos[:, 0])
        torch.testing.assert_close(again, pos, atol=1e-6 * motion.height, rtol=0)  # Bandai: animated translations ~ offsets


def test_copy_keeps_bone_directions_across_skeletons(clips):
    source, target = clips["bandai"], clips["cmu_mb"].skeleton
    out = Retargeter(source.skeleton, target, "copy", floor=0.0)(source)
    s_rig, t_rig = CanonicalRig(source.skeleton), CanonicalRig(target)
    _, ps = s_rig.encode(source.rotations, source.local_translations())
    _, pt = t_rig.encode(out.rotations, out.local_translations())
    for parent, child in (("l_upleg", "l_leg"), ("r_leg", "r_foot"), ("l_upperarm", "l_forearm")):
        ds = torch.nn.functional.normalize(ps[:, SLOT[child]] - ps[:, SLOT[parent]], dim=-1)
        dt = torch.nn.functional.normalize(pt[:, SLOT[child]] - pt[:, SLOT[parent]], dim=-1)
        assert float((ds * dt).sum(-1).min()) > 0.999
    ratio = t_rig.leg_length / s_rig.leg_length
    assert abs(float(pt[:, 0, 1].mean() / ps[:, 0, 1].mean()) - ratio) < 0.02 * ratio


@pytest.mark.parametrize("method", ["copy", "ik", "naive"])
def test_step_equals_whole_clip(clips, method):
    source, target = clips["cmu_mb"][:24], clips["bandai"].skeleton
    retarget = Retargeter(source.skeleton, target, method, fps=source.fps, floor=0.0)
    whole = retarget(source)
    rows = [retarget.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    torch.testing.assert_close(torch.stack([r[0] for r in rows]), whole.rotations, atol=1e-9, rtol=0)
    torch.testing.assert_close(torch.stack([r[2] for r in rows]), whole.joint_translations, atol=1e-9, rtol=0)


@pytest.mark.parametrize("method", ["copy", "nkn"])
def test_a_retargeter_built_from_clips_streams_them_as_it_retargets_them(clips, method):
    """An audit: ``Retargeter(source_clip, target_clip).step`` (the retarget README's stream) put a stream's feet on
    y = 0 of the source, while the clip stood on its own floor: a CMU walk streamed onto Bandai 5 cm above the clip's
    result (the exported step took the clip's floor already). A stream now stands where the source clip stood."""
    source, target = clips["cmu_mb"], clips["bandai"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the NKN's note on a rate off its training one (it is not, here)
        retarget = Retargeter(source, target, method, fps=source.fps)
    whole = retarget(source)
    rows = [retarget.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    streamed = whole.copy(rotations=torch.stack([r[0] for r in rows]), root_positions=torch.stack([r[1] for r in rows]),
                          joint_translations=None if rows[0][2] is None else torch.stack([r[2] for r in rows]))  # fmt: skip
    gap = (streamed.positions() - whole.positions()).norm(dim=-1).max()
    assert float(gap) < 1e-4 * target.height, float(gap)


@pytest.mark.parametrize(("method", "target"), [("copy", "ccrig"), ("naive", "bandai"), ("copy", "deepmimic")])
def test_onnx_step_equals_eager_step(clips, method, target):
    """The compiled (onnxruntime) step against the same frame function run eagerly in torch, stream state
    carried through both; the compiled one must really be in use."""
    from skelanim.retarget.online import OnnxStep

    source = clips["cmu_mb"][:12]
    fast, slow = (Retargeter(source.skeleton, clips[target].skeleton, method, fps=source.fps, runtime=rt)
                  for rt in ("onnx", "torch"))  # fmt: skip
    assert fast.compile() and not slow.compile()
    for f in range(source.num_frames):
        a, b = fast.step(source.rotations[f], source.root_positions[f]), slow.step(source.rotations[f], source.root_positions[f])
        torch.testing.assert_close(a[0], b[0], atol=1e-9, rtol=0)
        torch.testing.assert_close(a[1], b[1], atol=1e-9, rtol=0)
        assert (a[2] is None) == (b[2] is None)
    assert isinstance(fast._compiled, OnnxStep) and slow._compiled is False


@pytest.mark.parametrize(("target", "rate"), [("cmu_mb", 1), ("deepmimic", 1), ("cmu_mb", 4)])
def test_ik_onnx_step_equals_eager_step_through_touch_downs_and_lift_offs(clips, target, rate):
    """IK's compiled step (its foot pins are stream state in and out of the graph) against the eager one, on a
    Bandai walk fed with its animated translations, so that feet touch down, stay, lift off and (onto CMU, which
    has toes) hang from a planted toe; the compiled step must really be in use. ``rate``: the stream declared at
    that multiple of the clip's 30 fps (the pins' decay per frame is fixed in the graph from it)."""
    from skelanim.retarget.online import OnnxStep

    source = clips["bandai"].copy(fps=clips["bandai"].fps * rate)
    moved = source.local_translations()
    fast, slow = (Retargeter(source.skeleton, clips[target].skeleton, "ik", fps=source.fps, runtime=rt)
                  for rt in ("onnx", "torch"))  # fmt: skip
    assert fast.compile() and not slow.compile()
    pinned, hung = [], []
    for f in range(source.num_frames):
        a = fast.step(source.rotations[f], source.root_positions[f], moved[f])
        b = slow.step(source.rotations[f], source.root_positions[f], moved[f])
        torch.testing.assert_close(a[0], b[0], atol=1e-9, rtol=0)
        torch.testing.assert_close(a[1], b[1], atol=1e-9, rtol=0)
        pinned.append(slow._pins.pinned == 1)
        hung.append(slow._pins.hang.abs().sum(-1) > 0)
    held = torch.stack(pinned)
    assert bool((held[1:] & ~held[:-1]).any()) and bool((~held[1:] & held[:-1]).any())  # touch-downs, lift-offs
    assert bool(torch.stack(hung).any()) == (target == "cmu_mb")  # DeepMimic's humanoid has no toes
    assert isinstance(fast._compiled, OnnxStep)
    fresh = Retargeter(source.skeleton, clips[target].skeleton, "ik", fps=source.fps, floor=0.0)
    whole = fresh(source)  # the clip through the same pins, eagerly
    torch.testing.assert_close(a[0], whole.rotations[-1], atol=1e-9, rtol=0)


def test_decoded_locals_match_a_full_conversion(clips):
    """Joints whose local rotation the decoding fixes come from a table; compare with converting every joint."""
    rig = CanonicalRig(clips["ccrig"].skeleton)
    g = torch.Generator().manual_seed(3)
    q, _ = torch.linalg.qr(torch.randn(4, 22, 3, 3, generator=g, dtype=torch.float64))
    world = rig.decode_world(q * torch.linalg.det(q)[..., None, None])
    parent = world[:, [max(p, 0) for p in rig.parents]]
    full = matrix_to_quat(torch.cat([world[:, :1], (parent.transpose(-1, -2) @ world)[:, 1:]], dim=1))
    torch.testing.assert_close(rig.locals_from_world(world), full, atol=1e-12, rtol=0)
    assert len(rig.varying_joints()) < rig.skeleton.num_joints / 2


def test_ik_holds_planted_feet(clips):
    from skelanim.retarget.evaluate import VARIANTS, bandai_variant, proportion_metrics

    source = clips["bandai"]
    target = bandai_variant(source.skeleton, VARIANTS["bandai_long_shins"])
    s_rig, t_rig = CanonicalRig(source.skeleton), CanonicalRig(target)
    skate = {m: proportion_metrics(source, Retargeter(s_rig, t_rig, m)(source), s_rig, t_rig)["skate"] for m in ("copy", "ik")}
    assert skate["ik"] < 0.5 * skate["copy"], skate


def test_two_bone_reaches_and_keeps_lengths():
    hip = torch.zeros(5, 3, dtype=torch.float64)
    target = torch.tensor([[0.3, -0.6, 0.1]], dtype=torch.float64).expand(5, 3)
    knee0 = torch.tensor([0.0, -0.4, 0.2], dtype=torch.float64).expand(5, 3)
    knee, foot = two_bone(hip, knee0, target, 0.45, 0.42)
    torch.testing.assert_close(foot, target)
    torch.testing.assert_close((knee - hip).norm(dim=-1), torch.full((5,), 0.45, dtype=torch.float64))
    torch.testing.assert_close((foot - knee).norm(dim=-1), torch.full((5,), 0.42, dtype=torch.float64))


def test_a_straight_leg_bends_in_the_same_plane_in_float32_and_float64():
    """An audit: a straight-legged T-pose's knee, off the hip-foot line only by rounding noise, took the noise's
    direction, which float32 and float64 resolve differently (the float32 ONNX export's knee 6.85 cm from the
    Python step's). A knee within 1e-4 of the thigh off the line takes the fixed plane in both; a bent one keeps its
    own plane."""
    upper, lower = 0.45, 0.42
    target = torch.tensor([[0.0, -0.80, 0.0]], dtype=torch.float64)
    knees = []
    for noise in ([3e-8, 0.0, -2e-8], [-4e-8, 0.0, 5e-8], [0.0, 0.0, 0.0]):
        knee0 = torch.tensor([[0.0, -upper, 0.0]], dtype=torch.float64) + torch.tensor([noise], dtype=torch.float64)
        for dtype in (torch.float64, torch.float32):
            hip = torch.zeros(1, 3, dtype=dtype)
            knee, _ = two_bone(hip, knee0.to(dtype), target.to(dtype), upper, lower)
            knees.append(knee.double())
    for knee in knees[1:]:
        torch.testing.assert_close(knee, knees[0], atol=1e-6, rtol=0)
    bent, _ = two_bone(torch.zeros(1, 3, dtype=torch.float64), torch.tensor([[1e-3, -upper, 0.0]], dtype=torch.float64),
                       target, upper, lower)  # fmt: skip
    assert float(bent[0, 0]) > 0.1 and abs(float(bent[0, 2])) < 1e-12  # a real bend: its own plane, x


def test_a_soft_reach_eases_the_knee_straight():
    """Soft reach (Nicholas's soft IK): a target within the leg minus the soft span is reached exactly; beyond, the
    foot lies at ``L - s + s (1 - exp(-(d - L + s) / s))`` toward it, and the knee straightens ever more slowly
    instead of locking straight at ``d = L`` (closed form; a hard reach's knee angle has an infinite slope there)."""
    import math

    upper, lower, soft = 0.45, 0.42, 0.02
    length, span = upper + lower, soft * (upper + lower)
    hip, knee0 = torch.zeros(1, 3, dtype=torch.float64), torch.tensor([[0.0, -0.4, 0.2]], dtype=torch.float64)
    for d in (0.5, length - span - 1e-3, length - 0.5 * span, length, length + 0.05):
        target = torch.tensor([[0.0, -d, 0.0]], dtype=torch.float64)
        knee, foot = two_bone(hip, knee0, target, upper, lower, soft=soft)
        reached = d if d <= length - span else length - span + span * (1 - math.exp(-(d - length + span) / span))
        assert float(foot.norm()) == pytest.approx(reached, abs=1e-12)
        assert float((knee - hip).norm()) == pytest.approx(upper) and float((foot - knee).norm()) == pytest.approx(lower)
    bend = []  # knee bend near full reach: smooth (soft) against a hard lock at d = L
    for d in torch.linspace(length - 2 * span, length + span, 31, dtype=torch.float64):
        knee, foot = two_bone(hip, knee0, torch.tensor([[0.0, -float(d), 0.0]], dtype=torch.float64), upper, lower,
                              soft=soft)  # fmt: skip
        bend.append(float((knee[0] - 0.5 * foot[0]).norm()))
    steps = torch.tensor(bend).diff().abs()
    assert float(steps.max()) < 3 * float(steps.median()) and bend[-1] > 0.0


def test_ik_knee_does_not_snap_when_a_toe_plants(mocap_files):
    """An audit: a pymo walk onto the Bandai skeleton (``--method ik``) locked a knee straight for 5 frames, then
    turned it 19 degrees in one 120 fps frame (the source's knee never turns 4.2): the ankle had jumped onto its
    planted toe's hang, and the hard reach locked and unlocked. Each knee's largest turn in a frame is now within
    twice the source's largest (it was 4.5 times)."""
    import math

    from skelanim.retarget.mapping import map_skeleton

    walk, bandai = (skelanim.load(p) for p in mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh",
                                                               "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))  # fmt: skip
    walk = walk[:600]
    out = Retargeter(walk, bandai, "ik")(walk)

    def largest_turn(motion: Motion) -> float:
        index = map_skeleton(motion.skeleton).joints
        q = motion.rotations.double()[:, [index["l_leg"], index["r_leg"]]]
        return float(2 * torch.acos((q[1:] * q[:-1]).sum(-1).abs().clamp(max=1)).max()) * 180 / math.pi

    assert largest_turn(out) < 2 * largest_turn(walk)


def test_retargeter_errors(clips):
    motion = clips["cmu_mb"]
    with pytest.raises(RetargetError, match="unknown method"):
        Retargeter(motion.skeleton, motion.skeleton, "magic")
    retarget = Retargeter(motion.skeleton, motion.skeleton)
    with pytest.raises(RetargetError, match=r"\(31, 4\)"):
        retarget.step(torch.zeros(5, 4), torch.zeros(3))
    with pytest.raises(RetargetError, match=r"\(3,\) root"):
        retarget.step(torch.zeros(31, 4), torch.zeros(2))
    with pytest.raises(RetargetError, match="unknown runtime"):
        Retargeter(motion.skeleton, motion.skeleton, runtime="gpu")
    with pytest.raises(RetargetError, match="source skeleton"):
        retarget(clips["bandai"])


def test_contacts_feed_the_baselines(clips):
    motion = clips["bandai"]
    labels = foot_contacts(motion, joints=[int(CanonicalRig(motion.skeleton).joint_of_slot[s]) for s in FEET])
    assert 0.2 < float(labels.float().mean()) < 0.95


def test_bad_input_is_a_retarget_error_naming_frame_and_joint(clips):
    """Zero frames raised a raw torch error and NaN went through to NaN output; both are refused now, as are a
    frame rate or floor that is no number."""
    src, dst = clips["cmu_mb"], clips["bandai"]
    r = Retargeter(src.skeleton, dst.skeleton)
    with pytest.raises(RetargetError, match="no frames"):
        r(src[:0])
    rot = src.rotations.clone()
    rot[3, 5, 0] = float("nan")
    with pytest.raises(RetargetError, match="non-finite rotation") as info:
        r(src.copy(rotations=rot))
    assert info.value.where == f"frame 3, joint {src.skeleton.names[5]}"
    with pytest.raises(RetargetError, match="non-finite rotation"):
        r.step(rot[3], src.root_positions[3])
    for bad in ({"fps": 0}, {"fps": -1.0}, {"fps": float("nan")}, {"floor": float("nan")}):
        with pytest.raises(RetargetError, match="fps must be|floor must be"):
            Retargeter(src.skeleton, dst.skeleton, **bad)
    assert r(src).num_frames == src.num_frames  # and good input still goes through


@pytest.mark.parametrize("name", ["cmu_mb", "xia", "bandai", "pymo"])
def test_a_clip_onto_its_own_skeleton_comes_back_as_it_was(clips, name):
    """Root height included: the feet's joints were put on y = 0 (CMU 01_01 sank 2.6 % of its height)."""
    clip = clips[name]
    out = Retargeter(clip.skeleton, clip.skeleton)(clip)
    assert float((out.positions() - clip.positions()).abs().max()) < 1e-6 * clip.height


def test_a_floor_far_from_the_origin_is_the_lowest_foot_joint(clips):
    """The production rig's floor lies about a metre below its origin: its lowest foot joint is the floor."""
    clip = clips["ccrig"]
    out = Retargeter(clip.skeleton, clips["cmu_mb"].skeleton)(clip)
    feet = [i for i, n in enumerate(out.skeleton.names) if any(k in n.lower() for k in ("foot", "toe"))]
    lowest = float(out.positions()[:, feet, 1].min())
    assert abs(lowest) < 0.05 * out.height and abs(float(clip.positions()[:, :, 1].min())) > 0.3 * clip.height


def test_wrong_types_are_retarget_errors(clips):
    """A file name for a skeleton, or a number for a mapping, raised AttributeError deep in the mapping."""
    src, dst = clips["cmu_mb"], clips["bandai"]
    with pytest.raises(RetargetError, match="load a file with skelanim.load first"):
        Retargeter("a.bvh", dst.skeleton)
    with pytest.raises(RetargetError, match="a joint mapping is a JointMapping, a dict or a mapping file's path, got int"):
        Retargeter(src.skeleton, dst.skeleton, source_map=5)


def test_standing_toes_land_where_the_targets_own_captures_stand_theirs(mocap_files):
    """The production rig's toe joints stand on its floor, CMU's about 5 % of the height above its y = 0. The same
    performance in both (production rig 001_01, CMU 01_01, 3 s): retargeted onto the other's take, where the feet
    stand (the lowest foot or toe joint's quartile over frames) is within 1.4 % of the height of the take's own
    (it was 5.4 % below, through CMU's floor, and 3.6 % above the production rig's)."""
    cc_path, cmu_path = mocap_files(["cmu_iclone_ccrig/001_01.bvh", "cmu_cgspeed_mb/01_01.bvh"])
    cc = skelanim.load(cc_path)[0:180:2].copy(fps=30.0)
    cmu = skelanim.load(cmu_path)[0:360:4].copy(fps=30.0)

    def standing(motion):
        feet = [i for i, n in enumerate(motion.skeleton.names) if any(k in n.lower() for k in ("foot", "toe"))]
        return float(torch.quantile(motion.positions()[:, feet, 1].min(1).values, 0.25))

    for source, target in ((cc, cmu), (cmu, cc)):
        for method in ("copy", "ik"):
            out = Retargeter(source, target, method)(source)
            assert abs(standing(out) - standing(target)) < 0.02 * target.height, (method, target.skeleton.names[0])


def test_nkn_reads_a_clip_at_its_training_rate(mocap_files, clips):
    """A 120 fps CMU walk is read by the NKN at 30 fps, its training rate, and answered at 120 fps: at every fourth
    frame the answer is the one for the same walk resampled to 30 fps. Read at 120 fps, its recurrent steps had
    run four times too fast (an audit: twice the foot skating)."""
    from skelanim.core.rotations import quat_geodesic
    from skelanim.ops import resample

    fast = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])[:241]
    assert fast.fps == 120.0
    retarget = Retargeter(fast, clips["bandai"], "nkn")
    out, slow = retarget(fast), retarget(resample(fast, 30.0))
    assert out.num_frames == fast.num_frames and out.fps == 120.0 and slow.num_frames == 61
    assert float(quat_geodesic(out.rotations[::4], slow.rotations).max()) < 1e-9
    torch.testing.assert_close(out.root_positions[::4], slow.root_positions, atol=1e-9, rtol=0)
    between = quat_geodesic(out.rotations[1:-1:4], slow.rotations[:-1]).rad2deg()  # a quarter step on: moved
    assert 0.0 < float(between.mean()) < 5.0
    # a stream cannot be resampled: one at another rate than the training rate is warned about (retarget export)
    with pytest.warns(UserWarning, match="the NKN streams at 120 fps but learned 30 fps steps"):
        Retargeter(fast, clips["bandai"], "nkn", fps=120.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Retargeter(fast, clips["bandai"], "nkn", fps=30.0)
        defaulted = Retargeter(fast, clips["bandai"], "nkn")  # the clip's 120 fps: said when a stream starts
        defaulted(fast)  # a whole clip is resampled: nothing to say
    with pytest.warns(UserWarning, match="the NKN streams at 120 fps but learned 30 fps steps"):
        defaulted.step(fast.rotations[0], fast.root_positions[0])


def test_a_retargeter_built_from_a_clip_streams_at_its_rate_and_takes_numpy_numbers(mocap_files):
    """Without ``fps`` a Retargeter built from a clip streams at the clip's rate, as it takes its floor: a 120 fps
    clip's own frames stepped through give the clip's result (at the 30 fps it had assumed, IK's contacts moved and
    the feet came out up to 32 cm apart, a review's numbers). fps and floors may be NumPy or 0-d torch numbers."""
    import numpy as np

    source = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])[1000:1120]  # 120 fps
    target = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])
    retarget = Retargeter(source, target, "ik")
    assert retarget.fps == source.fps == 120.0
    whole = retarget(source)
    rows = [retarget.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    streamed = whole.copy(rotations=torch.stack([r[0] for r in rows]), root_positions=torch.stack([r[1] for r in rows]),
                          joint_translations=None if rows[0][2] is None else torch.stack([r[2] for r in rows]))  # fmt: skip
    assert float((streamed.positions() - whole.positions()).norm(dim=-1).max()) < 1e-4 * target.height
    assert Retargeter(source.skeleton, target.skeleton).fps == 30.0  # a bare skeleton says no rate
    numbers = Retargeter(source, target, fps=np.float32(60), floor=np.int64(0), target_floor=torch.tensor(0.5))
    assert (numbers.fps, numbers.floor, numbers.target_floor) == (60.0, 0.0, 0.5)
    with pytest.raises(TypeError, match=r"motion must be a Motion, got str \(load a file with skelanim.load first\)"):
        retarget("walk.bvh")
