"""Forward kinematics (skelanim.core.kinematics) against an independent reference: scipy rotations composed
joint by joint, parents first, with the convention R_world[j] = R_world[p] R_local[j] and
p_world[j] = p_world[p] + R_world[p] t[j] written out here from the README."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from skelanim.core import kinematics
from skelanim.core.kinematics import forward_kinematics
from skelanim.errors import ShapeError


def _random_tree(rng: np.random.Generator, n_joints: int, roots: int = 1) -> list[int]:
    return [-1] * roots + [int(rng.integers(0, j)) for j in range(roots, n_joints)]


def _reference(q: np.ndarray, t: np.ndarray, parents: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(N, J, 4)`` quaternions (any length; zero = identity), ``(N, J, 3)`` translations."""
    n, n_joints = q.shape[:2]
    norms = np.linalg.norm(q, axis=-1, keepdims=True)
    unit = np.where(norms > 1e-300, q / np.where(norms > 1e-300, norms, 1), [1.0, 0, 0, 0])
    local = Rotation.from_quat(np.roll(unit.reshape(-1, 4), -1, axis=-1)).as_matrix().reshape(n, n_joints, 3, 3)
    rot = np.zeros((n, n_joints, 3, 3))
    pos = np.zeros((n, n_joints, 3))
    for j, p in enumerate(parents):
        if p < 0:
            rot[:, j], pos[:, j] = local[:, j], t[:, j]
        else:
            rot[:, j] = rot[:, p] @ local[:, j]
            pos[:, j] = pos[:, p] + (rot[:, p] @ t[:, j, :, None])[..., 0]
    return rot, pos


@pytest.mark.parametrize("n_joints, roots, frames", [(1, 1, 3), (7, 1, 5), (31, 1, 40), (12, 3, 9), (40, 2, 1)])
def test_matches_scipy_reference(n_joints: int, roots: int, frames: int) -> None:
    rng = np.random.default_rng(n_joints * 100 + frames)
    parents = _random_tree(rng, n_joints, roots)
    q = rng.normal(size=(frames, n_joints, 4)) * rng.uniform(0.1, 10, size=(frames, n_joints, 1))  # not unit
    q[0, -1] = 0.0  # zero quaternion: identity
    t = rng.normal(size=(frames, n_joints, 3)) * 10
    rot, pos = forward_kinematics(torch.from_numpy(q), torch.from_numpy(t), parents)
    ref_rot, ref_pos = _reference(q, t, parents)
    np.testing.assert_allclose(rot.numpy(), ref_rot, atol=1e-12)
    np.testing.assert_allclose(pos.numpy(), ref_pos, atol=1e-10)


def test_leading_dims_and_broadcast_offsets() -> None:
    rng = np.random.default_rng(1)
    parents = _random_tree(rng, 9)
    q = rng.normal(size=(2, 3, 4, 9, 4))
    offsets = rng.normal(size=(9, 3))
    rot, pos = forward_kinematics(torch.from_numpy(q), torch.from_numpy(offsets), torch.tensor(parents))
    assert rot.shape == (2, 3, 4, 9, 3, 3) and pos.shape == (2, 3, 4, 9, 3)
    ref_rot, ref_pos = _reference(q.reshape(-1, 9, 4), np.broadcast_to(offsets, (24, 9, 3)), parents)
    np.testing.assert_allclose(rot.reshape(-1, 9, 3, 3).numpy(), ref_rot, atol=1e-12)
    np.testing.assert_allclose(pos.reshape(-1, 9, 3).numpy(), ref_pos, atol=1e-12)
    empty_rot, empty_pos = forward_kinematics(torch.zeros(0, 9, 4), torch.from_numpy(offsets), parents)
    assert empty_rot.shape == (0, 9, 3, 3) and empty_pos.shape == (0, 9, 3)


def test_blocks_of_frames_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    parents = _random_tree(rng, 13)
    q = torch.from_numpy(rng.normal(size=(101, 13, 4)))
    t = torch.from_numpy(rng.normal(size=(101, 13, 3)))
    whole = forward_kinematics(q, t, parents)
    monkeypatch.setattr(kinematics, "_BLOCK", 13 * 7)  # 15 blocks, the last one short
    monkeypatch.setattr(kinematics, "_MIN_POSES", 1)
    blocks = forward_kinematics(q, t, parents)
    assert torch.equal(whole[0], blocks[0]) and torch.equal(whole[1], blocks[1])


def test_gradients_are_exact_and_finite() -> None:
    rng = np.random.default_rng(3)
    parents = _random_tree(rng, 6)
    q = torch.from_numpy(rng.normal(size=(2, 6, 4))).requires_grad_()
    t = torch.from_numpy(rng.normal(size=(2, 6, 3))).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: forward_kinematics(a, b, parents), (q, t))
    zero = torch.zeros(1, 6, 4, dtype=torch.float64, requires_grad=True)  # all identity (zero quaternions)
    rot, pos = forward_kinematics(zero, t[:1].detach(), parents)
    (rot.sum() + pos.sum()).backward()
    assert zero.grad is not None and torch.isfinite(zero.grad).all()


