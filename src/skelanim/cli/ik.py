"""``skelanim ik train|solve|export|eval|fit-corrector``: neural and classical inverse kinematics (thin wrappers over
:mod:`skelanim.ik`)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import typer

from skelanim.cli import app
from skelanim.cli.files import command_line, require_suffix
from skelanim.cli.learn_common import (
    MAX_SEED,
    apply_threads,
    batch_size_option,
    check_lr,
    device_option,
    one_of,
    overwrite_option,
    progress_option,
    resume_option,
    run_device_option,
    split_values,
    threads_option,
)

ik_app = typer.Typer(help="Inverse kinematics: joint positions to joint rotations (IK-GAT and classical baselines).",
                     no_args_is_help=True)  # fmt: skip
app.add_typer(ik_app, name="ik")

def model_unit(model: Any) -> str:
    """The length unit an IK model's positions are in (guessed from its skeleton's stature, the rest pose's height
    where no head or foot is named: the shipped Bandai model, centimetres)."""
    from skelanim.core.units import guess_unit

    return guess_unit(model.skeleton.stature() or model.skeleton.height())


#: ``--scale`` and ``--fps`` for joint positions (``ik solve``, ``stream``).
POSITIONS_SCALE_HELP = "Multiply the positions by this first (e.g. 100 for metres into the shipped model's centimetres)."
POSITIONS_FPS_HELP = "Frame rate of positions whose file has none (.npy, a .csv without a time column; default 30)."


#: ``-m/--model`` of the commands that also take the model folder as their argument MODEL.
MODEL_OPTION_HELP = "The model folder, as MODEL gives it (the spelling of the other ik commands); give one of the two."


@ik_app.command()
def train(
    data: list[str] = typer.Option(
        ..., "--data", help="Motion files, folders or glob patterns of one skeleton (repeat)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write."),
    val: list[str] | None = typer.Option(
        None, "--val", help="File-name patterns that validate (repeat or comma-separate)."
    ),
    exclude: list[str] | None = typer.Option(
        None, "--exclude", help="File-name patterns left out (held out for eval)."
    ),
    epochs: int = typer.Option(40, "--epochs", min=1),
    batch_size: int = batch_size_option(256),
    lr: float = typer.Option(2e-3, "--lr", callback=check_lr),
    hidden: int = typer.Option(48, "--hidden", min=4),
    layers: int = typer.Option(3, "--layers", min=1),
    heads: int = typer.Option(4, "--heads", min=1),
    ffn_mult: int = typer.Option(2, "--ffn-mult", min=1),
    hops: int = typer.Option(2, "--hops", min=1),
    noise: float = typer.Option(
        0.01, "--noise", min=0.0, max=1.0, help="Largest input noise sigma (fraction of height, 0 to 1) for augmentation."
    ),
    noisy: float = typer.Option(0.5, "--noisy", min=0.0, max=1.0, help="Fraction of samples that get input noise."),
    chain: bool = typer.Option(
        True, "--chain/--no-chain", help="Compose each joint on its parent's corrected frame (see ik/model.py)."
    ),
    flat: bool = typer.Option(False, "--flat/--no-flat", help="No swing chain (see ik/model.py)."),
    mirror: float = typer.Option(0.0, "--mirror", min=0.0, max=1.0,
                                 help="Probability of mirroring a sample on the same rig (see ik/README.md)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    max_frames_per_file: int | None = typer.Option(None, "--max-frames-per-file", min=1),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, help="Stop after this many steps (quick runs)."),
    threads: int | None = threads_option(),
    device: str = device_option(),
    resume: bool = resume_option(),
    overwrite: bool = overwrite_option(),
    init: Path | None = typer.Option(
        None, "--init", help="Start from this model folder's weights (same architecture)."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Train IK-GAT on BVH files of one skeleton; writes OUT/model.safetensors + config.json (best epoch)."""
    from skelanim.ik.model import GATConfig
    from skelanim.ik.train import LossWeights
    from skelanim.ik.train import train as run
    from skelanim.nn.train import TrainConfig, check_output_folders

    if hidden % heads:
        raise typer.BadParameter(f"{hidden} features cannot be split over {heads} attention heads (--heads): "
                                 "give a multiple of it", param_hint="--hidden")  # fmt: skip
    check_output_folders(out, resume=resume, overwrite=overwrite)
    apply_threads(threads)
    result = run(
        data, out, val=split_values(val), exclude=split_values(exclude),
        gat=GATConfig(hidden=hidden, layers=layers, heads=heads, ffn_mult=ffn_mult, hops=hops, chain=chain, flat=flat),
        loop=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, max_steps=max_steps, progress=progress,
                         device=device),
        weights=LossWeights(noise=noise, noisy=noisy, mirror=mirror), max_frames_per_file=max_frames_per_file, resume=resume, init=init,
        command=command_line(),
    )  # fmt: skip
    from skelanim.nn import distributed

    if distributed.is_main():
        best = result["best"] or {}
        typer.echo(f"wrote {out} ({result['parameters']} parameters, {result['steps']} steps, "
                   f"{result['seconds']:.0f} s; best epoch {best.get('epoch')}: "
                   f"val local {best.get('val_local_deg', float('nan')):.2f} deg)")  # fmt: skip


