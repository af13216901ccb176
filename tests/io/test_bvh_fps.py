"""A BVH ``Frame Time`` is read as the frame rate it stands for: exporters round ``1 / 30`` to ``0.033333``."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.errors import FormatError
from skelanim.io.bvh import dumps, loads, nominal_fps
from skelanim.ops import resample
from tests.helpers.bvh_text import make_bvh

# hand-checked: the value, and the rate it stands for
CASES = [
    (0.033333, 30.0), (0.0333333, 30.0), (0.0333, 30.0), (1 / 30, 30.0), (0.0083333, 120.0), (0.008333, 120.0),
    (0.016667, 60.0), (0.041667, 24.0), (0.01, 100.0), (0.04, 25.0), (1.0, 1.0), (0.5, 2.0),
    (0.033367, 30000 / 1001), (0.0166833, 60000 / 1001),  # NTSC
    (0.033, 1 / 0.033), (0.0167, 1 / 0.0167), (0.03, 1 / 0.03),  # too few digits: taken as written
    (1 / 29.97, 1 / (1 / 29.97)), (0.0123456, 1 / 0.0123456),  # not a rounded 1 / n: exactly 1 / value
]


@pytest.mark.parametrize(("frame_time", "fps"), CASES)
def test_nominal_rates(frame_time, fps):
    assert nominal_fps(frame_time) == fps


def test_a_tiny_frame_time_is_read_without_listing_every_rate_it_could_round():
    """``Frame Time: 1.234e-12`` is within half a digit of some 6.5e8 whole rates: the reader had listed them all
    (20 GB; a fuzz test's worker was killed by the kernel for it). Run under a 1.5 GB address-space limit, so that
    the listing fails as a MemoryError here instead of taking the machine's memory."""
    import subprocess
    import sys

    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20)); "
            "from skelanim.io.common import nominal_fps; "
            "print(nominal_fps(1.234e-12) == 1 / 1.234e-12, nominal_fps(1.2345678e-9) == 1 / 1.2345678e-9)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["True", "True"], done.stdout + done.stderr


def test_a_rounding_is_within_half_a_digit():
    """``1 / n`` rounded to 4-8 decimals reads back as ``n`` fps, unless too few digits were written or another
    whole rate rounds to the same value; whatever is returned is ``1 / value`` or a rate that rounds to it."""
    for digits in range(4, 9):
        for n in range(1, 241):
            frame_time = round(1 / n, digits)
            if frame_time == 0:
                continue
            half = 0.5 * 10.0 ** -len(repr(frame_time).partition(".")[2])  # 0.0370 is read as 0.037
            got = nominal_fps(frame_time)
            assert got == 1 / frame_time or abs(1 / got - frame_time) <= half * (1 + 1e-9)
            others = [m for m in range(max(1, n - 5), n + 6) if m != n and abs(1 / m - frame_time) <= half]
            if half <= 2e-3 * frame_time and not others:
                assert got == n, (frame_time, got)


def test_file_reads_whole_rate_and_writes_its_frame_time_back():
    six = ["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]
    text = make_bvh([six, six[3:], six[3:], six[3:]], torch.zeros(3, 15).numpy(), frame_time="0.033333")
    motion = loads(text)
    assert motion.fps == 30.0
    assert "Frame Time: 0.033333\n" in dumps(motion)  # the file's own text, not 1/30 written anew
    assert "Frame Time: 0.04\n" in dumps(resample(motion, 25.0))


def test_real_file_resampled_to_its_own_rate_is_itself(mocap_files):
    """Bandai's ``Frame Time: 0.0333333``: 30 fps, so resampling to 30 fps moves nothing (before, the file was
    30.00003 fps and resampling moved joints by up to 0.0024 cm)."""
    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh"])
    motion = skelanim.load(path)
    assert motion.fps == 30.0 and motion.metadata["frame_time"] == 0.0333333
    again = resample(motion, 30.0)
    assert again.num_frames == motion.num_frames
    assert torch.allclose(again.positions(), motion.positions(), atol=1e-5 * float(motion.positions().abs().max()))


@pytest.mark.parametrize(("frame_time", "ok"), [("1e4", False), ("3601", False), ("1e-7", False), ("1e30", False),
                                                ("3600", True), ("1e-6", True), ("0.0083333", True)])  # fmt: skip
def test_a_frame_time_beyond_an_hour_or_under_a_microsecond_is_refused_at_its_line(frame_time, ok):
    """An audit's ``Frame Time: 1e4`` made ``convert --fps 30`` allocate until the kernel killed it (300,000 frames a
    frame), and ``1e30`` overflowed in half the commands; the reader now refuses them where they are written."""
    six = ["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]
    text = make_bvh([six, six[3:], six[3:], six[3:]], torch.zeros(2, 15).numpy(), frame_time=frame_time)
    if ok:
        assert loads(text, "t.bvh").num_frames == 2
        return
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith("Frame Time"))
    with pytest.raises(FormatError, match=rf"^t\.bvh:{line}: expected a 'Frame Time' from 1e-06 to 3600 seconds"):
        loads(text, "t.bvh")
