"""File commands: ``info``, ``convert``, ``convert-all``, ``positions``.

Warnings the library gives while reading or writing (e.g. frame lines beyond a BVH's ``Frames:`` count)
are printed as one line ``warning: MESSAGE`` on stderr, without the Python source location
(:func:`warnings_as_lines`, which :func:`skelanim.cli.main` puts around every command).
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import typer

from skelanim.cli import app
from skelanim.cli.edits import (
    EDIT_OPTIONS,
    Edits,
    check_edits,
    edit_after_resampling,
    edit_before_resampling,
    naming_the_file,
)
from skelanim.core.motion import Motion
from skelanim.core.units import guess_unit

AXES = "XYZ"


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[None]:
    """Print warnings raised inside as ``warning: MESSAGE`` lines on stderr (no file, line or source)."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        typer.echo(f"warning: {message}", err=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def command_line() -> str:
    """The command being run, as a shell would take it back (recorded with every trained model)."""
    return "skelanim " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def require_between(value: float, option: str, low: float, high: float, unit: str) -> None:
    """Refuse an option's value outside ``[low, high]`` (or NaN) before any work, as one line."""
    from skelanim.errors import ShapeError

    if not low <= value <= high:
        raise ShapeError(f"{option} must be between {low:g} and {high:g} {unit}, got {value:g}")


def require_suffix(path: Path, suffixes: tuple[str, ...], what: str) -> None:
    """Refuse an output name whose suffix is not one of ``suffixes`` before any work, as one line."""
    from skelanim.errors import UnsupportedFormatError

    if path.suffix.lower() not in suffixes:
        raise UnsupportedFormatError(f"{what} is written as {' or '.join(suffixes)}, not {path.suffix or 'no suffix'!r}",
                                     path=path)  # fmt: skip


#: ``--up`` help: a source's up axis, where the guess (:meth:`Motion.up_axis`) is wrong.
UP_HELP = "SRC's up axis, x y z -x -y or -z (default: guessed)."


def check_up(text: str | None) -> str | None:
    """A ``--up`` value as ``"x"`` ... ``"-z"`` (lower case; ``None`` stays ``None``); a usage error otherwise."""
    if text is None:
        return None
    value = text.strip().lower()
    if value.lstrip("+-") not in ("x", "y", "z") or value.count("-") + value.count("+") > 1:
        raise typer.BadParameter(f"expected x, y, z, -x, -y or -z, got {text!r}", param_hint="--up")
    return value.lstrip("+")


def check_output(out: Path, *sources: Path | None) -> None:
    """Before any work: refuse a motion output of an unknown suffix, one that is one of the input files (the
    source would be replaced by what is made of it) and one that cannot be written
    (:func:`~skelanim.io.atomic.check_can_write`), as one line."""
    from skelanim.io import check_save
    from skelanim.io.atomic import check_can_write

    check_save(out)  # an unknown suffix, before any work
    check_not_an_input(out, *sources)
    check_can_write(out)


def check_not_an_input(out: Path, *inputs: Path | None) -> None:
    """Refuse, as one line, an output file or folder that is one of the command's inputs (a motion, a joint mapping,
    a model folder; the same file by any path, a link included): it would be replaced by what is made of it."""
    import os

    for src in inputs:
        if src is None:
            continue
        try:
            same = out.exists() and os.path.samefile(src, out)
        except OSError:
            same = False
        if same:
            raise typer.BadParameter(f"{out} is an input of this command; write to another name (it would be replaced)")


def with_option_hint(err: Exception, files: list[Path], hint: str) -> None:
    """Give a library error about joints the file it concerns (when one file was given) and the command's own
    advice in place of the library's ``; pass joints...`` (a keyword argument the command line does not have)."""
    from skelanim.errors import SkelanimError

    if isinstance(err, SkelanimError):
        if err.path is None and len(files) == 1:
            err.path = str(files[0])
        if "; pass joints" in err.message:
            err.message = err.message.split("; pass joints")[0] + hint
        err.args = (err.one_line(),)


