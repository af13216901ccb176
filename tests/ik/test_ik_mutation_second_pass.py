"""Second-pass mutation audit of ``skelanim.ik`` (2026-12): behaviours that a mutant could change with every other IK
test still passing, each checked here against a source independent of the code under test (a closed form, SciPy
doing the same maths another way, a hand-built skeleton with hand values, or the rule a docstring or the ik README
states, quoted in the test).

Everything runs on hand-built skeletons or on the shipped model's skeleton with synthetic poses: no mocap data and
no network forward pass are needed."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy.optimize import brentq
from scipy.spatial.transform import Rotation

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import quat_identity, quat_to_matrix, rotvec_to_quat
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, ShapeError
from skelanim.ik.classical import kabsch, optimize_ik, rotation_between, swing_ik
from skelanim.ik.frames import IKRig, rest_bone_frames


def _skeleton(names: list[str], parents: list[int], offsets: list[list[float]]) -> Skeleton:
    return Skeleton(names, np.array(parents), torch.tensor(offsets, dtype=torch.float64))


@pytest.fixture(scope="module")
def model_skeleton() -> Skeleton:
    """The shipped model's skeleton (Bandai-Namco, 22 joints), read from its config (no weights needed)."""
    import json

    from skelanim.ik.solve import DEFAULT_MODEL

    return Skeleton.from_dict(json.loads((DEFAULT_MODEL / "config.json").read_text())["skeleton"])


