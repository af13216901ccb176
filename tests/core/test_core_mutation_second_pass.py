"""Second-pass mutation audit of ``skelanim.core``: behaviour that no earlier test would notice if it broke.

Each test compares with an independent source (scipy, a closed form, or a value worked out by hand in a
comment), never with the library's own output.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation, Slerp

from skelanim import Motion, Skeleton
from skelanim.core.euler import EulerOrderError
from skelanim.core.joint_names import side_marker, strip_prefix
from skelanim.core.kinematics import forward_kinematics, forward_kinematics_components
from skelanim.core.motion import EulerRotations
from skelanim.core.rotations import (
    euler_to_quat,
    mean_rotations,
    quat_canonical,
    quat_continuous,
    quat_identity,
    quat_slerp,
    quat_to_rotvec,
    rot6d_to_matrix,
    rotvec_to_quat,
)
from skelanim.core.skeleton import up_sign
from skelanim.errors import ShapeError, SkeletonError


def _wxyz(rot: Rotation) -> np.ndarray:
    """scipy's quaternions (x, y, z, w) as (w, x, y, z)."""
    return np.roll(rot.as_quat(), 1, axis=-1)


# ------------------------------------------------------------------------------------------ quaternions


def test_quat_canonical_flips_only_negative_w() -> None:
    # w = 0 is already in the hemisphere w >= 0: kept as given (no needless flip); w < 0 is negated.
    q = np.array([[0.0, 0.6, 0.0, 0.8], [0.0, 0.0, -1.0, 0.0], [-0.5, 0.5, 0.5, 0.5]])
    np.testing.assert_array_equal(quat_canonical(q), [[0.0, 0.6, 0.0, 0.8], [0.0, 0.0, -1.0, 0.0],
                                                      [0.5, -0.5, -0.5, -0.5]])
    # a half turn's rotation vector has length pi and is the same rotation (scipy's matrices)
    rv = quat_to_rotvec(q[:2])
    np.testing.assert_allclose(np.linalg.norm(rv, axis=-1), np.pi, rtol=1e-15)
    np.testing.assert_allclose(Rotation.from_rotvec(rv).as_matrix(),
                               Rotation.from_quat(np.roll(q[:2], -1, axis=-1)).as_matrix(), atol=1e-12)


def test_quat_continuous_keeps_a_frame_orthogonal_to_the_previous_one() -> None:
    # dot((1,0,0,0), (0,1,0,0)) = 0 is not < 0: no flip is needed, so none is made
    q = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]])
    np.testing.assert_array_equal(quat_continuous(q), q)


def _continuous_by_loop(q: np.ndarray) -> np.ndarray:
    """Frames first: flip each frame whose dot with the (already fixed) previous one is negative."""
    out = q.copy()
    for f in range(1, len(out)):
        dots = (out[f] * out[f - 1]).sum(-1, keepdims=True)
        out[f] = np.where(dots < 0, -out[f], out[f])
    return out


@pytest.mark.parametrize("dim", [1, -3])
def test_quat_continuous_along_the_frame_axis_of_a_batch(dim: int) -> None:
    rng = np.random.default_rng(7)
    base = Rotation.from_rotvec(rng.normal(size=(2, 5, 3)) * 0.3).as_quat()  # (B=2, F=5, 4) near each other
    signs = np.array([1, -1, -1, 1, -1])[None, :, None]
    q = np.roll(base * signs, 1, axis=-1)[:, :, None, :]  # (B, F, J=1, 4), w first
    expected = np.stack([_continuous_by_loop(q[b]) for b in range(2)])  # each clip on its own frames
    out = quat_continuous(q, dim=dim)
    assert out.shape == q.shape
    np.testing.assert_allclose(out, expected, atol=0)
    # and the frames really are sign-continuous along axis 1, not along the batch axis
    assert ((out[:, 1:] * out[:, :-1]).sum(-1) >= 0).all()


def test_quat_continuous_with_a_negative_dim_on_b_f_4() -> None:
    q = np.array([[[1.0, 0.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]] * 2)  # (B=2, F=3, 4)
    # along F (dim=-2): frames 1 and 2 end up +1 (frame 1 flipped, frame 2 then kept)
    np.testing.assert_array_equal(quat_continuous(q, dim=-2)[..., 0], [[1.0, 1.0, 1.0]] * 2)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_quat_identity_has_the_dtype_asked_for(dtype: torch.dtype) -> None:
    q = quat_identity((2, 3), dtype=dtype)
    assert q.dtype == dtype and q.shape == (2, 3, 4)
    assert torch.equal(q, torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=dtype).expand(2, 3, 4))