def load_one_figure(path: str | Path, command: str) -> Motion:
    """``skelanim.load(path)``, refused in one line when the file holds several figures (a BVH file of several
    ROOTs, :func:`skelanim.ops.figures`): ``command`` works on one body, and had used the first figure alone or
    measured the scene as one body."""
    import skelanim
    from skelanim.errors import SkeletonError
    from skelanim.ops.subset import figure_roots

    motion = skelanim.load(path)
    roots = [motion.skeleton.names[j] for j in figure_roots(motion)]
    if len(roots) > 1:
        raise SkeletonError(f"{len(roots)} figures (ROOTs {', '.join(roots)}); {command} takes one: pick it with "
                            f"skelanim convert {shlex.quote(str(path))} ONE.bvh --figure N", path=str(path))  # fmt: skip
    return motion


def up_name(axis: int, sign: float) -> str:
    """The up direction ``(axis, sign)`` as ``skelanim info`` prints it and ``--up`` takes it (:func:`check_up`):
    ``"Y"`` for +Y, ``"-Y"`` for an upside-down source whose heads lie below its feet along Y."""
    return ("-" if sign < 0 else "") + AXES[axis]


def describe(motion: Motion, path: str) -> dict:
    """The facts ``skelanim info`` prints, as a JSON-friendly dict."""
    skeleton = motion.skeleton
    height = motion.height
    orders = Counter(skeleton.rotation_order(j) or "-" for j in range(skeleton.num_joints))
    channel_counts = Counter(len(c) for c in skeleton.channels)
    takes = {}  # an FBX's animations: the one read, and all of them
    if motion.metadata.get("fbx_takes"):
        takes = {"take": motion.metadata.get("fbx_take"), "takes": motion.metadata["fbx_takes"]}
    return {
        "file": path,
        "joints": skeleton.num_joints,
        "joint_names": skeleton.names,
        "end_sites": len(skeleton.end_sites),
        "frames": motion.num_frames,
        "fps": motion.fps,
        "duration_s": motion.duration,
        "rotation_orders": dict(orders),
        "channels_per_joint": {str(k): v for k, v in sorted(channel_counts.items())},
        "animated_joint_translations": motion.joint_translations is not None,
        "height": height,
        "units_guess": guess_unit(motion.stature),  # from the bones: a crawl is as tall as it stands
        "up_axis": up_name(*motion.up_direction()),
        "left_right_pairs": len(skeleton.left_right_pairs()),
        **takes,
    }


@app.command()
def info(
    files: list[Path] = typer.Argument(..., help="Motion files (.bvh, DeepMimic .txt/.json, .glb/.gltf, .fbx "
                                       "through Blender)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object (a list of them for several files)."),
) -> None:
    """Show joints, frames, fps, duration, channel orders, height and the up axis guess of each FILE.

    The up axis is signed: -Y for a source whose heads lie below its feet along Y, as --up takes it. Of several
    files, one that cannot be read gets an error line on stderr (with --json an object of its `file` and `error`
    in the list) and the others their answers; the exit code is then 2."""
    import skelanim
    from skelanim.cli import error_line
    from skelanim.errors import SkelanimError

    described: list[dict[str, Any]] = []
    for file in files:
        try:
            described.append(describe(skelanim.load(file), str(file)))
        except (SkelanimError, OSError) as err:
            if len(files) == 1:
                raise
            described.append({"file": str(file), "error": error_line(err)})
    unread = [facts["error"] for facts in described if "error" in facts]
    if as_json:
        typer.echo(json.dumps(described[0] if len(described) == 1 else described, indent=2))
    else:
        _print_descriptions([facts for facts in described if "error" not in facts])
    for message in unread:
        typer.echo(f"error: {message}", err=True)
    if unread:
        raise typer.Exit(2)


def _print_descriptions(described: list[dict[str, Any]]) -> None:
    """``info``'s text: one block of ``key: value`` lines per file, blocks apart by an empty line."""
    for number, facts in enumerate(described):
        if number:
            typer.echo("")
        for key, value in facts.items():
            if key == "joint_names":
                value = " ".join(value)
            elif key == "takes":
                value = ", ".join(value)
            elif isinstance(value, float):
                value = f"{value:.4g}"
            typer.echo(f"{key:>28}: {value}")


