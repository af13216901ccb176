"""``convert``/``convert-all`` preprocessing options (``--start``/``--end``, ``--mirror``, ``--smooth``, ``--face``,
``--to-origin``), each checked against an independent rule on the written joint positions: frame times by hand,
the mirror as a reflection of the lateral coordinate with left and right swapped, scipy's zero-phase Butterworth,
the facing from hip and shoulder vectors, the first frame's pelvis and lowest point."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from cli_output import run_cli as run  # tests/helpers
from scipy.signal import butter, sosfiltfilt

import skelanim

WALK = "cmu_cgspeed_max/131_01.bvh"  # 994 frames at 120 fps, +Y up, the left side towards +X
LOOPING = "deepmimic/humanoid3d_walk.txt"  # Loop: wrap


def _positions(path: Path) -> np.ndarray:
    """``(F, J, 3)`` world joint positions of a motion file (or the ``positions`` of a ``.npz`` written by convert)."""
    if path.suffix == ".npz":
        return np.load(path)["positions"]
    return np.asarray(skelanim.load(path).positions())


#: The CMU rig's side prefixes, each with its partner.
_SWAP = {"Left": "Right", "Right": "Left", "LHip": "RHip", "RHip": "LHip", "lhand": "rhand", "rhand": "lhand",
         "LFingers": "RFingers", "RFingers": "LFingers", "LThumb": "RThumb", "RThumb": "LThumb"}
_SIDES = re.compile("|".join(_SWAP))


def _convert(capsys, src: Path, dst: Path, *options: str) -> None:
    code, _, err = run(["convert", str(src), str(dst), *options], capsys)
    assert code == 0, err


@pytest.fixture
def walk(mocap_files) -> Path:
    return mocap_files([WALK])[0]


def test_start_and_end_keep_the_frames_of_that_time_span(walk: Path, tmp_path: Path, capsys):
    source = _positions(walk)
    _convert(capsys, walk, tmp_path / "cut.npz", "--start", "1", "--end", "2.5")
    cut = _positions(tmp_path / "cut.npz")
    assert cut.shape[0] == 181  # frames 120 ... 300 at 120 fps, both ends included
    np.testing.assert_allclose(cut, source[120:301], rtol=0, atol=1e-9)
    _convert(capsys, walk, tmp_path / "tail.npz", "--start", "8.2", "--end", "1000")  # past the end: the rest
    np.testing.assert_allclose(_positions(tmp_path / "tail.npz"), source[984:], rtol=0, atol=1e-9)
    _convert(capsys, walk, tmp_path / "head.npz", "--end", str(10 / 120))  # a time that is a frame's, in floats
    assert _positions(tmp_path / "head.npz").shape[0] == 11
    _convert(capsys, walk, tmp_path / "four.npz", "--start", "1", "--end", "1.025")  # 1.025 * 120 = 122.99999999999999
    np.testing.assert_allclose(_positions(tmp_path / "four.npz"), source[120:124], rtol=0, atol=1e-9)
    _convert(capsys, walk, tmp_path / "one.npz", "--start", "0.01", "--end", "0.02")  # frames at 1.2 and 2.4: frame 2
    np.testing.assert_allclose(_positions(tmp_path / "one.npz"), source[2:3], rtol=0, atol=1e-9)


def test_a_looping_clip_cut_short_no_longer_loops_unless_told(mocap_files, tmp_path: Path, capsys):
    src = mocap_files([LOOPING])[0]
    assert skelanim.load(src).metadata["loop"] == "wrap"
    _convert(capsys, src, tmp_path / "cut.txt", "--end", "0.5")
    assert '"Loop": "none"' in (tmp_path / "cut.txt").read_text()
    _convert(capsys, src, tmp_path / "kept.txt", "--end", "0.5", "--loop", "wrap")
    assert '"Loop": "wrap"' in (tmp_path / "kept.txt").read_text()
    _convert(capsys, src, tmp_path / "whole.txt", "--start", "0", "--end", "1000")  # nothing cut: still loops
    assert '"Loop": "wrap"' in (tmp_path / "whole.txt").read_text()


def test_mirror_reflects_the_lateral_axis_and_swaps_sides(walk: Path, tmp_path: Path, capsys):
    source = _positions(walk)
    _convert(capsys, walk, tmp_path / "mirrored.npz", "--mirror")
    data = np.load(tmp_path / "mirrored.npz")
    names = list(data["joints"])
    partner = [names.index(_SIDES.sub(lambda m: _SWAP[m.group(0)], n)) for n in names]
    assert partner != list(range(len(names)))
    expected = source[:, partner] * np.array([-1.0, 1.0, 1.0])  # the left/right (X) coordinate reflected
    np.testing.assert_allclose(data["positions"], expected, rtol=0, atol=1e-6)


def test_smooth_is_scipys_zero_phase_butterworth_on_the_root(walk: Path, tmp_path: Path, capsys):
    source = _positions(walk)
    _convert(capsys, walk, tmp_path / "smooth.npz", "--smooth", "6")
    smoothed = _positions(tmp_path / "smooth.npz")
    sos = butter(4, 6.0, btype="low", fs=120.0, output="sos")
    np.testing.assert_allclose(smoothed[:, 0], sosfiltfilt(sos, source[:, 0], axis=0), rtol=0, atol=1e-6)
    limbs = np.abs(smoothed - source).max()
    assert 0.05 < limbs < 5.0  # the rotations are low-passed too: the limbs move, by less than a few cm


def _facing(frame: np.ndarray, names: list[str]) -> np.ndarray:
    """The horizontal facing of ``(J, 3)`` +Y-up positions: (left - right hip + left - right shoulder) x up."""
    across = (frame[names.index("LeftHip")] - frame[names.index("RightHip")]
              + frame[names.index("LeftShoulder")] - frame[names.index("RightShoulder")])  # fmt: skip
    facing = np.cross(across, [0.0, 1.0, 0.0])
    facing[1] = 0.0
    return facing / np.linalg.norm(facing)


@pytest.mark.parametrize("direction, expected", [("x", [1, 0, 0]), ("-Z", [0, 0, -1]), ("+z", [0, 0, 1])])
def test_face_turns_the_first_frame_towards_the_direction(walk: Path, tmp_path: Path, capsys, direction, expected):
    source = _positions(walk)
    _convert(capsys, walk, tmp_path / "faced.npz", f"--face={direction}")
    data = np.load(tmp_path / "faced.npz")
    faced, names = data["positions"], list(data["joints"])
    np.testing.assert_allclose(_facing(faced[0], names), expected, atol=1e-9)
    # a turn about the vertical through the first frame's root: heights and distances from it kept
    np.testing.assert_allclose(faced[..., 1], source[..., 1], atol=1e-9)
    axis0, axis1 = source[0, 0, [0, 2]], faced[0, 0, [0, 2]]
    np.testing.assert_allclose(np.linalg.norm(faced[..., [0, 2]] - axis1, axis=-1),
                               np.linalg.norm(source[..., [0, 2]] - axis0, axis=-1), atol=1e-9)  # fmt: skip


def test_to_origin_puts_the_first_frame_on_the_ground_at_the_origin(walk: Path, tmp_path: Path, capsys):
    source = skelanim.load(walk).positions(end_sites=True).numpy()
    _convert(capsys, walk, tmp_path / "placed.bvh", "--to-origin")
    placed = skelanim.load(tmp_path / "placed.bvh").positions(end_sites=True).numpy()
    np.testing.assert_allclose(placed[0, 0, [0, 2]], [0.0, 0.0], atol=1e-5)  # Hips, the pelvis
    assert abs(placed[0, :, 1].min()) < 1e-5  # the lowest joint or End Site (the toes' ends)
    shift = placed - source  # one translation for every point of every frame
    np.testing.assert_allclose(shift, np.broadcast_to(shift[0, 0], shift.shape), atol=1e-5)


def test_the_edits_apply_in_the_stated_order_whatever_the_command_line(walk: Path, tmp_path: Path, capsys):
    _convert(capsys, walk, tmp_path / "a.npz", "--to-origin", "--face", "z", "--fps", "30", "--smooth", "5",
             "--mirror", "--end", "3", "--start", "1")  # fmt: skip
    _convert(capsys, walk, tmp_path / "cut.bvh", "--start", "1", "--end", "3")
    _convert(capsys, tmp_path / "cut.bvh", tmp_path / "m.bvh", "--mirror")
    _convert(capsys, tmp_path / "m.bvh", tmp_path / "s.bvh", "--smooth", "5")
    _convert(capsys, tmp_path / "s.bvh", tmp_path / "r.bvh", "--fps", "30")
    _convert(capsys, tmp_path / "r.bvh", tmp_path / "f.bvh", "--face", "z")
    _convert(capsys, tmp_path / "f.bvh", tmp_path / "b.npz", "--to-origin")
    one, steps = _positions(tmp_path / "a.npz"), _positions(tmp_path / "b.npz")
    assert one.shape == steps.shape == (61, 31, 3)
    np.testing.assert_allclose(one, steps, rtol=0, atol=2e-3)  # the steps' BVH files round to 6 decimals


def test_convert_all_applies_the_edits_to_each_file(mocap_files, tmp_path: Path, capsys):
    sources = mocap_files([WALK, "cmu_cgspeed_max/131_02.bvh"])
    options = ["--start", "0.5", "--end", "2", "--mirror", "--smooth", "8", "--face", "z", "--to-origin"]
    code, _, err = run(["convert-all", *map(str, sources), "-o", str(tmp_path / "all"), "--to", "bvh",
                        "--no-progress", *options], capsys)  # fmt: skip
    assert code == 0, err
    for src in sources:
        _convert(capsys, src, tmp_path / "one.bvh", *options)
        assert (tmp_path / "all" / src.name).read_text() == (tmp_path / "one.bvh").read_text()


@pytest.mark.parametrize("options, refusal", [
    (["--smooth", "60"], "is sampled at 120 fps: the cutoff must be below 60 Hz, not 60"),
    (["--smooth", "0"], "a cutoff in Hz above 0, not 0"),
    (["--start", "9"], "has no frame in that time span (994 frames at 120 fps, 0 to 8.275 s)"),
    (["--start", "-1"], "a time in seconds, 0 or more, not -1"),
    (["--start", "2", "--end", "1"], "1 s is before --start 2 s"),
    (["--face", "y"], "forward '+y' is parallel to the up axis (Y); pick a horizontal one"),
    (["--face", "north"], "expected x, y, z, -x, -y or -z, got 'north'"),
    (["--up", "y"], "--up is for .glb/.gltf/.fbx, --face and --to-origin"),
    (["--take", "1"], "a .bvh source holds one animation; --take is for .glb/.gltf/.fbx sources"),
])  # fmt: skip
def test_refusals_name_the_option_and_write_nothing(walk: Path, tmp_path: Path, capsys, options, refusal):
    code, _, err = run(["convert", str(walk), str(tmp_path / "out.bvh"), *options], capsys)
    assert code != 0 and refusal in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_up_names_the_axis_face_and_to_origin_work_about(walk: Path, tmp_path: Path, capsys):
    """A +Y-up walk told it is +Z up: --face z is then along the up axis, and --face y is horizontal."""
    code, _, err = run(["convert", str(walk), str(tmp_path / "out.bvh"), "--up", "z", "--face", "z"], capsys)
    assert code != 0 and "parallel to the up axis (Z)" in err
    _convert(capsys, walk, tmp_path / "out.npz", "--up", "z", "--to-origin")
    placed = _positions(tmp_path / "out.npz")
    np.testing.assert_allclose(placed[0, 0, :2], [0.0, 0.0], atol=1e-9)  # the pelvis's X and Y: horizontal here


def test_times_typed_to_the_millisecond_keep_frames_a_rounded_frame_time_puts_microseconds_off(mocap_files, tmp_path,
                                                                                                capsys):  # fmt: skip
    """DeepMimic's run steps 0.033332 s a frame (30.0012 fps): frame 6 lies at 0.199992 s and frame 12 at 0.399984 s,
    so ``--start 0.2 --end 0.4`` keeps frames 6-12 (a review: frame 6 had been dropped, 8 microseconds early); a
    frame more than TRIM_TOLERANCE of a frame outside stays out (``--start 0.2001``: 0.003 of a frame past frame 6)."""
    import torch

    import skelanim
    from skelanim.cli import main
    from skelanim.cli.edits import TRIM_TOLERANCE

    (run,) = mocap_files(["deepmimic/humanoid3d_run.txt"])
    source = skelanim.load(run)
    assert source.fps == pytest.approx(1 / 0.033332)
    for start, first in (("0.2", 6), ("0.2001", 7)):
        out = tmp_path / f"cut_{start}.txt"
        assert main(["convert", str(run), str(out), "--start", start, "--end", "0.4"]) == 0
        cut = skelanim.load(out)
        assert cut.num_frames == 13 - first
        assert torch.allclose(cut.rotations, source.rotations[first:13], atol=1e-12)
    assert (0.2001 - 6 * 0.033332) / 0.033332 > TRIM_TOLERANCE > (0.2 - 6 * 0.033332) / 0.033332