@pytest.mark.parametrize("angle", [0.05, 0.3, 0.38])  # rotation angles (radians) between the two ends
@pytest.mark.parametrize("t", [0.1, 0.25, 0.7])
def test_slerp_between_close_rotations_matches_scipy(angle: float, t: float) -> None:
    rng = np.random.default_rng(3)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    r0 = Rotation.from_rotvec(rng.normal(size=3))
    r1 = Rotation.from_rotvec(axis * angle) * r0
    expected = Slerp([0.0, 1.0], Rotation.concatenate([r0, r1]))([t])
    got = quat_slerp(_wxyz(r0), _wxyz(r1), t)
    dot = abs(float(np.dot(got, _wxyz(expected)[0])))
    assert dot == pytest.approx(1.0, abs=1e-13)
    np.testing.assert_allclose(Rotation.from_quat(np.roll(got, -1)).as_matrix(), expected.as_matrix()[0], atol=1e-12)


def test_slerp_of_float32_quaternions_and_a_float64_fraction_is_float64() -> None:
    q0 = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float32)
    q1 = torch.tensor([math.cos(0.5), 0.0, 0.0, math.sin(0.5)], dtype=torch.float32)  # 1 rad about z
    out = quat_slerp(q0, q1, torch.tensor(1.0 / 3.0, dtype=torch.float64))
    assert out.dtype == torch.float64
    # a third of the way: 1/3 rad about z, quaternion (cos 1/6, 0, 0, sin 1/6) (float32 ends: 1e-7)
    np.testing.assert_allclose(out.numpy(), [math.cos(1 / 6), 0.0, 0.0, math.sin(1 / 6)], atol=1e-6)


def test_mean_rotations_refuses_an_empty_dim() -> None:
    with pytest.raises(ShapeError, match="no rotations"):
        mean_rotations(torch.zeros(0, 2, 3, 3, dtype=torch.float64))


# -------------------------------------------------------------------------------------- rotation vectors


@pytest.mark.parametrize("norm", [1e-4, 5e-4, 9.99e-4])  # |v|^2 just below the series' switch at 1e-6
def test_rotvec_to_quat_is_exact_to_float64_below_the_series_switch(norm: float) -> None:
    axis = np.array([2.0, -1.0, 2.0]) / 3.0
    q = rotvec_to_quat(axis * norm)
    # closed form: (cos(|v|/2), sin(|v|/2) axis); the series must agree to rounding (1 ulp of 1 is 2.2e-16)
    assert abs(q[0] - math.cos(norm / 2)) <= 4.5e-16
    np.testing.assert_allclose(q[1:], math.sin(norm / 2) * axis, rtol=4e-16, atol=0)


@pytest.mark.parametrize("half", [1e-4, 4.99e-4])  # |xyz| = sin(half), |xyz|^2 just below 1e-6
def test_quat_to_rotvec_is_exact_to_float64_below_the_series_switch(half: float) -> None:
    axis = np.array([2.0, -1.0, 2.0]) / 3.0
    q = np.concatenate([[math.cos(half)], math.sin(half) * axis])
    # the rotation of angle 2 * half about axis: rotvec 2 * half * axis
    np.testing.assert_allclose(quat_to_rotvec(q), 2 * half * axis, rtol=1e-15, atol=0)


# ------------------------------------------------------------------------------------------------ Euler


@pytest.mark.parametrize("rows", [8193, 16385])  # one row past one and past two blocks of 8192
def test_euler_to_quat_converts_every_row_of_a_long_input(rows: int) -> None:
    angles = np.random.default_rng(11).uniform(-np.pi, np.pi, size=(rows, 3))
    q = euler_to_quat(angles, "ZXY")
    assert q.shape == (rows, 4)
    expected = _wxyz(Rotation.from_euler("ZXY", angles))  # scipy upper case = intrinsic, as skelanim
    np.testing.assert_allclose(np.abs((q * expected).sum(-1)), 1.0, atol=1e-12)


# ---------------------------------------------------------------------------------------- kinematics


@pytest.mark.parametrize("parents", [[-1, 0, -2], [-1, 1, 1]], ids=["parent -2", "own parent"])
def test_forward_kinematics_refuses_bad_parents_with_a_shape_error(parents: list[int]) -> None:
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 3)
    t = torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    with pytest.raises(ShapeError):
        forward_kinematics(q, t, parents)


