"""Bone frames, their exact conversion to local rotations, and the classical IK baselines on real poses."""

from __future__ import annotations

import numpy as np
import torch

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import (
    matrix_geodesic,
    matrix_to_quat,
    quat_geodesic,
    quat_identity,
    quat_normalize,
    quat_to_matrix,
)
from skelanim.ik.classical import kabsch, optimize_ik, rotation_between, rotation_onto, swing_ik, swing_polynomial
from skelanim.ik.frames import primary_children, rest_bone_frames, world_to_local


def test_rest_frames_are_rotations_along_bones(bandai_rig):
    """Every column against the documented construction (NumPy): the primary bone's unit direction (a leaf's own
    incoming offset), the next longest child's direction not collinear with it made orthogonal to it (else the
    coordinate axis least parallel to it), their cross product."""
    frames = rest_bone_frames(bandai_rig.skeleton)
    eye = torch.eye(3, dtype=torch.float64)
    assert torch.allclose(frames.transpose(-1, -2) @ frames, eye.expand_as(frames), atol=1e-12)
    assert torch.allclose(torch.linalg.det(frames), torch.ones(len(frames), dtype=torch.float64))
    sk = bandai_rig.skeleton
    offsets = sk.offsets.numpy()
    unit = [o / np.linalg.norm(o) if np.linalg.norm(o) > 0 else o for o in offsets]
    second_child = 0
    for j, c in enumerate(primary_children(sk)):
        axis = unit[c] if c >= 0 else unit[j] if j > 0 else np.array([1.0, 0, 0])
        others = [k for k in sk.children(j) if k != c and np.linalg.norm(offsets[k]) > 0]
        others.sort(key=lambda k: (-np.linalg.norm(offsets[k]), k))  # children by length, as for the primary
        refs = [unit[k] for k in others if np.linalg.norm(np.cross(axis, unit[k])) > 0.1]
        ref = refs[0] if refs else np.eye(3)[np.argmin(np.abs(axis))]
        second_child += bool(refs)
        ref = ref - (ref @ axis) * axis
        ref = ref / np.linalg.norm(ref)
        want = np.stack([axis, ref, np.cross(axis, ref)], 1)
        np.testing.assert_allclose(frames[j].numpy(), want, atol=1e-12, err_msg=sk.names[j])
    assert second_child >= 2  # the hips and the chest branch: the second-child rule is exercised


def test_bone_frames_to_local_is_exact_on_ground_truth(bandai_rig, bandai_poses):
    q, world, pos = bandai_poses
    frames = bandai_rig.world_to_frames(world)
    local = bandai_rig.frames_to_local(frames)
    assert float(matrix_geodesic(local, quat_to_matrix(q)).max()) < 1e-7
    # ... and back through FK to the same positions
    _, pos2 = forward_kinematics(
        matrix_to_quat(local), bandai_rig.translations(pos[:, bandai_rig.ik_root]), bandai_rig.parents
    )
    assert float((pos2 - pos).norm(dim=-1).max()) < 1e-9 * bandai_rig.height
    assert torch.allclose(world_to_local(world, bandai_rig.parent_index, bandai_rig.has_parent), local, atol=1e-12)


def test_rotation_between_and_kabsch():
    u = torch.tensor([[1.0, 0, 0], [0, 1.0, 0], [0.3, -0.2, 0.9]], dtype=torch.float64)
    v = torch.tensor([[-1.0, 0, 0], [0, 1.0, 0], [-0.5, 0.1, 0.2]], dtype=torch.float64)
    r = rotation_between(u, v)
    got = (r @ u[..., None])[..., 0]
    assert torch.allclose(got / got.norm(dim=-1, keepdim=True), v / v.norm(dim=-1, keepdim=True), atol=1e-12)
    true = quat_to_matrix(torch.tensor([0.8, 0.1, -0.5, 0.3], dtype=torch.float64))
    src = torch.randn(5, 3, dtype=torch.float64)
    assert torch.allclose(kabsch(src, src @ true.T), true, atol=1e-10)


