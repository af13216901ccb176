"""skelanim.viz and skelanim.serve against independent sources, second mutation audit: behaviour that no test
noticed when it was changed (a floor taken from frame 0 only, a zero sign taken for "down", a cut to zero frames,
...), each checked against a value worked out by hand, another library (python-osc, Pillow, urllib) or the rule
its docstring states (quoted in each test)."""

from __future__ import annotations

import json
import math
import threading
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder
from small_body import small_body  # tests/helpers

from skelanim import Motion
from skelanim.core.rotations import rotvec_to_quat
from skelanim.errors import ShapeError
from skelanim.serve.avatar import UNITY_PARENTS
from skelanim.serve.record import VMCRecorder
from skelanim.serve.vmc import HUMANOID_BONES, AvatarEncoder, StreamError
from skelanim.viz import _draw, plots, video, viewer
from skelanim.viz.viewer import ViewerError


def small_motion(root: torch.Tensor, fps: float = 30.0) -> Motion:
    """The small body standing still (rest pose) with its root at ``root`` ``(F, 3)``, metres."""
    skeleton = small_body()
    rotations = rotvec_to_quat(torch.zeros(root.shape[0], skeleton.num_joints, 3, dtype=torch.float64))
    return Motion(skeleton, rotations, root.to(torch.float64), fps, metadata={"units": "m"})


# ============================================================================================ viz.viewer
def test_the_viewer_floor_is_the_lowest_point_of_every_frame() -> None:
    """Module docstring: "the lowest point over all frames sits on the floor y = 0". A body that sinks 0.3 m after
    frame 0 (feet at y = 0.1 m in frame 0, -0.2 m in frame 2) stands on y = 0 at its lowest frame, so its frame 0
    feet are 0.3 m up (worked by hand), not on the floor."""
    root = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.9, 0.0], [0.0, 0.7, 0.0]])
    pos, scale, _ = viewer.viewer_positions(small_motion(root))
    assert scale == 1.0
    assert pos[..., 1].min() == pytest.approx(0.0, abs=1e-12)
    assert pos[0, :, 1].min() == pytest.approx(0.3, abs=1e-6)  # float32 forward kinematics
    assert pos[2, :, 1].min() == pytest.approx(0.0, abs=1e-12)


def test_max_frames_of_zero_is_refused_as_such() -> None:
    """``ViewerOptions.max_frames``: "Keep at most this many frames"; at least one must be kept, and a 0 is refused
    naming the option ("max_frames must be at least 1"), not taken as a cut to nothing."""
    m = small_motion(torch.zeros(3, 3))
    with pytest.raises(ViewerError, match="max_frames must be at least 1"):
        viewer.build_viewer_html(m, max_frames=0)


def test_default_labels_count_from_one() -> None:
    """``build_viewer_html(labels=...)``: "Names shown in the legend and tooltips (default ``motion 1``,
    ``motion 2``, ...)"; ``title``: "(default: the labels)"."""
    m = small_motion(torch.zeros(2, 3))
    page = viewer.build_viewer_html([m, m])
    title = page[page.index("<title>") + 7 : page.index("</title>")]
    assert title.index("motion 1") < title.index("motion 2")
    assert '"name":"motion 1"' in page and '"name":"motion 2"' in page and '"name":"motion 0"' not in page


