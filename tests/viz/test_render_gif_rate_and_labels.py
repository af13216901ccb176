"""``skelanim render`` / :mod:`skelanim.viz.video`: a GIF's frame rate (at most 50: browsers play a 10 ms frame delay
as 100 ms), panel labels that stay inside their panel, the output checked before any file is read, and "1 frame"."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from cli_output import one_line_error  # tests/helpers
from PIL import Image

import skelanim
from skelanim.cli import main
from skelanim.core.motion import Motion
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError
from skelanim.viz import video

WALK = str(sample_path("walk"))
CMU_60FPS = "cmu_iclone_ccrig/002_03.bvh"  # 60 fps, 86 frames


@pytest.fixture(scope="module")
def walk() -> Motion:
    return skelanim.load(WALK)


def gif_durations_read_back(path: Path) -> list[int]:
    """Per-frame durations in ms of a GIF, decoded with Pillow."""
    with Image.open(path) as image:
        durations = []
        for k in range(image.n_frames):
            image.seek(k)
            durations.append(int(image.info["duration"]))
    return durations


# --------------------------------------------------------------------------- GIF frame rate
def test_render_gif_plays_at_the_clips_rate(capfd: pytest.CaptureFixture[str], mocap_files, tmp_path: Path) -> None:
    """A 60 fps clip: ``--fps 60`` to a GIF is one error suggesting 50 or .mp4 (it wrote delays of 20, 10, 20, 20,
    10 ms, and browsers play 10 ms as 100 ms: 2.7 times slow); at ``--fps 50`` and at the default every frame lasts
    the same (to the centisecond of rounding), at least 20 ms, and the frames add up to the clip's duration."""
    (path,) = mocap_files([CMU_60FPS])
    motion = skelanim.load(path)
    assert motion.fps == pytest.approx(60.0)
    too_fast = tmp_path / "fast.gif"
    code = main(["render", str(path), "-o", str(too_fast), "--fps", "60", "--size", "48x32", "--no-progress"])
    one_line_error(capfd, code, "fast.gif", "--fps 60", "--fps 50", ".mp4")
    assert list(tmp_path.iterdir()) == []
    for fps in ("50", None):  # the default is 30 fps (not the motion's 60), below the cap
        out = tmp_path / f"at_{fps}.gif"
        extra = ["--fps", fps] if fps else []
        assert main(["render", str(path), "-o", str(out), "--size", "48x32", "--no-progress", *extra]) == 0
        rate = float(fps or 30)
        assert f"at {rate:g} fps" in capfd.readouterr().out
        durations = np.array(gif_durations_read_back(out))
        assert len(durations) == video.frame_count([motion], rate)
        assert durations.min() >= 20 and durations.max() - durations.min() <= 10, sorted(set(durations))
        # the last frame is shown for one frame period past the clip's end
        assert abs(durations.sum() - (motion.duration * 1000 + 1000 / rate)) <= 10 + 1000 / rate


def test_render_video_refuses_a_gif_above_50_fps(walk: Motion, tmp_path: Path) -> None:
    """The library too: ``fps=60`` to a GIF is a :class:`ShapeError` before anything is written; an MP4 at 60 fps and
    a GIF at 50 are fine."""
    with pytest.raises(ShapeError, match=r"fps 60.*fps 50.*\.mp4"):
        video.render_video(walk[:5], tmp_path / "x.gif", fps=60, size=(32, 24))
    assert os.listdir(tmp_path) == []
    video.render_video(walk[:5], tmp_path / "ok.gif", fps=video.MAX_GIF_FPS, size=(32, 24))
    video.render_video(walk[:5], tmp_path / "ok.mp4", fps=60, size=(32, 24))
    assert set(gif_durations_read_back(tmp_path / "ok.gif")) == {20}


# --------------------------------------------------------------------------- labels
LONG = "a_rather_long_motion_file_name_that_cannot_fit_in_its_panel_{}"


def test_fit_text_shortens_with_an_ellipsis_to_the_width() -> None:
    font = video._font(24)
    text = "frame 123  " + LONG.format(1)
    for width in (400.0, 200.0, 130.0, 60.0):
        short = video.fit_text(text, font, width)
        assert font.getlength(short) <= width and font.getbbox(short)[2] <= width
        assert short.endswith("\u2026") and text.startswith(short[:-1].rstrip())
    assert video.fit_text(text, font, 130.0).startswith("frame 123")
    assert video.fit_text("frame 1", font, 1000.0) == "frame 1"
    assert video.fit_text(text, font, 2.0) == ""


def test_side_by_side_labels_stay_in_their_panel(walk: Motion) -> None:
    """Three panels named with long file names: a long name changes pixels of its own panel only (it ran into the
    next panel and hid the digits of its frame number), and the frame number comes first."""
    size = (480, 96)  # panels of 160 pixels
    clip = walk[:3]

    def first_frame(labels: list[str]) -> np.ndarray:
        return next(iter(video.render_frames([clip] * 3, fps=10, size=size, labels=labels))).astype(int)

    short = first_frame(["a", "b", "c"])
    long = first_frame([LONG.format(1), LONG.format(2), "c"])
    changed = np.flatnonzero((np.abs(long - short).max(axis=-1) > 0).any(axis=0))
    assert len(changed) and changed.max() < 2 * 160, changed  # panel 3 untouched
    first, second = changed[changed < 160], changed[changed >= 160]
    assert len(first) and len(second)  # both labels drawn, each inside its own panel
    only_first = first_frame([LONG.format(1), "b", "c"])
    changed = np.flatnonzero((np.abs(only_first - short).max(axis=-1) > 0).any(axis=0))
    assert len(changed) and changed.max() < 160, changed


# --------------------------------------------------------------------------- checks before work, and wording
def test_render_refuses_a_bad_output_before_reading_the_files(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``-o a.xyz`` (or an odd-sized MP4, a GIF at 60 fps) is refused before the input is read: the error names the
    output even where the input does not exist (it had loaded and drawn the file first)."""
    missing = str(tmp_path / "missing.bvh")
    for args, needle in (
        (["-o", str(tmp_path / "a.xyz")], "a.xyz"),
        (["-o", str(tmp_path / "a.mp4"), "--size", "97x64"], "even"),
        (["-o", str(tmp_path / "a.gif"), "--fps", "60"], "--fps 50"),
    ):
        line = one_line_error(capfd, main(["render", missing, "--no-progress", *args]), needle)
        assert "missing.bvh" not in line
    assert list(tmp_path.iterdir()) == []


def test_render_of_one_frame_says_1_frame(capfd: pytest.CaptureFixture[str], walk: Motion, tmp_path: Path) -> None:
    one = tmp_path / "one.txt"
    skelanim.save(walk[:1], one)
    out = tmp_path / "one.gif"
    assert main(["render", str(one), "-o", str(out), "--size", "32x24", "--no-progress"]) == 0
    said = capfd.readouterr().out
    assert "(1 frame," in said, said
    assert len(gif_durations_read_back(out)) == 1
