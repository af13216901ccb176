"""``skelanim retarget SRC --to TARGET -o OUT``, ``skelanim retarget train`` and ``skelanim retarget eval``
(thin wrappers over :mod:`skelanim.retarget`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from typer import _click as click
from typer.core import TyperGroup

from skelanim.cli import app
from skelanim.cli.files import command_line, load_one_figure
from skelanim.cli.learn_common import (
    MAX_SEED,
    apply_threads,
    batch_size_option,
    check_lr,
    device_option,
    overwrite_option,
    resume_option,
    run_device_option,
    split_values,
    threads_option,
)


class _DefaultRun(TyperGroup):
    """A group whose first argument, when it is not a subcommand, is the source file of ``run``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


retarget_app = typer.Typer(cls=_DefaultRun, no_args_is_help=True,
                           help="Retarget motion onto another skeleton (copy, IK, NKN); train and evaluate NKN.")  # fmt: skip
app.add_typer(retarget_app, name="retarget")


def _model_for(method: str, model: Path | None) -> None:
    """Refuse an NKN model folder given to a method that has no network (it would be ignored)."""
    if model is not None and method != "nkn":
        raise typer.BadParameter(f"a model is for --method nkn, not --method {method} (which uses none)",
                                 param_hint="-m/--model")  # fmt: skip


#: ``--data`` of ``retarget train`` and ``eval``: the shared mocap folder, whose layout (families, the reference pair)
#: they read; repeatable so that a second one is refused rather than taking the first's place without a word.
DATA_OPTION: Any = typer.Option([Path("../shared/data/mocap")], "--data", envvar="SKELANIM_DATA",
                                help="The shared mocap folder (one).")  # fmt: skip


def _mocap_folder(data: list[Path]) -> Path:
    """The one ``--data`` folder (or ``SKELANIM_DATA``), checked up front: more than one, a missing folder or a file
    is one line (a file had been reported as a path inside it, "FILE.bvh/bandai_namco_1/...: Not a directory")."""
    from skelanim.retarget import RetargetError

    if len(data) != 1:
        given = ", ".join(map(str, data))
        raise RetargetError(f"--data (or SKELANIM_DATA): one shared mocap folder, not {len(data)} ({given}); the "
                            "command reads that folder's layout, not a list of clips")  # fmt: skip
    (folder,) = data
    if folder.exists() and not folder.is_dir():
        raise RetargetError("a file, not a folder (--data, or SKELANIM_DATA: the shared mocap folder)", path=folder)
    if not folder.is_dir():
        raise RetargetError(f"{folder}: no such folder (--data, or SKELANIM_DATA: the shared mocap folder)")
    return folder


