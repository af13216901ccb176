"""Prediction: baselines on closed forms, the learned predictors learn, evaluation and file prediction."""

from __future__ import annotations

import pytest
import torch

from skelanim.core.rotations import rotvec_to_matrix
from skelanim.learn.common import file_balance_weights
from skelanim.learn.forecast import predict_motion
from skelanim.learn.mirror import mirror_frames, rig_mirror
from skelanim.learn.predict import (
    HORIZONS_MS,
    CombinedPredictor,
    Predictor,
    PredictTask,
    _frame_weights,
    _position_errors,
    reference_windows,
    train_predictor,
)
from skelanim.learn.predict_eval import evaluate_prediction, pose_positions
from skelanim.learn.predictors import (
    DCTGCN,
    Seq2SeqGRU,
    constant_velocity,
    dct_matrix,
    frames_to_vectors,
    periodic_continuation,
    vectors_to_frames,
    zero_velocity,
)
from skelanim.metrics.kinematic import horizon_frames
from skelanim.nn.train import TrainConfig, seeded_generator


def _known_velocity(frames: int = 30, m: int = 3):
    """Every joint turns at a constant angular velocity and the pelvis moves at a constant velocity."""
    omega = torch.tensor([[0.02, -0.05, 0.03], [0.0, 0.04, 0.0], [-0.03, 0.01, 0.02]], dtype=torch.float64)[:m]
    base = rotvec_to_matrix(
        torch.tensor([[0.3, 0.1, -0.2], [0.0, 0.5, 0.1], [0.2, -0.4, 0.0]], dtype=torch.float64)[:m]
    )
    k = torch.arange(frames, dtype=torch.float64)[:, None, None]
    rot = base @ rotvec_to_matrix(k * omega)  # (T, M, 3, 3): R[t] = R0 exp(t w)
    pelvis = torch.tensor([0.1, 0.9, -0.2], dtype=torch.float64) + k[:, 0] * torch.tensor(
        [0.01, 0.0, 0.02], dtype=torch.float64
    )
    return rot[None], pelvis[None]


def test_constant_velocity_continues_a_known_velocity_motion():
    rot, pelvis = _known_velocity()
    p_rot, p_pel = constant_velocity(rot[:, :20], pelvis[:, :20], 10)
    assert torch.allclose(p_rot, rot[:, 20:], atol=1e-9)
    assert torch.allclose(p_pel, pelvis[:, 20:], atol=1e-12)


def test_zero_velocity_holds_the_last_pose():
    rot, pelvis = _known_velocity()
    p_rot, p_pel = zero_velocity(rot[:, :20], pelvis[:, :20], 5)
    assert torch.equal(p_rot, rot[:, 19:20].expand_as(p_rot)) and torch.equal(p_pel, pelvis[:, 19:20].expand_as(p_pel))


def test_frame_vectors_round_trip_and_dct():
    rot, pelvis = _known_velocity()
    back_rot, back_pel = vectors_to_frames(frames_to_vectors(rot, pelvis))
    assert torch.allclose(back_rot, rot, atol=1e-10) and torch.equal(back_pel, pelvis)
    d = dct_matrix(12)
    assert torch.allclose(d @ d.T, torch.eye(12), atol=1e-5)


def test_untrained_dct_gcn_pads_with_damped_constant_velocity():
    net = DCTGCN(4, observed=5, horizon=6, coefficients=11, hidden=8, blocks=1)
    x = torch.arange(8, dtype=torch.float32)[None, :, None].expand(1, 8, 4)  # a ramp: velocity 1 per frame
    out = net(x)
    keep = float(torch.sigmoid(torch.tensor(1.7)))
    expected = 7 + torch.cumsum(torch.tensor([keep**k for k in range(1, 7)]), 0)
    assert torch.allclose(out[0, :5, 0], x[0, 3:, 0], atol=1e-4)  # observed frames reconstructed
    assert torch.allclose(out[0, 5:, 0], expected, atol=1e-4)