class _ScriptData(HTMLParser):
    """The text of ``<script id="skelanim-data">`` as an HTML parser (a browser's rules) reads it."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.text = False, ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.inside = tag == "script" and ("id", "skelanim-data") in attrs

    def handle_endtag(self, tag: str) -> None:
        self.inside = False

    def handle_data(self, data: str) -> None:
        self.text += data if self.inside else ""


def test_labels_that_look_like_markup_stay_data() -> None:
    """``_script_json``: "JSON safe inside a ``<script>`` element (``<``, ``>`` and ``&`` escaped)". Python's HTML
    parser (the standard library's, a browser's rules for script text) finds the whole payload, and ``json`` reads
    the labels back as given; no raw ``<``, ``>`` or ``&`` is left in it."""
    labels = ["a</script><b>x", "c & d <!-- e"]
    m = small_motion(torch.zeros(2, 3))
    parser = _ScriptData()
    parser.feed(viewer.build_viewer_html([m, m], labels=labels))
    assert not set("<>&") & set(parser.text)
    assert [motion["name"] for motion in json.loads(parser.text)["motions"]] == labels


def test_the_size_message_names_the_largest_file() -> None:
    """``check_size``: "The message names the largest file". 2 frames of a 16-joint body (32 joint-frames) beside
    10 frames (160) are 192 joint-frames, over a limit of 100: the error is about the 10-frame file."""
    short, long = small_motion(torch.zeros(2, 3)), small_motion(torch.zeros(10, 3))
    with pytest.raises(ViewerError, match="192 joint-frames") as err:
        viewer.check_size([short, long], max_samples=100, sources=["short.bvh", "long.bvh"])
    assert "long.bvh" in str(err.value) and "short.bvh" not in str(err.value)
    assert "(10 frames x 16 joints" in str(err.value)


def test_the_server_answers_a_page_url_with_a_query() -> None:
    """``build_viewer_html(autoplay=...)``: "``?autoplay=0`` in the URL overrides", and ``_PageHandler`` "Answers
    ``GET /`` (and ``/index.html``, ``/viewer.html``) with the page": ``/?autoplay=0`` and
    ``/viewer.html?autoplay=0`` are the page (read with urllib), another path is a 404."""
    page = "<!doctype html><title>x</title>"
    server = viewer.make_server(page, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        base = viewer.server_url(server)
        for path in ("?autoplay=0", "viewer.html?autoplay=0", "index.html"):
            with urllib.request.urlopen(base + path, timeout=10) as answer:
                assert answer.status == 200 and answer.read().decode("utf-8") == page
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base + "other.html?autoplay=0", timeout=10)
        assert err.value.code == 404
    finally:
        server.shutdown()
        server.server_close()


# ============================================================================================ viz._draw
def test_the_palette_is_matplotlibs_tab10_cycled() -> None:
    """``_draw.PALETTE``: "Colours per motion (matplotlib's tab10)"; ``color(index)``: "The ``index``-th palette
    colour (cycled)". Checked against matplotlib's own tab10: ten motions get its ten colours (in skelanim's order,
    red second), the eleventh the first again."""
    from matplotlib import colormaps

    tab10 = [tuple(round(255 * c) for c in rgb) for rgb in colormaps["tab10"].colors]  # type: ignore[attr-defined]
    first_ten = [_draw.color(i) for i in range(10)]
    assert sorted(first_ten) == sorted(tab10)
    assert _draw.color(10) == _draw.color(0) and _draw.color(19) == _draw.color(9)


@pytest.mark.parametrize("x", [0.013, 0.14, 0.16, 1.2, 1.6, 2.9, 3.2, 3.8, 6.5, 7.2, 7.9, 45.0, 680.0])
def test_nice_step_is_the_closest_round_number(x: float) -> None:
    """``nice_step``: "A round number (1, 2 or 5 times a power of ten) close to ``x``": the closest of them,
    found here by brute force over the candidates (no ``x`` is a tie)."""
    candidates = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    assert _draw.nice_step(x) == pytest.approx(min(candidates, key=lambda c: abs(c - x)))


def test_a_camera_projects_as_a_pinhole_by_hand() -> None:
    """Module docstring: "its image x axis is ``cross(forward, up)`` (to the right), image y points down". An eye at
    (0, 3, -4) looking at the origin (forward (0, -0.6, 0.8), 5 away), focal 100 px, centre (50, 50): by hand
    right = (-1, 0, 0), camera up = (0, 0.8, 0.6); the point (1, 0, 0) is at camera (-1, 0, 5), pixel (30, 50);
    the point (0, 1, 0), (0, -2, 4) from the eye, at camera (0, 0.8, 4.4), pixel (50, 50 - 100 * 0.8 / 4.4)."""
    cam = _draw.Camera(np.array([0.0, 3.0, -4.0]), np.zeros(3), np.array([0.0, 1.0, 0.0]), 100.0, (50.0, 50.0), 0.1)
    np.testing.assert_allclose(cam.basis(), [[-1.0, 0.0, 0.0], [0.0, 0.8, 0.6], [0.0, -0.6, 0.8]], atol=1e-12)
    points = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(cam.to_camera(points), [[-1.0, 0.0, 5.0], [0.0, 0.8, 4.4]], atol=1e-12)
    np.testing.assert_allclose(cam.project(cam.to_camera(points)), [[30.0, 50.0], [50.0, 50.0 - 80.0 / 4.4]], atol=1e-9)


def test_a_segment_through_the_near_plane_is_clipped_there() -> None:
    """``Camera.segments``: segments are clipped "at the near plane", ``depth`` is the "mean camera depth of each
    visible segment". Camera at the origin looking along +Z (near 1): a segment from depth -1 to 3 keeps its part
    from depth 1 (the point (0.5, 0, 1) of the line (0, 0, -1) -> (1, 0, 3)) to 3, mean depth 2; one wholly
    behind the eye is dropped."""
    cam = _draw.Camera(np.zeros(3), np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 0.0]), 10.0, (0.0, 0.0), 1.0)
    a = np.array([[0.0, 0.0, -1.0], [0.0, 0.0, -3.0]])
    b = np.array([[1.0, 0.0, 3.0], [1.0, 0.0, -2.0]])
    pa, pb, depth, keep = cam.segments(a, b)
    assert keep.tolist() == [True, False]
    # right = cross(forward, up) = cross(+Z, +Y) = -X: x = 0.5 at depth 1 is pixel -5, x = 1 at depth 3 is -10/3
    np.testing.assert_allclose(pa, [[-5.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(pb, [[-10.0 / 3.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(depth, [2.0], atol=1e-9)


def test_the_follow_camera_spans_the_smaller_side_and_is_raised() -> None:
    """``follow_camera``: "raised by ``elevation_deg``; the field of view spans the smaller image side": the focal
    length is half the smaller side over tan(fov / 2), and the eye is ``distance`` away at 15 degrees above the
    target's horizontal plane."""
    target = np.array([1.0, 0.9, -2.0])
    cam = _draw.follow_camera(target, np.array([1.0, 0.0, 0.0]), 1, distance=4.0, elevation_deg=15.0,
                              size=(640, 480), fov_deg=35.0)  # fmt: skip
    assert cam.focal == pytest.approx(240.0 / math.tan(math.radians(17.5)))
    offset = cam.eye - target
    assert np.linalg.norm(offset) == pytest.approx(4.0)
    assert math.degrees(math.atan2(offset[1], offset[0])) == pytest.approx(15.0) and offset[2] == pytest.approx(0.0)


