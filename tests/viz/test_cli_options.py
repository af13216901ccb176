"""``skelanim plot`` / ``render`` on real files and bad option values: frame counts from the file header, GIF
timing read back with Pillow, one-line errors (exit 2, nothing written, no encoder output)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_output import one_line_error  # tests/helpers
from PIL import Image

from skelanim.cli import main
from skelanim.data.samples import sample_path

WALK = str(sample_path("walk"))


def test_plot_dpi_must_be_in_range(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for dpi in ("0", "-2", "20000"):  # the last would need gigabytes of raster
        code = main(["plot", WALK, "--dpi", dpi, "-o", str(tmp_path / "x.png")])
        one_line_error(capfd, code, "--dpi", "between 10 and 1200", dpi)
    assert list(tmp_path.iterdir()) == []


def test_bad_option_values_name_their_option(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--count 0``, ``--angle bogus`` and ``--size 0x0`` said "count ...", "angle ...", "size ..."."""
    one_line_error(capfd, main(["plot", WALK, "--kind", "poses", "--count", "0", "-o", str(tmp_path / "x.png")]), "--count")
    one_line_error(capfd, main(["plot", WALK, "--kind", "angles", "--angle", "bogus", "-o", str(tmp_path / "x.png")]),
                   "--angle", "flexion or rotation")  # fmt: skip
    one_line_error(capfd, main(["render", WALK, "--size", "0x0", "-o", str(tmp_path / "x.gif")]), "--size", "0x0")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_render_fps_must_be_in_range(capfd: pytest.CaptureFixture[str], tmp_path: Path, suffix: str) -> None:
    for fps in ("0", "-5", "nan", "inf", "1e-6", "1e9"):  # the last two overflowed the GIF timing or the memory
        code = main(["render", WALK, "-o", str(tmp_path / f"x{suffix}"), "--fps", fps, "--no-progress"])
        one_line_error(capfd, code, "--fps", "between 0.1 and 240")
    assert list(tmp_path.iterdir()) == []


def test_render_keeps_every_frame_of_a_30fps_file_and_its_timing(
    capfd: pytest.CaptureFixture[str], mocap_files, tmp_path: Path
) -> None:
    """A Bandai clip (``Frame Time: 0.0333333``) rendered at the default 30 fps: every frame of the header, and a
    GIF whose per-frame durations (centiseconds) add up to the clip's time."""
    (path,) = mocap_files(["bandai_namco_1/dataset-1_dash_normal_001.bvh"])
    header = {}
    for line in path.read_text().splitlines():
        if line.startswith(("Frames:", "Frame Time:")):
            key, value = line.split(":")
            header[key] = float(value)
    frames = int(header["Frames"])
    out = tmp_path / "dash.gif"
    assert main(["render", str(path), "-o", str(out), "--size", "48x32", "--no-progress"]) == 0
    assert f"({frames} frames," in capfd.readouterr().out
    with Image.open(out) as image:
        assert image.n_frames == frames
        durations = []
        for k in range(frames):
            image.seek(k)
            durations.append(image.info["duration"])
    ends = np.cumsum(durations)
    assert abs(ends[-1] - frames * 1000 / 30) <= 10  # 667 ms, not 20 x 30 = 600 ms
    assert np.abs(ends - np.arange(1, frames + 1) * 1000 / 30).max() <= 5
