"""The ``.csv`` form of joint positions: reading and writing (the format is described in
:mod:`skelanim.io.positions`, which dispatches here and wraps the result in a ``JointPositions``).

Reading takes one of two paths with the same result:

* :func:`read_csv` first parses the rows with :func:`numpy.loadtxt` and checks them with whole-array tests
  (right width, finite, frames counting up by 1, times increasing and uniform): a 100 000-frame file reads in a
  third of the time and a tenth of the memory of a row-by-row read (``benchmarks/positions_csv.py``);
* a file that this path refuses for any reason (a bad cell, a quoted cell, anything numpy parses otherwise than
  Python's ``float``) is read again row by row (:func:`read_csv_rows`), which raises the error at the first bad
  cell with its line and column, or reads what the fast path did not (quoted numbers, ``1_000``, non-ASCII
  digits). The values are ``float(cell)`` on both paths (numpy parses a float cell with the same
  ``PyOS_string_to_double``), so both give bit-identical arrays.
"""

from __future__ import annotations

import csv
import io
import itertools
import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from skelanim.errors import FormatError, SkelanimError, SkeletonError
from skelanim.io.atomic import atomic_open
from skelanim.io.common import rate_within, read_utf8_text

__all__ = ["read_csv", "read_csv_rows", "write_csv"]

_AXES = ("x", "y", "z")

#: What ``str.strip()`` takes off an ASCII string (``float`` takes only `` \t\n\r\v\f``; numpy ``\x1c``-``\x1f`` too).
_ASCII_SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"

#: Bytes of files the fast path leaves to the row-by-row one: NUL, and ``\x1c``-``\x1f``, which numpy strips from
#: a number's ends and Python's ``float`` refuses (in UTF-8 these bytes are only ever those characters).
_ODD_BYTES = (b"\x00", b"\x1c", b"\x1d", b"\x1e", b"\x1f")

#: Frame numbers whose float64 steps of 1 are exact (the fast path checks them in float64).
_EXACT_INTEGERS = 2.0**52

#: Whether numpy has the vectorised string functions the time column's digit count uses (``np.strings``, with
#: ``partition`` from NumPy 2.2); older numpy counts the cells one by one (it had raised AttributeError).
_COLUMN_STRINGS = hasattr(getattr(np, "strings", None), "partition")


# ---------------------------------------------------------------------------------------- the time column


