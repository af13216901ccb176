"""Training IK-GAT on motion files with the shared loop (:func:`skelanim.nn.fit`).

Loss per sample, averaged over the joints IK answers for (a static dummy root left out)::

    L = geo(L_pred, L_gt) + w_frame * geo(G_pred, G_gt) + w_pos * |FK(L_pred) - p_gt| / h

``geo`` is :func:`skelanim.core.rotations.matrix_geodesic` (radians), ``L`` local rotations, ``G`` bone
frames (their geodesic equals that of world rotations), FK the differentiable
:class:`skelanim.nn.ForwardKinematics` on the rest offsets, ``h`` the skeleton height.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor, nn

from skelanim.core.rotations import matrix_geodesic, quat_to_matrix
from skelanim.errors import FormatError
from skelanim.ik.data import (
    PoseSet,
    augment,
    checked_split,
    detect_ik_root,
    load_motions,
    mean_pose,
    mirror_map,
    pose_set,
    up_axis,
)  # fmt: skip
from skelanim.ik.frames import IKRig, world_to_local
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.nn import distributed as ddp
from skelanim.nn.device import to_device
from skelanim.nn.layers import ForwardKinematics
from skelanim.nn.train import TrainConfig, fit

__all__ = ["IKTask", "LossWeights", "ik_loss", "train"]

FORMAT = "skelanim-ik-gat"


@dataclass
class LossWeights:
    """Weights of the loss terms and the augmentation strengths."""

    frame: float = 0.5
    position: float = 5.0
    noise: float = 0.01
    noisy: float = 0.5
    mirror: float = 0.0


def ik_loss(net: IKGAT | nn.parallel.DistributedDataParallel, fk: ForwardKinematics, positions: Tensor, clean: Tensor,
            world: Tensor, joints: Tensor, weights: LossWeights) -> tuple[Tensor, dict[str, float]]:  # fmt: skip
    """The training loss (module docstring) for one batch.

    Parameters
    ----------
    net : IKGAT
        The network (possibly wrapped in DDP: it is only called).
    fk : ForwardKinematics
        FK on the rest offsets.
    positions : Tensor
        ``(B, J, 3)`` network input (possibly noisy), root-relative.
    clean : Tensor
        ``(B, J, 3)`` clean root-relative positions.
    world : Tensor
        ``(B, J, 3, 3)`` ground-truth world rotations.
    joints : Tensor
        ``(K,)`` joints that count.
    weights : LossWeights
        Term weights.

    Returns
    -------
    tuple
        Scalar loss and ``{"local_deg", "frame_deg", "pos_pct"}`` for logging.
    """
    plain = cast(IKGAT, net.module) if isinstance(net, nn.parallel.DistributedDataParallel) else net
    frames, local = net(positions)
    gt_frames = world @ plain.rest_frames
    gt_local = world_to_local(world, plain.parent_index, plain.has_parent)
    local_geo = matrix_geodesic(local, gt_local)[:, joints].mean()
    frame_geo = matrix_geodesic(frames, gt_frames)[:, joints].mean()
    root = -fk.offsets[plain.ik_root] if plain.ik_root else fk.offsets.new_zeros(3)
    _, pos = fk(local, root.expand(local.shape[0], 3))
    pos_err = (pos - clean)[:, joints].norm(dim=-1).mean() * plain.inv_height
    loss = local_geo + weights.frame * frame_geo + weights.position * pos_err
    parts = {"local_deg": math.degrees(float(local_geo.detach())), "frame_deg": math.degrees(float(frame_geo.detach())),
             "pos_pct": 100.0 * float(pos_err.detach())}  # fmt: skip
    return loss, parts


class IKTask:
    """:class:`skelanim.nn.train.Task` for IK-GAT.

    Parameters
    ----------
    train_set, val_set : PoseSet
        Samples.
    net : IKGAT
        The model (for buffers).
    weights : LossWeights
        Loss and augmentation settings.
    up : int
        Up axis for random headings.
    meta : dict
        Provenance written to ``config.json``.
    """

    metric = "val_local_deg"

    def __init__(
        self, train_set: PoseSet, val_set: PoseSet, net: IKGAT, weights: LossWeights, up: int, meta: dict[str, Any]
    ) -> None:
        self.train_set, self.val_set, self.net, self.weights, self.up, self.meta = (
            train_set,
            val_set,
            net,
            weights,
            up,
            meta,
        )
        rig = train_set.rig
        self.rig = rig
        self.fk = ForwardKinematics(rig.parents, rig.offsets)
        self.joints = torch.tensor(rig.evaluated)
        self.reflection = None
        if weights.mirror > 0:  # the joints' reflections settled by the training poses' mean
            reference = quat_to_matrix(mean_pose(train_set.local[:: max(1, len(train_set) // 20000)]))
            self.reflection = mirror_map(rig, (up + 1) % 3, reference)
        n = len(val_set)
        keep = torch.linspace(0, n - 1, min(n, 4000)).round().long()
        self.val_positions, self.val_world = val_set.positions[keep], val_set.world[keep]

    def to_device(self, device: torch.device) -> None:
        """Move FK and the validation poses (training batches are built on the CPU and moved by the loop)."""
        self.fk.to(device)
        self.joints, self.val_positions, self.val_world = to_device((self.joints, self.val_positions, self.val_world), device)

    def num_samples(self) -> int:
        return len(self.train_set)

    def batch(self, indices: Tensor, generator: torch.Generator) -> dict[str, Tensor]:
        noisy, clean, world = augment(self.train_set.positions[indices], self.train_set.world[indices], self.rig, generator,
                                      up=self.up, noise=self.weights.noise, noisy=self.weights.noisy, mirror=self.weights.mirror,
                                      reflection=self.reflection)  # fmt: skip
        return {"positions": noisy, "clean": clean, "world": world}

    def loss(self, model: nn.Module, batch: dict[str, Tensor]) -> tuple[Tensor, dict[str, float]]:
        net = model if isinstance(model, nn.parallel.DistributedDataParallel) else cast(IKGAT, model)
        return ik_loss(net, self.fk, batch["positions"], batch["clean"], batch["world"], self.joints, self.weights)

    @torch.no_grad()
    def validate(self, model: nn.Module) -> dict[str, float]:
        net = cast(IKGAT, model)  # the loop validates the bare network
        sums = {"val_local_deg": 0.0, "val_global_deg": 0.0, "val_mpjpe_pct": 0.0}
        n = self.val_positions.shape[0]
        for start in range(0, n, 1024):
            pos, world = self.val_positions[start : start + 1024], self.val_world[start : start + 1024]
            frames, local = model(pos)
            gt_local = world_to_local(world, net.parent_index, net.has_parent)
            sums["val_local_deg"] += float(matrix_geodesic(local, gt_local)[:, self.joints].mean()) * len(pos)
            sums["val_global_deg"] += float(
                matrix_geodesic(frames, world @ net.rest_frames)[:, self.joints].mean()
            ) * len(pos)
            root = -self.fk.offsets[net.ik_root] if net.ik_root else self.fk.offsets.new_zeros(3)
            _, p = self.fk(local, root.expand(len(pos), 3))
            sums["val_mpjpe_pct"] += (
                float((p - pos)[:, self.joints].norm(dim=-1).mean() * net.inv_height) * 100 * len(pos)
            )
        out = {k: v / n for k, v in sums.items()}
        out["val_local_deg"], out["val_global_deg"] = (
            math.degrees(out["val_local_deg"]),
            math.degrees(out["val_global_deg"]),
        )
        return out

    def model_config(self) -> dict[str, Any]:
        return model_config(self.net, self.rig, self.up, self.meta)


def model_config(net: IKGAT, rig: IKRig, up: int, meta: dict[str, Any]) -> dict[str, Any]:
    """The ``config.json`` of a model folder."""
    return {"format": FORMAT, "version": 1, "architecture": net.config.to_dict(), "parameters": net.num_parameters(),
            "skeleton": rig.skeleton.to_dict(), "ik_root": rig.ik_root, "height": rig.height, "up_axis": up,
            "training": meta}  # fmt: skip


def _options(arch: dict[str, Any], keys: Sequence[str]) -> str:
    """The ``ik train`` options that give ``arch``'s values of ``keys`` (``--hidden 8 --no-chain``)."""
    words = []
    for k in keys:
        flag, value = "--" + k.replace("_", "-"), arch.get(k)
        if k == "joint_embedding":  # no option sets it
            words.append(f"joint_embedding {value}")
        elif isinstance(value, bool):
            words.append(flag if value else "--no-" + flag[2:])
        else:
            words.append(f"{flag} {value}")
    return " ".join(words)