#: Output suffixes that record whether a clip loops.
LOOPING_FORMATS = (".txt", ".json", ".glb", ".gltf")
UPRIGHT_FORMATS = (".glb", ".gltf", ".fbx")  # written in metres and turned from the source's up axis (--up)
TAKE_FORMATS = (".glb", ".gltf", ".fbx")  # sources of several animations (convert --take)


#: The options ``convert`` and ``convert-all`` share, each a factory of its typer option.
CONVERT_OPTIONS: dict[str, Callable[[], Any]] = {
    "fps": lambda: typer.Option(None, "--fps", help="Resample to this frame rate (slerp)."),
    "scale": lambda: typer.Option(None, "--scale", help="Multiply all lengths by this factor (a .glb/.gltf/.fbx "
                                  "output is in metres already: --scale 0.01 makes a cm figure 100 times smaller)."),
    "loop": lambda: typer.Option(None, "--loop", help="Whether the clip loops, for outputs that say so (DeepMimic's "
                                 "Loop, kept in a .glb/.gltf): wrap or none (default: the source's, else none)."),
    "up": lambda: typer.Option(None, "--up", help=UP_HELP + " A .glb/.gltf/.fbx output is turned from it to +Y up."),
    "simple_channels": lambda: typer.Option(False, "--simple-channels", help="BVH output: position channels on the "
                                            "root alone, zero root offset (a static root of one child folded away), "
                                            "as pybvh, three.js and engine importers all read alike."),
    **EDIT_OPTIONS,
}


@app.command()
def convert(
    src: Path = typer.Argument(..., help="Input motion file."),
    dst_arg: Path | None = typer.Argument(None, metavar="DST", show_default=False,
                                          help="Output file; its suffix picks the format (.bvh, .txt, .glb, .fbx, "
                                          ".npz, .csv, ...)."),
    dst_opt: Path | None = typer.Option(None, "-o", "--out", help="The output, if not given as DST."),
    fps: float | None = CONVERT_OPTIONS["fps"](),
    scale: float | None = CONVERT_OPTIONS["scale"](),
    loop: str | None = CONVERT_OPTIONS["loop"](),
    up: str | None = CONVERT_OPTIONS["up"](),
    simple_channels: bool = CONVERT_OPTIONS["simple_channels"](),
    start: float | None = CONVERT_OPTIONS["start"](),
    end: float | None = CONVERT_OPTIONS["end"](),
    mirror: bool = CONVERT_OPTIONS["mirror"](),
    keep_skeleton: bool = CONVERT_OPTIONS["keep_skeleton"](),
    smooth: float | None = CONVERT_OPTIONS["smooth"](),
    face: str | None = CONVERT_OPTIONS["face"](),
    to_origin: bool = CONVERT_OPTIONS["to_origin"](),
    figure: int | None = typer.Option(None, "--figure", min=1, help="A BVH source of several ROOTs (actors, props): "
                                      "write its N-th figure alone (1 = the first ROOT)."),
    take: str | None = typer.Option(None, "--take", help="A .glb/.gltf/.fbx source of several animations: read this "
                                    "one, by name (skelanim info lists an FBX's takes) or index (default: a glTF's "
                                    "first, an FBX's active take)."),
) -> None:
    """Convert SRC to DST between the supported formats, optionally trimming, mirroring, smoothing, resampling and more.

    DeepMimic .txt/.json output holds the DeepMimic humanoid only (no --scale); retarget other skeletons. The other
    formats keep the source's axes; glTF, which is +Y up, is turned from SRC's up axis (--up where the guess,
    skelanim info's up_axis, is wrong; also the axis --face and --to-origin work about). The edits apply in this
    order: --figure, --start/--end, --mirror, --smooth, --fps, --scale, --face, --to-origin."""
    from skelanim.cli.learn_common import one_of  # it imports this module

    dst = one_of(dst_arg, dst_opt, "DST", "-o/--out", "the output")
    edits = check_edits(start=start, end=end, mirror=mirror, keep_skeleton=keep_skeleton, smooth=smooth, face=face,
                        to_origin=to_origin)  # fmt: skip
    up_axis = check_convert_options(dst.suffix, fps=fps, scale=scale, loop=loop, up=up, simple_channels=simple_channels,
                                    edits=edits)
    if take is not None and src.suffix.lower() not in TAKE_FORMATS:
        raise typer.BadParameter(f"a {src.suffix or 'suffix-less'} source holds one animation; --take is for "
                                 f"{'/'.join(TAKE_FORMATS)} sources", param_hint="--take")  # fmt: skip
    check_output(dst, src)
    convert_file(src, dst, fps=fps, scale=scale, loop=loop, up_axis=up_axis, simple_channels=simple_channels,
                 figure=figure, edits=edits, take=take)


