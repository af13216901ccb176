"""Motion prediction: given 1 s of motion, the next 1 s. The model, its training and its evaluation
(continuing a motion file: :func:`skelanim.learn.forecast.predict_motion`).

Windows of ``observed + horizon`` frames (25 + 25 at 25 fps) are expressed relative to their last observed
frame (:func:`skelanim.data.features.to_reference_frame`). The learned predictors
(:mod:`skelanim.learn.predictors`) are trained with the shared loop (:func:`skelanim.nn.fit`) on::

    L = mean_t w_t |FK(R) - FK(R*)|  +  g mean_t w_t |FK(R, p) - FK(R*, p*)|  +  0.05 mean |x - x*|
        [ + v mean_t w_t |ΔFK(R) - ΔFK(R*)| ]

root-relative and global joint position errors (FK on the rig's rest offsets, heights; future frame ``k``
weighted by ``w_k ~ (k + 1)^-1/2``, mean 1, so the short horizons count; ``g = global_weight``, 1 by
default, 0.3 for the shipped models) and the standardised frame vectors; optionally (``velocity_weight`` ``v``,
0 by default) the error of each frame's root-relative joint change from the frame before. Optional augmentations of the
training windows (both off by default, both in the shipped recipes): playback at a random speed
(``speed``) and left/right mirroring of half the windows (``mirror``: :func:`~skelanim.learn.mirror.rig_mirror`
with :meth:`Predictor.mean_pose` + :func:`~skelanim.learn.mirror.mirror_frames`, which respect the rig's
per-joint rest axes). Model selection by the mean root-relative error over the horizons on the validation
part, or the last epoch.

Three inference options change what a trained network is asked, not its weights (all on in the shipped
models): amplitude normalisation (``Predictor.amplitude_reference``, :func:`~skelanim.learn.calibrate.calibrate_amplitude`) enlarges an
observed second that moves less than the training windows' median to that size about its mean frame and
shrinks the prediction back; ``Predictor.test_mirror`` averages the prediction with the mirrored-back
prediction of the mirror image; the input range guards against input unlike any training window (motion of another
capture source retargeted onto the rig, whose joints share rotation differently): each standardised channel is
held inside the range the training windows span (:func:`~skelanim.learn.calibrate.calibrate_input_range`, stored with the weights) and
the prediction shifted back by what that moved the last observed frame.

Scores (:func:`evaluate_prediction`): MPJPE at the horizons root-relative (``mpjpe``: pelvis at the origin
in every frame, so the body's travel is removed; the body's rotation relative to the last observed heading
is kept; the body root, at zero error, counts as one of the joints), pose only (``mpjpe_pose``: the body
root's translation *and* rotation removed in every frame, Mao et al. 2019's protocol: their code zeroes the
global translation and rotation before FK and its test averages over every joint, those this holds still, the
body root and its children here, at zero error) and with root motion (``mpjpe_global``), all as fractions of the rig height, and the mean angle
error of the joint rotations (``angle_deg``; the body root's rotation relative to the reference heading
counts as one of them). The ``combined`` method
(:class:`CombinedPredictor`) averages the learned predictors' frame vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from skelanim.core.rotations import mean_rotations
from skelanim.data.dataset import MotionDataset, feature_stats
from skelanim.data.features import to_reference_frame
from skelanim.data.rig import Rig
from skelanim.errors import TrainingDataError
from skelanim.learn.augment import log_uniform, scale_amplitude
from skelanim.learn.calibrate import calibrate_input_range, median_amplitude
from skelanim.learn.common import (
    Normalizer,
    file_balance_weights,
    keep_without_validation,
    load_model,
    load_weights,
    note_short_clips,
    provenance,
    resolved_options,
    rig_fk,
    spread_sample,
)
from skelanim.learn.mirror import mirror_frames, rig_mirror, vector_mirror
from skelanim.learn.predictors import (
    DCTGCN,
    MemberMean,
    MotionMLP,
    Seq2SeqGRU,
    amplitude_factor,
    frames_to_vectors,
    vectors_to_frames,
    window_amplitude,
)  # fmt: skip
from skelanim.nn.device import module_device, to_device
from skelanim.nn.train import TrainConfig, fit

__all__ = ["ARCHITECTURES", "FORMAT", "HORIZONS_MS", "LEARNED", "METHODS", "SECOND_FRAMES", "CombinedPredictor",
           "PredictTask", "Predictor", "same_setting", "train_predictor"]  # fmt: skip

FORMAT = "skelanim-predictor"
#: Frames observed and frames predicted by default: 1 s each at 25 fps.
SECOND_FRAMES = 25
#: Horizons reported, in milliseconds.
HORIZONS_MS = (80, 160, 320, 400, 560, 1000)
#: Learned predictor networks by ``arch`` name.
ARCHITECTURES: dict[str, type[nn.Module]] = {"rnn": Seq2SeqGRU, "gcn": DCTGCN, "mlp": MotionMLP}
#: The learned methods, one per architecture, each with a shipped default ``predict_{name}``.
LEARNED = tuple(ARCHITECTURES)
#: The baselines, which need no model.
BASELINES = ("zero_velocity", "constant_velocity")
#: Methods :func:`evaluate_prediction` and :func:`~skelanim.learn.forecast.predict_motion` know (``combined``: :class:`CombinedPredictor`).
METHODS = (*LEARNED, "combined", *BASELINES)


def reference_windows(ds: MotionDataset, windows: Tensor, length: int, ref: int, rig: Rig,
                      backwards: Tensor | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Rotations ``(B, T, M, 3, 3)`` and pelvis ``(B, T, 3)`` of windows relative to their frame ``ref``;
    the windows where the ``(B,)`` mask ``backwards`` is set are read in reverse time order first."""
    g = ds.gather(windows, length, keys=("rot", "pelvis", "yaw"))
    if backwards is not None:
        g = {k: torch.where(backwards.view(-1, *[1] * (v.dim() - 1)), v.flip(1), v) for k, v in g.items()}
    return to_reference_frame(g["rot"], g["pelvis"], g["yaw"], ref, up=rig.up, floor=rig.floor, height=rig.height)