def test_rotation_between_and_kabsch_take_and_return_numpy():
    """An API review: both crashed on NumPy arrays (``linalg_svd`` on an ndarray; ``ndarray.norm``), against the
    convention that NumPy is accepted and returned at the edges. NumPy in gives NumPy out, the tensor answers' values,
    and the answers are checked on a closed form: ``R u`` points along ``v``; the Kabsch rotation of points turned by
    a known rotation is that rotation."""
    rng = np.random.default_rng(3)
    u, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    r = rotation_between(u, v)
    assert isinstance(r, np.ndarray) and r.shape == (4, 3, 3)
    turned = np.einsum("kij,kj->ki", r, u)
    np.testing.assert_allclose(turned / np.linalg.norm(turned, axis=-1, keepdims=True),
                               v / np.linalg.norm(v, axis=-1, keepdims=True), atol=1e-12)  # fmt: skip
    true = quat_to_matrix(torch.tensor([0.8, 0.1, -0.5, 0.3], dtype=torch.float64)).numpy()
    src = rng.normal(size=(6, 3))
    got = kabsch(src, src @ true.T)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, true, atol=1e-10)
    np.testing.assert_array_equal(got, kabsch(torch.from_numpy(src), torch.from_numpy(src @ true.T)).numpy())


def test_swing_polynomial_is_rodrigues():
    """The chain's polynomial form of the swing equals Rodrigues' formula (``rotation_between``) and
    scipy's minimal rotation (``align_vectors`` of one pair), and is the identity for a zero target."""
    from scipy.spatial.transform import Rotation

    gen = torch.Generator().manual_seed(3)
    u = torch.randn(5, 3, generator=gen, dtype=torch.float64)
    v = torch.randn(40, 5, 3, generator=gen, dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True)
    linear, constant = swing_polynomial(u)
    got = rotation_onto(v[:, :, None, :], linear, constant)  # (40, 5, 3, 3)
    assert torch.allclose(got, rotation_between(u, v, half_turn=False), atol=1e-12)
    scipy = Rotation.align_vectors(v[7, 2][None].numpy(), u[2][None].numpy())[0].as_matrix()
    assert np.allclose(got[7, 2].numpy(), scipy, atol=1e-9)
    eye = rotation_onto(torch.zeros(1, 5, 1, 3, dtype=torch.float64), linear, constant)
    assert torch.equal(eye, torch.eye(3, dtype=torch.float64).expand(1, 5, 3, 3))


def test_swing_ik_reproduces_real_positions_exactly(bandai_rig, bandai_poses):
    q, _, pos = bandai_poses
    for init in (quat_identity((bandai_rig.num_joints,)), q[0]):
        quats, trans = swing_ik(pos, bandai_rig, init)
        _, got = forward_kinematics(quats, trans, bandai_rig.parents)
        err = (got - pos)[:, bandai_rig.evaluated].norm(dim=-1).max()
        assert float(err) < 1e-6 * bandai_rig.height


def test_swing_ik_keeps_the_init_twist(bandai_rig, bandai_poses):
    q, _, pos = bandai_poses
    quats, _ = swing_ik(pos, bandai_rig, q)  # started from the truth it must return the truth
    assert float(quat_geodesic(quats, q)[:, bandai_rig.evaluated].max()) < 1e-5


def test_optimize_ik_converges_from_a_near_pose(bandai_rig, bandai_poses):
    q, _, pos = bandai_poses
    gen = torch.Generator().manual_seed(0)
    start = q[:8] + 0.05 * torch.randn(q[:8].shape, generator=gen, dtype=torch.float64)
    quats, trans = optimize_ik(pos[:8], bandai_rig, start, iterations=30)
    _, got = forward_kinematics(quats, trans, bandai_rig.parents)
    assert float((got - pos[:8]).norm(dim=-1).mean()) < 1e-3 * bandai_rig.height
    _, before = forward_kinematics(start, trans, bandai_rig.parents)
    assert float((before - pos[:8]).norm(dim=-1).mean()) > 1e-2 * bandai_rig.height


