"""``skelanim learn recognize train|combine|eval``: thin wrappers over :mod:`skelanim.learn.recognize_train`,
:mod:`skelanim.learn.ensemble` and :mod:`skelanim.learn.recognize` (the shared options and helpers are
:mod:`skelanim.cli.learn_common`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from skelanim.cli.finetune import begin_finetuning, finetune, init_option, member_folders
from skelanim.cli.learn_common import (
    DATA_HELP,
    EMA_HELP,
    FPS_OPTION,
    KEEP_HELP,
    LABELS_OPTION,
    MAX_SEED,
    SPLIT_HELP,
    TEST_SPEED_OPTION,
    batch_size_option,
    check_keep,
    check_lr,
    check_plot,
    check_split,
    combine_folders,
    command_line,
    device_option,
    echo_json,
    load_dataset,
    note_trained_on,
    overwrite_option,
    range_option,
    recognize_app,
    report_training,
    resume_option,
    run_device_option,
    split_parts,
    threads_option,
    train_config,
)

#: ``learn recognize train``'s options that a fine-tuned model keeps as they are (``--init``).
ARCH_SETTINGS = ("window", "readout", "test_mirror", "test_speeds", "adaptive", "path", "joint_input", "joint_affine",
                 "std_floor", "centre", "rescale", "rotations")


@recognize_app.command("train")
def recognize_train(
    ctx: typer.Context,
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write."),
    arch: str = typer.Option("stgcn", "--arch", help="stgcn or cnn (the temporal-CNN baseline)."),
    split: str = typer.Option("style", "--split", help=SPLIT_HELP, callback=check_split),
    window: int = typer.Option(64, "--window", min=8),
    stride: int = typer.Option(8, "--stride", min=1),
    fps: float = FPS_OPTION,
    epochs: int = typer.Option(12, "--epochs", min=1),
    batch_size: int = batch_size_option(64),
    lr: float = typer.Option(2e-3, "--lr", callback=check_lr),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    ema: float = typer.Option(0.0, "--ema", min=0.0, max=0.99999, help=EMA_HELP),
    keep: str = typer.Option("best", "--keep", help=KEEP_HELP, callback=check_keep),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1),
    threads: int | None = threads_option(),
    device: str = device_option(),
    mirror: bool = typer.Option(True, "--mirror/--no-mirror", help="Left/right mirror augmentation (labels swap sides)."),
    balance: float = typer.Option(0.0, "--balance", min=0.0, help="Class weights ∝ (training windows)^-BALANCE."),
    readout: int = typer.Option(
        128, "--readout", min=0, help="ST-GCN: 0 averages joints and frames; N > 0 keeps joints, then a linear to N features."
    ),
    file_balance: float = typer.Option(
        0.0, "--file-balance", min=0.0, help="Window weights ∝ (windows of its file)^-FILE_BALANCE: short files count more."
    ),
    amplitude: tuple[float, float] = range_option("--amplitude", "Scale joint rotations about the mean pose by LO-HI."),
    test_mirror: bool = typer.Option(False, "--test-mirror/--no-test-mirror", help="Also classify each window's mirror."),
    test_speeds: list[float] = TEST_SPEED_OPTION,
    adaptive: bool = typer.Option(False, "--adaptive/--no-adaptive", help="ST-GCN: learned dense adjacency (2s-AGCN)."),
    path: bool = typer.Option(
        False, "--path/--no-path", help="Also give the pelvis path and heading seen from the window's middle frame."
    ),
    posture: float = typer.Option(
        0.0, "--posture", min=0.0, help="Posture augmentation: random constant joint-rotation offsets, std in degrees."
    ),
    style_weight: float = typer.Option(0.5, "--style-weight", min=0.0, help="Weight of the style head's loss."),
    style_adversary: float = typer.Option(
        0.0, "--style-adversary", min=0.0, help="Reverse the style head's gradient into the network, scaled by this."
    ),
    joint_input: int = typer.Option(
        0, "--joint-input", min=0, help="ST-GCN: each joint's features first go through its own linear map to N channels."
    ),
    joint_affine: bool = typer.Option(False, "--joint-affine/--no-joint-affine", help="ST-GCN: per-joint affine per block."),
    turn: float = typer.Option(
        0.0, "--turn", min=0.0, max=1.0, help="Chance that a walk or walk-turn window gets a new heading sweep and label."
    ),
    std_floor: float = typer.Option(
        0.0, "--std-floor", min=0.0, help="No input channel's standard deviation below this share of the same "
        "channel's median over the joints (a channel constant in training would blow small differences up).",
    ),
    centre: bool = typer.Option(False, "--centre/--no-centre", help="ST-GCN: pose channels minus their window mean."),
    rescale: bool = typer.Option(False, "--rescale", help="ST-GCN with --centre: window motion over its RMS too."),
    rotations: bool = typer.Option(
        True, "--rotations/--no-rotations", help="Joint rotations as input (without: positions and root motion only)."
    ),
    frame_jitter: float = typer.Option(
        0.0, "--frame-jitter", min=0.0, help="Turn each joint's frame at random, children compensated (std, degrees)."
    ),
    travel: tuple[float, float] = range_option("--travel", "Scale each window's ground travel by LO-HI (steps kept)."),
    init: str | None = init_option(),
    resume: bool = resume_option(),
    overwrite: bool = overwrite_option(),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Train a recogniser (ST-GCN or the CNN baseline), or fine-tune one (--init); OUT gets model.safetensors +
    config.json."""
    from skelanim.learn.recognize import ARCHITECTURES, Recognizer
    from skelanim.learn.recognize_train import train_recognizer
    from skelanim.nn.train import check_output_folders

    if arch not in ARCHITECTURES:
        raise typer.BadParameter(f"unknown architecture {arch!r}; choose from {', '.join(ARCHITECTURES)}", param_hint="--arch")
    start = None
    if init is not None:  # the model's own settings: architecture, window, rate, statistics, test-time votes
        shipped = "recognize" if arch == "stgcn" else "recognize_cnn"
        start, fps = begin_finetuning(ctx, Recognizer, init, arch, shipped, ARCH_SETTINGS, fps, out)
        arch, window, path = start.config["arch"], int(start.config["window"]), bool(start.config["path"])
    if rescale and not centre:
        raise typer.BadParameter("needs --centre (it scales the motion about the window mean)", param_hint="--rescale")
    if turn and path:  # relabelled turns would keep the path features of the straight walk they came from
        whose = "the --init model's" if start is not None else "--path"
        raise typer.BadParameter(f"cannot be combined with the window path features ({whose})", param_hint="--turn")
    stgcn_only = [o for o, v in (("--readout", readout != 128), ("--adaptive", adaptive), ("--joint-input", joint_input),
                                 ("--joint-affine", joint_affine), ("--centre", centre), ("--rescale", rescale)) if v]  # fmt: skip
    if arch == "cnn" and stgcn_only:  # these had been dropped without a word
        raise typer.BadParameter(f"{stgcn_only[0]} is an ST-GCN option; --arch cnn has none", param_hint=stgcn_only[0])
    check_output_folders(out, *(member_folders(out, start) if start else []), resume=resume, overwrite=overwrite)
    flags = {"readout": readout, "adaptive": adaptive, "joint_input": joint_input, "joint_affine": joint_affine,
             "centre": centre, "rescale": rescale}  # fmt: skip
    options = {k: v for k, v in flags.items() if v} if arch == "stgcn" else {}
    rig = start.members[0][0].rig if start is not None else None  # the --init model's: it reads joints as its own
    ds = load_dataset(data, fps, threads, progress, labels=labels, need=("content",), rig=rig, owner="the recogniser",
                      hint=" (--init)")  # fmt: skip
    parts = split_parts(ds, split, seed)
    longest = max(clip.num_frames for clip in parts["train"].clips)
    if window > longest:  # every window would be a padded clip (100,000 frames had run out of memory)
        raise typer.BadParameter(f"{window} frames is longer than every training clip (the longest: {longest} frames "
                                 f"at {fps:g} fps)", param_hint="--window")  # fmt: skip
    loop = train_config(epochs, batch_size, lr, seed, max_steps, progress, ema=ema, keep=keep, device=device)
    augment: dict[str, Any] = {"mirror": mirror, "balance": balance, "file_balance": file_balance, "posture": posture,
               "amplitude": None if amplitude == (1.0, 1.0) else amplitude, "style_weight": style_weight,
               "style_adversary": style_adversary, "turn": turn, "frame_jitter": frame_jitter,
               "travel": None if travel == (1.0, 1.0) else travel}  # fmt: skip
    if start is not None:
        from skelanim.learn.ensemble import combine_recognizers

        def train_one(model: Any, folder: Path, member_loop: Any, again: bool, record: dict[str, Any]) -> dict[str, Any]:
            return train_recognizer(parts["train"], parts["val"], folder, stride=stride, loop=member_loop, resume=again,
                                    command=command_line(), init=model, init_record=record, **augment)  # fmt: skip

        return finetune(start, out, loop, resume, train_one,
                        lambda folders, target: combine_recognizers(folders, target, command=command_line()), "val_error")  # fmt: skip
    result = train_recognizer(parts["train"], parts["val"], out, arch=arch, window=window, stride=stride, loop=loop,
                              test_mirror=test_mirror, test_speeds=tuple(test_speeds) or (1.0,), path=path,
                              arch_options=options or None, std_floor=std_floor, rotations=rotations, resume=resume,
                              command=command_line(), **augment)  # fmt: skip
    report_training(out, result, "val_error")


