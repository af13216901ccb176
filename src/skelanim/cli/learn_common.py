"""The ``skelanim learn`` command groups and what their commands share: data and label options, splits, the
training-loop settings and the report lines (:mod:`skelanim.cli.learn` and :mod:`skelanim.cli.learn_predict`
register the commands)."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import typer

from skelanim.cli import app
from skelanim.cli.files import command_line

learn_app = typer.Typer(help="Recognition (ST-GCN), prediction (GRU, DCT-GCN, MLP) and generation (CVAE + GAN) on labelled mocap.",
                        no_args_is_help=True)  # fmt: skip
recognize_app = typer.Typer(help="Classify content (and style) of motion windows and files.", no_args_is_help=True)
predict_app = typer.Typer(help="Predict the next second of motion.", no_args_is_help=True)
generate_app = typer.Typer(help="Generate motion of a requested content and style.", no_args_is_help=True)
learn_app.add_typer(recognize_app, name="recognize")
learn_app.add_typer(predict_app, name="predict")
learn_app.add_typer(generate_app, name="generate")
app.add_typer(learn_app, name="learn")

DATA_HELP = "Motion files, folders or glob patterns (repeat); --labels says how their names carry labels."
SPLIT_HELP = ("'style' (test styles angry/childish/elderly, validate on proud/youthful), 'style:S1,S2,...' (these test "
              "styles), 'style:S1,.../V1,...' (and these validation styles; none after a bare '/'), 'file' (20 % of "
              "files per content), 'none'.")


LABELS_HELP = ("Labels in the file names: 'bandai' (dataset-N_CONTENT_STYLE_TAKE), 'generated' (CONTENT_STYLE_TAKE), "
               "'none' (any names; prediction only) or a regular expression with named groups content and style, "
               "matched from the start of each name, e.g. '(?P<content>\\D+)\\d*_subject(?P<style>\\d+)$'.")
LABELS_OPTION: Any = typer.Option("bandai", "--labels", help=LABELS_HELP)


def load_dataset(data: list[str], fps: float, threads: int | None, progress: bool = True, *, labels: str = "bandai",
                 need: tuple[str, ...] = (), rig=None, owner: str = "the model", hint: str = ""):  # fmt: skip
    """The motion of ``data`` with the labels ``labels`` names (``--labels``); every file must have the labels
    ``need`` (e.g. ``("content",)`` for recognition). A model's ``rig`` is the dataset's (scoring or calibrating a
    model): the data's own would be measured, and its body root could differ from the model's (a clip whose dummy
    root had been turned made the windows one joint wider than the model's, a traceback); a file not on its
    skeleton or not of its size is refused naming ``owner`` (``"the predictor"``), ``hint`` appended."""
    from skelanim.data import LabelError, MotionDataset
    from skelanim.data.labels import label_parser
    from skelanim.data.rig import require_size
    from skelanim.errors import SkeletonError
    from skelanim.learn.common import set_threads

    try:
        parser = label_parser(labels)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--labels") from None
    if parser is None and need:
        raise typer.BadParameter(f"this command needs the {' and '.join(need)} of each file from its name; "
                                 "name a label scheme or pattern", param_hint="--labels")  # fmt: skip
    set_threads(threads)
    try:
        ds = MotionDataset(data, fps=fps, progress=progress, label_parser=parser, rig=rig, rig_owner=owner)
    except LabelError as err:
        none = " (--labels none reads files of any name, for prediction)" if not need else ""
        raise LabelError(f"{err.message}; --labels names the scheme{none}", path=err.path) from None
    except SkeletonError as err:
        if not hint or rig is None:
            raise
        raise SkeletonError(err.message + hint, path=err.path) from None
    for clip in ds.clips:
        if missing := [key for key in need if not clip.labels.get(key)]:
            raise LabelError(f"the label pattern gives no {' or '.join(missing)} for this file (--labels)", path=clip.path)
    if ds.clips:
        require_size(ds.clips, ds.clips[0].skeleton, "the first file")
    return ds


def require_skeleton(kind: str, skeleton, ds, hint: str = "") -> None:
    """A one-line :class:`~skelanim.errors.SkeletonError` naming the first file of ``ds`` that is not on the model's
    ``skeleton`` or not of its size (:func:`~skelanim.data.rig.require_rig`; ``kind``: "generator", ...; ``hint``
    appended)."""
    from skelanim.data.rig import require_rig
    from skelanim.errors import SkeletonError

    try:
        require_rig(ds.clips, skeleton, f"the {kind}")
    except SkeletonError as err:
        raise SkeletonError(err.message + hint, path=err.path) from None


class _SplitParsed(Exception):
    """Raised by :class:`_SplitProbe` where :func:`~skelanim.learn.common.split_dataset` has parsed the split and
    turns to the data."""


class _SplitProbe:
    """A dataset without clips for :func:`check_split`: each step of :func:`~skelanim.learn.common.split_dataset`
    that needs the data (the styles the files have, a split by style or by file) ends the parse, so only the
    split's spelling is checked, by the parser that later splits the data."""

    clips: tuple[()] = ()

    def labels(self, kind: str) -> list[str]:
        raise _SplitParsed

    def split_by_style(self, **kwargs: Any) -> dict:
        raise _SplitParsed

    def split_by_file(self, **kwargs: Any) -> dict:
        raise _SplitParsed


def check_split(value: str) -> str:
    """``--split``: a spelling :func:`~skelanim.learn.common.split_dataset` does not know is a usage error before any
    file is read (``--split styel`` had been refused after loading every ``--data`` file); what depends on the
    data (styles no file has, a part left empty) is :func:`split_parts`'s."""
    from skelanim.learn.common import split_dataset

    try:
        split_dataset(cast(Any, _SplitProbe()), value)
    except _SplitParsed:
        pass
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    return value


def one_of(positional: Path | None, option: Path | None, name: str, flags: str, what: str) -> Path:
    """The folder given as the positional argument ``name`` or with the option ``flags`` (the other commands'
    spelling, e.g. ``-o/--out``), ``what`` it is in the errors: exactly one of the two, else a usage error."""
    if positional is not None and option is not None:
        raise typer.BadParameter(f"give {what} once: as {name} or with {flags}, not both", param_hint=flags)
    if positional is None and option is None:
        raise typer.BadParameter(f"missing: give {what} as {name} or with {flags}", param_hint=name)
    return positional if positional is not None else cast(Path, option)


def split_parts(ds, split: str, seed: int = 0, *, need: str = "train") -> dict:
    """The parts of ``ds`` (``split_dataset``); a bad split, or one without the ``need`` part, is a usage error."""
    from skelanim.data.dataset import BANDAI_VAL_STYLES
    from skelanim.learn.common import split_dataset

    try:
        parts = split_dataset(ds, split, seed=seed)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--split") from None
    if parts[need] is None:
        raise typer.BadParameter(f"the split leaves no {'training' if need == 'train' else need} files",
                                 param_hint="--split")  # fmt: skip
    if need == "train" and split.startswith("style") and "/" not in split and parts["val"] is None:
        # training would pick its epochs on training windows, reported as validation
        raise typer.BadParameter(f"split {split!r} validates on the styles {', '.join(BANDAI_VAL_STYLES)}, which no "
                                 "file here has; name them (style:S1,.../V1,...), validate on none (style:S1,.../) "
                                 "or use --split file", param_hint="--split")  # fmt: skip
    return parts


def train_config(epochs: int, batch_size: int, lr: float, seed: int, max_steps: int | None, progress: bool, warmup: int = 50,
          ema: float = 0.0, keep: str = "best", validate_every: int = 1, weight_decay: float | None = None,
          device: str = "cpu"):  # fmt: skip
    from skelanim.nn.train import TrainConfig

    decay = TrainConfig.weight_decay if weight_decay is None else weight_decay  # None: the loop's default
    return TrainConfig(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, max_steps=max_steps, progress=progress,
                       warmup_steps=warmup, ema=ema, keep=keep, validate_every=validate_every, weight_decay=decay,
                       device=device)  # fmt: skip


def check_device(value: str) -> str:
    """``--device``: ``auto`` becomes ``cuda`` where torch sees a GPU, else ``cpu``; an unknown name or a GPU this
    machine lacks is a usage error."""
    from skelanim.errors import SkelanimError
    from skelanim.nn.device import resolve_device

    try:
        return str(resolve_device(value))
    except SkelanimError as err:
        raise typer.BadParameter(err.message) from None


DEVICE_HELP = "Train on this torch device: auto (a CUDA GPU when torch sees one, else the CPU), cpu, cuda, cuda:N or mps."
RUN_DEVICE_HELP = ("Run the network on this torch device: cpu, auto (a CUDA GPU when torch sees one, else the CPU), cuda, "
                   "cuda:N or mps; files are read and written on the CPU either way.")  # fmt: skip


EMA_HELP = "Validate and save an exponential moving average of the weights with this decay per step (0: off)."
KEEP_HELP = "Model folder holds the 'best' epoch on validation or the 'last' one."


def check_speeds(value: list[float]) -> list[float]:
    if any(v <= 0 for v in value):
        raise typer.BadParameter(f"speeds must be positive, got {value}")
    return value


#: The largest seed the CLI takes (torch's generators take up to 2^64 - 1 and numpy's up to 2^32 - 1 per word).
MAX_SEED = 2**63 - 1


def device_option() -> Any:
    """The ``--device`` option of the training commands."""
    return typer.Option("auto", "--device", help=DEVICE_HELP, callback=check_device)


def resume_option() -> Any:
    """The ``--resume`` option of the training commands."""
    return typer.Option(False, "--resume", help="Continue an interrupted run in OUT (same arguments).")


def batch_size_option(default: int) -> Any:
    """The ``--batch-size`` option of the training commands: per process (``torchrun`` with N processes trains on N
    times as many samples per step, N times fewer steps per epoch, at the same learning rate)."""
    return typer.Option(default, "--batch-size", min=1, help="Samples per step and process (under torchrun "
                        "--nproc_per_node N, the step holds N times as many).")  # fmt: skip


def overwrite_option() -> Any:
    """The ``--overwrite`` option of the training commands (:func:`skelanim.nn.train.check_output_folders`)."""
    return typer.Option(False, "--overwrite", help="Replace the trained model or interrupted run that OUT holds "
                        "(without it, a new run into such a folder is refused).")  # fmt: skip


def split_values(values: list[str] | None) -> list[str]:
    """A repeatable, comma-separated option's values: ``-x a,b`` and ``-x a -x b`` both give ``[a, b]``."""
    return [v for item in values or [] for v in item.split(",") if v]


def threads_option() -> Any:
    """The ``--threads`` option (torch's CPU threads; default torch's own), the same on every command that computes
    (pass its value to :func:`apply_threads`)."""
    return typer.Option(None, "--threads", min=1, max=1024, help="Torch CPU threads (default: torch's).")


def apply_threads(threads: int | None) -> None:
    """Set torch's CPU threads when ``--threads`` was given (:func:`skelanim.learn.common.set_threads`)."""
    from skelanim.learn.common import set_threads

    set_threads(threads)


def progress_option() -> Any:
    """The ``--progress/--no-progress`` option: progress bars on stderr (on by default)."""
    return typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr.")


def run_device_option() -> Any:
    """The ``--device`` option of the inference commands (solve, retarget, predict, generate, recognize): the CPU
    unless asked, so that a file written on a machine with a GPU is the one written without (GPU kernels round
    differently), and small inputs skip the transfers (IK's fast path for a few poses, onnxruntime, is the CPU's)."""
    return typer.Option("cpu", "--device", help=RUN_DEVICE_HELP, callback=check_device)


def check_lr(value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"must be a positive finite learning rate, got {value}")
    return value


def check_fps(value: float) -> float:
    if not (math.isfinite(value) and 1.0 <= value <= 240.0):
        raise typer.BadParameter(f"must be a finite frame rate from 1 to 240, got {value}")
    return value


FPS_OPTION: Any = typer.Option(25.0, "--fps", callback=check_fps, help="Frame rate the data is resampled to: the model's.")

TEST_SPEED_OPTION: Any = typer.Option(
    [], "--test-speed", callback=check_speeds,
    help="Average each window's probabilities over these playback speeds (repeat; e.g. 0.8, 1, 1.25).",
)


def check_keep(value: str) -> str:
    if value not in ("best", "last"):
        raise typer.BadParameter(f"expected 'best' or 'last', got {value!r}")
    return value


def check_content(value: str | None) -> str | None:
    """``--content`` given empty (``--content ""``) is an error, not the file's label (``--interpolate``)."""
    if value is not None and not value.strip():
        raise typer.BadParameter("is empty: name a content (walk, run, ...) or a plan (walk:4,run:3)")
    return value


def check_style(value: str | None) -> str | None:
    """``--style`` given empty (``--style ""``) is an error, not the default style."""
    if value is not None and not value.strip():
        raise typer.BadParameter("is empty: name a style (happy, angry, ...) or leave the option out for normal")
    return value


def check_range(value: tuple[float, float]) -> tuple[float, float]:
    if not 0.0 < value[0] <= value[1]:
        raise typer.BadParameter(f"expected 0 < LO <= HI, got {value[0]} {value[1]}")
    return value


def range_option(flag: str, help_text: str) -> Any:
    return typer.Option((1.0, 1.0), flag, help=help_text, callback=check_range)


def report_training(out: Path, result: dict[str, Any], metric: str) -> None:
    """The summary line of a training command (rank 0): the folder, its size, the steps and time, and which weights
    the folder holds: the best epoch's, the last epoch's (``keep="last"``), or those of the step where ``--max-steps``
    stopped the run inside an epoch (``result["stopped"]`` from :func:`skelanim.nn.train.fit`)."""
    from skelanim.nn import distributed

    if distributed.is_main():
        best = result.get("best") or {}
        metric = result.get("metric", metric)  # train_subset_* where there was no validation
        score = f"{metric} {best.get(metric, float('nan')):.4g}"
        stopped = result.get("stopped")
        if stopped:  # the folder holds neither a whole epoch's weights nor the best epoch's
            kept = f"the weights at step {stopped['step']} (epoch {stopped['epoch']:.4g}, where --max-steps stopped) kept"
            same = best.get("epoch") == stopped["epoch"]
            kept += f"; {score}" if same else f"; lowest {score} at epoch {best.get('epoch')}"
        elif result.get("keep") == "last":
            epochs = len(result.get("history") or [])
            kept = f"the last epoch ({epochs}) kept; lowest {score} at epoch {best.get('epoch')}"
        else:
            kept = f"best epoch {best.get('epoch')}: {score}"
        left = result.get("unfinished")
        if isinstance(left, dict) and not stopped:  # --max-steps ended it at an epoch's end: say so, as inside one
            kept += f"; --max-steps stopped it after epoch {left['epoch']:g} of {left['epochs']} (--resume continues)"
        typer.echo(f"wrote {out} ({result.get('parameters', '?')} parameters, {result['steps']} steps, "
                   f"{result['seconds']:.0f} s; {kept})")  # fmt: skip


def check_plot(path: Path) -> None:
    """Refuse a figure name with an unknown format before any work."""
    from skelanim.viz.plots import check_figure_path

    check_figure_path(path)


def note_trained_on(models: dict[str, Path | None], test, defaults: dict[str, str] | None = None) -> None:
    """A note on stderr for each model whose recorded training files include files of the ``test`` part: a split
    drawn from other ``--data`` than training's (the file split depends on the whole list) scores files the model
    was trained on (bandai_namco_1 alone: 11 of its 23 test files in training). Files are matched by name, so copies
    count too. ``models`` maps a name to its folder (``None``: the shipped one, ``defaults[name]``)."""
    from skelanim.learn.common import pretrained_dir, training_files
    from skelanim.nn.checkpoint import CONFIG_NAME, read_model_config

    tested = {Path(c.path).name for c in test.clips if c.path}  # by name: a copy in another folder is the same take
    for name, folder in models.items():
        where = folder if folder is not None else (pretrained_dir(defaults[name]) if defaults and name in defaults else None)
        if where is None or not (Path(where) / CONFIG_NAME).is_file():
            continue
        seen = training_files(read_model_config(Path(where) / CONFIG_NAME)) & tested
        if seen:
            typer.echo(f"note: {len(seen)} of the {len(tested)} test files were in the training data of {where} "
                       f"(e.g. {min(seen)}): give the --data, --split and --seed it was trained with (training's "
                       "--seed also draws the file split)", err=True)  # fmt: skip


def echo_json(obj: Any) -> None:
    typer.echo(json.dumps(obj, indent=1))


#: Files a model folder may hold beside its weights and config that belong to the model there before: an IK model's
#: pose corrector, a training run's state (``--resume`` would go on from it, not from the new model).
EARLIER_MODEL_FILES = ("refine.json", "refine.safetensors", "train_state.safetensors")


def check_model_folder(out: Path, overwrite: bool, hint: str = "OUT") -> None:
    """Refuse to write a model (``learn ship``, the ``combine`` commands, ``learn predict calibrate`` and ``learn
    generate fit-prior`` into another folder than their model's) into ``out`` where it is a file, or holds a
    model or a run's state and ``overwrite`` is not given (it had been replaced without a word, even a model of
    another kind, whose other files then stayed beside the new one)."""
    from skelanim.errors import FormatError
    from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, WEIGHTS_NAME

    if out.exists() and not out.is_dir():
        raise typer.BadParameter(f"{out} is a file; a model is written as a folder", param_hint=hint)
    held = [name for name in (CONFIG_NAME, WEIGHTS_NAME, STATE_NAME) if (out / name).is_file()]
    if held and not overwrite:
        raise FormatError(f"the folder holds a model ({', '.join(held)}), which this would replace: --overwrite "
                          "replaces it, or choose another folder", path=out)  # fmt: skip


def remove_earlier_model_files(out: Path) -> None:
    """Remove :data:`EARLIER_MODEL_FILES` from a folder a new model was just written to, with a note each."""
    for name in EARLIER_MODEL_FILES:
        if (out / name).is_file():
            (out / name).unlink()
            typer.echo(f"note: removed {out / name}, a file of the folder's earlier model", err=True)


def combine_folders(models: list[Path], out: Path, combine: Callable[..., Any], overwrite: bool = False) -> None:
    """The ``combine`` commands: at least two folders, then ``combine(models, out, command=...)``."""
    from skelanim.cli.files import check_not_an_input

    if len(models) < 2:
        raise typer.BadParameter("give two or more model folders", param_hint="MODELS")
    check_not_an_input(out, *models)  # a member would be replaced by the ensemble
    check_model_folder(out, overwrite, "--out")
    net = combine(models, out, command=command_line())
    remove_earlier_model_files(out)
    typer.echo(f"wrote {out} ({net.members} members, {sum(p.numel() for p in net.parameters())} parameters)")


# ---------------------------------------------------------------------------------------------- generate
#: The longest motion ``skelanim generate`` makes (as ``skelanim predict``: windows are chained one by one).
MAX_GENERATED_SECONDS = 600.0


def generation_plan(content: str, seconds: float | None, fps: float, window: int) -> list[tuple[str, int]]:
    """``--content`` and ``--seconds`` as ``(content, frames)`` segments: one content for ``seconds`` (default one
    window), or a plan ``walk:4,run:3`` (seconds each; ``--seconds`` is then not given)."""
    if ":" not in content and "," not in content:
        if seconds is None:
            return [(content, window)]
        if not (math.isfinite(seconds) and seconds * fps >= 1):
            raise typer.BadParameter(f"{seconds:g} s is not a length (at least one frame, {1 / fps:g} s)",
                                     param_hint="--seconds")  # fmt: skip
        if seconds > MAX_GENERATED_SECONDS:
            raise typer.BadParameter(f"at most {MAX_GENERATED_SECONDS:g} s (10 minutes) per motion, got {seconds:g}",
                                     param_hint="--seconds")  # fmt: skip
        return [(content, round(seconds * fps))]
    if seconds is not None:
        raise typer.BadParameter("a plan gives each content its seconds (walk:4,run:3); leave out --seconds",
                                 param_hint="--seconds")  # fmt: skip
    plan = []
    for part in content.split(","):
        name, _, length = part.strip().partition(":")
        try:
            frames = round(float(length) * fps)
        except (ValueError, OverflowError):  # not a number, nan, inf
            frames = 0
        if not name or frames < 1:
            raise typer.BadParameter(f"{part.strip()!r} is not CONTENT:SECONDS with SECONDS > 0 (e.g. walk:4,run:3)",
                                     param_hint="--content")  # fmt: skip
        plan.append((name, frames))
    if sum(frames for _, frames in plan) > MAX_GENERATED_SECONDS * fps:
        raise typer.BadParameter(f"the plan lasts more than {MAX_GENERATED_SECONDS:g} s (10 minutes)", param_hint="--content")
    return plan


#: The flags of the decoder options a generator records.
DECODER_FLAGS = {"decoder": "--decoder", "padding": "--padding", "z_every": "--z-every/--z-first"}


def generator_options(window: int, decoder: str, padding: str | None, z_every: bool | None) -> dict[str, Any]:
    """``learn generate train``'s decoder options, checked before any data is read (they had ended in a
    traceback after it): a known decoder and padding, a window the encoder can halve three times, and no
    convolutional-decoder option given with ``--decoder transformer`` (it had been ignored)."""
    from skelanim.learn.cvae import DECODERS, PADDINGS

    if decoder not in DECODERS:
        raise typer.BadParameter(f"expected {' or '.join(map(repr, DECODERS))}, got {decoder!r}", param_hint="--decoder")
    if padding is not None and padding not in PADDINGS:
        raise typer.BadParameter(f"expected {' or '.join(map(repr, PADDINGS))}, got {padding!r}", param_hint="--padding")
    if window % 8:
        raise typer.BadParameter(f"must be a multiple of 8 (the encoder halves the window three times), got {window}",
                                 param_hint="--window")  # fmt: skip
    given = [o for o, v in (("--padding", padding is not None), ("--z-every" if z_every else "--z-first", z_every is not None)) if v]
    if decoder == "transformer" and given:
        raise typer.BadParameter(f"{given[0]} is an option of the convolutional decoder (--decoder conv); the "
                                 "transformer decoder has none", param_hint=given[0])  # fmt: skip
    return {"z_every": True if z_every is None else z_every, "decoder": decoder, "padding": padding or "zeros"}


def check_init(init: Path | None, gan_epochs: int, window: int, fps: float, options: dict[str, Any]):
    """The generator ``--init`` names (``None`` without it), checked against this run's options before any data
    is read: it starts the GAN stage, so ``--gan-epochs 0`` is refused, and its window, frame rate and decoder
    options must be the run's (:func:`check_init_data` checks its classes and skeleton against the data)."""
    if init is None:
        return None
    if gan_epochs == 0:
        raise typer.BadParameter("starts the GAN stage from a trained generator, which --gan-epochs 0 leaves out",
                                 param_hint="--init")  # fmt: skip
    from skelanim.learn.common import resolved_options
    from skelanim.learn.cvae import MotionCVAE
    from skelanim.learn.generate import Generator

    with warnings.catch_warnings():  # an unfinished start warns once, when training loads it (it had warned twice)
        warnings.simplefilter("ignore")
        start = Generator.load(init)
    wanted = resolved_options(MotionCVAE, options)
    differ = [(DECODER_FLAGS.get(k, k), v, wanted.get(k)) for k, v in start.options.items() if wanted.get(k) != v]
    differ[:0] = [(flag, a, b) for flag, a, b in (("--window", start.length, window), ("--fps", start.fps, fps)) if a != b]
    if differ:
        flag, theirs, ours = differ[0]
        raise typer.BadParameter(f"{init} was trained with {flag} {theirs!r}, this run has {ours!r}: give the "
                                 "generator's options", param_hint="--init")  # fmt: skip
    return start


def check_init_data(start, init: Path, ds) -> None:
    """The ``--init`` generator ``start`` against the training data ``ds``: its skeleton and its content and
    style classes (a mismatch had been "size mismatch for norm.mean" or a ValueError traceback)."""
    require_skeleton("generator", start.rig.skeleton, ds, " (--init)")
    for kind, have in (("content", start.contents.names), ("style", start.styles.names)):
        found = tuple(sorted(set(ds.labels(kind))))
        if found != tuple(have):
            raise typer.BadParameter(f"{init} was trained on the {kind} classes {', '.join(have) or '(none)'}; "
                                     f"the training data has {', '.join(found) or '(none)'}", param_hint="--init")  # fmt: skip


def fid_reference(rec, shipped: bool, recognition: float, train, window: int, stride: int):
    """``(recogniser, reference features)`` for ``learn generate train``'s validation FID; the reference is
    ``None`` (epochs chosen by reconstruction, with a note) where the recogniser is the shipped one of another
    skeleton or there are fewer than two windows to compare (the run had ended after its first epoch with
    "features must be (N >= 2, D)")."""
    if shipped and rec is not None and not rec.rig.skeleton.same_topology(train.rig.skeleton):
        if recognition > 0:
            raise typer.BadParameter("the shipped recogniser is for another skeleton: train one on this data "
                                     "(skelanim learn recognize train) and name it", param_hint="--recognizer")  # fmt: skip
        typer.echo("note: the shipped recogniser is for another skeleton, so epochs are chosen by reconstruction, "
                   "not FID (--recognizer names one trained on this data)", err=True)  # fmt: skip
        return None, None
    if rec is None:
        return None, None
    reference = None
    if len(train.windows(window, stride)) >= 2:
        reference = rec.embed_dataset(train, stride=8, length=window, speed_votes=False)["features"]
    if reference is None or len(reference) < 2:
        typer.echo(f"note: the training data holds fewer than two {window}-frame windows, too few for the "
                   "validation FID: epochs are chosen by reconstruction", err=True)  # fmt: skip
        return rec, None
    return rec, reference