def test_optimize_ik_in_blocks_is_the_same_fit(bandai_rig, bandai_poses, monkeypatch):
    """Long inputs are fitted in blocks of frames (10,000 frames took 2 GB at once, 60,000 11 GB): each frame is its
    own LM, so blocks of 7 give the same bits as one block, with a per-frame init and prior too."""
    from skelanim.ik import classical

    pos = bandai_poses[2][:20]
    init = quat_identity((20, bandai_rig.num_joints), dtype=torch.float64)
    prior = torch.linspace(1e-4, 1e-2, 20, dtype=torch.float64)
    whole = optimize_ik(pos, bandai_rig, init, iterations=4, prior=prior)
    monkeypatch.setattr(classical, "LM_CHUNK", 7)
    blocks = optimize_ik(pos, bandai_rig, init, iterations=4, prior=prior)
    assert torch.equal(whole[0], blocks[0]) and torch.equal(whole[1], blocks[1])


def test_swing_ik_on_some_joints_solves_those_and_keeps_the_others(bandai_rig, bandai_poses):
    """``joints``: the listed joints are solved as the full solve solves them; every other joint keeps its initial
    local rotation. The init is the truth with both knees bent away; solving the left leg only puts the left foot
    back where it was observed and leaves the right knee bent (the full solve mends both)."""
    q, _, pos = bandai_poses
    names = bandai_rig.skeleton.names
    left = [names.index(n) for n in ("UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L")]
    right_knee, right_foot = names.index("LowerLeg_R"), names.index("Foot_R")
    bent = q.clone()
    bent[:, [left[1], right_knee]] = quat_normalize(q.new_tensor([0.9, 0.3, -0.2, 0.1]))
    full, trans = swing_ik(pos, bandai_rig, bent)
    some, _ = swing_ik(pos, bandai_rig, bent, joints=left)
    others = [j for j in range(bandai_rig.num_joints) if j not in left]
    assert float(quat_geodesic(some[:, others], bent[:, others]).max()) < 1e-7  # kept (to rounding)
    assert float(quat_geodesic(some, full)[:, left].max()) < 1e-7
    _, got = forward_kinematics(some, trans, bandai_rig.parents)
    _, mended = forward_kinematics(full, trans, bandai_rig.parents)
    _, before = forward_kinematics(bent, trans, bandai_rig.parents)
    off = (before - pos).norm(dim=-1)
    assert float(off[:, [left[2], right_foot]].min()) > 0.05 * bandai_rig.height  # both feet were off
    assert float((got - pos)[:, left].norm(dim=-1).max()) < 1e-6 * bandai_rig.height
    torch.testing.assert_close(got[:, right_foot], before[:, right_foot], atol=1e-9 * bandai_rig.height, rtol=0)
    assert float((mended - pos)[:, bandai_rig.evaluated].norm(dim=-1).max()) < 1e-6 * bandai_rig.height


def test_optimize_ik_stops_once_its_steps_turn_nothing(bandai_rig, bandai_poses, monkeypatch):
    """``step_tol``: the fit stops at the first iteration whose proposed step turns no joint by more than it; what it
    returns is then the fit of that many fixed iterations, bit for bit, and within a thousandth of a degree of 100
    fixed iterations' answer, in far fewer. Without it every one of the 100 is run."""
    from skelanim.ik import classical

    q, _, pos = bandai_poses
    gen = torch.Generator().manual_seed(0)
    start = quat_normalize(q[:1] + 0.05 * torch.randn(q[:1].shape, generator=gen, dtype=torch.float64))
    calls = []
    counted = classical.forward_kinematics

    def counting(*args, **kwargs):
        calls.append(1)
        return counted(*args, **kwargs)

    monkeypatch.setattr(classical, "forward_kinematics", counting)
    converged, _ = optimize_ik(pos[:1], bandai_rig, start, iterations=100, step_tol=classical.CONVERGED_STEP)
    done = len(calls) - 1  # one evaluation before the loop, one per completed iteration
    calls.clear()
    full, _ = optimize_ik(pos[:1], bandai_rig, start, iterations=100)
    assert len(calls) == 101 and 3 <= done < 50
    assert torch.equal(converged, optimize_ik(pos[:1], bandai_rig, start, iterations=done)[0])
    gap = quat_geodesic(converged, full)[:, bandai_rig.evaluated].rad2deg()
    assert float(gap.max()) < 1e-3
