"""Using IK: load a model folder, check input positions, run a method, return a :class:`Motion`.

Methods (all return local quaternions on the model's skeleton):

========================  =======================================================================
``gat``                   the network, one forward pass
``gat_refined``           the network, its learned pose correction (clean input) or temporal smoothing
                          (noisy sequences), then up to 10 LM steps stopping once every joint is within
                          0.02% of height, with a noise-weighted prior (:func:`skelanim.ik.refine.refine`)
``swing_rest``            analytic swing IK from the rest pose
``swing_mean``            analytic swing IK from the model's mean training pose
``swing_warm``            analytic swing IK, each frame from the previous frame's answer (the first from the
                          mean pose): the positions of ``swing_mean`` with the twist carried over in time
``optimize_rest``         100 LM iterations from the rest pose (the paper's "without warm start")
``optimize_mean``         100 LM iterations from the mean pose, its root turned onto the observed hips
``optimize_warm``         100 LM iterations from the previous frame's answer
========================  =======================================================================

Runtime (``IKModel.runtime = "auto"``): batches up to :data:`ORT_MAX_BATCH` poses, and every batch when torch has
one thread, go through onnxruntime (one intra-op thread, a static-shape graph for single poses: per call it costs
a fraction of torch's dispatch; larger batches in chunks of :data:`TORCH_CHUNK`), larger ones through torch under ``inference_mode`` in chunks of :data:`TORCH_CHUNK` poses
(the attention tensors of bigger chunks fall out of cache). With ``torch.get_num_threads()`` = T > 1 the
chunks run on T threads side by side, torch set to one intra-op thread for the duration of the call (most
ops of a chunk are too small for intra-op parallelism: 1.3-1.4x the poses/s of T intra-op threads on the
2-core VM). The network's inference path is :meth:`IKGAT.local_rotations` (no bone frames). The crossover was measured with
``benchmarks/ik.py --runtime-only --threads-list 1 2`` (torch and onnxruntime alternated, 2026-12-06: onnxruntime
faster at every batch on one torch thread, up to 256 on two, torch from 1024 on two); the onnxruntime session is built on first use (an in-memory ONNX
export, about a second) and cached on the model, and :func:`load_model` caches loaded models per folder.
A network moved to a GPU (:meth:`IKModel.to`) runs there through torch, chunk after chunk; its inputs and
answers, and all around it (the checks, the refinement's LM fit), stay on the CPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_quat, quat_identity
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, ShapeError, SkelanimError
from skelanim.ik.checks import (
    NOISE_SIZES,
    OWN_SIZE,
    UNIT_TOLERANCE,
    body_scale,
    check_positions,
    check_units,
    noise_lengthening,
    warn_proportions,
)
from skelanim.ik.classical import CONVERGED_STEP, optimize_ik, solve_sequential, swing_ik
from skelanim.ik.frames import IKRig
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.refine import REFINE_PRIOR, REFINE_SPREAD, REFINE_TOL, noise_sigma, refine, refine_prior  # noqa: F401
from skelanim.nn.checkpoint import config_error, load_model_files
from skelanim.nn.device import module_device
from skelanim.ops.filters import check_fps

__all__ = ["ALL_METHODS", "DEFAULT_MODEL", "METHODS", "UNIT_TOLERANCE", "IKModel", "check_positions", "check_units",
           "load_model", "refine_prior", "run_method", "solve", "to_motion"]  # fmt: skip

#: The pretrained Bandai-Namco model shipped inside the package.
DEFAULT_MODEL = Path(__file__).resolve().parent / "pretrained"
METHODS = ("gat", "gat_refined", "swing_rest", "swing_mean", "optimize_rest", "optimize_mean", "optimize_warm")
#: Every method :func:`run_method` knows: :data:`METHODS` (what ``ik eval`` runs by default) and ``swing_warm``.
ALL_METHODS = (*METHODS, "swing_warm")
#: The runtimes :meth:`IKModel.predict` runs the network with.
RUNTIMES = ("auto", "torch", "onnx")
#: Largest batch that goes through onnxruntime under the automatic runtime.
ORT_MAX_BATCH = 256
#: Torch processes larger batches in chunks of this many poses.
TORCH_CHUNK = 256


@dataclass
class IKModel:
    """A trained IK-GAT with its rig, mean pose and runtimes.

    Attributes
    ----------
    net : IKGAT
        The network (eval mode, float32).
    rig : IKRig
        The model's skeleton and IK root.
    config : dict
        The model folder's ``config.json``.
    path : Path or None
        Where it was loaded from.
    """

    net: IKGAT
    rig: IKRig
    config: dict[str, Any]
    path: Path | None = None

    def __post_init__(self) -> None:
        self._ort: Any = None
        self.runtime = "auto"

    @classmethod
    def load(cls, folder: str | os.PathLike | None = None) -> IKModel:
        """Load a model folder (``None``: the shipped default).

        Raises
        ------
        FormatError
            Missing or corrupt folder, or a config this version cannot read.
        """
        folder = Path(folder) if folder is not None else DEFAULT_MODEL
        tensors, config = load_model_files(folder)
        if config.get("format") != "skelanim-ik-gat":
            raise FormatError(f"not an IK-GAT model (format {config.get('format')!r})", path=folder / "config.json")
        if config.get("version", 1) != 1:
            raise FormatError(f"IK-GAT model version {config.get('version')!r}; this skelanim reads version 1",
                              path=folder / "config.json")  # fmt: skip
        try:
            skeleton = Skeleton.from_dict(config["skeleton"])
            rig = IKRig(skeleton, ik_root=int(config["ik_root"]))
            net = IKGAT(rig, GATConfig.from_dict(config["architecture"]))
            net.load_state_dict(tensors)
            net.set_mean_pose(net.mean_pose.clone())  # derived buffers (not stored) from the stored mean pose
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, SkelanimError) as err:
            raise config_error(err, folder) from None
        if config.get("up_axis") not in (None, 0, 1, 2):  # read by export and the units check
            raise FormatError(f"corrupt model config: up_axis {config.get('up_axis')!r} (0, 1 or 2)",
                              path=folder / "config.json")  # fmt: skip
        if net.outdated_frame:  # its weights are for world-axis features: keep them, but say what that costs
            import warnings

            warnings.warn(f"{folder}: this model was trained before its root frame looked through the joints that sit "
                          "on its root (CMU-like hips): its answers do not turn with the input; retrain it "
                          "(skelanim ik train) for heading invariance", stacklevel=2)  # fmt: skip
        net.eval()
        return cls(net, rig, config, folder)

    @property
    def skeleton(self) -> Skeleton:
        """The skeleton the model solves for."""
        return self.rig.skeleton

    @property
    def mean_pose(self) -> Tensor:
        """``(J, 4)`` float64 mean training pose (local quaternions), on the CPU."""
        return self.net.mean_pose.to("cpu", torch.float64)

    @property
    def device(self) -> torch.device:
        """Where the network runs."""
        return module_device(self.net)

    def to(self, device: torch.device | str) -> IKModel:
        """Move the network to ``device`` (in place: a model from :func:`load_model` is shared by every caller of
        that folder, so copy it first where others use it); :meth:`predict` still takes and returns CPU tensors."""
        self.net.to(device)
        return self

    def probe_positions(self, count: int, *, seed: int = 0) -> Tensor:
        """Plausible test inputs: the mean pose with every joint turned at random (rotation vectors with
        0.15 rad per axis), placed at a random position (FK on the rig).

        Returns
        -------
        Tensor
            ``(count, J, 3)`` float64 world positions.
        """
        from skelanim.core.kinematics import forward_kinematics
        from skelanim.core.rotations import quat_multiply, rotvec_to_quat

        gen = torch.Generator().manual_seed(seed)
        j = self.rig.num_joints
        turn = rotvec_to_quat(torch.randn(count, j, 3, generator=gen, dtype=torch.float64) * 0.15)
        quats = quat_multiply(self.mean_pose.expand(count, j, 4), turn)
        quats[:, self.rig.fixed] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
        root = torch.randn(count, 3, generator=gen, dtype=torch.float64) * (0.5 * self.rig.height)
        _, pos = forward_kinematics(quats, self.rig.translations(root), self.rig.parents)
        return pos

    def ort_session(self) -> Any:
        """The onnxruntime runner of the network (built on first use, then cached), ``None`` without
        onnxruntime."""
        if self._ort is None:
            try:
                from skelanim.ik.onnx import OrtRunner
            except ImportError:  # pragma: no cover - onnxruntime is a dependency
                self._ort = False
                return None
            try:
                self._ort = OrtRunner.from_model(self.net, threads=1)
            except Exception:  # noqa: BLE001 - whatever the exporter or onnxruntime raise: torch does the work
                self._ort = False
        return self._ort or None

    def choose_runtime(self, batch: int) -> str:
        """``"onnx"`` or ``"torch"`` for a batch of ``batch`` poses under :attr:`runtime` (``auto``: by size, and
        above :data:`ORT_MAX_BATCH` by torch's thread count: on one thread onnxruntime is faster at every batch)."""
        if self.device.type != "cpu":
            return "torch"
        if self.runtime != "auto":
            return self.runtime
        if self._ort is False:
            return "torch"
        return "onnx" if batch <= ORT_MAX_BATCH or torch.get_num_threads() == 1 else "torch"

    def predict(self, positions: Tensor, *, runtime: str | None = None) -> Tensor:
        """Network local rotations for positions of the model's skeleton.

        Parameters
        ----------
        positions : Tensor
            ``(F, J, 3)`` world positions (any float dtype) in the skeleton's units.
        runtime : {"auto", "torch", "onnx"}, optional
            Default :attr:`runtime`; ``auto`` picks by batch size (:meth:`choose_runtime`). A network off the
            CPU runs through torch whatever is asked.

        Returns
        -------
        Tensor
            ``(F, J, 4)`` float64 unit quaternions, on the CPU.
        """
        if runtime is not None and runtime not in RUNTIMES:
            raise ValueError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        shape, joints = tuple(positions.shape), self.rig.num_joints
        if len(shape) != 3 or shape[1:] != (joints, 3):  # onnxruntime's own message names its graph's input
            raise ShapeError(f"positions must be (F, {joints}, 3) for this model's {joints} joints, got {shape}")
        n = positions.shape[0]
        device = self.device
        choice = runtime if runtime and runtime != "auto" and device.type == "cpu" else self.choose_runtime(n)
        if choice == "onnx":
            session = self.ort_session()
            if session is not None:  # NumPy in and out: fewer conversions than torch's for single poses
                xn = positions.detach().numpy() if isinstance(positions, Tensor) else np.asarray(positions)
                if n <= ORT_MAX_BATCH:
                    return torch.from_numpy(session(xn).astype(np.float64))
                out = [session(xn[i : i + TORCH_CHUNK]) for i in range(0, n, TORCH_CHUNK)]
                return torch.from_numpy(np.concatenate(out).astype(np.float64))
        x = torch.as_tensor(positions).to(device, torch.float32)
        chunks = [x[i : i + TORCH_CHUNK] for i in range(0, max(n, 1), TORCH_CHUNK)]  # no frames: one empty chunk
        threads = torch.get_num_threads()
        if len(chunks) == 1 or threads == 1 or device.type != "cpu":
            return torch.cat([self._torch_chunk(c) for c in chunks]).to("cpu", torch.float64)
        torch.set_num_threads(1)  # the chunks run side by side instead (torch releases the GIL in its ops)
        try:
            out = list(_chunk_pool(threads).map(self._torch_chunk, chunks))
        finally:
            torch.set_num_threads(threads)
        return torch.cat(out).to(torch.float64)

    def _torch_chunk(self, x: Tensor) -> Tensor:
        """``(B, J, 3)`` float32 positions to ``(B, J, 4)`` float32 quaternions (on the network's device). A bone
        within a fraction of a degree of the opposite of its start axis (random input; no capture here turns one
        more than 131 degrees from it) gives a swing that is no rotation: converted all the same, as the exported
        graph does."""
        with torch.inference_mode():
            return matrix_to_quat(self.net.local_rotations(x), check=False)


_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _chunk_pool(workers: int) -> ThreadPoolExecutor:
    """A thread pool of ``workers`` threads for torch chunks (one per size, kept for the process). Keyed by
    process id too: a forked child (a data-loader worker) inherits the parent's pool without its threads,
    and work sent there would wait forever."""
    key = (os.getpid(), workers)
    if key not in _POOLS:
        _POOLS[key] = ThreadPoolExecutor(workers, thread_name_prefix="skelanim-ik")
    return _POOLS[key]


_LOADED: dict[tuple[str, int, int], IKModel] = {}


def load_model(folder: str | os.PathLike | None = None) -> IKModel:
    """:meth:`IKModel.load`, cached per folder (and its files' modification times), so repeated
    :func:`solve` calls reuse one model and its onnxruntime session."""
    path = Path(folder) if folder is not None else DEFAULT_MODEL
    try:
        key = (
            str(path.resolve()),
            (path / "model.safetensors").stat().st_mtime_ns,
            (path / "config.json").stat().st_mtime_ns,
        )
    except OSError:
        return IKModel.load(path)  # raises the model folder's error
    if key not in _LOADED:
        _LOADED[key] = IKModel.load(path)
    return _LOADED[key]


def _mean_init(model: IKModel, positions: Tensor) -> Tensor:
    """Mean pose with the IK root turned onto the observed root (one swing/Kabsch step)."""
    quats, _ = swing_ik(positions, model.rig, model.mean_pose)
    init = model.mean_pose.expand(positions.shape[0], -1, -1).clone()
    init[:, model.rig.ik_root] = quats[:, model.rig.ik_root]
    return init


def run_method(
    method: str,
    positions: Tensor,
    model: IKModel,
    *,
    starts: Tensor | None = None,
    iterations: int = 100,
    refine_iterations: int = 10,
    fps: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Solve with one of :data:`ALL_METHODS`.

    Parameters
    ----------
    method : str
        Method name.
    positions : Tensor
        ``(F, J, 3)`` float64 checked positions.
    model : IKModel
        Gives the rig, the mean pose and the network.
    starts : Tensor, optional
        ``(F,)`` bool, where a new sequence starts (for ``*_warm``; default: frame 0 only).
    iterations, refine_iterations : int
        LM iterations of ``optimize_*`` (at most: they stop once converged, :data:`~skelanim.ik.classical.CONVERGED_STEP`)
        and of the refinement.
    fps : float, optional
        The frames' rate, for ``gat_refined``'s smoothing of noisy sequences (:func:`~skelanim.ik.refine.refine`;
        default: the rate it was chosen at, 30 fps).

    Returns
    -------
    tuple of Tensor
        ``(F, J, 4)`` local quaternions, ``(F, J, 3)`` local translations.
    """
    rig = model.rig
    if method == "gat":
        return model.predict(positions), rig.translations(positions[:, rig.ik_root])
    rest = quat_identity((rig.num_joints,))
    if method == "gat_refined":  # a body of another size is fitted at the model's (about the IK root): its bones
        scale, root = body_scale(positions, rig.skeleton), positions[:, rig.ik_root : rig.ik_root + 1]  # reach
        rescaled = root + (positions - root) / scale
        # a measured size may be the noise's (it lengthens bones): fitted as it was, a real one read as noise (a
        # body 2.5 % larger: 5.4 degrees against the network's 4.4; at the model's size 3.65)
        lengthened = noise_lengthening(float(noise_sigma(rescaled, rig).median()), rig.skeleton)
        fitted = rescaled if abs(scale - 1) > min(OWN_SIZE, NOISE_SIZES * lengthened) else positions
        return refine(fitted, model, model.predict(positions), starts=starts, iterations=refine_iterations, fps=fps)
    if method == "swing_rest":
        return swing_ik(positions, rig, rest)
    if method == "swing_mean":
        return swing_ik(positions, rig, model.mean_pose)
    if method == "swing_warm":
        return solve_sequential(positions, model.mean_pose, lambda p, i: swing_ik(p, rig, i), starts=starts)
    if method == "optimize_rest":
        return optimize_ik(positions, rig, rest, iterations=iterations, step_tol=CONVERGED_STEP)
    if method == "optimize_mean":
        return optimize_ik(positions, rig, _mean_init(model, positions), iterations=iterations, step_tol=CONVERGED_STEP)
    if method == "optimize_warm":
        step = partial(optimize_ik, rig=rig, iterations=iterations, step_tol=CONVERGED_STEP)
        return solve_sequential(positions, _mean_init(model, positions), lambda p, i: step(p, init=i), starts=starts)
    raise ValueError(f"unknown IK method {method!r}; choose from {', '.join(ALL_METHODS)}")


def to_motion(model: IKModel, quats: Tensor, translations: Tensor, fps: float) -> Motion:
    """A :class:`Motion` on the model's skeleton from local quaternions and translations.

    Under a dummy root that never rotates, the root stays at its rest offset and the IK root's translation
    is animated (``joint_translations``) when the skeleton has position channels there; otherwise it moves
    to the root (equivalent, the dummy never rotates).
    """
    sk = model.skeleton
    r = model.rig.ik_root
    if r == 0:
        return Motion(sk, quats, translations[:, 0], fps)
    if sk.has_position_channels(r):
        root = sk.offsets[0].expand(quats.shape[0], 3).clone()
        return Motion(sk, quats, root, fps, joint_translations=translations)
    return Motion(sk, quats, translations[:, r] - sk.offsets[r] + sk.offsets[0], fps)


def solve(
    positions: Any,
    model: IKModel | str | os.PathLike | None = None,
    *,
    refine: bool = False,
    method: str | None = None,
    names: Sequence[str] | None = None,
    fps: float | None = None,
    source: str | os.PathLike | None = None,
) -> Motion:
    """Joint positions to a :class:`Motion` on the model's skeleton.

    Parameters
    ----------
    positions : array, Tensor or JointPositions
        ``(F, J, 3)`` world positions in the skeleton's units (the shipped model: centimetres; positions in
        other units are refused, not rescaled, see :func:`check_units`). Read as values: no gradient flows back
        (train through :class:`~skelanim.ik.model.IKGAT` itself for that).
    model : IKModel, path or None
        A loaded model, a model folder, or ``None`` for the shipped Bandai-Namco model (folders are loaded
        once, :func:`load_model`).
    refine : bool
        Add the refinement (``gat_refined``: pose correction or smoothing, then the LM position fit).
    method : str, optional
        Any of :data:`ALL_METHODS` (overrides ``refine``).
    names : sequence of str, optional
        Joint names of ``positions`` (taken from a ``JointPositions`` when given one).
    fps : float, optional
        Frame rate of the result (default: the input's, else 30).
    source : str or PathLike, optional
        The file the positions came from, named in error messages.

    Returns
    -------
    Motion

    Raises
    ------
    ShapeError
        An unknown ``method``, an fps that is not a positive number, or positions the model cannot take
        (:func:`check_positions`).
    SkeletonError
        Joint names the model does not have (:func:`check_positions`).
    """
    chosen = method or ("gat_refined" if refine else "gat")
    if chosen not in ALL_METHODS:
        raise ShapeError(f"unknown IK method {chosen!r}; choose from {', '.join(ALL_METHODS)}", path=source)
    if fps is not None:  # any real number, NumPy's scalars too (an fps read from an .npz had been refused)
        try:
            fps = check_fps(fps)
        except ShapeError as err:
            raise ShapeError(str(err), path=source) from None
    model = model if isinstance(model, IKModel) else load_model(model)
    fps = fps or getattr(positions, "fps", None) or 30.0
    x = check_positions(positions, model.skeleton, names, source=source, ik_root=model.rig.ik_root)
    if chosen == "gat_refined":
        warn_proportions(x, model.skeleton, ik_root=model.rig.ik_root, source=source)
    quats, trans = run_method(chosen, x, model, fps=float(fps))
    motion = to_motion(model, quats, trans, float(fps))
    motion.metadata["ik_method"] = chosen
    return motion
