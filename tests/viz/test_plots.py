"""Figures of skelanim.viz.plots: what is drawn (lines and their data), the pixels written, errors.

The bundled DeepMimic clips need no external data; the real-data tests use the shared mocap folder.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
import pytest
from contact_bars import bar_spans, flag_runs  # tests/helpers
from matplotlib.collections import LineCollection
from needs import missing_data
from PIL import Image

import skelanim
from skelanim.core.motion import Motion
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError, SkeletonError, UnsupportedFormatError
from skelanim.viz import plots


@pytest.fixture(scope="module")
def walk() -> Motion:
    return skelanim.load(sample_path("walk"))


@pytest.fixture(scope="module")
def run() -> Motion:
    return skelanim.load(sample_path("run"))


def pixels(fig, path: Path) -> np.ndarray:
    """Save through the public writer and read the PNG back as ``(H, W, 3)`` uint8."""
    plots.save_figure(fig, path)
    return np.asarray(Image.open(path).convert("RGB"))


def ink(image: np.ndarray) -> float:
    """Share of pixels that are not (near) white."""
    return float((image.min(axis=-1) < 200).mean())


def test_trajectories_plot_the_joint_positions(walk: Motion, run: Motion) -> None:
    fig = plots.plot_trajectories([walk, run], ["root", "left_ankle"], labels=["walk", "run"])
    axes = fig.axes
    assert len(axes) == 2 * 3  # 2 joints x (X, Y, Z)
    assert all(len(ax.lines) == 2 for ax in axes)  # one line per motion
    pos = walk.positions().numpy()
    ankle = walk.skeleton.index("left_ankle")
    # row 1 (left_ankle), column 2 (Z): the walk's line is its ankle Z over time
    line = axes[1 * 3 + 2].lines[0]
    np.testing.assert_allclose(line.get_ydata(), pos[:, ankle, 2])
    np.testing.assert_allclose(line.get_xdata(), np.arange(walk.num_frames) / walk.fps)
    assert "(up)" in axes[1].get_title()  # Y is up for DeepMimic


def test_trajectories_of_files_in_other_units_or_up_axes_share_one_frame(walk: Motion) -> None:
    """The same walk in centimetres and Z-up was drawn in its own numbers beside the metre, Y-up one (titles from
    the last file); now both are turned Y-up in metres, and the lines coincide."""
    from skelanim import ops
    from skelanim.core.units import up_to_y_matrix

    turn = up_to_y_matrix(2).T.to(walk.root_positions.dtype)  # +Y to +Z
    q = matrix_to_quat_(turn)
    sk = walk.skeleton
    z_up = Motion(type(sk)(sk.names, sk.parents, sk.offsets @ turn.T, sk.channels,
                           {k: turn @ v for k, v in sk.end_sites.items()}),
                  quat_conj_(q, walk.rotations), walk.root_positions @ turn.T, walk.fps)  # fmt: skip
    cm = ops.scale(z_up, 100.0)
    cm.metadata["units"] = "cm"  # the same body in centimetres (ops.scale alone makes a body 100 times larger)
    assert cm.up_direction() == (2, 1.0)
    fig = plots.plot_trajectories([walk, cm], ["root"], labels=["m, Y up", "cm, Z up"])
    for a in range(3):
        mine, theirs = (line.get_ydata() for line in fig.axes[a].lines)
        np.testing.assert_allclose(theirs, mine, atol=1e-9 + 1e-6 * walk.height)
    assert "(up)" in fig.axes[1].get_title() and fig.axes[0].get_ylabel() == "m"
    same = plots.plot_trajectories([walk, walk], ["root"])  # files that agree keep their own frame and unit
    np.testing.assert_allclose(same.axes[2].lines[0].get_ydata(), walk.positions().numpy()[:, 0, 2])


def matrix_to_quat_(m):
    from skelanim.core.rotations import matrix_to_quat

    return matrix_to_quat(m)


def quat_conj_(q, rotations):
    """Every local rotation conjugated by ``q``: every world position turned by it."""
    import torch

    from skelanim.core.rotations import quat_multiply

    q = q.to(rotations.dtype)
    return quat_multiply(quat_multiply(q, rotations), q * torch.tensor([1.0, -1, -1, -1], dtype=q.dtype))


def test_default_joints_are_root_and_feet(walk: Motion) -> None:
    fig = plots.plot_trajectories(walk)
    titles = [ax.get_title() for ax in fig.axes[::3]]
    assert titles == ["root: X", "left foot: X", "right foot: X"]


def test_images_differ_between_inputs(walk: Motion, run: Motion, tmp_path: Path) -> None:
    a = pixels(plots.plot_trajectories(walk), tmp_path / "a.png")
    b = pixels(plots.plot_trajectories(run), tmp_path / "b.png")
    assert a.shape == b.shape and a.shape[2] == 3
    assert 0.01 < ink(a) < 0.5 and 0.01 < ink(b) < 0.5  # drawn, but not a filled block
    # the same axes and labels, different curves: a clear share of the pixels changes
    assert float((np.abs(a.astype(int) - b.astype(int)).max(axis=-1) > 30).mean()) > 0.005


def test_flexion_angle_is_the_angle_between_bones(walk: Motion) -> None:
    fig = plots.plot_angles(walk, ["left_knee", "left_elbow"])
    pos = walk.positions(end_sites=True).numpy()
    names = walk.skeleton.names
    hip, knee, ankle = (names.index(n) for n in ("left_hip", "left_knee", "left_ankle"))
    thigh, shank = pos[:, knee] - pos[:, hip], pos[:, ankle] - pos[:, knee]
    cos = np.sum(thigh * shank, -1) / np.linalg.norm(thigh, axis=-1) / np.linalg.norm(shank, axis=-1)
    by_hand = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    drawn = fig.axes[0].lines[0].get_ydata()
    np.testing.assert_allclose(drawn, by_hand, atol=1e-6)
    assert by_hand.max() > 40  # a walking knee bends in swing
    # the elbow's child bone is its End Site (the wrist): the curve exists and stays in [0, 180]
    elbow = fig.axes[1].lines[0].get_ydata()
    assert np.isfinite(elbow).all() and 0 <= elbow.min() and elbow.max() <= 180


def test_rotation_angles_cover_the_root(walk: Motion) -> None:
    from scipy.spatial.transform import Rotation

    fig = plots.plot_angles(walk, ["root", "left_knee"], angle="rotation")
    values = fig.axes[0].lines[0].get_ydata()
    assert values.shape == (walk.num_frames,) and np.all((values >= 0) & (values <= 180))
    # the local rotation's angle in degrees, as scipy measures it (quaternions are w first)
    for row, joint in enumerate((0, walk.skeleton.index("left_knee"))):
        by_scipy = np.degrees(Rotation.from_quat(walk.rotations[:, joint].numpy(), scalar_first=True).magnitude())
        np.testing.assert_allclose(fig.axes[row].lines[0].get_ydata(), by_scipy, atol=1e-6)
    assert by_scipy.max() > 30  # a walking knee bends: degrees, not radians
    with pytest.raises(SkeletonError, match="no parent bone"):
        plots.plot_angles(walk, ["root"])  # flexion needs a bone on both sides


def test_unknown_joints_are_all_named_with_the_available_ones(walk: Motion) -> None:
    with pytest.raises(SkeletonError) as info:
        plots.plot_trajectories(walk, ["root", "LeftFoot", "Tail"])
    message = str(info.value)
    assert "'LeftFoot'" in message and "'Tail'" in message
    assert "available:" in message and "left_ankle" in message
    assert "\n" not in message


def test_empty_motion_is_a_clear_error(walk: Motion) -> None:
    empty = walk[0:0]
    for kind in plots.KINDS:
        with pytest.raises(ShapeError, match="no frames"):
            plots.plot_motions(empty, kind)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="no motions"):
        plots.plot_trajectories([])


def test_contact_bars_match_the_contact_labels(walk: Motion) -> None:
    from skelanim.ops.contacts import find_feet, foot_contacts

    fig = plots.plot_contacts(walk)
    ax = fig.axes[0]
    feet = find_feet(walk.skeleton)
    labels = np.asarray(foot_contacts(walk, joints=feet))
    assert [t.get_text() for t in ax.get_yticklabels()] == [walk.skeleton.names[j] for j in feet]
    bars = [c for c in ax.collections if len(c.get_paths())]
    assert len(bars) == len(feet)
    for k, bar in enumerate(bars):
        # total bar length in seconds equals the number of contact frames / fps
        widths = [p.vertices[:, 0].max() - p.vertices[:, 0].min() for p in bar.get_paths()]
        assert sum(widths) == pytest.approx(labels[:, k].sum() / walk.fps)
    # and each bar starts and ends where a run of contact frames does (frame s to past-last e: s / fps to e / fps)
    expected = [[(s / walk.fps, e / walk.fps) for s, e in flag_runs(labels[:, k])] for k in range(len(feet))]
    assert all(expected)
    for got, want in zip(bar_spans(fig.axes[0]), expected):
        np.testing.assert_allclose(got, want, atol=1e-9)
    # the title names the rule: planted joints, not gait's looser stance (a walk showed no double support)
    assert "planted: low and under 0.25 heights/s; gait's stance allows 1" in ax.get_title()


def test_an_upside_down_sources_contacts_are_those_of_the_upright_one(walk: Motion) -> None:
    """An audit: a copy turned head down (up -Y) had no contact bar at all: the plot passed the unsigned up axis,
    so the feet were looked for at the top of the figure (``ops.foot_contacts`` itself, with the signed one, agreed
    with the upright copy)."""
    import torch

    from skelanim.ops import rotate

    down = rotate(walk, torch.tensor([0.0, 0.0, 0.0, 1.0], dtype=torch.float64))  # a half turn about Z
    assert down.up_direction() == (1, -1.0)
    upright = bar_spans(plots.plot_contacts(walk).axes[0])
    assert len(upright) == 2 and all(upright)  # both feet plant
    turned = bar_spans(plots.plot_contacts(down).axes[0])
    assert [len(row) for row in turned] == [len(row) for row in upright]
    flat = lambda rows: np.array([span for row in rows for span in row])
    np.testing.assert_allclose(flat(turned), flat(upright), atol=1e-9)


def test_contacts_of_named_joints(walk: Motion) -> None:
    """``joints`` picks the rows (a skeleton whose feet are not found by name can be plotted), in every motion; an
    unknown name is a SkeletonError naming the motion; with precomputed contacts they name the columns."""
    from skelanim.ops.contacts import foot_contacts

    ax = plots.plot_contacts(walk, ["right_ankle"]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["right_ankle"]
    labels = np.asarray(foot_contacts(walk, joints=["right_ankle"]))
    widths = [p.vertices[:, 0].max() - p.vertices[:, 0].min() for c in ax.collections for p in c.get_paths()]
    assert labels.any() and sum(widths) == pytest.approx(labels.sum() / walk.fps)
    spans = [(s / walk.fps, e / walk.fps) for s, e in flag_runs(labels[:, 0])]
    np.testing.assert_allclose(bar_spans(ax.figure.axes[0])[0], spans, atol=1e-9)
    with pytest.raises(SkeletonError, match="unknown joint 'nope'") as err:
        bare = walk.copy(metadata={})  # no file: the label names it
        plots.plot_contacts([bare, bare], ["nope"], labels=["a", "b"])
    assert err.value.where == "a"
    read = walk.copy(metadata={**walk.metadata, "path": "/data/folder/walk.bvh"})  # a file's: its path, not its stem
    for kind in ("contacts", "angles", "trajectories"):
        with pytest.raises(SkeletonError, match="unknown joint 'nope'") as err:
            plots.plot_motions([read, walk], kind, ["nope"])
        assert err.value.path == "/data/folder/walk.bvh", kind
    given = [np.zeros((walk.num_frames, 2), dtype=bool)]
    ax = plots.plot_contacts(walk, ["left_ankle", "right_ankle"], contacts=given).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["left_ankle", "right_ankle"]
    with pytest.raises(ShapeError, match="1 joints name the rows of 2 contact columns"):
        plots.plot_contacts(walk, ["left_ankle"], contacts=given)
    assert plots.plot_motions(walk, "contacts", ["left_ankle"]).axes[0].get_yticklabels()[0].get_text() == "left_ankle"


def test_pose_strip_draws_every_bone_of_every_pose(walk: Motion, run: Motion, tmp_path: Path) -> None:
    fig = plots.plot_poses([walk, run], count=5, labels=["walk", "run"])
    for ax in fig.axes:
        strips = [c for c in ax.collections if isinstance(c, LineCollection)]
        assert len(strips) == 5
        # 12 bones + 2 End Sites (wrists) in the DeepMimic humanoid
        assert all(len(c.get_segments()) == walk.skeleton.num_joints - 1 + len(walk.skeleton.end_sites) for c in strips)
    image = pixels(fig, tmp_path / "poses.png")
    assert ink(image) > 0.005
    # colour per motion: the top half (walk) is blue-ish, the bottom (run) red-ish
    half = image.shape[0] // 2
    top, bottom = image[:half].reshape(-1, 3).astype(int), image[half:].reshape(-1, 3).astype(int)
    assert ((top[:, 2] - top[:, 0]) > 60).sum() > 100
    assert ((bottom[:, 0] - bottom[:, 2]) > 60).sum() > 100


def test_each_pose_of_a_long_stride_stays_in_its_slot_and_in_view(mocap_dir: Path) -> None:
    """An export audit: slots of 0.8 heights cut the Xia angry walk's back foot at the panel's edge (frame 0 reached
    -0.45 heights, the x limits +-0.4) and frame 20 reached into its neighbour's slot. Every pose's bones now lie
    inside the axes and apart from the next pose's."""
    if not (mocap_dir / "xia_style").is_dir() or not (mocap_dir / "bandai_namco_1").is_dir():
        missing_data("no xia_style or bandai_namco_1 folder")
    angry = skelanim.load(mocap_dir / "xia_style" / "angry_13_000.bvh")
    ax = plots.plot_poses(angry, count=8).axes[0]
    low, high = ax.get_xlim()
    spans = [(float(np.min(np.asarray(c.get_segments())[..., 0])), float(np.max(np.asarray(c.get_segments())[..., 0])))
             for c in ax.collections if isinstance(c, LineCollection)]  # fmt: skip
    assert len(spans) == 8 and low < spans[0][0] and spans[-1][1] < high
    assert all(left[1] < right[0] for left, right in itertools.pairwise(spans))
    # a newcomer's walk through the docs: Bandai's static joint_Root, metres from the travelling body, had widened
    # every slot to the whole walk (an 8 m strip of tiny figures); it is not drawn, so it does not count
    walk = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")
    low, high = plots.plot_poses(walk, count=8).axes[0].get_xlim()
    assert high - low < 8 * 1.2 * walk.height


