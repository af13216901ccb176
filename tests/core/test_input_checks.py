"""Bad or unusual input at the core's edges: NumPy views torch cannot take as they are, shapes that do not fit or
do not broadcast, mixed dtypes, indices; each a result or a one-line error of the library's own types naming the
argument (torch's errors are multi-line and name "tensor a" or "q")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import skelanim.core.rotations as sr
from skelanim.core import kinematics
from skelanim.core._tensor import as_tensor
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.errors import ShapeError, SkeletonError

PARENTS = [-1, 0, 1, 2, 1, 4, 0, 6, 6]


def _skeleton() -> Skeleton:
    return Skeleton(["Hips", "Spine", "Head"], [-1, 0, 1], np.array([[0, 0, 0], [0, 1, 0], [0, 1, 0.0]]))


def _one_line(info: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(info.value)
    assert "\n" not in message, message
    return message


# ------------------------------------------------------------------------ NumPy views (negative strides, byte order)


def _odd_views(a: np.ndarray) -> dict[str, np.ndarray]:
    """``a``'s values (up to a reversal of axis 0, undone by :func:`_unflip`) in layouts torch.from_numpy refuses."""
    fields = np.zeros(a.shape, dtype=[("v", "f8"), ("pad", "f4")])  # a field view: stride 12, item size 8
    fields["v"] = a
    return {"[::-1]": a[::-1], "flip": np.flip(a, 0), ">f8": a.astype(">f8"), "field": fields["v"]}


def _unflip(name: str, out: Any) -> Any:
    return out[::-1] if name in ("[::-1]", "flip") else out


@pytest.mark.parametrize("view", ["[::-1]", "flip", ">f8", "field"])
def test_numpy_views_torch_refuses_are_taken_by_the_rotation_functions(rng: np.random.Generator, view: str) -> None:
    """Reversed views (``q[::-1]``, ``np.flip``), byte-swapped arrays (``astype(">f8")``) and strides that are no
    multiple of the item size were torch's multi-line ValueError in every function that takes NumPy."""
    q = rng.normal(size=(5, 4))
    got = sr.quat_to_matrix(_odd_views(q)[view])
    np.testing.assert_allclose(_unflip(view, got), sr.quat_to_matrix(q), atol=1e-15)
    angles = rng.normal(size=(5, 3))
    np.testing.assert_allclose(_unflip(view, sr.euler_to_quat(_odd_views(angles)[view], "ZXY")),
                               sr.euler_to_quat(angles, "ZXY"), atol=1e-15)  # fmt: skip
    local, offsets = np.tile([1.0, 0, 0, 0], (3, 1)), np.arange(9.0).reshape(3, 3)
    _, pos = kinematics.forward_kinematics(_odd_views(local)[view], _odd_views(offsets)[view], [-1, 0, 1])
    np.testing.assert_allclose(pos, np.cumsum(_unflip(view, offsets), 0))


def test_numpy_views_torch_refuses_are_taken_by_the_motion_constructor() -> None:
    rot, root = np.tile([1.0, 0, 0, 0], (4, 3, 1)), np.arange(12.0).reshape(4, 3)
    motion = Motion(_skeleton(), rot[::-1], root[::-1], 30, np.zeros((4, 3, 3)).astype(">f8"))
    np.testing.assert_array_equal(motion.root_positions.numpy(), root[::-1])
    assert motion.rotations.dtype == torch.float64 and motion.joint_translations is not None


def test_numpy_views_torch_refuses_are_taken_by_the_rotations_setter() -> None:
    motion = Motion.rest(_skeleton(), 4)
    rot = np.tile([1.0, 0, 0, 0], (4, 3, 1))
    rot[0, 1] = [0.0, 1.0, 0.0, 0.0]
    motion.rotations = rot.astype(">f8")[::-1]
    assert motion.rotations.dtype == torch.float64 and motion.rotations[3, 1, 1] == 1.0


