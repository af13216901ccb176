"""The commands that draw, stream or solve (view, plot, render, recognize, ik, stream, record, retarget export)
against independent sources: the library called directly with the same arguments, the written file read back with
another reader (Pillow, onnxruntime, a UDP socket).

Each test here was seen to fail with a small change to ``src/skelanim/cli`` that the other CLI tests let pass (a
mutation audit): an option not passed through to the library, a default changed, a page written in place.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_output import run_cli as run  # tests/helpers
from vmc_take import record_while_sending  # tests/helpers

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path

CMU = "cmu_cgspeed_mb/01_01.bvh"
BANDAI_WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"

# --- view: the page is the library's page for the same options ------------------------------------------------------


def test_view_passes_its_options_to_the_page(tmp_path: Path, capsys):
    """``view --stride 3 --max-frames 5 --overlay --no-autoplay`` writes the page that ``build_viewer_html`` makes
    of the same files with the same arguments (called directly here), and not the default page."""
    from skelanim.viz.viewer import build_viewer_html, load_for_viewer

    files = [str(sample_path("walk")), str(sample_path("run"))]
    out = tmp_path / "page.html"
    code, stdout, err = run(["view", *files, "-o", str(out), "--stride", "3", "--max-frames", "5", "--overlay",
                             "--no-autoplay"], capsys)  # fmt: skip
    assert code == 0, err
    motions, labels = load_for_viewer(files)
    expected = build_viewer_html(motions, labels=labels, sources=files, overlay=True, autoplay=False, stride=3,
                                 max_frames=5)  # fmt: skip
    default = build_viewer_html(motions, labels=labels, sources=files)
    page = out.read_text(encoding="utf-8")
    assert page == expected != default
    assert stdout.strip() == f"wrote {out} (2 motions, {out.stat().st_size / 1e6:.1f} MB)"  # the size on disk


def test_view_leaves_no_page_when_writing_it_fails(tmp_path: Path, monkeypatch):
    """A page that cannot be written (here: text UTF-8 cannot encode) leaves no file behind, not an empty or
    half-written page."""
    from skelanim.viz import viewer

    monkeypatch.setattr(viewer, "build_viewer_html", lambda *a, **k: "<!doctype html>" + "x" * 100_000 + "\ud800")
    with pytest.raises(UnicodeEncodeError):
        main(["view", str(sample_path("walk")), "-o", str(tmp_path / "page.html")])
    assert list(tmp_path.iterdir()) == []


def test_view_says_the_page_size_in_megabytes(mocap_dir: Path, tmp_path: Path, capsys):
    """The summary gives the page's size on disk in MB (10^6 bytes), for a page large enough that MiB would read
    otherwise."""
    out = tmp_path / "page.html"
    code, stdout, err = run(["view", str(mocap_dir / CMU), "-o", str(out)], capsys)
    assert code == 0, err
    size = out.stat().st_size
    assert f"{size / 1e6:.1f}" != f"{size / 2**20:.1f}"  # the page tells the two apart
    assert stdout.strip() == f"wrote {out} (1 motion, {size / 1e6:.1f} MB)"


def test_view_writes_viewer_html_by_default(tmp_path: Path, capsys, monkeypatch):
    """No options: ``viewer.html`` in the current folder, the page ``build_viewer_html`` makes with its own defaults
    (every frame, side by side, playing)."""
    from skelanim.viz.viewer import build_viewer_html, load_for_viewer

    monkeypatch.chdir(tmp_path)
    files = [str(sample_path("walk"))]
    code, stdout, err = run(["view", *files], capsys)
    assert code == 0, err
    motions, labels = load_for_viewer(files)
    page = (tmp_path / "viewer.html").read_text(encoding="utf-8")
    assert page == build_viewer_html(motions, labels=labels, sources=files)
    assert (tmp_path / "viewer.html").is_file() and stdout.startswith("wrote viewer.html (1 motion, ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["viewer.html"]  # no temporary file left beside it


# --- plot and render: the options reach the image and the video -----------------------------------------------------


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image

    with Image.open(path) as image:
        return image.size


def test_plot_dpi_sets_the_pixels_per_inch(tmp_path: Path, capsys):
    """A PNG drawn at ``--dpi 50`` is the figure's size in inches times 50 (the figure made directly by
    ``plot_motions``), half the default 100 dpi's, read back with PIL."""
    from skelanim.viz.plots import plot_motions

    walk = sample_path("walk")
    fig = plot_motions([skelanim.load(walk)], "trajectories", None, labels=["walk"])
    inches = fig.get_size_inches()
    sizes = {}
    for dpi in ("50", None):
        out = tmp_path / f"at_{dpi}.png"
        code, _, err = run(["plot", str(walk), "-o", str(out), *(["--dpi", dpi] if dpi else [])], capsys)
        assert code == 0, err
        sizes[dpi] = _image_size(out)
    assert sizes["50"] == pytest.approx(tuple(inches * 50), abs=1)
    assert sizes[None] == pytest.approx(tuple(inches * 100), abs=1)