def test_forward_kinematics_of_integer_rotations_and_translations_is_float64() -> None:
    # root (0, 0, 0, 1): a half turn about z, at (1, 2, 3); child offset (1, 0, 0) turns to (-1, 0, 0):
    # child at (1 - 1, 2, 3) = (0, 2, 3)
    rot = torch.tensor([[0, 0, 0, 1], [1, 0, 0, 0]])
    trans = torch.tensor([[1, 2, 3], [1, 0, 0]])
    world_r, world_p = forward_kinematics(rot, trans, [-1, 0])
    assert world_p.dtype == torch.float64
    np.testing.assert_allclose(world_p.numpy(), [[1.0, 2.0, 3.0], [0.0, 2.0, 3.0]], atol=1e-15)
    np.testing.assert_allclose(world_r[1].numpy(), np.diag([-1.0, -1.0, 1.0]), atol=1e-15)


def test_fk_components_refuses_translations_of_another_joint_count() -> None:
    local = torch.tensor([[1.0, 0.0, 0.0, 0.0]] * 3, dtype=torch.float64).T[:, :, None]  # (4, 3, 1)
    with pytest.raises(ShapeError, match="translations have 2 joints"):
        forward_kinematics_components(local, 1, torch.zeros(3, 2, 1, dtype=torch.float64), None, [-1, 0, 1])


# -------------------------------------------------------------------------------------------- motion


def _fork(end_sites: dict | None = None) -> Skeleton:
    """Root ``hips`` with two children: ``a`` at (1, 0, 0) and ``b`` at (-1, 0, 0)."""
    return Skeleton(["hips", "a", "b"], [-1, 0, 0], [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
                    end_sites=end_sites or {})


def test_end_sites_come_in_joint_order_whatever_order_they_were_given() -> None:
    skel = _fork({2: [0.0, 0.0, 5.0], 1: [0.0, 0.0, 7.0]})  # given b's first
    # rest, root at the origin: a (1, 0, 0) + (0, 0, 7); b (-1, 0, 0) + (0, 0, 5); joint order: a's, then b's
    np.testing.assert_allclose(skel.rest_positions(end_sites=True)[3:].numpy(), [[1.0, 0.0, 7.0], [-1.0, 0.0, 5.0]])
    motion = Motion.rest(skel, 2)
    assert motion.end_site_names() == ["a_end", "b_end"]
    np.testing.assert_allclose(motion.positions(end_sites=True)[:, 3:].numpy(),
                               [[[1.0, 0.0, 7.0], [-1.0, 0.0, 5.0]]] * 2)


def test_concatenated_motion_has_its_own_metadata() -> None:
    first = Motion.rest(_fork(), 2)
    first.metadata["source"] = "a.bvh"
    joined = Motion.concatenate([first, Motion.rest(_fork(), 3)])
    assert joined.metadata == {"source": "a.bvh"} and joined.num_frames == 5
    joined.metadata["source"] = "joined"
    assert first.metadata == {"source": "a.bvh"}


def test_motion_refuses_joint_translations_of_the_wrong_shape() -> None:
    rest = Motion.rest(_fork(), 2)
    with pytest.raises(ShapeError, match="joint_translations"):
        Motion(rest.skeleton, rest.rotations, rest.root_positions, 30.0, torch.zeros(2, 2, 3))


def test_normalized_rotations_are_unit_length() -> None:
    rest = Motion.rest(_fork(), 1)
    # 3 * (cos 30, sin 30 * z) and 0.5 * identity: unit length after, the same rotations
    rot = torch.tensor([[[3 * math.cos(math.pi / 6), 0.0, 0.0, 3 * math.sin(math.pi / 6)], [0.5, 0.0, 0.0, 0.0],
                         [1.0, 0.0, 0.0, 0.0]]], dtype=torch.float64)
    out = rest.copy(rotations=rot).normalized_rotations().rotations
    np.testing.assert_allclose(out[0, :2].numpy(), [[math.cos(math.pi / 6), 0.0, 0.0, math.sin(math.pi / 6)],
                                                    [1.0, 0.0, 0.0, 0.0]], atol=1e-15)


# ------------------------------------------------------------------------------------------- skeleton


@pytest.mark.parametrize("parents", [[0, 0], [1, 0]])
def test_the_root_must_have_parent_minus_one(parents: list[int]) -> None:
    with pytest.raises(SkeletonError, match="root"):
        Skeleton(["a", "b"], parents, torch.zeros(2, 3))


def test_an_end_site_of_six_values_is_a_skeleton_error() -> None:
    with pytest.raises(SkeletonError, match="3 values"):
        Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3), end_sites={1: [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_adjacency_with_self_loops_adds_the_identity() -> None:
    chain = Skeleton(["a", "b", "c"], [-1, 0, 1], torch.zeros(3, 3))
    expected = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    np.testing.assert_array_equal(chain.adjacency(self_loops=True).numpy(), expected)
    # normalised: A_ij / sqrt(d_i d_j) with degrees 2, 3, 2 (self loops counted)
    d = np.array([2.0, 3.0, 2.0])
    np.testing.assert_allclose(chain.adjacency(self_loops=True, normalize=True).numpy(),
                               expected / np.sqrt(d[:, None] * d[None, :]), rtol=1e-6)


def test_leaves_of_a_chain_are_its_last_joint() -> None:
    assert Skeleton(["a", "b", "c"], [-1, 0, 1], torch.zeros(3, 3)).leaves == [2]


def test_skeletons_with_other_channels_are_not_equal() -> None:
    one = Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3))
    other = Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3),
                     channels=[("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"),
                               ("Xrotation", "Yrotation", "Zrotation")])
    assert one == Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3))
    assert one != other