@pytest.fixture(scope="module")
def model_poses(model_skeleton: Skeleton) -> torch.Tensor:
    """``(9, 22, 3)`` float64 positions: FK on the model skeleton's rest offsets of random local rotations (0.3 rad
    per axis), the dummy root kept at identity, the hips placed at random; every bone has its rest length."""
    rig = IKRig(model_skeleton, ik_root=1)
    gen = torch.Generator().manual_seed(7)
    q = rotvec_to_quat(0.3 * torch.randn(9, rig.num_joints, 3, generator=gen, dtype=torch.float64))
    q[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    root = 20.0 * torch.randn(9, 3, generator=gen, dtype=torch.float64)
    return forward_kinematics(q, rig.translations(root), rig.parents)[1]


def _lengthen(positions: torch.Tensor, skeleton: Skeleton, joint: int, factor: float) -> torch.Tensor:
    """``positions`` with the bone to leaf ``joint`` ``factor`` times as long (its parent end fixed)."""
    out = positions.clone()
    parent = int(skeleton.parents[joint])
    out[:, joint] = out[:, parent] + factor * (out[:, joint] - out[:, parent])
    return out


# ---------------------------------------------------------------------------------------------- frames


def test_a_leaf_at_joint_one_points_along_its_own_offset():
    """frames.py: the bone axis of a leaf is "along its own incoming offset" (any joint but the root); joint 1 is
    no exception. By hand: leaf 1 with offset (0, 0, 2) has axis +Z; the reference, the coordinate axis least
    parallel to it, is X (first of the ties), so ``B_1 = [z, x, y]``."""
    sk = _skeleton(["root", "leaf", "arm"], [-1, 0, 0], [[0, 0, 0], [0, 0, 2.0], [3.0, 0, 0]])
    frames = rest_bone_frames(sk).numpy()
    np.testing.assert_allclose(frames[1], np.eye(3)[:, [2, 0, 1]], atol=1e-12)


# ---------------------------------------------------------------------------------------------- classical


@pytest.mark.parametrize("angle_deg", [170.0, 178.0, 179.9])
def test_rotation_between_nearly_opposite_directions_is_the_smallest_rotation(angle_deg: float):
    """``rotation_between`` is "the smallest rotation carrying direction u onto direction v"; only exactly opposite
    vectors (``u . v < -1 + 1e-7``) take the half turn. SciPy: the rotation's angle is ``acos(u . v)`` and it carries
    ``u`` onto ``v``."""
    a = math.radians(angle_deg)
    u = np.array([1.0, 0.0, 0.0])
    v = np.array([math.cos(a), math.sin(a), 0.0])
    r = rotation_between(torch.from_numpy(u), torch.from_numpy(v)).numpy()
    np.testing.assert_allclose(r @ u, v, atol=1e-9)
    assert Rotation.from_matrix(r).magnitude() == pytest.approx(a, abs=1e-9)


@pytest.mark.parametrize("u", [[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [0.6, 0.8, 0]])
def test_rotation_between_exactly_opposite_directions_is_a_proper_half_turn(u: list[float]):
    """Documented: "for opposite vectors a half turn about an axis normal to u". A half turn is a rotation
    (orthogonal, determinant +1) of angle pi that sends ``u`` to ``-u``; axis-aligned ``u`` included."""
    uu = np.array(u)
    r = rotation_between(torch.from_numpy(uu), torch.from_numpy(-uu)).numpy()
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(r) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(r @ uu, -uu, atol=1e-12)
    assert Rotation.from_matrix(r).magnitude() == pytest.approx(math.pi, abs=1e-9)


def test_kabsch_of_a_mirrored_point_set_is_scipys_proper_rotation():
    """``kabsch``: "Rotation R minimising sum |R source - target|^2 (proper, det +1)". For a target that is a mirror
    image of the source the unconstrained optimum is a reflection; SciPy's ``Rotation.align_vectors`` solves the
    same problem over proper rotations only."""
    gen = np.random.default_rng(3)
    source = gen.normal(size=(6, 3))
    target = source * np.array([-1.0, 1.0, 1.0]) @ Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix().T
    got = np.asarray(kabsch(source, target))
    expected = Rotation.align_vectors(target, source)[0].as_matrix()
    assert np.linalg.det(got) == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(got, expected, atol=1e-9)


def test_swing_ik_solves_a_joint_with_two_children_exactly():
    """classical.py: "several non-collinear children: R_j is the least-squares (Kabsch / Wahba) rotation ... which
    fixes all three degrees of freedom", and "On exact positions of the rig every bone ends where it was observed".
    Two children are several: FK of swing IK from the rest pose is the input, both children included."""
    sk = _skeleton(["root", "a", "b", "a_tip", "b_tip"], [-1, 0, 0, 1, 2],
                   [[0, 0, 0], [4.0, 0, 0], [0, 3.0, 1.0], [0, 2.0, 0], [1.0, 0, 0]])  # fmt: skip
    rig = IKRig(sk)
    gen = torch.Generator().manual_seed(1)
    q = rotvec_to_quat(0.8 * torch.randn(4, 5, 3, generator=gen, dtype=torch.float64))
    _, pos = forward_kinematics(q, rig.translations(torch.randn(4, 3, generator=gen, dtype=torch.float64)), rig.parents)
    quats, trans = swing_ik(pos, rig, quat_identity((5,), dtype=torch.float64))
    torch.testing.assert_close(forward_kinematics(quats, trans, rig.parents)[1], pos, atol=1e-9, rtol=0)


def test_optimize_ik_reaches_the_closed_form_optimum_of_its_documented_cost():
    """classical.py: LM minimises ``sum_i |p_i(L) - p_i^obs|^2 / h^2 + w sum_k |log(L_init,k^T L_k)|^2``. One bone
    of length 2 (height 2) from the origin, target turned by theta about Z, init the rest pose: the optimum turns
    by phi about Z with ``w phi = (l / h)^2 sin(theta - phi)`` (derivative of ``2 l^2 (1 - cos(theta - phi)) / h^2
    + w phi^2``), solved here with SciPy's ``brentq``."""
    sk = _skeleton(["root", "tip"], [-1, 0], [[0, 0, 0], [0, 2.0, 0]])
    rig = IKRig(sk)
    assert rig.height == pytest.approx(2.0)
    theta, w = 1.0, 0.5
    target = torch.tensor(
        [[[0.0, 0.0, 0.0], [-2.0 * math.sin(theta), 2.0 * math.cos(theta), 0.0]]], dtype=torch.float64
    )
    quats, _ = optimize_ik(target, rig, quat_identity((2,), dtype=torch.float64), prior=w)
    phi = brentq(lambda p: w * p - math.sin(theta - p), 0.0, theta)
    got = Rotation.from_quat(quats[0, 0, [1, 2, 3, 0]].numpy()).as_rotvec()
    np.testing.assert_allclose(got, [0.0, 0.0, phi], atol=1e-6)


# ---------------------------------------------------------------------------------------------- checks


def _facing_positions(model_skeleton: Skeleton, cosine: float) -> torch.Tensor:
    """One frame on the model skeleton where ``cross(left hip - right hip, head - hips)`` is +Z by construction (hips
    at the origin, thighs at x = +-10, neck and head straight above) and both toes point along ``(s, 0, cosine)``;
    the knees are off the hips' line, so a rule that read them instead of the hips would see another forward."""
    names = model_skeleton.names
    at = {"Hips": (0, 0, 0), "Neck": (0, 50, 0), "Head": (0, 60, 0), "UpperLeg_L": (10, 0, 0),
          "UpperLeg_R": (-10, 0, 0), "LowerLeg_L": (12, -40, 6), "LowerLeg_R": (-8, -40, -6),
          "Foot_L": (10, -80, 0), "Foot_R": (-10, -80, 0)}  # fmt: skip
    pos = torch.zeros(1, len(names), 3, dtype=torch.float64)
    for name, xyz in at.items():
        pos[0, names.index(name)] = torch.tensor(xyz, dtype=torch.float64)
    toe = torch.tensor([math.sqrt(1 - cosine**2), 0.0, cosine], dtype=torch.float64)
    for side in "LR":
        pos[0, names.index(f"Toes_{side}")] = pos[0, names.index(f"Foot_{side}")] + 10.0 * toe
    return pos


@pytest.mark.parametrize("cosine", [0.7, -0.04, -0.2, -0.6])
def test_facing_cosine_is_the_documented_cosine(model_skeleton: Skeleton, cosine: float):
    """checks.py: the cosine "between where the toes point (ankle to toe, both feet) and the body's forward
    direction, cross(left hip - right hip, head - hips)", here built to be ``cosine``."""
    from skelanim.ik.checks import facing_cosine

    assert facing_cosine(_facing_positions(model_skeleton, cosine), model_skeleton) == pytest.approx(cosine, abs=1e-9)


@pytest.mark.parametrize(("cosine", "warned"), [(-0.04, False), (-0.2, False), (-0.6, True)])
def test_only_toes_pointing_well_backwards_are_warned(model_skeleton: Skeleton, cosine: float, warned: bool):
    """README: "every Bandai capture reads at least -0.04, a run with its feet pointed down", and swapped labels
    "read about minus the true value" (median 0.68): a capture's -0.04 or -0.2 is no swap and is not warned
    (``SIDES_COSINE`` = -0.3), -0.6 is."""
    from skelanim.ik.checks import check_sides

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_sides(_facing_positions(model_skeleton, cosine), model_skeleton)
    assert any("toes point backwards" in str(w.message) for w in caught) == warned


def test_a_bone_two_and_a_half_times_its_length_is_refused(model_skeleton: Skeleton, model_poses: torch.Tensor):
    """README: a bone "more than twice as long or short as the model's after that overall scale (BONE_TOLERANCE) ...
    is refused". The bone to Hand_L (22.3 cm, 2.5 times: 33 cm, far beyond 5 % of the height) is; the same bone
    1.8 times as long is not."""
    from skelanim.ik.checks import check_positions

    hand = model_skeleton.names.index("Hand_L")
    with pytest.raises(ShapeError, match="bone to Hand_L is 2.5 times"):
        check_positions(_lengthen(model_poses, model_skeleton, hand, 2.5), model_skeleton, ik_root=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_positions(_lengthen(model_poses, model_skeleton, hand, 1.8), model_skeleton, ik_root=1)


def test_a_bone_glitched_in_a_third_of_the_frames_is_judged_by_its_median(model_skeleton: Skeleton,
                                                                          model_poses: torch.Tensor):  # fmt: skip
    """checks.py: each bone's "median length over frames divided by scale times its rest length" is compared. A hand
    6 times as long in 3 of 9 frames has median ratio 1: not refused (its mean ratio, 2.67, would be)."""
    from skelanim.ik.checks import bone_ratios, check_positions

    hand = model_skeleton.names.index("Hand_L")
    glitched = model_poses.clone()
    glitched[:3] = _lengthen(model_poses[:3], model_skeleton, hand, 6.0)
    bones, ratio, _ = bone_ratios(glitched, model_skeleton, 1.0, ik_root=1)
    assert float(ratio[bones.index(hand)]) == pytest.approx(1.0, abs=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_positions(glitched, model_skeleton, ik_root=1)


def test_body_scale_is_the_median_over_bones(model_skeleton: Skeleton, model_poses: torch.Tensor):
    """``body_scale``: "the median over bones ... of each bone's median length over the positions' frames, divided by
    its rest length". One bone three times as long in every frame leaves the median of 21 bones at 1."""
    from skelanim.ik.checks import body_scale

    hand = model_skeleton.names.index("Hand_L")
    assert body_scale(_lengthen(model_poses, model_skeleton, hand, 3.0), model_skeleton) == pytest.approx(1.0, abs=1e-9)


def test_positions_in_inches_are_refused_with_the_factor(model_skeleton: Skeleton, model_poses: torch.Tensor):
    """README: positions whose bones are more than twice as long or short as the model's are refused ("units by
    2.54 to 1000") with the factor to multiply by. Inches for a centimetre model: bones 1 / 2.54 times as long."""
    from skelanim.ik.checks import check_positions

    with pytest.raises(ShapeError, match=r"multiply the positions by 2\.54"):
        check_positions(model_poses / 2.54, model_skeleton, ik_root=1)


@pytest.mark.filterwarnings("ignore:.*toes point backwards")
def test_a_body_smaller_by_more_than_the_warning_factor_is_warned(model_skeleton: Skeleton, model_poses: torch.Tensor):
    """README: "an overall scale beyond 1.25 (SCALE_WARNING) is solved with a warning ... (x 0.6: 7.7 % of the height
    off)": beyond it either way, so a body 0.7 times the model's size (1 / 0.7 = 1.43) is warned, not refused."""
    from skelanim.ik.checks import check_positions

    with pytest.warns(UserWarning, match="bones are 0.7 times the model skeleton's"):
        check_positions(model_poses * 0.7, model_skeleton, ik_root=1)


# ---------------------------------------------------------------------------------------------- refinement


class _GateProbe:
    """A stand-in pose corrector that records the gate the refinement hands it and corrects nothing."""

    def __init__(self) -> None:
        self.gates: list[float] = []

    def __call__(self, quats: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        self.gates.extend(float(g) for g in torch.as_tensor(gate).reshape(-1))
        return quats


@pytest.mark.parametrize("sigma", [0.0, 0.003, 0.006])
def test_the_correction_is_gated_by_the_documented_noise_rule(model_skeleton: Skeleton, sigma: float):
    """refine.py: the correction is gated by ``g = exp(-(sigma / NOISE_GATE)^2)``, README "exp(-(sigma/0.3%)²)", with
    sigma read from the bone lengths: a bone between two noisy points "changes length by about N(0, 2 sigma^2)". Every
    bone below the hips lengthened by ``sqrt(2) sigma`` of the height reads as ``sigma`` (bones hanging from the
    dummy root say nothing: the hips are placed far from their rest offset)."""
    from skelanim.ik.refine import refine

    rig = IKRig(model_skeleton, ik_root=1)
    offsets = rig.offsets.clone()
    stretch = math.sqrt(2.0) * sigma * rig.height
    lengths = offsets.norm(dim=-1, keepdim=True)
    offsets[2:] += stretch * offsets[2:] / lengths[2:]
    long = Skeleton(model_skeleton.names, model_skeleton.parents, offsets)
    gen = torch.Generator().manual_seed(2)
    q = rotvec_to_quat(0.3 * torch.randn(1, rig.num_joints, 3, generator=gen, dtype=torch.float64))
    q[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    root = torch.tensor([[0.0, 300.0, 40.0]], dtype=torch.float64)
    pos = forward_kinematics(q, IKRig(long, ik_root=1).translations(root), rig.parents)[1]
    probe = _GateProbe()
    refine(pos, SimpleNamespace(rig=rig), q, iterations=0, corrector=probe)  # type: ignore[arg-type]
    assert probe.gates == pytest.approx([math.exp(-((sigma / 0.003) ** 2))], rel=1e-6)


def _fitted_corrector():
    from skelanim.ik.refine import PoseCorrector

    gen = torch.Generator().manual_seed(0)
    pred = rotvec_to_quat(0.5 * torch.randn(200, 3, 3, generator=gen, dtype=torch.float64))
    pred[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)  # joint 0 never turns in these poses
    truth = pred.clone()
    truth[:, 1:] = rotvec_to_quat(0.5 * torch.randn(200, 2, 3, generator=gen, dtype=torch.float64))
    return PoseCorrector.fit(pred, truth, [0, 1, 2], [1, 2]), pred, truth


def test_a_joint_that_never_turns_in_the_fit_gets_no_weight():
    """``PoseCorrector.fit`` is ridge on standardised features (intercept unpenalised). A joint whose rotation is the
    same in every pose has constant features: their centred values are 0, so the ridge solution gives them weight 0
    and the rest is NumPy's ridge on the other joints' features (sample std), not NaN."""
    from skelanim.core.rotations import quat_conjugate, quat_multiply, quat_to_rot6d, quat_to_rotvec
    from skelanim.ik.refine import CORRECTOR_RIDGE

    fitted, pred, truth = _fitted_corrector()
    x = quat_to_rot6d(pred[:, 1:]).flatten(1).numpy()
    y = quat_to_rotvec(quat_multiply(quat_conjugate(pred[:, 1:]), truth[:, 1:])).flatten(1).numpy()
    xs = (x - x.mean(0)) / x.std(0, ddof=1)
    w = np.linalg.solve(xs.T @ xs + CORRECTOR_RIDGE * np.eye(xs.shape[1]), xs.T @ (y - y.mean(0)))
    np.testing.assert_allclose(fitted.correction(pred).numpy(), (y.mean(0) + xs @ w).reshape(200, 2, 3), atol=1e-9)


@pytest.mark.parametrize("kept", ["refine.json", "refine.safetensors"])
def test_half_of_a_corrector_is_a_corrupt_corrector(tmp_path: Path, kept: str):
    """``PoseCorrector.load``: ``None`` when the folder has none, ``FormatError`` for "a corrupt or mismatched pair of
    files"; a folder holding one of the pair has a corrector that cannot be read, not none (said to be missing its
    other half since 2026-12-07)."""
    from skelanim.ik.refine import PoseCorrector

    _fitted_corrector()[0].save(tmp_path)
    for name in ("refine.json", "refine.safetensors"):
        if name != kept:
            (tmp_path / name).unlink()
    with pytest.raises(FormatError, match=r"is missing beside " + kept.replace(".", r"\.") + r" \(the refinement is the pair\)"):
        PoseCorrector.load(tmp_path)


# ---------------------------------------------------------------------------------------------- ONNX metadata


@pytest.mark.parametrize("up_axis", [0, 1, 2])
def test_onnx_metadata_names_the_up_axis_and_the_height(model_skeleton: Skeleton, up_axis: int):
    """onnx.py: the metadata holds ``skelanim.height`` and ``skelanim.up_axis`` (axis 0, 1, 2 are x, y, z). The height
    reads back as the rig's (183.69605 cm); a one-node graph stands in for the network (only its output's shape is
    read)."""
    import onnx
    from onnx import TensorProto, helper

    from skelanim.ik.onnx import described

    graph = helper.make_graph([helper.make_node("Identity", ["positions"], ["rotations"])], "g",
                              [helper.make_tensor_value_info("positions", TensorProto.FLOAT, ["batch", 22, 3])],
                              [helper.make_tensor_value_info("rotations", TensorProto.FLOAT, ["batch", 22, 3])])  # fmt: skip
    rig = IKRig(model_skeleton, ik_root=1)
    data = described(helper.make_model(graph).SerializeToString(), rig, up_axis)
    meta = {p.key: p.value for p in onnx.load_from_string(data).metadata_props}
    assert meta["skelanim.up_axis"] == "xyz"[up_axis]
    assert float(meta["skelanim.height"]) == pytest.approx(rig.height, rel=1e-6)
    # the standing body's size beside it (a review: an engine scaling bodies by the height scaled them 1.34 times):
    # Skeleton.stature's rule by hand, the median over head-or-neck to foot-or-toe paths of the offsets along them
    sk = model_skeleton
    length = {n: float(sk.offsets[sk.names.index(n)].norm()) for n in sk.names}
    spine = {"Head": ["Head", "Neck", "Chest", "Spine"], "Neck": ["Neck", "Chest", "Spine"]}
    legs = {f"{f}_{s}": [f"UpperLeg_{s}", f"LowerLeg_{s}", "Foot_" + s] + (["Toes_" + s] if f == "Toes" else [])
            for f in ("Foot", "Toes") for s in "LR"}  # fmt: skip
    paths = [sum(length[n] for n in spine[h] + legs[f]) for h in spine for f in legs]
    assert float(meta["skelanim.stature"]) == pytest.approx(float(np.median(paths)), rel=1e-5)
    assert float(meta["skelanim.stature"]) < 0.8 * float(meta["skelanim.height"])


# ---------------------------------------------------------------------------------------------- data, rig, solve


def test_the_root_frame_takes_the_first_child_that_is_not_collinear():
    """model.py ``_root_axes``: "The IK root's primary child and its first child with a bone (by index) not collinear
    with it (unit directions' cross product above 0.1)". A leg 150 degrees from the spine (cross product 0.5) is not
    collinear, and comes before a leg at 90 degrees."""
    from skelanim.ik.frames import primary_children
    from skelanim.ik.model import _root_axes

    s, c = math.sin(math.radians(150.0)), math.cos(math.radians(150.0))
    sk = _skeleton(["hips", "spine", "leg_a", "leg_b"], [-1, 0, 0, 0],
                   [[0, 0, 0], [0, 10.0, 0], [8.0 * s, 8.0 * c, 0], [0, 0, 8.0]])  # fmt: skip
    rig = IKRig(sk)
    assert _root_axes(rig, primary_children(sk)) == (1, 2)


def test_flat_start_gives_a_leaf_the_mean_local_rotation():
    """model.py (``flat``): leaves start "from their parent's corrected frame and the mean local rotation",
    ``G_l = G_p B_p^T L_mean,l B_l D_l``; with a zero correction (head weights zeroed, ``D = I``) a leaf's local
    rotation ``L_l = B_p G_p^T G_l B_l^T`` (frames.py) is the mean pose's ``L_mean,l`` (float32 buffers: 1e-6)."""
    from skelanim.ik.model import IKGAT, GATConfig

    sk = _skeleton(
        ["hips", "spine", "head", "leg"], [-1, 0, 1, 0], [[0, 0, 0], [0, 10.0, 0], [0, 4.0, 1.0], [3.0, -8.0, 0]]
    )
    rig = IKRig(sk)
    net = IKGAT(rig, GATConfig(hidden=8, layers=1, heads=2, flat=True)).double()
    mean = rotvec_to_quat(torch.tensor([[0.1, 0.2, 0.3], [0.4, -0.3, 0.2], [-0.5, 0.6, 0.1], [0.3, 0.1, -0.7]],
                                       dtype=torch.float64))  # fmt: skip
    net.set_mean_pose(mean)
    with torch.no_grad():
        net.head.weight.zero_()
    _, pos = forward_kinematics(mean[None], rig.translations(torch.zeros(1, 3, dtype=torch.float64)), rig.parents)
    local = net(pos)[1]
    for leaf in (2, 3):  # head and leg have no children
        torch.testing.assert_close(local[0, leaf], quat_to_matrix(mean[leaf]), atol=1e-6, rtol=0)


def test_mean_pose_is_scipys_mean_rotation_with_w_positive():
    """``mean_pose``: "Per-joint average rotation (Markley et al. 2007 ...)", returned "w >= 0". SciPy's
    ``Rotation.mean`` computes the same average independently; ``q`` and ``-q`` are one rotation, so the signs of
    the samples do not matter."""
    from skelanim.ik.data import mean_pose

    gen = torch.Generator().manual_seed(9)
    centre = rotvec_to_quat(torch.tensor([[2.5, -0.4, 0.3], [0.1, 0.2, -2.9]], dtype=torch.float64))
    spread = rotvec_to_quat(0.3 * torch.randn(50, 2, 3, generator=gen, dtype=torch.float64))
    from skelanim.core.rotations import quat_multiply

    samples = quat_multiply(centre.expand(50, 2, 4), spread)
    samples = samples * torch.where(torch.rand(50, 2, 1, generator=gen) < 0.5, -1.0, 1.0).to(torch.float64)
    got = mean_pose(samples)
    assert bool((got[:, 0] >= 0).all())
    for j in range(2):
        want = Rotation.from_quat(samples[:, j, [1, 2, 3, 0]].numpy()).mean().as_quat()[[3, 0, 1, 2]]
        np.testing.assert_allclose(got[j].numpy(), want * np.sign(want[0]), atol=1e-9)


def test_a_root_with_two_children_is_no_dummy():
    """``detect_ik_root``: "1 when joint 0 is a dummy (one child, identity rotation in every frame ...)": a root that
    never rotates but has two children is not one (IKRig refuses ik_root 1 there)."""
    from skelanim.ik.data import detect_ik_root

    sk = _skeleton(["root", "a", "b"], [-1, 0, 0], [[0, 0, 0], [0, 1.0, 0], [1.0, 0, 0]])
    motion = SimpleNamespace(skeleton=sk, rotations=quat_identity((4, 3), dtype=torch.float64))
    assert detect_ik_root([motion]) == 0


def test_augmented_positions_are_the_fk_of_the_augmented_rotations(model_skeleton: Skeleton):
    """``augment`` returns "Noisy input positions, clean positions and world rotations" of one turned pose: FK of the
    returned world rotations on the rig's rest offsets (IK root at the origin) is the returned clean positions."""
    from skelanim.core.rotations import matrix_to_quat
    from skelanim.ik.data import augment
    from skelanim.ik.frames import world_to_local

    rig = IKRig(model_skeleton, ik_root=1)
    gen = torch.Generator().manual_seed(4)
    q = rotvec_to_quat(0.4 * torch.randn(5, rig.num_joints, 3, generator=gen, dtype=torch.float64))
    q[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    world, pos = forward_kinematics(q, rig.translations(torch.zeros(5, 3, dtype=torch.float64)), rig.parents)
    _, clean, turned = augment(pos.float(), world.float(), rig, torch.Generator().manual_seed(0), up=1)
    local = matrix_to_quat(world_to_local(turned.double(), rig.parent_index, rig.has_parent))
    _, again = forward_kinematics(local, rig.translations(torch.zeros(5, 3, dtype=torch.float64)), rig.parents)
    torch.testing.assert_close(again.float()[:, 1:], clean[:, 1:], atol=1e-3, rtol=0)


@pytest.fixture(scope="module")
def shipped():
    from skelanim.ik.solve import load_model

    return load_model(None)


@pytest.mark.parametrize("fps", [0, 0.0, -30.0])
def test_solve_refuses_a_frame_rate_that_is_not_positive(shipped, model_poses: torch.Tensor, fps: float):
    """``solve`` raises ``ShapeError`` for "an fps that is not a positive number"; zero is not positive."""
    from skelanim.ik.solve import solve

    with pytest.raises(ShapeError, match="fps must be a positive number"):
        solve(model_poses.numpy(), shipped, method="swing_mean", fps=fps)


@pytest.mark.filterwarnings("ignore:.*toes point backwards")
def test_solve_gives_an_array_thirty_frames_a_second(shipped, model_poses: torch.Tensor):
    """``solve``: "fps: Frame rate of the result (default: the input's, else 30)"; a NumPy array has none."""
    from skelanim.ik.solve import solve

    assert solve(model_poses.numpy(), shipped, method="swing_mean").fps == 30.0


def test_optimize_rest_starts_from_the_rest_pose(shipped, model_poses: torch.Tensor):
    """solve.py: ``optimize_rest`` is "100 LM iterations from the rest pose (the paper's 'without warm start')":
    with no iterations its answer is the rest pose, every local rotation the identity."""
    from skelanim.ik.solve import run_method

    quats, _ = run_method("optimize_rest", model_poses, shipped, iterations=0)
    torch.testing.assert_close(quats, quat_identity(quats.shape[:2], dtype=torch.float64), atol=1e-12, rtol=0)


def test_predict_names_the_expected_shape(shipped):
    """``IKModel.predict`` takes "(F, J, 3) world positions": another joint count is a ``ShapeError`` naming the
    model's shape, on every runtime, not whatever onnxruntime says of its graph."""
    for runtime in ("onnx", "torch", "auto"):
        with pytest.raises(ShapeError, match=r"positions must be \(F, 22, 3\)"):
            shipped.predict(torch.zeros(2, 21, 3), runtime=runtime)


def test_pose_set_puts_a_dummy_root_where_the_ik_root_implies_it():
    """``PoseSet.positions`` are "world positions relative to the IK root". A dummy root never rotates, so it sits at
    the hips minus the hips' rest offset: ``-offsets[1]`` relative to them, whatever the file's own root does."""
    from skelanim.core.motion import Motion
    from skelanim.ik.data import pose_set

    sk = _skeleton(["root", "hips", "spine"], [-1, 0, 1], [[0, 0, 5.0], [1.0, 90, 2.0], [0, 30, 0]])
    rig = IKRig(sk, ik_root=1)
    gen = torch.Generator().manual_seed(6)
    q = rotvec_to_quat(0.4 * torch.randn(4, 3, 3, generator=gen, dtype=torch.float64))
    q[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    motion = Motion(sk, q, torch.randn(4, 3, generator=gen, dtype=torch.float64), 30.0)
    poses = pose_set([motion], rig)
    torch.testing.assert_close(poses.positions[:, 0], torch.tensor([[-1.0, -90.0, -2.0]]).expand(4, 3))


def test_select_frames_gives_max_frames_when_there_are_enough():
    """evaluate.py: ``max_frames`` "picks frames evenly across the files as windows of WINDOW consecutive frames"; the
    README's runs of ``--max-frames 2000`` score 2,000 frames. 10 frames of a 100-frame file: two windows of 8, cut
    to 10 (the second window's first 2 frames)."""
    from skelanim.ik.evaluate import select_frames

    starts = torch.zeros(100, dtype=torch.bool)
    starts[0] = True
    idx, first = select_frames(starts, 10)
    assert idx.tolist() == [*range(8), 92, 93] and first.tolist() == [True] + [False] * 7 + [True, False]


@pytest.mark.filterwarnings("ignore:.*toes point backwards")
def test_a_solved_motion_keeps_the_dummy_root_still_and_moves_the_hips(shipped, model_poses: torch.Tensor):
    """``to_motion``: "Under a dummy root that never rotates, the root stays at its rest offset and the IK root's
    translation is animated (joint_translations) when the skeleton has position channels there" (the Bandai rig
    has them on Hips); README: "outputs keep joint_Root at its offset and animate the hips translation"."""
    from skelanim.ik.solve import solve

    sk = shipped.skeleton
    assert sk.has_position_channels(1)
    motion = solve(model_poses.numpy(), shipped, method="swing_mean")
    torch.testing.assert_close(motion.root_positions, sk.offsets[0].expand(9, 3), atol=1e-12, rtol=0)
    assert motion.joint_translations is not None
    torch.testing.assert_close(motion.joint_translations[:, 1], model_poses[:, 1] - sk.offsets[0], atol=1e-9, rtol=0)


@pytest.mark.parametrize(("factor", "warned"), [(1.09, False), (1.11, True)])
def test_the_proportion_warning_measures_a_larger_body_by_its_own_height(
    model_skeleton: Skeleton, model_poses: torch.Tensor, factor: float, warned: bool
):
    """``warn_proportions``: a bone off "by more than PROPORTION_WARNING (5 % and 1.2 % of the height, after the body's
    overall scale)". A body 1.2 times the model's (height 220.4) with its hand bone ``factor`` times as long: 9 % is
    2.41 cm off, under 1.2 % of its height (2.645 cm; 2.20 cm of the model's), 11 % is 2.94 cm off, over it."""
    from skelanim.ik.checks import warn_proportions

    hand = model_skeleton.names.index("Hand_L")
    big = _lengthen(model_poses * 1.2, model_skeleton, hand, factor)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_proportions(big, model_skeleton, ik_root=1)
    assert any("differ from the model's proportions" in str(w.message) for w in caught) == warned


def test_a_window_starting_on_the_last_picked_frame_scores_it_once():
    """``select_frames`` returns indices with "each frame at most once, increasing". 14 frames of a 15-frame file:
    windows at 0 and at 15 - 8 = 7, which starts on the first window's last frame; the second goes on from frame 8,
    as one sequence (hand count: frames 0-13, one start)."""
    from skelanim.ik.evaluate import select_frames

    starts = torch.zeros(15, dtype=torch.bool)
    starts[0] = True
    idx, first = select_frames(starts, 14)
    assert idx.tolist() == list(range(14)) and first.tolist() == [True] + [False] * 13
