"""``skelanim plot`` / :mod:`skelanim.viz.plots`: options a kind does not use are refused (not ignored), one-frame
motions are drawn, the up axis's title says which way is up, and the output name is checked before any file is read."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_output import one_line_error  # tests/helpers
from matplotlib.colors import to_rgb

import skelanim
from skelanim.cli import main
from skelanim.core.rotations import axis_angle_to_quat
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError
from skelanim.ops import rotate
from skelanim.viz import plots
from skelanim.viz._draw import unit_color

WALK = str(sample_path("walk"))
BANDAI_WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"
BANDAI_RUN = "bandai_namco_1/dataset-1_run_happy_001.bvh"


# --------------------------------------------------------------------------- options the kind does not use
@pytest.mark.parametrize(
    "kind, option, value, users",
    [
        ("poses", "-j", "left_knee", "trajectories, angles and contacts"),
        ("trajectories", "--angle", "rotation", "angles"),
        ("contacts", "--angle", "flexion", "angles"),
        ("trajectories", "--count", "3", "poses"),
        ("angles", "--count", "8", "poses"),
    ],
)
def test_plot_refuses_an_option_its_kind_does_not_use(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, kind: str, option: str, value: str, users: str
) -> None:
    """``-j`` with poses (an unknown joint name then passed), ``--angle`` or ``--count`` with trajectories
    were silently ignored: now one line naming the option, the kind, and the kinds that use it; nothing written."""
    out = tmp_path / "x.png"
    code = main(["plot", WALK, "--kind", kind, option, value, "-o", str(out)])
    name = "--joints" if option == "-j" else option
    one_line_error(capfd, code, name, f"--kind {kind}", users)
    assert list(tmp_path.iterdir()) == []


def test_plot_options_of_their_own_kind_still_work(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for args in (["--kind", "poses", "--count", "3"], ["--kind", "angles", "--angle", "rotation", "-j", "left_knee"],
                 ["--kind", "trajectories", "-j", "left_knee"], ["--kind", "contacts"],
                 ["--kind", "contacts", "-j", "left_ankle,right_ankle"]):  # fmt: skip
        out = tmp_path / "x.png"
        assert main(["plot", WALK, *args, "-o", str(out)]) == 0, capfd.readouterr()
        assert out.stat().st_size > 1000
    capfd.readouterr()


def test_plot_motions_refuses_an_option_its_kind_does_not_use() -> None:
    walk = skelanim.load(WALK)[:10]
    with pytest.raises(ShapeError, match="joints is not used by plot kind 'poses'; only by trajectories, angles and "
                                         "contacts"):  # fmt: skip
        plots.plot_motions(walk, "poses", ["NoSuchJoint"])
    with pytest.raises(ShapeError, match="count is not used by plot kind 'trajectories'"):
        plots.plot_motions(walk, "trajectories", count=3)
    with pytest.raises(ShapeError, match="angle is not used by plot kind 'poses'"):
        plots.plot_motions(walk, "poses", angle="rotation")
    assert plots.plot_motions(walk, "poses", count=2) is not None
    assert plots.plot_motions(walk, "angles", angle="rotation") is not None


# --------------------------------------------------------------------------- one frame
def one_frame_bvh(source: Path, target: Path) -> Path:
    """``source``'s header and its first frame line, with ``Frames: 1``."""
    lines = source.read_text().splitlines()
    end = next(k for k, line in enumerate(lines) if line.startswith("Frame Time:"))
    head = ["Frames: 1" if line.startswith("Frames:") else line for line in lines[: end + 1]]
    target.write_text("\n".join([*head, lines[end + 1]]) + "\n")
    return target


def coloured_pixels(fig, ax, rgb: tuple[float, ...]) -> int:
    """Pixels of ``ax``'s box in the drawn ``fig`` within 30 levels of ``rgb``."""
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
    box = ax.get_window_extent()
    height = image.shape[0]
    crop = image[int(height - box.y1) : int(height - box.y0), int(box.x0) : int(box.x1)]
    return int((np.abs(crop - np.array(rgb) * 255).max(axis=-1) < 30).sum())


@pytest.mark.parametrize("kind", ["trajectories", "angles"])
def test_a_one_frame_motion_is_drawn(mocap_files, tmp_path: Path, kind: str) -> None:
    """A one-point line without a marker draws nothing: the axes of a one-frame file were empty."""
    (source,) = mocap_files([BANDAI_WALK])
    motion = skelanim.load(one_frame_bvh(source, tmp_path / "one.bvh"))
    assert motion.num_frames == 1
    fig = plots.plot_motions(motion, kind)  # type: ignore[arg-type]
    axes = fig.axes[1:2] if kind == "trajectories" else fig.axes[:1]  # the first without a legend, or the angle
    for ax in fig.axes:
        assert [line.get_marker() for line in ax.get_lines()] == ["o"]
    for ax in axes:
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        assert coloured_pixels(fig, ax, to_rgb(unit_color(0))) > 20
    several = plots.plot_motions(skelanim.load(source), kind)  # type: ignore[arg-type]
    assert {line.get_marker() for ax in several.axes for line in ax.get_lines()} == {"None"}