def test_numpy_views_torch_refuses_are_taken_by_the_skeleton() -> None:
    offsets = np.array([[0, 0, 0], [0, 1, 0], [0, 2, 0.0]])
    flipped = Skeleton(["a", "b", "c"], [-1, 0, 1], offsets[::-1])
    np.testing.assert_array_equal(flipped.offsets.numpy(), offsets[::-1])
    ends = Skeleton(["a", "b", "c"], [-1, 0, 1], offsets, end_sites={2: np.array([0, 0, 1.0])[::-1]})
    np.testing.assert_array_equal(ends.end_sites[2].numpy(), [1.0, 0, 0])


def test_as_tensor_copies_only_what_torch_cannot_take(rng: np.random.Generator) -> None:
    """An ordinary array still shares its memory (no copy on the hot path); a reversed one is copied, not viewed."""
    a = rng.normal(size=(4, 3))
    t = as_tensor(a)
    t[0, 0] = 42.0
    assert a[0, 0] == 42.0
    b = a[::-1]
    u = as_tensor(b)
    u[0, 0] = -1.0
    assert b[0, 0] != -1.0 and u.is_contiguous()
    assert torch.equal(as_tensor(a.astype(">f4")), torch.from_numpy(a.astype(np.float32)))
    assert as_tensor(np.float64(2.5)[()]).shape == ()  # 0-d stays 0-d


# ------------------------------------------------------------------------------------------------------ Skeleton


SKELETON = (["Hips", "Spine", "Head", "Hand"], [-1, 0, 1, 1])
OFFSETS = torch.tensor([[0.0, 0, 0], [0, 10, 0], [0, 10, 0], [5, 0, 0]])


@pytest.mark.parametrize("bad", [OFFSETS.T, OFFSETS[None], OFFSETS.reshape(-1)[:9], OFFSETS.reshape(2, 6)],
                         ids=["transposed", "3-d", "flat-short", "2x6"])  # fmt: skip
def test_skeleton_offsets_must_be_j_by_3(bad: torch.Tensor) -> None:
    """A transposed (3, J) offsets array (3 J values) was reshaped to (J, 3) without a word, its rows scrambled."""
    tail = r" \(4 joints: \(4, 3\), or flat \(12,\)\)$"
    with pytest.raises(SkeletonError, match=r"offsets must be \(J, 3\), got " + _re_shape(bad) + tail) as info:
        Skeleton(*SKELETON, bad)
    _one_line(info)


def test_skeleton_offsets_j_by_3_or_flat_as_documented() -> None:
    assert torch.equal(Skeleton(*SKELETON, OFFSETS).offsets, OFFSETS.double())
    assert torch.equal(Skeleton(*SKELETON, OFFSETS.reshape(-1)).offsets, OFFSETS.double())  # flat: documented


@pytest.mark.parametrize("key", [5, 4, -1, 1.5, "x", None])
def test_end_site_keys_are_joint_indices(key: Any) -> None:
    """An End Site on a joint that does not exist was accepted, then failed in ``positions`` (IndexError)."""
    with pytest.raises(SkeletonError, match=r"end_sites key .* is not a joint index 0 \.\. 3") as info:
        Skeleton(*SKELETON, OFFSETS, end_sites={key: [0, 0, 1]})
    _one_line(info)


def test_end_site_offsets_are_three_values() -> None:
    """Two values were torch's RuntimeError "shape '[3]' is invalid for input of size 2"."""
    with pytest.raises(SkeletonError, match=r"end_sites\[1\] must be 3 values .* got shape \(2,\)") as info:
        Skeleton(*SKELETON, OFFSETS, end_sites={1: [0, 1]})
    _one_line(info)
    ok = Skeleton(*SKELETON, OFFSETS, end_sites={"3": [0, 0, 1], np.int64(2): np.array([[0, 1, 0]])})
    assert sorted(ok.end_sites) == [2, 3] and ok.end_sites[2].shape == (3,)  # JSON keys, (1, 3) values: as before