def _digits(cell: str) -> tuple[int, int]:
    """``(decimals, significant digits)`` a number is written with: ``"0.0333"`` is (4, 3), ``"91.70"``
    (2, 4), ``"1.5e-05"`` (6, 2); ``"0.0"`` has no significant digit."""
    mantissa, _, exponent = cell.strip().lower().lstrip("+-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    return len(fraction) - int(exponent or 0), len((whole + fraction).lstrip("0"))


def _digit_counts(cells: Sequence[str]) -> tuple[int, int]:
    """The most decimals and the most significant digits (:func:`_digits`) of any of ``cells`` (finite numbers),
    counted on the whole column at once (as ASCII bytes); cells that are not plain ASCII (or hold ``_``), or all of
    them under a numpy without :data:`_COLUMN_STRINGS`, are counted one by one."""
    try:
        if not _COLUMN_STRINGS:
            raise ValueError("counted one by one")
        text = np.asarray(cells, dtype=np.bytes_)  # UnicodeEncodeError (a ValueError) where a cell is not ASCII
        if text.size == 0 or np.any(np.strings.find(text, b"_") >= 0):
            raise ValueError("counted one by one")
        text = np.strings.lstrip(np.strings.lower(np.strings.strip(text, _ASCII_SPACE)), b"+-")
        mantissa, _, exponent = np.strings.partition(text, b"e")
        del text
        power = np.where(np.strings.str_len(exponent) > 0, exponent, b"0").astype(np.int64)
        del exponent
        whole, _, fraction = np.strings.partition(mantissa, b".")
        del mantissa
        decimals = int((np.strings.str_len(fraction) - power).max())
        significant = int(np.strings.str_len(np.strings.lstrip(np.strings.add(whole, fraction), b"0")).max())
        return decimals, significant
    except (ValueError, OverflowError):
        digits = [_digits(cell) for cell in cells]
        return max(d for d, _ in digits), max(s for _, s in digits)


def _time_rounding(cells: Sequence[str], times: np.ndarray) -> np.ndarray:
    """``(F,)`` how far each written time may be from the value it stands for: half a unit of the column's
    precision, the finest number of decimals ``D`` or of significant digits ``S`` any of its cells shows
    (a writer rounds to fixed decimals or to fixed significant digits; shortest-``repr`` times show ~17
    digits and so are exact to float64 rounding): ``0.5 * max(10**-D, 10**(floor(log10|t|) - S + 1))``."""
    decimals, significant = _digit_counts(cells)
    significant = max(significant, 1)
    magnitude = np.floor(np.log10(np.maximum(np.abs(times), 1e-300)))
    written = 0.5 * np.maximum(10.0**-decimals, np.where(times == 0, 0.0, 10.0 ** (magnitude - significant + 1)))
    with np.errstate(over="ignore"):  # the spacing of the largest floats is infinite: no warning for a user to read
        return np.maximum(written, 2.0 * np.spacing(np.abs(times)))  # a float64 time is itself rounded (frame / fps)


def _csv_fps(
    path: str | os.PathLike,
    column: int,
    cells: Sequence[str],
    times: Sequence[float] | np.ndarray,
    lines: Sequence[int] | None,
) -> float | None:
    """The frame rate of the CSV time column ``column`` (0-based; ``cells`` its ``F`` texts, ``times`` their values,
    ``lines`` the rows' 1-based lines, ``None`` where unknown; see the module docstring), or ``None`` for a single
    frame.

    A :class:`FormatError` when some step differs from the mean step by more than the rounding of the written
    times allows (a dropped or inserted frame, or a variable rate), at the line of the first row whose step
    is off the median step (else of the row whose step is farthest from it)."""
    if len(times) < 2:
        return None
    t = np.asarray(times, dtype=np.float64)
    steps = np.diff(t)  # (F - 1,), all > 0 (checked row by row)
    rounding = _time_rounding(cells, t)
    own = rounding[1:] + rounding[:-1]  # how far each step may be from the true one
    step = (float(t[-1]) - float(t[0])) / (len(t) - 1)  # the mean step, known to +- uncertainty
    uncertainty = float(rounding[0] + rounding[-1]) / (len(t) - 1) + 4 * float(np.spacing(step))
    if np.any(np.abs(steps - step) > own + uncertainty):  # no uniform rate rounds to these times
        median = float(np.median(steps))
        off = np.abs(steps - median) - own - 2.0 * float(rounding.max())  # the median is a step (or two's mean)
        k = int(np.flatnonzero(off > 0)[0] if np.any(off > 0) else np.argmax(off)) + 1
        raise FormatError(
            f"column {column + 1} (time): non-uniform time step {float(steps[k - 1])!r} s from "
            f"{float(t[k - 1])!r} to {float(t[k])!r}, expected {median!r} s (the median step) for a fixed frame "
            "rate: a dropped or repeated frame? (resample the data to a fixed rate)",
            path=path,
            line=None if lines is None else lines[k],
        )
    return rate_within(step, uncertainty)


# ---------------------------------------------------------------------------------------- the header


@dataclass(frozen=True)
class _Header:
    """A parsed header: its stripped ``cells``, the joint ``names``, the 0-based ``frame_col`` and ``time_col``
    (``None`` when absent), the column of the first coordinate and the header's 1-based line."""

    cells: list[str]
    names: list[str]
    frame_col: int | None
    time_col: int | None
    first: int
    line: int


class _Records(Protocol):
    """A ``csv.reader``: records and the 1-based line of the last one read."""

    line_num: int

    def __iter__(self) -> Iterator[list[str]]: ...

    def __next__(self) -> list[str]: ...


def _read_header(reader: _Records, path: str | os.PathLike) -> _Header:
    """The first non-blank record of ``reader`` (a ``csv.reader``) as a header; :class:`FormatError` if it is none."""
    header = next(reader, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(reader, None)
    if header is None:
        raise FormatError("empty file: expected a header frame,<joint>_x,<joint>_y,<joint>_z,...", path=path)
    header_line = reader.line_num
    header = [cell.strip() for cell in header]
    column = 0
    frame_col = time_col = None
    if header and header[0].lower() == "frame":
        frame_col, column = 0, 1
    if len(header) > column and header[column].lower() == "time":
        time_col, column = column, column + 1
    coordinates = header[column:]
    if not coordinates or len(coordinates) % 3:
        raise FormatError(
            "header: expected [frame,][time,] then 3 columns per joint (<joint>_x,<joint>_y,<joint>_z), "
            f"found {len(coordinates)} coordinate columns",
            path=path,
            line=header_line,
        )
    names: list[str] = []
    for k in range(0, len(coordinates), 3):
        triple = coordinates[k : k + 3]
        stem = triple[0][:-2]
        if not all(cell.lower() == f"{stem}_{axis}".lower() and len(cell) > 2 for cell, axis in zip(triple, _AXES)):
            raise FormatError(
                f"header column {column + k + 1}: expected <joint>_x,<joint>_y,<joint>_z, found {','.join(triple)}",
                path=path,
                line=header_line,
            )
        names.append(stem)
    if len(set(names)) != len(names):
        raise FormatError(
            f"header: duplicate joints {sorted({n for n in names if names.count(n) > 1})}",
            path=path,
            line=header_line,
        )
    return _Header(header, names, frame_col, time_col, column, header_line)


# ---------------------------------------------------------------------------------------- reading


def _has_odd_bytes(handle: io.BufferedIOBase) -> bool:
    """Whether the rest of ``handle`` holds a byte of :data:`_ODD_BYTES` (a scan at memchr speed, 1 MiB at a time)."""
    chunk = bytearray(1 << 20)
    while size := handle.readinto(chunk):
        if any(chunk.find(odd, 0, size) >= 0 for odd in _ODD_BYTES):
            return True
    return False


def _drop_leading_columns(table: np.ndarray, lead: int, rows: int = 4096) -> np.ndarray:
    """The columns ``lead:`` of the C-contiguous ``table`` ``(F, W)`` as a C-contiguous ``(F, W - lead)`` array in
    ``table``'s own memory (its leading rows; ``table`` is overwritten): moved forward ``rows`` rows at a time, so
    that no second table is ever held (numpy buffers a block whose source and destination overlap)."""
    frames, width = table.shape
    kept = width - lead
    flat = table.reshape(-1)
    for start in range(0, frames, rows):
        stop = min(start + rows, frames)  # a block's destination ends before any later block's source starts
        flat[start * kept : stop * kept].reshape(stop - start, kept)[...] = table[start:stop, lead:]
    return flat[: frames * kept].reshape(frames, kept)


def _read_fast(path: str | os.PathLike) -> tuple[list[str], np.ndarray, float | None] | None:
    """``(names, positions (F, J, 3), fps)`` of a well-formed CSV, parsed by :func:`numpy.loadtxt` and checked
    whole-array; ``None`` for any file it does not take (the row-by-row reader then reads it or names the fault)."""
    try:
        with open(path, "rb") as raw:
            if _has_odd_bytes(raw):
                return None
            raw.seek(0)
            with io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as handle:
                header = _read_header(csv.reader(iter(handle.readline, "")), path)
                time_cells: list[str] = []

                def time_value(cell: str | bytes) -> float:  # the time texts are kept: their digits give the rounding
                    # numpy before 2.0 hands converters bytes (loadtxt's default encoding was "bytes")
                    text = cell.decode("latin-1") if isinstance(cell, bytes) else cell
                    time_cells.append(text)
                    return float(text)

                converters: dict[int | str, Callable[[str | bytes], float]] | None = (
                    None if header.time_col is None else {header.time_col: time_value}
                )
                first = handle.readline()
                while first and not first.strip():  # blank lines, skipped as the row-by-row reader does
                    first = handle.readline()
                if not first:
                    return None  # no frames (numpy would warn)
                table = np.loadtxt(
                    itertools.chain((first,), handle),
                    dtype=np.float64,
                    delimiter=",",
                    comments=None,
                    quotechar=None,
                    ndmin=2,
                    converters=converters,
                )
        frames, width = table.shape
        if frames == 0 or width != len(header.cells) or not np.isfinite(table).all():
            return None
        if header.frame_col is not None:
            numbers = table[:, header.frame_col]
            start = float(numbers[0])
            if (
                abs(start) >= _EXACT_INTEGERS
                or frames >= _EXACT_INTEGERS
                or not np.array_equal(numbers, start + np.arange(frames, dtype=np.float64))
                or not start.is_integer()
            ):
                return None
        fps = None
        if header.time_col is not None:
            times = table[:, header.time_col]
            if np.any(times[1:] <= times[:-1]) or len(time_cells) != frames:
                return None
            fps = _csv_fps(path, header.time_col, time_cells, times, None)
        positions = _drop_leading_columns(table, header.first)
        return header.names, positions.reshape(frames, len(header.names), 3), fps
    except (OSError, ValueError, ArithmeticError, csv.Error, SkelanimError):
        return None


def read_csv_rows(path: str | os.PathLike) -> tuple[list[str], np.ndarray, float | None]:
    """``(names, positions (F, J, 3) float64, fps or None)`` of a positions CSV, read row by row: the error at the
    first bad cell names its line and column (:class:`FormatError`). :func:`read_csv` falls back to it."""
    text = read_utf8_text(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = _read_header(reader, path)
        cells, names, frame_col, time_col, column = (
            header.cells,
            header.names,
            header.frame_col,
            header.time_col,
            header.first,
        )
        width = len(cells)
        rows: list[list[float]] = []
        times: list[float] = []
        time_cells: list[str] = []
        lines: list[int] = []
        first_frame: int | None = None
        for record in reader:
            if not any(cell.strip() for cell in record):
                continue
            line = reader.line_num
            if len(record) != width:
                raise FormatError(f"expected {width} values, found {len(record)}", path=path, line=line)
            values: list[float] = []
            for c, cell in enumerate(record):
                try:
                    value = float(cell)
                except ValueError:
                    raise FormatError(
                        f"column {c + 1} ({cells[c]}): expected a number, found {cell.strip()[:40]!r}",
                        path=path,
                        line=line,
                    ) from None
                if not math.isfinite(value):
                    raise FormatError(
                        f"column {c + 1} ({cells[c]}): not a finite number ({cell.strip()})", path=path, line=line
                    )
                values.append(value)
            if frame_col is not None:
                if values[frame_col] != int(values[frame_col]):
                    raise FormatError(
                        f"column 1 (frame): expected an integer frame number, found {record[0].strip()!r}",
                        path=path,
                        line=line,
                    )
                if first_frame is None:
                    first_frame = int(values[frame_col])
                elif int(values[frame_col]) != first_frame + len(rows):
                    raise FormatError(
                        f"column 1 (frame): expected frame {first_frame + len(rows)} after frame "
                        f"{first_frame + len(rows) - 1}, found {record[0].strip()} (frames must count up by 1: "
                        "a skipped, repeated or out-of-order frame)",
                        path=path,
                        line=line,
                    )
            if time_col is not None:
                if times and values[time_col] <= times[-1]:
                    raise FormatError(
                        f"column {time_col + 1} (time): times must increase, {values[time_col]} after {times[-1]}",
                        path=path,
                        line=line,
                    )
                times.append(values[time_col])
                time_cells.append(record[time_col])
            rows.append(values[column:])
            lines.append(line)
    except csv.Error as exc:
        raise FormatError(f"malformed CSV ({exc})", path=path, line=reader.line_num) from None
    if not rows:
        raise FormatError("no frames after the header", path=path)
    positions = np.array(rows, dtype=np.float64).reshape(len(rows), len(names), 3)
    fps = _csv_fps(path, time_col, time_cells, times, lines) if time_col is not None else None
    return names, positions, fps


def read_csv(path: str | os.PathLike) -> tuple[list[str], np.ndarray, float | None]:
    """``(names, positions (F, J, 3) float64, fps or None)`` of a positions CSV (the format of
    :mod:`skelanim.io.positions`): numpy's reader for a well-formed file, else :func:`read_csv_rows`, which raises
    the :class:`FormatError` naming the first bad line and column (or reads what numpy would not)."""
    fast = _read_fast(path)
    return fast if fast is not None else read_csv_rows(path)


# ---------------------------------------------------------------------------------------- writing


def _name_problem(name: str) -> str | None:
    """Why joint ``name`` would not read back from a CSV header unchanged, or ``None`` if it would: its header cells
    are written and read back by :func:`_read_header` itself (the reader's own rule: a cell's leading whitespace is
    not kept, an empty name leaves ``_x``, a carriage return the CSV writer does not quote ends the line)."""
    if not name:
        return "the name is empty (its columns would be _x, _y, _z)"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "the name is not valid Unicode text"
    line = io.StringIO()
    csv.writer(line, lineterminator="\n").writerow(["frame", *(f"{name}_{axis}" for axis in _AXES)])
    try:
        back = _read_header(csv.reader(io.StringIO(line.getvalue(), newline="")), "").names
    except FormatError:
        return "the header would not read back (a line break the CSV writer leaves unquoted)"
    if back != [name]:
        return f"it would read back as {back[0]!r} (the reader strips a header cell's whitespace)"
    return None


def write_csv(path: str | os.PathLike, names: Sequence[str], positions: np.ndarray, fps: float | None) -> None:
    """Write ``positions`` ``(F, J, 3)`` of joints ``names`` (with a time column when ``fps`` is known) atomically;
    values as ``repr`` (exact round trips). A name that would not read back unchanged (:func:`_name_problem`) is
    refused, before anything is written, with a :class:`SkeletonError` naming the joint."""
    for j, name in enumerate(names):
        problem = _name_problem(name)
        if problem is not None:
            raise SkeletonError(f"joint name {name!r} cannot be written to a CSV file: {problem}; rename the joint or "
                                "write .npz, which keeps any name", path=path, where=f"joint {j}")  # fmt: skip
    header = ["frame"] + (["time"] if fps is not None else []) + [f"{name}_{axis}" for name in names for axis in _AXES]
    flat = positions.reshape(positions.shape[0], -1).tolist()
    with atomic_open(path, "w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        for f, row in enumerate(flat):
            lead = [str(f)] + ([repr(f / fps)] if fps is not None else [])
            writer.writerow(lead + [repr(v) for v in row])
