"""The browser viewer: the HTML writer (unit tests) and the page itself, end to end in headless Chromium.

Browser tests need Python ``playwright`` and a Chromium at ``/usr/bin/chromium`` (Debian's ``chromium``
package; override with ``SKELANIM_CHROMIUM``). Without them they skip, unless ``SKELANIM_REQUIRE_BROWSER=1``,
which turns the skip into a failure. ``SKELANIM_SCREENSHOT_DIR`` keeps the screenshots they take.
"""

from __future__ import annotations

import base64
import io
import math
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from browser import VIEWPORT, ViewerPage, changed_fraction  # tests/helpers

from skelanim import Motion, Skeleton
from skelanim.core.rotations import rotvec_to_quat
from skelanim.data.samples import sample_path
from skelanim.viz import viewer
from skelanim.viz.viewer import ViewerError, build_viewer_html, viewer_positions

LARGE_RIG = "cmu_iclone_ccrig/001_01.bvh"
BANDAI = "bandai_namco_1/dataset-1_bow_active_001.bvh"

# --------------------------------------------------------------------------- synthetic motions
# A small humanoid in centimetres with Z up (name, parent, offset), to exercise unit and axis handling.
_BODY_Z_UP_CM = [
    ("Hips", None, (0.0, 0.0, 95.0)),
    ("Spine", "Hips", (0.0, 0.0, 25.0)),
    ("Neck", "Spine", (0.0, 0.0, 30.0)),
    ("Head", "Neck", (0.0, 0.0, 12.0)),
    ("LeftArm", "Spine", (18.0, 0.0, 25.0)),
    ("LeftHand", "LeftArm", (50.0, 0.0, 0.0)),
    ("RightArm", "Spine", (-18.0, 0.0, 25.0)),
    ("RightHand", "RightArm", (-50.0, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (10.0, 0.0, 0.0)),
    ("LeftFoot", "LeftUpLeg", (0.0, 0.0, -88.0)),
    ("RightUpLeg", "Hips", (-10.0, 0.0, 0.0)),
    ("RightFoot", "RightUpLeg", (0.0, 0.0, -88.0)),
]


def synthetic_motion(frames: int = 60, fps: float = 30.0) -> Motion:
    """The Z-up centimetre humanoid swinging its arms and legs while walking 1 m along +Y."""
    names = [n for n, _, _ in _BODY_Z_UP_CM]
    parents = [-1 if p is None else names.index(p) for _, p, _ in _BODY_Z_UP_CM]
    offsets = torch.tensor([o for _, _, o in _BODY_Z_UP_CM], dtype=torch.float64)
    skeleton = Skeleton(names, np.array(parents), offsets, end_sites={3: torch.tensor([0.0, 0.0, 15.0])})
    t = torch.linspace(0, 2 * math.pi, frames, dtype=torch.float64)
    rotvec = torch.zeros(frames, len(names), 3, dtype=torch.float64)
    swing = 0.6 * torch.sin(t)
    for joint, sign in (("LeftArm", 1), ("RightArm", -1), ("LeftUpLeg", -1), ("RightUpLeg", 1)):
        rotvec[:, names.index(joint), 0] = sign * swing
    root = torch.stack([torch.zeros(frames), torch.linspace(0, 100, frames), torch.full((frames,), 95.0)], -1)
    return Motion(skeleton, rotvec_to_quat(rotvec), root.to(torch.float64), fps)


def decode_payload(payload: dict) -> np.ndarray:
    """The positions the page decodes, ``(F, P, 3)``."""
    q = np.frombuffer(base64.b64decode(payload["positions"]), dtype="<u2").astype(np.float64).reshape(-1, 3)
    values = np.asarray(payload["lo"]) + q * np.asarray(payload["step"])
    return values.reshape(payload["frames"], len(payload["names"]), 3)


# =========================================================================== the HTML writer
def test_positions_are_metres_y_up_grounded_and_centred() -> None:
    motion = synthetic_motion()
    pos, scale, height = viewer_positions(motion)
    assert scale == 0.01
    assert height == pytest.approx(1.70)  # Head_end at 177 cm, feet at 7 cm
    names = motion.skeleton.names + motion.end_site_names()
    head, foot = names.index("Head_end"), names.index("LeftFoot")
    assert (pos[:, head, 1] > pos[:, foot, 1] + 1.5).all(), "Z-up file must stand up along +Y"
    assert pos[..., 1].min() == pytest.approx(0.0)
    assert pos[0, 0, [0, 2]] == pytest.approx([0.0, 0.0])
    # A proper rotation: bone lengths are kept (x 0.01) and the left hand stays on the left (+X).
    fk = motion.positions().numpy()
    joints = len(motion.skeleton)
    parents = motion.skeleton.parents[1:]
    lengths = np.linalg.norm(fk[:, 1:] - fk[:, parents], axis=-1)
    lengths_view = np.linalg.norm(pos[:, 1:joints] - pos[:, parents], axis=-1)
    assert lengths_view == pytest.approx(lengths * 0.01, abs=1e-9)
    assert (pos[:, names.index("LeftHand"), 0] > pos[:, names.index("RightHand"), 0]).all()


def test_up_direction_follows_the_animated_pose() -> None:
    motion = synthetic_motion()
    names = motion.skeleton.names + motion.end_site_names()
    pos = motion.positions(end_sites=True).numpy()
    assert viewer.up_direction(names, pos) == (2, 1.0)
    assert viewer.up_direction(names, -pos) == (2, -1.0)
    assert viewer.up_direction(["a", "b"], np.array([[[0, 0, 0], [0.1, 3, 0.2]]])) == (1, 1.0)


def test_payload_round_trips_within_quantisation_error() -> None:
    motion = synthetic_motion()
    payload = viewer.motion_payload(motion, name="walk")
    expected, _, _ = viewer_positions(motion)
    decoded = decode_payload(payload)
    extent = expected.reshape(-1, 3).max(0) - expected.reshape(-1, 3).min(0)
    # the documented bound, per axis: half a step of extent / 65535
    assert (np.abs(decoded - expected).reshape(-1, 3).max(axis=0) <= extent / 131070 * (1 + 1e-9) + 1e-15).all()
    assert payload["frames"] == 60 and payload["fps"] == 30.0
    assert payload["names"][-1] == "Head_end" and payload["end_site"][-1] is True
    assert payload["parents"][-1] == motion.skeleton.index("Head")


def test_page_is_self_contained() -> None:
    page = build_viewer_html([synthetic_motion()], labels=["walk"])
    assert page.startswith("<!doctype html>")
    assert "{{" not in page.split('id="skelanim-data"')[0], "a template placeholder was left unfilled"
    # Nothing is fetched: no script/link/img with a URL, no module imported from the network.
    assert not re.search(r"<script[^>]*\ssrc\s*=", page, re.IGNORECASE)
    # (but a data: URL, fetched from nowhere: the empty favicon that keeps a served page from asking for one)
    assert not re.search(r"""<link[^>]*\shref\s*=\s*(?!["']?data:)""", page, re.IGNORECASE)
    assert '<link rel="icon" href="data:,">' in page.split("</head>", 1)[0]
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"""(?:\bfrom|\bimport\s*\()\s*["'](?:https?:)?//""", page)
    assert not re.search(r"""url\(\s*["']?(?:https?:)?//""", page, re.IGNORECASE)
    assert "cdn" not in page.lower().split("<script", 1)[0]
    # The vendored three.js, its license notice and the viewer are all inlined.
    assert "SPDX-License-Identifier: MIT" in page
    assert 'Lf="187"' in page or '"187"' in page
    assert "window.skelanimViewer" in page