def test_bad_trees_are_rejected() -> None:
    q, t = torch.zeros(2, 3, 4), torch.zeros(2, 3, 3)
    with pytest.raises(ShapeError, match="before their children"):  # the library's error, still a ValueError
        forward_kinematics(q, t, [-1, 2, 0])
    with pytest.raises(ValueError, match="3 joints, parents 2"):
        forward_kinematics(q, t, [-1, 0])


def test_outputs_are_contiguous(monkeypatch: pytest.MonkeyPatch) -> None:
    q, t = torch.randn(20, 5, 4, dtype=torch.float64), torch.randn(20, 5, 3, dtype=torch.float64)
    for block in (1000, 5 * 3):
        monkeypatch.setattr(kinematics, "_BLOCK", block)
        monkeypatch.setattr(kinematics, "_MIN_POSES", 1)
        rot, pos = forward_kinematics(q, t, [-1, 0, 1, 0, 3])
        assert rot.is_contiguous() and pos.is_contiguous()


def test_numpy_in_numpy_out_and_shape_errors():
    """numpy at the edges (as every rotation function), integer quaternions as floats, bad shapes refused by
    name instead of a torch error."""
    from skelanim.core.kinematics import forward_kinematics, forward_kinematics_positions
    from skelanim.errors import ShapeError

    rot = np.tile([1.0, 0.0, 0.0, 0.0], (5, 2, 1))
    rot[:, 1] = [np.cos(0.3), 0.0, np.sin(0.3), 0.0]
    trans = np.array([[0.0, 1.0, 0.0], [0.5, 0.0, 0.0]])
    world_r, world_p = forward_kinematics(rot, trans, [-1, 0])
    assert isinstance(world_r, np.ndarray) and isinstance(world_p, np.ndarray) and world_p.shape == (5, 2, 3)
    expected = forward_kinematics(torch.from_numpy(rot), torch.from_numpy(trans), [-1, 0])[1]
    assert np.allclose(world_p, expected.numpy()) and np.allclose(forward_kinematics_positions(rot, trans, [-1, 0]), world_p)
    ints = forward_kinematics_positions(torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0]]), torch.from_numpy(trans), [-1, 0])
    assert torch.allclose(ints, torch.tensor([[0.0, 1.0, 0.0], [0.5, 1.0, 0.0]], dtype=ints.dtype))
    for bad_rot, bad_trans in ((np.zeros((5, 2, 3)), trans), (rot, np.zeros((3, 3))), (rot[:, :1], np.zeros((4, 2, 3)))):
        with pytest.raises(ShapeError):
            forward_kinematics(bad_rot, bad_trans, [-1, 0])


def test_selected_joints_broadcast_like_the_whole_tree_and_stay_on_the_input_device():
    """forward_kinematics_joints promises forward_kinematics's result at the joints: rotations (J, 4) against
    translations (F, J, 3) broadcast, no joints gives empty results, and the tensors it builds follow the input's
    device (checked on the meta device, which has no data: a CPU-built index would fail there)."""
    from skelanim.core.kinematics import forward_kinematics_joints

    g = torch.Generator().manual_seed(0)
    rot = torch.randn(3, 4, generator=g, dtype=torch.float64)
    trans = torch.randn(5, 3, 3, generator=g, dtype=torch.float64)
    parents = [-1, 0, 1]
    world_r, world_p = forward_kinematics_joints(rot, trans, parents, [2, 0])
    full_r, full_p = forward_kinematics(rot.expand(5, 3, 4), trans, parents)
    assert world_p.shape == (5, 2, 3) and torch.allclose(world_p, full_p[:, [2, 0]])
    assert torch.allclose(world_r, full_r[:, [2, 0]])
    empty_r, empty_p = forward_kinematics_joints(rot, trans, parents, [])
    assert empty_r.shape == (5, 0, 3, 3) and empty_p.shape == (5, 0, 3)
    _, meta_p = forward_kinematics_joints(torch.empty(5, 3, 3, 3, device="meta"), torch.empty(5, 3, 3, device="meta"),
                                          parents, [2])  # fmt: skip
    assert meta_p.device.type == "meta" and meta_p.shape == (5, 1, 3)


def test_forward_kinematics_joints_takes_and_gives_numpy_like_forward_kinematics():
    import numpy as np

    from skelanim.core.kinematics import forward_kinematics, forward_kinematics_joints

    rng = np.random.default_rng(0)
    quats = rng.normal(size=(4, 5, 4))
    trans = rng.normal(size=(4, 5, 3))
    parents = [-1, 0, 1, 1, 3]
    world_r, world_p = forward_kinematics_joints(quats, trans, parents, [4, 2])
    _, full_p = forward_kinematics(quats, trans, parents)
    assert isinstance(world_p, np.ndarray) and isinstance(world_r, np.ndarray)
    assert np.allclose(world_p, full_p[:, [4, 2]], atol=1e-12)