def test_the_floor_grid_includes_both_ends() -> None:
    """``floor_grid``: "lines every ``step`` within ``half`` of the centre (aligned to multiples of ``step``)":
    around the origin with step 1 and half 2, the lines at -2, -1, 0, 1 and 2 along each horizontal axis, 10 lines,
    on the floor y = 0.25 (counted by hand)."""
    starts, ends = _draw.floor_grid(np.zeros(3), 1, 0.25, 1.0, 2.0)
    assert starts.shape == ends.shape == (10, 3)
    for axis in (0, 2):  # the lines across this axis: constant along it, from -2 to 2 along the other
        across = starts[:, axis] == ends[:, axis]
        assert sorted(starts[across, axis].tolist()) == [-2.0, -1.0, 0.0, 1.0, 2.0]
    assert np.all(starts[:, 1] == 0.25) and np.all(ends[:, 1] == 0.25)


# ============================================================================================ viz.video
@pytest.mark.parametrize(("frames", "motion_fps", "fps", "count"), [(2, 10.0, 26.0, 3), (2020, 20.0, 1.0, 101)])
def test_frame_count_follows_the_documented_tolerance(frames: int, motion_fps: float, fps: float, count: int) -> None:
    """``frame_count``: "``floor(duration * fps + tol) + 1`` with ``tol = min(1e-4 * duration * fps + 1e-6, 0.5)``".
    By hand: 0.1 s at 26 fps spans 2.6 frames, tol 0.00026: 3 frames (a tolerance of half a frame had made 4, the
    last one 0.4 frame past the end); 100.95 s at 1 fps, tol 0.0101: 101 frames (1e-3 had made 102)."""
    m = small_motion(torch.zeros(frames, 3), fps=motion_fps)
    assert video.frame_count([m], fps) == count


