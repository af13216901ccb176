"""The positions CSV reader: numpy's parse of well-formed files gives bit for bit what the row-by-row reader gives,
in a fraction of its memory, and every other file still gets the row-by-row reader's error at the first bad cell."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from skelanim.errors import FormatError
from skelanim.io import bvh, positions, positions_csv
from skelanim.io.positions import JointPositions


def rows_reader_must_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: object) -> None:
        raise AssertionError(f"{path}: the row-by-row reader ran on a well-formed file")

    monkeypatch.setattr(positions_csv, "read_csv_rows", refuse)


def same(a: tuple[list[str], np.ndarray, float | None], b: tuple[list[str], np.ndarray, float | None]) -> None:
    assert a[0] == b[0]
    assert a[1].dtype == b[1].dtype == np.float64 and a[1].shape == b[1].shape
    assert a[1].tobytes() == b[1].tobytes()  # bit for bit, -0.0 included
    assert a[1].flags["C_CONTIGUOUS"]
    assert a[2] == b[2] and type(a[2]) is type(b[2])


# ---------------------------------------------------------------------------------------- same values


def test_real_motion_round_trip_is_read_by_numpy_bit_for_bit(mocap_dir, tmp_path, monkeypatch):
    motion = bvh.load(Path(mocap_dir) / "cmu_cgspeed_mb" / "01_01.bvh")
    expected = JointPositions.from_motion(motion, end_sites=True)
    path = tmp_path / "01_01.csv"
    positions.save(expected, path)
    rows = positions_csv.read_csv_rows(path)  # the reader as it was: float(cell) on every cell
    rows_reader_must_not_run(monkeypatch)
    back = positions.load(path)
    assert back.names == expected.names and back.fps == rows[2]
    assert back.positions.tobytes() == expected.positions.tobytes() == rows[1].tobytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=3, max_dims=3, min_side=1, max_side=6).map(lambda s: (s[0], s[1], 3)),
        elements=st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True),
    ),
    st.sampled_from([None, 24.0, 30.0, 30000 / 1001, 100.0, 1 / 3, 119.88]),
)
def test_random_arrays_read_by_numpy_bit_for_bit(tmp_path, monkeypatch, array, fps):
    path = tmp_path / "a.csv"
    positions.save(JointPositions([f"j{k}" for k in range(array.shape[1])], array, fps=fps), path)
    rows = positions_csv.read_csv_rows(path)
    with monkeypatch.context() as patch:
        rows_reader_must_not_run(patch)
        fast = positions_csv.read_csv(path)
    same(fast, rows)
    assert fast[1].tobytes() == array.tobytes()


#: Cells the two parsers might read differently: numpy and float() must agree, or the fast path must step aside.
_CELLS = [
    "1", "-0.0", "+.5", "5.", "1e3", "1E-3", "  2.25 ", "\t7", "0.10", "91.70", "1.5e-05", "3\xa0", "\u20034",
    "1_0", "\u0661", '"2"', "nan", "-inf", "infinity", "1e400", "", " ", "x", "0x1", "2\x1c", "\x1f2", "2\x00",
    "1 2", "1e", "--1", "\ufeff1", "2\x0c", "\x0b3",
]  # fmt: skip


def _cell(draw: st.DrawFn, clean: bool) -> str:
    if clean or draw(st.integers(0, 9)):
        value = draw(st.floats(allow_nan=False, allow_infinity=False, width=draw(st.sampled_from([16, 32, 64]))))
        form = draw(st.sampled_from(["{!r}", "{:.3f}", "{:.6g}", "{:e}", "{:.0f}"]))
        return form.format(value)
    return draw(st.sampled_from(_CELLS))


@st.composite
def csv_texts(draw: st.DrawFn) -> str:
    joints = draw(st.integers(1, 3))
    frame, timed = draw(st.booleans()), draw(st.booleans())
    header = (["frame"] if frame else []) + (["time"] if timed else [])
    header += [f"j{k}_{axis}" for k in range(joints) for axis in "xyz"]
    clean = draw(st.booleans())
    end = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    start, step = draw(st.integers(-3, 3)), draw(st.sampled_from([0.5, 1 / 30, 1 / 24, 0.1]))
    decimals = draw(st.sampled_from([None, 3, 6]))
    lines = [",".join(header)]
    for f in range(draw(st.integers(0, 5))):
        cells = [_cell(draw, clean) for _ in range(3 * joints)]
        if timed:
            t = (start + f) * step
            cells.insert(0, repr(t) if decimals is None else f"{t:.{decimals}f}")
            if not clean and not draw(st.integers(0, 4)):
                cells[0] = _cell(draw, False)
        if frame:
            cells.insert(0, str(start + f) if clean or draw(st.integers(0, 4)) else _cell(draw, False))
        if not clean and not draw(st.integers(0, 6)):
            cells = cells[: draw(st.integers(0, len(cells)))]
        lines.append(",".join(cells))
        if not clean and not draw(st.integers(0, 6)):
            lines.append(draw(st.sampled_from(["", "  ", ",,", "\x0c"])))
    return end.join(lines) + draw(st.sampled_from(["", end]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(csv_texts())
def test_numpy_path_reads_only_what_the_row_reader_reads_the_same(tmp_path, text):
    path = tmp_path / "f.csv"
    path.write_bytes(text.encode("utf-8"))
    try:
        rows: tuple[list[str], np.ndarray, float | None] | str = positions_csv.read_csv_rows(path)
    except FormatError as exc:
        rows = str(exc)
    fast = positions_csv._read_fast(path)
    if fast is not None:  # what numpy reads must be exactly what float() reads, row by row
        assert not isinstance(rows, str), f"the fast path read a file the row reader refuses: {rows}"
        same(fast, rows)
    try:
        public: tuple[list[str], np.ndarray, float | None] | str = positions_csv.read_csv(path)
    except FormatError as exc:
        public = str(exc)
    if isinstance(rows, str) or isinstance(public, str):
        assert public == rows
    else:
        same(public, rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_CELLS[:13]), st.floats(allow_nan=False, allow_infinity=False).map(repr),
                          st.floats(0, 1e6).map(lambda v: f"{v:.4f}")), min_size=1, max_size=8))  # fmt: skip
def test_digit_counts_on_the_whole_column_match_cell_by_cell(cells):
    digits = [positions_csv._digits(cell) for cell in cells]
    assert positions_csv._digit_counts(cells) == (max(d for d, _ in digits), max(s for _, s in digits))


def test_a_numpy_without_its_string_functions_reads_a_time_column_cell_by_cell(tmp_path, monkeypatch):
    """NumPy before 2.2 (which the project's numpy>=1.26 admits) has no np.strings.partition: reading a CSV with a
    time column had ended in AttributeError; it counts the cells one by one, to the same frame rate."""
    path = tmp_path / "t.csv"
    path.write_text("time,a_x,a_y,a_z\n0.0,0,1,0\n0.0333,0,1.1,0\n0.0667,0,1.2,0\n0.1,0,1.3,0\n")
    fast = positions_csv.read_csv(path)
    monkeypatch.setattr(positions_csv, "_COLUMN_STRINGS", False)
    monkeypatch.setattr(np, "strings", None, raising=False)  # any use of it would now fail
    slow = positions_csv.read_csv(path)
    assert slow[0] == fast[0] and np.array_equal(slow[1], fast[1]) and slow[2] == fast[2]
    assert fast[2] == pytest.approx(30.0, rel=1e-3)


def test_a_numpy_whose_loadtxt_hands_converters_bytes_reads_a_time_column(tmp_path, monkeypatch):
    """NumPy 1.x's loadtxt (default encoding "bytes") gives converters bytes, not str: under numpy 1.26 every CSV
    with a time column had failed with "TypeError: a bytes-like object is required" while its digits were counted
    (found by running the suite under numpy 1.26.4). Emulated here, with numpy 1.x's missing np.strings: the same
    names, positions and rate."""
    path = tmp_path / "t.csv"
    path.write_text("time,a_x,a_y,a_z\n0.0,0,1,0\n0.0333,0,1.1,0\n0.0667,0,1.2,0\n0.1,0,1.3,0\n")
    expected = positions_csv.read_csv(path)
    real_loadtxt = np.loadtxt

    def loadtxt_of_numpy_1(*args, converters=None, **kwargs):
        as_bytes = {column: (lambda cell, f=f: f(cell.encode("latin-1"))) for column, f in (converters or {}).items()}
        return real_loadtxt(*args, converters=as_bytes or None, **kwargs)

    monkeypatch.setattr(np, "loadtxt", loadtxt_of_numpy_1)
    monkeypatch.setattr(positions_csv, "_COLUMN_STRINGS", False)  # nor has numpy 1.x np.strings
    monkeypatch.setattr(np, "strings", None, raising=False)
    got = positions_csv.read_csv(path)
    assert got[0] == expected[0] and np.array_equal(got[1], expected[1]) and got[2] == expected[2]


# ---------------------------------------------------------------------------------------- errors and odd files


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2\x1c,3,4,5,6\n", r"bad\.csv:3: column 4 \(hip_y\): expected a number"),
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2,3,4,5,6\n\n2,0.2,1,2,3,4,5,1e999\n", r"bad\.csv:5: column 8 \(knee_z\): not a finite"),
        ("0,0.0,1,2,3,4,5,6\n2,0.1,1,2,3,4,5,6\n", r"bad\.csv:3: column 1 \(frame\): expected frame 1 after frame 0"),
        ("0,0.00,1,2,3,4,5,6\r\n1,0.10,1,2,3,4,5,6\r\n2,0.20,1,2,3,4,5,6\r\n3,0.40,1,2,3,4,5,6\r\n4,0.50,1,2,3,4,5,6\r\n",
         r"bad\.csv:5: column 2 \(time\): non-uniform time step 0\.2"),
        ("0,0.0,1,2,3,4,5,6\n1,0.1,1,2,3,4,5,6,7\n", r"bad\.csv:3: expected 8 values, found 9"),
        ("0,0.0,1,2,3,4,5,6\n,,,,,,,\n1,0.1,1,2,3,4,5,6\n3,0.2,1,2,3,4,5,6\n", r"bad\.csv:5: column 1 \(frame\)"),
    ],
)  # fmt: skip
def test_errors_still_name_the_first_bad_cell(tmp_path, body, pattern):
    path = tmp_path / "bad.csv"
    path.write_text("frame,time,hip_x,hip_y,hip_z,knee_x,knee_y,knee_z\n" + body)
    with pytest.raises(FormatError, match=pattern):
        positions.load(path)


def test_files_numpy_does_not_take_are_read_row_by_row(tmp_path):
    path = tmp_path / "odd.csv"
    path.write_text('\n\nframe,a_x,a_y,a_z\n0,"1",2_0,\u0663\n\n1, 4 ,5,6\n  \n')
    assert positions_csv._read_fast(path) is None
    back = positions.load(path)
    np.testing.assert_array_equal(back.positions, [[[1, 20, 3]], [[4, 5, 6]]])


def test_numpy_path_reads_in_a_fraction_of_the_row_readers_memory(tmp_path):
    rng = np.random.default_rng(1)
    array = rng.normal(size=(4000, 20, 3))
    path = tmp_path / "big.csv"
    positions.save(JointPositions([f"j{k}" for k in range(20)], array, fps=30.0), path)
    tracemalloc.start()
    try:
        back = positions.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert back.positions.tobytes() == array.tobytes() and back.fps == 30.0
    # the table numpy fills and the positions copied out of it (~2.7x the array here); the row-by-row reader kept the
    # text and a Python float per cell (~19x)
    assert peak < 4 * array.nbytes, f"peak {peak / 1e6:.1f} MB for a {array.nbytes / 1e6:.1f} MB array"
