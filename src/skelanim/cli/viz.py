"""Figure and video commands: ``plot`` and ``render``."""

from __future__ import annotations

from pathlib import Path

import typer

from skelanim.cli import app
from skelanim.cli.files import require_between, with_option_hint


def _load_all(files: list[Path]) -> tuple[list, list[str]]:
    """Load every file; labels are the file names (stems, made unique by their parent folder if needed)."""
    import skelanim

    motions = [skelanim.load(f) for f in files]
    labels = [f.stem for f in files]
    if len(set(labels)) < len(labels):
        labels = [f"{f.parent.name}/{f.stem}" for f in files]
    return motions, labels


def _split_joints(joints: list[str] | None) -> list[str] | None:
    """``-j A -j B`` and ``-j A,B`` both give ``[A, B]``."""
    if not joints:
        return None
    return [name.strip() for item in joints for name in item.split(",") if name.strip()]


@app.command()
def plot(
    files: list[Path] = typer.Argument(..., help="One or more motion files, compared in one figure."),
    out: Path = typer.Option(..., "-o", "--out", help="Output image; the suffix picks the format (.png, .pdf, .svg)."),
    kind: str = typer.Option("trajectories", "--kind", "-k", help="trajectories | angles | contacts | poses."),
    joints: list[str] | None = typer.Option(
        None,
        "--joints",
        "-j",
        help="For --kind trajectories, angles and contacts: joint names (repeat, or comma-separated); default: the "
        "root and feet, the knees, the feet (each found by name).",
    ),
    angle: str | None = typer.Option(
        None, "--angle", help="For --kind angles: flexion (between bones, the default) or rotation (local)."
    ),
    count: int | None = typer.Option(None, "--count", min=1, help="For --kind poses: number of poses per motion (8)."),
    dpi: int = typer.Option(100, "--dpi", help="Resolution of raster output (dots per inch, 10 to 1200)."),
) -> None:
    """Plot joint trajectories, joint angles, foot contacts or a strip of poses of FILES into OUT."""
    from skelanim.errors import ShapeError, SkeletonError
    from skelanim.viz import plots

    if kind not in plots.KINDS:
        raise ShapeError(f"unknown --kind {kind!r}; expected one of {', '.join(plots.KINDS)}")
    # an option the kind does not use is refused, not ignored (-j NoSuchJoint with --kind poses had passed)
    unused = plots.unused_option(kind, {"joints": joints is not None, "angle": angle is not None,
                                        "count": count is not None})  # fmt: skip
    if unused is not None:
        raise ShapeError(f"--{unused[0]} is not used by --kind {kind}; only by --kind {plots.kinds_text(unused[1])}")
    if angle is not None and angle not in ("flexion", "rotation"):
        raise ShapeError(f"unknown --angle {angle!r}; expected flexion or rotation")
    require_between(dpi, "--dpi", plots.MIN_DPI, 1200, "dots per inch")
    plots.check_figure_path(out)  # before the files are read and drawn
    motions, labels = _load_all(files)
    try:  # kind and angle are plain strings checked above against what the Literals of plot_motions name
        fig = plots.plot_motions(motions, kind, _split_joints(joints), labels=labels, angle=angle, count=count)  # type: ignore[arg-type]
    except SkeletonError as err:
        # the library's "pass joints=" becomes the option, for the kinds that take it (the others have no such advice)
        with_option_hint(err, files, "; name them with --joints" if kind in plots.OPTION_KINDS["joints"] else "")
        raise
    plots.save_figure(fig, out, dpi=dpi)
    typer.echo(f"wrote {out} ({kind}, {len(motions)} motion{'s' if len(motions) > 1 else ''})")


@app.command()
def render(
    files: list[Path] = typer.Argument(..., help="One or more motion files."),
    out: Path = typer.Option(..., "-o", "--out", help="Output video: .mp4 (H.264) or .gif."),
    fps: float = typer.Option(
        30.0, "--fps", help="Output frame rate (motions are sampled at the nearest frame); at most 50 for a .gif."
    ),
    size: str = typer.Option("640x480", "--size", help="WIDTHxHEIGHT of the whole video in pixels."),
    overlay: bool = typer.Option(False, "--overlay", help="Draw all motions in one panel (different colours)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar on stderr."),
) -> None:
    """Render FILES as a stick-figure video, side by side (default) or overlaid."""
    from skelanim.errors import ShapeError
    from skelanim.viz import video

    require_between(fps, "--fps", 0.1, 240, "frames per second")  # before any file is read or an encoder is started
    try:
        dims = video.parse_size(size)
    except ShapeError as err:
        raise ShapeError(f"--size: {err.message}") from None
    out = video.check_video_path(out, fps=fps, size=dims, fps_option="--fps")  # before the files are read and drawn
    motions, labels = _load_all(files)
    if overlay:  # converted here once, to say so (render_frames then finds them in one unit and up)
        motions, was = video.overlay_frame(motions)
    if overlay and was:
        typer.echo("note: drawn Y up in metres, one panel for files in other units or axes: "
                   + "; ".join(f"{name} ({what})" for name, what in zip(labels, was, strict=True)), err=True)  # fmt: skip
    video.render_video(motions, out, fps=fps, size=dims, overlay=overlay, labels=labels, progress=progress)
    frames = video.frame_count(motions, fps)
    typer.echo(f"wrote {out} ({frames} frame{'s' * (frames != 1)}, {dims[0]}x{dims[1]} at {fps:g} fps)")