def test_mirror_reflects_fk_positions_and_swaps_sides(tiny_ds):
    """Mirrored windows put every joint at the reflection of its partner (the Bandai rig's joints have their
    own rest axes, so a plain world reflection of the local rotations would not), and twice is identity."""
    from skelanim.learn.common import rig_fk

    rig = tiny_ds.rig
    perm, left, right, lateral = rig_mirror(rig)
    names = rig.names
    assert names[int(perm[names.index("UpperArm_L")])] == "UpperArm_R" and int(perm[0]) == 0
    windows = tiny_ds.windows(50, 25, pad_short=False)
    rot, pelvis = reference_windows(tiny_ds, windows, 50, 24, rig)
    m_rot, m_pel = mirror_frames(rot, pelvis, perm, left, right, lateral)
    fk = rig_fk(rig)
    _, x = fk(rot, pelvis)
    _, y = fk(m_rot, m_pel)
    flip = torch.ones(3)
    flip[lateral] = -1.0
    assert float((y - (x * flip)[..., perm, :]).norm(dim=-1).max()) < 1e-3  # heights; the rig's asymmetry
    naive = rot[..., perm, :, :] * flip[:, None] * flip[None, :]  # world reflection of local rotations
    _, z = fk(naive, m_pel)
    assert float((z - (x * flip)[..., perm, :]).norm(dim=-1).mean()) > 0.05
    back_rot, back_pel = mirror_frames(m_rot, m_pel, perm, left, right, lateral)
    assert torch.equal(back_rot, rot) and torch.equal(back_pel, pelvis)


@pytest.mark.parametrize("attention,anchor", [(0, False), (8, False), (8, True)])
def test_untrained_gru_decodes_a_damped_constant_velocity(attention, anchor):
    net = Seq2SeqGRU(4, hidden=8, attention=attention, anchor=anchor)
    frames = 9 if anchor else 8  # the anchor's periodic continuation needs more than 8
    x = torch.arange(8 - frames, 8, dtype=torch.float32)[None, :, None].expand(2, frames, 4)  # velocity 1, last 7
    out = net(x, 6, torch.ones(4))
    keep = float(torch.sigmoid(torch.tensor(1.7)))
    expected = 7 + torch.cumsum(torch.tensor([keep**k for k in range(1, 7)]), 0)
    assert torch.allclose(out[0, :, 0], expected, atol=1e-5)


def test_untrained_gru_with_a_spring_is_a_damped_oscillator_about_the_observed_mean():
    """Zero output layer: offset from the observed mean and step evolve by the linear map
    [[1 - s, k], [-s, k]] (k the kept fraction of the last step, s the pull), computed here by matrix powers."""
    net = Seq2SeqGRU(1, hidden=8, spring=True)
    x = torch.tensor([0.0, 0.0, 0.0, 1.0, 3.0], dtype=torch.float64)[None, :, None]  # mean 0.8, last step 2
    net = net.double()
    with torch.no_grad():
        out = net(x, 200, torch.ones(1, dtype=torch.float64))[0, :, 0]
    k, s = (float(torch.sigmoid(torch.tensor(v, dtype=torch.float64))) for v in (1.7, -4.0))
    m = torch.tensor([[1 - s, k], [-s, k]], dtype=torch.float64)
    start = torch.tensor([3.0 - 0.8, 2.0], dtype=torch.float64)
    expected = torch.stack([torch.linalg.matrix_power(m, n + 1) @ start for n in range(200)])[:, 0] + 0.8
    assert torch.allclose(out, expected, atol=1e-9)
    assert abs(float(out[-1]) - 0.8) < 0.05  # back to the observed mean, not drifting away


def test_gru_anchor_is_the_periodic_continuation_seen_from_the_current_frame():
    """An output layer that steps the whole way to the anchor, with no carried velocity, reproduces the
    periodic continuation frame for frame (so the decoder is given that target, step by step)."""
    net = Seq2SeqGRU(2, hidden=8, anchor=True)
    with torch.no_grad():
        net.damping.fill_(-40.0)  # keep = sigmoid(-40): no carried velocity
        net.out.weight.zero_()
        net.out.weight[:, 8:] = torch.eye(2)  # step = anchor - current frame
    t = torch.arange(50, dtype=torch.float32)
    motion = torch.stack([torch.sin(2 * torch.pi * t / 9), 0.02 * t + torch.cos(2 * torch.pi * t / 9)], -1)[None]
    out = net(motion[:, :25], 25, torch.ones(2))
    assert torch.allclose(out, periodic_continuation(motion[:, :25], 25), atol=1e-5)
    assert torch.allclose(out[0], motion[0, 25:], atol=1e-4)


