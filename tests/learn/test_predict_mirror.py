"""Left/right mirror of prediction frames on a rig whose joints have their own rest axes, and the
half-period (mirrored) continuation the predictors can use as a prior."""

from __future__ import annotations

import pytest
import torch

from skelanim.learn.mirror import mirror_frames, rig_mirror, vector_mirror
from skelanim.learn.predict import Predictor, PredictTask, reference_windows
from skelanim.learn.predictors import (
    DCTGCN,
    Seq2SeqGRU,
    frames_to_vectors,
    periodic_continuation,
    vectors_to_frames,
)


def _half_cycle_motion(frames: int, half: int) -> torch.Tensor:
    """``(1, frames, 3)``: two channels that trade places every half cycle (a left and a right leg) and a
    steady drift (the travel), so ``x[t + half] = m(x[t]) + drift`` for the swap ``m``."""
    t = torch.arange(frames, dtype=torch.float64)
    w = torch.pi / half
    return torch.stack([torch.sin(w * t), torch.sin(w * (t + half)), 0.01 * t], -1)[None]


def test_half_period_continuation_repeats_the_mirrored_half_cycle():
    """A 28-frame cycle cannot be seen twice in 25 frames, but its mirrored half can: the continuation is
    exact over more than two half cycles, in raw and in standardised (affine) coordinates."""
    motion = _half_cycle_motion(60, 14)
    swap = (torch.tensor([1, 0, 2]), torch.ones(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))
    future = periodic_continuation(motion[:, :25], 35, mirror=swap)
    assert torch.allclose(future[0], motion[0, 25:], atol=1e-9)
    plain = periodic_continuation(motion[:, :25], 35)
    assert float((plain[0] - motion[0, 25:]).abs().max()) > 0.1  # the full cycle alone is not found
    mean, std = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64), torch.tensor([0.5, 2.0, 0.7], dtype=torch.float64)
    index, sign = swap[0], swap[1]
    affine = (index, sign * std[index] / std, (sign * mean[index] - mean) / std)  # as Predictor.standardised_mirror
    z = periodic_continuation((motion[:, :25] - mean) / std, 35, mirror=affine)
    assert torch.allclose(z * std + mean, motion[:, 25:], atol=1e-9)


def test_rig_mirror_keeps_real_motion_real_with_the_mean_pose(tiny_ds):
    """On the Bandai rig a bone lies along one local axis, so two reflections fit its offsets; the wrong one
    turns the mirrored joint half a turn about the bone. Positions cannot tell (FK is exact either way); the
    mean pose can: mirrored real windows then keep the data's mean rotations."""
    from skelanim.learn.common import rig_fk

    rig = tiny_ds.rig
    rot, pelvis = reference_windows(tiny_ds, tiny_ds.windows(50, 10, pad_short=False), 50, 24, rig)
    rot, pelvis = rot.float(), pelvis.float()
    vectors = frames_to_vectors(rot, pelvis)
    mean_pose = vectors_to_frames(vectors.mean((0, 1)))[0]
    fk = rig_fk(rig)
    flip = torch.ones(3)
    gaps = {}
    for name, reference in (("offsets only", None), ("mean pose", mean_pose)):
        perm, left, right, lateral = rig_mirror(rig, reference)
        flip[lateral] = -1.0
        m_rot, m_pel = mirror_frames(rot, pelvis, perm, left, right, lateral)
        assert float((fk(m_rot, m_pel)[1] - (fk(rot, pelvis)[1] * flip)[..., perm, :]).norm(dim=-1).max()) < 1e-3
        mirrored = frames_to_vectors(m_rot, m_pel)
        gaps[name] = float((mirrored.mean((0, 1)) - vectors.mean((0, 1)))[:-3].abs().max())
        index, sign = vector_mirror(rig, reference)  # the same mirror as a signed permutation of the vectors
        assert torch.equal(vectors[..., index] * sign, mirrored)
    assert gaps["mean pose"] < 0.3 and gaps["offsets only"] > 1.0, gaps


def test_predictor_standardised_mirror_commutes_with_the_normaliser(tiny_ds):
    model = Predictor("gcn", tiny_ds.rig, observed=10, horizon=10,
                      arch_options={"hidden": 8, "blocks": 1, "pad": "periodic", "half_period": True})  # fmt: skip
    PredictTask(model, tiny_ds, None, stride=10)  # sets the normaliser from the data
    x = frames_to_vectors(*reference_windows(tiny_ds, tiny_ds.windows(20, 10, pad_short=False)[:4], 20, 9, tiny_ds.rig))
    index, scale, shift = model.standardised_mirror()
    m_index, sign = vector_mirror(model.rig, model.mean_pose())
    assert torch.allclose(model.norm(x.float()[..., m_index] * sign.float()), model.norm(x.float())[..., index] * scale + shift,
                          atol=1e-4)  # fmt: skip
    out = model(x.float()[:, :10])
    assert out.shape == (4, 20, x.shape[-1]) and torch.isfinite(out).all()
    model.norm.set(model.norm.mean + 0.1, 2.0 * model.norm.std)  # new statistics: the cached mirror is remade
    index, scale, shift = model.standardised_mirror()
    m_index, sign = vector_mirror(model.rig, model.mean_pose())
    assert torch.allclose(model.norm(x.float()[..., m_index] * sign.float()), model.norm(x.float())[..., index] * scale + shift,
                          atol=1e-4)  # fmt: skip


@pytest.mark.parametrize("net", [Seq2SeqGRU(3, hidden=8, anchor=True, half_period=True),
                                 DCTGCN(3, observed=25, horizon=5, hidden=8, blocks=1, pad="periodic", half_period=True)])  # fmt: skip
def test_half_period_networks_need_the_mirror(net):
    x = _half_cycle_motion(25, 14).float()
    args = (5, torch.ones(3)) if isinstance(net, Seq2SeqGRU) else (5,)
    with pytest.raises(ValueError, match="mirror"):
        net(x, *args)
    swap = (torch.tensor([1, 0, 2]), torch.ones(3), torch.zeros(3))
    assert torch.isfinite(net(x, *args, swap)).all()