@app.command("convert-all")
def convert_all(
    sources: list[Path] = typer.Argument(..., help="Motion files, folders of them or glob patterns (a folder: its "
                                         ".bvh files, or those of --from)."),
    out_dir: Path = typer.Option(..., "-o", "--out-dir", help="Folder of the outputs (made if missing): each "
                                 "source's name with the --to suffix."),
    to: str = typer.Option(..., "--to", help="The outputs' format, as a suffix: .bvh, .txt, .json, .glb, .gltf, .fbx, "
                           ".npz, .npy or .csv."),
    from_suffixes: str = typer.Option(".bvh", "--from", help="Suffixes read from a folder, comma-separated "
                                      "(.bvh,.txt,.json,.glb,.gltf,.fbx)."),
    fps: float | None = CONVERT_OPTIONS["fps"](),
    scale: float | None = CONVERT_OPTIONS["scale"](),
    loop: str | None = CONVERT_OPTIONS["loop"](),
    up: str | None = CONVERT_OPTIONS["up"](),
    simple_channels: bool = CONVERT_OPTIONS["simple_channels"](),
    start: float | None = CONVERT_OPTIONS["start"](),
    end: float | None = CONVERT_OPTIONS["end"](),
    mirror: bool = CONVERT_OPTIONS["mirror"](),
    keep_skeleton: bool = CONVERT_OPTIONS["keep_skeleton"](),
    smooth: float | None = CONVERT_OPTIONS["smooth"](),
    face: str | None = CONVERT_OPTIONS["face"](),
    to_origin: bool = CONVERT_OPTIONS["to_origin"](),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar on stderr."),
    keep_going: bool = typer.Option(False, "--keep-going", help="Convert the other files where one cannot be "
                                    "converted; its error is listed at the end (exit code 2)."),
) -> None:
    """Convert many files into one folder, with convert's options; a progress bar over the files.

    Every source is found and every output name checked (no two alike, none a source) before anything is written.
    A file that cannot be converted stops the command with its name, or with --keep-going is listed at the end; the
    outputs written stay, whole. A folder's own files are read, not its subfolders' ('DIR/**/*.bvh' reads those)."""
    from tqdm import tqdm

    import skelanim
    from skelanim.cli import error_line
    from skelanim.data.dataset import expand_paths
    from skelanim.errors import SkelanimError

    def dotted(text: str) -> str:  # "glb" and ".GLB" alike: ".glb"
        text = text.strip().lower()
        return text if text.startswith(".") else "." + text

    suffix = dotted(to)
    if suffix not in {**skelanim.io.MOTION_FORMATS, **skelanim.io.POSITION_FORMATS}:
        raise typer.BadParameter(f"{to!r} is no format skelanim writes", param_hint="--to")
    readable = [dotted(part) for part in from_suffixes.split(",")]
    if not all(part in skelanim.io.MOTION_FORMATS for part in readable):
        raise typer.BadParameter(f"{from_suffixes!r}: motion formats are {', '.join(skelanim.io.MOTION_FORMATS)}",
                                 param_hint="--from")  # fmt: skip
    edits = check_edits(start=start, end=end, mirror=mirror, keep_skeleton=keep_skeleton, smooth=smooth, face=face,
                        to_origin=to_origin)  # fmt: skip
    up_axis = check_convert_options(suffix, fps=fps, scale=scale, loop=loop, up=up, simple_channels=simple_channels,
                                    edits=edits)
    files: list[Path] = []
    for given in sources:
        try:
            found = expand_paths([given], suffixes=tuple(readable))
        except FileNotFoundError:
            found = []
        if not found:
            below = next((p.suffix.lower() for p in given.rglob("*") if p.is_file() and p.suffix.lower() in readable),
                         None) if given.is_dir() else None  # fmt: skip
            raise skelanim.errors.FormatError("no motion files here" + (f" (its subfolders hold some: '{given}/**/*"
                                              f"{below}' reads them)" if below else ""), path=given)  # fmt: skip
        files.extend(found)
    files = list(dict.fromkeys(files))  # a file named twice (a folder and a pattern) is converted once
    outputs = [out_dir / (f.stem + suffix) for f in files]
    seen: dict[Path, Path] = {}
    read = {f.resolve() for f in files}
    for src, dst in zip(files, outputs):
        if dst in seen:
            raise typer.BadParameter(f"{seen[dst]} and {src} would both be written to {dst}", param_hint="'-o'")
        if dst.resolve() in read:
            raise typer.BadParameter(f"{dst} is one of the sources; write to another folder (it would be replaced)",
                                     param_hint="'-o'")  # fmt: skip
        seen[dst] = src
        check_output(dst, src)
    bar = tqdm(total=len(files), unit="file", disable=not progress, desc="convert")
    failed: list[str] = []
    for src, dst in zip(files, outputs):
        try:
            convert_file(src, dst, fps=fps, scale=scale, loop=loop, up_axis=up_axis, simple_channels=simple_channels,
                         edits=edits, quiet=True)
        except (SkelanimError, OSError) as err:
            if not keep_going:
                raise
            failed.append(error_line(err))
        bar.update()
    bar.close()
    typer.echo(f"wrote {len(files) - len(failed)} file(s) to {out_dir}"
               + (f"; {len(failed)} could not be converted:" if failed else ""))  # fmt: skip
    for message in failed:
        typer.echo(f"error: {message}", err=True)
    if failed:
        raise typer.Exit(2)