def test_rest_up_axis_of_a_head_down_skeleton_is_the_axis_of_the_largest_gap() -> None:
    # foot at (0, 0, 5), head at (0, 1, -5): head minus foot (0, 1, -10), largest along z (below the feet)
    skel = Skeleton(["hips", "foot", "head"], [-1, 0, 0], [[0.0, 0.0, 0.0], [0.0, 0.0, 5.0], [0.0, 1.0, -5.0]])
    assert skel.up_axis() == 2


def test_up_sign_is_plus_where_heads_and_feet_are_level() -> None:
    positions = np.zeros((2, 2, 3))  # head and foot at the same height: not below, so +1
    assert up_sign(["head", "foot"], positions, 1) == 1.0
    positions[:, 0, 1] = -1.0  # the head below: -1
    assert up_sign(["head", "foot"], positions, 1) == -1.0


# ---------------------------------------------------------------------------------------- joint names


def test_a_trailing_one_letter_marker_counts_only_with_its_mirrored_joint() -> None:
    assert side_marker("ThighL") is None  # could be part of a word: no pair, no side
    marker = side_marker("ThighL", ["ThighL", "ThighR"])
    assert marker is not None and (marker.side, marker.start, marker.end) == ("l", 5, 6)


def test_strip_prefix_removes_stacked_prefixes() -> None:
    # "Bip01_" then "joint_": both exporter prefixes go
    assert strip_prefix("Bip01_joint_Hips") == "Hips"
    assert strip_prefix("mixamorig:CC_Base_Hip") == "Hip"


# ------------------------------------------------------------------------------------------ batch two