@pytest.mark.parametrize(("fps", "durations"), [(200.0, [10, 10, 10, 10]), (75.0, [10, 20, 10, 10, 20, 10])])
def test_gif_durations_over_50_fps_are_one_centisecond_where_the_time_allows(fps: float, durations: list[int]) -> None:
    """``gif_durations``: "whole centiseconds whose running sum is the true time ``(k + 1) / fps`` rounded to a
    centisecond (at least 1 cs a frame)". By hand at 75 fps the true times are 1.33, 2.67, 4, 5.33, 6.67, 8 cs,
    rounded 1, 3, 4, 5, 7, 8: steps 1, 2, 1, 1, 2, 1 cs; at 200 fps the rounded times 0, 1, 2, 2 (banker's
    rounding of 0.5 and 1.5) stay at least 1 cs a frame: 1, 1, 1, 1."""
    assert video.gif_durations(len(durations), fps) == durations


@pytest.mark.parametrize(("frames", "sigma"), [(60, 5.0), (16, 2.0)])
def test_the_camera_path_is_smoothed_over_half_a_second(frames: int, sigma: float) -> None:
    """Module docstring: the camera follows "the body centre ... along its horizontal path smoothed with a Gaussian
    of 0.5 s (at most an eighth of a short clip)". At 10 fps that is 5 frames for a 60-frame clip, and 16 / 8 = 2
    frames for a 16-frame one; the aim's horizontal path is scipy's ``gaussian_filter1d`` of the centre's with that
    sigma (edges held: ``mode="nearest"``)."""
    from scipy.ndimage import gaussian_filter1d

    t = torch.arange(frames, dtype=torch.float64)
    root = torch.stack([0.05 * t + 0.1 * (t % 3 == 0), torch.ones(frames), 0.2 * torch.sin(t)], -1)
    m = small_motion(root, fps=10.0)
    count = video.frame_count([m], 10.0)
    fig = _draw.skeleton_figure(m)
    panel = video._Panel([(0, fig, video.frame_indices(m, 10.0, count), "m")], 10.0, count)
    want = gaussian_filter1d(fig.centre[:, [0, 2]], sigma=sigma, axis=0, mode="nearest")
    np.testing.assert_allclose(panel.targets[:, [0, 2]], want, atol=1e-9)


def test_the_camera_is_2_3_heights_away_and_15_degrees_up() -> None:
    """Module docstring: "Camera: perspective, ... 2.3 body heights away, 15 degrees above the horizon". A body
    standing still fits in the picture from there (nothing moves the camera back): every frame's eye is 2.3 heights
    from its aim, 15 degrees above the aim's horizontal plane."""
    m = small_motion(torch.tensor([[0.0, 1.0, 0.0]] * 4))
    count = video.frame_count([m], 30.0)
    panel = video._Panel([(0, _draw.skeleton_figure(m), video.frame_indices(m, 30.0, count), "m")], 30.0, count)
    for k in range(count):
        cam = panel._camera(k, (640, 480))
        offset = cam.eye - cam.target
        assert np.linalg.norm(offset) == pytest.approx(2.3 * panel.height)
        assert math.degrees(math.asin(offset[1] / np.linalg.norm(offset))) == pytest.approx(15.0)


def test_spread_needs_never_fall_below_a_frames_own() -> None:
    """``_Panel._spread_needs``: needs "spread over the frames around (a maximum, then the camera's Gaussian), never
    below each frame's own". One frame needing 10 among frames needing nothing: after a Gaussian of sigma 1 the
    maximum's 5-frame plateau keeps about 9.5 at its middle (scipy's weights), so the floor at the frame's own 10
    is what holds there, and its neighbours get some of it."""
    needed = np.zeros(21)
    needed[10] = 10.0
    spread = video._Panel._spread_needs(None, needed, 1.0)  # type: ignore[arg-type]
    assert np.all(spread >= needed) and spread[10] == 10.0
    assert 0.0 < spread[7] < 10.0 and spread[13] == pytest.approx(spread[7])