def _re_shape(x: torch.Tensor) -> str:
    return r"\(" + r",\s*".join(str(n) for n in x.shape) + (",?" if x.ndim == 1 else "") + r"\)"


# ---------------------------------------------------------------------------------------- dtypes and broadcasting


def test_matrix_geodesic_mixed_dtypes_give_the_wider_one() -> None:
    """The rotations module promises the wider dtype of mixed floating arguments; matrix_geodesic raised torch's
    "expected m1 and m2 to have the same dtype"."""
    r1 = sr.rotvec_to_matrix(torch.tensor([0.0, 0.0, 0.5], dtype=torch.float64))
    for a, b in ((torch.eye(3), r1), (r1, torch.eye(3)), (torch.eye(3), r1.numpy())):
        angle = sr.matrix_geodesic(a, b)
        assert isinstance(angle, torch.Tensor) and angle.dtype == torch.float64
        assert abs(float(angle) - 0.5) < 1e-12
    assert sr.matrix_geodesic(torch.eye(3, dtype=torch.float16), torch.eye(3)).dtype == torch.float32


NOT_BROADCASTING: list[tuple[str, Callable[[], Any], str]] = [
    ("quat_multiply", lambda: sr.quat_multiply(np.zeros((3, 4)), np.zeros((5, 4))), r"a \(3, 4\) and b \(5, 4\)"),
    ("quat_apply", lambda: sr.quat_apply(np.zeros((3, 4)), np.zeros((5, 3))), r"q \(3, 4\) and v \(5, 3\)"),
    ("quat_slerp q", lambda: sr.quat_slerp(np.zeros((3, 4)), np.zeros((5, 4)), 0.5),
     r"q0 \(3, 4\), q1 \(5, 4\) and t \(\)"),
    ("quat_slerp t", lambda: sr.quat_slerp(np.zeros((3, 4)), np.zeros((3, 4)), np.zeros(5)),
     r"q0 \(3, 4\), q1 \(3, 4\) and t \(5,\)"),
    ("quat_geodesic", lambda: sr.quat_geodesic(np.zeros((3, 4)), np.zeros((5, 4))), r"q0 \(3, 4\) and q1 \(5, 4\)"),
    ("axis_angle_to_quat", lambda: sr.axis_angle_to_quat(np.zeros((3, 3)), np.zeros(5)),
     r"axis \(3, 3\) and angle \(5,\)"),
    ("matrix_geodesic", lambda: sr.matrix_geodesic(np.zeros((2, 3, 3)), np.zeros((5, 3, 3))),
     r"r0 \(2, 3, 3\) and r1 \(5, 3, 3\)"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "call", "names"), NOT_BROADCASTING, ids=[c[0] for c in NOT_BROADCASTING])
def test_leading_dims_that_do_not_broadcast_name_both_arguments(name: str, call: Callable[[], Any],
                                                                names: str) -> None:  # fmt: skip
    """Torch's RuntimeError said "The size of tensor a (3) must match the size of tensor b (5)"."""
    with pytest.raises(ShapeError, match=names + " do not broadcast over their leading dims") as info:
        call()
    _one_line(info)


def test_broadcasting_arguments_still_broadcast(rng: np.random.Generator) -> None:
    q = sr.quat_normalize(rng.normal(size=(5, 1, 4)))
    assert sr.quat_multiply(q, rng.normal(size=(3, 4))).shape == (5, 3, 4)
    assert sr.quat_slerp(q, rng.normal(size=(3, 4)), rng.uniform(size=(5, 1))).shape == (5, 3, 4)
    assert sr.axis_angle_to_quat(rng.normal(size=(1, 3)), rng.normal(size=(7,))).shape == (7, 4)
    assert sr.matrix_geodesic(np.eye(3), sr.quat_to_matrix(q)).shape == (5, 1)