class Predictor(nn.Module):
    """A learned predictor with its normaliser and rig.

    Parameters
    ----------
    arch : str
        ``"rnn"`` (:class:`~skelanim.learn.predictors.Seq2SeqGRU`), ``"gcn"`` (:class:`~skelanim.learn.predictors.DCTGCN`)
        or ``"mlp"`` (:class:`~skelanim.learn.predictors.MotionMLP`).
    rig : Rig
        The learning skeleton.
    observed, horizon : int
        Frames in and out.
    fps : float
        Frame rate.
    arch_options : dict, optional
        Network options.
    members : int
        Networks of this recipe whose predictions are averaged (:class:`~skelanim.learn.predictors.MemberMean`;
        made by :func:`skelanim.learn.ensemble.combine_predictors`); 1 for a single network.
    amplitude_reference : float
        Amplitude normalisation (0: off; set by :func:`~skelanim.learn.calibrate.calibrate_amplitude`): an observed window whose
        standardised frames move less about their mean frame ``c`` (RMS, :func:`window_amplitude`) than this,
        the training windows' median, is enlarged about ``c`` by ``1 / r`` (``r``: :func:`amplitude_factor`)
        before the network sees it, and the prediction is shrunk back, ``c + r (y - c)``. A style that moves
        little (an elderly wave) is then continued at its own size instead of the training styles'; held still
        stays held still.
    test_mirror : bool
        Predict also the left/right mirror image of the observed frames and average the mirrored-back
        prediction with the direct one (:meth:`predict_vectors`; training is unaffected).
    amplitude_votes : sequence of float
        Amplitude votes (empty: none): the observed frame vectors are also scaled by each ``s`` about their mean
        frame ``c``, ``c + s (x - c)``, predicted, and scaled back, ``c + (y - c) / s``; the prediction is the
        mean of these and the direct one (each with its mirror image under ``test_mirror``).

    Attributes
    ----------
    input_low, input_high : Tensor
        ``(D,)`` buffers: the standardised frame vectors the network sees are clamped to this range (the training
        windows', :func:`~skelanim.learn.calibrate.calibrate_input_range`; ``-inf`` / ``inf``, i.e. no clamp, until it is set) and the
        prediction moved by ``z_T - clamp(z_T)`` of the last observed frame, so it continues from that frame.
        A channel the training data all but never moved (its deviation at the normaliser's floor) and another
        capture source moves would otherwise reach the network hundreds of deviations out.
    """

    step_scale: Tensor  # buffers
    input_low: Tensor
    input_high: Tensor

    def __init__(self, arch: str, rig: Rig, *, observed: int = SECOND_FRAMES, horizon: int = SECOND_FRAMES, fps: float = 25.0,
                 arch_options: dict[str, Any] | None = None, members: int = 1,
                 amplitude_reference: float = 0.0, test_mirror: bool = False,
                 amplitude_votes: Sequence[float] = ()) -> None:  # fmt: skip
        super().__init__()
        self.test_mirror = bool(test_mirror)
        self.amplitude_votes = tuple(float(v) for v in amplitude_votes)
        if any(not v > 0 for v in self.amplitude_votes):
            raise ValueError(f"amplitude votes must be positive scales, got {list(amplitude_votes)}")
        if not amplitude_reference >= 0.0:
            raise ValueError(f"amplitude_reference must be >= 0, got {amplitude_reference}")
        self.amplitude_reference = float(amplitude_reference)
        self.arch, self.rig, self.observed, self.horizon, self.fps = arch, rig, int(observed), int(horizon), float(fps)
        if arch not in ARCHITECTURES:
            raise ValueError(f"unknown predictor architecture {arch!r}; expected one of {', '.join(ARCHITECTURES)}")
        self.members = int(members)
        if self.members < 1:
            raise ValueError(f"members must be >= 1, got {members}")
        self.arch_options = resolved_options(ARCHITECTURES[arch], arch_options)
        self.arch_options.pop("horizon", None)  # the Predictor's own horizon is passed when the network is built
        dim = 6 * rig.num_joints + 3
        self.norm = Normalizer((dim,))
        self.register_buffer("step_scale", torch.ones(dim))
        self.register_buffer("input_low", torch.full((dim,), -torch.inf))
        self.register_buffer("input_high", torch.full((dim,), torch.inf))

        def build() -> nn.Module:
            if arch == "rnn":
                return Seq2SeqGRU(dim, **self.arch_options)
            return ARCHITECTURES[arch](dim, horizon=self.horizon, **self.arch_options)

        self.net: nn.Module = build() if self.members == 1 else MemberMean([build() for _ in range(self.members)])
        self.fk = rig_fk(rig)
        self._mirror: tuple[tuple[int, ...], tuple[Tensor, Tensor]] | None = None  # frame_mirror's

    def forward(self, x: Tensor) -> Tensor:
        """Raw frame vectors ``(B, T_in, D)`` to raw predictions ``(B, T', D)``: the ``horizon`` future frames
        (rnn), or the last ``observed`` reconstructed frames followed by them (gcn)."""
        z = self.norm(x)
        held = torch.minimum(torch.maximum(z, self.input_low), self.input_high)  # the training windows' range
        shift = z[:, -1:] - held[:, -1:]
        z = held
        if self.amplitude_reference:
            centre, size = window_amplitude(z)
            factor = amplitude_factor(size, self.amplitude_reference)
            z = centre + (z - centre) / factor
        mirror = self.standardised_mirror() if self.arch_options.get("half_period") else None
        if self.arch == "rnn":
            out = self.net(z, self.horizon, self.step_scale, mirror)
        else:
            out = self.net(z, self.horizon, mirror)
        if self.amplitude_reference:
            out = centre + factor * (out - centre)
        return self.norm.inverse(out + shift)

    def window_vectors(self, ds: MotionDataset, windows: Tensor) -> Tensor:
        """Raw frame vectors ``(W, observed + horizon, D)`` of ``ds``'s windows ``(W, 2)``, relative to their last
        observed frame."""
        length = self.observed + self.horizon
        return frames_to_vectors(*reference_windows(ds, windows, length, self.observed - 1, self.rig))

    def frame_mirror(self) -> tuple[Tensor, Tensor]:
        """The left/right mirror of raw frame vectors, ``x -> x[..., index] * sign`` (each ``(D,)``):
        :func:`vector_mirror` with the joint reflections chosen by :meth:`mean_pose`."""
        mean, std = self.norm.mean.detach(), self.norm.std.detach()
        key = (mean.data_ptr(), mean._version, std.data_ptr(), std._version)  # the statistics as they are now
        if self._mirror is None or self._mirror[0] != key:  # made once per statistics (about 0.1 s)
            index, sign = vector_mirror(self.rig, self.mean_pose())
            self._mirror = (key, (index.to(std.device), sign.to(device=std.device, dtype=std.dtype)))
        return self._mirror[1]

    def standardised_mirror(self) -> tuple[Tensor, Tensor, Tensor]:
        """The left/right mirror on standardised frame vectors, ``z -> z[index] * scale + shift`` (each ``(D,)``):
        :meth:`frame_mirror` between :attr:`norm` and its inverse."""
        mean, std = self.norm.mean.detach(), self.norm.std.detach()
        index, sign = self.frame_mirror()
        return index, sign * std[index] / std, (sign * mean[index] - mean) / std

    def mean_pose(self) -> Tensor:
        """``(M, 3, 3)``: the training frames' mean 6D vectors as rotations (Gram-Schmidt), the typical pose
        that settles :func:`rig_mirror`'s choice of joint reflections; on the CPU, with the rig."""
        return vectors_to_frames(self.norm.mean.detach().float().cpu())[0]

    @torch.no_grad()
    def predict_vectors(self, rot: Tensor, pelvis: Tensor) -> Tensor:
        """Future frame vectors ``(B, H, D)`` (6D rotations + pelvis) from observed reference-frame rotations
        ``(B, T, M, 3, 3)`` and pelvis ``(B, T, 3)``; computed on the model's device, returned on the input's."""
        self.eval()
        x = frames_to_vectors(rot.float(), pelvis.float()).to(module_device(self))
        centre = x.mean(1, keepdim=True)
        votes = [self._mirrored(x)]
        for scale in self.amplitude_votes:  # the observed second scaled about its mean frame, and back
            votes.append(centre + (self._mirrored(centre + scale * (x - centre)) - centre) / scale)
        return torch.stack(votes).mean(0)[:, -self.horizon :].to(rot.device)

    def _mirrored(self, x: Tensor) -> Tensor:
        """:meth:`forward` of raw frame vectors, averaged with the mirrored-back prediction of their mirror
        image under :attr:`test_mirror`."""
        out = self(x)
        if self.test_mirror:  # also predict the mirror image and mirror that back
            index, sign = self.frame_mirror()
            out = 0.5 * (out + self(x[..., index] * sign)[..., index] * sign)
        return out

    def predict(self, rot: Tensor, pelvis: Tensor) -> tuple[Tensor, Tensor]:
        """Future rotations ``(B, H, M, 3, 3)`` and pelvis ``(B, H, 3)`` from observed reference-frame ones."""
        return vectors_to_frames(self.predict_vectors(rot, pelvis))

    def config(self) -> dict[str, Any]:
        """JSON description to rebuild the module."""
        return {"format": FORMAT, "arch": self.arch, "rig": self.rig.to_dict(), "observed": self.observed,
                "horizon": self.horizon, "fps": self.fps, "arch_options": self.arch_options,
                "members": self.members, "amplitude_reference": self.amplitude_reference,
                "test_mirror": self.test_mirror, "amplitude_votes": list(self.amplitude_votes)}  # fmt: skip

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Predictor:
        """Untrained module from :meth:`config` output."""
        return cls(config["arch"], Rig.from_dict(config["rig"]), observed=config["observed"], horizon=config["horizon"],
                   fps=config["fps"], arch_options=config.get("arch_options"),
                   members=int(config.get("members", 1)),
                   amplitude_reference=float(config.get("amplitude_reference", 0.0)),
                   test_mirror=bool(config.get("test_mirror", False)),
                   amplitude_votes=config.get("amplitude_votes", ()))  # fmt: skip

    @classmethod
    def load(cls, folder: str | Path | None = None, *, default: str = "predict_rnn") -> Predictor:
        """Load a model folder (the shipped default when ``folder`` is ``None``), in eval mode."""
        return load_model(cls, folder, default, FORMAT, optional=("input_low", "input_high"))  # saved before the range


