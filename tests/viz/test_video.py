"""Videos of skelanim.viz.video: frame timing, panels, the following camera, the up axis, files read back."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_multiply, rotvec_to_quat
from skelanim.core.skeleton import Skeleton
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError, UnsupportedFormatError
from skelanim.viz import video
from skelanim.viz._draw import PALETTE

SIZE = (160, 120)


@pytest.fixture(scope="module")
def walk() -> Motion:
    return skelanim.load(sample_path("walk"))


@pytest.fixture(scope="module")
def long_walk(looped_walk) -> Motion:
    """The walk looped 4 times (its last frame is the next loop's first, shifted forward)."""
    return looped_walk(4)


def coloured(frame: np.ndarray, rgb: tuple[int, int, int], tol: int = 40) -> np.ndarray:
    """``(H, W)`` mask of pixels near ``rgb`` (or its lighter/darker limb shades: same hue, so compare
    the channel differences)."""
    f = frame.astype(int)
    target = np.array(rgb)
    diff = (f - f.mean(-1, keepdims=True)) - (target - target.mean())
    return (np.abs(diff).max(-1) < tol) & (f.max(-1) - f.min(-1) > 40)


def test_frame_timeline_uses_the_nearest_frame() -> None:
    skeleton = Skeleton(["root"], np.array([-1]), torch.zeros(1, 3))
    m120 = Motion.rest(skeleton, 100, fps=120.0)  # 0.825 s
    m30 = Motion.rest(skeleton, 10, fps=30.0)  # 0.3 s
    assert video.frame_count([m120, m30], 30.0) == 25  # floor(0.825 * 30) + 1
    np.testing.assert_array_equal(video.frame_indices(m120, 30.0, 25), np.arange(25) * 4)
    # the shorter motion holds its last frame
    np.testing.assert_array_equal(video.frame_indices(m30, 30.0, 25)[8:], [8, 9] + [9] * 15)
    # 24 fps output of a 30 fps motion: k * 30 / 24 = 0, 1.25, 2.5, 3.75, 5, the half up (as the viewer rounds)
    np.testing.assert_array_equal(video.frame_indices(m30, 24.0, 5), [0, 1, 3, 4, 5])


def test_frames_have_the_size_and_count_and_move(walk: Motion) -> None:
    frames = list(video.render_frames(walk, fps=15, size=SIZE))
    # every other frame of the 30 fps clip (frame time 0.033332 s in the file), the last one included
    assert len(frames) == video.frame_count([walk], 15) == (walk.num_frames - 1) // 2 + 1
    assert all(f.shape == (SIZE[1], SIZE[0], 3) and f.dtype == np.uint8 for f in frames)
    body = [coloured(f, PALETTE[0]) for f in frames]
    assert all(b.sum() > 50 for b in body)  # the skeleton is drawn in every frame
    assert (body[0] ^ body[len(body) // 2]).sum() > 50  # and it moves


def test_side_by_side_and_overlay(walk: Motion) -> None:
    other = walk.copy(root_positions=walk.root_positions.clone())
    side = next(iter(video.render_frames([walk, other], size=SIZE)))
    over = next(iter(video.render_frames([walk, other], size=SIZE, overlay=True)))
    half = SIZE[0] // 2
    blue, red = PALETTE[0], PALETTE[1]
    # side by side: the first motion left, the second right
    assert coloured(side[:, :half], blue).sum() > 30 and coloured(side[:, half:], blue).sum() < 5
    assert coloured(side[:, half:], red).sum() > 30 and coloured(side[:, :half], red)[20:].sum() < 5
    # overlay: the same pose twice at the same place; the later one (red) covers the first one's body
    body = coloured(over[20:], blue) | coloured(over[20:], red)
    assert coloured(over[20:], red).sum() > 0.8 * body.sum()
    assert abs(np.nonzero(body)[1].mean() - SIZE[0] / 2) < SIZE[0] / 4


def test_an_overlay_of_files_in_other_units_or_axes_draws_them_alike(walk: Motion) -> None:
    """The sample walk (metres) overlaid on a copy of it in centimetres, and on a Z-up copy: each is turned Y up
    and drawn in metres, so the second covers the first as its own copy does (a figure 100 times the other's size
    had filled the panel around a dot); files that share unit and axes are left as they are."""
    from skelanim import ops
    from skelanim.core.units import up_to_y_matrix

    same, was = video.overlay_frame([walk, walk.copy()])
    assert same[0] is walk and was == []
    z_up = ops.rotate(walk, up_to_y_matrix(2).T)
    assert z_up.up_direction() == (2, 1.0)
    centimetres = ops.scale(walk, 100.0)  # a giant in metres, as ops.scale keeps the unit; a file in cm says cm
    centimetres = centimetres.copy(metadata={**centimetres.metadata, "units": "cm"})
    for other, said in ((centimetres, "cm, +Y up"), (z_up, "m, +Z up")):
        drawn, was = video.overlay_frame([walk, other])
        assert was == ["m, +Y up", said]
        torch.testing.assert_close(drawn[1].positions(), drawn[0].positions(), atol=1e-6, rtol=0)
        over = next(iter(video.render_frames([walk, other], size=SIZE, overlay=True)))
        body = coloured(over[20:], PALETTE[0]) | coloured(over[20:], PALETTE[1])
        assert body.sum() > 30 and coloured(over[20:], PALETTE[1]).sum() > 0.8 * body.sum()


def test_camera_follows_the_walker(long_walk: Motion) -> None:
    """The walker covers ~5 m; the camera follows, so the figure stays near the middle of the image."""
    frames = list(video.render_frames(long_walk, fps=10, size=SIZE))
    travelled = float((long_walk.root_positions[-1] - long_walk.root_positions[0]).norm())
    assert travelled > 3 * long_walk.height
    for f in frames[:: max(1, len(frames) // 6)]:
        _, xs = np.nonzero(coloured(f, PALETTE[0]))
        assert len(xs) > 30
        assert abs(xs.mean() - SIZE[0] / 2) < 0.2 * SIZE[0]


def _rotate_to_z_up(m: Motion) -> Motion:
    """The same motion in a Z-up world: rotate every offset, local rotation and the root by +90 deg about X."""
    q = rotvec_to_quat(torch.tensor([np.pi / 2, 0.0, 0.0], dtype=torch.float64))
    r = q.new_tensor([q[0], -q[1], -q[2], -q[3]])
    rot = quat_multiply(quat_multiply(q.expand_as(m.rotations), m.rotations), r.expand_as(m.rotations))
    from skelanim.core.rotations import quat_apply

    sk = m.skeleton
    ends = {k: quat_apply(q, v) for k, v in sk.end_sites.items()}
    skeleton = Skeleton(sk.names, sk.parents, quat_apply(q.expand(sk.num_joints, 4), sk.offsets), end_sites=ends)
    root = quat_apply(q.expand(m.num_frames, 4), m.root_positions)
    return Motion(skeleton, rot, root, m.fps, metadata=dict(m.metadata))  # the same label (its file name)


def test_the_picture_does_not_depend_on_the_up_axis(walk: Motion) -> None:
    z_up = _rotate_to_z_up(walk)
    assert z_up.skeleton.up_axis() == 2 and walk.skeleton.up_axis() == 1
    np.testing.assert_allclose(z_up.positions().numpy()[..., 2], walk.positions().numpy()[..., 1], atol=1e-9)
    a = list(video.render_frames(walk, size=SIZE))
    b = list(video.render_frames(z_up, size=SIZE))
    assert len(a) == len(b)
    # camera placement is relative to the up axis and the travel direction: the same picture, up to the
    # rasterisation of grid lines now drawn end to start (the Z -> -Y flip), a pixel or so along them
    diff = np.abs(np.stack(a).astype(int) - np.stack(b).astype(int))
    assert diff.mean() < 2
    for fa, fb in zip(a[::5], b[::5]):
        body_a, body_b = coloured(fa, PALETTE[0]), coloured(fb, PALETTE[0])
        assert (body_a ^ body_b).sum() < 0.05 * (body_a | body_b).sum()
    # and it is upright, in both: the head is the top of the figure and the feet are its bottom. The trunk (the
    # DeepMimic humanoid's root-chest-neck, its head sitting on the neck) is drawn in the motion's own colour,
    # left limbs lighter and right limbs darker (the module docstring); so the trunk's top must be the figure's
    # top and the whole trunk lie in the upper half of the figure, the legs (and so the feet) below it.
    for frame in [*a[::5], *b[::5]]:
        body = coloured(frame, PALETTE[0])
        trunk = np.abs(frame.astype(int) - np.array(PALETTE[0])).max(-1) <= 10  # the unshaded colour exactly
        body[:20, :20] = trunk[:20, :20] = False  # so is the legend's swatch (rows 8-17, columns 6-15)
        rows, trunk_rows = np.nonzero(body)[0], np.nonzero(trunk)[0]
        top, bottom = rows.min(), rows.max()  # pixel rows grow downwards
        assert bottom - top > 0.25 * SIZE[1] and len(trunk_rows) > 20
        # observed on this walk: the trunk's top 0-4 rows below the figure's top, its bottom (the pelvis) at
        # 34-42 % of the way down; drawn upside down the trunk's top (then the pelvis) was 48-56 rows below the
        # figure's top (then the feet)
        assert trunk_rows.min() - top <= 0.1 * (bottom - top)
        assert trunk_rows.max() < top + 0.5 * (bottom - top)


def test_mp4_reads_back_with_the_frames_and_size(walk: Motion, tmp_path: Path) -> None:
    import imageio_ffmpeg

    out = tmp_path / "walk.mp4"
    video.render_video([walk, walk], out, fps=20, size=(320, 240))
    reader = imageio_ffmpeg.read_frames(str(out))
    meta = next(reader)
    frames = [np.frombuffer(f, np.uint8).reshape(240, 320, 3) for f in reader]
    assert tuple(meta["size"]) == (320, 240) and meta["fps"] == pytest.approx(20)
    assert len(frames) == video.frame_count([walk], 20)
    # H.264 is lossy: the decoded frame is close to the rendered one
    first = next(iter(video.render_frames([walk, walk], fps=20, size=(320, 240))))
    assert np.abs(frames[0].astype(int) - first.astype(int)).mean() < 4
    assert [p.name for p in tmp_path.iterdir()] == ["walk.mp4"]


def test_gif_reads_back_with_the_frames_and_size(walk: Motion, tmp_path: Path) -> None:
    import imageio.v3 as iio

    out = tmp_path / "walk.gif"
    video.render_video(walk, out, fps=12, size=SIZE)
    frames = iio.imread(out, index=None)
    assert frames.shape[:3] == (video.frame_count([walk], 12), SIZE[1], SIZE[0])
    assert (np.abs(frames[0].astype(int) - frames[len(frames) // 2].astype(int)) > 30).any(-1).sum() > 30


def test_bad_outputs_are_refused_before_rendering(walk: Motion, tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match="even width and height"):
        video.render_video(walk, tmp_path / "odd.mp4", size=(161, 120))
    with pytest.raises(UnsupportedFormatError, match="'.avi'"):
        video.render_video(walk, tmp_path / "x.avi")
    with pytest.raises(ShapeError, match="no frames"):
        video.render_video(walk[0:0], tmp_path / "empty.gif")
    assert os.listdir(tmp_path) == []
    assert video.parse_size("640x480") == (640, 480)
    for bad in ("640", "640x", "axb", "8x8"):
        with pytest.raises(ShapeError):
            video.parse_size(bad)


def test_real_motions_at_different_rates(mocap_files, tmp_path: Path) -> None:
    """A 30 fps Bandai walk (rest pose lying along X) next to a 120 fps CMU walk, rendered at 10 fps."""
    files = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "cmu_cgspeed_max/131_01.bvh"])
    a, b = (skelanim.load(f) for f in files)
    out = tmp_path / "both.gif"
    video.render_video([a, b], out, fps=10, size=(240, 120))
    import imageio.v3 as iio

    frames = iio.imread(out, index=None)
    assert len(frames) == int(np.floor(max(a.duration, b.duration) * 10 + 1e-6)) + 1
    for f in frames[::10]:
        for panel, rgb in ((f[:, :120], PALETTE[0]), (f[:, 120:], PALETTE[1])):
            ys, _ = np.nonzero(coloured(panel, rgb))
            assert len(ys) > 20
            assert np.ptp(ys) > 0.25 * 120  # upright, not a figure lying on the floor


def header_frames(path: Path) -> tuple[int, float]:
    """``(Frames, Frame Time)`` read from a BVH file's MOTION header, independently of skelanim."""
    frames = frame_time = None
    with open(path) as f:
        for line in f:
            if line.startswith("Frames:"):
                frames = int(line.split(":")[1])
            elif line.startswith("Frame Time:"):
                frame_time = float(line.split(":")[1])
                break
    assert frames is not None and frame_time is not None
    return frames, frame_time


def gif_timeline(path: Path) -> list[int]:
    """Per-frame durations in ms of a GIF, read back with Pillow."""
    from PIL import Image

    durations = []
    with Image.open(path) as image:
        for k in range(image.n_frames):
            image.seek(k)
            durations.append(int(image.info["duration"]))
    return durations


def test_a_clip_at_its_own_rate_keeps_every_frame() -> None:
    """``Frame Time: 0.0333333`` is 30.00003 fps: rendered at 30 fps a 143-frame clip has 143 frames, not 142."""
    skeleton = Skeleton(["root"], np.array([-1]), torch.zeros(1, 3))
    cases = [(143, 0.0333333, 30.0), (2000, 0.0333333, 30.0), (601, 0.008333, 120.0), (301, 0.016667, 60.0)]
    for n, frame_time, fps in [*cases, (143, 1 / 30, 30.0)]:
        m = Motion.rest(skeleton, n, fps=1.0 / frame_time)
        count = video.frame_count([m], fps)
        assert count == n, (n, frame_time)
        np.testing.assert_array_equal(video.frame_indices(m, fps, count), np.arange(n))
    # other rates still follow floor(duration * fps) + 1, with no frame added past the end
    m30 = Motion.rest(skeleton, 100, fps=1 / 0.0333333)  # 3.3 s
    assert video.frame_count([m30], 15.0) == 50 and video.frame_count([m30], 24.0) == 80
    assert video.frame_count([Motion.rest(skeleton, 10000, fps=30.0)], 30.0) == 10000


def test_real_30fps_files_render_every_frame(mocap_files, tmp_path: Path) -> None:
    """The frame count of real Bandai files (header ``Frame Time: 0.0333333``) at 30 fps is the header's."""
    files = mocap_files(["bandai_namco_1/dataset-1_walk_angry_001.bvh", "bandai_namco_1/dataset-1_dash_normal_001.bvh"])
    for path in files:
        frames, frame_time = header_frames(path)
        assert frame_time == 0.0333333
        assert video.frame_count([skelanim.load(path)], 30.0) == frames, path.name
    out = tmp_path / "dash.gif"
    video.render_video(skelanim.load(files[1]), out, fps=30, size=(48, 32))
    frames, _ = header_frames(files[1])
    assert len(gif_timeline(out)) == frames == 20


@pytest.mark.parametrize("fps", [30.0, 24.0])
def test_gif_timing_read_back_tracks_the_true_time(walk: Motion, tmp_path: Path, fps: float) -> None:
    """GIF stores centiseconds: the running sum of the durations read back stays within 5 ms of (k + 1) / fps,
    and the total is right to one centisecond (30 fps: 30 and 40 ms frames, not 30 ms for all)."""
    out = tmp_path / "walk.gif"
    video.render_video(walk, out, fps=fps, size=(48, 32))
    durations = gif_timeline(out)
    count = len(durations)
    assert count == video.frame_count([walk], fps)
    ends = np.cumsum(durations)
    assert np.abs(ends - np.arange(1, count + 1) * 1000.0 / fps).max() <= 5.0 + 1e-9
    assert abs(ends[-1] - count * 1000.0 / fps) <= 10.0


@pytest.mark.parametrize("fps", [60.0, 50.0, 30.0, 29.97, 25.0, 12.0, 7.0, 1.0])
def test_gif_durations_are_centiseconds_that_add_up(fps: float) -> None:
    count = 301
    durations = video.gif_durations(count, fps)
    assert len(durations) == count and all(d % 10 == 0 and d >= 10 for d in durations)
    ends = np.cumsum(durations)
    assert np.abs(ends - np.arange(1, count + 1) * 1000.0 / fps).max() <= 5.0 + 1e-9


def test_bad_fps_is_refused_before_any_output(walk: Motion, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    for fps in (0.0, -5.0, float("nan"), float("inf")):
        for name in ("x.mp4", "x.gif"):
            with pytest.raises(ShapeError, match="fps must be a positive number"):
                video.render_video(walk, tmp_path / name, fps=fps, size=(48, 32))
    with pytest.raises(ShapeError, match="no frames"):  # bad motions too: no encoder is started
        video.render_video(walk[0:0], tmp_path / "empty.mp4", size=(48, 32))
    assert os.listdir(tmp_path) == []
    out, err = capfd.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("free, said", [(0, "No space left on device"), (10**9, "the video encoder (ffmpeg) stopped")])
def test_an_encoder_that_stops_is_one_os_error_about_the_output(walk: Motion, tmp_path: Path, monkeypatch,
                                                                free: int, said: str) -> None:  # fmt: skip
    """ffmpeg's broken pipe (what a full disk looks like from here) becomes one OS error naming the output and
    the reason, and no file is left."""
    import collections
    import shutil

    import imageio_ffmpeg

    def broken(*args, **kwargs):
        yield
        raise BrokenPipeError(32, "Broken pipe\n\nFFMPEG COMMAND:\nffmpeg -y ...")

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", broken)
    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**10, 10**10 - free, free))
    out = tmp_path / "walk.mp4"
    with pytest.raises(OSError) as caught:
        video.render_video(walk[:10], out, fps=10, size=(64, 48), progress=False)
    assert caught.value.filename == str(out) and said in caught.value.strerror and "\n" not in caught.value.strerror
    assert list(tmp_path.iterdir()) == []


def test_a_one_joint_skeleton_renders_without_numeric_warnings(tmp_path: Path) -> None:
    """A skeleton of height 0 (one joint) once put the camera on its target (0/0 in the view basis)."""
    import warnings

    point = Skeleton(["root"], [-1], torch.zeros(1, 3))
    root = torch.zeros(5, 3, dtype=torch.float64)
    root[:, 0] = torch.arange(5) * 0.1
    motion = Motion.rest(point, 5, fps=10.0).copy(root_positions=root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frames = list(video.render_frames([motion], fps=10, size=(64, 48), progress=False))
    assert len(frames) == 5 and frames[0].shape == (48, 64, 3)


def _frames_out_of_the_picture(motion, size: tuple[int, int] = (640, 480)) -> int:
    """How many output frames (30 fps) of a one-panel video (of one motion, or a list overlaid) have a drawn joint
    outside the image."""
    import numpy as np

    from skelanim.viz import video
    from skelanim.viz._draw import skeleton_figure

    motions, fps = (motion if isinstance(motion, list) else [motion]), 30.0
    count = video.frame_count(motions, fps)
    items = [(i, skeleton_figure(m), video.frame_indices(m, fps, count), "clip") for i, m in enumerate(motions)]
    panel = video._Panel(items, fps, count)
    width, height = size
    out = 0
    for k in range(count):
        cam = panel._camera(k, size)  # the camera the video draws with
        inside = True
        for _, figure, frames, _ in items:
            xy = cam.project(cam.to_camera(figure.positions[frames[k]][np.unique(figure.bones)]))
            inside &= bool((xy >= 0).all() and (xy[:, 0] <= width).all() and (xy[:, 1] <= height).all())
        out += not inside
    return out


def test_the_camera_keeps_overlaid_figures_whose_paths_part_in_the_picture(mocap_files) -> None:
    """An overlay aimed at the figures' mean and never moved back: a Bandai walk beside the DeepMimic walk had a
    figure (partly) out of the picture in 139 of 195 frames, two Bandai walks of other styles in 77 (an audit's
    counts). The camera now backs off as far as all of them need."""
    import skelanim
    from skelanim.viz import video

    normal, angry, walk = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh",
                                       "bandai_namco_1/dataset-1_walk_angry_001.bvh", "deepmimic/humanoid3d_walk.txt"])  # fmt: skip
    pair = [skelanim.load(normal), skelanim.load(angry)]
    assert _frames_out_of_the_picture(pair) == 0
    mixed, _ = video.overlay_frame([skelanim.load(normal), skelanim.load(walk)])
    assert _frames_out_of_the_picture(mixed) == 0
    assert _frames_out_of_the_picture(mixed, (300, 500)) == 0


def test_the_camera_keeps_jumping_arms_in_the_picture(mocap_files) -> None:
    """CMU 01_01 jumps with its arms up: the Gaussian-smoothed aim lowered each short peak, and hands left the top
    of the picture in 32 of 688 frames (the production rig's take of it: 35). The aim now rises wherever a frame
    needs it; every drawn joint stays inside, at 640x480 and in a portrait panel."""
    import skelanim

    motion = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])
    assert _frames_out_of_the_picture(motion) == 0
    assert _frames_out_of_the_picture(motion[::4].copy(fps=motion.fps / 4), (300, 500)) == 0


def test_the_camera_keeps_a_short_run_in_the_picture() -> None:
    """The bundled 0.8 s run: with the camera trailing by half a second it ran out of the left edge and its head
    out of the top in 6 of 23 frames; now every drawn joint projects inside the image in every frame."""
    import skelanim
    from skelanim.data.samples import sample_path

    assert _frames_out_of_the_picture(skelanim.load(sample_path("run"))) == 0