def test_page_size_is_assets_plus_about_8_bytes_per_joint_frame() -> None:
    empty = build_viewer_html([])
    assets = sum(len(viewer.asset_text(n).encode()) for n in viewer.ASSET_FILES)
    assert len(empty.encode()) < assets + 5_000
    assert len(empty.encode()) < 1_000_000, "three.js should stay minified"
    motion = synthetic_motion(frames=600)
    page = build_viewer_html([motion])
    samples = motion.num_frames * (motion.skeleton.num_joints + 1)
    per_sample = (len(page.encode()) - len(empty.encode())) / samples
    assert 7.5 < per_sample < 9.0


def test_assets_can_be_inlined_and_license_is_vendored() -> None:
    for name in viewer.ASSET_FILES[1:]:
        text = viewer.asset_text(name).lower()
        assert "</script" not in text and "<!--" not in text, name
    assert "MIT License" in viewer.asset_text("three.LICENSE")
    assert "three.js authors" in viewer.asset_text("three.LICENSE").lower()


def test_labels_and_title_are_escaped() -> None:
    page = build_viewer_html([synthetic_motion(5)], labels=["</script><b>x</b>"], title="a<b>")
    assert "</script><b>" not in page
    assert "<title>a&lt;b&gt;" in page


def test_empty_motion_is_a_clear_error() -> None:
    empty = synthetic_motion()[0:0]
    with pytest.raises(ViewerError, match="no frames") as info:
        build_viewer_html([empty], sources=["clip.bvh"])
    assert info.value.path == "clip.bvh"


