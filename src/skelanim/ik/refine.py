r"""Refinement of the network's answer (``gat_refined``): a learned correction, then a position fit.

Two steps, after the network's forward pass:

1. **Pose correction** (:class:`PoseCorrector`). A ridge regression from the network's own output (the
   6D rotations of every joint it answers for but the body root, whose rotation is the body's world
   orientation, standardised) to a correction of each of those joints and the body root,
   a rotation vector ``r_j`` applied on the right, ``L_j <- L_j exp(g r_j)``. It is fitted in closed form
   (seconds) on the network's answers on its training poses: ``r_j = log(L_net,j^T L_true,j)``. It
   mostly moves what positions cannot show (neck and head, the twist of the upper arms and forearms, the
   toes) toward what the training poses do given the whole body's pose; a position fit cannot do this,
   the network's prior is all there is for those rotations. Joints can be left out (the shipped model's
   corrector leaves the hands as the network answers them: on the validation styles correcting them
   did not help the left hand and cost the right one 4 degrees). Its inputs are rotations, not
   positions, so it inherits the network's robustness; still, it was fitted on clean poses, so it is
   gated by the noise the bone lengths show: ``g = exp(-(sigma / NOISE_GATE)^2)`` with ``sigma`` from
   :func:`noise_sigma` (clean input: ``g = 1``; 1% of height: ``g ~ 0``).
2. **Position fit**: up to ``iterations`` Levenberg-Marquardt steps warm-started from the corrected
   rotations (:func:`skelanim.ik.classical.optimize_ik`), stopping once every joint is within
   :data:`REFINE_TOL` of height of its target, with a prior toward the corrected rotations weighted by
   the noise (:func:`refine_prior`): positions are fitted, the twist positions cannot see is kept.

Between the two, for **sequences** (``starts`` marks where each begins), noisy frames are smoothed over
time on the rotation manifold (:func:`skelanim.ops.smoothing.smooth_rotations`, Savitzky-Golay of
:data:`SMOOTH_WINDOW` frames at 30 fps, as many as span the same time at another rate, order
:data:`SMOOTH_ORDER`, within each sequence): each frame moves to its
smoothed rotations by ``1 - g`` (slerp), so clean input is left as it is and noisy input loses the
frame-to-frame jitter of the network's answer.

A model folder carries its corrector as ``refine.safetensors`` + ``refine.json`` beside ``model.safetensors``
(:func:`corrector_for`); without them step 1 is skipped. Fit one with
``skelanim ik fit-corrector [M] --data DIR ... --exclude ... --val ... [--skip JOINTS]`` (:func:`fit_corrector`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor

from skelanim.core.rotations import (
    quat_conjugate,
    quat_geodesic,
    quat_multiply,
    quat_normalize,
    quat_slerp,
    quat_to_rot6d,
    quat_to_rotvec,
    rotvec_to_quat,
)
from skelanim.errors import FormatError
from skelanim.ik.classical import optimize_ik
from skelanim.ik.frames import IKRig
from skelanim.io.atomic import atomic_open, atomic_path

if TYPE_CHECKING:
    from skelanim.ik.solve import IKModel

__all__ = ["CORRECTOR_CONFIG", "CORRECTOR_WEIGHTS", "NOISE_GATE", "REFINE_PRIOR", "REFINE_SPREAD", "REFINE_TOL",
           "PoseCorrector", "corrector_for", "noise_sigma", "refine", "refine_prior"]  # fmt: skip

#: The refinement stops once every joint is within this fraction of height of its target ...
REFINE_TOL = 2e-4
#: The refinement's prior: rotation deviations from the network of about this many radians are expected ...
REFINE_SPREAD = 0.1
#: ... and at least this weight keeps the twist that positions cannot show.
REFINE_PRIOR = 1e-5
#: Noise (fraction of height) at which the pose correction is down to ``exp(-1)`` of its size.
NOISE_GATE = 0.003
#: Savitzky-Golay window (frames, at :data:`SMOOTH_FPS`) and order of the temporal smoothing of noisy sequences.
SMOOTH_WINDOW = 7
SMOOTH_ORDER = 1
#: The frame rate :data:`SMOOTH_WINDOW` was chosen at (Bandai-Namco's, the validation styles'): at another rate the
#: window spans the same time, :func:`smooth_window`.
SMOOTH_FPS = 30.0
#: Ridge weight of the pose correction (on standardised features, chosen on the validation styles).
CORRECTOR_RIDGE = 100.0
CORRECTOR_WEIGHTS = "refine.safetensors"
CORRECTOR_CONFIG = "refine.json"


def noise_sigma(positions: Tensor, rig: IKRig) -> Tensor:
    """Per-frame estimate of Gaussian position noise, as a fraction of height, from the bone lengths.

    A bone between two points with independent noise ``sigma`` per axis changes length by about
    ``N(0, 2 sigma^2)``; the rig's rest offsets are the true lengths.

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` observed positions.
    rig : IKRig
        The skeleton.

    Returns
    -------
    Tensor
        ``(F,)`` sigma estimates (0 for exact input).
    """
    kids = [c for c in range(rig.num_joints) if rig.parents[c] >= 0 and not bool(rig.fixed[rig.parents[c]])]
    parents = [rig.parents[c] for c in kids]
    observed = (positions[:, kids] - positions[:, parents]).norm(dim=-1)
    stretch = (observed - rig.offsets[kids].norm(dim=-1).to(positions.dtype)) / rig.height
    return (stretch.square().mean(-1) / 2.0).sqrt()


def refine_prior(positions: Tensor, rig: IKRig) -> Tensor:
    """Per-frame prior weight of the position fit: ``w = max(sigma^2 / s^2, REFINE_PRIOR)``.

    With Gaussian position noise ``sigma`` (in heights, :func:`noise_sigma`) and deviations of the
    network's rotations of about ``s`` = :data:`REFINE_SPREAD` radians, ``w`` is the MAP weight of the LM
    prior. Clean input gets the floor: positions are fitted exactly, the twist stays the network's; noisy
    input keeps close to the network instead of fitting the noise.

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` observed positions.
    rig : IKRig
        The skeleton.

    Returns
    -------
    Tensor
        ``(F,)`` prior weights.
    """
    return (noise_sigma(positions, rig).square() / REFINE_SPREAD**2).clamp_min(REFINE_PRIOR)


@dataclass
class PoseCorrector:
    """Ridge regression from the network's rotations to a right-multiplied correction per joint.

    ``r = bias + ((rot6d(L[:, inputs]) - mean) / scale) @ weight``, reshaped ``(F, K, 3)``.

    Attributes
    ----------
    inputs : list of int
        The ``I`` joints whose rotations are read.
    joints : list of int
        The ``K`` joints corrected.
    mean, scale : Tensor
        ``(6I,)`` feature standardisation.
    weight : Tensor
        ``(6I, 3K)`` float64.
    bias : Tensor
        ``(3K,)`` the mean correction.
    info : dict
        Provenance (ridge weight, data, frames, time, validation numbers).
    """

    inputs: list[int]
    joints: list[int]
    mean: Tensor
    scale: Tensor
    weight: Tensor
    bias: Tensor
    info: dict[str, Any] = field(default_factory=dict)

    def features(self, quats: Tensor) -> Tensor:
        """``(F, J, 4)`` local quaternions -> ``(F, 6I)`` standardised features."""
        x = quat_to_rot6d(quats[:, self.inputs].to(torch.float64)).flatten(1)
        return (x - self.mean) / self.scale

    def correction(self, quats: Tensor) -> Tensor:
        """``(F, J, 4)`` local quaternions -> ``(F, K, 3)`` rotation vectors (radians)."""
        return (self.bias + self.features(quats) @ self.weight).unflatten(-1, (len(self.joints), 3))

    def __call__(self, quats: Tensor, gate: Tensor | float = 1.0) -> Tensor:
        """Corrected local quaternions ``(F, J, 4)``: ``L_j exp(gate * r_j)`` on :attr:`joints`.

        ``gate`` is a scalar or ``(F,)`` (0 leaves a frame unchanged).
        """
        quats = quats.to(torch.float64)
        gate = torch.as_tensor(gate, dtype=torch.float64).reshape(-1, 1, 1)
        out = quats.clone()
        out[:, self.joints] = quat_normalize(quat_multiply(quats[:, self.joints],
                                                           rotvec_to_quat(self.correction(quats) * gate)))  # fmt: skip
        return out

    @classmethod
    def fit(cls, predicted: Tensor, truth: Tensor, inputs: Sequence[int], joints: Sequence[int] | None = None, *,
            ridge: float = CORRECTOR_RIDGE, info: dict[str, Any] | None = None) -> PoseCorrector:  # fmt: skip
        """Closed-form ridge fit of ``log(predicted_j^T truth_j)`` on the standardised features.

        Parameters
        ----------
        predicted, truth : Tensor
            ``(N, J, 4)`` the network's and the true local quaternions of the same poses.
        inputs : sequence of int
            Joints read.
        joints : sequence of int, optional
            Joints corrected (default: ``inputs``).
        ridge : float
            Weight of ``|weight|^2`` (the intercept is not penalised).
        info : dict, optional
            Stored with the corrector.
        """
        inputs = [int(j) for j in inputs]
        joints = inputs if joints is None else [int(j) for j in joints]
        predicted, truth = predicted.to(torch.float64), truth.to(torch.float64)
        x = quat_to_rot6d(predicted[:, inputs]).flatten(1)
        y = quat_to_rotvec(quat_multiply(quat_conjugate(predicted[:, joints]), truth[:, joints])).flatten(1)
        mean, scale = x.mean(0), x.std(0).clamp_min(1e-6)
        xs = (x - mean) / scale
        bias = y.mean(0)
        gram = xs.T @ xs + ridge * torch.eye(xs.shape[1], dtype=xs.dtype)
        # contiguous, as it is after a save and load: the same memory layout gives the same products bit for bit
        weight = torch.linalg.solve(gram, xs.T @ (y - bias)).contiguous()
        return cls(
            inputs, joints, mean, scale, weight, bias, {"ridge": ridge, "frames": int(x.shape[0]), **(info or {})}
        )

    def save(self, folder: str | os.PathLike) -> None:
        """Write :data:`CORRECTOR_WEIGHTS` (float64 tensors) and :data:`CORRECTOR_CONFIG`, atomically."""
        folder = Path(folder)
        tensors = {"mean": self.mean, "scale": self.scale, "weight": self.weight, "bias": self.bias}
        with atomic_path(folder / CORRECTOR_WEIGHTS) as tmp:
            save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp))
        config = {"format": "skelanim-ik-refine", "inputs": self.inputs, "joints": self.joints, "noise_gate": NOISE_GATE, **self.info,
                  "tensors": {k: list(v.shape) for k, v in sorted(tensors.items())}}  # fmt: skip
        with atomic_open(folder / CORRECTOR_CONFIG) as handle:
            json.dump(config, handle, indent=1)
            handle.write("\n")

    @classmethod
    def load(cls, folder: str | os.PathLike) -> PoseCorrector | None:
        """Read a folder's corrector (``None`` when it has none).

        Raises
        ------
        FormatError
            A corrupt or mismatched pair of files.
        """
        folder = Path(folder)
        wpath, cpath = folder / CORRECTOR_WEIGHTS, folder / CORRECTOR_CONFIG
        if not wpath.is_file() and not cpath.is_file():
            return None
        for present, missing in ((wpath, cpath), (cpath, wpath)):  # one of the pair: the other is missing, not corrupt
            if present.is_file() and not missing.is_file():
                raise FormatError(f"{missing.name} is missing beside {present.name} (the refinement is the pair)",
                                  path=folder)  # fmt: skip
        try:
            config = json.loads(cpath.read_text(encoding="utf-8"))
            tensors = load_file(str(wpath))
            inputs, joints = [int(j) for j in config["inputs"]], [int(j) for j in config["joints"]]
            i, k = len(inputs), len(joints)
            shapes = {"bias": [3 * k], "mean": [6 * i], "scale": [6 * i], "weight": [6 * i, 3 * k]}
            if config.get("format") != "skelanim-ik-refine" or {n: list(t.shape) for n, t in tensors.items()} != shapes:
                raise ValueError("tensor names or shapes do not match the joints")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, SafetensorError, KeyError, TypeError,
                ValueError) as err:  # fmt: skip
            raise FormatError(f"corrupt refinement files: {err}".splitlines()[0], path=folder) from None
        info = {n: v for n, v in config.items() if n not in ("format", "inputs", "joints", "tensors", "noise_gate")}
        return cls(inputs, joints, tensors["mean"], tensors["scale"], tensors["weight"], tensors["bias"], info)


_CORRECTORS: dict[tuple[str, int], PoseCorrector | None] = {}


def corrector_for(model: IKModel) -> PoseCorrector | None:
    """The corrector stored beside ``model``'s weights (cached per folder and file time), else ``None``."""
    if model.path is None:
        return None
    path = Path(model.path) / CORRECTOR_WEIGHTS
    key = (str(path.resolve()), path.stat().st_mtime_ns if path.is_file() else 0)
    if key not in _CORRECTORS:
        corrector = PoseCorrector.load(model.path)
        if corrector is not None and max(corrector.inputs + corrector.joints) >= model.rig.num_joints:
            raise FormatError("refinement files do not fit the model's skeleton", path=model.path)
        _CORRECTORS[key] = corrector
    return _CORRECTORS[key]


