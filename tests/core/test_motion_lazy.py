"""A Motion read from BVH keeps the Euler angles (skelanim.core.motion.EulerRotations) until its quaternions are
asked for. Checked here: positions, world rotations and quaternions against scipy built from the channel values
(the independent reference), for mixed Euler orders, joints with fewer than three or no rotation channels and
animated joint translations; that positions and slicing convert nothing; that the converted tensor is the
motion's own (in-place edits count, assignment replaces it); copies, concatenation, pickling; and the
positions-only and component-major forward kinematics against forward_kinematics."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch
from bvh_text import POS, ROT, make_bvh, random_values
from scipy.spatial.transform import Rotation

from skelanim.core import kinematics
from skelanim.core.kinematics import (
    forward_kinematics,
    forward_kinematics_components,
    forward_kinematics_positions,
)
from skelanim.core.motion import EulerRotations, Motion
from skelanim.errors import ShapeError
from skelanim.io import bvh

LAYOUTS = {
    "one order": [POS + ROT, ROT, ROT, ROT],
    "mixed": [POS + ["Yrotation", "Xrotation", "Zrotation"], ["Xrotation", "Yrotation", "Zrotation"],
              ["Zrotation", "Xrotation"], []],
    "translated joints": [POS + ROT, ROT + POS, ["Xposition", "Zrotation", "Yrotation", "Xrotation"], ["Yrotation"]],
    "proper Euler": [["Zrotation", "Xrotation", "Zrotation"] + POS, ROT, ["Xrotation"], ["Yrotation", "Zrotation",
                                                                                        "Yrotation"]],
}  # fmt: skip


def _reference(channels: list[list[str]], values: np.ndarray, motion: Motion) -> tuple[np.ndarray, np.ndarray]:
    """World rotation matrices ``(F, J, 3, 3)`` and positions ``(F, J, 3)`` from the channel values with scipy,
    joint by joint (intrinsic Euler = scipy's upper-case order; position channels replace offset components)."""
    offsets = motion.skeleton.offsets.numpy()
    parents = motion.skeleton.parents.tolist()
    n = values.shape[0]
    rot = np.zeros((n, len(parents), 3, 3))
    pos = np.zeros((n, len(parents), 3))
    col = 0
    for j, chans in enumerate(channels):
        t = np.repeat(offsets[None, j], n, 0)
        axes, angles = "", []
        for name in chans:
            if name.endswith("position"):
                t[:, "XYZ".index(name[0])] = values[:, col]
            else:
                axes += name[0]
                angles.append(values[:, col])
            col += 1
        local = Rotation.from_euler(axes, np.stack(angles, 1), degrees=True).as_matrix() if axes else np.eye(3)
        if parents[j] < 0:
            rot[:, j], pos[:, j] = local, t
        else:
            p = parents[j]
            rot[:, j] = rot[:, p] @ local
            pos[:, j] = pos[:, p] + (rot[:, p] @ t[..., None])[..., 0]
    return rot, pos


def _load(layout: str, frames: int = 7) -> tuple[Motion, list[list[str]], np.ndarray]:
    channels = LAYOUTS[layout]
    values = random_values(channels, frames=frames, seed=len(layout))
    return bvh.loads(make_bvh(channels, values)), channels, values


def _is_lazy(motion: Motion) -> bool:
    return isinstance(motion.__dict__["_rotations"], EulerRotations)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_positions_and_world_from_euler_match_scipy_without_converting(layout: str) -> None:
    motion, channels, values = _load(layout)
    ref_rot, ref_pos = _reference(channels, values, motion)
    assert _is_lazy(motion)
    np.testing.assert_allclose(motion.positions().numpy(), ref_pos, atol=1e-11)
    rot, pos = motion.world()
    np.testing.assert_allclose(rot.numpy(), ref_rot, atol=1e-13)
    np.testing.assert_allclose(pos.numpy(), ref_pos, atol=1e-11)
    with_ends = motion.positions(end_sites=True)
    assert with_ends.shape == (7, 4 + len(motion.skeleton.end_sites), 3)
    assert _is_lazy(motion), "positions/world must not convert the Euler angles"
    # the quaternions, converted on first access, are the same rotations, and FK on them the same positions
    quats = motion.rotations
    assert not _is_lazy(motion) and quats.shape == (7, 4, 4) and quats.dtype == torch.float64
    local = Rotation.from_quat(np.roll(quats.numpy().reshape(-1, 4), -1, -1)).as_matrix().reshape(7, 4, 3, 3)
    parents = motion.skeleton.parents
    expected_local = np.stack([ref_rot[:, j] if parents[j] < 0 else
                               np.swapaxes(ref_rot[:, parents[j]], -1, -2) @ ref_rot[:, j] for j in range(4)], 1)
    np.testing.assert_allclose(local, expected_local, atol=1e-13)
    np.testing.assert_allclose(motion.positions().numpy(), ref_pos, atol=1e-11)
    np.testing.assert_allclose(motion.positions(end_sites=True).numpy(), with_ends.numpy(), atol=1e-11)


def test_the_converted_tensor_is_the_motions_own() -> None:
    motion, _, _ = _load("one order")
    quats = motion.rotations
    assert motion.rotations is quats  # converted once, then stored
    before = motion.positions().clone()
    quats[:, 1] = torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64)  # in place: the motion changes
    after = motion.positions()
    assert torch.equal(after[:, :1], before[:, :1]) and not torch.allclose(after[:, 2], before[:, 2])
    motion.rotations = np.tile([1.0, 0.0, 0.0, 0.0], (7, 4, 1))  # assignment: any array, stored as float64
    assert motion.rotations.dtype == torch.float64
    rest = np.array([[0.0, 10.0, 0.0], [0.0, 20.0, 0.0], [5.0, -10.0, 0.0]])  # from the root, by hand
    relative = motion.positions()[:, 1:] - motion.positions()[:, :1]
    np.testing.assert_allclose(relative.numpy(), np.broadcast_to(rest, (7, 3, 3)), atol=1e-12)
    with pytest.raises(ShapeError):
        Motion(motion.skeleton, torch.zeros(7, 3, 4), motion.root_positions, 30.0)