@pytest.fixture
def short_clips(tmp_path: Path) -> list[Path]:
    """The first 4 frames of the bundled walk and run, as BVH files named walk.bvh and run.bvh."""
    paths = []
    for name in ("walk", "run"):
        path = tmp_path / f"{name}.bvh"
        skelanim.save(skelanim.load(sample_path(name))[:4], path)
        paths.append(path)
    return paths


def _gif_frames(path: Path) -> list[np.ndarray]:
    from PIL import Image

    frames = []
    with Image.open(path) as image:
        for k in range(image.n_frames):
            image.seek(k)
            frames.append(np.asarray(image.convert("RGB")).copy())
    return frames


def test_render_default_size_is_640_by_480(short_clips: list[Path], tmp_path: Path, capsys):
    out = tmp_path / "default.gif"
    code, stdout, err = run(["render", str(short_clips[0]), "-o", str(out), "--no-progress"], capsys)
    assert code == 0, err
    assert _image_size(out) == (640, 480)
    assert stdout.strip() == f"wrote {out} (4 frames, 640x480 at 30 fps)"


def test_render_passes_overlay_and_labels_to_the_library(short_clips: list[Path], tmp_path: Path, capsys):
    """``render A B --overlay`` writes, frame for frame, what ``render_video`` writes called directly with the same
    motions, labels (the file stems), size, rate and ``overlay=True`` (read back with PIL); side by side differs."""
    from skelanim.viz import video

    motions = [skelanim.load(p) for p in short_clips]
    for overlay in (True, False):
        out = tmp_path / f"cli_{overlay}.gif"
        argv = ["render", *map(str, short_clips), "-o", str(out), "--size", "96x64", "--fps", "30", "--no-progress"]
        code, _, err = run(argv + (["--overlay"] if overlay else []), capsys)
        assert code == 0, err
        direct = tmp_path / f"direct_{overlay}.gif"
        video.render_video(motions, direct, fps=30.0, size=(96, 64), overlay=overlay, labels=["walk", "run"],
                           progress=False)  # fmt: skip
        cli_frames, direct_frames = _gif_frames(out), _gif_frames(direct)
        assert len(cli_frames) == len(direct_frames) == 4
        for a, b in zip(cli_frames, direct_frames, strict=True):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(_gif_frames(tmp_path / "cli_True.gif")[0], _gif_frames(tmp_path / "cli_False.gif")[0])


