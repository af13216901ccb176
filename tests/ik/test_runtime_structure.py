"""The start structures of IK-GAT (swing chain, corrected chain, flat), the feature matrices against an
explicit per-joint computation, the automatic runtime, the early-stopping refinement and the noise mix."""

from __future__ import annotations

import pytest
import torch

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import quat_to_matrix, rot6d_to_matrix
from skelanim.ik.classical import optimize_ik
from skelanim.ik.data import augment, mean_pose
from skelanim.ik.model import IKGAT, GATConfig


def _net(rig, poses, **kw) -> IKGAT:
    torch.manual_seed(0)
    net = IKGAT(rig, GATConfig(hidden=16, layers=1, heads=2, **kw))
    net.set_mean_pose(mean_pose(poses[0]))
    return net.eval()


def _rel(rig, poses) -> torch.Tensor:
    _, _, pos = poses
    rel = (pos - pos[:, rig.ik_root : rig.ik_root + 1]).float()
    rel[:, rig.fixed] = -rig.offsets[rig.ik_root].float()
    return rel + torch.tensor([20.0, 90.0, -300.0])  # world positions away from the origin


def test_features_match_an_explicit_per_joint_computation(bandai_rig, bandai_poses, torch_threads):
    net = _net(bandai_rig, bandai_poses)
    x = _rel(bandai_rig, bandai_poses)[:10]
    with torch.no_grad():
        feats, canon = net.features(x)
    h, r = bandai_rig.height, bandai_rig.ik_root
    first, second = net.root_axes
    for f in (0, 7):
        rel = (x[f] - x[f, r]) / h
        c = rot6d_to_matrix(torch.cat([rel[first], rel[second]]))
        assert torch.allclose(canon[f], c, atol=1e-6)
        loc = rel @ c
        loc[bandai_rig.fixed] = -(bandai_rig.offsets[r] / h).float()
        for j in range(bandai_rig.num_joints):
            p = bandai_rig.parents[j]
            bone = loc[j] - loc[p] if p >= 0 else torch.zeros(3)
            kid = int(net.primary[j])
            axis = loc[kid] - loc[j]
            axis = axis / axis.norm() if kid != j else torch.zeros(3)
            assert torch.allclose(feats[f, j, :3], loc[j], atol=1e-6)
            assert torch.allclose(feats[f, j, 3:6], bone, atol=1e-6)
            assert torch.allclose(feats[f, j, 12:15], axis, atol=1e-5)


@pytest.mark.parametrize("kw", [{"chain": True}, {"flat": True}])
def test_a_joint_local_rotation_depends_on_its_own_correction_only(bandai_rig, bandai_poses, kw, torch_threads):
    """chain: every joint; flat: the leaves (their local rotation is the mean one times their correction)."""
    net = _net(bandai_rig, bandai_poses, **kw)
    x = _rel(bandai_rig, bandai_poses)[:6]
    leaves = net.leaf_joints.tolist()
    hand = bandai_rig.skeleton.names.index("Hand_L")
    forearm = bandai_rig.parents[hand]
    assert hand in leaves
    with torch.no_grad():
        net.head.weight.zero_()
        _, base = net(x)
        ml = quat_to_matrix(net.mean_pose)
        assert torch.allclose(base[:, leaves], ml[leaves].expand(6, -1, -1, -1), atol=1e-5)
        net.head.bias.copy_(torch.tensor([0.0, 0.3, 0.0, -0.2, 0.0, 0.4]))  # every joint's correction turns
        _, turned = net(x)
    changed = (turned - base).abs().amax((-1, -2)).amax(0)
    assert float(changed[hand]) > 0.05 and float(changed[forearm]) > 0.05
    # a leaf's local rotation is L_mean B R B^T whatever its parent's correction
    d = rot6d_to_matrix(torch.tensor([1.0, 0.3, 0.0, -0.2, 1.0, 0.4]))
    b = net.rest_frames[hand]
    assert torch.allclose(turned[:, hand], (ml[hand] @ b @ d @ b.T).expand(6, 3, 3), atol=1e-5)


def test_flat_start_follows_the_observed_bones(bandai_rig, bandai_poses, torch_threads):
    net = _net(bandai_rig, bandai_poses, flat=True)
    x = _rel(bandai_rig, bandai_poses)
    with torch.no_grad():
        net.head.weight.zero_()
        frames, _ = net(x)
    for j, c in enumerate(net.primary.tolist()):
        if bool(net.has_bone[j]) and j in bandai_rig.evaluated:
            d = x[:, c] - x[:, j]
            assert torch.allclose(frames[:, j, :, 0], d / d.norm(dim=-1, keepdim=True), atol=1e-4)