def test_slicing_copies_and_concatenation_keep_the_values() -> None:
    motion, _, _ = _load("mixed", frames=9)
    eager, _, _ = _load("mixed", frames=9)
    eager.rotations  # noqa: B018  (converted)
    part = motion[2:6]
    assert _is_lazy(part) and part.num_frames == 4 and len(part) == 4
    np.testing.assert_allclose(part.positions().numpy(), eager[2:6].positions().numpy(), atol=1e-12)
    picked = motion[[0, 8, 3]]
    np.testing.assert_allclose(picked.rotations.numpy(), eager.rotations[[0, 8, 3]].numpy(), atol=0)
    assert torch.equal(motion.copy().rotations, eager.rotations)
    joined = Motion.concatenate([motion[:4], motion[4:]])
    assert torch.equal(joined.rotations, eager.rotations)
    for clone in (copy.deepcopy(motion), pickle.loads(pickle.dumps(motion))):
        assert torch.equal(clone.rotations, eager.rotations)
    assert motion.height == pytest.approx(eager.height, rel=1e-12) and motion.up_axis() == eager.up_axis()


def test_bvh_round_trip_from_unconverted_angles() -> None:
    motion, _, values = _load("translated joints")
    again = bvh.loads(bvh.dumps(motion))
    assert np.allclose(again.metadata["bvh_values"], values, atol=1e-6)


def test_the_angles_read_cannot_be_edited_behind_the_lazy_rotations() -> None:
    motion, _, _ = _load("one order")
    before = motion.positions().clone()
    with pytest.raises(ValueError, match="read-only"):
        motion.metadata["bvh_values"][:, 3] += 10.0  # shared with the unconverted rotations
    assert torch.equal(motion.positions(), before)


