"""``skelanim learn predict train|combine|calibrate|eval`` and ``skelanim predict``: thin wrappers over
:mod:`skelanim.learn.predict` (the shared options and helpers are :mod:`skelanim.cli.learn_common`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from skelanim.cli import app
from skelanim.cli.files import load_one_figure
from skelanim.cli.finetune import begin_finetuning, finetune, init_option, member_folders
from skelanim.cli.learn_common import (
    DATA_HELP,
    EMA_HELP,
    FPS_OPTION,
    KEEP_HELP,
    LABELS_OPTION,
    MAX_SEED,
    SPLIT_HELP,
    apply_threads,
    batch_size_option,
    check_keep,
    check_lr,
    check_model_folder,
    check_plot,
    check_split,
    combine_folders,
    command_line,
    device_option,
    echo_json,
    load_dataset,
    note_trained_on,
    one_of,
    overwrite_option,
    predict_app,
    range_option,
    remove_earlier_model_files,
    report_training,
    resume_option,
    run_device_option,
    split_parts,
    threads_option,
    train_config,
)

#: ``learn predict train``'s options that a fine-tuned model keeps as they are (``--init``).
ARCH_SETTINGS = ("hidden", "blocks", "attention", "anchor", "spring", "observed_frames", "gcn_pad", "half_period",
                 "test_mirror", "amplitude_norm")


@predict_app.command("train")
def predict_train(
    ctx: typer.Context,
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write."),
    arch: str = typer.Option("rnn", "--arch", help="rnn (seq2seq GRU), gcn (DCT-GCN) or mlp (siMLPe-style MLP)."),
    split: str = typer.Option("style", "--split", help=SPLIT_HELP, callback=check_split),
    stride: int = typer.Option(4, "--stride", min=1),
    hidden: int | None = typer.Option(None, "--hidden", min=4, help="GRU width / GCN node features."),
    blocks: int | None = typer.Option(None, "--blocks", min=1, help="GCN or MLP residual blocks."),
    attention: int | None = typer.Option(None, "--attention", min=0, help="GRU history-attention width (0: none)."),
    anchor: bool = typer.Option(False, "--anchor/--no-anchor", help="GRU decoder sees the periodic continuation."),
    spring: bool = typer.Option(False, "--spring/--no-spring", help="GRU steps pulled toward the observed mean pose."),
    observed_frames: int | None = typer.Option(None, "--gcn-observed", min=2, help="Observed frames the DCT-GCN or MLP uses."),
    gcn_pad: str | None = typer.Option(None, "--gcn-pad", help="DCT-GCN future fill: velocity (default) or periodic."),
    mirror: bool = typer.Option(False, "--mirror/--no-mirror", help="Mirror half of the training windows."),
    half_period: bool = typer.Option(
        False, "--half-period/--no-half-period", help="The periodic continuation may repeat a half period mirrored."
    ),
    speed: tuple[float, float] = range_option("--speed", "Playback-speed augmentation range LO-HI."),
    amplitude: tuple[float, float] = range_option("--amplitude", "Scale joint motion about each window's mean by LO-HI."),
    amplitude_norm: bool = typer.Option(
        False, "--amplitude-norm/--no-amplitude-norm", help="Enlarge windows that move less than the median (see calibrate)."
    ),
    test_mirror: bool = typer.Option(False, "--test-mirror/--no-test-mirror", help="Average with the mirror image's prediction."),
    global_weight: float = typer.Option(1.0, "--global-weight", min=0.0, help="Weight of the with-root-motion error."),
    horizon_decay: float = typer.Option(
        0.5, "--horizon-decay", min=0.0, help="Future frame k weighs (k + 1)^-DECAY in the loss (0: all alike)."
    ),
    reverse: float = typer.Option(
        0.0, "--reverse", min=0.0, max=1.0, help="Chance that a training window is played backwards (time flip)."
    ),
    velocity_weight: float = typer.Option(
        0.0, "--velocity-weight", min=0.0, help="Weight of a root-relative joint-velocity error in the loss (0: none)."
    ),
    file_balance: float = typer.Option(
        0.0, "--file-balance", min=0.0, help="Window weights ∝ (windows of its file)^-FILE_BALANCE: short files count more."
    ),
    fps: float = FPS_OPTION,
    epochs: int = typer.Option(8, "--epochs", min=1),
    batch_size: int = batch_size_option(64),
    lr: float = typer.Option(2e-3, "--lr", callback=check_lr),
    weight_decay: float | None = typer.Option(None, "--weight-decay", min=0.0, help="AdamW weight decay (default 1e-4)."),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED),
    ema: float = typer.Option(0.0, "--ema", min=0.0, max=0.99999, help=EMA_HELP),
    keep: str = typer.Option("best", "--keep", help=KEEP_HELP, callback=check_keep),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1),
    threads: int | None = threads_option(),
    device: str = device_option(),
    init: str | None = init_option(),
    resume: bool = resume_option(),
    overwrite: bool = overwrite_option(),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Train a predictor (1 s in, 1 s out at --fps, 25 by default), or fine-tune one (--init)."""
    from skelanim.learn.predict import ARCHITECTURES, Predictor, train_predictor
    from skelanim.nn.train import check_output_folders

    if arch not in ARCHITECTURES:
        raise typer.BadParameter(f"unknown architecture {arch!r}; choose from {', '.join(ARCHITECTURES)}", param_hint="--arch")
    start = None
    if init is not None:  # the model's own settings: the architecture and its options, rate, calibration
        start, fps = begin_finetuning(ctx, Predictor, init, arch, f"predict_{arch}", ARCH_SETTINGS, fps, out)
        arch = start.config["arch"]
    if arch == "mlp" and (hidden is not None or half_period):
        raise typer.BadParameter("the MLP predictor has no --hidden width and no periodic pad", param_hint="--arch")
    second = round(fps)  # 1 s in, 1 s out at the model's frame rate
    if arch == "mlp" and observed_frames is not None and observed_frames < second:
        raise typer.BadParameter(f"the MLP predicts at most the frames it observes: {second} future frames need "
                                 f"at least {second}, got {observed_frames}", param_hint="--gcn-observed")  # fmt: skip
    if gcn_pad not in (None, "velocity", "periodic"):
        raise typer.BadParameter(f"expected 'velocity' or 'periodic', got {gcn_pad!r}", param_hint="--gcn-pad")
    if arch == "rnn" and blocks is not None:
        raise typer.BadParameter("the GRU has no --blocks", param_hint="--blocks")
    for option, given, archs in (("--attention", attention is not None, ("rnn",)), ("--anchor", anchor, ("rnn",)),
                                 ("--spring", spring, ("rnn",)), ("--gcn-pad", gcn_pad is not None, ("gcn",)),
                                 ("--gcn-observed", observed_frames is not None, ("gcn", "mlp"))):  # fmt: skip
        if given and arch not in archs:  # these had been dropped without a word
            raise typer.BadParameter(f"{option} applies to --arch {' or '.join(archs)}, not {arch}", param_hint=option)
    if half_period and not ((arch == "rnn" and anchor) or (arch == "gcn" and gcn_pad == "periodic")):
        raise typer.BadParameter("halves the periodic continuation, which needs --anchor (rnn) or --gcn-pad periodic "
                                 "(gcn); it had been stored and not used", param_hint="--half-period")  # fmt: skip
    check_output_folders(out, *(member_folders(out, start) if start else []), resume=resume, overwrite=overwrite)
    rig = start.members[0][0].rig if start is not None else None  # the --init model's: it reads joints as its own
    ds = load_dataset(data, fps, threads, progress, labels=labels, rig=rig, owner="the predictor", hint=" (--init)")
    parts = split_parts(ds, split, seed)
    task = {"mirror": mirror, "speed": speed, "amplitude": amplitude, "global_weight": global_weight, "horizon_decay": horizon_decay,
            "file_balance": file_balance, "amplitude_norm": amplitude_norm, "reverse": reverse,
            "velocity_weight": velocity_weight}  # fmt: skip
    loop = train_config(epochs, batch_size, lr, seed, max_steps, progress, ema=ema, keep=keep, weight_decay=weight_decay, device=device)
    if start is not None:
        from skelanim.learn.ensemble import combine_predictors

        def train_one(model: Any, folder: Path, member_loop: Any, again: bool, record: dict[str, Any]) -> dict[str, Any]:
            return train_predictor(parts["train"], parts["val"], folder, stride=stride, task_options=task, loop=member_loop,
                                   resume=again, command=command_line(), init=model, init_record=record)  # fmt: skip

        return finetune(start, out, loop, resume, train_one,
                        lambda folders, target: combine_predictors(folders, target, command=command_line()), "val_mpjpe")  # fmt: skip
    options = {"hidden": hidden, "blocks": blocks, "attention": attention if arch == "rnn" else None,
               "anchor": anchor if arch == "rnn" and anchor else None,
               "spring": spring if arch == "rnn" and spring else None,
               "observed": (observed_frames or second if arch == "mlp" else observed_frames) if arch != "rnn" else None, "pad": gcn_pad if arch == "gcn" else None,
               "half_period": True if half_period else None}  # fmt: skip
    result = train_predictor(parts["train"], parts["val"], out, arch=arch, stride=stride, observed=second, horizon=second,
                             arch_options={k: v for k, v in options.items() if v is not None} or None, task_options=task,
                             test_mirror=test_mirror, loop=loop, resume=resume, command=command_line())  # fmt: skip
    report_training(out, result, "val_mpjpe")