def test_periodic_continuation_continues_a_periodic_motion_with_drift():
    """A sine of period 11 frames plus a steady drift (a walk's travel) goes on exactly, past one period too."""
    t = torch.arange(60, dtype=torch.float64)
    motion = torch.stack([torch.sin(2 * torch.pi * t / 11), torch.cos(2 * torch.pi * t / 11) + 0.01 * t], -1)
    future = periodic_continuation(motion[None, :25], 35)
    assert torch.allclose(future[0], motion[25:], atol=1e-9)
    with pytest.raises(ValueError, match="pad"):
        DCTGCN(2, pad="spline")
    with pytest.raises(ValueError, match="more than 8 observed"):
        DCTGCN(2, observed=5, pad="periodic")
    with pytest.raises(ValueError, match="more than 8 observed"):
        periodic_continuation(motion[None, :6], 4)


def test_untrained_dct_gcn_periodic_pad_fades_from_velocity_to_the_period():
    net = DCTGCN(2, observed=25, horizon=20, hidden=8, blocks=1, pad="periodic").eval()
    t = torch.arange(45, dtype=torch.float32)
    motion = torch.stack([torch.sin(2 * torch.pi * t / 10), torch.cos(2 * torch.pi * t / 10)], -1)[None]
    out = net(motion[:, :25])[0, 25:]  # (20, 2): zero output layer, all coefficients: the pad itself
    assert torch.allclose(out[5:], motion[0, 30:], atol=1e-4)  # after the fade: the periodic copy
    assert not torch.allclose(out[0], motion[0, 25], atol=1e-2)  # first frame: mostly the velocity extrapolation


@pytest.mark.parametrize(
    "arch,options",
    [("rnn", {"hidden": 32}), ("rnn", {"hidden": 32, "attention": 16}),
     ("rnn", {"hidden": 32, "attention": 16, "anchor": True}), ("rnn", {"hidden": 32, "spring": True}),
     ("gcn", {"hidden": 16, "blocks": 1, "dropout": 0.0, "observed": 10}),
     ("gcn", {"hidden": 16, "blocks": 1, "dropout": 0.0, "observed": 10, "pad": "periodic"}),
     ("mlp", {"blocks": 4, "observed": 10})],
)  # fmt: skip
def test_a_few_steps_lower_the_loss(tiny_ds, arch, options):
    torch.manual_seed(0)
    model = Predictor(arch, tiny_ds.rig, observed=10, horizon=10, arch_options=options)
    task = PredictTask(model, tiny_ds.select(["*run*", "*walk*"]), None, stride=10)
    batch = task.batch(torch.arange(min(16, task.num_samples())), seeded_generator(0))
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    with torch.no_grad():
        first = float(task.loss(model, batch)[0])
    for _ in range(20):
        loss, _ = task.loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        assert float(task.loss(model, batch)[0]) < 0.9 * first


def test_file_balance_weights_give_every_file_the_same_total_at_exponent_one():
    clip = torch.tensor([0, 1, 1, 1, 1, 2, 2])
    w = file_balance_weights(clip, 4, 1.0)
    totals = torch.zeros(3).index_add_(0, clip, w)
    assert torch.allclose(totals, totals[0].expand(3)) and abs(float(w.mean()) - 1) < 1e-6
    assert torch.equal(file_balance_weights(clip, 4, 0.0), torch.ones(7))
    half = file_balance_weights(clip, 4, 0.5)  # n^-0.5: the 1-window file's window weighs 2x a 4-window file's
    assert abs(float(half[0] / half[1]) - 2.0) < 1e-6


