"""``skelanim stream SRC``: play a motion to an avatar, live, over the VMC protocol (see :mod:`skelanim.serve.vmc`)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from skelanim.cli import app
from skelanim.cli.files import UP_HELP, check_up, load_one_figure
from skelanim.cli.ik import POSITIONS_FPS_HELP, POSITIONS_SCALE_HELP, model_unit, read_positions

SRC_HELP = ("A motion file (.bvh, DeepMimic .txt, .glb/.gltf, .fbx), or joint positions (.npy/.npz/.csv) solved to "
            "rotations by the shipped IK model first.")  # fmt: skip


@app.command()
def stream(
    src: Path = typer.Argument(..., help=SRC_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="The avatar application's host."),
    port: int = typer.Option(
        39539, "--port", min=1, max=65535, help="Its VMC port (39539: what marionettes listen on)."
    ),
    speed: float = typer.Option(1.0, "--speed", min=0.01, max=100.0, help="Playback speed."),
    loop: bool = typer.Option(False, "--loop", help="Start over at the end, until Ctrl-C; each play moves on by the clip's travel (a walk walks on)."),
    frames: int | None = typer.Option(None, "--frames", min=1, help="Stop after sending this many frames."),
    mapping: Path | None = typer.Option(None, "--map", help="Joint mapping (JSON/YAML) for SRC's skeleton."),
    avatar: Path | None = typer.Option(
        None,
        "--avatar",
        help="The receiving avatar's .vrm: its own bone offsets "
        "and bones are sent, the hips' travel scaled to its legs (EVMC4U moves every "
        "bone to the offsets it receives).",
    ),
    up: str | None = typer.Option(None, "--up", help=UP_HELP),
    scale: float | None = typer.Option(None, "--scale", help="Joint positions only: " + POSITIONS_SCALE_HELP),
    fps: float | None = typer.Option(None, "--fps", min=0.01, max=10000.0, help="Joint positions only: "
                                     + POSITIONS_FPS_HELP),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Stream SRC to an avatar in real time (the VMC protocol, OSC over UDP).

    Sends the humanoid bones of a VRM model (Unity's names and axes, metres), in bundles that need no
    fragmenting, for VSeeFace, Warudo, EVMC4U (Unity), VMC4UE (Unreal) or VMC4B (Blender). A slow network skips
    frames rather than falling behind; Ctrl-C stops."""
    from tqdm import tqdm

    import skelanim
    from skelanim.serve.avatar import load_vrm
    from skelanim.serve.vmc import AvatarStream, avatar_frames

    axis = check_up(up)
    up_direction = None if axis is None else ("xyz".index(axis[-1]), -1.0 if axis.startswith("-") else 1.0)
    rig = load_vrm(avatar) if avatar is not None else None
    sender = AvatarStream(host, port)  # an unknown host is refused before the work
    if src.suffix.lower() in skelanim.io.MOTION_FORMATS:
        for value, option in ((scale, "--scale"), (fps, "--fps")):
            if value is not None:  # a motion file carries its rate and unit; resample or scale it with convert
                raise typer.BadParameter(f"is for joint positions; {src} is a motion file (skelanim convert --fps, "
                                         "--scale change one)", param_hint=option)  # fmt: skip
        motion = load_one_figure(src, "stream")
    else:  # joint positions; an unknown suffix is refused there, in one line naming every suffix stream takes
        from skelanim.ik.solve import load_model, solve

        data, note = read_positions(src, scale, fps, model_unit(load_model()))
        motion = solve(data, source=src)
        if note:
            typer.echo(note, err=True)
    try:
        poses = avatar_frames(motion, mapping=mapping, up=up_direction, avatar=rig)
    except skelanim.errors.SkelanimError as err:  # a skeleton the mapping cannot read: the message names SRC
        err.path = err.path or str(src)
        raise
    with sender:
        typer.echo(f"streaming {src} to {sender.target} ({poses.num_frames} frames at {poses.fps:g} fps x {speed:g}, "
                   f"{len(poses.bones)} humanoid bones, VMC protocol){'; Ctrl-C stops' if loop else ''}")  # fmt: skip
        total = frames if frames is not None else (None if loop else poses.num_frames)
        bar = tqdm(total=total, unit="frame", disable=not progress, leave=False)
        sent = 0

        def advance(_: int) -> None:
            nonlocal sent
            sent += 1
            bar.update()

        try:
            wrap = True if motion.metadata.get("loop") == "wrap" else None  # DeepMimic's: the last frame is the first
            sender.play(poses, speed=speed, loop=loop, wrap=wrap, max_frames=frames, on_frame=advance)
        except KeyboardInterrupt:
            bar.close()
            typer.echo(f"stopped after {sent} frames")
            return
        bar.close()
    typer.echo(f"sent {sent} frames to {sender.target}")