def _started_architecture(out: str | Path, resume: bool) -> dict[str, Any] | None:
    """The architecture recorded in ``out``'s ``config.json`` when resuming a run there (None otherwise): its
    root frame is not an option (a run started before it records none, and the resume check had refused it)."""
    config = Path(out) / "config.json"
    if not resume or not config.is_file():
        return None
    from skelanim.nn.checkpoint import read_model_config

    architecture = read_model_config(config).get("architecture")
    return architecture if isinstance(architecture, dict) else None


def _init_weights(init: str | Path, gat: GATConfig) -> tuple[dict[str, Tensor], dict[str, Any]]:
    """The weights and config of the ``init`` model folder, refused (one line) where its architecture is not
    ``gat``."""
    from skelanim.nn.checkpoint import load_model_files

    tensors, config = load_model_files(init)
    if config.get("format", FORMAT) != FORMAT:
        raise FormatError(f"--init needs an IK-GAT model folder ({FORMAT}), not {config.get('format')!r}", path=init)
    theirs, ours = config.get("architecture"), gat.to_dict()
    theirs = theirs if isinstance(theirs, dict) else {}
    # the root frame is not an option: fine-tuning keeps the one the weights were trained on (train_ik)
    differ = [k for k in ours if k in theirs and theirs[k] != ours[k] and k != "root_frame_descendants"]
    if differ:
        raise FormatError(f"--init weights do not fit this architecture: they were trained with {_options(theirs, differ)} "
                          f"(this run: {_options(ours, differ)}); give the same options", path=init)  # fmt: skip
    return tensors, config