def test_save_figure_is_atomic_and_checks_the_suffix(walk: Motion, tmp_path: Path) -> None:
    fig = plots.plot_trajectories(walk)
    with pytest.raises(UnsupportedFormatError, match="'xyz'"):
        plots.save_figure(fig, tmp_path / "plot.xyz")
    assert os.listdir(tmp_path) == []  # nothing half-written, no temporary left behind
    out = tmp_path / "sub" / "plot.png"
    out.parent.mkdir()
    out.write_bytes(b"old")
    plots.save_figure(fig, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert os.listdir(out.parent) == ["plot.png"]


def test_real_skeletons_compare_in_one_figure(mocap_dir: Path, tmp_path: Path) -> None:
    """Bandai-Namco (22 joints, rest pose not upright, static root) next to CMU (31 joints): the default
    rows are found by role in each, and the pose strips stand upright."""
    files = [mocap_dir / "bandai_namco_1/dataset-1_walk_normal_001.bvh", mocap_dir / "cmu_cgspeed_max/131_01.bvh"]
    for f in files:
        if not f.exists():
            missing_data(f"{f} not present")
    motions = [skelanim.load(f) for f in files]
    fig = plots.plot_angles(motions)
    assert [ax.get_ylabel().split("\n")[0] for ax in fig.axes] == ["left knee", "right knee", "left elbow", "right elbow"]
    knee = fig.axes[0].lines[0].get_ydata()
    assert 45 < knee.max() < 100 and knee.min() < 25  # a walking knee: nearly straight in stance, bent in swing
    fig = plots.plot_poses(motions, count=4)
    for ax in fig.axes:
        for strip in ax.collections:
            seg = np.asarray(strip.get_segments())
            # upright: the figure spans most of the body height vertically (the y limit is 1.15 heights);
            # Bandai's rest pose lies along X, so a rest-pose up axis would give a flat figure here
            assert np.ptp(seg[..., 1]) > 0.7 * ax.get_ylim()[1] / 1.15
    assert ink(pixels(fig, tmp_path / "real.png")) > 0.005


def test_gait_report_figure(looped_walk, tmp_path: Path) -> None:
    from skelanim.metrics.gait import gait_analysis

    report = gait_analysis(looped_walk(4))
    fig = plots.plot_gait_report(report, label="walk x4")
    knee_ax, hip_ax, contact_ax, text_ax = fig.axes
    mean, _ = report.curve("knee_flexion")
    np.testing.assert_allclose(knee_ax.lines[0].get_ydata(), mean)  # the pooled mean, then left and right
    assert len(knee_ax.lines) == 3 and len(hip_ax.lines) == 3 and knee_ax.collections  # the sd band
    # heel strike ticks at the strikes of each foot
    ticks = [line for line in contact_ax.lines if line.get_marker() == "|"]
    np.testing.assert_allclose(ticks[0].get_xdata(), report.heel_strikes["left"] / report.fps)
    assert f"{report.cadence:.1f} steps/min" in text_ax.texts[0].get_text()
    assert ink(pixels(fig, tmp_path / "gait.png")) > 0.01


def test_default_root_is_the_body_root_under_a_static_dummy(mocap_files) -> None:
    """Bandai's joint 0 (``joint_Root``) is a static dummy: the default root row plots the hips (joint 1)."""
    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    motion = skelanim.load(path)
    pos = motion.positions().numpy()
    assert motion.skeleton.names[:2] == ["joint_Root", "Hips"] and np.ptp(pos[:, 0], axis=0).max() == 0.0
    fig = plots.plot_trajectories(motion)
    assert [ax.get_title() for ax in fig.axes[:3]] == ["root: X", "root: Y (up)", "root: Z"]
    for a in range(3):
        np.testing.assert_allclose(fig.axes[a].lines[0].get_ydata(), pos[:, 1, a])
    assert max(np.ptp(fig.axes[a].lines[0].get_ydata()) for a in range(3)) > 50  # the walk moves (cm): not flat
    # a skeleton whose joint 0 is its hips keeps joint 0
    walk = skelanim.load(sample_path("walk"))
    fig = plots.plot_trajectories(walk)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), walk.positions().numpy()[:, 0, 0])


