"""``data.features.gait_phase`` on hand-built gaits: an inverted pendulum, a spring, and a body standing still."""

from __future__ import annotations

import math

import pytest
import torch

from skelanim.data.features import gait_phase

F64 = torch.float64


def _gait(frames: int, *, running: bool, up: int = 1, bounce: float = 0.02, drift: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Pelvis and two feet of a gait along the forward axis, a step every 10 frames: each foot plants in turn,
    the pelvis passes over it mid-step. The pelvis is highest over the foot (``running=False``: vaulting over a
    stiff leg) or lowest there (``running=True``: a compressed spring); ``drift`` adds a slow rise."""
    a, b = (up + 1) % 3, (up + 2) % 3
    t = torch.arange(frames, dtype=F64)
    step = 10.0
    phase = (t % step) / step  # 0 at a foot plant, 0.5 over the foot
    over = torch.cos(2 * math.pi * (phase - 0.5))  # 1 over the planted foot, -1 at the plants
    pelvis = torch.zeros(frames, 3, dtype=F64)
    pelvis[:, a] = 0.05 * t
    pelvis[:, b] = 0.01
    pelvis[:, up] = 0.9 + (-bounce if running else bounce) * over + drift * t
    planted = 0.05 * (torch.floor(t / step) * step + step / 2)  # where the pelvis is mid-step
    feet = torch.zeros(frames, 2, 3, dtype=F64)
    stance = (torch.floor(t / step) % 2).long()  # which foot supports
    feet[torch.arange(frames), stance, a] = planted
    feet[torch.arange(frames), 1 - stance, a] = planted + 0.2
    feet[torch.arange(frames), 1 - stance, up] = 0.1  # the swing foot is up
    feet[..., b] = torch.tensor([0.1, -0.1], dtype=F64)
    return pelvis, feet


@pytest.mark.parametrize("up", [1, 2])
def test_a_vaulting_gait_reads_negative_and_a_springing_one_positive(up):
    """Highest over the supporting foot: the correlation with the distance to it is -1 (a walk); lowest: about +1."""
    for running, sign in ((False, -1.0), (True, 1.0)):
        pelvis, feet = _gait(64, running=running, up=up)
        out = gait_phase(pelvis, feet, [0, 1], up=up, height=1.0)
        assert out.shape == (64, 1)
        assert torch.all(out == out[0])  # one value per window
        assert sign * float(out[0, 0]) > 0.85, (running, float(out[0, 0]))


def test_a_slow_rise_and_the_height_unit_do_not_change_it():
    """Detrended by a line, and a ratio of lengths: the same window climbing a ramp, or in centimetres, reads the same."""
    pelvis, feet = _gait(64, running=True)
    plain = gait_phase(pelvis, feet, [0, 1], up=1, height=1.0)
    climbing = pelvis.clone()
    climbing[:, 1] += 0.004 * torch.arange(64, dtype=F64)
    assert torch.allclose(gait_phase(climbing, feet, [0, 1], up=1, height=1.0), plain, atol=1e-9)
    assert torch.allclose(gait_phase(pelvis * 100, feet * 100, [0, 1], up=1, height=100.0), plain, atol=1e-9)


def test_standing_still_reads_zero_and_a_batch_reads_each_window():
    """No bounce and no stepping: 0 (the floor), not the correlation of rounding noise; batched windows each their own."""
    pelvis = torch.zeros(32, 3, dtype=F64)
    pelvis[:, 1] = 0.9 + 1e-9 * torch.randn(32, dtype=F64)
    feet = torch.tensor([[0.1, 0.0, 0.05], [-0.1, 0.0, -0.05]], dtype=F64).expand(32, 2, 3).clone()
    assert abs(float(gait_phase(pelvis, feet, [0, 1], up=1, height=1.0)[0, 0])) < 1e-4
    walk, walk_feet = _gait(64, running=False)
    run, run_feet = _gait(64, running=True)
    both = gait_phase(torch.stack([walk, run]), torch.stack([walk_feet, run_feet]), [0, 1], up=1, height=1.0)
    assert both.shape == (2, 64, 1)
    assert float(both[0, 0, 0]) < -0.85 and float(both[1, 0, 0]) > 0.85
