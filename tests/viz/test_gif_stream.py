"""GIFs are written as a stream: one frame at a time, memory flat in the clip's length, the same pictures and timing."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from skelanim.viz import video


def fake_frames(count: int, width: int, height: int, repeat: tuple[int, ...] = ()) -> Iterator[np.ndarray]:
    """Frames drawn without skelanim's renderer (fast and exact): a background, a moving box, a growing strip;
    frame ``k`` in ``repeat`` is frame ``k - 1`` again."""
    for k in range(count):
        shown = k - 1 if k in repeat else k
        f = np.full((height, width, 3), (246, 246, 244), np.uint8)
        y = (7 * shown) % (height - 20)
        f[y : y + 20, 10 : 10 + width // 4] = (40, 90, 200)
        f[height - 4 :, : (shown * 3) % width] = (200, 60, 40)
        yield f


def use_frames(monkeypatch: pytest.MonkeyPatch, frames: Iterator[np.ndarray]) -> None:
    monkeypatch.setattr(video, "render_frames", lambda motions, **kwargs: frames)


def read_gif(path: Path) -> tuple[list[np.ndarray], list[int]]:
    """Frames (RGB, composited as a viewer shows them) and per-frame durations in ms, read back with Pillow."""
    frames, durations = [], []
    with Image.open(path) as image:
        for k in range(image.n_frames):
            image.seek(k)
            durations.append(int(image.info["duration"]))
            frames.append(np.asarray(image.convert("RGB")))
    return frames, durations


PEAK_SCRIPT = (
    """
import resource, sys
from collections.abc import Iterator
import numpy as np
"""
    + inspect.getsource(fake_frames)
    + """
from skelanim.viz import video
count, width, height = (int(v) for v in sys.argv[1:4])
video.render_frames = lambda motions, **kwargs: fake_frames(count, width, height)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
video.render_video(None, sys.argv[4], fps=30, size=(width, height))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in kilobytes is Linux's")
def test_gif_peak_memory_does_not_grow_with_the_frame_count(tmp_path: Path) -> None:
    """A GIF of 120 frames peaks at about the memory of one of 20: frames are not gathered (holding them took
    more than a byte a pixel each: 100 more frames of 400 x 300 are 12 MB as palette indices alone)."""
    width, height = 400, 300

    def growth(count: int) -> float:
        out = tmp_path / f"{count}.gif"
        run = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(count), str(width), str(height), str(out)],
                             capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
        assert len(read_gif(out)[0]) == count
        return float(run.stdout.split()[-1]) * 1024  # bytes

    extra = growth(120) - growth(20)
    assert extra < 0.2 * 100 * width * height, f"peak memory grew by {extra / 2**20:.1f} MB for 100 more frames"


def test_gif_is_written_while_frames_are_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames reach the (temporary) file while later ones are still being drawn; the output appears at the end."""
    out = tmp_path / "stream.gif"
    written: list[int] = []

    def frames() -> Iterator[np.ndarray]:
        for k, frame in enumerate(fake_frames(60, 96, 64)):
            temps = [p for p in tmp_path.iterdir() if p.name != out.name]
            written.append(sum(p.stat().st_size for p in temps))
            assert not out.exists()
            yield frame

    use_frames(monkeypatch, frames())
    video.render_video(None, out, fps=30, size=(96, 64))
    assert written[0] == 0 and written[-1] > 0 and written[-1] > written[30] > 0
    assert [p.name for p in tmp_path.iterdir()] == [out.name]


def test_streamed_gif_shows_each_frame_with_its_duration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read back, every frame is the rendered one in the first frame's palette (patches and transparent pixels
    composited), repeated frames included, with the durations of :func:`gif_durations`."""
    count, width, height, repeat = 45, 80, 60, (10, 11, 30)
    use_frames(monkeypatch, fake_frames(count, width, height, repeat))
    out = tmp_path / "walk.gif"
    video.render_video(None, out, fps=30, size=(width, height))
    frames, durations = read_gif(out)
    assert durations == video.gif_durations(count, 30.0)
    expected = list(fake_frames(count, width, height, repeat))
    palette = video._gif_palette(Image.fromarray(expected[0]))
    for k, (got, want) in enumerate(zip(frames, expected, strict=True)):
        indexed = Image.fromarray(want).quantize(palette=palette, dither=Image.Dither.NONE)
        np.testing.assert_array_equal(got, np.asarray(indexed.convert("RGB")), err_msg=f"frame {k}")


def test_an_error_part_way_leaves_no_gif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def frames() -> Iterator[np.ndarray]:
        yield from fake_frames(12, 64, 48)
        raise RuntimeError("drawing failed")

    use_frames(monkeypatch, frames())
    with pytest.raises(RuntimeError, match="drawing failed"):
        video.render_video(None, tmp_path / "x.gif", fps=30, size=(64, 48))
    assert list(tmp_path.iterdir()) == []


def test_a_one_frame_gif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_frames(monkeypatch, fake_frames(1, 64, 48))
    out = tmp_path / "one.gif"
    video.render_video(None, out, fps=30, size=(64, 48))
    frames, durations = read_gif(out)
    assert len(frames) == 1 and durations == [30]


def test_a_gif_keeps_every_drawing_colour_of_an_overlay(mocap_files, tmp_path: Path) -> None:
    """The GIF palette came from frame 0 alone: an overlay whose figures were out of the first frame lost their
    colours, the right limbs' darker shade among them (an audit counted 0 dark-blue pixels at frame 60 against
    5,078 in the MP4), and left and right could not be told apart. Every flat drawing colour is now in the palette:
    after a first frame of bare background, each GIF frame holds the colours of the frame it was made from."""
    import skelanim

    walk, other = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh", "deepmimic/humanoid3d_walk.txt"])
    motions, _ = video.overlay_frame([skelanim.load(walk)[:70], skelanim.load(other)])
    drawn = list(video.render_frames(motions, fps=15, size=(240, 180), overlay=True))
    frames = [np.full_like(drawn[0], video.BACKGROUND), *drawn]
    path = tmp_path / "overlay.gif"
    video._write_gif(iter(frames), path, 15.0)
    got, _ = read_gif(path)
    # worked out by hand: left 0.4 of the way to white, right 0.3 of the way to black (tab10 blue and red)
    colours = [(121, 173, 210), (31, 119, 180), (22, 83, 126), (230, 125, 126), (214, 39, 40), (150, 27, 28)]
    for k in (1, len(frames) // 2, len(frames) - 1):
        for rgb in colours:
            made = int((frames[k] == rgb).all(-1).sum())
            kept = int((got[k] == rgb).all(-1).sum())
            assert made > 0 and kept >= 0.9 * made, (k, rgb, made, kept)