def test_quat_continuous_refuses_the_component_axis_and_a_single_quaternion() -> None:
    q = np.tile([1.0, 0.0, 0.0, 0.0], (2, 4, 1))  # (B=2, F=4, 4): the last axis holds components, not frames
    with pytest.raises(ShapeError, match="frame axis"):
        quat_continuous(q, dim=-1)
    with pytest.raises(ShapeError, match="F, ..., 4"):
        quat_continuous(np.array([1.0, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize("dim", [-1, -2, 2])
def test_mean_rotations_refuses_a_matrix_axis(dim: int) -> None:
    with pytest.raises(ShapeError, match="leading dim"):
        mean_rotations(torch.eye(3, dtype=torch.float64).expand(4, 3, 3), dim=dim)


def test_rot6d_second_column_within_nine_eps_of_the_first_takes_the_y_axis() -> None:
    # a1 = x, a2 = x + 8.9 eps z: the part of a2 orthogonal to b1 is 8.9 eps of |a2| (under the documented
    # 9 eps), so b2 is the fallback y axis and the matrix is the identity (columns x, y, x cross y = z)
    eps = float(np.finfo(np.float64).eps)
    out = rot6d_to_matrix(np.array([1.0, 0.0, 0.0, 1.0, 0.0, 8.9 * eps]))
    np.testing.assert_array_equal(out, np.eye(3))


@pytest.mark.parametrize("order", ["XYW", 3, "XY"])
def test_extrinsic_euler_functions_refuse_a_bad_order_as_intrinsic_ones_do(order: object) -> None:
    with pytest.raises(EulerOrderError):
        euler_to_quat(np.zeros(3), order, extrinsic=True)  # type: ignore[arg-type]


def _translated_motion(shift: float) -> Motion:
    """A 2-frame motion of the fork whose joint ``a`` is animated to (shift, 0, 0) instead of its offset."""
    rest = Motion.rest(_fork(), 2)
    jt = rest.skeleton.offsets.expand(2, 3, 3).clone()
    jt[:, 1] = torch.tensor([shift, 0.0, 0.0])
    return rest.copy(joint_translations=jt)


def test_local_translations_is_a_copy_that_leaves_the_motions_translations_alone() -> None:
    motion = _translated_motion(4.0)
    motion.root_positions = torch.tensor([[0.0, 9.0, 0.0]] * 2, dtype=torch.float64)
    before = motion.joint_translations.clone()
    local = motion.local_translations()
    # row 0 is the root position (0, 9, 0); row 1 the animated (4, 0, 0); the motion's own tensor unchanged
    np.testing.assert_array_equal(local[:, 0].numpy(), [[0.0, 9.0, 0.0]] * 2)
    np.testing.assert_array_equal(local[:, 1].numpy(), [[4.0, 0.0, 0.0]] * 2)
    assert torch.equal(motion.joint_translations, before)
    local[:, 2] = 100.0
    assert torch.equal(motion.joint_translations, before)


def test_concatenate_keeps_animated_joint_translations() -> None:
    joined = Motion.concatenate([_translated_motion(4.0), _translated_motion(6.0)])
    # joint a (root at the rest offset, the origin, no rotation) at (4, 0, 0) twice, then (6, 0, 0) twice
    np.testing.assert_array_equal(joined.positions()[:, 1].numpy(), [[4.0, 0.0, 0.0]] * 2 + [[6.0, 0.0, 0.0]] * 2)


def test_concatenate_of_no_motions_is_a_shape_error() -> None:
    with pytest.raises(ShapeError, match="at least one"):
        Motion.concatenate([])


def test_an_empty_motion_measures_its_rest_pose_with_its_end_sites() -> None:
    # rest: joints at y = 0 (hips, a, b); a's End Site 7 above a: extent along y is 7
    empty = Motion.rest(_fork({1: [0.0, 7.0, 0.0]}), 0)
    assert empty.height_along("y") == 7.0


def test_euler_rotations_read_columns_that_are_not_in_a_row() -> None:
    rng = np.random.default_rng(5)
    values = torch.from_numpy(rng.uniform(-170, 170, size=(4, 6)))
    cols = [[5, 3, 4], [0, 2, 1]]  # joint 0 reads columns 5, 3, 4; joint 1 columns 0, 2, 1
    q = EulerRotations(values, 2, [("ZXY", [0, 1], cols)]).quaternions().numpy()
    for j, c in enumerate(cols):
        want = _wxyz(Rotation.from_euler("ZXY", values[:, c].numpy(), degrees=True))
        np.testing.assert_allclose(np.abs((q[:, j] * want).sum(-1)), 1.0, atol=1e-12)


def test_euler_rotations_need_three_columns_per_joint() -> None:
    with pytest.raises(ShapeError, match="3 columns"):
        EulerRotations(torch.zeros(2, 5, dtype=torch.float64), 2, [("ZXY", [0, 1], [[0, 1, 2], [3, 4]])])
    with pytest.raises(ShapeError, match="3 columns"):
        EulerRotations(torch.zeros(2, 5, dtype=torch.float64), 2, [("ZXY", [0, 1], [[0, 1, 2]])])


def test_skeleton_refuses_a_channel_list_per_joint_of_the_wrong_length() -> None:
    with pytest.raises(SkeletonError, match="channel lists"):
        Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3), channels=[("Zrotation", "Xrotation", "Yrotation")] * 3)


def test_skeleton_indices_refuse_the_joint_count_itself() -> None:
    skel = _fork()
    assert skel.indices([2, "a", 0]) == [2, 1, 0]
    with pytest.raises(SkeletonError, match="joint index 3"):
        skel.indices([3])


def test_channel_queries_read_lower_case_names_and_any_position_channel() -> None:
    skel = Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3),
                    channels=[("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"),
                              ("zrotation", "yrotation", "xrotation")])
    assert skel.rotation_order(0) == "ZXY" and skel.rotation_order(1) == "ZYX"
    assert skel.has_position_channels(0) and not skel.has_position_channels(1)


