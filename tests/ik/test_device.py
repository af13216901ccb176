"""IK-GAT trains and solves on a device other than the CPU (the stand-in accelerator of
``tests/helpers/virtual_device``, which enforces CUDA's device rules on CPU values): the same weights as on the
CPU, bit for bit, and the same solved motion."""

from __future__ import annotations

import pytest
import torch
from virtual_device import OnDevice, VirtualDevice  # tests/helpers

from skelanim.ik.data import PoseSet, mean_pose
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import IKModel, solve
from skelanim.ik.train import IKTask, LossWeights
from skelanim.nn.train import TrainConfig, fit


def _fit(bandai_rig, bandai_poses, out, device: str) -> dict:
    local, world, pos = bandai_poses
    rel = (pos - pos[:, bandai_rig.ik_root : bandai_rig.ik_root + 1]).float()[:96]
    rel[:, bandai_rig.fixed] = -bandai_rig.offsets[bandai_rig.ik_root].float()
    poses = PoseSet(bandai_rig, rel, world[:96].float(), local[:96], torch.zeros(96, dtype=torch.bool))
    torch.manual_seed(0)
    net = IKGAT(bandai_rig, GATConfig(hidden=16, layers=2, heads=2))
    net.set_mean_pose(mean_pose(local))
    task = IKTask(poses, poses, net, LossWeights(noise=0.01, mirror=0.5), up=1, meta={})
    config = TrainConfig(epochs=2, batch_size=32, warmup_steps=2, progress=False, device=device)
    return fit(net, task, out, config, log=lambda _: None)


def test_training_on_a_device_gives_the_cpu_weights(bandai_rig, bandai_poses, torch_threads, tmp_path):
    on_cpu = _fit(bandai_rig, bandai_poses, tmp_path / "cpu", "cpu")
    with VirtualDevice():
        on_device = _fit(bandai_rig, bandai_poses, tmp_path / "device", "meta")
    assert on_device["weights_sha256"] == on_cpu["weights_sha256"]
    assert on_device["history"] == [{**h, "seconds": d["seconds"]} for h, d in zip(on_cpu["history"], on_device["history"])]


@pytest.mark.parametrize("method", ["gat", "gat_refined", "swing_mean", "optimize_mean"])
def test_solving_on_a_device_gives_the_cpu_motion(bandai_motion, torch_threads, method):
    """The shipped model on the device: CPU positions in, a CPU motion out, the CPU run's rotations (the classical
    methods start from the model's mean pose, which must come back to the CPU with them)."""
    positions = bandai_motion.positions()[:40]
    model = IKModel.load()
    model.runtime = "torch"  # the CPU reference through torch, as the device run must go
    on_cpu = solve(positions, model, method=method)
    with VirtualDevice():
        model.net.to("meta")
        assert model.choose_runtime(1) == "torch"  # onnxruntime runs on the CPU: not for a network moved off it
        on_device = solve(positions, model, method=method)
    assert not isinstance(on_device.rotations, OnDevice) and on_device.rotations.device.type == "cpu"
    torch.testing.assert_close(on_device.rotations, on_cpu.rotations, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(on_device.positions(), on_cpu.positions(), rtol=1e-5, atol=1e-4)
