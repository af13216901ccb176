"""``skelanim stream SRC``: play a motion to an avatar, live, over the VMC protocol (see :mod:`skelanim.serve.vmc`)."""

from __future__ import annotations

from pathlib import Path

import typer

from skelanim.cli import app

SRC_HELP = ("A motion file (.bvh, DeepMimic .txt, .glb/.gltf), or joint positions (.npy/.npz/.csv) solved to "
            "rotations by the shipped IK model first.")  # fmt: skip


@app.command()
def stream(
    src: Path = typer.Argument(..., help=SRC_HELP),
    host: str = typer.Option("127.0.0.1", "--host", help="The avatar application's host."),
    port: int = typer.Option(
        39539, "--port", min=1, max=65535, help="Its VMC port (39539: what marionettes listen on)."
    ),
    speed: float = typer.Option(1.0, "--speed", min=0.01, max=100.0, help="Playback speed."),
    loop: bool = typer.Option(False, "--loop", help="Start over at the end, until Ctrl-C."),
    frames: int | None = typer.Option(None, "--frames", min=1, help="Stop after sending this many frames."),
    mapping: Path | None = typer.Option(None, "--map", help="Joint mapping (JSON/YAML) for SRC's skeleton."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Stream SRC to an avatar in real time as the VMC protocol (OSC over UDP): the humanoid bones of a VRM model
    (Unity's names and axes, metres), one bundle per frame, for VSeeFace, Warudo, EVMC4U (Unity), VMC4UE (Unreal)
    or VMC4B (Blender). A slow network skips frames rather than falling behind; Ctrl-C stops."""
    from tqdm import tqdm

    import skelanim
    from skelanim.io.positions import SUFFIXES
    from skelanim.serve.vmc import HUMANOID_BONES, AvatarStream, avatar_frames

    if src.suffix.lower() in SUFFIXES:
        from skelanim.ik.solve import solve

        motion = solve(skelanim.load_positions(src), source=src)
    else:
        motion = skelanim.load(src)
    poses = avatar_frames(motion, mapping=mapping)
    with AvatarStream(host, port) as sender:
        typer.echo(f"streaming {src} to {sender.target} ({poses.num_frames} frames at {poses.fps:g} fps x {speed:g}, "
                   f"{len(HUMANOID_BONES)} humanoid bones, VMC protocol){'; Ctrl-C stops' if loop else ''}")  # fmt: skip
        total = frames if frames is not None else (None if loop else poses.num_frames)
        bar = tqdm(total=total, unit="frame", disable=not progress, leave=False)
        sent = 0

        def advance(_: int) -> None:
            nonlocal sent
            sent += 1
            bar.update()

        try:
            sender.play(poses, speed=speed, loop=loop, max_frames=frames, on_frame=advance)
        except KeyboardInterrupt:
            bar.close()
            typer.echo(f"stopped after {sent} frames")
            return
        bar.close()
    typer.echo(f"sent {sent} frames to {sender.target}")