@retarget_app.command("run")
def run(
    src: Path = typer.Argument(..., help="Source motion (.bvh, DeepMimic .txt)."),
    to: Path = typer.Option(..., "--to", help="Any motion file of the target skeleton; its frames calibrate that skeleton's bone frames (--calibrate) and set where its feet stand (its floor); its motion is not used."),
    out: Path = typer.Option(..., "-o", "--out", help="Output motion on the target's full skeleton (.bvh, .txt, ...)."),
    method: str = typer.Option("copy", "--method", help="copy, ik, nkn or naive."),
    source_map: Path | None = typer.Option(None, "--map", help="Joint mapping (JSON/YAML) for the source."),
    target_map: Path | None = typer.Option(None, "--target-map", help="Joint mapping (JSON/YAML) for the target (the DeepMimic humanoid's too)."),
    model: Path | None = typer.Option(None, "--model", "-m", help="NKN model folder (default: the shipped model)."),
    show_map: bool = typer.Option(False, "--show-map", help="Print both joint mappings."),
    calibrate: bool = typer.Option(
        True,
        "--calibrate/--no-calibrate",
        help="Calibrate the bone frames of a skeleton whose zero pose is no body pose (Bandai-Namco's, the "
        "production rig's) on its own motion: SRC's, and the --to file's. Without it their limbs' twist is off "
        "by up to a half turn (positions are right); NKN models trained before 2026-12-03 need --no-calibrate.",
    ),
    device: str = run_device_option(),
    threads: int | None = threads_option(),
) -> None:
    """Retarget SRC onto the skeleton of the --to file.

    Onto the DeepMimic humanoid (--to humanoid.urdf or a DeepMimic .txt/.json clip) the result goes through the
    robot fix (hinge knees and elbows, feet on the ground) and is written in the output's format: a DeepMimic clip
    for .txt/.json, a BVH of the humanoid for .bvh."""
    import skelanim
    from skelanim.cli.files import check_output
    from skelanim.retarget import METHODS, Retargeter, RetargetError
    from skelanim.retarget.retargeter import make_rig, target_floor_of, upright

    if method not in METHODS:
        raise RetargetError(f"--method: unknown method {method!r}; choose from {', '.join(METHODS)}")
    _model_for(method, model)
    check_output(out, src, to, source_map, target_map)
    apply_threads(threads)
    motion = load_one_figure(src, "retarget")
    if out.suffix.lower() in (".txt", ".json") and to.suffix.lower() not in (".txt", ".json", ".urdf"):
        raise RetargetError(f"{out}: DeepMimic output needs a DeepMimic target (--to a .txt clip or humanoid.urdf)")
    if to.suffix.lower() in (".urdf", ".txt", ".json"):  # the DeepMimic humanoid, however the target is named
        from skelanim.retarget.robot import humanoid_rigs, save_deepmimic, to_deepmimic

        if to.suffix.lower() != ".urdf":
            skelanim.load(to)  # a clip of the humanoid: read, so that a missing or broken one is said
        urdf = to if to.suffix.lower() == ".urdf" else None
        if show_map:  # the mappings to_deepmimic uses (its rigs are made the same way)
            source_rig, target_rig = humanoid_rigs(motion, source_map=source_map, target_map=target_map, urdf=urdf,
                                                   calibrate=calibrate, source=str(src), target=str(to))  # fmt: skip
            assert source_rig.mapping is not None and target_rig.mapping is not None
            typer.echo(f"source {src}:\n{source_rig.mapping.describe()}\ntarget {to}:\n{target_rig.mapping.describe()}")
        make_rig(motion.skeleton, source_map, source=str(src))  # a source that cannot be mapped, named as onto a BVH
        robot = to_deepmimic(motion, method=method, source_map=source_map, target_map=target_map, model=model,
                             urdf=urdf, calibrate=calibrate, device=device)  # fmt: skip
        if out.suffix.lower() in (".txt", ".json"):
            save_deepmimic(robot, out)
        else:  # .bvh (or any other motion format): the humanoid's skeleton in that format, not DeepMimic JSON
            skelanim.save(robot, out)
        typer.echo(f"wrote {out} ({robot.num_frames} frames at {robot.fps:g} fps, method {method}, DeepMimic humanoid)")
        return
    target_motion = load_one_figure(to, "retarget")
    target = target_motion.skeleton
    (source_y, source_turn), (target_y, target_turn) = upright(motion), upright(target_motion)
    source_rig, target_rig = _rigs(source_y, target_y, src, to, source_map, target_map, calibrate)
    if show_map:
        assert source_rig.mapping is not None and target_rig.mapping is not None
        typer.echo(f"source {src}:\n{source_rig.mapping.describe()}\ntarget {to}:\n{target_rig.mapping.describe()}")
    floor = target_floor_of(target_rig, target_y)  # where the --to file's figure stands
    retargeter = Retargeter(source_rig, target_rig, method, model=model, target_floor=floor, device=device,
                            source_turn=source_turn, target_turn=target_turn)  # fmt: skip
    if retargeter.net is not None and retargeter.net.config.calibrated_frames and not calibrate:
        typer.echo("warning: this NKN model was trained on calibrated bone frames; without --calibrate its limbs "
                   "are off (foot skating 2.9 times the calibrated run's on a Bandai walk onto CMU)", err=True)  # fmt: skip
    result = retargeter(motion)
    skelanim.save(result, out)
    typer.echo(f"wrote {out} ({result.num_frames} frames at {result.fps:g} fps, {target.num_joints} joints, method {method})")


def _rigs(motion: Any, target_motion: Any, src: Path, to: Path, source_map: Path | None, target_map: Path | None,
          calibrate: bool) -> tuple[Any, Any]:  # fmt: skip
    """Both canonical rigs; a motion calibrates its skeleton's bone frames where its zero pose is no body pose."""
    from skelanim.retarget.retargeter import make_rig

    source_rig = make_rig(motion if calibrate else motion.skeleton, source_map, source=str(src))
    target_rig = make_rig(target_motion if calibrate else target_motion.skeleton, target_map, source=str(to),
                          option="--target-map")  # fmt: skip
    return source_rig, target_rig


