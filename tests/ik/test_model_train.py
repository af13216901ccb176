"""IK-GAT: loss geodesic, equivariance, a few training steps, ONNX parity, train/resume through ``train``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.rotations import matrix_to_quat, quat_conjugate, quat_geodesic, quat_multiply, quat_to_matrix
from skelanim.ik.data import mean_pose
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.train import IKTask, LossWeights, ik_loss
from skelanim.nn.layers import ForwardKinematics
from skelanim.nn.train import seeded_generator

SMALL = GATConfig(hidden=16, layers=2, heads=2)


@pytest.fixture()
def net(bandai_rig, bandai_poses, torch_threads):
    torch.manual_seed(0)
    model = IKGAT(bandai_rig, SMALL)
    model.set_mean_pose(mean_pose(bandai_poses[0]))
    return model


def _inputs(bandai_rig, bandai_poses):
    _, world, pos = bandai_poses
    rel = (pos - pos[:, bandai_rig.ik_root : bandai_rig.ik_root + 1]).float()
    rel[:, bandai_rig.fixed] = -bandai_rig.offsets[bandai_rig.ik_root].float()
    return rel, world.float()


def _expected_parts(net, rig, inputs, clean, world):
    """The loss terms of the module docstring, worked out apart from ``ik_loss``: the network's local rotations as
    quaternions, their world rotations and positions by the core forward kinematics (IK root at the origin), each
    compared with the true ones (quaternion geodesics in degrees; positions in percent of the height)."""
    from skelanim.core.kinematics import forward_kinematics

    joints = rig.evaluated
    with torch.no_grad():
        _, local = net(inputs)
    q = matrix_to_quat(local.double())
    g_world, g_pos = forward_kinematics(q, rig.translations(torch.zeros(len(q), 3, dtype=torch.float64)), rig.parents)
    q_true = matrix_to_quat(world.double())
    gt_local = torch.cat([q_true[:, :1], quat_multiply(quat_conjugate(q_true[:, rig.parents[1:]]), q_true[:, 1:])], 1)
    return {"local_deg": float(quat_geodesic(q, gt_local)[:, joints].mean().rad2deg()),
            "frame_deg": float(quat_geodesic(matrix_to_quat(g_world), q_true)[:, joints].mean().rad2deg()),
            "pos_pct": 100.0 * float((g_pos - clean.double())[:, joints].norm(dim=-1).mean()) / rig.height}  # fmt: skip


def test_loss_is_its_documented_formula_on_noisy_inputs(net, bandai_rig, bandai_poses):
    """``L = geo(L) + w_frame geo(G) + w_pos |FK(L) - p_clean| / h``: each term against its own working-out (the
    network sees noisy positions, the position term compares with the clean ones), and the loss the weighted sum."""
    rel, world = _inputs(bandai_rig, bandai_poses)
    noisy = rel + 0.02 * bandai_rig.height * torch.randn(rel.shape, generator=torch.Generator().manual_seed(0))
    weights = LossWeights(frame=0.3, position=7.0)
    loss, parts = ik_loss(net, ForwardKinematics(bandai_rig.parents, bandai_rig.offsets), noisy, rel, world,
                          torch.tensor(bandai_rig.evaluated), weights)  # fmt: skip
    q_true = bandai_poses[0].float()
    with torch.no_grad():
        _, local = net(noisy)
    assert parts["local_deg"] == pytest.approx(
        float(quat_geodesic(matrix_to_quat(local), q_true)[:, bandai_rig.evaluated].mean().rad2deg()), abs=1e-3
    )
    expected = _expected_parts(net, bandai_rig, noisy, rel, world)
    assert parts == pytest.approx(expected, abs=2e-3)
    formula = (
        math.radians(expected["local_deg"])
        + weights.frame * math.radians(expected["frame_deg"])
        + weights.position * expected["pos_pct"] / 100
    )
    assert float(loss.detach()) == pytest.approx(formula, rel=1e-4)


def test_validation_scores_the_clean_poses_as_the_loss_terms_do(net, bandai_rig, bandai_poses):
    """``validate`` reports the loss terms' measures on the validation poses (clean positions)."""
    from skelanim.ik.data import PoseSet

    rel, world = _inputs(bandai_rig, bandai_poses)
    poses = PoseSet(bandai_rig, rel, world, bandai_poses[0], torch.zeros(len(rel), dtype=torch.bool))
    got = IKTask(poses, poses, net, LossWeights(), up=1, meta={}).validate(net)
    expected = _expected_parts(net, bandai_rig, rel, rel, world)
    assert got["val_local_deg"] == pytest.approx(expected["local_deg"], abs=2e-3)
    assert got["val_global_deg"] == pytest.approx(expected["frame_deg"], abs=2e-3)
    assert got["val_mpjpe_pct"] == pytest.approx(expected["pos_pct"], abs=2e-3)