@pytest.mark.parametrize("decay", [0.5, 0.0])
def test_weighted_prediction_loss_is_the_weighted_mean_of_per_window_losses(tiny_ds, decay):
    torch.manual_seed(0)
    model = Predictor("rnn", tiny_ds.rig, observed=10, horizon=10, arch_options={"hidden": 16})
    task = PredictTask(model, tiny_ds, None, stride=10, horizon_decay=decay)
    batch = task.batch(torch.arange(3), seeded_generator(0))
    with torch.no_grad():
        alone = [float(task.loss(model, {"x": batch["x"][i : i + 1], "weight": torch.ones(1)})[0]) for i in range(3)]
        weights = torch.tensor([0.5, 2.0, 0.5])
        mixed = float(task.loss(model, {"x": batch["x"], "weight": weights})[0])
    assert abs(mixed - float((weights * torch.tensor(alone)).mean())) < 1e-6
    assert len({round(a, 6) for a in alone}) == 3  # distinct windows, so the weights matter
    k = torch.arange(10, dtype=torch.float32)
    expected = (k + 1) ** -decay
    assert torch.allclose(_frame_weights(10, 10, decay), expected / expected.mean())


def test_train_round_trip_evaluate_and_predict_a_file(tiny_ds, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    out = tmp_path / "rnn"
    train_predictor(tiny_ds, tiny_ds.subset([0]), out, arch="rnn", stride=25, loop=loop, arch_options={"hidden": 16})
    model = Predictor.load(out)
    res = evaluate_prediction({"rnn": model}, tiny_ds, methods=("rnn", "zero_velocity", "constant_velocity"), stride=25)
    assert res["horizons_ms"] == list(HORIZONS_MS) and res["horizons_ms_measured"] == pytest.approx(HORIZONS_MS)
    assert set(res["methods"]) == {"rnn", "zero_velocity", "constant_velocity"}
    for scores in res["methods"].values():
        assert set(scores) == {"mpjpe", "mpjpe_pose", "mpjpe_global", "angle_deg"} and len(scores["mpjpe"]) == 6
        assert all(g >= 0 for g in scores["mpjpe_global"])
    zv = res["methods"]["zero_velocity"]["mpjpe"]
    assert zv[0] < zv[2]  # holding the pose is worse 320 ms out than 80 ms out
    import skelanim

    source = skelanim.load(tiny_ds.clips[0].path)
    for method in ("rnn", "constant_velocity"):
        result = predict_motion(source, method=method, model=model, seconds=1.5)
        assert result.fps == pytest.approx(source.fps)
        assert abs(result.num_frames - (source.num_frames + 1.5 * source.fps)) <= 2
        pos = result.positions()[:, 1]
        jump = (pos[source.num_frames] - pos[source.num_frames - 1]).norm()
        assert jump < 5.0  # cm: the prediction continues from the last observed frame
    with pytest.raises(Exception, match="skeleton"):
        from skelanim.core.motion import Motion

        predict_motion(
            Motion.rest(skelanim.Skeleton(["a", "b"], [-1, 0], torch.zeros(2, 3)), 10), method="rnn", model=model
        )


def test_combined_predictor_averages_the_frame_vectors_of_different_architectures(tiny_ds):
    """The mean of a GRU's and a DCT-GCN's predicted vectors, Gram-Schmidt after averaging: worked here from
    the two networks' own outputs; with one model twice it is that model."""
    torch.manual_seed(0)
    rnn = Predictor("rnn", tiny_ds.rig, arch_options={"hidden": 16}).eval()
    gcn = Predictor("gcn", tiny_ds.rig, arch_options={"hidden": 16}).eval()
    for model in (rnn, gcn):  # non-trivial outputs from untrained networks
        for p in model.net.parameters():
            p.data.normal_(0.0, 0.05)
    windows = tiny_ds.windows(50, 25, pad_short=False)[:4]
    rot, pelvis = reference_windows(tiny_ds, windows, 50, 24, tiny_ds.rig)
    obs_rot, obs_pel = rot[:, :25], pelvis[:, :25]
    x = frames_to_vectors(obs_rot, obs_pel)
    mean = 0.5 * (rnn(x)[:, -25:] + gcn(x)[:, -25:])
    want_rot, want_pel = vectors_to_frames(mean)
    got_rot, got_pel = CombinedPredictor([rnn, gcn]).predict(obs_rot, obs_pel)
    assert torch.allclose(got_rot, want_rot, atol=1e-5) and torch.allclose(got_pel, want_pel, atol=1e-5)
    assert float((got_rot - rnn.predict(obs_rot, obs_pel)[0]).abs().max()) > 1e-3
    assert float((got_rot - gcn.predict(obs_rot, obs_pel)[0]).abs().max()) > 1e-3
    same_rot, _ = CombinedPredictor([gcn, gcn]).predict(obs_rot, obs_pel)
    assert torch.allclose(same_rot, gcn.predict(obs_rot, obs_pel)[0], atol=1e-5)
    res = evaluate_prediction({"rnn": rnn, "combined": CombinedPredictor([rnn, gcn])}, tiny_ds, stride=25)
    assert list(res["methods"]) == ["rnn", "combined", "zero_velocity", "constant_velocity"]
    with pytest.raises(ValueError, match="at least two"):
        CombinedPredictor([rnn])
    with pytest.raises(ValueError, match="share"):
        CombinedPredictor([rnn, Predictor("gcn", tiny_ds.rig, horizon=10)])


def test_backwards_windows_are_the_forward_ones_in_reverse_seen_from_the_mirrored_frame(tiny_ds):
    """Reading a window backwards and taking frame ``r`` as the reference is reading it forwards from frame
    ``T - 1 - r`` and reversing time (FK positions compared); ``PredictTask(reverse=1)`` trains on those."""
    rig = tiny_ds.rig
    windows = tiny_ds.windows(20, 25, pad_short=False)[:3]
    back = torch.ones(len(windows), dtype=torch.bool)
    rot_b, pel_b = reference_windows(tiny_ds, windows, 20, 9, rig, back)
    rot_f, pel_f = reference_windows(tiny_ds, windows, 20, 10, rig)
    fk = Predictor("rnn", rig, observed=10, horizon=10, arch_options={"hidden": 8}).fk
    _, pos_b = fk(rot_b, pel_b)
    _, pos_f = fk(rot_f, pel_f)
    assert torch.allclose(pos_b, pos_f.flip(1), atol=1e-4)
    assert float((pos_b - pos_f).abs().max()) > 0.01  # the motion is not its own reverse
    mixed = reference_windows(tiny_ds, windows, 20, 9, rig, torch.tensor([True, False, True]))[1]
    assert torch.equal(mixed[1], reference_windows(tiny_ds, windows, 20, 9, rig)[1][1])
    model = Predictor("rnn", rig, observed=10, horizon=10, arch_options={"hidden": 8})
    task = PredictTask(model, tiny_ds, None, stride=10, reverse=1.0)
    idx = torch.arange(3)
    x = task.batch(idx, seeded_generator(0))["x"]
    expected = frames_to_vectors(*reference_windows(tiny_ds, task.windows[idx], 20, 9, rig, back))
    assert torch.allclose(x, expected)


def test_velocity_error_is_the_change_from_the_previous_frame_against_the_true_one(tiny_ds):
    """One predicted frame wrong: its velocity error and the next frame's both equal its position error (closed
    form: the change into it and out of it are off by that displacement), every other frame's is 0; the first
    frame's change is taken from the true frame before it."""
    rig = tiny_ds.rig
    windows = tiny_ds.windows(20, 25, pad_short=False)[:3]
    rot, pelvis = reference_windows(tiny_ds, windows, 20, 9, rig)
    fk = Predictor("rnn", rig, observed=10, horizon=10, arch_options={"hidden": 8}).fk
    truth, pel, before = rot[:, 10:], pelvis[:, 10:], rot[:, 9]
    turn = rotvec_to_matrix(torch.tensor([0.0, 0.4, 0.3]))
    for k in (0, 4):
        pred = truth.clone()
        pred[:, k, 1] = turn @ pred[:, k, 1]
        rr, _, vel = _position_errors(fk, pred, pel, truth, pel, before)
        assert float(rr[:, k].max()) > 0.01
        torch.testing.assert_close(vel[:, k], rr[:, k], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(vel[:, k + 1], rr[:, k], atol=1e-5, rtol=1e-4)
        others = [t for t in range(10) if t not in (k, k + 1)]
        assert float(vel[:, others].abs().max()) < 1e-5
        if k == 0:  # without the frame before, frame 0's change is not scored although its position is wrong
            assert float(_position_errors(fk, pred, pel, truth, pel)[2][:, 0].abs().max()) == 0.0
    model = Predictor("rnn", rig, observed=10, horizon=10, arch_options={"hidden": 8})
    batch = PredictTask(model, tiny_ds, None, stride=10).batch(torch.arange(3), seeded_generator(0))
    with torch.no_grad():
        losses = [float(PredictTask(model, tiny_ds, None, stride=10, velocity_weight=v).loss(model, batch)[0])
                  for v in (0, 1, 2)]  # fmt: skip
    assert losses[1] > losses[0] and losses[2] - losses[0] == pytest.approx(2 * (losses[1] - losses[0]), rel=1e-4)


def test_amplitude_augmentation_shrinks_each_window_about_its_own_mean_pose(tiny_ds):
    model = Predictor("rnn", tiny_ds.rig, observed=10, horizon=10, arch_options={"hidden": 8})
    plain = PredictTask(model, tiny_ds, None, stride=10)
    half = PredictTask(model, tiny_ds, None, stride=10, amplitude=(0.5, 0.5))
    idx = torch.arange(4)
    x, y = plain.batch(idx, seeded_generator(0))["x"], half.batch(idx, seeded_generator(0))["x"]
    rot_x, pelvis_x = vectors_to_frames(x)
    rot_y, pelvis_y = vectors_to_frames(y)
    assert torch.equal(pelvis_x, pelvis_y) and torch.allclose(rot_x[:, :, 0], rot_y[:, :, 0], atol=1e-5)
    # FK (independent of the rotation maths): the hand's path about its window mean shrinks, the mean pose stays
    fk = model.fk
    hand = tiny_ds.rig.names.index("Hand_L")
    zero = torch.zeros_like(pelvis_x)
    px, py = fk(rot_x, zero)[1][:, :, hand], fk(rot_y, zero)[1][:, :, hand]
    spread_x = (px - px.mean(1, keepdim=True)).norm(dim=-1).mean()
    spread_y = (py - py.mean(1, keepdim=True)).norm(dim=-1).mean()
    assert 0.4 < float(spread_y / spread_x) < 0.6


@pytest.mark.parametrize("flag", ["--speed", "--amplitude"])
def test_cli_rejects_a_reversed_augmentation_range(tmp_path, capsys, flag):
    from skelanim.cli import main

    out = tmp_path / "pred"
    assert main(["learn", "predict", "train", "--data", str(tmp_path), "--out", str(out), flag, "1.2", "0.5"]) == 2
    err = capsys.readouterr().err
    assert flag in err and "LO <= HI" in err and "Traceback" not in err and not out.exists()


class _TurnedZeroVelocity:
    """Zero velocity with the body root's rotation turned by a fixed rotation in every predicted frame."""

    def __init__(self, rig, turn: torch.Tensor) -> None:
        self.rig, self.observed, self.horizon, self.fps, self.turn = rig, 25, 25, 25.0, turn

    def predict(self, rot: torch.Tensor, pelvis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p_rot, p_pel = zero_velocity(rot, pelvis, self.horizon)
        p_rot = p_rot.clone()
        p_rot[:, :, 0] = self.turn.to(p_rot.dtype) @ p_rot[:, :, 0]
        return p_rot, p_pel


def test_pose_only_error_ignores_the_body_roots_turn_and_the_root_relative_error_does_not(tiny_ds):
    """``pose_positions`` is FK with the body root at the origin and unturned: the root-relative positions
    turned back by the root's rotation (closed form), every joint kept. A predictor that is zero velocity with
    its body root turned scores zero velocity's ``mpjpe_pose`` (Martinez et al. and Mao et al. zero the global
    rotation and translation) but a larger ``mpjpe``. The body root and its children, which that holds still,
    count at zero error in the mean, as Mao et al.'s test averages all 32 H3.6M joints: the score is the mean
    over the joints that move times their share of the joints."""
    rig = tiny_ds.rig
    windows = tiny_ds.windows(50, 25, pad_short=False)[:3]
    rot, _ = reference_windows(tiny_ds, windows, 50, 24, rig)
    fk = Predictor("rnn", rig, arch_options={"hidden": 8}).fk
    _, rr = fk(rot, torch.zeros(rot.shape[:2] + (3,)))
    turned_back = (rot[:, :, :1].transpose(-1, -2) @ rr[..., None])[..., 0]
    fixed = [j for j, parent in enumerate(rig.parents) if parent <= 0]
    moving = [j for j in range(len(rig.parents)) if j not in fixed]
    assert 0 in fixed and len(fixed) >= 2 and moving
    pose = pose_positions(fk, rot)
    assert pose.shape == rr.shape
    assert torch.allclose(pose, turned_back, atol=1e-5)
    held = pose[..., fixed, :]
    assert torch.allclose(held, held[:1, :1].expand_as(held), atol=1e-5)  # the body root and its children stay
    assert float((pose - rr).abs().max()) > 0.01
    turn = rotvec_to_matrix(torch.tensor([0.1, 0.4, -0.2]))
    res = evaluate_prediction({"turned": _TurnedZeroVelocity(rig, turn)}, tiny_ds, stride=25)["methods"]
    turned, still = res["turned"], res["zero_velocity"]
    assert torch.allclose(torch.tensor(turned["mpjpe_pose"]), torch.tensor(still["mpjpe_pose"]), atol=1e-6)
    assert all(t > s + 0.01 for t, s in zip(turned["mpjpe"], still["mpjpe"], strict=True))
    assert all(p > 0 for p in still["mpjpe_pose"])
    # the score by hand: zero velocity's error of the moving joints at each horizon, times their share
    every = tiny_ds.windows(50, 25, pad_short=False)
    w_rot, _ = reference_windows(tiny_ds, every, 50, 24, rig)
    frames = horizon_frames(HORIZONS_MS, tiny_ds.fps)
    gt = pose_positions(fk, w_rot[:, 25:])[:, frames]
    held_pose = pose_positions(fk, w_rot[:, 24:25])
    error = (gt - held_pose).norm(dim=-1)[..., moving].mean((0, 2)) * len(moving) / len(rig.parents)
    assert torch.allclose(error, torch.tensor(still["mpjpe_pose"], dtype=error.dtype), rtol=1e-4)


def test_the_horizons_scored_at_another_frame_rate_are_said(learn_files, tmp_path):
    """At 30 fps the frame nearest 80 ms is the second, 66.7 ms out: the result says which instants it scored."""
    from skelanim.data import MotionDataset

    ds = MotionDataset(learn_files[:2], fps=30.0, cache=tmp_path)
    res = evaluate_prediction({}, ds, methods=("zero_velocity",), rig=ds.rig, observed=30, horizon=30, stride=30)
    assert res["horizons_ms"] == list(HORIZONS_MS)
    assert res["horizons_ms_measured"] == pytest.approx([200 / 3, 500 / 3, 1000 / 3, 400, 1700 / 3, 1000])


def test_without_validation_the_score_is_named_for_training_windows_and_the_last_epoch_is_kept(tiny_ds, tmp_path):
    """With no validation windows (``--split none``), the per-epoch score is of training windows: it is not
    reported as validation, and ``--keep best`` (the default) keeps the last epoch instead of choosing by it."""
    from skelanim.nn.checkpoint import read_model_config

    notes: list[str] = []
    loop = TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    assert loop.keep == "best"
    result = train_predictor(tiny_ds, None, tmp_path / "m", arch="mlp", stride=25, loop=loop, log=notes.append)
    assert result["metric"] == "train_subset_mpjpe" and result["keep"] == "last"
    assert all("train_subset_mpjpe" in r and "val_mpjpe" not in r for r in result["history"])
    assert any("no validation windows" in n for n in notes)
    training = read_model_config(tmp_path / "m" / "config.json")["training"]
    assert training["loop"]["keep"] == "last" and training["validation"] == []