def test_render_labels_files_of_one_name_by_their_folder(tmp_path: Path, capsys):
    """Two files named walk.bvh in folders a and b are labelled ``a/walk`` and ``b/walk`` in the video (what
    ``render_video`` draws called directly with those labels), not twice ``walk``."""
    from skelanim.viz import video

    short = skelanim.load(sample_path("walk"))[:2]
    paths = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "walk.bvh")
        skelanim.save(short, paths[-1])
    out = tmp_path / "cli.gif"
    code, _, err = run(["render", *map(str, paths), "-o", str(out), "--size", "320x120", "--no-progress"], capsys)
    assert code == 0, err
    motions = [skelanim.load(p) for p in paths]
    expected, same = tmp_path / "direct.gif", tmp_path / "same.gif"
    video.render_video(motions, expected, fps=30.0, size=(320, 120), labels=["a/walk", "b/walk"], progress=False)
    video.render_video(motions, same, fps=30.0, size=(320, 120), labels=["walk", "walk"], progress=False)
    cli_frames = _gif_frames(out)
    for a, b in zip(cli_frames, _gif_frames(expected), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(cli_frames[0], _gif_frames(same)[0])


def _png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")).copy()


def test_plot_poses_count_is_the_librarys_strip_of_that_many(tmp_path: Path, capsys):
    """``plot --kind poses --count 3`` draws what ``plot_motions(..., count=3)`` draws (called directly, saved at the
    same dpi, both read back with PIL), which is not the default strip of 8."""
    from skelanim.viz.plots import plot_motions, save_figure

    walk = sample_path("walk")
    out = tmp_path / "cli.png"
    code, _, err = run(["plot", str(walk), "-o", str(out), "--kind", "poses", "--count", "3", "--dpi", "40"], capsys)
    assert code == 0, err
    motions = [skelanim.load(walk)]
    for count, name in ((3, "three.png"), (None, "default.png")):
        save_figure(plot_motions(motions, "poses", None, labels=["walk"], count=count), tmp_path / name, dpi=40)
    drawn, three, default = _png(out), _png(tmp_path / "three.png"), _png(tmp_path / "default.png")
    np.testing.assert_array_equal(drawn, three)
    assert drawn.shape != default.shape or not np.array_equal(drawn, default)


def test_plot_legend_names_files_of_one_name_by_their_folder(tmp_path: Path, capsys):
    """``plot a/walk.bvh b/walk.bvh`` draws the trajectories of ``plot_motions`` labelled ``a/walk`` and ``b/walk``
    (the figure made directly, both PNGs read back with PIL), not the library's own labels for them."""
    from skelanim.viz.plots import plot_motions, save_figure

    walk = skelanim.load(sample_path("walk"))
    files = []
    for folder, motion in (("a", walk), ("b", walk[10:])):
        (tmp_path / folder).mkdir()
        files.append(tmp_path / folder / "walk.bvh")
        skelanim.save(motion, files[-1])
    out = tmp_path / "cli.png"
    code, _, err = run(["plot", *map(str, files), "-o", str(out), "--dpi", "40"], capsys)
    assert code == 0, err
    motions = [skelanim.load(f) for f in files]
    for labels, name in ((["a/walk", "b/walk"], "named.png"), (None, "unnamed.png")):
        save_figure(plot_motions(motions, "trajectories", None, labels=labels), tmp_path / name, dpi=40)
    drawn = _png(out)
    np.testing.assert_array_equal(drawn, _png(tmp_path / "named.png"))
    assert not np.array_equal(drawn, _png(tmp_path / "unnamed.png"))


# --- recognize: the JSON is the recogniser's own answer --------------------------------------------------------------


def test_recognize_json_is_the_recognisers_answer_with_its_stride(mocap_dir: Path, capsys):
    """``recognize FILE --windows --stride 16 --top 2 --json`` against ``Recognizer.recognize_motions`` called
    directly with stride 16: the file's content and probability are the most probable class's, windows start 16
    frames (at the model's rate) apart, and none ends after the clip."""
    import torch

    from skelanim.learn.recognize import Recognizer

    path = mocap_dir / "bandai_namco_1/dataset-1_walk_happy_001.bvh"
    code, out, err = run(["recognize", str(path), "--windows", "--stride", "16", "--top", "2", "--json"], capsys)
    assert code == 0, err
    (entry,) = json.loads(out)["files"]
    rec = Recognizer.load(None)
    motion = skelanim.load(path)
    direct = rec.recognize_motions([motion], stride=16)
    probs = direct["probs"][0]
    best = int(torch.argmax(probs))
    assert entry["content"] == rec.contents.names[best] == entry["top"][0][0]
    assert entry["probability"] == pytest.approx(float(probs[best]), abs=1e-4) == entry["top"][0][1]
    assert len(entry["top"]) == 2 and entry["top"][1][1] <= entry["top"][0][1]
    starts = [w["start_s"] for w in entry["windows"]]
    assert len(starts) == len(direct["windows"]) >= 2
    assert np.diff(starts[:-1]) == pytest.approx(16 / rec.fps, abs=1e-3)  # the last one ends with the clip
    assert max(w["end_s"] for w in entry["windows"]) == pytest.approx(motion.num_frames / motion.fps, abs=1e-3)  # F / fps


def test_recognize_a_clip_shorter_than_a_window_ends_where_the_clip_does(mocap_dir: Path, tmp_path: Path, capsys):
    """A 1 s cut is one window (the model's is longer, padded by holding the last pose): it starts at 0 and ends at
    the clip's end, its 30 frames' span at 30 fps = 1.0 s by hand (a window is [start, start + its length), cut at
    the clip's span F / fps), not a window's length after its start."""
    short = tmp_path / "short.bvh"
    skelanim.save(skelanim.load(mocap_dir / "bandai_namco_1/dataset-1_walk_happy_001.bvh")[:30], short)
    code, out, err = run(["recognize", str(short), "--windows", "--json"], capsys)
    assert code == 0, err
    (window,) = json.loads(out)["files"][0]["windows"]
    assert window["start_s"] == 0.0 and window["end_s"] == pytest.approx(30 / 30, abs=1e-3)


# --- ik eval: --noise and --seed reach the evaluation, and the JSON says the noise as given --------------------------


def test_ik_eval_json_is_the_evaluation_of_the_given_noise_and_seed(mocap_dir: Path, capsys):
    """``ik eval --noise 0.01 --seed 3 --json``: ``noise`` is 0.01 (a fraction, as given), and the accuracy is
    ``skelanim.ik.evaluate.evaluate`` called directly with noise 0.01 and seed 3 (another seed gives another one)."""
    from skelanim.ik.evaluate import evaluate
    from skelanim.ik.solve import IKModel

    data = [str(mocap_dir / "bandai_namco_1/dataset-1_walk_angry_001.bvh")]
    code, out, err = run(["ik", "eval", "--data", data[0], "--methods", "swing_mean", "--max-frames", "16",
                          "--noise", "0.01", "--seed", "3", "--json"], capsys)  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert report["noise"] == 0.01 and report["frames"] == 16
    model = IKModel.load(None)
    direct = evaluate(data, model, methods=["swing_mean"], noise=0.01, max_frames=16, seed=3, timing=False)
    other_seed = evaluate(data, model, methods=["swing_mean"], noise=0.01, max_frames=16, seed=0, timing=False)
    mpjpe = report["methods"]["swing_mean"]["mpjpe"]
    assert mpjpe == pytest.approx(direct["methods"]["swing_mean"]["mpjpe"], rel=1e-6)
    assert mpjpe != pytest.approx(other_seed["methods"]["swing_mean"]["mpjpe"], rel=1e-6)


# --- stream: --up and --speed reach what is sent ---------------------------------------------------------------------


def _receiver():
    import socket

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(10)
    return sock


def _first_hips(sock) -> list[float]:
    """The first ``/VMC/Ext/Bone/Pos`` message's position (the hips), parsed with python-osc."""
    from pythonosc.osc_packet import OscPacket

    while True:
        data, _ = sock.recvfrom(65536)
        for timed in OscPacket(data).messages:
            if timed.message.address == "/VMC/Ext/Bone/Pos":
                return list(timed.message.params[1:4])


def test_stream_up_option_is_the_encoders_up(mocap_dir: Path, capsys):
    """``stream --up -y`` sends what ``avatar_frames(motion, up=(1, -1.0))`` makes (called directly): the hips of
    the first frame; ``+y`` is the other answer."""
    from skelanim.serve.vmc import avatar_frames

    src = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    motion = skelanim.load(src)
    for up, direction in (("-y", (1, -1.0)), ("y", (1, 1.0))):
        sock = _receiver()
        try:
            code = main(["stream", str(src), "--port", str(sock.getsockname()[1]), "--frames", "1", "--up", up,
                         "--no-progress"])  # fmt: skip
            assert code == 0, capsys.readouterr()
            arrived = np.array(_first_hips(sock))
        finally:
            sock.close()
        expected = avatar_frames(motion, up=direction).positions[0, 0].numpy()
        np.testing.assert_allclose(arrived, expected, atol=1e-5)
    flipped = avatar_frames(motion, up=(1, -1.0)).positions[0, 0].numpy()
    assert np.abs(flipped - avatar_frames(motion, up=(1, 1.0)).positions[0, 0].numpy()).max() > 0.1


def _bones_of_one_frame(sock) -> dict[str, np.ndarray]:
    """Every ``/VMC/Ext/Bone/Pos`` of the first frame (until its ``/VMC/Ext/T``): bone name to position and
    rotation, parsed with python-osc."""
    from pythonosc.osc_packet import OscPacket

    bones: dict[str, np.ndarray] = {}
    while True:
        data, _ = sock.recvfrom(65536)
        done = False
        for timed in OscPacket(data).messages:
            if timed.message.address == "/VMC/Ext/Bone/Pos":
                bones[timed.message.params[0]] = np.array(timed.message.params[1:], dtype=float)
            done = done or timed.message.address == "/VMC/Ext/T"
        if done:
            return bones


def test_stream_map_option_is_the_mapping_sent(mocap_dir: Path, tmp_path: Path, capsys):
    """``stream --map FILE`` sends the bones that ``avatar_frames(motion, mapping=FILE)`` makes (sent here directly
    with ``AvatarStream``): a mapping that swaps the legs sends other leg rotations than the names' own mapping."""
    from skelanim.serve.vmc import AvatarStream, avatar_frames

    src = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    mapping = tmp_path / "swapped.json"
    mapping.write_text(json.dumps({"l_upleg": "right_hip", "l_leg": "right_knee", "l_foot": "right_ankle",
                                   "r_upleg": "left_hip", "r_leg": "left_knee", "r_foot": "left_ankle"}))  # fmt: skip
    sock = _receiver()
    try:
        code = main(["stream", str(src), "--port", str(sock.getsockname()[1]), "--frames", "1", "--map", str(mapping),
                     "--no-progress"])  # fmt: skip
        assert code == 0, capsys.readouterr()
        sent = _bones_of_one_frame(sock)
        motion = skelanim.load(src)
        direct = {}
        for name, mapped in (("mapped", mapping), ("names", None)):
            with AvatarStream("127.0.0.1", sock.getsockname()[1]) as sender:
                sender.send(avatar_frames(motion, mapping=mapped), 0, 0.0)
            direct[name] = _bones_of_one_frame(sock)
    finally:
        sock.close()
    assert set(sent) == set(direct["mapped"])
    for bone, values in sent.items():
        np.testing.assert_allclose(values, direct["mapped"][bone], atol=1e-6, err_msg=bone)
    assert np.abs(sent["LeftUpperLeg"] - direct["names"]["LeftUpperLeg"]).max() > 0.1


def test_stream_speed_slows_the_playback(mocap_dir: Path, capsys):
    """3 frames of a 30 fps clip at ``--speed 0.25`` arrive over at least 2 / 30 / 0.25 = 0.267 s (at the real
    speed they would take 0.067 s), timed where they arrive: a lower bound, which a busy machine cannot break."""
    import threading
    import time

    from pythonosc.osc_packet import OscPacket

    src = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    fps = skelanim.load(src).fps
    sock = _receiver()
    arrivals: list[float] = []

    def listen() -> None:
        while len(arrivals) < 3:
            data, _ = sock.recvfrom(65536)
            if any(t.message.address == "/VMC/Ext/T" for t in OscPacket(data).messages):
                arrivals.append(time.perf_counter())

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    try:
        code = main(["stream", str(src), "--port", str(sock.getsockname()[1]), "--frames", "3", "--speed", "0.25",
                     "--no-progress"])  # fmt: skip
        listener.join(10)
    finally:
        sock.close()
    assert code == 0 and "sent 3 frames" in capsys.readouterr().out
    assert len(arrivals) == 3
    assert arrivals[-1] - arrivals[0] >= 2 / fps / 0.25 * 0.9


# --- ik solve: --refine reaches the solver ----------------------------------------------------------------------------


def test_ik_solve_refine_is_the_refined_solve(mocap_dir: Path, tmp_path: Path, capsys):
    """``ik solve --refine`` writes what ``skelanim.ik.solve(..., refine=True)`` gives called directly (positions
    of the BVH read back), says ``method gat_refined``, and is not the unrefined answer."""
    from skelanim.ik.solve import IKModel, solve
    from skelanim.io.positions import JointPositions

    motion = skelanim.load(mocap_dir / "bandai_namco_1/dataset-1_walk_angry_001.bvh")[:12]
    src = tmp_path / "pos.npz"
    skelanim.save(JointPositions.from_motion(motion), src)
    out = tmp_path / "refined.bvh"
    code, stdout, err = run(["ik", "solve", str(src), "-o", str(out), "--refine"], capsys)
    assert code == 0, err
    assert stdout.strip().endswith("method gat_refined)")
    model = IKModel.load(None)
    data = skelanim.load_positions(src)
    solved = solve(data, model, refine=True, source=src)
    refined = solved.positions().numpy()
    plain = solve(data, model, refine=False, source=src).positions().numpy()
    back = skelanim.load(out)
    written = back.positions().numpy()[:, [back.skeleton.index(n) for n in solved.skeleton.names]]
    np.testing.assert_allclose(written, refined, atol=1e-3)  # cm; the BVH keeps 6 decimals
    assert np.abs(plain - refined).max() > 1e-2


def test_record_writes_at_the_fps_asked_for(mocap_dir: Path, tmp_path: Path, capsys):
    """``record --fps 60``: the written BVH's ``Frame Time`` is 1/60 s (read from its text) and the summary says 60
    fps; the sender's clock runs at 30 fps."""
    from skelanim.serve.vmc import avatar_frames

    out = tmp_path / "take.bvh"
    frames = avatar_frames(skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_walk.txt"))
    options = ["--frames", "6", "--wait", "30", "--fps", "60", "--no-progress"]
    assert record_while_sending(main, out, frames, options, pause=0.02) == 0
    frame_time = float(re.search(r"^Frame Time:\s*(\S+)", out.read_text(), flags=re.MULTILINE).group(1))
    assert frame_time == pytest.approx(1 / 60, rel=1e-5)
    assert " at 60 fps from " in capsys.readouterr().out


# --- retarget export: float32 unless asked ----------------------------------------------------------------------------


def test_retarget_export_writes_float32_by_default(mocap_dir: Path, tmp_path: Path, capsys):
    """The streamed retargeter is float32 (what engines take) unless ``--dtype float64``: every input and output of
    the ONNX file, as onnxruntime reads it."""
    import onnxruntime as ort

    src, to = tmp_path / "bandai.bvh", tmp_path / "cmu.bvh"
    skelanim.save(skelanim.load(mocap_dir / BANDAI_WALK)[:10], src)
    skelanim.save(skelanim.load(mocap_dir / CMU)[:10], to)
    out = tmp_path / "step.onnx"
    code, stdout, err = run(
        ["retarget", "export", str(src), "--to", str(to), "-o", str(out), "--method", "copy"], capsys
    )
    assert code == 0, err
    assert "(method copy, float32," in stdout
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    types = {a.type for a in [*session.get_inputs(), *session.get_outputs()]}
    assert "tensor(float)" in types and "tensor(double)" not in types