@predict_app.command("combine")
def predict_combine(
    models: list[Path] = typer.Argument(..., help="Two or more predictor folders of one recipe (other seeds); an ensemble counts member by member."),
    out: Path = typer.Option(..., "--out", "-o", help="Ensemble model folder to write."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace the model OUT holds (without it, refused)."),
) -> None:
    """Combine separately trained predictors into one ensemble (the mean of their predicted frames)."""
    from skelanim.learn.ensemble import combine_predictors

    combine_folders(models, out, combine_predictors, overwrite)


@predict_app.command("calibrate")
def predict_calibrate(
    model: Path | None = typer.Argument(None, help="A trained predictor folder; or give it with -m/--model."),
    model_option: Path | None = typer.Option(None, "--model", "-m", help="MODEL, named as the other commands name it."),
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    split: str = typer.Option(
        "style", "--split", help=SPLIT_HELP + " Calibrates on the training part.", callback=check_split
    ),
    stride: int | None = typer.Option(None, "--stride", min=1, help="The training window stride (default: MODEL's)."),
    seed: int | None = typer.Option(None, "--seed", min=0, max=MAX_SEED, help="The split's seed (default: MODEL's training seed)."),
    out: Path = typer.Option(..., "--out", "-o", help="Model folder to write (may be MODEL)."),
    test_mirror: bool | None = typer.Option(
        None, "--test-mirror/--no-test-mirror", help="Also average with the mirror image's prediction (default: as MODEL)."
    ),
    amplitude_vote: list[float] | None = typer.Option(
        None, "--amplitude-vote", min=0.01, help="Also predict the observed second scaled by this about its mean "
        "frame, scale back and average (repeat, e.g. 0.85 and 1.1765; default: as MODEL).",
    ),
    threads: int | None = threads_option(),
    overwrite: bool = overwrite_option(),
) -> None:
    """Turn on amplitude normalisation and store the training windows' input range.

    A window that moves less than the median training window is enlarged about its mean frame to that size before
    the network sees it, and the prediction shrunk back; each standardised channel is held inside the training
    windows' range. Optionally turn test-time mirror averaging on or off, and set amplitude votes."""
    from skelanim.learn.calibrate import calibrate_amplitude, calibrate_input_range
    from skelanim.learn.predict import Predictor
    from skelanim.nn.checkpoint import read_model_config, save_model_files

    model = one_of(model, model_option, "MODEL", "-m/--model", "the predictor folder")
    into_model = out.resolve() == model.resolve()
    if not into_model:  # another model there had been replaced without a word
        check_model_folder(out, overwrite, "--out")
    net = Predictor.load(model)
    training = read_model_config(model / "config.json").get("training", {})
    trained = (training.get("members") or [training])[0]  # an ensemble's first member: they share data and split
    seed = int(trained.get("seed", 0)) if seed is None else seed
    stride = int(trained.get("task_options", {}).get("stride", 4)) if stride is None else stride
    # it calibrates on the model's own skeleton's motion
    loaded = load_dataset(data, net.fps, threads, progress=False, labels=labels, rig=net.rig, owner="the predictor")
    parts = split_parts(loaded, split, seed)
    try:
        reference = calibrate_amplitude(net, parts["train"], stride=stride)
        mirrored = bool(trained.get("task_options", {}).get("mirror", False))
        calibrate_input_range(net, parts["train"], stride=stride, mirror=mirrored)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--data") from None
    if test_mirror is not None:
        net.test_mirror = test_mirror
    if amplitude_vote:
        net.amplitude_votes = tuple(amplitude_vote)
    record = {"command": command_line(), "files": len(parts["train"].clips), "seed": seed, "stride": stride,
              "reference": reference, "test_mirror": net.test_mirror, "amplitude_votes": list(net.amplitude_votes),
              "input_range": {"stride": stride, "mirror": mirrored}}  # fmt: skip
    earlier = training.get("earlier_calibrations", []) + [training[k] for k in ("amplitude_calibration",) if k in training]
    training = {**training, "amplitude_calibration": record, **({"earlier_calibrations": earlier} if earlier else {})}
    save_model_files(out, net.state_dict(), {**net.config(), "training": training})
    if not into_model:
        remove_earlier_model_files(out)
    typer.echo(f"wrote {out} (amplitude reference {reference:.4g} and input range from {len(parts['train'].clips)} training files, "
               f"test mirror {'on' if net.test_mirror else 'off'}, amplitude votes {list(net.amplitude_votes) or 'none'})")  # fmt: skip


EVAL_JSON_HELP = ("Print one JSON object: horizons_ms, horizons_ms_measured, windows (the count scored) and methods: per "
                  "method, lists over the horizons of mpjpe (root-relative), mpjpe_pose (body root at the origin, "
                  "unturned) and mpjpe_global (with root motion), each a fraction of the skeleton height (0.0183 "
                  "is the table's 1.83 %), and angle_deg in degrees.")  # fmt: skip
MAP_HELP = "With --retarget: a joint mapping (JSON/YAML, as skelanim retarget's --map) where the joint names do not tell."


@predict_app.command("eval")
def predict_eval(
    data: list[str] = typer.Option(..., "--data", help=DATA_HELP),
    labels: str = LABELS_OPTION,
    rnn: Path | None = typer.Option(None, "--rnn", help="GRU folder (default: the shipped one)."),
    gcn: Path | None = typer.Option(None, "--gcn", help="DCT-GCN folder (default: the shipped one)."),
    mlp: Path | None = typer.Option(None, "--mlp", help="MLP predictor folder (default: the shipped one)."),
    split: str = typer.Option("style", "--split", help=SPLIT_HELP + " Evaluates the test part.", callback=check_split),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="The split's seed (the one given to train; matters for 'file')."),
    stride: int = typer.Option(10, "--stride", min=1),
    threads: int | None = threads_option(),
    as_json: bool = typer.Option(False, "--json", help=EVAL_JSON_HELP),
    plot: Path | None = typer.Option(None, "--plot", help="Also draw the errors against the horizon (.png, .pdf, .svg)."),
    retarget: bool = typer.Option(
        False, "--retarget", help="--data is motion of another humanoid skeleton: every file is retargeted onto "
        "the models' skeleton (copy) and tested there, no split drawn: --split, --seed and --labels are not used.",
    ),
    mapping: Path | None = typer.Option(None, "--map", help=MAP_HELP),
    device: str = run_device_option(),
) -> None:
    """MPJPE and angle error at 80-1000 ms of every predictor and the two baselines.

    MPJPE root-relative (mpjpe) and with root motion (mpjpe_global), in % of the skeleton height (the models' rig
    height; --json gives the same as fractions of it: 0.0183 for 1.83 %), and the angle error in degrees: the GRU,
    the DCT-GCN, the MLP, the three averaged (combined) and the zero- and constant-velocity baselines. A predictor
    not named is the shipped one, left out when the named ones work on another skeleton."""
    from skelanim.learn.predict import LEARNED, CombinedPredictor, Predictor, same_setting
    from skelanim.learn.predict_eval import evaluate_prediction

    if plot is not None:
        check_plot(plot)
    folders = {"rnn": rnn, "gcn": gcn, "mlp": mlp}
    given = {name: Predictor.load(folder).to(device) for name, folder in folders.items() if folder is not None}
    for name, model in given.items():  # scored under the name given: it must be that architecture
        if model.arch != name:
            raise typer.BadParameter(f"{folders[name]} is a {model.arch} predictor, not {name}", param_hint=f"--{name}")
    first = next(iter(given.values()), None)
    if first is not None and not all(same_setting(first, m) for m in given.values()):
        raise typer.BadParameter("the predictors named must share the skeleton, observed and predicted lengths and "
                                 "fps", param_hint="--rnn/--gcn/--mlp")  # fmt: skip
    models: dict[str, Any] = {}
    for name in LEARNED:
        model = given.get(name) or Predictor.load(None, default=f"predict_{name}").to(device)
        if first is None or same_setting(first, model):
            models[name] = model
    if len(models) > 1:
        models["combined"] = CombinedPredictor(list(models.values()))
    reference = next(iter(models.values()))
    if mapping is not None and not retarget:
        raise typer.BadParameter("a joint mapping is for --retarget", param_hint="--map")
    if retarget:
        ds = retargeted_dataset(data, reference, threads, mapping)
        where = "every file, retargeted onto the model's skeleton"
    else:
        own = "" if given else "; --rnn/--gcn/--mlp name your own predictors, the shipped ones here"
        hint = f" (--retarget tests it through the model's skeleton{own})"
        loaded = load_dataset(data, reference.fps, threads, not as_json, labels=labels, rig=reference.rig,
                              owner="the predictor", hint=hint)
        ds = split_parts(loaded, split, seed, need="test")["test"]
        note_trained_on(folders, ds, {name: f"predict_{name}" for name in folders})
        where = f"{split} split"
    res = evaluate_prediction(models, ds, stride=stride)
    if not res["windows"]:  # it had printed "methods": {} and exited 0
        need = reference.observed + reference.horizon
        raise typer.BadParameter(f"no test clip lasts the {need / reference.fps:g} s ({need} frames at "
                                 f"{reference.fps:g} fps) a window needs", param_hint="--data")  # fmt: skip
    if plot is not None:
        from skelanim.viz.charts import plot_horizon_errors
        from skelanim.viz.plots import save_figure

        save_figure(plot_horizon_errors(res, title=f"{res['windows']} windows, {where}"), plot)
    measured = res["horizons_ms_measured"]
    if as_json:
        echo_json({"horizons_ms": res["horizons_ms"], "horizons_ms_measured": measured, "methods": res["methods"],
                   "windows": res["windows"]})  # fmt: skip
        return
    typer.echo(f"{res['windows']} windows; % of skeleton height (angles in degrees)")
    if any(abs(m - h) > 1e-6 for m, h in zip(measured, res["horizons_ms"])):
        typer.echo("note: at this frame rate the horizons are the frames at " + ", ".join(f"{m:.1f}" for m in measured)
                   + " ms")  # fmt: skip
    typer.echo(f"{'':>30}" + "".join(f"{h:>8}" for h in res["horizons_ms"]))
    for name, v in res["methods"].items():
        for key in ("mpjpe", "mpjpe_pose", "mpjpe_global", "angle_deg"):
            scale = 1.0 if key == "angle_deg" else 100.0
            typer.echo(f"{name + ' ' + key:>30}" + "".join(f"{x * scale:8.2f}" for x in v[key]))
    if plot is not None:
        typer.echo(f"wrote {plot} (errors against the horizon)")


