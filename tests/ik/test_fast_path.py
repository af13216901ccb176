"""The inference fast path of the shipped IK-GAT against the reference forward, on real held-out poses.

The reference is the training forward's bone frames ``G`` turned into local rotations by the exact map
``L_j = B_p G_p^T G_j B_j^T`` (:func:`skelanim.ik.frames.bone_frames_to_local`), a second route to the same
rotations; the fast path (:meth:`IKGAT.local_rotations`, exported to onnxruntime) composes them directly in
the swing chain. Both must agree to 1e-5, in torch and through onnxruntime, at batch 1 and batched.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim.core.rotations import matrix_to_quat, quat_to_matrix
from skelanim.ik.frames import bone_frames_to_local


@pytest.fixture(scope="module")
def shipped():
    from skelanim.ik.solve import IKModel

    return IKModel.load()


@pytest.fixture(scope="module")
def real_positions(shipped, bandai_motion):
    """``(F, J, 3)`` float32 FK positions of held-out real poses on the shipped rig, placed away from the origin."""
    from skelanim.core.kinematics import forward_kinematics
    from skelanim.core.rotations import quat_normalize

    rig = shipped.rig
    q = quat_normalize(bandai_motion.rotations)
    root = bandai_motion.positions()[:, rig.ik_root] + torch.tensor([30.0, 0.0, -250.0], dtype=torch.float64)
    _, pos = forward_kinematics(q, rig.translations(root), rig.parents)
    return pos.float()


def _reference(net, positions):
    frames, _ = net(positions)
    return bone_frames_to_local(frames, net.rest_frames, net.parent_index, net.has_parent, net.fixed)


def _chain_by_hand(net, positions) -> np.ndarray:
    """The chain's local rotations from its documented formula, one joint at a time in NumPy (float64), with scipy's
    smallest rotation for the swing: an independent route from the network's corrections to the answer.

    In the root frame ``C``, joint ``j``'s start is ``X_j = L_mean,j B_j D_j B_j^T`` (the IK root's ``M_r D_r B_r^T``,
    ``M_r`` its mean bone frame); a joint with children turns it by the smallest rotation ``S_j`` carrying its start
    axis ``W_p L_mean,j a_j`` onto the observed bone axis ``v_j``: ``W_j = S_j W_p X_j``, ``L_j = W_p^T W_j``; a joint
    without children keeps ``L_j = X_j``; the IK root's local rotation is ``C X_r``, a dummy root's the identity."""
    from scipy.spatial.transform import Rotation

    with torch.no_grad():
        feats, canon, correction = net._corrections(positions)
    axes, canon, d = feats[..., 12:15].double().numpy(), canon.double().numpy(), correction.double().numpy()
    rest, mean = net.rest_frames.double().numpy(), net.mean_local.double().numpy()
    parents, r = net._rig.parents, net.ik_root
    has_children = {p for p in parents if p >= 0}
    out = np.tile(np.eye(3), (*axes.shape[:2], 1, 1))
    for b in range(axes.shape[0]):
        world = {}
        for j in range(r, net.num_joints):
            if j == r:
                world[j] = net.base_frames.double().numpy()[r] @ d[b, j] @ rest[j].T
                out[b, j] = canon[b] @ world[j]
                continue
            start = mean[j] @ rest[j] @ d[b, j] @ rest[j].T
            local = start
            if j in has_children and np.linalg.norm(axes[b, j]) > 0.5:
                source = world[parents[j]] @ mean[j] @ rest[j][:, 0]
                swing = Rotation.align_vectors(axes[b, j][None], source[None])[0].as_matrix()
                local = world[parents[j]].T @ swing @ world[parents[j]] @ start
            world[j] = world[parents[j]] @ local
            out[b, j] = local
    return out


def _quat_close(got, want, tol):
    sign = torch.sign((got * want).sum(-1, keepdim=True))
    return float((got * sign - want).abs().max()) <= tol


def test_fast_path_equals_the_reference_forward_on_real_poses(shipped, real_positions, torch_threads):
    net = shipped.net
    with torch.no_grad():
        want = _reference(net, real_positions)
        fast = net.local_rotations(real_positions)
        _, train_local = net(real_positions)  # the training forward's own local rotations (same chain)
    assert float((fast - want).abs().max()) < 1e-5
    assert torch.equal(fast, train_local)  # training and inference call the same chain
    by_hand = _chain_by_hand(net, real_positions[::6])  # the chain itself, against its formula
    assert float(np.abs(fast[::6].double().numpy() - by_hand).max()) < 1e-4
    # the rotations are proper and the comparison can fail: a 1e-3 rad turn of one joint is caught
    eye = torch.eye(3).expand_as(fast)
    assert float((fast.transpose(-1, -2) @ fast - eye).abs().max()) < 1e-5
    nudged = fast.clone()
    nudged[:, 5] = nudged[:, 5] @ quat_to_matrix(torch.tensor([1.0, 5e-4, 0.0, 0.0])).float()
    assert float((nudged - want).abs().max()) > 1e-5


def test_onnxruntime_and_automatic_runtime_equal_the_reference(shipped, real_positions, torch_threads):
    with torch.no_grad():
        want = matrix_to_quat(_reference(shipped.net, real_positions)).double()
    single = torch.cat([shipped.predict(real_positions[i : i + 1].double()) for i in range(8)])  # static batch-1 graph
    assert _quat_close(single, want[:8], 1e-5)
    assert _quat_close(shipped.predict(real_positions[:20], runtime="onnx"), want[:20], 1e-5)  # dynamic graph
    assert _quat_close(shipped.predict(real_positions, runtime="torch"), want, 1e-5)
    assert _quat_close(shipped.predict(real_positions.numpy().astype(np.float64)[:1]), want[:1], 1e-5)  # NumPy in


def test_fast_path_keeps_training_gradients(bandai_rig, bandai_poses, torch_threads):
    """The training forward (chain start) still back-propagates into every weight and stays finite."""
    from skelanim.ik.data import mean_pose
    from skelanim.ik.model import IKGAT, GATConfig

    torch.manual_seed(0)
    net = IKGAT(bandai_rig, GATConfig(hidden=16, layers=1, heads=2, chain=True))
    net.set_mean_pose(mean_pose(bandai_poses[0]))
    frames, local = net(bandai_poses[2][:4].float())
    (frames[..., 1, 0].sum() + local[..., 0, 1].sum()).backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None and bool(torch.isfinite(g).all()) for g in grads)
    assert float(net.head.weight.grad.abs().sum()) > 0


def test_single_pose_graph_is_smaller_and_gives_the_dynamic_graphs_results(shipped, real_positions):
    """The runner's static batch-1 graph (the one single poses go through) against its dynamic-batch graph:
    fewer nodes, the same rotations on real poses."""
    import onnx

    from skelanim.ik.onnx import onnx_bytes

    single = onnx.load_from_string(onnx_bytes(shipped.net, batch=1)).graph.node
    dynamic = onnx.load_from_string(onnx_bytes(shipped.net)).graph.node
    assert len(single) < len(dynamic)
    runner = shipped.ort_session()
    assert runner.single is not None
    for i in (0, 17, 41):
        x = real_positions[i : i + 1].numpy().astype(np.float32)
        assert float(abs(runner(x) - runner.session.run(None, {"positions": x})[0]).max()) <= 1e-5


def test_torch_chunks_in_parallel_equal_one_thread_and_restore_threads(shipped, real_positions):
    from skelanim.ik.solve import TORCH_CHUNK

    x = torch.cat([real_positions] * (2 * TORCH_CHUNK // len(real_positions) + 1)).double()  # 3 chunks
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        serial = shipped.predict(x, runtime="torch")
        torch.set_num_threads(2)
        parallel = shipped.predict(x, runtime="torch")
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert torch.equal(parallel, serial)


def test_attention_blocks_on_rows_equal_the_batched_form(shipped, real_positions, torch_threads):
    """The network runs its blocks on ``(B J, D)`` rows (one plain product per linear layer in ONNX); the same
    blocks on ``(B, J, D)`` give the same features, with and without gradients, and in the exported softmax form."""
    net = shipped.net
    x = torch.randn(3, net.num_joints, net.config.hidden, generator=torch.Generator().manual_seed(0))
    for grad in (True, False):
        with torch.set_grad_enabled(grad):
            batched, rows = x, x.reshape(-1, x.shape[-1])
            for block in net.blocks:
                batched, rows = block(batched, net.attn_bias), block(rows, net.attn_bias)
        assert rows.shape == (3 * net.num_joints, net.config.hidden)
        assert float((rows.reshape(batched.shape) - batched).detach().abs().max()) < 1e-5
    with torch.no_grad():  # a block that mixed poses or joints is caught: swap two poses' rows
        swapped = net.blocks[0](x.flip(0).reshape(-1, x.shape[-1]), net.attn_bias).reshape(x.shape).flip(0)
        assert float((swapped - net.blocks[0](x, net.attn_bias)).abs().max()) < 1e-5
        shuffled = net.blocks[0](x[:, torch.arange(net.num_joints).roll(1)], net.attn_bias)
        assert float((shuffled - net.blocks[0](x, net.attn_bias)).abs().max()) > 1e-3



def _pool_in_child(queue) -> None:  # runs in a forked process
    from skelanim.ik.solve import _chunk_pool

    queue.put(list(_chunk_pool(2).map(abs, [-1, -2])))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_chunk_pool_works_in_a_forked_child():
    """A process forked after the parent used the chunk pool (a data-loader worker) gets a pool of its own:
    the inherited one has no threads, so work sent there would never run. (torch's own intra-op threads
    have the same problem after a fork; torch documents it.)"""
    import multiprocessing
    import time

    from skelanim.ik.solve import _chunk_pool

    pool = _chunk_pool(2)
    assert list(pool.map(lambda x: time.sleep(0.05) or -x, [-4, -5, -6, -7])) == [4, 5, 6, 7]  # both threads
    time.sleep(0.1)  # both idle now
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_pool_in_child, args=(queue,))
    child.start()
    try:
        got = queue.get(timeout=30)
    finally:
        child.join(timeout=5)
        child.kill()
    assert child.exitcode == 0 and got == [1, 2]


def test_a_degenerate_swing_is_converted_by_torch_as_by_onnxruntime(shipped, torch_threads):
    """A pose that puts one bone (almost) opposite its start axis makes that joint's swing no rotation (determinant
    -6e22 in the first case seen; no capture comes within 130 degrees of it). The torch path raised "m holds a
    reflection" there (``benchmarks/ik.py`` stopped on it), where the exported graph converts it: now both give unit
    quaternions, and the same ones for every other joint. The pose is searched for, not fixed: which random pose
    lands that close depends on the machine's float32 rounding (sample 379 of a seeded batch did on one machine, on
    an AVX-512 one no sample of the 4096 did), so a random pose's hand (joint 9, the one child of joint 8) is put in
    4096 directions about its elbow, then 4096 about the one furthest from a rotation at joint 8, and of those the
    reflection furthest from a rotation is taken."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, shipped.rig.num_joints, 3, generator=g, dtype=torch.float64) * (0.2 * shipped.rig.height)
    assert [j for j, p in enumerate(shipped.rig.parents) if p == 8] == [9]
    best = torch.zeros(3, dtype=torch.float64)
    for spread in (1e3, 0.05):  # all round, then about the direction furthest from a rotation
        spray = best + spread * torch.randn(4096, 3, generator=g, dtype=torch.float64)
        directions = torch.nn.functional.normalize(spray, dim=-1)
        poses = x.repeat(len(directions), 1, 1)
        poses[:, 9] = x[0, 8] + (x[0, 9] - x[0, 8]).norm() * directions
        with torch.no_grad():
            local = shipped.net.local_rotations(poses.float()).double()
        off = (local[:, 8] @ local[:, 8].transpose(-1, -2) - torch.eye(3, dtype=torch.float64)).abs().amax((-2, -1))
        best = directions[off.argmax()]
    det = torch.linalg.det(local)
    reflected = det[:, 8] < 0
    assert int(reflected.sum()) >= 1
    pick = torch.where(reflected, det[:, 8].abs(), 0.0).argmax()
    x, det = poses[pick][None], det[pick]
    assert float(det[8]) < -1e6  # no rotation at all: far from orthogonal
    proper = (det - 1).abs() < 1e-5  # (its neighbours are near-degenerate too: torch and onnxruntime round apart)
    assert int(proper.sum()) >= 12  # the joints below it follow its garbage
    by_torch, by_onnx = shipped.predict(x, runtime="torch"), shipped.predict(x, runtime="onnx")
    assert float((by_torch.norm(dim=-1) - 1).abs().max()) < 1e-6
    assert _quat_close(by_torch[:, proper], by_onnx[:, proper], 1e-5)


def test_solving_positions_that_need_a_gradient_reads_their_values(shipped, real_positions, recwarn):
    """Positions with ``requires_grad`` had set off torch's "Converting a tensor with requires_grad=True to a
    scalar" warning inside the unit check; the solvers pass no gradient back, so the values are read detached."""
    from skelanim.ik.solve import solve

    x = real_positions[:4].double()
    plain = solve(x, shipped)
    needing = solve(x.clone().requires_grad_(True), shipped)
    assert torch.equal(needing.rotations, plain.rotations) and not needing.rotations.requires_grad
    assert not [w for w in recwarn if "requires_grad" in str(w.message)]