def _check_init_skeleton(init: str | Path, config: dict[str, Any], rig: IKRig) -> None:
    """Refuse ``--init`` weights made for another skeleton than the data's, as one line that says how it differs."""
    skeleton = config.get("skeleton")
    names = skeleton.get("names") if isinstance(skeleton, dict) else None
    if not isinstance(names, list) or names == rig.skeleton.names:
        return
    ours = rig.skeleton.names
    why = (f"a skeleton of {len(names)} joints, the data's has {len(ours)}" if len(names) != len(ours) else
           f"another skeleton (joint {next(a for a, b in zip(names, ours) if a != b)!r} where the data has "
           f"{next(b for a, b in zip(names, ours) if a != b)!r})")  # fmt: skip
    raise FormatError(f"--init weights do not fit this data: they are for {why}", path=init)


def _load_init(net: IKGAT, init: str | Path, tensors: dict[str, Tensor]) -> None:
    """Load ``--init`` weights into ``net``; a misfit is one line (the first that torch gives after its header)."""
    try:
        net.load_state_dict(tensors)
    except RuntimeError as err:
        lines = [line.strip() for line in str(err).splitlines()[1:] if line.strip()]
        raise FormatError(f"--init weights do not fit this architecture: {lines[0] if lines else err}",
                          path=init) from None  # fmt: skip
    net.set_mean_pose(net.mean_pose.clone())


def _check_weights(weights: LossWeights) -> None:
    for name, value in asdict(weights).items():
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"loss weight {name} must be a finite number >= 0, got {value}")
    if weights.noisy > 1 or weights.mirror > 1:
        raise ValueError(f"noisy and mirror are fractions (0 to 1), got {weights.noisy} and {weights.mirror}")