def smooth_window(fps: float | None) -> int:
    """The smoothing window in frames at ``fps``: the odd count spanning :data:`SMOOTH_WINDOW` frames of
    :data:`SMOOTH_FPS` (7 at 25 or 30 fps, 15 at 60, 29 at 120, 3 at 10 or less); ``None``: :data:`SMOOTH_WINDOW`."""
    from skelanim.ops.filters import default_savgol_window

    if fps is None:
        return SMOOTH_WINDOW
    return default_savgol_window(fps, polyorder=SMOOTH_ORDER, seconds=SMOOTH_WINDOW / SMOOTH_FPS)


def smooth_sequences(quats: Tensor, starts: Tensor | None, weight: Tensor, *, fps: float | None = None) -> Tensor:
    """Move each frame toward its sequence's smoothed rotations by ``weight`` (slerp).

    Parameters
    ----------
    quats : Tensor
        ``(F, J, 4)`` local quaternions.
    starts : Tensor or None
        ``(F,)`` bool, true where a sequence starts (``None``: one sequence).
    weight : Tensor
        ``(F,)`` in [0, 1]; 0 keeps a frame.
    fps : float, optional
        The frames' rate, for the window (:func:`smooth_window`; default: :data:`SMOOTH_FPS`'s).

    Returns
    -------
    Tensor
        ``(F, J, 4)``.
    """
    from skelanim.ops.smoothing import smooth_rotations

    window = smooth_window(fps)
    f = quats.shape[0]
    starts = torch.zeros(f, dtype=torch.bool) if starts is None else starts.clone().to(torch.bool)
    starts[0] = True
    first = torch.nonzero(starts)[:, 0]
    lengths = torch.diff(torch.cat([first, torch.tensor([f])]))
    smoothed = quats.clone()
    for length in lengths.unique().tolist():
        heads = first[lengths == length]
        idx = heads[None, :] + torch.arange(length)[:, None]  # (L, runs): sequences side by side, frames first
        smoothed[idx] = smooth_rotations(quats[idx], method="savgol", window=window, polyorder=SMOOTH_ORDER)
    return quat_slerp(quats, smoothed, weight.to(quats.dtype)[:, None])