@recognize_app.command("combine")
def recognize_combine(
    models: list[Path] = typer.Argument(
        ..., help="Two or more recogniser folders trained on the same data (other seeds or architecture options); an ensemble counts member by member."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Ensemble model folder to write."),
    test_speeds: list[float] = TEST_SPEED_OPTION,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the model OUT holds (without it, refused)."),
) -> None:
    """Combine separately trained recognisers into one ensemble (mean probabilities, concatenated features)."""
    from functools import partial

    from skelanim.learn.ensemble import combine_recognizers

    combine_folders(models, out, partial(combine_recognizers, test_speeds=test_speeds or None), overwrite)


@recognize_app.command("eval")
def recognize_eval(
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    model: Path | None = typer.Option(None, "--model", "-m", help="ST-GCN folder (default: the shipped one)."),
    baseline: Path | None = typer.Option(None, "--baseline", help="CNN baseline folder (default: the shipped one)."),
    split: str = typer.Option("style", "--split", help=SPLIT_HELP + " Evaluates the test part.", callback=check_split),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="The split's seed (the one given to train; matters for 'file')."),
    stride: int = typer.Option(8, "--stride", min=1),
    threads: int | None = threads_option(),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object: top1_files, top1_windows (fractions), per_class, baseline_cnn, "
        "and the counts scored, files and windows.",
    ),
    plot: Path | None = typer.Option(None, "--plot", help="Also draw the ST-GCN's confusion matrices (files, windows)."),
    device: str = run_device_option(),
) -> None:
    """Top-1 content accuracy per file (vote over windows) and per window, ST-GCN against the CNN baseline.

    The shipped baseline is used only for a model on its skeleton; else none, unless --baseline names one."""
    from skelanim.learn.recognize import Recognizer, evaluate_recognizer

    if plot is not None:
        check_plot(plot)
    net, loaded = Recognizer.load(model).to(device), Recognizer.load(baseline, default="recognize_cnn").to(device)
    # the shipped baseline is for the shipped model's skeleton
    base = loaded if baseline is not None or loaded.rig.skeleton.same_topology(net.rig.skeleton) else None
    loaded = load_dataset(data, net.fps, threads, not as_json, labels=labels, need=("content",), rig=net.rig,
                          owner="the recogniser")
    ds = split_parts(loaded, split, seed, need="test")["test"]
    unknown = sorted({clip.labels["content"] for clip in ds.clips} - set(net.contents.names))
    if unknown:  # they count as errors; a label pattern that reads the wrong part of the name had scored 0 silently
        typer.echo(f"note: {len(unknown)} content label(s) of the test files are not the model's ({', '.join(unknown[:4])}"
                   f"{', ...' if len(unknown) > 4 else ''}): their files count as wrong (--labels?)", err=True)  # fmt: skip
    note_trained_on({"model": model, "baseline": baseline}, ds, {"model": "recognize", "baseline": "recognize_cnn"})
    main = evaluate_recognizer(net, ds, stride=stride)
    ref = evaluate_recognizer(base, ds, stride=stride) if base is not None else None
    if plot is not None:
        from skelanim.viz.charts import plot_confusion
        from skelanim.viz.plots import save_figure

        save_figure(plot_confusion(main["predicted"], title=f"ST-GCN, content, {split} split"), plot)
    obj = {"top1_files": main["top1_files"], "top1_windows": main["top1_windows"], "per_class": main["per_class"],
           "baseline_cnn": ref and {"top1_files": ref["top1_files"], "top1_windows": ref["top1_windows"]},
           "files": main["files"], "windows": main["windows"]}  # the counts the text's first line gives  # fmt: skip
    if as_json:
        echo_json(obj)
        return
    typer.echo(f"{main['files']} files, {main['windows']} windows")
    typer.echo(f"{'':>22} {'files':>7} {'windows':>8}")
    typer.echo(f"{'ST-GCN':>22} {main['top1_files']:7.1%} {main['top1_windows']:8.1%}")
    if ref is not None:
        typer.echo(f"{'temporal CNN':>22} {ref['top1_files']:7.1%} {ref['top1_windows']:8.1%}")
    for name, v in main["per_class"].items():
        typer.echo(f"{name:>22} {v['top1_files']:7.1%} {v['top1_windows']:8.1%}  ({v['files']} files)")
    if plot is not None:
        typer.echo(f"wrote {plot} (confusion matrices)")


# ---------------------------------------------------------------------------------------------- generate