@app.command()
def record(
    out_arg: Path | None = typer.Argument(None, metavar="OUT", show_default=False,
                                          help="The motion file to write (.bvh, .glb/.gltf, .npz positions, ...)."),
    out_opt: Path | None = typer.Option(None, "-o", "--out", help="The motion file to write, if not given as OUT."),
    port: int = typer.Option(39539, "--port", min=0, max=65535, help="The UDP port to listen on."),
    host: str = typer.Option("127.0.0.1", "--host", help="The address to listen on (0.0.0.0: every interface)."),
    seconds: float | None = typer.Option(None, "--seconds", min=0.001, help="Stop this long after the first frame."),
    frames: int | None = typer.Option(None, "--frames", min=1, help="Stop after this many frames."),
    wait: float | None = typer.Option(None, "--wait", min=0.001, help="Stop when nothing arrives for this long after the first frame."),
    give_up: float | None = typer.Option(
        None, "--give-up", min=0.001, help="Stop with an error if no frame has arrived this long after the start (default: wait for it)."),
    fps: float = typer.Option(30.0, "--fps", min=1.0, max=1000.0, help="Frame rate of the written motion."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Record a live VMC stream into a motion file.

    Listens for any VMC performer (VSeeFace, a webcam or VR mocap app, skelanim stream) and writes the humanoid
    bones that arrive, in metres, Y up, resampled to --fps by the sender's clock. Ctrl-C (or --seconds, --frames,
    --wait) stops and writes."""
    from tqdm import tqdm

    import skelanim
    from skelanim.cli.files import require_suffix
    from skelanim.cli.learn_common import one_of
    from skelanim.io import POSITION_FORMATS
    from skelanim.io.atomic import check_can_write
    from skelanim.serve.record import VMCRecorder, frames_to_motion

    out = one_of(out_arg, out_opt, "OUT", "-o/--out", "the output")
    require_suffix(out, (".bvh", ".glb", ".gltf", *POSITION_FORMATS), "a recording")
    check_can_write(out)  # before the take, not after it
    with VMCRecorder(host, port) as recorder:
        ends = "Ctrl-C stops" if seconds is None and frames is None and wait is None else "stops by itself once frames arrive"
        typer.echo(f"listening on {recorder.target} for VMC; {ends}" + (
            "" if give_up is None else f"; gives up if none has arrived in {give_up:g} s"))  # fmt: skip
        with tqdm(total=frames, unit="frame", disable=not progress, leave=False) as bar:
            received = recorder.receive(seconds=seconds, frames=frames, wait=wait, give_up=give_up,
                                        on_frame=lambda _: bar.update())  # fmt: skip
    with _no_interrupt():  # a second Ctrl-C had cut the save short: the take was lost
        motion = frames_to_motion(received, fps)
        try:
            skelanim.save(motion, out)
        except (OSError, skelanim.errors.SkelanimError):
            _keep_take(motion, out)
            raise
    skipped = f"; {recorder.ignored} message(s) ignored (not OSC, or not numbers where numbers go)" if recorder.ignored else ""
    typer.echo(f"wrote {out} ({motion.num_frames} frames at {fps:g} fps from {len(received)} received, "
               f"{motion.skeleton.num_joints} bones{skipped})")  # fmt: skip


@contextmanager
def _no_interrupt() -> Iterator[None]:
    """Ctrl-C ignored inside (only the main thread may set a signal handler; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _keep_take(motion, out: Path) -> None:
    """A take that could not be written to OUT is saved in the temporary folder instead, and said so: a live
    performance cannot be recorded again."""
    import tempfile

    import skelanim

    fd, spare = tempfile.mkstemp(prefix="skelanim-take-", suffix=".bvh")
    os.close(fd)
    try:
        skelanim.save(motion, spare)
    except (OSError, skelanim.errors.SkelanimError):
        os.unlink(spare)
        return
    typer.echo(f"note: {out} could not be written; the take is kept in {spare}", err=True)