@retarget_app.command("export")
def export(
    src: Path = typer.Argument(..., help="A motion file of the source skeleton (its frames calibrate its bone frames)."),
    to: Path = typer.Option(..., "--to", help="A motion file of the target skeleton (its frames calibrate it)."),
    out: Path = typer.Option(..., "-o", "--out", help="The .onnx file to write."),
    method: str = typer.Option("nkn", "--method", help="nkn, copy, ik or naive (default nkn, the streaming network; "
                               "skelanim retarget run's default is copy)."),
    fps: float | None = typer.Option(None, "--fps", min=1.0, max=1000.0, help="The stream's frame rate (default: SRC's)."),
    source_map: Path | None = typer.Option(None, "--map", help="Joint mapping (JSON/YAML) for the source."),
    target_map: Path | None = typer.Option(None, "--target-map", help="Joint mapping (JSON/YAML) for the target."),
    model: Path | None = typer.Option(None, "--model", "-m", help="NKN model folder (default: the shipped model)."),
    calibrate: bool = typer.Option(True, "--calibrate/--no-calibrate", help="As for skelanim retarget."),
    dtype: str = typer.Option("float32", "--dtype", help="float32 (engines take no float64) or float64 (exactly the "
                              "Retargeter's step)."),
    threads: int | None = threads_option(),
) -> None:
    """Write the streaming retargeter from SRC's skeleton onto the --to file's as ONNX for engine runtimes.

    The --method (default nkn) runs one frame in, one out, the stream state in and out
    (src/skelanim/retarget/export.py says what each input is). SRC's frames also fix where its floor lies (where
    its feet stand), so a live source must stand where SRC does."""
    from skelanim.cli.files import check_not_an_input, require_suffix
    from skelanim.retarget import METHODS, Retargeter, RetargetError
    from skelanim.retarget.export import export_step
    from skelanim.retarget.retargeter import target_floor_of, upright

    if method not in METHODS:
        raise RetargetError(f"--method: {method!r} is no method; choose from {', '.join(METHODS)}")
    _model_for(method, model)
    if dtype not in ("float32", "float64"):
        raise typer.BadParameter(f"float32 or float64, not {dtype!r}", param_hint="--dtype")
    require_suffix(out, (".onnx",), "a streamed retargeter")
    check_not_an_input(out, src, to, source_map, target_map)
    apply_threads(threads)
    if to.suffix.lower() in (".urdf", ".txt", ".json"):
        raise RetargetError("the DeepMimic humanoid's robot fix (hinge joints, feet on the ground) is not part of a "
                            "streamed step: export onto a BVH skeleton", path=to)  # fmt: skip
    motion, target_motion = load_one_figure(src, "retarget export"), load_one_figure(to, "retarget export")
    (source_y, source_turn), (target_y, target_turn) = upright(motion), upright(target_motion)
    source_rig, target_rig = _rigs(source_y, target_y, src, to, source_map, target_map, calibrate)
    retargeter = Retargeter(source_rig, target_rig, method, model=model, fps=fps or motion.fps,
                            floor=target_floor_of(source_rig, source_y),  # where SRC's feet stand, turned Y up
                            target_floor=target_floor_of(target_rig, target_y),
                            source_turn=source_turn, target_turn=target_turn)  # fmt: skip
    export_step(retargeter, out, dtype=dtype)
    typer.echo(f"wrote {out} (method {method}, {dtype}, {motion.skeleton.num_joints} joints in, {target_motion.skeleton.num_joints} out, "
               f"{retargeter.fps:g} fps; {out.stat().st_size / 1e6:.2f} MB)")


def _own_families(specs: list[str]) -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """``--family NAME=SKELETON_FILE[:GLOB]`` as :func:`~skelanim.retarget.data.load_families`' ``extra`` (absolute
    paths), each refused in one line before any data is read."""
    from skelanim.retarget.data import DEFAULT_FAMILIES, RESERVED_NAMES

    out: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        file, _, pattern = rest.partition(":")
        if not name.isidentifier() or not file:
            raise typer.BadParameter(f"expected NAME=SKELETON_FILE or NAME=SKELETON_FILE:GLOB, got {spec!r}",
                                     param_hint="--family")  # fmt: skip
        if name in DEFAULT_FAMILIES or name in out or name in RESERVED_NAMES:
            raise typer.BadParameter(f"{name!r} is already a family's name (or the training's own draw)",
                                     param_hint="--family")  # fmt: skip
        skeleton = Path(file).expanduser().resolve()
        if not skeleton.is_file():
            raise typer.BadParameter(f"{file}: no such skeleton file", param_hint="--family")
        clips = str(Path(pattern).expanduser().resolve()) if pattern else str(skeleton.parent / f"*{skeleton.suffix}")
        out[name] = (str(skeleton), (clips,), ())
    return out