def test_selected_joint_fk_checks_its_parents_as_full_fk_does() -> None:
    """Cyclic parents hung ``forward_kinematics_joints`` (its path to the root never ended, memory growing), a
    parents list one short was read, and a joint out of range was an IndexError; each is a clear error now."""
    from skelanim.errors import ShapeError

    rot = torch.zeros(3, 4, dtype=torch.float64)
    rot[:, 0] = 1.0
    trans = torch.ones(3, 3, dtype=torch.float64)
    with pytest.raises(ShapeError, match="parents must come before their children"):
        kinematics.forward_kinematics_joints(rot, trans, [-1, 2, 1], [2])
    with pytest.raises(ShapeError, match="parents 2"):
        kinematics.forward_kinematics_joints(rot, trans, [-1, 0], [1])
    with pytest.raises(ShapeError, match="must lie in 0 .. 2"):
        kinematics.forward_kinematics_joints(rot, trans, [-1, 0, 1], [3])
    with pytest.raises(ShapeError, match="joint 1 has parent -5"):  # a core audit: it had been read as a root
        kinematics.forward_kinematics(rot, trans, [-1, -5, 1])
    _, pos = kinematics.forward_kinematics_joints(rot, trans, [-1, 0, 1], [2])
    assert torch.equal(pos[0], torch.tensor([3.0, 3.0, 3.0], dtype=torch.float64))  # a chain of unit steps


def test_mixed_dtypes_compute_in_the_wider_one() -> None:
    """float32 rotations with float64 offsets had given float32 positions (the offsets cast down), float64 with
    float32 float64: now both give the float64 result of the upcast inputs, as the rotation functions do."""
    from skelanim.core.kinematics import forward_kinematics_joints

    rng = np.random.default_rng(5)
    parents = _random_tree(rng, 12)
    q = torch.from_numpy(rng.normal(size=(6, 12, 4)))
    t = torch.from_numpy(rng.normal(size=(6, 12, 3)) * 10)
    for rot, off in ((q.float(), t), (q, t.float())):
        want = forward_kinematics(rot.double(), off.double(), parents)
        got = forward_kinematics(rot, off, parents)
        assert got[1].dtype == torch.float64 and all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
        want_j = forward_kinematics_joints(rot.double(), off.double(), parents, [3, 11])
        got_j = forward_kinematics_joints(rot, off, parents, [3, 11])
        assert got_j[1].dtype == torch.float64 and all(torch.equal(a, b) for a, b in zip(got_j, want_j, strict=True))


def test_end_sites_of_a_motion_on_a_device_are_computed_there(mocap_dir) -> None:
    """A core audit: ``end_site_positions`` left the skeleton's End Site offsets on the CPU beside device tensors."""
    from virtual_device import DEVICE, VirtualDevice  # tests/helpers

    import skelanim

    motion = skelanim.load(mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh")[:4]
    world_rot, world_pos = (t.float() for t in motion.world())
    joints = sorted(motion.skeleton.end_sites)
    offsets = torch.stack([motion.skeleton.end_sites[j] for j in joints])
    expected = kinematics.end_site_positions(world_rot, world_pos, joints, offsets)
    with VirtualDevice():
        on_device = kinematics.end_site_positions(world_rot.to(DEVICE), world_pos.to(DEVICE), joints, offsets)
        assert on_device.device == DEVICE
        assert torch.equal(on_device.cpu(), expected)


def test_a_deep_chain_is_not_cut_into_more_blocks_than_poses_need(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block runs every tree level once: a 400-joint chain in blocks of _BLOCK // J = 122 poses had paid
    its 400 levels' operations 17 times for 2,000 poses (0.76 s for an 800-joint chain, now 0.18 s); a deep tree's
    blocks hold at least _POSES_PER_LEVEL poses a level (up to _MIN_POSES), a shallow one's keep _BLOCK // J poses
    (bigger blocks had made a 100-joint rig 1.6-3 times slower), and the bits do not change."""
    rng = np.random.default_rng(4)
    calls = []
    levels = kinematics._fk_levels
    monkeypatch.setattr(kinematics, "_fk_levels", lambda *a, **k: calls.append(1) or levels(*a, **k))
    chain, star = [-1, *range(399)], [-1] + [0] * 399
    q = torch.from_numpy(rng.normal(size=(2000, 400, 4)))
    t = torch.from_numpy(rng.normal(size=(2000, 400, 3)) * 0.01)
    rot, pos = forward_kinematics(q, t, chain)
    assert len(calls) == -(-2000 // kinematics._MIN_POSES) == 2
    calls.clear()
    forward_kinematics(q, t, star)  # two levels: blocks of _BLOCK // 400 poses
    assert len(calls) == -(-2000 // (kinematics._BLOCK // 400)) == 17
    monkeypatch.setattr(kinematics, "_MIN_POSES", 1)
    calls.clear()
    small = forward_kinematics(q, t, chain)
    assert len(calls) == 17 and torch.equal(small[1], pos) and torch.equal(small[0], rot)
