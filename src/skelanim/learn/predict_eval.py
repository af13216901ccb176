"""Scoring predictors and baselines on a dataset's windows (:func:`evaluate_prediction`): MPJPE at the horizons of
:data:`~skelanim.learn.predict.HORIZONS_MS` root-relative (``mpjpe``), pose only (``mpjpe_pose``,
:func:`pose_positions`), with root motion (``mpjpe_global``), and the mean angle error (``angle_deg``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.data.dataset import MotionDataset
from skelanim.data.rig import Rig
from skelanim.learn.common import require_rig_up, rig_fk
from skelanim.learn.predict import (
    BASELINES,
    HORIZONS_MS,
    SECOND_FRAMES,
    CombinedPredictor,
    Predictor,
    reference_windows,
)
from skelanim.learn.predictors import constant_velocity, zero_velocity
from skelanim.metrics.kinematic import angle_error_at, horizon_frames, mpjpe_at

__all__ = ["evaluate_prediction", "pose_positions"]


def pose_positions(fk: nn.Module, rot: Tensor) -> Tensor:
    """Positions ``(..., T, M, 3)`` of every joint from rotations ``(..., T, M, 3, 3)`` with the body root at the
    origin and its rotation set to the identity: what :func:`evaluate_prediction` scores as ``mpjpe_pose``.
    The body root and its children stay where the rest pose puts them, so they count at zero error in the
    mean, as in Mao et al.'s H3.6M test (``main_3d.py``, ``test``: the mean over all 32 joints, those the
    protocol holds still copied from the ground truth) and siMLPe's."""
    local = torch.cat([torch.eye(3, dtype=rot.dtype).expand_as(rot[..., :1, :, :]), rot[..., 1:, :, :]], dim=-3)
    return fk(local, torch.zeros(rot.shape[:-3] + (3,), dtype=rot.dtype))[1]


@torch.no_grad()
def evaluate_prediction(models: dict[str, Predictor | CombinedPredictor], ds: MotionDataset, *,
                        methods: Sequence[str] | None = None,
                        stride: int = 10, windows: Tensor | None = None, rig: Rig | None = None,
                        observed: int = SECOND_FRAMES, horizon: int = SECOND_FRAMES, fps: float | None = None) -> dict[str, Any]:  # fmt: skip
    """Scores of predictors and baselines at :data:`HORIZONS_MS`.

    Parameters
    ----------
    models : dict of str to Predictor or CombinedPredictor
        Learned predictors by method name (``"rnn"``, ``"gcn"``, ``"combined"``); their rig and lengths are used.
    ds : MotionDataset
        Test clips (at the models' fps).
    methods : sequence of str, optional
        Methods to score, learned ones named in ``models`` (default: every model, then the baselines).
    stride : int
        Window stride.
    windows : Tensor, optional
        ``(W, 2)`` windows (default: every ``stride`` frames over clips long enough).
    rig : Rig, optional
        Needed when ``models`` is empty.
    observed, horizon : int
        Used when ``models`` is empty.
    fps : float, optional
        Default ``ds.fps``.

    Returns
    -------
    dict
        ``{"horizons_ms": [...], "horizons_ms_measured": [...], "methods": {name: {"mpjpe", "mpjpe_pose",
        "mpjpe_global", "angle_deg"}}, "windows": W}``: the horizons asked for and the instants of the frames
        scored for them (the same at 25 fps; at 30 fps 80 ms is the second frame, 66.7 ms out).
    """
    first = next(iter(models.values()), None)
    if first is not None:
        rig, observed, horizon = first.rig, first.observed, first.horizon
    if rig is None:
        raise ValueError("evaluate_prediction needs a rig when no model is given")
    require_rig_up(ds, rig, "predictor")
    fps = fps or ds.fps
    methods = [*models, *BASELINES] if methods is None else methods
    length = observed + horizon
    if windows is None:
        windows = ds.windows(length, stride, pad_short=False)
    fk = rig_fk(rig)
    measured = [(k + 1) * 1000.0 / fps for k in horizon_frames(HORIZONS_MS, fps)]  # the frames scored, in ms
    result: dict[str, Any] = {"horizons_ms": list(HORIZONS_MS), "horizons_ms_measured": measured, "methods": {},
                              "windows": len(windows)}  # fmt: skip
    sums: dict[str, dict[str, Tensor]] = {}
    for i in range(0, len(windows), 256):
        rot, pelvis = reference_windows(ds, windows[i : i + 256], length, observed - 1, rig)
        obs_rot, obs_pel = rot[:, :observed], pelvis[:, :observed]
        gt_rot, gt_pel = rot[:, observed:], pelvis[:, observed:]
        zero = torch.zeros_like(gt_pel)
        _, gt_rr = fk(gt_rot, zero)
        gt_glob = gt_rr + gt_pel[..., None, :]
        gt_pose = pose_positions(fk, gt_rot)
        for name in methods:
            if name == "zero_velocity":
                p_rot, p_pel = zero_velocity(obs_rot, obs_pel, horizon)
            elif name == "constant_velocity":
                p_rot, p_pel = constant_velocity(obs_rot, obs_pel, horizon)
            elif name in models:
                p_rot, p_pel = models[name].predict(obs_rot, obs_pel)
            else:
                raise ValueError(f"no model for method {name!r}")
            _, rr = fk(p_rot, zero)
            n = float(rot.shape[0])
            acc = sums.setdefault(name, {})
            for key, value in (("mpjpe", mpjpe_at(rr, gt_rr, HORIZONS_MS, fps)),
                               ("mpjpe_pose", mpjpe_at(pose_positions(fk, p_rot), gt_pose, HORIZONS_MS, fps)),
                               ("mpjpe_global", mpjpe_at(rr + p_pel[..., None, :], gt_glob, HORIZONS_MS, fps)),
                               ("angle_deg", angle_error_at(p_rot, gt_rot, HORIZONS_MS, fps))):  # fmt: skip
                acc[key] = acc.get(key, torch.zeros(len(HORIZONS_MS), dtype=torch.float64)) + n * torch.tensor(value)
    total = float(len(windows))
    for name, acc in sums.items():
        result["methods"][name] = {k: (v / total).tolist() for k, v in acc.items()}
    return result