def test_non_finite_positions_are_reported_with_frame_and_joint() -> None:
    motion = synthetic_motion(10)
    root = motion.root_positions.clone()
    root[4, 0] = float("nan")
    with pytest.raises(ViewerError, match="non-finite") as info:
        build_viewer_html([motion.copy(root_positions=root)], sources=["bad.bvh"])
    assert "frame 4" in str(info.value)


def test_too_large_suggests_max_frames_and_stride() -> None:
    motion = synthetic_motion(200)  # 200 frames x 13 points = 2600 joint-frames
    with pytest.raises(ViewerError) as info:
        build_viewer_html([motion], sources=["big.bvh"], max_samples=1000)
    message = str(info.value)
    assert message.startswith("big.bvh: too large for the browser viewer")
    assert "--max-frames 76" in message and "--stride 3" in message
    build_viewer_html([motion], max_samples=1000, stride=3)
    build_viewer_html([motion], max_samples=1000, max_frames=76)


def test_stride_and_max_frames_cut_the_motion() -> None:
    page = build_viewer_html([synthetic_motion(60, fps=30.0)], stride=4, max_frames=10)
    data = re.search(r'id="skelanim-data">(.*?)</script>', page, re.DOTALL)
    assert data is not None
    import json

    payload = json.loads(data.group(1))["motions"][0]
    assert payload["frames"] == 10 and payload["fps"] == 7.5
    with pytest.raises(ViewerError, match="stride"):
        build_viewer_html([synthetic_motion(5)], stride=0)


def test_write_viewer_is_atomic_and_returns_the_path(tmp_path: Path) -> None:
    out = viewer.write_viewer(tmp_path / "sub" / "v.html", [synthetic_motion(5)])
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert [p.name for p in out.parent.iterdir()] == ["v.html"]
    with pytest.raises(ViewerError):
        viewer.write_viewer(out, [synthetic_motion()[0:0]])
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")


# =========================================================================== the CLI and the server
def _cli(*args: str) -> tuple[int, str, str]:
    from skelanim.cli import main

    out, err = io.StringIO(), io.StringIO()
    old = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        code = main(list(args))
    finally:
        sys.stdout, sys.stderr = old
    return code, out.getvalue(), err.getvalue()


def test_cli_view_writes_a_page(tmp_path: Path) -> None:
    out = tmp_path / "v.html"
    code, stdout, stderr = _cli("view", str(sample_path("walk")), str(sample_path("run")), "-o", str(out))
    assert code == 0, stderr
    assert f"wrote {out} (2 motions," in stdout
    page = out.read_text(encoding="utf-8")
    assert '"name":"walk"' in page and '"name":"run"' in page


def test_cli_view_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text('{"Loop": "wrap", "Frames": []}')
    code, _, stderr = _cli("view", str(empty), "-o", str(tmp_path / "v.html"))
    assert code == 2
    assert stderr.startswith("error: ") and str(empty) in stderr and stderr.count("\n") == 1
    assert not (tmp_path / "v.html").exists()
    for option, value in (("--stride", "0"), ("--max-frames", "0"), ("--port", "70000")):
        code, _, stderr = _cli("view", str(sample_path("walk")), "-o", str(tmp_path / "v.html"), option, value)
        assert code == 2 and stderr.startswith(f"error: {option} must be"), stderr
    assert not (tmp_path / "v.html").exists()


