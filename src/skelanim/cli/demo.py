"""``skelanim demo``: the main job on the bundled DeepMimic sample, start to finish."""

from __future__ import annotations

import errno
import json
import time
from pathlib import Path

import typer

from skelanim.cli import app


@app.command()
def demo(
    out: Path = typer.Option(Path("out/demo"), "--out", "-o", help="Folder for the outputs."),
    clip: str = typer.Option("walk", "--clip", help="Bundled DeepMimic clip: walk, run or jump."),
) -> None:
    """Run the pipeline on a bundled DeepMimic clip and write every output into OUT."""
    import skelanim
    from skelanim import ops
    from skelanim.cli.files import describe
    from skelanim.data.samples import CLIPS, sample_path
    from skelanim.io.atomic import atomic_open

    if clip not in CLIPS:
        raise typer.BadParameter(f"expected one of {', '.join(CLIPS)}, got {clip!r}", param_hint="--clip")
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory (expected a folder for the outputs)", str(out))
    start = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    source = sample_path(clip)
    motion = skelanim.load(source)
    typer.echo(f"loaded {source.name}: {motion.skeleton.num_joints} joints, {motion.num_frames} frames at {motion.fps:g} fps")

    with atomic_open(out / "info.json") as handle:  # a failure (a full disk) leaves no info.json, and names it
        handle.write(json.dumps(describe(motion, str(source)), indent=2))
    skelanim.save(motion, out / f"{clip}.bvh")
    back = skelanim.load(out / f"{clip}.bvh")
    order = [back.skeleton.index(name) for name in motion.skeleton.names]  # BVH stores joints depth-first
    drift = float((back.positions()[:, order] - motion.positions()).abs().max()) / motion.height
    typer.echo(f"wrote {clip}.bvh; reloaded positions differ by {drift:.2e} of height")

    at_60 = ops.resample(motion, 60.0)
    skelanim.save(at_60, out / f"{clip}_60fps.bvh")
    mirrored = ops.mirror(motion)
    skelanim.save(mirrored, out / f"{clip}_mirrored.bvh")
    normalized = ops.normalize(motion)
    skelanim.save(normalized, out / f"{clip}_positions.npz")
    contacts = ops.foot_contacts(motion)
    share = contacts.float().mean(0) if hasattr(contacts, "float") else contacts.mean(0)
    typer.echo(f"resampled to 60 fps ({at_60.num_frames} frames), mirrored, normalised to unit height; "
               f"feet planted {[round(float(s), 2) for s in share]} of the time")

    # Positions -> neural IK -> BVH: the walk is retargeted onto the shipped IK model's skeleton (Bandai-Namco,
    # 22 joints), its joint positions stand in for tracked input, and IK-GAT turns them back into rotations.
    from skelanim.ik import IKModel, solve
    from skelanim.retarget import Retargeter

    model = IKModel.load(None)
    target = model.rig.skeleton
    on_target = Retargeter(motion.skeleton, target, method="copy")(motion)
    tracked = on_target.positions()
    skelanim.save(on_target, out / f"{clip}_tracked_positions.npz")
    # the first solve builds the network's onnxruntime session (an ONNX export, about a second, once per model):
    # built here so that the times below are the solves' own
    tic = time.perf_counter()
    session = model.ort_session()
    typer.echo(f"neural IK: {'onnxruntime session built' if session else 'no onnxruntime session (torch runs it)'} "
               f"in {time.perf_counter() - tic:.2f} s (once per model)")
    for label, refine in (("ik", False), ("ik_refined", True)):
        tic = time.perf_counter()
        solved = solve(tracked, model, names=target.names, fps=motion.fps, refine=refine)
        seconds = time.perf_counter() - tic
        errors = (solved.positions() - tracked).norm(dim=-1) / on_target.height  # (F, J)
        worst = int(errors.max(dim=0).values.argmax())
        skelanim.save(solved, out / f"{clip}_{label}.bvh")
        typer.echo(f"neural IK{' + refinement' if refine else ''}: {solved.num_frames} poses in {seconds:.3f} s, "
                   f"mean joint error {100 * float(errors.mean()):.2f}% of height, worst {100 * float(errors.max()):.2f}% "
                   f"({target.names[worst]}) -> {clip}_{label}.bvh")

    from skelanim.viz.plots import plot_poses, save_figure
    from skelanim.viz.viewer import write_viewer

    shown = [motion, mirrored, solved]
    labels = [clip, f"{clip} mirrored", f"{clip} via neural IK"]
    save_figure(plot_poses(shown, labels=labels), out / f"{clip}_poses.png")
    write_viewer(out / "viewer.html", shown, labels=labels)
    skelanim.save(motion, out / f"{clip}.glb")
    typer.echo(f"pictured: {clip}_poses.png, viewer.html (open in a browser), {clip}.glb (glTF for engines)")
    typer.echo(f"done in {time.perf_counter() - start:.1f} s; outputs in {out}/")