@retarget_app.command()
def train(
    ctx: typer.Context,
    data: list[Path] = DATA_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write."),
    epochs: int = typer.Option(30, "--epochs", min=1),
    samples: int = typer.Option(800, "--samples", min=1, help="Samples per epoch."),
    batch_size: int = batch_size_option(16),
    lr: float = typer.Option(1e-3, "--lr", callback=check_lr),
    hidden: int = typer.Option(128, "--hidden", min=4),
    window: int = typer.Option(48, "--window", min=8, help="Frames per training window (30 fps)."),
    families: str | None = typer.Option(None, "--families", help="Comma-separated subset of the families."),
    family: list[str] | None = typer.Option(None, "--family", help="A family of your own, NAME=SKELETON_FILE or "
                                            "NAME=SKELETON_FILE:GLOB (its clips; default the skeleton file's folder's "
                                            "files of its suffix): your character's rig and motion, trained on as "
                                            "source and target (repeat for more)."),
    init: str | None = typer.Option(None, "--init", help="Fine-tune this NKN model folder, or 'shipped' (its "
                                    "architecture kept: no --hidden; the loop, loss and data are this run's)."),
    max_files: int | None = typer.Option(None, "--max-files", min=1, help="Clips per family, counted among the files "
                                         "it can read (quick runs)."),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    threads: int | None = threads_option(),
    device: str = device_option(),
    resume: bool = resume_option(),
    overwrite: bool = overwrite_option(),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Train NKN unsupervised (cycle, reconstruction, adversarial, twist, smoothness, foot contacts)."""
    from skelanim.cli.finetune import given
    from skelanim.nn.train import TrainConfig, check_output_folders
    from skelanim.retarget.model import NKNConfig
    from skelanim.retarget.train import train as run_training

    if init is not None and given(ctx, "hidden"):
        raise typer.BadParameter("is the --init model's own size, kept when fine-tuning: leave it out", param_hint="--hidden")
    if init is not None and init != "shipped" and Path(init).resolve() == out.resolve():
        raise typer.BadParameter("is the output folder: fine-tune into another one", param_hint="--init")
    check_output_folders(out, resume=resume, overwrite=overwrite)
    extra = _own_families(family or [])
    chosen = families.split(",") if families else None
    if chosen is not None and (left := [n for n in extra if n not in chosen]):  # it had been dropped without a word
        raise typer.BadParameter(f"{left[0]!r} (--family) is not among them: add it, or leave its --family out",
                                 param_hint="--families")  # fmt: skip
    mocap = _mocap_folder(data)
    apply_threads(threads)
    result = run_training(
        mocap, out, loop=TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, warmup_steps=100, seed=seed,
                                    max_steps=max_steps, progress=progress, device=device),
        config=NKNConfig(hidden=hidden), families=families.split(",") if families else None, max_files=max_files,
        window=window, samples=samples, resume=resume,
        command=command_line(), extra=extra or None, init=init,
    )  # fmt: skip
    from skelanim.nn import distributed

    if distributed.is_main():  # under torchrun only rank 0 reports
        best = result["best"] or {}
        typer.echo(f"wrote {out} ({result['parameters']} parameters, {result['steps']} steps, {result['seconds']:.0f} s; "
                   f"best epoch {best.get('epoch')}: val_total {best.get('val_total', float('nan')):.4g})")  # fmt: skip


#: ``retarget eval``'s methods without ``--methods``.
DEFAULT_EVAL_METHODS = ("copy", "ik", "nkn", "naive")


@retarget_app.command("eval")
def evaluate(
    data: list[Path] = DATA_OPTION,
    model: Path | None = typer.Option(None, "--model", "-m", help="NKN model folder (default: the shipped model)."),
    methods: list[str] | None = typer.Option(None, "--methods", help="Comma-separated or repeated (default: "
                                             f"{','.join(DEFAULT_EVAL_METHODS)})."),
    clips: int = typer.Option(14, "--clips", min=1, help="Bandai dataset-2 clips for the proportion targets."),
    max_frames: int | None = typer.Option(None, "--max-frames", min=1, help="Frames per clip (quick runs)."),
    threads: int | None = threads_option(),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    calibrate: bool = typer.Option(True, "--calibrate/--no-calibrate",
                                   help="Calibrated bone frames where a zero pose is no body pose (as retarget run)."),
    device: str = run_device_option(),
) -> None:
    """Every method side by side: the reference pair, foot skating, penetration, end-effector similarity
    and joint limits on changed proportions."""
    from skelanim.retarget import METHODS, RetargetError
    from skelanim.retarget.evaluate import evaluate as run_eval
    from skelanim.retarget.evaluate import format_table

    apply_threads(threads)
    chosen = split_values(methods) if methods is not None else list(DEFAULT_EVAL_METHODS)
    if not chosen:
        raise RetargetError(f"--methods: name one or more of {', '.join(METHODS)}")
    unknown = [m for m in chosen if m not in METHODS]
    if unknown:
        raise RetargetError(f"--methods: unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}")
    if model is not None and "nkn" not in chosen:
        raise typer.BadParameter(f"a model is for the nkn method, which --methods {','.join(chosen)} leaves out",
                                 param_hint="-m/--model")  # fmt: skip
    mocap = _mocap_folder(data)
    report: dict[str, Any] = run_eval(mocap, methods=chosen, model=model, clips=clips, max_frames=max_frames,
                                      calibrate=calibrate, device=device)
    typer.echo(json.dumps(report, indent=1) if as_json else format_table(report))
