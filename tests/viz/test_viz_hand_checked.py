"""skelanim.viz checked against values worked out by hand or by another library (a mutation audit found behaviour
that no test noticed): colours, time axes and labels at other frame rates, the joints an angle is taken between,
what a saved file holds read back with Pillow, the bounds the viewer documents."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from contact_bars import bar_spans, flag_runs  # tests/helpers
from matplotlib.collections import LineCollection
from PIL import Image

import skelanim
from skelanim.core.motion import Motion
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError, SkeletonError
from skelanim.viz import charts, plots, video, viewer
from skelanim.viz._draw import resolve_joints, shade, skeleton_figure, unit_color

BLUE, RED = (31, 119, 180), (214, 39, 40)  # the first two colours of matplotlib's tab10
# shade by hand: c + (255 - c) * a towards white, c * (1 - a) towards black, rounded
BLUE_LIGHT_40, BLUE_DARK_30 = (121, 173, 210), (22, 83, 126)  # 31 + 224 * 0.4 = 120.6, 31 * 0.7 = 21.7, ...
BLUE_LIGHT_45 = (132, 180, 214)  # 31 + 224 * 0.45 = 131.8, 119 + 136 * 0.45 = 180.2, 180 + 75 * 0.45 = 213.75


@pytest.fixture(scope="module")
def walk() -> Motion:
    """The bundled DeepMimic walk: 39 frames at 30 fps, Y up, metres."""
    return skelanim.load(sample_path("walk"))


# =========================================================================================== _draw
def test_shade_makes_lighter_and_darker_by_hand() -> None:
    assert shade(BLUE, 0.4) == BLUE_LIGHT_40
    assert shade(BLUE, -0.3) == BLUE_DARK_30
    assert shade(RED, 0.4) == (230, 125, 126) and shade(RED, -0.3) == (150, 27, 28)
    assert unit_color(0, 0.45) == pytest.approx(tuple(c / 255 for c in BLUE_LIGHT_45))


def test_a_joint_index_one_past_the_last_is_an_unknown_joint(walk: Motion) -> None:
    j = walk.skeleton.num_joints
    with pytest.raises(SkeletonError, match=f"unknown joint '{j}'"):
        resolve_joints(walk.skeleton, [j])
    with pytest.raises(SkeletonError, match=f"unknown joint '{j}'"):
        plots.plot_trajectories(walk, [j])
    assert resolve_joints(walk.skeleton, [j - 1, 0]) == [j - 1, 0]


def test_the_body_centre_is_the_mean_of_the_joints_but_the_root(walk: Motion) -> None:
    pos = walk.positions().numpy()
    np.testing.assert_allclose(skeleton_figure(walk).centre, pos[:, 1:].mean(axis=1), atol=1e-12)


def test_a_metadata_name_is_the_legend(walk: Motion) -> None:
    named = walk.copy(metadata={**walk.metadata, "name": "my take"})
    assert plots.plot_trajectories(named).axes[0].get_legend_handles_labels()[1] == ["my take"]
    assert plots.plot_angles(named).axes[0].get_legend_handles_labels()[1] == ["my take"]


def test_flexion_at_a_joint_of_several_children_follows_the_first(mocap_files) -> None:
    """CMU's Spine1 has three children at its own place (Neck, LeftShoulder, RightShoulder): the bone leaving it is
    the first child's line, Neck to Neck1 (Neck1 the first joint past Spine1), not a shoulder's."""
    from skelanim.viz._draw import joint_flexion

    (path,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    motion = skelanim.load(path)[:3]
    sk = motion.skeleton
    spine, spine1, neck, neck1 = (sk.index(n) for n in ("Spine", "Spine1", "Neck", "Neck1"))
    assert [sk.names[c] for c in sk.children(spine1)] == ["Neck", "LeftShoulder", "RightShoulder"]
    pos = motion.positions().numpy()
    np.testing.assert_allclose(pos[:, neck], pos[:, spine1], atol=1e-9)  # Neck sits on Spine1
    a, b = pos[:, spine1] - pos[:, spine], pos[:, neck1] - pos[:, spine1]
    by_hand = np.degrees(np.arccos((a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)))
    flexion = joint_flexion(motion, [spine1])[:, 0]
    np.testing.assert_allclose(flexion, by_hand, atol=1e-6)
    assert flexion[0] == pytest.approx(7.6, abs=0.1)  # a straight back: a few degrees, not a shoulder's ~90


# =========================================================================================== plots
def test_pose_labels_and_angle_times_follow_the_clips_rate(walk: Motion) -> None:
    fast = walk.copy(fps=60.0)  # 39 frames: the 3 poses are frames 0, 19 and 38
    texts = [t.get_text() for t in plots.plot_poses(fast, count=3).axes[0].texts]
    assert texts == ["0.00 s", "0.32 s", "0.63 s"]  # 19 / 60 = 0.317, 38 / 60 = 0.633
    x = plots.plot_angles(fast, ["left_knee"]).axes[0].lines[0].get_xdata()
    np.testing.assert_allclose(x, np.arange(39) / 60.0)
    assert x[-1] == pytest.approx(0.6333, abs=1e-4)


def test_pose_strip_colours_left_lighter_and_right_darker(walk: Motion) -> None:
    ax = plots.plot_poses(walk, count=1).axes[0]
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines) == 1
    colours = lines[0].get_colors()[:, :3]
    sides = skeleton_figure(walk).sides
    assert len(colours) == len(sides) and {1, -1} <= set(sides.tolist())
    expected = {1: tuple(c / 255 for c in BLUE_LIGHT_45), -1: tuple(round(c * 0.7) / 255 for c in BLUE),
                0: tuple(c / 255 for c in BLUE)}  # fmt: skip
    for rgb, side in zip(colours, sides):
        np.testing.assert_allclose(rgb, expected[int(side)], atol=1e-6)
    assert expected[-1] == pytest.approx(tuple(c / 255 for c in BLUE_DARK_30))


def test_poses_by_default_draw_eight(walk: Motion) -> None:
    ax = plots.plot_motions(walk, "poses").axes[0]
    assert len([c for c in ax.collections if isinstance(c, LineCollection)]) == 8
    # frames 0, 5.43, ..., 38 rounded: the labels are their times
    frames = [round(k * 38 / 7) for k in range(8)]
    assert [t.get_text() for t in ax.texts] == [f"{f / walk.fps:.2f} s" for f in frames]


def test_save_figure_writes_the_asked_dpi(walk: Motion, tmp_path: Path) -> None:
    fig = plots.plot_trajectories(walk)
    width, height = fig.get_size_inches()
    for dpi in (50, 120):
        path = plots.save_figure(fig, tmp_path / f"d{dpi}.png", dpi=dpi)
        with Image.open(path) as image:
            assert image.size == (round(width * dpi), round(height * dpi))


def test_a_raised_clip_stands_on_the_floor_line(walk: Motion) -> None:
    raised = walk.copy(
        root_positions=walk.root_positions + torch.tensor([0.0, 2.0, 0.0], dtype=walk.root_positions.dtype)
    )

    def segments(m: Motion) -> np.ndarray:
        ax = plots.plot_poses(m, count=4).axes[0]
        return np.concatenate([np.asarray(c.get_segments()) for c in ax.collections if isinstance(c, LineCollection)])

    lifted, original = segments(raised), segments(walk)
    np.testing.assert_allclose(lifted, original, atol=1e-9)
    feet = walk.positions().numpy()[..., 1].min()  # the lowest point of the clip: the floor line at 0
    assert lifted[..., 1].min() >= -1e-9 and lifted[..., 1].min() < 0.05 * walk.height
    assert feet < 0.1  # the original is on the floor too (a raised copy drawn 2 m up would fail the first check)


def test_contact_bars_start_and_end_where_the_contacts_do(walk: Motion) -> None:
    from skelanim.ops.contacts import find_feet, foot_contacts

    feet = find_feet(walk.skeleton)
    labels = np.asarray(foot_contacts(walk, joints=feet))
    drawn = bar_spans(plots.plot_contacts(walk).axes[0])
    expected = [[(s / walk.fps, e / walk.fps) for s, e in flag_runs(labels[:, k])] for k in range(len(feet))]
    assert all(expected) and [len(r) for r in drawn] == [len(r) for r in expected]
    for got, want in zip(drawn, expected):
        np.testing.assert_allclose(got, want, atol=1e-9)


@pytest.fixture(scope="module")
def gait(mocap_files):
    from skelanim.metrics.gait import gait_analysis

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    report = gait_analysis(skelanim.load(path))
    return report, plots.plot_gait_report(report)


def test_gait_report_says_stance_then_swing(gait) -> None:
    report, fig = gait
    stance = report.stance_fraction
    assert 0.55 < stance < 0.75  # a walk: stance is the longer part (not 1/2, so the order shows)
    line = [t for t in fig.axes[3].texts[0].get_text().splitlines() if t.startswith("stance / swing")]
    assert line == [f"stance / swing: {round(100 * stance)}% / {round(100 * (1 - stance))}%"]


def test_gait_report_heel_strikes_sit_on_their_foots_row(gait) -> None:
    report, fig = gait
    ax = fig.axes[2]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["left", "right"]
    ticks = [line for line in ax.lines if line.get_marker() == "|"]
    assert len(ticks) == 2
    for row, (line, side) in enumerate(zip(ticks, ("left", "right"))):
        assert len(report.heel_strikes[side]) >= 2
        np.testing.assert_allclose(line.get_xdata(), np.asarray(report.heel_strikes[side]) / report.fps)
        assert set(np.asarray(line.get_ydata()).tolist()) == {row}


# =========================================================================================== charts
def test_horizon_errors_plot_global_mpjpe_in_percent() -> None:
    fig = charts.plot_horizon_errors({"horizons_ms": [80], "methods": {"x": {"mpjpe": [0.01], "mpjpe_global": [0.02]}}})
    glob = fig.axes[1]
    assert glob.get_ylabel() == "MPJPE with root motion (% of height)"
    np.testing.assert_allclose(glob.get_lines()[0].get_ydata(), [2.0])


def test_training_curves_colour_validation_apart_and_label_every_bottom_panel() -> None:
    history = [{"epoch": e, "train_loss": 1.0 / e, "val_error": 0.1 * e} for e in (1, 2)]
    fig = charts.plot_training_history(history)
    train, val = fig.axes[:2]
    assert train.get_lines()[0].get_color() == pytest.approx(tuple(c / 255 for c in BLUE))
    assert val.get_lines()[0].get_color() == pytest.approx(tuple(c / 255 for c in RED))
    assert [a.get_xlabel() for a in fig.axes[:2]] == ["epoch", "epoch"]  # one row of two: both are the bottom row
    # a 2 x 4 grid of 6 panels: the bottom panel of each column is labelled (4, 5 and the top row's 2, 3)
    wide = [{"epoch": 1, **{f"train_{k}": 1.0 for k in "abcdef"}}]
    labels = [a.get_xlabel() for a in charts.plot_training_history(wide).axes[:6]]
    assert labels == ["", "", "epoch", "epoch", "epoch", "epoch"]


def test_confusion_counts_are_white_on_dark_cells() -> None:
    # row a: 3 of 3 right (share 1, dark); row b: 1 of 2 right (shares 0.5, light)
    fig = charts.plot_confusion({"f": (["a", "a", "a", "b", "b"], ["a", "a", "a", "b", "a"])})
    colours = {(t.get_position(), t.get_text()): t.get_color() for t in fig.axes[0].texts}
    assert colours == {((0, 0), "3"): "white", ((0, 1), "1"): "black", ((1, 1), "1"): "black"}


# =========================================================================================== video
def test_side_shades_make_left_lighter_and_right_darker() -> None:
    assert video.SIDE_SHADES == {1: 0.4, 0: 0.0, -1: -0.3}  # +1 is left (Figure3D.sides)
    assert shade(video.PALETTE[0], video.SIDE_SHADES[1]) == BLUE_LIGHT_40
    assert shade(video.PALETTE[0], video.SIDE_SHADES[-1]) == BLUE_DARK_30
    colours = video.drawn_colours()
    assert BLUE_LIGHT_40 in colours and BLUE_DARK_30 in colours


def test_labels_name_the_source_frame_and_the_clock_the_output_time(walk: Motion, monkeypatch) -> None:
    """A 60 fps clip at 24 fps: output frame 10 is at 10 / 24 = 0.417 s, which is source frame 25."""
    said: list[str] = []
    fit = video.fit_text
    monkeypatch.setattr(video, "fit_text", lambda text, font, width: (said.append(text), fit(text, font, width))[1])
    frames = video.render_frames(walk.copy(fps=60.0), fps=24, size=(96, 64), labels=["walk"])
    for _ in range(11):
        next(frames)
    assert said[20:22] == ["frame 25  walk", "t = 0.417 s"]


def test_a_gif_loops_forever(walk: Motion, tmp_path: Path) -> None:
    path = video.render_video(walk[:3], tmp_path / "a.gif", fps=10, size=(32, 24))
    with Image.open(path) as image:
        assert image.info["loop"] == 0


def test_gif_durations_above_100_fps_are_never_zero() -> None:
    durations = video.gif_durations(10, 200.0)
    assert min(durations) >= 10 and all(d % 10 == 0 for d in durations)


def test_the_size_limit_is_7680_by_4320() -> None:
    assert video.parse_size("7680x4320") == (7680, 4320) and video.parse_size("16x16") == (16, 16)
    for text in ("640x5000", "640x4321", "7681x480", "15x480", "640x15"):
        with pytest.raises(ShapeError, match="between 16x16 and 7680x4320"):
            video.parse_size(text)


def test_an_odd_mp4_height_is_refused_before_rendering(walk: Motion, tmp_path: Path, monkeypatch) -> None:
    def no_drawing(*args, **kwargs):
        raise AssertionError("rendered before the size was checked")

    monkeypatch.setattr(video, "render_frames", no_drawing)
    for size in ((160, 121), (161, 120)):
        with pytest.raises(ShapeError, match="even width and height"):
            video.check_video_path(tmp_path / "a.mp4", size=size)
        with pytest.raises(ShapeError, match=f"got {size[0]}x{size[1]}"):
            video.render_video(walk, tmp_path / "a.mp4", size=size)
    assert list(tmp_path.iterdir()) == []


def test_the_camera_looks_from_the_side_30_degrees_towards_the_front(walk: Motion) -> None:
    fig = skeleton_figure(walk)
    count = video.frame_count([walk], 30.0)
    panel = video._Panel([(0, fig, video.frame_indices(walk, 30.0, count), "walk")], 30.0, count)
    travel = walk.positions().numpy()[-1, 0] - walk.positions().numpy()[0, 0]
    travel[1] = 0.0
    travel /= np.linalg.norm(travel)
    # view_dir points from the body to the eye: in front by sin 30, beside it by cos 30, level
    assert float(panel.view_dir @ travel) == pytest.approx(0.5, abs=0.03)
    assert panel.view_dir[1] == pytest.approx(0.0, abs=1e-12)
    assert np.linalg.norm(panel.view_dir) == pytest.approx(1.0)


def test_an_overlay_says_a_y_down_file_was_minus_y_up(walk: Motion) -> None:
    down = skelanim.ops.rotate(walk, torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64))  # half turn about X
    assert down.up_direction() == (1, -1.0)
    assert video.overlay_frame([walk, down])[1] == ["m, +Y up", "m, -Y up"]


# =========================================================================================== viewer
def decode(payload: dict) -> np.ndarray:
    q = np.frombuffer(base64.b64decode(payload["positions"]), dtype="<u2").astype(np.float64).reshape(-1, 3)
    return (np.asarray(payload["lo"]) + q * np.asarray(payload["step"])).reshape(payload["frames"], -1, 3)


def test_quantisation_error_is_within_the_documented_bound(walk: Motion) -> None:
    pos, _, _ = viewer.viewer_positions(walk)
    flat = pos.reshape(-1, 3)
    extent = flat.max(axis=0) - flat.min(axis=0)
    error = np.abs(decode(viewer.motion_payload(walk, name="w")) - pos).reshape(-1, 3).max(axis=0)
    assert (error <= extent / 131070 * (1 + 1e-9) + 1e-15).all(), error / (extent / 131070)
    # and the extremes decode exactly to the box (a step of extent / 65536 had clipped the top by a whole step)
    np.testing.assert_allclose(
        decode(viewer.motion_payload(walk, name="w")).reshape(-1, 3).max(0), flat.max(0), atol=1e-12
    )


def test_a_page_of_exactly_max_samples_is_accepted(walk: Motion) -> None:
    n = walk.num_frames * (walk.skeleton.num_joints + len(walk.skeleton.end_sites))
    viewer.build_viewer_html(walk, max_samples=n)
    with pytest.raises(viewer.ViewerError, match="too large"):
        viewer.build_viewer_html(walk, max_samples=n - 1)


def test_the_height_is_the_tallest_frames_not_frame_0s(walk: Motion) -> None:
    """A clip that starts lying down (its first frame turned 90 degrees about X), then walks."""
    lying = skelanim.ops.rotate(walk[:1], torch.tensor([0.7071068, 0.7071068, 0.0, 0.0], dtype=torch.float64))
    clip = Motion(walk.skeleton, torch.cat([lying.rotations, walk.rotations]),
                  torch.cat([lying.root_positions, walk.root_positions]), walk.fps)  # fmt: skip
    pos = walk.positions(end_sites=True).numpy()  # metres, Y up: the standing frames' vertical extent by numpy
    standing = float((pos[..., 1].max(axis=1) - pos[..., 1].min(axis=1)).max())
    height = viewer.motion_payload(clip, name="x")["height"]
    assert height == pytest.approx(standing, rel=1e-6)
    lying_pos = lying.positions(end_sites=True).numpy()[0]
    assert np.ptp(lying_pos[:, 1]) < 0.5 * standing  # frame 0 is not the tallest


def test_same_named_files_in_two_folders_get_distinct_labels(tmp_path: Path) -> None:
    paths = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        target = tmp_path / folder / "walk.txt"
        target.write_bytes(Path(sample_path("walk")).read_bytes())
        paths.append(target)
    motions, labels = viewer.load_for_viewer([*paths, Path(sample_path("run"))])
    assert labels == [str(paths[0]), str(paths[1]), Path(sample_path("run")).stem]
    assert len(motions) == 3


def too_large_hints(motions: list[Motion], max_samples: int) -> tuple[int, int]:
    with pytest.raises(viewer.ViewerError) as info:
        viewer.build_viewer_html(motions, max_samples=max_samples)
    found = re.search(r"--max-frames (\d+) or thin it with --stride (\d+)", str(info.value))
    assert found, str(info.value)
    return int(found[1]), int(found[2])


def samples(motions: list[Motion], *, max_frames: int | None = None, stride: int = 1) -> int:
    """Joint-frames of the motions cut as the viewer's options say, by hand: ``ceil(F / stride)`` frames, then at most
    ``max_frames``."""
    total = 0
    for m in motions:
        frames = -(-m.num_frames // stride)
        frames = frames if max_frames is None else min(frames, max_frames)
        total += frames * (m.skeleton.num_joints + len(m.skeleton.end_sites))
    return total


@pytest.mark.parametrize("limit", [1.5, 1.0, 0.55])
def test_the_hints_for_two_motions_over_the_limit_fit(walk: Motion, limit: float) -> None:
    """Two motions over the limit: the --max-frames suggested cuts both and is the most that fits (taking the other
    motion as whole, it had said 1 where 10 of each fit, 14 where 19 did), the --stride the least that fits."""
    run = skelanim.load(sample_path("run"))
    motions = [walk, run]
    max_samples = int(limit * samples([walk]))
    frames, stride = too_large_hints(motions, max_samples)
    assert samples(motions, max_frames=frames) <= max_samples < samples(motions, max_frames=frames + 1)
    assert samples(motions, stride=stride) <= max_samples < samples(motions, stride=max(stride - 1, 1))
    viewer.build_viewer_html(motions, max_samples=max_samples, max_frames=frames)
    viewer.build_viewer_html(motions, max_samples=max_samples, stride=stride)


def test_the_stride_hint_counts_the_frames_a_stride_keeps() -> None:
    """201 frames x 13 points with a limit of 1307: a stride of 2 keeps 101 frames (1313 joint-frames, too many),
    not 100.5; the hint is 3 (67 frames, 871)."""

    def still(frames: int) -> Motion:
        from skelanim.core.skeleton import Skeleton

        skeleton = Skeleton([f"j{k}" for k in range(13)], np.array([-1] + list(range(12))), torch.ones(13, 3))
        return Motion.rest(skeleton, frames, fps=30.0)

    motion = still(201)
    frames, stride = too_large_hints([motion], 1307)
    assert (frames, stride) == (100, 3)  # 1307 // 13 = 100
    viewer.build_viewer_html([motion], max_samples=1307, stride=stride)
    viewer.build_viewer_html([motion], max_samples=1307, max_frames=frames)