def refine(
    positions: Tensor,
    model: IKModel,
    quats: Tensor,
    *,
    starts: Tensor | None = None,
    iterations: int = 10,
    corrector: PoseCorrector | None | bool = True,
    fps: float | None = None,
) -> tuple[Tensor, Tensor]:
    """``gat_refined``: correct the network's rotations, then fit positions (see the module docstring).

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` float64 checked positions.
    model : IKModel
        Gives the rig (and, with ``corrector=True``, the corrector stored beside its weights).
    quats : Tensor
        ``(F, J, 4)`` the network's local quaternions for ``positions``.
    starts : Tensor, optional
        ``(F,)`` bool, where a new sequence starts (default: frame 0 only, one sequence).
    iterations : int
        Most LM steps.
    corrector : PoseCorrector, None or bool
        ``True``: the model's own (:func:`corrector_for`); ``None``/``False``: no correction.
    fps : float, optional
        The frames' rate: the smoothing spans the same time at any rate (:func:`smooth_window`; default: the rate
        it was chosen at, :data:`SMOOTH_FPS`).

    Returns
    -------
    tuple of Tensor
        ``(F, J, 4)`` local quaternions, ``(F, J, 3)`` local translations.
    """
    rig = model.rig
    chosen = corrector_for(model) if corrector is True else corrector or None
    gate = torch.exp(-(noise_sigma(positions, rig) / NOISE_GATE).square())
    if chosen is not None:
        quats = chosen(quats, gate)
    if quats.shape[0] > 1 and bool((gate < 0.999).any()):
        quats = smooth_sequences(quats.to(torch.float64), starts, 1.0 - gate, fps=fps)
    return optimize_ik(positions, rig, quats, iterations=iterations, prior=refine_prior(positions, rig), tol=REFINE_TOL)


