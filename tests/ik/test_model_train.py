"""IK-GAT: loss geodesic, equivariance, a few training steps, ONNX parity, train/resume through ``train``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim.core.rotations import matrix_to_quat, quat_geodesic, quat_to_matrix
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


def test_loss_geodesic_matches_core(net, bandai_rig, bandai_poses):
    rel, world = _inputs(bandai_rig, bandai_poses)
    joints = torch.tensor(bandai_rig.evaluated)
    _, parts = ik_loss(
        net, ForwardKinematics(bandai_rig.parents, bandai_rig.offsets), rel, rel, world, joints, LossWeights()
    )
    with torch.no_grad():
        _, local = net(rel)
    q_true = bandai_poses[0].float()
    expected = quat_geodesic(matrix_to_quat(local), q_true)[:, joints].mean().rad2deg()
    assert parts["local_deg"] == pytest.approx(float(expected), abs=1e-3)


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
