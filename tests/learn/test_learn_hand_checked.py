"""Hand-checked values for the learning features (closed forms, not recorded outputs)."""

from __future__ import annotations

import pytest
import torch

from skelanim.learn.joints import IN_CHANNELS, resample_features


@pytest.mark.parametrize(("length", "frames"), [(33, 17), (17, 33), (21, 11)])
def test_resample_scales_every_rate_channel_by_the_speed(length, frames):
    """A window of steady motion: joint position channel 0 moves 0.1 a frame (its change, channel 3, reads 0.1),
    the root steps 0.1 along and 0.05 across and turns 0.02 rad a frame (channels 12-14), the pelvis height
    (15) and the rotation (6-11) stay. Read at (L - 1) / (frames - 1) times the speed, every per-frame change,
    the turning rate too, scales by that factor (and equals the resampled position's own step); the rest does not."""
    x = torch.zeros(2, length, 3, IN_CHANNELS, dtype=torch.float64)
    t = torch.arange(length, dtype=torch.float64)
    x[..., 0] = 0.1 * t[:, None]
    rates = {3: 0.1, 4: -0.03, 5: 0.07, 12: 0.1, 13: 0.05, 14: 0.02}
    for ch, v in rates.items():
        x[..., ch] = v
    x[..., 6] = x[..., 10] = 1.0
    x[..., 15] = 0.9
    y = resample_features(x, frames)
    speed = (length - 1) / (frames - 1)
    assert y.shape == (2, frames, 3, IN_CHANNELS)
    for ch, v in rates.items():
        assert torch.allclose(y[..., ch], torch.full_like(y[..., ch], v * speed), atol=1e-12), ch
    assert torch.allclose(y[:, 1:, :, 0] - y[:, :-1, :, 0], y[:, 1:, :, 3], atol=1e-12)
    assert torch.allclose(y[..., 0], 0.1 * speed * torch.arange(frames, dtype=torch.float64)[:, None], atol=1e-12)
    for ch, v in {6: 1.0, 10: 1.0, 15: 0.9, 7: 0.0}.items():
        assert torch.allclose(y[..., ch], torch.full_like(y[..., ch], v), atol=1e-12), ch
