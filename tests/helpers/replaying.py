"""A generator made to 'sample' real windows (tests of the generation metrics against a perfect model)."""

from __future__ import annotations

from typing import Any

import torch


def replaying(gen: Any, ds: Any, windows: torch.Tensor) -> Any:
    """``gen`` (a :class:`skelanim.learn.generate.Generator`) made to 'sample' the given real windows of ``ds`` (a
    :class:`skelanim.data.MotionDataset`) in turn (their raw frame vectors, as a perfect model would draw them),
    whatever content and style is asked for."""
    g = ds.gather(windows, gen.length, keys=("rot", "pelvis", "yaw"))
    vectors = gen.to_vectors(g["rot"].double(), g["pelvis"].double(), g["yaw"].double()).float()
    drawn = [0]

    def sample(contents, styles, generator=None):
        start = drawn[0]
        drawn[0] += len(contents)
        return vectors[torch.arange(start, start + len(contents)) % len(vectors)]

    gen.sample = sample
    return gen
