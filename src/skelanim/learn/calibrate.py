"""Calibrations of a trained predictor on its training data, which change what the network is asked, not its
weights (:class:`~skelanim.learn.predict.Predictor`): the amplitude reference of amplitude normalisation and the
input range that guards against input unlike any training window. ``skelanim learn predict calibrate`` sets
both; training sets the input range (and the reference with ``--amplitude-norm``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from skelanim.data.dataset import MotionDataset
from skelanim.learn.common import spread_sample
from skelanim.learn.predictors import window_amplitude

if TYPE_CHECKING:
    from skelanim.learn.predict import Predictor

__all__ = ["MARGIN", "calibrate_amplitude", "calibrate_input_range", "median_amplitude"]

#: How far beyond the training range (as a fraction of its width, on each side) the input range reaches.
MARGIN = 0.25


def median_amplitude(model: Predictor, vectors: Tensor) -> float:
    """The median :func:`~skelanim.learn.predictors.window_amplitude` of the standardised observed frames of raw
    window vectors ``(W, T, D)``."""
    return float(window_amplitude(model.norm(vectors[:, : model.observed]))[1].median())


@torch.no_grad()
def calibrate_amplitude(model: Predictor, ds: MotionDataset, *, stride: int = 4) -> float:
    """Turn on amplitude normalisation of a trained predictor (:class:`~skelanim.learn.predict.Predictor`): set its
    ``amplitude_reference`` to the median amplitude of ``ds``'s windows (its training data; the windows and
    sample its normalisation statistics were computed from, given the training ``stride``). Returns the value."""
    windows = ds.windows(model.observed + model.horizon, stride, pad_short=False)
    if not len(windows):
        raise ValueError(f"no clip is {model.observed + model.horizon} frames long; nothing to calibrate on")
    model.amplitude_reference = median_amplitude(model, model.window_vectors(ds, spread_sample(windows, 2000)))
    return model.amplitude_reference


@torch.no_grad()
def calibrate_input_range(
    model: Predictor, ds: MotionDataset, *, stride: int = 4, mirror: bool = True, margin: float = MARGIN
) -> tuple[Tensor, Tensor]:
    """Set a trained predictor's input range (:class:`~skelanim.learn.predict.Predictor`'s ``input_low`` /
    ``input_high``): the smallest and largest standardised value of each channel over every frame of ``ds``'s
    windows (its training data, at the training ``stride``, and their mirror images if it was trained with
    ``mirror``), widened on each side by ``margin`` times their difference, so that the tails of motion like
    the training data's pass and only input unlike it is held. Returns ``(low, high)``, each ``(D,)``."""
    windows = ds.windows(model.observed + model.horizon, stride, pad_short=False)
    if not len(windows):
        raise ValueError(f"no clip is {model.observed + model.horizon} frames long; nothing to calibrate on")
    flip = model.frame_mirror() if mirror else None  # (index, sign)
    low = torch.full_like(model.input_low, torch.inf)
    high = torch.full_like(model.input_high, -torch.inf)
    for i in range(0, len(windows), 512):
        x = model.window_vectors(ds, windows[i : i + 512])
        for seen in (x, x[..., flip[0]] * flip[1]) if flip is not None else (x,):
            z = model.norm(seen).flatten(0, 1)
            low, high = torch.minimum(low, z.amin(0)), torch.maximum(high, z.amax(0))
    low, high = low - margin * (high - low), high + margin * (high - low)
    model.input_low.copy_(low)
    model.input_high.copy_(high)
    return low, high