def same_setting(a: Predictor | CombinedPredictor, b: Predictor | CombinedPredictor) -> bool:
    """Whether two predictors work on one skeleton topology with the same observed and predicted lengths and
    frame rate (so that they can be averaged, or scored on the same windows)."""
    return a.rig.skeleton.same_topology(b.rig.skeleton) and (a.observed, a.horizon, a.fps) == (b.observed, b.horizon, b.fps)


class CombinedPredictor:
    """Predictors of different architectures averaged (the ``combined`` method): the mean of their predicted
    frame vectors, rotations back by Gram-Schmidt of the mean 6D vectors (as a same-architecture ensemble,
    :class:`~skelanim.learn.predictors.MemberMean`, averages its members). Equal weights: nothing is tuned.

    Parameters
    ----------
    models : sequence of Predictor
        At least two, on one skeleton, with the same observed and predicted lengths and frame rate.

    Raises
    ------
    ValueError
        Fewer than two models, or models that differ in skeleton, lengths or frame rate.
    """

    def __init__(self, models: Sequence[Predictor]) -> None:
        if len(models) < 2:
            raise ValueError(f"a combined predictor needs at least two models, got {len(models)}")
        first = models[0]
        if not all(same_setting(first, m) for m in models[1:]):
            raise ValueError("combined predictors must share the skeleton, observed and predicted lengths and fps")
        self.models = list(models)
        self.rig, self.observed, self.horizon, self.fps = first.rig, first.observed, first.horizon, first.fps

    @classmethod
    def shipped(cls) -> CombinedPredictor:
        """The shipped predictors of every architecture (:data:`LEARNED`) combined: ``skelanim predict``'s default."""
        return cls([Predictor.load(None, default=f"predict_{name}") for name in LEARNED])

    def predict(self, rot: Tensor, pelvis: Tensor) -> tuple[Tensor, Tensor]:
        """Future rotations ``(B, H, M, 3, 3)`` and pelvis ``(B, H, 3)`` from observed reference-frame ones."""
        return vectors_to_frames(torch.stack([m.predict_vectors(rot, pelvis) for m in self.models]).mean(0))