def _load_model(model: Path | None):
    from skelanim.ik.solve import IKModel

    return IKModel.load(model)


@ik_app.command()
def solve(
    src: Path = typer.Argument(
        ..., help="Joint positions (.npy/.npz/.csv) or a motion file whose FK positions are taken."
    ),
    out: Path = typer.Option(..., "-o", "--out", help="Output motion (.bvh, ...) on the model's skeleton."),
    model: Path | None = typer.Option(None, "--model", "-m", help="Model folder (default: the shipped Bandai model)."),
    refine: bool = typer.Option(
        False, "--refine", help="Refine the network's answer: learned pose correction, then LM steps (positions within 0.5% of height "
        "on a body of the model's proportions)."
    ),
    method: str | None = typer.Option(
        None,
        "--method",
        help="Another method: gat, gat_refined, swing_rest, swing_mean, swing_warm, optimize_rest, "
        "optimize_mean or optimize_warm (overrides --refine).",
    ),
    threads: int | None = threads_option(),
    scale: float | None = typer.Option(None, "--scale", help=POSITIONS_SCALE_HELP),
    fps: float | None = typer.Option(None, "--fps", min=0.01, max=10000.0, help=POSITIONS_FPS_HELP),
    device: str = run_device_option(),
) -> None:
    """Turn joint positions into joint rotations; OUT keeps the input's frame rate.

    Positions must be in the model's units (the shipped model: centimetres): a file that names its unit is
    converted, with a note; --scale converts any other; positions in other units are refused."""

    import skelanim
    from skelanim.cli.files import check_output
    from skelanim.ik.solve import ALL_METHODS
    from skelanim.ik.solve import solve as run

    if method is not None and method not in ALL_METHODS:
        raise typer.BadParameter(
            f"unknown method {method!r}; choose from {', '.join(ALL_METHODS)}", param_hint="--method"
        )
    check_output(out, src)
    apply_threads(threads)
    ik_model = _load_model(model).to(device)
    data, note = read_positions(src, scale, fps, model_unit(ik_model))
    motion = run(data, ik_model, refine=refine, method=method, source=src)
    if note:
        typer.echo(note, err=True)
    skelanim.save(motion, out)
    typer.echo(f"wrote {out} ({motion.num_frames} frames at {motion.fps:g} fps, method {motion.metadata['ik_method']})")