def fit_corrector(
    model: IKModel,
    data: Sequence[str],
    *,
    val: Sequence[str] = (),
    exclude: Sequence[str] = (),
    skip: Sequence[str] = (),
    ridge: float = CORRECTOR_RIDGE,
    progress: bool = True,
) -> PoseCorrector:
    """Fit a :class:`PoseCorrector` for ``model`` on the training files of ``data`` (split as in training:
    ``exclude`` dropped, ``val`` held for the report in ``info["validation"]``, but a lone file, which training keeps
    for validation, fitted on); it reads every joint the
    model answers for but the body root (whose local rotation is the body's world orientation, so the correction
    turns with the input as the network's answer does) and corrects all but the joints named in ``skip``.
    ``progress``: a bar on stderr for each pass of the network over the poses."""
    from tqdm import tqdm

    from skelanim.ik.data import checked_split, load_motions, pose_set

    started = time.perf_counter()
    rig = model.rig
    answered = [j for j in rig.evaluated if not bool(rig.fixed[j])]
    # a body root's local rotation is the body's world orientation: read, it would tie the correction to the
    # heading and up axis of the training captures (the network's answer turns exactly with its input)
    inputs = [j for j in answered if rig.parents[j] >= 0 and not bool(rig.fixed[rig.parents[j]])]
    unknown = [n for n in skip if n not in rig.skeleton.names]
    if unknown:
        raise ValueError(f"--skip: no joint {unknown[0]!r} in the model's skeleton ({', '.join(rig.skeleton.names)})")
    train_files, val_files = checked_split(data, val=val, exclude=exclude, purpose="fit on", need_val=False)
    joints = [j for j in answered if rig.skeleton.names[j] not in skip]

    def answers(files: list[Path], what: str) -> tuple[Tensor, Tensor]:
        poses = pose_set(load_motions(files), rig, files)
        chunks = range(0, len(poses), 4096)
        pred = [
            model.predict(poses.positions[i : i + 4096], runtime="torch") for i in tqdm(chunks, desc=what, leave=False, disable=not progress)
        ]
        return torch.cat(pred), poses.local

    predicted, truth = answers(train_files, "network on training poses")
    info: dict[str, Any] = {"data": [str(d) for d in data], "val": list(val), "exclude": list(exclude),
                            "skip": list(skip), "train_files": len(train_files)}  # fmt: skip
    corrector = PoseCorrector.fit(predicted, truth, inputs, joints, ridge=ridge, info=info)
    if val_files:
        vp, vt = answers(val_files, "network on validation poses")
        before = float(quat_geodesic(vp, vt)[:, answered].mean().rad2deg())
        after = float(quat_geodesic(corrector(vp), vt)[:, answered].mean().rad2deg())
        corrector.info["validation"] = {"files": len(val_files), "frames": int(vp.shape[0]),
                                        "local_deg_network": before, "local_deg_corrected": after}  # fmt: skip
    corrector.info["seconds"] = round(time.perf_counter() - started, 1)
    return corrector