def test_two_quaternion_functions_name_the_bad_one() -> None:
    """quat_slerp(q0, q1_bad) and quat_geodesic said "q must have shape (..., 4)"."""
    for fn in (lambda a, b: sr.quat_slerp(a, b, 0.5), sr.quat_geodesic):
        with pytest.raises(ShapeError, match=r"^q1 must have shape \(\.\.\., 4\), got \(3,\)"):
            fn(np.zeros(4), np.zeros(3))
        with pytest.raises(ShapeError, match=r"^q0 must have shape \(\.\.\., 4\), got \(2, 5\)"):
            fn(np.zeros((2, 5)), np.zeros(4))


def test_forward_kinematics_joints_checks_translations_as_forward_kinematics_does() -> None:
    """Bad translations reached torch.cat (RuntimeError) or numpy's broadcast (a multi-line ValueError), and bad
    rotations were reported as ``q``."""
    q = np.tile([1.0, 0, 0, 0], (2, 5, 9, 1))
    for bad, match in (
        (np.zeros((8, 3)), r"rotations \(2, 5, 9, 4\) and translations \(8, 3\) do not broadcast"),
        (np.zeros((3, 5, 9, 3)), r"rotations \(2, 5, 9, 4\) and translations \(3, 5, 9, 3\) do not broadcast"),
        (np.zeros((9, 4)), r"needs rotations .* and translations \(\.\.\., J, 3\), got \(2, 5, 9, 4\) and \(9, 4\)"),
        (np.zeros(3), r"got \(2, 5, 9, 4\) and \(3,\)"),
    ):
        for fk in (kinematics.forward_kinematics, lambda r, t, p: kinematics.forward_kinematics_joints(r, t, p, [0])):
            with pytest.raises(ShapeError, match=match) as info:
                fk(q, bad, PARENTS)
            _one_line(info)
    with pytest.raises(ShapeError, match=r"needs rotations \(\.\.\., J, 4\) or \(\.\.\., J, 3, 3\)") as info:
        kinematics.forward_kinematics_joints(np.zeros((9, 5)), np.zeros((9, 3)), PARENTS, [0])
    assert not _one_line(info).startswith("q ")
    with pytest.raises(ShapeError, match="rotations"):
        kinematics.forward_kinematics_joints(np.zeros(4), np.zeros((9, 3)), PARENTS, [0])
    # what broadcasts still does, as in forward_kinematics: one translation row for every pose and a (J, 3, 3) pose
    r, p = kinematics.forward_kinematics_joints(q, np.ones((1, 9, 3)), PARENTS, [3, 8])
    full_r, full_p = kinematics.forward_kinematics(q, np.ones((1, 9, 3)), PARENTS)
    np.testing.assert_allclose(p, full_p[..., [3, 8], :])
    np.testing.assert_allclose(r, full_r[..., [3, 8], :, :])
    _, p = kinematics.forward_kinematics_joints(np.broadcast_to(np.eye(3), (9, 3, 3)), np.ones((4, 9, 3)), PARENTS, [3])
    assert p.shape == (4, 1, 3)


# ------------------------------------------------------------------------------------------------------ the rest


@pytest.mark.parametrize("bad", [1.5, "a", None, [1.5], np.array([0.5]), torch.tensor([1.0]), ["a"],
                                 np.zeros((2, 2), int)], ids=repr)  # fmt: skip
def test_motion_frames_bad_index_is_one_line(bad: Any) -> None:
    """motion[1.5] and motion["a"] were torch's errors (IndexError, TypeError "new(): invalid data type 'str'")."""
    motion = Motion.rest(_skeleton(), 4)
    with pytest.raises(ShapeError, match="frames are selected by an int, a slice or a sequence") as info:
        motion[bad]
    _one_line(info)