def test_prediction_turns_with_the_input(net, bandai_rig, bandai_poses):
    rel, _ = _inputs(bandai_rig, bandai_poses)
    turn = quat_to_matrix(torch.tensor([0.6, 0.3, -0.6, 0.44])).float()
    with torch.no_grad():
        frames, local = net(rel[:10])
        frames2, local2 = net(rel[:10] @ turn.T)
    moving = bandai_rig.evaluated
    assert torch.allclose(frames2[:, moving], turn @ frames[:, moving], atol=1e-4)
    below = [j for j in moving if j != bandai_rig.ik_root]  # only the root's local rotation turns
    assert torch.allclose(local2[:, below], local[:, below], atol=1e-4)


def test_bone_axes_follow_the_input_exactly_at_start(bandai_rig, bandai_poses):
    torch.manual_seed(0)
    model = IKGAT(bandai_rig, SMALL)
    model.set_mean_pose(mean_pose(bandai_poses[0]))
    with torch.no_grad():
        model.head.weight.zero_()
    rel, _ = _inputs(bandai_rig, bandai_poses)
    with torch.no_grad():
        frames, _ = model(rel)
    for j, c in enumerate(model.primary.tolist()):
        if bool(model.has_bone[j]) and j in bandai_rig.evaluated:
            d = rel[:, c] - rel[:, j]
            assert torch.allclose(frames[:, j, :, 0], d / d.norm(dim=-1, keepdim=True), atol=1e-4)


def test_a_few_training_steps_lower_the_loss(net, bandai_rig, bandai_poses):
    from skelanim.ik.data import PoseSet

    rel, world = _inputs(bandai_rig, bandai_poses)
    poses = PoseSet(bandai_rig, rel, world, bandai_poses[0], torch.zeros(len(rel), dtype=torch.bool))
    task = IKTask(poses, poses, net, LossWeights(noise=0.0), up=1, meta={})
    batch = task.batch(torch.arange(48), seeded_generator(0))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    first = None
    for _ in range(40):
        loss, _ = task.loss(net, batch)
        first = float(loss.detach()) if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(task.loss(net, batch)[0].detach()) < 0.7 * first
    assert task.validate(net)["val_local_deg"] < 90.0


def test_onnx_matches_torch(net, bandai_rig, bandai_poses, tmp_path):
    from skelanim.ik.onnx import OrtRunner, export_onnx

    rel, _ = _inputs(bandai_rig, bandai_poses)
    x = (rel + torch.tensor([10.0, 80.0, -300.0])).numpy()  # world positions, away from the origin
    path = export_onnx(net, tmp_path / "ik.onnx")
    got = OrtRunner(path)(x)
    with torch.no_grad():
        want = matrix_to_quat(net(torch.from_numpy(x))[1]).numpy()
    sign = np.sign((got * want).sum(-1, keepdims=True))  # q and -q are one rotation
    assert np.abs(got * sign - want).max() <= 1e-4
    assert got.shape == (x.shape[0], bandai_rig.num_joints, 4)


def test_shipped_model_is_small_and_loads():
    from skelanim.ik.solve import DEFAULT_MODEL, IKModel

    size = sum(f.stat().st_size for f in DEFAULT_MODEL.iterdir())
    assert size <= 2_000_000
    model = IKModel.load()
    assert model.skeleton.num_joints == 22 and model.rig.ik_root == 1
    assert model.config["training"]["excluded_patterns"] == ["*_angry_*", "*_childish_*", "*_elderly_*"]
