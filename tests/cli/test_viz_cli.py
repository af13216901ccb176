"""``skelanim plot``, ``render`` and ``gait``: exit codes, outputs, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from needs import missing_data
from PIL import Image

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path
from skelanim.metrics.gait import gait_analysis

WALK = str(sample_path("walk"))
RUN = str(sample_path("run"))
JUMP = str(sample_path("jump"))


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def long_walk_file(tmp_path_factory: pytest.TempPathFactory, looped_walk) -> Path:
    """The bundled walk looped 4 times, saved as a DeepMimic clip (a walk with several gait cycles)."""
    path = tmp_path_factory.mktemp("walk") / "long_walk.txt"
    skelanim.save(looped_walk(4), path)
    return path


@pytest.mark.parametrize("kind", ["trajectories", "angles", "contacts", "poses"])
def test_plot_every_kind(capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str) -> None:
    out = tmp_path / f"{kind}.png"
    code, stdout, err = run_cli(capsys, "plot", WALK, RUN, "--kind", kind, "-o", out)
    assert code == 0, err
    assert f"wrote {out}" in stdout and "2 motions" in stdout
    image = np.asarray(Image.open(out).convert("L"))
    assert image.shape[0] > 100 and (image < 200).mean() > 0.005


def test_plot_named_joints_repeated_or_comma_separated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    a, b = tmp_path / "a.png", tmp_path / "b.png"
    assert run_cli(capsys, "plot", WALK, "-j", "left_knee", "-j", "right_knee", "--kind", "angles", "-o", a)[0] == 0
    assert run_cli(capsys, "plot", WALK, "-j", "left_knee,right_knee", "--kind", "angles", "-o", b)[0] == 0
    assert np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(b)))
    c = tmp_path / "c.png"
    assert run_cli(capsys, "plot", WALK, "-j", "left_elbow", "--kind", "angles", "-o", c)[0] == 0
    assert not np.array_equal(np.asarray(Image.open(a)), np.asarray(Image.open(c)))


def test_plot_unknown_joints_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    code, _, err = run_cli(capsys, "plot", WALK, "-j", "LeftKnee,Tail", "-o", out)
    assert_one_line_error(code, err, "'LeftKnee'", "'Tail'", "available:", "left_knee")
    assert not out.exists()


def test_plot_bad_options_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "plot", WALK, "--kind", "histogram", "-o", tmp_path / "x.png")
    assert_one_line_error(code, err, "'histogram'", "trajectories")
    code, _, err = run_cli(capsys, "plot", WALK, "-o", tmp_path / "x.doc")
    assert_one_line_error(code, err, "x.doc", "png")
    code, _, err = run_cli(capsys, "plot", str(tmp_path / "missing.bvh"), "-o", tmp_path / "x.png")
    assert_one_line_error(code, err, "missing.bvh")
    assert list(tmp_path.iterdir()) == []


def test_empty_motion_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    empty = tmp_path / "empty.bvh"
    empty.write_text(
        "HIERARCHY\nROOT Hips\n{\n  OFFSET 0 0 0\n  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
        "Yrotation\n  End Site\n  {\n    OFFSET 0 1 0\n  }\n}\nMOTION\nFrames: 0\nFrame Time: 0.033333\n"
    )
    for args in (["plot", empty, "-o", tmp_path / "e.png"], ["render", empty, "-o", tmp_path / "e.gif"],
                 ["gait", empty]):
        code, _, err = run_cli(capsys, *args)
        assert_one_line_error(code, err, "empty.bvh", "frame")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.bvh"]


def test_render_gif_side_by_side_and_overlay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import imageio.v3 as iio

    walk = skelanim.load(WALK)
    run = skelanim.load(RUN)
    expected = int(np.floor(max(walk.duration, run.duration) * 10 + 1e-6)) + 1
    frames = {}
    for mode in ("side", "overlay"):
        out = tmp_path / f"{mode}.gif"
        extra = ["--overlay"] if mode == "overlay" else []
        code, stdout, err = run_cli(capsys, "render", WALK, RUN, "-o", out, "--fps", "10", "--size", "128x96",
                                    "--no-progress", *extra)
        assert code == 0, err
        assert f"{expected} frames, 128x96" in stdout
        frames[mode] = iio.imread(out, index=None)
        assert frames[mode].shape[:3] == (expected, 96, 128)
    assert np.abs(frames["side"].astype(int) - frames["overlay"].astype(int)).mean() > 1


def test_render_mp4_with_progress_bar(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import imageio_ffmpeg

    out = tmp_path / "walk.mp4"
    code, _, err = run_cli(capsys, "render", WALK, "-o", out, "--fps", "15", "--size", "96x64")
    assert code == 0, err
    assert "frame" in err  # tqdm on stderr
    n, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    nominal = (skelanim.load(WALK).num_frames - 1) / 30.0  # its Frame Time 0.033332 is 1/30 s rounded
    assert n == int(nominal * 15) + 1  # every frame kept: 38 periods of 1/30 s are 19 of 1/15 s, 20 frames


def test_render_bad_output_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "render", WALK, "-o", tmp_path / "x.mp4", "--size", "97x64")
    assert_one_line_error(code, err, "x.mp4", "even")
    code, _, err = run_cli(capsys, "render", WALK, "-o", tmp_path / "x.mp4", "--size", "big")
    assert_one_line_error(code, err, "WIDTHxHEIGHT")
    code, _, err = run_cli(capsys, "render", WALK, "-o", tmp_path / "x.mov")
    assert_one_line_error(code, err, "x.mov", ".mp4")
    assert list(tmp_path.iterdir()) == []


def test_gait_text_json_and_figure(capsys: pytest.CaptureFixture[str], tmp_path: Path, long_walk_file: Path) -> None:
    expected = gait_analysis(skelanim.load(long_walk_file))
    code, stdout, err = run_cli(capsys, "gait", long_walk_file)
    assert code == 0, err
    assert f"{expected.cadence:.1f} steps/min" in stdout and "stride length" in stdout
    code, stdout, _ = run_cli(capsys, "gait", long_walk_file, "--json")
    data = json.loads(stdout)
    assert data["cadence"] == pytest.approx(expected.cadence)
    assert data["stride_length"] == pytest.approx(expected.stride_length)
    assert data["file"] == str(long_walk_file)
    out = tmp_path / "report.png"
    code, stdout, _ = run_cli(capsys, "gait", long_walk_file, "-o", out)
    assert code == 0 and f"wrote {out}" in stdout
    assert (np.asarray(Image.open(out).convert("L")) < 200).mean() > 0.01


def test_gait_of_a_jump_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "gait", JUMP)
    assert_one_line_error(code, err, "jump.txt", "no gait cycles", "is this a walk")


def test_gait_on_a_real_walk(capsys: pytest.CaptureFixture[str], mocap_dir: Path) -> None:
    path = mocap_dir / "bandai_namco_1/dataset-1_walk_normal_001.bvh"
    if not path.exists():
        missing_data(f"{path} not present")
    code, stdout, err = run_cli(capsys, "gait", path, "--json")
    assert code == 0, err
    data = json.loads(stdout)
    assert 80 <= data["cadence"] <= 140 and data["num_cycles"] >= 4
    assert data["stride_length"] == pytest.approx(data["stride_length_per_height"] * data["height"])