def check_convert_options(suffix: str, *, fps: float | None, scale: float | None, loop: str | None, up: str | None,
                          simple_channels: bool, edits: Edits = Edits()) -> str | None:
    """The checks of ``convert``'s options for an output of ``suffix`` (each refusal names its option; the edits'
    own by :func:`~skelanim.cli.edits.check_edits`); the ``--up`` axis as :func:`check_up` gives it."""
    if fps is not None:
        require_between(fps, "--fps", 0.01, 10000, "frames per second")
    if scale is not None and not (math.isfinite(scale) and scale > 0):
        raise typer.BadParameter(f"a positive finite factor, not {scale:g}", param_hint="--scale")
    if loop is not None and (loop not in ("wrap", "none") or suffix.lower() not in LOOPING_FORMATS):
        raise typer.BadParameter(f"expected wrap or none, got {loop!r}" if loop not in ("wrap", "none") else
                                 f"a {suffix or 'suffix-less'} file has no loop field ({', '.join(LOOPING_FORMATS)} do)",
                                 param_hint="--loop")  # fmt: skip
    up_axis = check_up(up)
    if up_axis is not None and suffix.lower() not in UPRIGHT_FORMATS and not edits.turns:
        raise typer.BadParameter(f"a {suffix or 'suffix-less'} file keeps the source's axes; --up is for "
                                 ".glb/.gltf/.fbx, --face and --to-origin", param_hint="--up")  # fmt: skip
    if simple_channels and suffix.lower() != ".bvh":
        raise typer.BadParameter(f"channels are a BVH file's; a {suffix or 'suffix-less'} output has none",
                                 param_hint="--simple-channels")  # fmt: skip
    return up_axis