def test_save_figure_refuses_a_bad_dpi(walk: Motion, tmp_path: Path) -> None:
    fig = plots.plot_trajectories(walk)
    for dpi in (0, -3, 9):  # below 10 matplotlib's fonts fail to render (FreeType: invalid ppem)
        with pytest.raises(ShapeError, match="dpi must be a number of at least 10"):
            plots.save_figure(fig, tmp_path / "x.png", dpi=dpi)
    assert os.listdir(tmp_path) == []


def test_an_upside_down_source_is_drawn_upright(walk: Motion) -> None:
    """A copy turned head down along -Y: the pose strip and the video's figure have their heads up again (they
    were drawn upside down, the floor line at the head), with the same pose as the original."""
    import torch

    from skelanim.core.rotations import matrix_to_quat, quat_multiply
    from skelanim.core.units import up_to_y_matrix
    from skelanim.viz._draw import skeleton_figure

    turn = up_to_y_matrix(1, -1.0).T  # a half turn about X: +Y to -Y
    q = matrix_to_quat(turn).to(walk.rotations.dtype)
    sk = walk.skeleton
    flipped_sk = type(sk)(sk.names, sk.parents, sk.offsets @ turn.T.to(sk.offsets.dtype), sk.channels,
                          {k: turn.to(v.dtype) @ v for k, v in sk.end_sites.items()})  # fmt: skip
    rot = quat_multiply(quat_multiply(q, walk.rotations), q * torch.tensor([1.0, -1, -1, -1], dtype=q.dtype))
    flipped = Motion(flipped_sk, rot, walk.root_positions @ turn.T.to(walk.root_positions.dtype), walk.fps)
    assert flipped.up_direction() == (1, -1.0)
    original, drawn = skeleton_figure(walk), skeleton_figure(flipped)
    heads = [j for j, n in enumerate(sk.names) if "neck" in n.lower() or "head" in n.lower()]
    assert (drawn.positions[:, heads, 1] - drawn.floor).min() > 0.5 * drawn.height
    heights = lambda f: f.positions[..., f.up] - f.floor
    np.testing.assert_allclose(heights(drawn), heights(original), atol=1e-6 * original.height)
    # the pose itself, all three coordinates: turned back by a half turn (a flip of the up axis alone is a mirror
    # image, its left limbs on the right), so the drawn copy is the original
    np.testing.assert_allclose(drawn.positions, original.positions, atol=1e-6 * original.height)
    np.testing.assert_allclose(drawn.centre, original.centre, atol=1e-6 * original.height)


def test_the_rig_elbow_is_read_past_its_twist_bones_and_its_floor_carrier_is_not_drawn(mocap_dir) -> None:
    """The production rig's forearm has a twist bone 2e-4 cm from it: the elbow angle is taken to the next real
    bone, which agrees with the angle between upper arm and forearm to the hand; its RL_BoneRoot on the floor
    carries the body and is no bone to draw."""
    from skelanim.io import load
    from skelanim.viz._draw import joint_flexion, skeleton_figure

    motion = load(mocap_dir / "cmu_iclone_ccrig/002_01.bvh")[::10]
    sk = motion.skeleton
    arm, elbow, hand = (sk.index(f"CC_Base_R_{n}") for n in ("Upperarm", "Forearm", "Hand"))
    pos = motion.positions().numpy()
    a, b = pos[:, elbow] - pos[:, arm], pos[:, hand] - pos[:, elbow]
    cos = (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))
    by_hand = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    flexion = joint_flexion(motion, [elbow])[:, 0]
    assert np.median(np.abs(flexion - by_hand)) < 3.0 and np.ptp(flexion) > 20  # it moves, as the arm does
    figure = skeleton_figure(motion)
    assert sk.index("RL_BoneRoot") not in figure.bones[:, 0]