def test_motion_frames_accepted_indices() -> None:
    motion = Motion.rest(_skeleton(), 4)
    for good, frames in ((1, 1), (np.int64(-1), 1), (torch.tensor(2), 1), (slice(None, None, -1), 4), ([0, 3], 2),
                         ((1, 2), 2), ([], 0), (np.array([3, 1]), 2), (torch.tensor([0]), 1),
                         (np.array([True, False, True, False]), 2)):  # fmt: skip
        assert motion[good].num_frames == frames, good
    # a review: a range, ... and () had been taken before the check and were refused or read as no frame; a uint8
    # array or tensor is indices, not a mask (torch reads uint8 as one)
    picked = motion.copy(root_positions=torch.arange(12.0, dtype=torch.float64).reshape(4, 3))
    for good, rows in ((range(1, 4), [1, 2, 3]), (..., [0, 1, 2, 3]), ((), [0, 1, 2, 3]),
                       (np.array([1, 0, 1], np.uint8), [1, 0, 1]), (torch.tensor([3, 1], dtype=torch.uint8), [3, 1]),
                       (np.array([2, 2], np.uint16), [2, 2])):  # fmt: skip
        assert picked[good].root_positions[:, 0].tolist() == [3.0 * r for r in rows], good
    # a step beyond torch's index range (skelanim view --stride 2**63 - 1) had overflowed step x stride in torch
    for step in (5, 2**62, 2**63 - 1, 2**70):
        assert picked[1::step].root_positions[:, 0].tolist() == [3.0], step
        assert picked[::step].num_frames == 1


def test_assigned_rotations_get_the_constructors_shape_check() -> None:
    """``motion.rotations = np.zeros((9, 9))`` was stored and failed later in ``positions`` (torch's permute error)."""
    motion = Motion.rest(_skeleton(), 4)
    before = motion.rotations
    for bad in (np.zeros((9, 9)), np.zeros((4, 2, 4)), np.zeros((5, 3, 4))):
        with pytest.raises(ShapeError, match=r"rotations must be \(4, 3, 4\), got") as info:
            motion.rotations = bad
        _one_line(info)
        assert motion.rotations is before  # left as it was
    with pytest.raises(ShapeError, match=r"rotations must be \(F, 3, 4\), got \(4, 2, 4\)"):
        Motion(motion.skeleton, np.zeros((4, 2, 4)), np.zeros((4, 3)), 30)


def test_end_site_positions_takes_numpy_offsets() -> None:
    """It raised AttributeError: 'numpy.ndarray' object has no attribute 'to'."""
    world_r, world_p = torch.eye(3, dtype=torch.float64).expand(1, 2, 3, 3), torch.zeros(1, 2, 3, dtype=torch.float64)
    offsets = np.array([[0.0, 0.0, 1.0]])
    got = kinematics.end_site_positions(world_r, world_p, [1], offsets)
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, kinematics.end_site_positions(world_r, world_p, [1], torch.from_numpy(offsets)))
    out = kinematics.end_site_positions(world_r.numpy(), world_p.numpy(), [1], offsets)  # NumPy in, NumPy out
    assert isinstance(out, np.ndarray) and out.tolist() == [[[0.0, 0.0, 1.0]]]


def test_parents_out_of_order_are_the_librarys_value_error() -> None:
    """_tree_levels raised a plain ValueError; now a ShapeError, which still is one (callers catching ValueError)."""
    q = np.tile([1.0, 0, 0, 0], (3, 1))
    for parents, match in (([-1, 2, 0], "joint 1 has parent 2"), ([-1, -5, 1], "joint 1 has parent -5")):
        for fk in (kinematics.forward_kinematics, kinematics.forward_kinematics_positions,
                   lambda r, t, p: kinematics.forward_kinematics_joints(r, t, p, [0])):  # fmt: skip
            with pytest.raises(ShapeError, match=match) as info:
                fk(q, np.zeros((3, 3)), parents)
            assert isinstance(info.value, ValueError)