@pytest.mark.parametrize("kw", [{"chain": True}, {"flat": True}])
def test_automatic_runtime_picks_by_batch_and_agrees(bandai_rig, bandai_poses, kw, torch_threads):
    from skelanim.ik.solve import ORT_MAX_BATCH, TORCH_CHUNK, IKModel

    model = IKModel(_net(bandai_rig, bandai_poses, **kw), bandai_rig, {})
    assert model.choose_runtime(1) == "onnx" and model.choose_runtime(ORT_MAX_BATCH) == "onnx"
    assert torch.get_num_threads() == 1 and model.choose_runtime(4 * ORT_MAX_BATCH) == "onnx"  # faster on one thread
    torch.set_num_threads(2)
    try:
        assert model.choose_runtime(ORT_MAX_BATCH) == "onnx" and model.choose_runtime(ORT_MAX_BATCH + 1) == "torch"
    finally:
        torch.set_num_threads(1)
    x = _rel(bandai_rig, bandai_poses).double()
    big = torch.cat([x] * (TORCH_CHUNK // len(x) + 2))  # more than one torch chunk
    want = model.predict(big, runtime="torch")
    got = model.predict(big, runtime="onnx")
    sign = torch.sign((got * want).sum(-1, keepdim=True))
    assert float((got * sign - want).abs().max()) < 1e-4
    one = model.predict(x[3:4])  # auto: onnxruntime, static batch-1 graph
    assert float((one * torch.sign((one * want[3:4]).sum(-1, keepdim=True)) - want[3:4]).abs().max()) < 1e-4
    assert model.ort_session() is model.ort_session()  # cached
    from skelanim.errors import ShapeError

    with pytest.raises(ValueError, match="runtime must be one of auto, torch, onnx, got 'foo'"):
        model.predict(x[3:4], runtime="foo")  # it had been taken as auto
    with pytest.raises(ShapeError, match=rf"positions must be \(F, {bandai_rig.num_joints}, 3\)"):
        model.predict(x[3:4, :-1], runtime="onnx")  # it had been onnxruntime's InvalidArgument
    for runtime in ("torch", "onnx", "auto"):  # no frames: no rotations (torch had failed to concatenate no chunks)
        for threads in (1, 2):
            torch.set_num_threads(threads)
            try:
                empty = model.predict(x[:0], runtime=runtime)
            finally:
                torch.set_num_threads(1)
            assert empty.shape == (0, bandai_rig.num_joints, 4) and empty.dtype == torch.float64


def test_load_model_is_cached_per_folder():
    from skelanim.ik.solve import load_model

    assert load_model() is load_model(None)


def test_refinement_stops_once_within_tolerance(bandai_rig, bandai_poses):
    q, _, pos = bandai_poses
    gen = torch.Generator().manual_seed(1)
    start = q[:8] + 0.03 * torch.randn(q[:8].shape, generator=gen, dtype=torch.float64)
    fixed, trans = optimize_ik(pos[:8], bandai_rig, start, iterations=40)
    early, _ = optimize_ik(pos[:8], bandai_rig, start, iterations=40, tol=2e-3)
    for quats, bound in ((fixed, 1e-3), (early, 2e-3)):
        _, got = forward_kinematics(quats, trans, bandai_rig.parents)
        assert float((got - pos[:8])[:, bandai_rig.evaluated].norm(dim=-1).max()) <= bound * bandai_rig.height
    assert float((early - fixed).abs().max()) > 1e-8  # it did stop earlier
    same, _ = optimize_ik(pos[:8], bandai_rig, fixed, iterations=40, tol=2e-3)
    assert torch.allclose(same, fixed, atol=1e-12)  # already within: no step taken


def test_noise_goes_to_the_requested_fraction_of_samples(bandai_rig, bandai_poses):
    _, world, pos = bandai_poses
    rel = (pos - pos[:, 1:2]).float()
    rel = torch.cat([rel] * 40)  # 2,400 samples
    w = torch.cat([world.float()] * 40)
    for frac in (0.5, 0.8):
        noisy, clean, _ = augment(rel, w, bandai_rig, torch.Generator().manual_seed(0), up=1, noise=0.015, noisy=frac)
        moved = (noisy - clean).abs().amax((1, 2)) > 0
        assert abs(float(moved.float().mean()) - frac) < 0.04
        sigma = (noisy - clean)[moved].std(dim=(1, 2)) / bandai_rig.height
        assert float(sigma.max()) < 0.015 * 1.3 and float(sigma.mean()) == pytest.approx(0.0075, rel=0.15)


def test_refine_prior_reads_the_noise_from_bone_lengths(bandai_rig, bandai_poses):
    from skelanim.ik.solve import REFINE_PRIOR, REFINE_SPREAD, refine_prior

    _, _, pos = bandai_poses
    assert torch.allclose(refine_prior(pos, bandai_rig), torch.full((len(pos),), REFINE_PRIOR, dtype=pos.dtype))
    gen = torch.Generator().manual_seed(0)
    for sigma in (0.005, 0.01):
        noisy = pos + torch.randn(pos.shape, generator=gen, dtype=pos.dtype) * sigma * bandai_rig.height
        w = refine_prior(noisy, bandai_rig)
        estimate = (w * REFINE_SPREAD**2).sqrt()  # per-frame sigma estimate from ~20 bones
        assert float(estimate.median()) == pytest.approx(sigma, rel=0.2)