def read_positions(src: Path, scale: float | None, fps: float | None, unit: str | None = None) -> tuple[Any, str]:
    """The :class:`~skelanim.io.positions.JointPositions` of ``src``, its rate ``fps`` where the file carries none
    (a file that does and differs is a ``--fps`` error) and its positions times ``scale`` (a positive factor whose
    product stays finite, else a ``--scale`` error): ``ik solve``'s and ``stream``'s ``--fps`` and ``--scale``.
    Without ``scale``, a file that names its length unit (``skelanim positions`` stores it) is converted into
    ``unit``, the model's (it had been refused with advice to multiply by hand); the note saying so comes back
    beside the positions ("" when none), for the caller to print once the work is done (an error stays one line)."""
    import numpy as np

    import skelanim
    from skelanim.core.units import UNITS, canonical_unit

    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise typer.BadParameter(f"a positive factor, not {scale:g}", param_hint="--scale")
    if src.suffix.lower() in skelanim.io.MOTION_FORMATS:  # a scene of several figures is refused, as by every
        from skelanim.cli.files import load_one_figure  # one-body command (its first figure had been solved alone)
        from skelanim.io.positions import JointPositions

        data = JointPositions.from_motion(load_one_figure(src, "ik solve"))
    else:
        data = skelanim.load_positions(src)
    if fps is not None and data.fps is not None and abs(fps / data.fps - 1.0) > 1e-6:
        raise typer.BadParameter(f"{src} says its rate itself ({data.fps:g} fps); --fps {fps:g} is for files that "
                                 "carry none", param_hint="--fps")  # fmt: skip
    if fps is not None:
        data = dataclasses.replace(data, fps=fps)
    declared = canonical_unit(str(data.metadata.get("units") or ""))
    note = ""
    if scale is None and unit is not None and declared is not None and declared != unit:
        scale = UNITS[declared] / UNITS[unit]
        note = f"note: {src} says its positions are in {declared}: scaled by {scale:g} into the model's {unit}"
    if scale is not None:
        with np.errstate(over="ignore"):  # an overflow is said below, in one line
            data = dataclasses.replace(data, positions=data.positions * scale)
        if not np.isfinite(np.asarray(data.positions)).all():  # the input check would blame the file
            raise typer.BadParameter(f"{scale:g} times the positions of {src} overflows", param_hint="--scale")
    return data, note


@ik_app.command()
def export(
    model: Path | None = typer.Argument(None, help="Model folder (default: the shipped Bandai model)."),
    out: Path = typer.Option(..., "-o", "--out", help="The .onnx file to write."),
    model_option: Path | None = typer.Option(None, "--model", "-m", help=MODEL_OPTION_HELP),
) -> None:
    """Export the network to ONNX for engine runtimes.

    World positions (batch, J, 3) in the skeleton's units -> local quaternions (batch, J, 4), w x y z. The file's
    metadata (skelanim.joints, .parents, .offsets, .units, .up_axis) gives the joint order, the unit and the rest
    offsets the rotations are for."""
    import numpy as np

    from skelanim.ik.onnx import OrtRunner, export_onnx

    if model is not None or model_option is not None:  # neither: the shipped model
        model = one_of(model, model_option, "MODEL", "-m/--model", "the model folder")
    require_suffix(out, (".onnx",), "the network")
    ik_model = _load_model(model)
    export_onnx(ik_model.net, out, rig=ik_model.rig, up_axis=ik_model.config.get("up_axis"))
    probe = ik_model.probe_positions(16).float()
    diff = float(np.abs(OrtRunner(out)(probe.numpy()) - ik_model.predict(probe, runtime="torch").numpy()).max())
    typer.echo(f"wrote {out} (onnxruntime vs torch on 16 perturbed mean poses: max abs diff {diff:.2e})")


