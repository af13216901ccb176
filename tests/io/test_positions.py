"""Joint positions on disk: exact npz/csv/npy round trips, no pickle anywhere, errors that name the place."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import skelanim.io
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError, ShapeError, UnsupportedFormatError
from skelanim.io import deepmimic, positions
from skelanim.io.positions import JointPositions


@pytest.fixture(scope="module")
def walk():
    return deepmimic.load(sample_path("walk"))


def small(fps: float | None = 30.0) -> JointPositions:
    rng = np.random.default_rng(0)
    return JointPositions(["Hips", "Left_Up Leg", "a,b"], rng.normal(size=(4, 3, 3)), fps, np.array([-1, 0, 0]))


# ---------------------------------------------------------------------------------------- the container


def test_from_motion_with_and_without_end_sites(walk):
    plain = JointPositions.from_motion(walk)
    assert plain.names == list(deepmimic.BODY_NAMES)
    assert plain.positions.dtype == np.float64 and isinstance(plain.positions, np.ndarray)
    np.testing.assert_array_equal(plain.positions, walk.positions().numpy())
    assert plain.fps == walk.fps
    np.testing.assert_array_equal(plain.parents, walk.skeleton.parents)
    assert plain.metadata == {"source_format": "deepmimic", "units": "m"}  # DeepMimic clips are in metres

    full = JointPositions.from_motion(walk, end_sites=True)
    assert full.names[-2:] == ["right_elbow_end", "left_elbow_end"]
    assert full.parents[-2:].tolist() == [walk.skeleton.index("right_elbow"), walk.skeleton.index("left_elbow")]
    assert full.positions.shape == (walk.num_frames, 15, 3)


def test_container_accepts_tensors_and_checks_shapes():
    jp = JointPositions(["a", "b"], torch.zeros(2, 2, 3))
    assert isinstance(jp.positions, np.ndarray) and jp.num_frames == 2 and jp.num_joints == 2 and len(jp) == 2
    assert jp.index("b") == 1
    with pytest.raises(KeyError, match="unknown joint 'c'"):
        jp.index("c")
    with pytest.raises(ShapeError, match=r"\(F, J, 3\)"):
        JointPositions(["a"], np.zeros((2, 3)))
    with pytest.raises(ShapeError, match="2 names for 1 joints"):
        JointPositions(["a", "b"], np.zeros((2, 1, 3)))
    with pytest.raises(ShapeError, match="duplicate joint names: a"):
        JointPositions(["a", "a"], np.zeros((2, 2, 3)))
    with pytest.raises(ShapeError, match="fps"):
        JointPositions(["a"], np.zeros((2, 1, 3)), fps=0)
    with pytest.raises(ShapeError, match="parents"):
        JointPositions(["a", "b"], np.zeros((2, 2, 3)), parents=[-1, 1])


# ---------------------------------------------------------------------------------------- round trips


def test_npz_round_trip_is_exact(walk, tmp_path):
    path = tmp_path / "walk.npz"
    positions.save(walk, path, end_sites=True)
    back = positions.load(path)
    expected = JointPositions.from_motion(walk, end_sites=True)
    assert back.names == expected.names
    np.testing.assert_array_equal(back.positions, expected.positions)
    assert back.fps == expected.fps
    np.testing.assert_array_equal(back.parents, expected.parents)
    assert back.metadata.get("units") == expected.metadata["units"] == "m"


def test_npz_joints_is_a_plain_string_array(walk, tmp_path):
    path = tmp_path / "walk.npz"
    positions.save(walk, path)
    with np.load(path, allow_pickle=False) as archive:
        assert set(archive.files) == {"positions", "joints", "fps", "parents", "units"}
        assert archive["units"].tolist() == "m"  # an export audit: a reader had to know the source's unit
        assert archive["joints"].dtype.kind == "U"
        assert archive["joints"].tolist() == list(deepmimic.BODY_NAMES)
        assert archive["positions"].shape == (walk.num_frames, 13, 3)
        assert archive["fps"].shape == ()


def test_csv_round_trip_is_exact(walk, tmp_path):
    path = tmp_path / "walk.csv"
    positions.save(walk, path, end_sites=True)
    header = path.read_text().splitlines()[0]
    assert header.startswith("frame,time,root_x,root_y,root_z,chest_x,")
    assert header.endswith("left_elbow_end_x,left_elbow_end_y,left_elbow_end_z")
    back = positions.load(path)
    expected = JointPositions.from_motion(walk, end_sites=True)
    assert back.names == expected.names
    np.testing.assert_array_equal(back.positions, expected.positions)
    assert back.fps == pytest.approx(walk.fps, rel=1e-12)
    assert back.parents is None


def test_npy_round_trip_is_exact(walk, tmp_path):
    path = tmp_path / "walk.npy"
    positions.save(walk, path)
    back = positions.load(path)
    np.testing.assert_array_equal(back.positions, walk.positions().numpy())
    assert back.names == [f"joint_{j}" for j in range(13)]
    assert back.fps is None and back.parents is None
    assert np.load(path, allow_pickle=False).shape == (walk.num_frames, 13, 3)


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_awkward_names_and_no_fps(tmp_path, suffix):
    data = small(fps=None)
    positions.save(data, tmp_path / f"s{suffix}")
    back = positions.load(tmp_path / f"s{suffix}")
    assert back.names == data.names
    assert back.fps is None
    np.testing.assert_array_equal(back.positions, data.positions)


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=4).map(lambda s: (s[0], s[1], 3)),
        elements=st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True),
    ),
    st.sampled_from([".npz", ".csv", ".npy"]),
)
def test_any_finite_array_round_trips_bit_for_bit(tmp_path_factory, array, suffix):
    path = tmp_path_factory.mktemp("rt") / f"a{suffix}"
    names = [f"j{k}" for k in range(array.shape[1])]
    positions.save(JointPositions(names, array, fps=24.0), path)
    back = positions.load(path)
    assert back.positions.tobytes() == array.tobytes()  # also keeps -0.0


def test_io_dispatch(walk, tmp_path):
    skelanim.io.save(walk, tmp_path / "w.csv")
    jp = skelanim.io.load_positions(tmp_path / "w.csv")
    np.testing.assert_array_equal(jp.positions, walk.positions().numpy())
    with pytest.raises(UnsupportedFormatError, match=r"unknown suffix '\.xyz'"):
        positions.save(walk, tmp_path / "w.xyz")
    with pytest.raises(UnsupportedFormatError):
        positions.load(tmp_path / "w.txt")
    with pytest.raises(TypeError, match="Motion or JointPositions"):
        positions.save(np.zeros((1, 1, 3)), tmp_path / "w.npy")  # type: ignore[arg-type]


def test_minimal_inputs_from_other_tools(tmp_path):
    np.savez(tmp_path / "bare.npz", positions=np.ones((2, 2, 3), dtype=np.float32))
    bare = positions.load(tmp_path / "bare.npz")
    assert bare.names == ["joint_0", "joint_1"] and bare.fps is None and bare.positions.dtype == np.float64
    (tmp_path / "plain.csv").write_text("a_x,a_y,a_z\n1,2,3\n\n4,5,6\n")
    plain = positions.load(tmp_path / "plain.csv")
    assert plain.names == ["a"] and plain.fps is None
    np.testing.assert_array_equal(plain.positions, [[[1, 2, 3]], [[4, 5, 6]]])
    (tmp_path / "timed.csv").write_text("\ufefftime,a_X,a_Y,a_Z\n0.0,1,2,3\n0.5,4,5,6\n1.0,7,8,9\n")
    assert positions.load(tmp_path / "timed.csv").fps == 2.0
    np.savez(tmp_path / "bytes.npz", positions=np.zeros((1, 1, 3)), joints=np.array([b"hip"]))
    assert positions.load(tmp_path / "bytes.npz").names == ["hip"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "p.npz"
    target.write_bytes(b"old")

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        positions.save(small(), target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["p.npz"]


# ---------------------------------------------------------------------------------------- bad input


def npz(tmp_path: Path, **arrays) -> Path:
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


GOOD = np.zeros((2, 2, 3))


@pytest.mark.parametrize(
    ("arrays", "pattern"),
    [
        ({"joints": np.array(["a", "b"])}, r"bad\.npz: missing array 'positions' \(arrays found: joints\)"),
        ({"positions": np.zeros((2, 6))}, r"bad\.npz: positions: expected shape \(F, J, 3\), found \(2, 6\)"),
        ({"positions": np.array([["x"]])}, r"positions: expected a real number array, found dtype <U1"),
        ({"positions": GOOD, "joints": np.array(["a"])}, r"joints: 1 names for 2 joints"),
        ({"positions": GOOD, "joints": np.array(["a", "a"])}, r"joints: duplicate names \['a'\]"),
        ({"positions": GOOD, "joints": np.array([1, 2])}, r"joints: expected a 1-D string array"),
        ({"positions": GOOD, "fps": np.array([30.0, 60.0])}, r"fps: expected one positive number"),
        ({"positions": GOOD, "fps": np.array(-1.0)}, r"fps: expected one positive number"),
        ({"positions": GOOD, "parents": np.array([-1, 5])}, r"parents: joint 'joint_1' has parent 5"),
        ({"positions": GOOD, "parents": np.array([-1.0, 0.0])}, r"parents: expected \(2,\) integers"),
        # an audit: no frames read from .npz, which the .csv writer then failed on with a bare numpy error
        ({"positions": np.zeros((0, 2, 3))}, r"bad\.npz: positions: expected at least one frame, found shape \(0, 2, 3\)"),
        ({"positions": np.zeros((2, 0, 3))}, r"positions: expected at least one joint, found shape \(2, 0, 3\)"),
    ],
)
def test_bad_npz(tmp_path, arrays, pattern):
    with pytest.raises(FormatError, match=pattern):
        positions.load(npz(tmp_path, **arrays))


def test_nan_names_frame_and_joint(tmp_path):
    data = np.zeros((3, 2, 3))
    data[2, 1, 2] = np.nan
    with pytest.raises(FormatError, match=r"bad\.npz: frame 2, knee: positions: non-finite value nan \(z\)") as info:
        positions.load(npz(tmp_path, positions=data, joints=np.array(["hip", "knee"])))
    assert info.value.where == "frame 2, knee"
    np.save(tmp_path / "bad.npy", data)
    with pytest.raises(FormatError, match=r"bad\.npy: frame 2, joint 1: array: non-finite value"):
        positions.load(tmp_path / "bad.npy")


def test_pickled_objects_are_never_loaded(tmp_path):
    np.savez(tmp_path / "obj.npz", positions=GOOD, joints=np.array(["a", "b"], dtype=object))
    with pytest.raises(FormatError, match=r"obj\.npz: unreadable array in the archive \(it holds pickled") as info:
        positions.load(tmp_path / "obj.npz")
    assert "allow_pickle" not in str(info.value)  # no advice to load it unsafely
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(FormatError, match=r"obj\.npy: not a readable \.npy array \(it holds pickled") as info:
        positions.load(tmp_path / "obj.npy")
    assert "allow_pickle" not in str(info.value)


def test_corrupt_binary_files(tmp_path):
    good = tmp_path / "good.npz"
    positions.save(small(), good)
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:200])
    with pytest.raises(FormatError, match=r"cut\.npz: "):
        positions.load(cut)
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"not numpy at all")
    with pytest.raises(FormatError, match=r"junk\.npy: not an \.npy array \(it does not start with"):
        positions.load(junk)
    junk_npz = tmp_path / "junk.npz"
    junk_npz.write_bytes(bytes(range(256)))  # numpy would try these bytes as a pickle
    with pytest.raises(FormatError, match=r"junk\.npz: not an \.npz archive") as info:
        positions.load(junk_npz)
    assert "pickle" not in str(info.value)
    swapped = tmp_path / "swapped.npy"
    swapped.write_bytes(good.read_bytes())
    with pytest.raises(FormatError, match=r"swapped\.npy: expected a bare \.npy array, found an \.npz archive"):
        positions.load(swapped)
    bare = tmp_path / "bare.npy"
    positions.save(small(), bare)
    (tmp_path / "bare_as.npz").write_bytes(bare.read_bytes())
    with pytest.raises(FormatError, match=r"bare_as\.npz: expected an \.npz archive, found a bare \.npy array"):
        positions.load(tmp_path / "bare_as.npz")
    assert zipfile.is_zipfile(good)


CSV_HEADER = "frame,time,hip_x,hip_y,hip_z,knee_x,knee_y,knee_z\n"


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2,3,4,5\n", r"bad\.csv:3: expected 8 values, found 7"),
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2,x,4,5,6\n", r"bad\.csv:3: column 5 \(hip_z\): expected a number, found 'x'"),
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2,3,nan,5,6\n", r"bad\.csv:3: column 6 \(knee_x\): not a finite number \(nan\)"),
        ("0,0.0,1,2,3,4,5,6\n1,0.0,1,2,3,4,5,6\n", r"bad\.csv:3: column 2 \(time\): times must increase"),
        ("0.5,0.0,1,2,3,4,5,6\n", r"bad\.csv:2: column 1 \(frame\): expected an integer frame number"),
        ("", r"bad\.csv: no frames after the header"),
    ],
)
def test_bad_csv_rows(tmp_path, body, pattern):
    path = tmp_path / "bad.csv"
    path.write_text(CSV_HEADER + body)
    with pytest.raises(FormatError, match=pattern):
        positions.load(path)


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("", r"bad\.csv: empty file"),
        ("frame,hip_x,hip_y\n0,1,2\n", r"bad\.csv:1: header: expected \[frame,\]\[time,\] then 3 columns per joint"),
        (
            "frame,hip_x,hip_y,knee_z\n0,1,2,3\n",
            r"bad\.csv:1: header column 2: expected <joint>_x,<joint>_y,<joint>_z, found hip_x,hip_y,knee_z",
        ),
        ("a_x,a_y,a_z,a_x,a_y,a_z\n0,1,2,3,4,5\n", r"bad\.csv:1: header: duplicate joints \['a'\]"),
        ('a_x,a_y,a_z\n"1,2,3\n', r"bad\.csv:\d+: (expected 3 values|malformed CSV)"),
    ],
)
def test_bad_csv_header(tmp_path, text, pattern):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(FormatError, match=pattern):
        positions.load(path)


def test_csv_not_utf8(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"a_x,a_y,a_z\n\xff,1,2\n")
    with pytest.raises(FormatError, match=r"bad\.csv:2: not UTF-8 text \(byte 12: 0xff\)"):
        positions.load(path)


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".npy"])
def test_positions_without_frames_are_not_written(tmp_path, suffix):
    empty = JointPositions(["a", "b"], np.zeros((0, 2, 3)), fps=30.0)
    with pytest.raises(ShapeError, match=r"positions of shape \(0, 2, 3\) cannot be written: no frames or no joints"):
        positions.save(empty, tmp_path / f"x{suffix}")
    assert list(tmp_path.iterdir()) == []