def _position_errors(
    fk: nn.Module, rot: Tensor, pelvis: Tensor, rot_gt: Tensor, pelvis_gt: Tensor, before: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """Root-relative and global joint position errors ``(B, T, M)`` (heights), and the root-relative velocity
    errors ``(B, T, M)``: frame ``t``'s change from frame ``t - 1`` against the true one, frame ``-1`` being the
    true rotations ``before`` ``(B, J, 3, 3)`` (the frame before the first, known to the model; without it,
    frame 0's velocity error is 0)."""
    zero = torch.zeros_like(pelvis)
    _, p = fk(rot, zero)
    _, q = fk(rot_gt, zero)
    rr = (p - q).norm(dim=-1)
    glob = (p + pelvis[..., None, :] - q - pelvis_gt[..., None, :]).norm(dim=-1)
    first = fk(before[:, None], zero[:, :1])[1] if before is not None else None
    p_first, q_first = (first, first) if first is not None else (p[:, :1], q[:, :1])  # no frame before: no change
    vel = (torch.diff(p, dim=1, prepend=p_first) - torch.diff(q, dim=1, prepend=q_first)).norm(dim=-1)
    return rr, glob, vel


def _frame_weights(frames: int, horizon: int, decay: float = 0.5) -> Tensor:
    """``(frames,)`` loss weights: ``(k + 1)^-decay`` for future frame ``k`` (mean 1 over the future), and 1 for
    reconstructed observed frames, so that short horizons, where errors are small, still count."""
    k = torch.arange(horizon, dtype=torch.float32)
    w = (k + 1) ** -decay
    w = w / w.mean()
    return torch.cat([torch.ones(frames - horizon), w])


class PredictTask:
    """:class:`skelanim.nn.train.Task` for a :class:`Predictor`.

    Parameters
    ----------
    model : Predictor
        The model.
    train_ds, val_ds : MotionDataset
        Training and validation clips.
    stride : int
        Training window stride.
    speed : tuple of float
        Range of the playback-speed augmentation (``(1, 1)``: none).
    amplitude : tuple of float
        Range of the amplitude augmentation (``(1, 1)``: none): each window's joint rotations moved toward
        (``a < 1``) or away from its own mean pose, ``R' = M_w (M_w^T R)^a`` with ``a`` log-uniform in the range
        (:func:`~skelanim.learn.augment.scale_amplitude`), so a small or large gesture is continued at its own size.
    mirror : bool
        Mirror a random half of each batch (left/right, :func:`rig_mirror`).
    global_weight : float
        Weight ``g`` of the with-root-motion position error (module docstring).
    noise : float
        Gaussian noise (in feature standard deviations) added to the observed frames in training.
    horizon_decay : float
        Future frame ``k`` weighs ``∝ (k + 1)^-horizon_decay`` in the loss (0: all alike).
    velocity_weight : float
        Weight ``v`` of a root-relative velocity term, ``v mean_t w_t |ΔFK(R) - ΔFK(R*)|`` with ``Δ`` the change
        from the previous frame (the first predicted frame's from the last observed one; siMLPe's velocity
        loss; 0: none).
    file_balance : float
        Window weights ``∝ n_f^-file_balance`` (``n_f`` training windows of its file; 0: none): short files
        (the gestures) count more against the long walks.
    amplitude_norm : bool
        Train with amplitude normalisation (:class:`Predictor`'s ``amplitude_reference``, set here from the
        training windows as :func:`~skelanim.learn.calibrate.calibrate_amplitude` does).
    reverse : float
        Chance that a training window is played backwards before it is split into observed and future frames
        (siMLPe's temporal flip; 0: never).
    statistics : bool
        Set the model's input normalisation and step scale from the training windows; ``False`` keeps the model's
        (fine-tuning: :mod:`skelanim.learn.finetune`; ``amplitude_norm`` then cannot be asked).
    meta : dict
        Provenance.
    """

    metric = "val_mpjpe"

    def __init__(self, model: Predictor, train_ds: MotionDataset, val_ds: MotionDataset | None, *, stride: int = 2,
                 speed: tuple[float, float] = (1.0, 1.0), amplitude: tuple[float, float] = (1.0, 1.0),
                 mirror: bool = False, global_weight: float = 1.0, noise: float = 0.0, horizon_decay: float = 0.5, file_balance: float = 0.0,
                 amplitude_norm: bool = False, reverse: float = 0.0, velocity_weight: float = 0.0, statistics: bool = True,
                 meta: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.model, self.train_ds, self.val_ds, self.meta = model, train_ds, val_ds, dict(meta or {})
        self.speed, self.amplitude = (speed[0], speed[1]), (amplitude[0], amplitude[1])
        self.reverse = float(reverse)
        self.velocity_weight = float(velocity_weight)
        self.global_weight, self.noise, self.horizon_decay = float(global_weight), float(noise), float(horizon_decay)
        self.length = model.observed + model.horizon
        self.windows = train_ds.windows(self.length, stride, pad_short=False)
        if len(self.windows) == 0:  # the observed and predicted seconds must both be real frames
            longest = max(c.num_frames for c in train_ds.clips)
            raise TrainingDataError(f"no training clip has the {self.length} frames a window needs ({model.observed} "
                                    f"observed and {model.horizon} predicted at {train_ds.fps:g} fps); the longest has "
                                    f"{longest}")  # fmt: skip
        self.sample_weight = file_balance_weights(self.windows[:, 0], len(train_ds), file_balance)
        if statistics:
            sample = model.window_vectors(train_ds, spread_sample(self.windows, 2000))
            mean, std = (t[0, 0] for t in feature_stats(sample, (0, 1)))
            model.norm.set(mean, std)
            steps = (sample[:, 1:] - sample[:, :-1]).std(dim=(0, 1)).clamp_min(1e-5)
            model.step_scale.copy_(steps / std)
            model.amplitude_reference = median_amplitude(model, sample) if amplitude_norm else 0.0
        elif amplitude_norm:
            raise ValueError("amplitude_norm sets the model's amplitude reference from the training windows; a "
                             "model whose statistics are kept (fine-tuning) keeps its own")  # fmt: skip
        self.mirror = rig_mirror(model.rig, model.mean_pose()) if mirror else None
        self.val_windows = val_ds.windows(self.length, 10, pad_short=False) if val_ds is not None else None
        self.validated = self.val_windows is not None and len(self.val_windows) > 0
        if not self.validated:  # scored on training windows: not a validation score
            self.metric = "train_subset_mpjpe"

    def num_samples(self) -> int:
        """Training windows."""
        return len(self.windows)

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        """Frame vectors ``(B, observed + horizon, D)`` of the windows, optionally played at a random speed
        (``speed`` range, one factor per batch; the window is read longer or shorter and resampled linearly),
        backwards (``reverse``) or mirrored."""
        speed = float(log_uniform(self.speed, (), generator))
        length = max(3, round(self.length * speed))
        ref = round(self.model.observed * length / self.length) - 1
        backwards = torch.rand(len(indices), generator=generator) < self.reverse if self.reverse > 0 else None
        rot, pelvis = reference_windows(self.train_ds, self.windows[indices], length, ref, self.model.rig, backwards)
        if self.mirror is not None:
            flip = torch.rand(len(indices), generator=generator) < 0.5
            m_rot, m_pel = mirror_frames(rot[flip], pelvis[flip], *self.mirror)
            rot, pelvis = rot.clone(), pelvis.clone()
            rot[flip], pelvis[flip] = m_rot, m_pel
        if self.amplitude != (1.0, 1.0):
            factor = log_uniform(self.amplitude, (len(indices),), generator)
            rot = scale_amplitude(rot, mean_rotations(rot, dim=1), factor)
        x = frames_to_vectors(rot, pelvis)
        if length != self.length:
            x = nn.functional.interpolate(x.transpose(1, 2), size=self.length, mode="linear", align_corners=True)
            x = x.transpose(1, 2)
        return {"x": x, "weight": self.sample_weight[indices]}

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        """Position errors plus a small term on the standardised vectors (module docstring)."""
        plain = cast(Predictor, model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model)
        x = batch["x"]
        inp = x[:, : plain.observed]
        if self.noise > 0 and model.training:
            inp = inp + self.noise * plain.norm.std * torch.randn_like(inp)
        pred = model(inp)
        target = x[:, -pred.shape[1] :]
        rot, pelvis = vectors_to_frames(pred)
        rot_gt, pelvis_gt = vectors_to_frames(target)
        seam = self.velocity_weight > 0 and pred.shape[1] < x.shape[1]  # the frame before the first predicted
        before = vectors_to_frames(x[:, -pred.shape[1] - 1])[0] if seam else None
        rr, glob, vel = _position_errors(plain.fk, rot, pelvis, rot_gt, pelvis_gt, before)
        w = _frame_weights(pred.shape[1], plain.horizon, self.horizon_decay).to(pred.device)[None, :, None]
        per_window = (w * rr).mean((1, 2)) + self.global_weight * (w * glob).mean((1, 2))
        if self.velocity_weight > 0:
            per_window = per_window + self.velocity_weight * (w * vel).mean((1, 2))
        per_window = per_window + 0.05 * (plain.norm(pred) - plain.norm(target)).abs().mean((1, 2))
        loss = (batch["weight"] * per_window).mean()
        return loss, {"rr_pct": 100 * float(rr[:, -plain.horizon :].mean().detach())}

    def validate(self, model: nn.Module) -> dict[str, float]:
        """Mean root-relative MPJPE over the horizons on the validation windows."""
        if self.val_ds is None or self.val_windows is None or not self.validated:
            batch = self.batch(torch.arange(min(128, len(self.windows))), torch.Generator())
            return {self.metric: float(self.loss(model, to_device(batch, module_device(model)))[0])}
        from skelanim.learn.predict_eval import evaluate_prediction

        scores = evaluate_prediction({"m": cast(Predictor, model)}, self.val_ds, methods=("m",), windows=self.val_windows)
        value = sum(scores["methods"]["m"]["mpjpe"]) / len(HORIZONS_MS)
        return {"val_mpjpe": value, "val_mpjpe_80": scores["methods"]["m"]["mpjpe"][0],
                "val_mpjpe_1000": scores["methods"]["m"]["mpjpe"][-1]}  # fmt: skip

    def model_config(self) -> dict[str, Any]:
        """The model's config plus provenance."""
        return {**self.model.config(), "training": self.meta}


def train_predictor(train_ds: MotionDataset, val_ds: MotionDataset | None, out: str | Path, *, arch: str = "rnn",
                    observed: int = SECOND_FRAMES, horizon: int = SECOND_FRAMES, stride: int = 2, loop: TrainConfig | None = None,
                    arch_options: dict[str, Any] | None = None, task_options: dict[str, Any] | None = None,
                    resume: bool = False, command: str | None = None, log: Any = None,
                    test_mirror: bool = False, init: Predictor | None = None,
                    init_record: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """Train a predictor; writes ``out/model.safetensors`` + ``config.json`` (best validation epoch or the last;
    ``test_mirror``: :class:`Predictor`'s, also in validation).

    ``init``, a single-network predictor, is fine-tuned instead (trained in place): its architecture, lengths,
    frame rate, statistics and calibration are kept, so ``arch``, ``arch_options``, ``observed``, ``horizon`` and
    ``test_mirror`` are not read and ``train_ds`` must be at its rate on its rig; ``init_record`` (what it
    started from: :meth:`skelanim.learn.finetune.InitModel.record`) goes into ``config.json`` as ``init``.

    Returns
    -------
    dict
        :func:`skelanim.nn.fit`'s result plus ``parameters``.
    """
    loop = loop or TrainConfig(epochs=10, batch_size=64, lr=1e-3, warmup_steps=100)
    torch.manual_seed(loop.seed)
    if init is not None:  # its rig and rate: its weights read joints and frames as its own
        from skelanim.learn.finetune import require_fits

        require_fits(init, train_ds, "the predictor")
    model = init if init is not None else Predictor(
        arch, train_ds.rig, observed=observed, horizon=horizon, fps=train_ds.fps, arch_options=arch_options,
        test_mirror=test_mirror,
    )
    meta = provenance(command, [c.path for c in train_ds.clips], loop.seed)
    meta["validation"] = [c.name for c in val_ds.clips] if val_ds is not None else []
    meta["task_options"] = {"stride": stride, **(task_options or {})}
    if init is not None:
        meta["init"] = dict(init_record or {})
    task = PredictTask(model, train_ds, val_ds, stride=stride, meta=meta, statistics=init is None, **(task_options or {}))
    loop = keep_without_validation(loop, task.validated, log)
    note_short_clips(train_ds, model.observed + model.horizon, log)

    before = (model.input_low.clone(), model.input_high.clone())  # a fine-tuned model's range (else unbounded)

    def with_input_range(tensors: dict[str, Tensor], config: dict[str, Any]) -> dict[str, Tensor]:
        """The weights fit kept (best or last) with the training windows' input range, measured while fit still
        holds the folder: read after it, the folder may already hold another run's files. A fine-tuned model
        keeps the range of its first training too (its union with this data's): a small fine-tuning set would
        otherwise clamp motion the model knows."""
        kept = Predictor.from_config(config)
        load_weights(kept, tensors, Path(out), optional=("input_low", "input_high"))
        low, high = calibrate_input_range(kept.eval(), train_ds, stride=stride,
                                          mirror=bool((task_options or {}).get("mirror")))  # fmt: skip
        if init is not None and bool(torch.isfinite(before[0]).all() and torch.isfinite(before[1]).all()):
            kept.input_low.copy_(torch.minimum(low, before[0]))
            kept.input_high.copy_(torch.maximum(high, before[1]))
        return kept.state_dict()

    result = fit(model, task, out, loop, resume=resume, log=log, finish=with_input_range)
    result.update(metric=task.metric, keep=loop.keep)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result