def test_a_gif_at_exactly_50_fps_is_taken() -> None:
    """Module docstring: "A GIF is written at :data:`MAX_GIF_FPS` (50) frames per second at most" (2 cs a frame):
    50 itself is taken, a little more is refused."""
    assert video.check_video_path("clip.gif", fps=50.0) == Path("clip.gif")
    with pytest.raises(ShapeError, match="a GIF plays at most 50 frames per second"):
        video.check_video_path("clip.gif", fps=50.5)


def test_fit_text_keeps_a_text_that_exactly_fits_and_gives_up_on_no_room() -> None:
    """``fit_text``: "``text`` if it fits in ``width`` pixels, else its longest start that fits with an ellipsis
    after it, else ``""``". Widths measured with Pillow's own ``getlength``/``getbbox``."""
    font = video._font(24)
    text = "frame 12  walk"
    exact = max(float(font.getlength(text)), float(font.getbbox(text)[2]))
    assert video.fit_text(text, font, exact) == text
    assert video.fit_text(text, font, 1.0) == ""


# ============================================================================================ viz.plots
def test_kinds_are_named_as_the_docstring_writes_them() -> None:
    """``kinds_text``: "``"a"``, ``"a and b"``, ``"a, b and c"``: kinds named in a sentence"."""
    assert plots.kinds_text(["a"]) == "a"
    assert plots.kinds_text(["a", "b"]) == "a and b"
    assert plots.kinds_text(["a", "b", "c"]) == "a, b and c"


def test_a_pose_strip_needs_one_pose() -> None:
    """``plot_poses``: ``count`` stick figures; 0 is refused ("count must be at least 1"), not an empty strip."""
    with pytest.raises(ShapeError, match="count must be at least 1"):
        plots.plot_poses(small_motion(torch.zeros(2, 3)), count=0)


def test_save_figure_takes_the_least_dpi(tmp_path: Path) -> None:
    """``save_figure``: "``dpi`` at least :data:`MIN_DPI`" (10): exactly 10 is taken, and the PNG read back with
    Pillow is 10 dots per inch (a 2 x 1 inch figure: 20 x 10 pixels)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [0, 1])
    path = plots.save_figure(fig, tmp_path / "small.png", dpi=plots.MIN_DPI)
    with Image.open(path) as image:
        assert image.size == (20, 10)


# ============================================================================================ serve.vmc
def test_an_up_sign_of_zero_is_refused() -> None:
    """``AvatarEncoder(up=...)``: "The source's up axis and sign, ``(1, 1.0)`` for +Y": a sign of 0 names no
    direction and is refused as a malformed ``up`` (it had been read as -Y, an upside-down source)."""
    with pytest.raises(StreamError, match=r"up is an \(axis, sign\) pair"):
        AvatarEncoder(small_body(), up=(1, 0.0))
    with pytest.raises(StreamError, match=r"up is an \(axis, sign\) pair"):
        AvatarEncoder(small_body(), up=(1, -0.0))
    assert math.copysign(1.0, -0.0) < 0  # a negative zero is still no direction


def test_the_floor_is_given_in_the_sources_units() -> None:
    """``AvatarEncoder(floor=...)``: "Height of the floor along the up axis, in the source's units"; what goes out is
    in metres. A source in centimetres (``metres_per_unit=0.01``) with its floor at 10 cm and its hips at 100 cm
    sends ``Hips`` at (100 - 10) * 0.01 = 0.9 m over the floor (worked by hand), not 100 * 0.01 - 10."""
    m = small_motion(torch.tensor([[0.0, 100.0, 0.0], [5.0, 100.0, 0.0]]))
    encoder = AvatarEncoder(m.skeleton, metres_per_unit=0.01, floor=10.0)
    sent = encoder.encode(m.rotations, m.local_translations())
    hips = sent.positions[:, sent.bones.index("Hips")]
    torch.testing.assert_close(hips, torch.tensor([[0.0, 0.9, 0.0], [-0.05, 0.9, 0.0]], dtype=hips.dtype),
                               atol=1e-9, rtol=0)  # fmt: skip


def test_the_bones_go_out_in_unitys_hierarchy_order() -> None:
    """``bone_plan``: the bones "in Unity's hierarchy order", the order of :data:`~skelanim.serve.avatar.UNITY_PARENTS`
    ("Unity's 55 humanoid bones (``HumanBodyBones``) -> parent bone, parents first"): the left leg before the right
    shoulder, as Unity lists a side's arm and leg together."""
    bones = list(HUMANOID_BONES)
    assert bones == [b for b in UNITY_PARENTS if b in HUMANOID_BONES]
    assert bones.index("LeftUpperLeg") < bones.index("RightShoulder")