@pytest.mark.parametrize("frames, block", [(1, 32768), (50, 32768), (50, 4 * 7)])
def test_positions_only_and_component_major_fk_equal_forward_kinematics(
        frames: int, block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinematics, "_BLOCK", block)
    monkeypatch.setattr(kinematics, "_MIN_POSES", 1)
    rng = np.random.default_rng(frames)
    parents = [-1, 0, 1, 1, 0, 4, 5]
    q = torch.from_numpy(rng.normal(size=(frames, 7, 4)))
    q[0, 3] = 0.0  # zero quaternion: identity
    t = torch.from_numpy(rng.normal(size=(frames, 7, 3)))
    rot, pos = forward_kinematics(q, t, parents)
    np.testing.assert_allclose(forward_kinematics_positions(q, t, parents).numpy(), pos.numpy(), atol=1e-13)
    offsets = t[0].clone()  # (J, 3): the same translations for every pose
    _, pos_shared = forward_kinematics(q, offsets.expand(frames, 7, 3), parents)
    np.testing.assert_allclose(forward_kinematics_positions(q, offsets, parents).numpy(), pos_shared.numpy(),
                               atol=1e-13)
    root = t[:, :1].permute(2, 1, 0)  # (3, 1, F): the root rows of t, given apart
    comp_rot, comp_pos = forward_kinematics_components(q.permute(2, 1, 0), frames, t.permute(2, 1, 0) * 1, root,
                                                       parents)
    assert comp_rot is not None
    np.testing.assert_allclose(comp_rot.numpy(), rot.numpy(), atol=1e-13)
    np.testing.assert_allclose(comp_pos.numpy(), pos.numpy(), atol=1e-13)
    calls: list[tuple[int, int]] = []
    asked: list[list[int]] = []

    def local(start: int, stop: int, joints: torch.Tensor) -> torch.Tensor:
        calls.append((start, stop))
        asked.append(joints.tolist())
        return q[start:stop].permute(2, 1, 0).index_select(1, joints)

    none, by_blocks = forward_kinematics_components(local, frames, t.permute(2, 1, 0), None, parents, rotations=False)
    assert none is None and by_blocks.is_contiguous()
    np.testing.assert_allclose(by_blocks.numpy(), pos.numpy(), atol=1e-13)
    step = max(1, block // 7)
    assert calls == [(i, min(i + step, frames)) for i in range(0, frames, step)]
    assert all(joints == [0, 1, 4, 5] for joints in asked)  # only joints with children, level by level


@pytest.mark.parametrize("block", [32768, 5 * 2])  # one block; blocks of 2 poses (joined out of place)
def test_positions_only_gradients_are_exact(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kinematics, "_BLOCK", block)
    monkeypatch.setattr(kinematics, "_MIN_POSES", 1)
    rng = np.random.default_rng(5)
    parents = [-1, 0, 1, 0, 3]
    q = torch.from_numpy(rng.normal(size=(3, 5, 4))).requires_grad_()
    t = torch.from_numpy(rng.normal(size=(3, 5, 3))).requires_grad_()
    assert torch.autograd.gradcheck(lambda a, b: forward_kinematics_positions(a, b, parents), (q, t))
    assert torch.autograd.gradcheck(lambda a, b: forward_kinematics(a, b, parents), (q, t))
    motion, _, _ = _load("one order", frames=3)
    root = motion.root_positions.clone().requires_grad_()
    moved = motion.copy(root_positions=root)
    moved.positions().sum().backward()
    assert root.grad is not None and torch.allclose(root.grad, torch.full_like(root, 4.0))


def test_one_group_listing_every_joint_out_of_order_gives_each_joint_its_own_angles() -> None:
    """A single group with all J joints in another order than 0 .. J-1: the shortcut returned its quaternions in
    the group's order (joint 0 got joint 2's rotation, 0.62 off scipy); each joint now gets its own, as scipy
    ``from_euler`` and the lazy forward kinematics say."""
    rng = np.random.default_rng(4)
    values = torch.from_numpy(rng.uniform(-170, 170, size=(5, 9)))
    joints = [2, 0, 1]  # joint 2's angles in columns 0-2, joint 0's in 3-5, joint 1's in 6-8
    euler = EulerRotations(values, 3, [("ZXY", joints, [[0, 1, 2], [3, 4, 5], [6, 7, 8]])])
    q = euler.quaternions()
    for k, j in enumerate(joints):
        want = Rotation.from_euler("ZXY", values[:, 3 * k : 3 * k + 3].numpy(), degrees=True).as_quat()
        want = np.concatenate([want[:, 3:], want[:, :3]], 1)
        got = q[:, j].numpy()
        assert np.abs(np.abs((got * want).sum(1)) - 1.0).max() < 1e-12  # the same rotation (q or -q)


def test_a_copys_metadata_is_its_own():
    """A review of the API: ``m.copy().metadata[k] = v`` had changed ``m`` too (one dict shared)."""
    motion, _, _ = _load("mixed", frames=3)
    before = dict(motion.metadata)
    changed = motion.copy()
    changed.metadata["units"] = "m"
    changed.metadata.pop("bvh_values")
    assert motion.metadata.keys() == before.keys() and motion.metadata.get("units") == before.get("units")
    assert motion.copy(metadata={"a": 1}).metadata == {"a": 1}
