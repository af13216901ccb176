"""Regression tests for audited I/O defects: CSV frame/time checks and exact fps, non-UTF-8 npz joint names,
small BVH edits kept by the writer, line numbers of out-of-range BVH values, DeepMimic ``metadata["path"]``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.rotations import axis_angle_to_quat, quat_multiply
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError
from skelanim.io import bvh, deepmimic, positions
from skelanim.io.positions import JointPositions
from skelanim.viz._draw import default_label

# ------------------------------------------------------------------------------------ CSV frames and times


def _write(path, header: str, rows: list[str]) -> None:
    path.write_text("\n".join([header, *rows]) + "\n")


@pytest.mark.parametrize(
    ("frames", "line", "found"),
    [
        ([0, 1, 2, 3, 10, 11, 12], 6, "found 10"),  # skip: header is line 1, frame 10 is the 5th row
        ([0, 1, 2, 2, 3], 5, "found 2"),  # repeat
        ([0, 1, 2, 1], 5, "found 1"),  # backwards
        ([5, 6, 8], 4, "found 8"),  # any first frame, then +1
    ],
)
def test_csv_frame_column_must_count_up_by_one(tmp_path, frames, line, found):
    path = tmp_path / "gap.csv"
    _write(path, "frame,a_x,a_y,a_z", [f"{f},{float(f)},0,0" for f in frames])
    with pytest.raises(FormatError, match=rf"gap\.csv:{line}: column 1 \(frame\): expected frame .*{found}"):
        positions.load(path)


def test_csv_frame_column_from_any_start_is_accepted(tmp_path):
    path = tmp_path / "ok.csv"
    _write(path, "frame,a_x,a_y,a_z", [f"{f},{float(f)},0,0" for f in (5, 6, 7)])
    assert positions.load(path).positions[:, 0, 0].tolist() == [5.0, 6.0, 7.0]


def test_csv_gap_in_frames_and_times_is_refused_not_read_as_15_fps(tmp_path):
    path = tmp_path / "gap.csv"  # the auditor's file: 1/30 s steps, frames 4-9 missing
    _write(path, "frame,time,a_x,a_y,a_z", [f"{f},{f / 30!r},{float(f)},0,0" for f in (0, 1, 2, 3, 10, 11, 12)])
    with pytest.raises(FormatError, match=r"gap\.csv:6: column 1 \(frame\)"):
        positions.load(path)


@pytest.mark.parametrize(
    ("times", "line"),
    [
        (["0.0", "0.0333", "0.0667", "0.1", "0.5"], 6),  # a jump of 0.4 s at the 5th row
        (["0.000", "0.100", "0.300", "0.400", "0.500"], 4),  # one step twice the others (a dropped frame)
        (["0.000", "0.100", "0.200", "0.250", "0.300", "0.400"], 5),  # two half steps (an inserted frame)
        ([repr(f / 30) for f in (0, 1, 2, 3, 4, 6, 7)], 7),  # frame 5 missing, precise times
    ],
)
def test_csv_non_uniform_times_are_refused_at_their_line(tmp_path, times, line):
    path = tmp_path / "nonuni.csv"
    _write(path, "time,a_x,a_y,a_z", [f"{t},1,2,3" for t in times])
    with pytest.raises(FormatError, match=rf"nonuni\.csv:{line}: column 1 \(time\): non-uniform time step"):
        positions.load(path)


@pytest.mark.parametrize("fps", [24.0, 30.0, 60.0, 120.0, 30000 / 1001, 25.0])
@pytest.mark.parametrize("frames", [2, 7, 12, 43, 100, 2752])  # 12, 43: (F - 1) / t_last was 29.999999999999996
def test_csv_round_trip_keeps_fps_exactly(tmp_path, fps, frames):
    path = tmp_path / "t.csv"
    positions.save(JointPositions(["a"], np.zeros((frames, 1, 3)), fps), path)
    assert positions.load(path).fps == fps  # exactly, not 29.999999999999996


@pytest.mark.parametrize("fmt", ["%.3f", "%.4f", "%g", "%.18e"])
@pytest.mark.parametrize("fps", [30.0, 120.0, 30000 / 1001])
def test_csv_times_rounded_by_other_writers_give_the_whole_rate(tmp_path, fmt, fps):
    path = tmp_path / "t.csv"
    _write(path, "time,a_x,a_y,a_z", [(fmt % (f / fps)) + ",0,0,0" for f in range(500)])
    assert positions.load(path).fps == fps


def test_csv_rate_that_is_not_whole_is_one_over_the_step(tmp_path):
    path = tmp_path / "t.csv"
    _write(path, "time,a_x,a_y,a_z", [f"{f * 0.04!r},0,0,0" for f in range(3)] + ["0.125,0,0,0"])
    with pytest.raises(FormatError, match=r"t\.csv:5: .*non-uniform"):  # 0.045 s after 0.04 s steps
        positions.load(path)
    _write(path, "time,a_x,a_y,a_z", [f"{f / 29.5!r},0,0,0" for f in range(50)])
    assert positions.load(path).fps == pytest.approx(29.5, rel=1e-12)


def test_csv_single_frame_has_no_fps(tmp_path):
    """A one-frame CSV has one time and no step: fps is not stored (documented), so it reads back None."""
    path = tmp_path / "one.csv"
    positions.save(JointPositions(["a"], np.ones((1, 1, 3)), 30.0), path)
    back = positions.load(path)
    assert back.fps is None and back.positions.tolist() == [[[1.0, 1.0, 1.0]]]
    assert "one-frame file" in (positions.__doc__ or "")


# ------------------------------------------------------------------------------------ npz joint names


def test_npz_joint_names_not_utf8_are_a_format_error(tmp_path):
    path = tmp_path / "badnames.npz"
    np.savez(path, positions=np.zeros((2, 2, 3)), joints=np.array([b"ok", b"\xff\xfe"], dtype="S"))
    with pytest.raises(FormatError, match=r"badnames\.npz: joints: name 1 is not UTF-8 \(byte 0: 0xff\)"):
        positions.load(path)
    np.savez(path, positions=np.zeros((2, 2, 3)), joints=np.array([b"ok", "h\u00e9".encode()], dtype="S"))
    assert positions.load(path).names == ["ok", "h\u00e9"]  # UTF-8 bytes still decode


# ------------------------------------------------------------------------------------ BVH edits and angles

_ONE_JOINT = (
    "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
    "Yrotation\n\tEnd Site\n\t{\n\t\tOFFSET 0 1 0\n\t}\n}\nMOTION\nFrames: 2\nFrame Time: 0.033333\n"
    "1 2 3 10.5 20.25 -30.125\n1 2 3 190 -20 30\n"
)


def _rotated_about_z(motion, degrees: float):
    """``motion`` with ``Rz(degrees)`` put before the root rotation ``Rz(a) Rx(b) Ry(c)``: its ``ZXY`` angles
    become ``(a + degrees, b, c)`` in closed form; metadata (and so ``bvh_values``) kept, as every op does."""
    dq = axis_angle_to_quat(torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64), math.radians(degrees))
    rotations = motion.rotations.clone()
    rotations[:, 0] = quat_multiply(dq.expand_as(rotations[:, 0]), rotations[:, 0])
    return motion.copy(rotations=rotations)


@pytest.mark.parametrize("edit", [1e-4, 5e-5, 2e-6])
def test_bvh_writer_keeps_edits_larger_than_the_printed_precision(edit):
    motion = bvh.loads(_ONE_JOINT)
    edited = _rotated_about_z(motion, edit)
    assert "bvh_values" in edited.metadata
    rows = bvh.dumps(edited).splitlines()[-2:]
    z = [float(row.split()[3]) for row in rows]
    # the file's own first angles plus the edit (10.5 + edit; 190 + edit: the file's turn, not -170 + edit)
    assert z == [float(f"{10.5 + edit:.6f}"), float(f"{190 + edit:.6f}")]
    assert [row.split()[4:] for row in rows] == [["20.250000", "-30.125000"], ["-20.000000", "30.000000"]]


def test_bvh_writer_keeps_the_files_angles_for_edits_below_half_a_printed_unit():
    motion = bvh.loads(_ONE_JOINT)
    text = bvh.dumps(motion)
    assert text.splitlines()[-2:] == [
        "1.000000 2.000000 3.000000 10.500000 20.250000 -30.125000",
        "1.000000 2.000000 3.000000 190.000000 -20.000000 30.000000",
    ]
    assert bvh.dumps(_rotated_about_z(motion, 4e-7)) == text  # < 5e-7 degrees: the printed numbers stand
    # at precision 3 half a unit is 5e-4 degrees: a 1e-4 edit is within it, a 1e-3 one is not
    assert bvh.dumps(_rotated_about_z(motion, 1e-4), precision=3) == bvh.dumps(motion, precision=3)
    assert bvh.dumps(_rotated_about_z(motion, 1e-3), precision=3).splitlines()[-1].split()[3] == "190.001"


# ------------------------------------------------------------------------------------ BVH error lines

_HUGE_FRAME = (
    "HIERARCHY\n{root}\n{{\nOFFSET 0 0 0\nCHANNELS 3 Xposition Yposition Zposition\n}}\nMOTION\n"
    "Frames: 2\n{frame_time}\n1 2 3\n\n4 5 1e12\n"
)


@pytest.mark.parametrize(
    ("root", "frame_time", "newline"),
    [
        ("ROOT Hips", "Frame Time: 0.1", "\n"),
        ("root Hips", "frame time: 0.1", "\n"),
        ("ROOT Hips", "FRAME  TIME : 0.1", "\r\n"),
        ("ROOT Hips", "Frame Time: 0.1", "\r"),  # classic Mac line ends
    ],
)
def test_bvh_out_of_range_value_names_its_line(root, frame_time, newline):
    text = _HUGE_FRAME.format(root=root, frame_time=frame_time).replace("\n", newline)
    # line 10 is "1 2 3", 11 blank, 12 the second frame
    with pytest.raises(FormatError, match=r"^huge\.bvh:12: Zposition of Hips on frame 1 is 1e\+12"):
        bvh.loads(text, "huge.bvh")


@pytest.mark.parametrize(
    "hierarchy",
    [
        "HIERARCHY\nroot Hips\n{\nOFFSET 0 0 0\nCHANNELS 0\njoint B\n{\noffset 1e10 0 0\n}\n}\n",
        "HIERARCHY\nROOT Hips\n{\nOFFSET 0 0 0\nCHANNELS 0\nJOINT B {\n\n  OFFSET 1e10 0 0 }\n}\n",
        "HIERARCHY\rROOT Hips\r{\rOFFSET 0 0 0\rCHANNELS 0\rJOINT OFFSET\r{\rOFFSET 1e10 0 0\r}\r}\r",
    ],
)
def test_bvh_out_of_range_offset_names_its_line(hierarchy):
    newline = "\r" if "\r" in hierarchy else "\n"
    text = hierarchy + newline.join(["MOTION", "Frames: 1", "Frame Time: 0.1", "", ""])
    with pytest.raises(FormatError, match=r"^off\.bvh:8: OFFSET of \S+ beyond \+-1e\+09"):
        bvh.loads(text, "off.bvh")


# ------------------------------------------------------------------------------------ DeepMimic path


def test_deepmimic_clip_records_its_path_like_bvh():
    path = sample_path("walk")
    motion = deepmimic.load(path)
    assert motion.metadata["path"] == str(path)
    assert default_label(motion, 0) == path.stem  # plots name it, not "motion 1"