# ========================================================================================== serve.record
Message = tuple[str | float, ...]


def _osc(*messages: Message) -> bytes:
    """An OSC bundle built with python-osc of ``(address, *args)`` messages."""
    bundle = OscBundleBuilder(IMMEDIATELY)
    for address, *args in messages:
        builder = OscMessageBuilder(address=str(address))
        for arg in args:
            builder.add_arg(arg)
        bundle.add_content(builder.build())
    return bundle.build().dgram


def test_a_bone_message_without_its_w_is_skipped() -> None:
    """``VMCRecorder.ignored``: messages "with a non-number or a NaN where numbers go" are skipped, not the take, and
    ``/VMC/Ext/Bone/Pos`` carries the name and 7 numbers (position x y z, rotation x y z w; the module docstring of
    :mod:`skelanim.serve.vmc`). A ``Spine`` with 6 numbers (no w) is one ignored message; the frame keeps the
    hips."""
    hips = ("/VMC/Ext/Bone/Pos", "Hips", 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    short = ("/VMC/Ext/Bone/Pos", "Spine", 0.0, 0.1, 0.0, 0.0, 0.0, 0.0)
    with VMCRecorder("127.0.0.1", 0) as recorder:
        frames = recorder._read(_osc(hips, short, ("/VMC/Ext/T", 0.5)), 1.0, ("127.0.0.1", 1))
        assert recorder.ignored == 1
    assert len(frames) == 1 and set(frames[0].bones) == {"Hips"} and frames[0].time == 0.5


def test_a_root_sent_again_before_any_bone_makes_no_empty_frame() -> None:
    """Module docstring of :mod:`skelanim.serve.record`: a frame ends "where a bone or the root arrives again"; a
    root repeated before any bone of the frame arrived (a sender that sends its root on its own first) ends no frame:
    one frame with the hips comes out, none without bones."""
    root = ("/VMC/Ext/Root/Pos", "root", 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    hips = ("/VMC/Ext/Bone/Pos", "Hips", 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    with VMCRecorder("127.0.0.1", 0) as recorder:
        frames = recorder._read(_osc(root), 1.0, ("127.0.0.1", 1))
        frames += recorder._read(_osc(root, hips, ("/VMC/Ext/T", 0.5)), 1.1, ("127.0.0.1", 1))
    assert [set(f.bones) for f in frames] == [{"Hips"}]


def test_loose_messages_end_a_frame_at_its_time() -> None:
    """Module docstring of :mod:`skelanim.serve.record`: a frame ends "at its time (``/VMC/Ext/T``) when that follows
    the bones"; a sender of one message per datagram (no datagram shows the order) is read in the usual order. Hips,
    spine, time, twice: two whole frames, each closed by its own time, before any third message."""

    def bone(name: str, y: float) -> Message:
        return ("/VMC/Ext/Bone/Pos", name, 0.0, y, 0.0, 0.0, 0.0, 0.0, 1.0)

    loose = [bone("Hips", 1.0), bone("Spine", 0.1), ("/VMC/Ext/T", 0.0)] * 2
    loose[5] = ("/VMC/Ext/T", 0.1)
    frames = []
    with VMCRecorder("127.0.0.1", 0) as recorder:
        for k, message in enumerate(loose):
            frames += recorder._read(_osc(message), k / 100, ("127.0.0.1", 1))
    assert [f.time for f in frames] == pytest.approx([0.0, 0.1])
    assert all(set(f.bones) == {"Hips", "Spine"} for f in frames)