def retargeted_dataset(data: list[str], model, threads: int | None, mapping: Path | None = None):
    """Every motion file of ``data`` retargeted onto the model's skeleton, as a dataset at its frame rate; a file
    that cannot be read or mapped is a one-line error naming it."""
    import skelanim
    from skelanim.data.clips import clip_from_motion
    from skelanim.data.dataset import NO_MOTION_FILES, MotionDataset, expand_paths
    from skelanim.learn.common import set_threads
    from skelanim.learn.forecast import model_reference_motion, retarget_onto_model

    set_threads(threads)
    files = expand_paths(data)
    if not files:  # as without --retarget: a folder of DeepMimic clips had been called one without motion files
        raise FileNotFoundError(2, NO_MOTION_FILES, ", ".join(data))
    clips, reference = [], model_reference_motion(model)
    for path in files:
        try:
            onto = retarget_onto_model(load_one_figure(path, "predict"), reference, mapping)
        except skelanim.errors.SkelanimError as err:
            err.path = err.path or str(path)
            raise
        clips.append(clip_from_motion(onto, fps=model.fps, name=path.stem, path=str(path), up=model.rig.up))  # its frame
    return MotionDataset(clips=clips, rig=model.rig, fps=model.fps)


@app.command("predict")
def predict_cmd(
    src: Path = typer.Argument(..., help="Input motion on the model's skeleton (Bandai-Namco for the shipped models), "
                               "or on another humanoid skeleton with --retarget."),
    out: Path = typer.Option(..., "-o", "--out", help="Output motion: the input followed by the prediction."),
    seconds: float = typer.Option(1.0, "--seconds", min=0.04, max=600.0, help="How far to predict (at most 10 minutes; past a second the predictions are chained, each "
        "from the one before, and fade toward a still pose)."),
    method: str = typer.Option(
        "combined", "--method", help="combined (the shipped rnn, gcn and mlp averaged: the best with root motion), "
        "rnn, gcn, mlp, zero_velocity or constant_velocity."
    ),
    model: list[Path] = typer.Option(
        [], "--model", "-m", help="Predictor folder (default: the shipped one for --method); for combined, "
        "repeat it for each predictor to average (default: the shipped rnn, gcn and mlp).",
    ),
    retarget: bool = typer.Option(
        False, "--retarget", help="SRC is on another humanoid skeleton: retarget it onto the model's (copy), predict "
        "there and retarget the prediction back onto SRC's skeleton.",
    ),
    mapping: Path | None = typer.Option(None, "--map", help=MAP_HELP),
    ground: bool = typer.Option(
        True, "--ground/--no-ground", help="Lift predicted frames that would sink below SRC's floor (where its lowest "
        "joint is in all but 1 % of its frames; default) or keep them as predicted.",
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
    device: str = run_device_option(),
    threads: int | None = threads_option(),
) -> None:
    """Continue SRC by SECONDS of predicted motion (from its last second): OUT is SRC unchanged, then the prediction."""
    import skelanim
    from skelanim.cli.files import check_output
    from skelanim.learn.common import skeleton_mismatch
    from skelanim.learn.forecast import predict_motion, predict_retargeted
    from skelanim.learn.predict import LEARNED, METHODS, CombinedPredictor, Predictor

    if method not in METHODS:
        raise typer.BadParameter(f"unknown method {method!r}; choose from {', '.join(METHODS)}", param_hint="--method")
    check_output(out, src, mapping)
    apply_threads(threads)
    for folder in model:  # before the method's count of them: a mistyped folder had been told to repeat --model
        if not Path(folder).is_dir():
            raise typer.BadParameter(f"{folder}: no such model folder", param_hint="--model")
    net: Predictor | CombinedPredictor
    if method == "combined":
        if len(model) == 1:
            raise typer.BadParameter("combined averages two or more predictors: repeat --model", param_hint="--model")
        try:
            net = CombinedPredictor([Predictor.load(folder) for folder in model]) if model else CombinedPredictor.shipped()
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--model") from None
    elif len(model) > 1:
        raise typer.BadParameter(f"--method {method} takes one --model", param_hint="--model")
    else:
        net = Predictor.load(model[0] if model else None, default=f"predict_{method}" if method in LEARNED else "predict_rnn")
        if model and method in LEARNED and net.arch != method:  # the line would report one method and run another
            raise typer.BadParameter(f"{model[0]} is a {net.arch} predictor, not {method} (--method {net.arch}, or "
                                     "another --model)", param_hint="--model")  # fmt: skip
    if mapping is not None and not retarget:
        raise typer.BadParameter("a joint mapping is for --retarget", param_hint="--map")
    for member in net.models if isinstance(net, CombinedPredictor) else [net]:
        member.to(device)
    motion = load_one_figure(src, "predict")
    skelanim.io.check_save(out, motion)  # the output keeps SRC's skeleton: a format that cannot hold it, before the work
    other = not net.rig.skeleton.same_rig(net.rig.adopt(motion).skeleton)  # without its dummy root: its own
    if mapping is not None and not other:  # it had been ignored, a missing map file too
        raise typer.BadParameter(f"{src} is on the model's skeleton, which needs no joint mapping", param_hint="--map")
    if other and not retarget:
        hint = " (--retarget predicts it through the model's skeleton)"
        raise skelanim.errors.SkeletonError(skeleton_mismatch("predictor", net.rig.skeleton, motion.skeleton) + hint, path=str(src))
    try:
        if other:
            result = predict_retargeted(motion, method=method, model=net, seconds=seconds, mapping=mapping, ground=ground,
                                        progress=progress)  # fmt: skip
        else:
            result = predict_motion(motion, method=method, model=net, seconds=seconds, ground=ground, progress=progress)
    except skelanim.errors.SkelanimError as err:
        err.path = err.path or str(src)
        raise
    skelanim.save(result, out)
    through = f", through the model's {net.rig.skeleton.num_joints}-joint skeleton" if other else ""
    lift = [value for value in result.metadata.get("lift", []) if value > 0]
    lifted = (f"; {len(lift)} predicted frame(s) lifted out of the floor, by at most "
              f"{100 * max(lift) / motion.height:.1f} % of the height (--no-ground: as predicted)") if lift else ""  # fmt: skip
    typer.echo(f"wrote {out} ({motion.num_frames} input frames + {result.num_frames - motion.num_frames} predicted, "
               f"{result.fps:g} fps, method {method}{through}{lifted})")  # fmt: skip