def train(
    data: Sequence[str | Path],
    out: str | Path,
    *,
    val: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gat: GATConfig | None = None,
    loop: TrainConfig | None = None,
    weights: LossWeights | None = None,
    max_frames_per_file: int | None = None,
    resume: bool = False,
    init: str | Path | None = None,
    command: str | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train IK-GAT on motion files of one skeleton and write the model folder ``out``.

    Parameters
    ----------
    data : sequence of path
        Files, folders or glob patterns of motion files (one skeleton).
    out : path
        Model folder (``model.safetensors``, ``config.json``, ``train_state.safetensors``).
    val, exclude : sequence of str
        File-name patterns: validation files; files left out entirely (held out for evaluation).
    gat : GATConfig, optional
        Architecture.
    loop : TrainConfig, optional
        Loop settings (epochs, batch size, seed, ...).
    weights : LossWeights, optional
        Loss weights and augmentation.
    max_frames_per_file : int, optional
        Subsample long files (tests, quick runs).
    resume : bool
        Continue an interrupted run (same arguments).
    init : path, optional
        A model folder of the same architecture whose weights start the run (fine-tuning).
    command : str, optional
        The command line, recorded in ``config.json``.
    log : callable, optional
        Receives one line per epoch and setup facts.

    Returns
    -------
    dict
        :func:`skelanim.nn.fit`'s result plus ``"parameters"``, ``"train_frames"``, ``"val_frames"``.
    """
    gat, loop, weights = gat or GATConfig(), loop or TrainConfig(), weights or LossWeights()
    _check_weights(weights)
    init_files = None if init is None else _init_weights(init, gat)  # before the data: a misfit is said at once
    started = _started_architecture(out, resume) if init_files is None else init_files[1].get("architecture")
    if isinstance(started, dict):  # its weights saw features in that run's root frame (no key: world axes)
        gat = replace(gat, root_frame_descendants=GATConfig.from_dict(started).root_frame_descendants)
    ddp.setup()
    say = log or (lambda line: print(line, file=sys.stderr, flush=True))
    say = say if ddp.is_main() else (lambda line: None)
    started = time.perf_counter()
    train_files, val_files = checked_split(data, val=val, exclude=exclude)
    motions = load_motions(train_files + val_files)
    ik_root = detect_ik_root(motions)
    skeleton = motions[0].skeleton.copy()
    if ik_root:  # the IK root's OFFSET is free (its translation is animated); files disagree, take the median
        skeleton.offsets[ik_root] = torch.stack([m.skeleton.offsets[ik_root] for m in motions]).median(0).values
    rig = IKRig(skeleton, ik_root=ik_root)
    if init is not None and init_files is not None:
        _check_init_skeleton(init, init_files[1], rig)
    train_set = pose_set(motions[: len(train_files)], rig, train_files, max_frames=max_frames_per_file)
    val_set = pose_set(motions[len(train_files) :], rig, val_files, max_frames=max_frames_per_file)
    # the body's joints only: a dummy root above the IK root sits at minus the IK root's median OFFSET, which a
    # take may put metres off (Bandai-Namco's, 4.3 m along Z in some): with it the axis had read Z on Y-up files
    up = up_axis(train_set.positions[:: max(1, len(train_set) // 5000)][:, rig.evaluated])
    say(f"data: {len(train_files)} train files ({len(train_set)} frames), {len(val_files)} validation files "
        f"({len(val_set)} frames), loaded in {time.perf_counter() - started:.1f} s; ik_root {rig.skeleton.names[rig.ik_root]}, "
        f"up axis {'XYZ'[up]}, height {rig.height:.4g}, bone stretch {100 * max(train_set.stretch, val_set.stretch):.3g}% of height")  # fmt: skip
    torch.manual_seed(loop.seed)
    net = IKGAT(rig, gat)
    net.set_mean_pose(mean_pose(train_set.local))
    if init is not None and init_files is not None:
        _load_init(net, init, init_files[0])
    meta = {"command": command, "seed": loop.seed, "train_files": [Path(f).name for f in train_files],
            "val_files": [Path(f).name for f in val_files], "excluded_patterns": list(exclude),
            "val_patterns": list(val), "train_frames": len(train_set), "val_frames": len(val_set),
            "max_frames_per_file": max_frames_per_file, "loss": asdict(weights), "bone_stretch": train_set.stretch,
            "init": None if init is None else str(init)}  # fmt: skip
    task = IKTask(train_set, val_set, net, weights, up, meta)
    say(f"model: {net.num_parameters()} parameters ({gat})")
    result = fit(net, task, out, loop, resume=resume, log=say)
    result.update(parameters=net.num_parameters(), train_frames=len(train_set), val_frames=len(val_set))
    return result