@ik_app.command("eval")
def evaluate(
    data: list[str] = typer.Option(..., "--data", help="Motion files, folders or glob patterns (repeat)."),
    model: Path | None = typer.Option(None, "--model", "-m", help="Model folder (default: the shipped Bandai model)."),
    methods: list[str] | None = typer.Option(
        None, "--methods", help="Comma-separated or repeated (default: all but swing_warm)."
    ),
    noise: float = typer.Option(0.0, "--noise", min=0.0, max=1.0, help="Gaussian input noise, fraction of height (0 to 1)."),
    max_frames: int | None = typer.Option(None, "--max-frames", min=1, help="Frames sampled evenly across the files."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    threads: int | None = threads_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    device: str = run_device_option(),
) -> None:
    """Accuracy and speed of IK methods side by side, on files held out from training.

    MPJPE (``mpjpe``) is in the skeleton's units (the shipped model's: centimetres), the mean over frames and joints
    of the distance of each joint from its clean true position; ``% height`` (``mpjpe_pct_height``) is it in percent
    of the skeleton's height (``height``, in its units); ``local deg``/``global deg`` are degrees. ``--json`` gives
    ``noise`` as ``--noise`` does, a fraction of the height (the text: percent)."""
    from skelanim.ik.evaluate import evaluate as run
    from skelanim.ik.evaluate import format_table
    from skelanim.ik.solve import ALL_METHODS, METHODS

    apply_threads(threads)
    if methods is not None and not split_values(methods):
        raise typer.BadParameter("no method named (an empty list)", param_hint="--methods")
    chosen = split_values(methods) or list(METHODS)
    unknown = [m for m in chosen if m not in ALL_METHODS]
    if unknown:
        raise typer.BadParameter(
            f"unknown method {unknown[0]!r}; choose from {', '.join(ALL_METHODS)}", param_hint="--methods"
        )
    report = run(data, _load_model(model).to(device), methods=chosen, noise=noise, max_frames=max_frames, seed=seed)
    if as_json:
        typer.echo(json.dumps({"frames": report["frames"], "height": report["height"], "noise": noise,
                               "methods": report["methods"]}, indent=1))  # fmt: skip
    else:
        typer.echo(format_table(report, noise=noise))


@ik_app.command("fit-corrector")
def fit_corrector(
    model: Path | None = typer.Argument(None, help="Model folder to fit for and write into (named even for the "
                                        "shipped one, skelanim/ik/pretrained in the installed package or "
                                        "src/skelanim/ik/pretrained in a checkout, so that nothing rewrites it by "
                                        "default; or -m/--model)."),
    data: list[str] = typer.Option(..., "--data", help="The model's training files, folders or patterns (repeat)."),
    val: list[str] | None = typer.Option(None, "--val", help="Validation file patterns (reported, not fitted)."),
    exclude: list[str] | None = typer.Option(None, "--exclude", help="Held-out file patterns (left out)."),
    skip: list[str] | None = typer.Option(None, "--skip", help="Joints left as the network answers them."),
    ridge: float = typer.Option(100.0, "--ridge", min=0.0, help="Ridge weight of the regression."),
    threads: int | None = threads_option(),
    model_option: Path | None = typer.Option(None, "--model", "-m", help=MODEL_OPTION_HELP),
    progress: bool = progress_option(),
) -> None:
    """Fit the refinement's pose correction for a model (seconds).

    It is stored in the model's folder as refine.safetensors + refine.json and used by gat_refined (see
    ik/README.md, "Refinement")."""
    from skelanim.ik.refine import fit_corrector as run

    folder = one_of(model, model_option, "MODEL", "-m/--model", "the model folder")
    if not math.isfinite(ridge):
        raise typer.BadParameter(f"a finite weight, not {ridge:g}", param_hint="--ridge")
    apply_threads(threads)
    ik_model = _load_model(folder)
    try:
        corrector = run(ik_model, data, val=split_values(val), exclude=split_values(exclude), skip=split_values(skip), ridge=ridge,
                        progress=progress)
    except ValueError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from None
    assert ik_model.path is not None
    corrector.save(ik_model.path)
    typer.echo(json.dumps({k: v for k, v in corrector.info.items() if k != "data"}))