# --------------------------------------------------------------------------- the up axis
def test_trajectory_titles_say_which_way_is_up(mocap_files) -> None:
    """A Bandai run turned 180 degrees about X has up -Y: its Y column said "Y (up)"."""
    (path,) = mocap_files([BANDAI_RUN])
    run = skelanim.load(path)[:60]
    down = rotate(run, axis_angle_to_quat(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), math.pi))
    assert run.up_direction() == (1, 1.0) and down.up_direction() == (1, -1.0)
    titles = [ax.get_title() for ax in plots.plot_trajectories(down).axes]
    assert titles[:3] == ["root: X", "root: Y (down; up is \u2212Y)", "root: Z"], titles
    assert not any("(up)" in t for t in titles)
    titles = [ax.get_title() for ax in plots.plot_trajectories(run).axes]
    assert titles[:3] == ["root: X", "root: Y (up)", "root: Z"], titles
    # compared with the upright run: turned Y-up in metres, so +Y is up
    both = plots.plot_trajectories([run, down], labels=["run", "down"])
    assert [ax.get_title() for ax in both.axes][:3] == ["root: X", "root: Y (up)", "root: Z"]


# --------------------------------------------------------------------------- checks before work
def test_plot_refuses_a_bad_output_before_reading_the_files(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``-o a.xyz`` is refused first (it had loaded and drawn the files, 15 s for a big one, then refused)."""
    missing = str(tmp_path / "missing.bvh")
    line = one_line_error(capfd, main(["plot", missing, "-o", str(tmp_path / "a.xyz")]), "a.xyz", "png")
    assert "missing.bvh" not in line
    assert list(tmp_path.iterdir()) == []


def test_plot_of_one_motion_says_1_motion(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["plot", WALK, "-o", str(tmp_path / "x.png")]) == 0
    assert "(trajectories, 1 motion)" in capfd.readouterr().out


# --------------------------------------------------------------------------- skeletons without named feet, one joint
def stick_bvh(path: Path, joints: int, frames: int = 30) -> Path:
    """A BVH of a chain of ``joints`` joints ``A``, ``B``, ... (no End Site: one joint has no bone at all), its
    root sliding along X and its other joints swinging about Z; no joint is named like a foot."""
    names = [chr(ord("A") + k) for k in range(joints)]
    head = ["HIERARCHY", f"ROOT {names[0]}", "{", " OFFSET 0 0 0",
            " CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation"]  # fmt: skip
    for k, name in enumerate(names[1:], start=1):
        head += [" " * k + f"JOINT {name}", " " * k + "{", " " * k + " OFFSET 0 10 0",
                 " " * k + " CHANNELS 3 Zrotation Xrotation Yrotation"]  # fmt: skip
    head += [" " * k + "}" for k in range(joints - 1, -1, -1)]
    rows = [" ".join([f"{0.5 * f:g}", "0", "0", "0", "0", "0"] + [f"{10 * math.sin(f / 5):.4f}", "0", "0"] * (joints - 1))
            for f in range(frames)]  # fmt: skip
    path.write_text("\n".join([*head, "MOTION", f"Frames: {frames}", "Frame Time: 0.0333333", *rows]) + "\n")
    return path


def test_contacts_of_a_skeleton_without_named_feet_take_joints(capfd: pytest.CaptureFixture[str], tmp_path: Path):
    """``-k contacts`` on a file whose feet are not found by name said "name them with --joints", and ``-j`` was then
    refused with contacts: ``--joints`` now picks the joints whose contacts are drawn."""
    stick = stick_bvh(tmp_path / "stick.bvh", 3)
    out = tmp_path / "c.png"
    one_line_error(capfd, main(["plot", str(stick), "-k", "contacts", "-o", str(out)]), str(stick), "--joints")
    assert main(["plot", str(stick), "-k", "contacts", "-j", "A,C", "-o", str(out)]) == 0, capfd.readouterr()
    assert out.stat().st_size > 1000 and "(contacts, 1 motion)" in capfd.readouterr().out
    line = one_line_error(capfd, main(["plot", str(stick), "-k", "contacts", "-j", "Z", "-o", str(tmp_path / "d.png")]))
    assert "unknown joint 'Z'" in line and str(stick) in line and not (tmp_path / "d.png").exists()
    assert main(["plot", "--help"]) == 0  # the help says which kinds take --joints
    assert "For --kind trajectories, angles and contacts" in " ".join(capfd.readouterr().out.replace("│", " ").split())


def test_a_one_joint_skeleton_is_a_dot_in_the_pose_strip(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A one-joint file (no bone) crashed the pose strip with numpy's "zero-size array to reduction operation": its
    joint is now drawn as a dot per pose, and the command writes the figure."""
    one = stick_bvh(tmp_path / "one.bvh", 1)
    ax = plots.plot_poses(skelanim.load(one), count=4).axes[0]
    dots = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(dots) == 4 and all(len(line.get_xdata()) == 1 for line in dots)
    out = tmp_path / "poses.png"
    assert main(["plot", str(one), "-k", "poses", "-o", str(out)]) == 0, capfd.readouterr()
    assert out.stat().st_size > 1000 and "(poses, 1 motion)" in capfd.readouterr().out