def convert_file(src: Path, dst: Path, *, fps: float | None = None, scale: float | None = None,
                 loop: str | None = None, up_axis: str | None = None,
                 simple_channels: bool = False, figure: int | None = None, edits: Edits = Edits(),
                 quiet: bool = False, take: str | None = None) -> None:
    """One conversion of ``convert`` (options checked by :func:`check_convert_options` and
    :func:`~skelanim.cli.edits.check_edits`): read ``src``, apply the options in ``convert``'s order, write ``dst``
    (atomically) and, unless ``quiet``, say so. ``take``: the animation of a glTF or FBX source, a name or an index
    written in digits."""
    import torch

    import skelanim
    from skelanim import ops

    chosen = {} if take is None else {"animation": int(take) if take.isdigit() else take}
    motion = skelanim.load(src, **chosen)
    if figure is not None:
        parts = ops.figures(motion)
        if figure > len(parts):
            raise typer.BadParameter(f"{src} holds {len(parts)} figure(s), not {figure}", param_hint="--figure")
        motion = parts[figure - 1]
    motion = edit_before_resampling(motion, edits, src)
    if loop is not None:
        motion = motion.copy(metadata={**motion.metadata, "loop": loop})
    if scale is not None:
        motion = ops.scale(motion, scale)
        lengths = torch.cat([motion.skeleton.offsets.flatten(), motion.local_translations().flatten()])
        if not bool(torch.isfinite(lengths).all()):  # the writer would blame the output for the factor's overflow
            raise typer.BadParameter(f"{scale:g} times the lengths of {src} overflows", param_hint="--scale")
    if fps is not None:
        motion = ops.resample(motion, fps)
    motion = edit_after_resampling(motion, edits, src, up_axis)
    if simple_channels:
        with naming_the_file(src):  # a joint's animated translation: the file is the source's
            motion = ops.simplify_channels(motion)
    turned = up_axis is not None and dst.suffix.lower() in UPRIGHT_FORMATS  # the other formats keep the axes
    skelanim.save(motion, dst, **({"up_axis": up_axis} if turned else {}))
    if not quiet:
        typer.echo(f"wrote {dst} ({motion.num_frames} frames at {motion.fps:g} fps)")
    if motion.metadata.get("loop") == "wrap" and dst.suffix.lower() not in LOOPING_FORMATS:
        typer.echo(f"note: {src.name} loops (Loop: wrap) and a {dst.suffix} file cannot say so; converting it back to "
                   "DeepMimic, pass --loop wrap", err=True)  # fmt: skip


@app.command()
def positions(
    src: Path = typer.Argument(..., help="Input motion file."),
    out_arg: Path | None = typer.Argument(None, metavar="OUT", show_default=False,
                                          help="Output .npz (or .npy/.csv), if not given with -o."),
    out_opt: Path | None = typer.Option(None, "-o", "--out", help="Output .npz (or .npy/.csv)."),
    end_sites: bool = typer.Option(False, "--end-sites", help="Append End Site positions (named <joint>_end)."),
    contacts: bool = typer.Option(False, "--contacts", help="Also store foot contact labels (.npz only): `contacts` "
                                  "(F, K) bool and `contact_joints`, the feet and toes found by name; a joint is in "
                                  "contact where planted, low and nearly still (ops.foot_contacts), which leaves out "
                                  "a walk's rolling heel strike and push-off."),
) -> None:
    """Write world joint positions of SRC: `positions` (F, J, 3) in the file's units and `joints` (names)."""
    import numpy as np

    import skelanim
    from skelanim import ops
    from skelanim.cli.learn_common import one_of  # it imports this module
    from skelanim.io.positions import JointPositions

    out = one_of(out_arg, out_opt, "OUT", "-o/--out", "the output")
    if contacts and out.suffix.lower() != ".npz":
        raise typer.BadParameter(f"a {out.suffix or 'suffix-less'} file holds the positions alone; write .npz",
                                 param_hint="--contacts")  # fmt: skip
    motion = skelanim.load(src)
    data = JointPositions.from_motion(motion, end_sites=end_sites)
    extra: dict[str, Any] = {}
    if contacts:
        with naming_the_file(src):  # no foot joints by name: the file's skeleton
            feet = ops.find_feet(motion.skeleton)
        labels = ops.foot_contacts(motion, joints=feet)
        extra = {"contacts": np.asarray(labels), "contact_joints": [motion.skeleton.names[j] for j in feet]}
    skelanim.save(data, out, **({"extra_arrays": extra} if extra else {}))
    typer.echo(f"wrote {out} ({len(data.names)} joints, {data.positions.shape[0]} frames"
               + (f", contacts of {', '.join(extra['contact_joints'])})" if extra else ")"))