def test_server_answers_with_the_page() -> None:
    server = viewer.make_server("<!doctype html><p>hi</p>", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = viewer.server_url(server)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=5) as response:
            assert response.read() == b"<!doctype html><p>hi</p>"
            assert response.headers["Content-Type"].startswith("text/html")
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url + "secret.txt", timeout=5)
        with pytest.raises(ViewerError, match="--port"):
            viewer.make_server("x", port=server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_cli_serve_prints_the_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    # faulthandler: a child that does not stop is aborted below and prints every thread's stack
    env = {**os.environ, "PYTHONPATH": str(Path(viewer.__file__).parents[2]), "PYTHONFAULTHANDLER": "1"}
    # `python -m skelanim`, with Ctrl-C raising KeyboardInterrupt as in a terminal: a suite started in the
    # background inherits SIGINT ignored, and Python then installs no handler in the child
    launch = "import signal, runpy; signal.signal(signal.SIGINT, signal.default_int_handler); runpy.run_module('skelanim', run_name='__main__')"
    proc = subprocess.Popen(
        [sys.executable, "-c", launch, "view", str(sample_path("walk")), "--serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, line + (proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        with urllib.request.urlopen(match.group(0), timeout=10) as response:
            assert b"skelanim-data" in response.read()
        proc.send_signal(signal.SIGINT)
        try:  # communicate, not wait: a child blocked on a full stderr pipe would never exit (0.4 s when quiet)
            rest, errors = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            rest, errors = proc.communicate(timeout=10)
            raise AssertionError(f"the server did not stop on Ctrl-C; its stacks:\n{errors[-5000:]}") from None
        assert proc.returncode == 0, errors[-3000:]
        assert "stopped" in rest
        assert not (tmp_path / "viewer.html").exists(), "--serve without -o writes nothing"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# =========================================================================== end to end in Chromium
def test_page_loads_from_file_without_console_errors(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([synthetic_motion()], labels=["walk"]))
    assert view.js("location.protocol") == "file:"
    assert view.js("window.skelanimViewer.frameCount") == 60
    assert view.js("window.skelanimViewer.motions[0].points") == 13
    view.page.wait_for_timeout(300)
    assert view.errors == []
    assert view.js("document.querySelector('canvas') !== null")
    assert "walk" in view.page.inner_text("#skelanim-legend")


def test_empty_scene_loads_without_errors(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([]))
    assert view.js("window.skelanimViewer.frameCount") == 0
    assert "No motion" in view.page.inner_text("#skelanim-message")
    assert view.errors == []


def test_skeleton_is_drawn_upright(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([synthetic_motion()], labels=["walk"]))
    shown = view.screenshot("skeleton")
    view.js("window.skelanimViewer.setSkeletonVisible(false)")
    hidden = view.screenshot("skeleton_hidden")
    view.js("window.skelanimViewer.setSkeletonVisible(true)")
    assert changed_fraction(shown, hidden) > 0.004
    # The changed pixels sit where the joints project, and the head is drawn above the feet.
    joints = {j["name"]: j for j in view.js("window.skelanimViewer.jointScreenPositions(0)")}
    assert all(j["visible"] for j in joints.values())
    assert joints["Head_end"]["y"] < joints["LeftFoot"]["y"] - 100
    diff = np.abs(shown.astype(int) - hidden.astype(int)).sum(-1) > 40
    head = joints["Head"]
    y, x = round(head["y"]), round(head["x"])
    assert diff[y - 4 : y + 5, x - 4 : x + 5].any()
    assert view.errors == []


def test_scrubbing_changes_the_pose(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([synthetic_motion()]))
    first = view.js("window.skelanimViewer.jointScreenPositions(0)")
    shot_first = view.screenshot("frame0")
    # Scrub with the timeline as a user does: focus it and step with the arrow keys.
    view.page.focus("#skelanim-timeline")
    for _ in range(15):
        view.page.keyboard.press("ArrowRight")
    assert view.js("window.skelanimViewer.frame") == 15
    assert "frame 15 / 59" in view.page.inner_text("#skelanim-frame")
    later = view.js("window.skelanimViewer.jointScreenPositions(0)")
    moved = max(math.hypot(a["x"] - b["x"], a["y"] - b["y"]) for a, b in zip(first, later))
    assert moved > 10
    assert changed_fraction(shot_first, view.screenshot("frame15")) > 0.001
    view.js("window.skelanimViewer.setFrame(0)")
    again = view.js("window.skelanimViewer.jointScreenPositions(0)")
    assert np.allclose([(j["x"], j["y"]) for j in again], [(j["x"], j["y"]) for j in first])
    assert view.errors == []


def test_play_button_and_speed(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([synthetic_motion(fps=30.0)]))
    assert not view.js("window.skelanimViewer.isPlaying()")
    view.page.select_option("#skelanim-speed", "0.25")
    started = view.js("performance.now()")
    view.page.click("#skelanim-play")
    assert view.js("window.skelanimViewer.isPlaying()")
    view.page.wait_for_timeout(1000)
    view.page.click("#skelanim-play")
    elapsed = (view.js("performance.now()") - started) / 1000
    frame = view.js("window.skelanimViewer.frame")
    # A quarter of 30 fps is 7.5 frames a second (a busy machine may drop some ticks, never add any).
    assert 1 <= frame <= 7.5 * elapsed + 1, (frame, elapsed)
    assert view.page.inner_text("#skelanim-play") == "Play"


def test_hover_shows_the_joint_name(open_viewer: Callable[..., ViewerPage]) -> None:
    view = open_viewer(build_viewer_html([synthetic_motion()], labels=["walk"]))
    tooltip = view.page.locator("#skelanim-tooltip")
    assert not tooltip.is_visible()
    joints = view.js("window.skelanimViewer.jointScreenPositions(0)")

    # The joint farthest (on screen) from every other one, so no neighbour can take the hover.
    def isolation(j: dict) -> float:
        return min(math.hypot(j["x"] - k["x"], j["y"] - k["y"]) for k in joints if k is not j)

    target = max(joints, key=isolation)
    view.page.mouse.move(target["x"], target["y"])
    tooltip.wait_for(state="visible", timeout=2000)
    assert tooltip.inner_text() == target["name"]
    assert view.js("window.skelanimViewer.hoveredJoint()") == target["name"]
    view.screenshot("hover")
    view.page.mouse.move(5, VIEWPORT["height"] // 2)
    tooltip.wait_for(state="hidden", timeout=2000)


def test_two_motions_side_by_side_and_overlaid(open_viewer: Callable[..., ViewerPage]) -> None:
    from skelanim.io import load

    walk, run = load(sample_path("walk")), load(sample_path("run"))
    view = open_viewer(build_viewer_html([walk, run], labels=["walk", "run"]))
    api = "window.skelanimViewer"
    assert view.js(f"{api}.layout") == "side"
    assert view.js(f"{api}.frameCount") >= max(walk.num_frames, run.num_frames) - 1
    root_a = view.js(f"{api}.jointWorldPositions(0)")[0]
    root_b = view.js(f"{api}.jointWorldPositions(1)")[0]
    apart = math.hypot(root_a["x"] - root_b["x"], root_a["z"] - root_b["z"])
    assert apart > 0.5, "side by side: the figures stand apart"
    side = view.screenshot("side_by_side")
    legend = view.page.inner_text("#skelanim-legend")
    assert "walk" in legend and "run" in legend
    # the help line clear of the legend (an audit: at 900 x 600 a long legend had run into it, top right)
    boxes = [view.page.locator(f"#skelanim-{part}").bounding_box() for part in ("legend", "help")]
    assert boxes[0] and boxes[1] and boxes[0]["y"] + boxes[0]["height"] <= boxes[1]["y"]
    view.page.select_option("#skelanim-layout", "overlay")
    assert view.js(f"{api}.layout") == "overlay"
    root_a = view.js(f"{api}.jointWorldPositions(0)")[0]
    root_b = view.js(f"{api}.jointWorldPositions(1)")[0]
    assert abs(root_a["x"] - root_b["x"]) < 1e-3 and abs(root_a["z"] - root_b["z"]) < 1e-3
    assert changed_fraction(side, view.screenshot("overlay")) > 0.002
    # Hovering tells which motion the joint belongs to.
    joints = view.js(f"{api}.jointScreenPositions(1)")
    head = max(joints, key=lambda j: -j["y"])
    view.page.mouse.move(head["x"], head["y"])
    view.page.locator("#skelanim-tooltip").wait_for(state="visible", timeout=2000)
    assert " \u2014 " in view.page.inner_text("#skelanim-tooltip")
    assert view.errors == []


def test_overlay_flag_starts_overlaid(open_viewer: Callable[..., ViewerPage]) -> None:
    motion = synthetic_motion(20)
    view = open_viewer(build_viewer_html([motion, motion], overlay=True))
    assert view.js("window.skelanimViewer.layout") == "overlay"
    a, b = view.js("[0, 1].map(i => window.skelanimViewer.jointWorldPositions(i).map(p => [p.x, p.y, p.z]))")
    assert np.allclose(a, b)


# --------------------------------------------------------------------------- real files
def test_large_rig_plays(open_viewer: Callable[..., ViewerPage], mocap_dir: Path, tmp_path: Path) -> None:
    """The 100-joint CC rig (with 41 End Sites, 1376 frames) loads and its frames advance while playing."""
    from skelanim.cli import main

    source = mocap_dir / LARGE_RIG
    out = tmp_path / "rig.html"
    assert main(["view", str(source), "-o", str(out)]) == 0
    size = out.stat().st_size
    assert size < 4_000_000, f"{size:,} bytes"
    view = open_viewer(out.read_text(encoding="utf-8"), query="", name="rig")
    api = "window.skelanimViewer"
    assert view.js(f"{api}.frameCount") == 1376
    assert view.js(f"{api}.motions[0].points") == 141
    assert view.js(f"{api}.isPlaying()")
    start = view.js(f"{api}.frame")
    view.page.wait_for_timeout(1200)
    assert view.js(f"{api}.frame") != start
    view.js(f"{api}.pause(); {api}.setFrame(600)")
    view.screenshot("cc_rig_frame600")
    joints = view.js(f"{api}.jointScreenPositions(0)")
    ys = [j["y"] for j in joints]
    assert max(ys) - min(ys) > 150, "the figure fills a sensible part of the view"
    assert all(j["visible"] for j in joints), "the camera keeps the figure in view"
    head = next(j for j in joints if j["name"] == "CC_Base_Head")
    view.page.mouse.move(head["x"], head["y"])
    view.page.locator("#skelanim-tooltip").wait_for(state="visible", timeout=2000)
    assert view.page.inner_text("#skelanim-tooltip").startswith("CC_Base_")
    assert view.errors == []


def test_real_bvh_pair_side_by_side(open_viewer: Callable[..., ViewerPage], mocap_dir: Path) -> None:
    from skelanim.io import load

    first = load(mocap_dir / BANDAI)
    second = load(mocap_dir / "cmu_iclone_ccrig/002_01.bvh")
    view = open_viewer(build_viewer_html([first, second], labels=["bandai", "cc rig"]), name="pair")
    api = "window.skelanimViewer"
    view.js(f"{api}.setFrame(40)")
    view.screenshot("bandai_and_ccrig")
    for index in (0, 1):
        world = view.js(f"{api}.jointWorldPositions({index})")
        heights = [p["y"] for p in world]
        assert 1.2 < max(heights) - min(heights) < 2.3, "both figures are shown at human size in metres"
    assert view.errors == []


@pytest.mark.parametrize(("relative", "carrier", "body"), [(BANDAI, "joint_Root", "Hips"),
                                                            ("cmu_iclone_ccrig/002_01.bvh", "RL_BoneRoot", "CC_Base_Hip")])
def test_the_viewer_shows_the_body_not_the_joints_that_carry_it(mocap_dir: Path, relative: str, carrier: str,
                                                                  body: str) -> None:
    """Bandai's static joint_Root at the origin (metres from the walk) and the rig's RL_BoneRoot on the floor are no
    body parts: left out, the body's pelvis is the first point (what the page follows) and sits above the origin."""
    from skelanim.io import load

    motion = load(mocap_dir / relative)[:40]
    payload = viewer.motion_payload(motion, name="x")
    assert carrier not in payload["names"] and payload["names"][0] == body and payload["parents"][0] == -1
    pos = decode_payload(payload)
    assert np.abs(pos[0, 0, [0, 2]]).max() < 1e-3  # the pelvis above the origin at frame 0
    names = payload["names"]
    for point, parent in enumerate(payload["parents"]):  # every bone is one of the skeleton's, by name
        if parent >= 0 and not payload["end_site"][point]:
            child = motion.skeleton.index(names[point])
            assert int(motion.skeleton.parents[child]) == motion.skeleton.index(names[parent])
    spread = np.ptp(pos[0], axis=0)  # one body, not a body and a far-off carrier: about its own height across
    assert spread.max() < 1.2 * payload["height"]


def test_following_keeps_overlaid_figures_whose_paths_part_in_view(open_viewer: Callable[..., ViewerPage],
                                                                   mocap_dir: Path) -> None:  # fmt: skip
    """Following moved the camera with the figures' mean and never back: in an overlay of two Bandai walks one
    figure was wholly off the canvas in 79 of 195 frames (an audit's count). Now it backs off as they part."""
    from skelanim.io import load

    walks = [load(mocap_dir / f"bandai_namco_1/dataset-1_walk_{style}_001.bvh") for style in ("normal", "angry")]
    view = open_viewer(build_viewer_html(walks, overlay=True), name="overlay_follow")
    api = "window.skelanimViewer"
    view.js(f"{api}.pause(); {api}.setFollow(true)")
    out = 0
    for frame in range(0, min(m.num_frames for m in walks), 10):
        view.js(f"{api}.setFrame({frame})")
        out += not all(j["visible"] for index in (0, 1) for j in view.js(f"{api}.jointScreenPositions({index})"))
    assert out == 0
    assert view.errors == []
