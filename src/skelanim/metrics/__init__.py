"""skelanim.metrics: numbers that judge motion, one implementation each, reused by IK, retargeting, learning and
the CLI (``skelanim evaluate``).

* :mod:`~skelanim.metrics.kinematic`: MPJPE and mean angle error (at horizons), jerk, foot skating, ground
  penetration, bone-length error, on arrays;
* :mod:`~skelanim.metrics.distribution`: FID, diversity, multimodality, accuracy and votes, on features given;
* :mod:`~skelanim.metrics.gait`: cadence, stride, speed, stance and flexion curves of a walk;
* :mod:`~skelanim.metrics.compare`: all of them for two sets of motions.
"""

from typing import TYPE_CHECKING

from skelanim.metrics import compare, distribution, gait, kinematic
from skelanim.metrics.compare import compare_sets, set_summary
from skelanim.metrics.distribution import accuracy, diversity, fid, frechet_distance, multimodality, vote
from skelanim.metrics.gait import GaitReport, gait_analysis
from skelanim.metrics.kinematic import (
    angle_error,
    angle_error_at,
    bone_length_error,
    foot_skating,
    ground_penetration,
    jerk,
    mpjpe,
    mpjpe_at,
)

__all__ = [
    "GaitReport", "accuracy", "angle_error", "angle_error_at", "bone_length_error", "compare", "compare_sets",
    "distribution", "diversity", "fid", "foot_skating", "frechet_distance", "gait", "gait_analysis",
    "ground_penetration", "jerk", "kinematic", "mpjpe", "mpjpe_at", "multimodality", "set_summary", "vote",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.metrics.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