def test_stature_of_a_head_on_its_feet_is_none() -> None:
    # head and foot both at the root (zero bone lengths): no body size to read
    skel = Skeleton(["hips", "head", "foot"], [-1, 0, 0], torch.zeros(3, 3))
    assert skel.stature() is None


def test_strip_prefix_takes_the_name_after_the_last_namespace() -> None:
    assert strip_prefix("scene:mixamorig:LeftArm") == "LeftArm"


def test_a_y_up_body_standing_along_z_with_its_sides_along_y_is_z_up_even_when_it_travels_along_z() -> None:
    # rest Y-up (head 2 above the hips, feet 2 below); every frame the root turns x -> y, y -> z (so the body
    # stands along Z, its left and right apart along Y) and travels 20 along Z. Motion.up_axis: a Y-up rest whose
    # motion stands along Z is up along Z "when its left and right joints lie apart along Y", travel or not.
    names = ["Hips", "Spine", "Head", "LeftUpLeg", "LeftFoot", "RightUpLeg", "RightFoot"]
    offsets = [[0, 0, 0], [0, 1, 0], [0, 1, 0], [1, 0, 0], [0, -2, 0], [-1, 0, 0], [0, -2, 0]]
    skel = Skeleton(names, [-1, 0, 1, 0, 3, 0, 5], torch.tensor(offsets, dtype=torch.float64))
    assert skel.up_axis() == 1
    turn = _wxyz(Rotation.from_matrix([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    rot = torch.zeros(10, 7, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    rot[:, 0] = torch.from_numpy(turn)
    root = torch.zeros(10, 3, dtype=torch.float64)
    root[:, 2] = torch.linspace(0.0, 20.0, 10)
    assert Motion(skel, rot, root, 30.0).up_axis() == 2


def test_skeleton_dict_round_trip_keeps_channels_that_are_not_the_default() -> None:
    channels = [("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation"), ("Yrotation",)]
    skel = Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3), channels=channels)
    data = skel.to_dict()
    assert data["channels"] == [list(c) for c in channels]
    assert Skeleton.from_dict(data).channels == channels


def test_a_negative_step_plays_the_motion_backwards() -> None:
    motion = Motion.rest(_fork(), 4)
    motion.root_positions = torch.arange(12, dtype=torch.float64).reshape(4, 3)
    np.testing.assert_array_equal(motion[::-1].root_positions.numpy(), np.arange(12.0).reshape(4, 3)[::-1])
    np.testing.assert_array_equal(motion[::-2].root_positions[:, 0].numpy(), [9.0, 3.0])  # frames 3, 1


def test_motion_stores_float64_and_its_copy_shares_the_tensors() -> None:
    rest = Motion.rest(_fork(), 2)
    motion = Motion(rest.skeleton, rest.rotations.float(), rest.root_positions.float(), 30.0)
    assert motion.rotations.dtype == torch.float64 and motion.root_positions.dtype == torch.float64
    copy = motion.copy()  # documented: a shallow copy, tensors not cloned
    copy.rotations[0, 1, 0] = 0.0
    assert float(motion.rotations[0, 1, 0]) == 0.0


def test_forward_kinematics_broadcasts_one_pose_of_rotations_over_many_translations() -> None:
    # root turned 90 degrees about z (quaternion (cos 45, 0, 0, sin 45)), child offset (1, 0, 0) turns to (0, 1, 0);
    # three poses of the root position: the child is 1 along +y of each
    c = math.cos(math.pi / 4)
    rot = torch.tensor([[c, 0.0, 0.0, c], [1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)  # (J=2, 4), no pose dims
    roots = torch.tensor([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0], [0.0, 0.0, -2.0]], dtype=torch.float64)
    trans = torch.stack([roots, torch.tensor([[1.0, 0.0, 0.0]] * 3, dtype=torch.float64)], 1)  # (3, 2, 3)
    _, pos = forward_kinematics(rot, trans, [-1, 0])
    assert pos.shape == (3, 2, 3)
    np.testing.assert_allclose(pos[:, 1].numpy(), roots.numpy() + [0.0, 1.0, 0.0], atol=1e-15)
