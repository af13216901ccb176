"""The two MOTION-block number parsers agree: the compiled scanner (``skelanim.io._bvh_numbers``, built from
``_bvh_numbers.c``) and the NumPy path give the same values bit for bit and the same errors (message and
line), and both equal Python's ``float()`` (the independent reference) on every token.

Tests that call the scanner directly skip when it was not built (no C compiler); the comparisons then
compare the NumPy path with itself and with ``float()``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skelanim.errors import FormatError
from skelanim.io import bvh, bvh_numbers
from skelanim.io.bvh_parse import parse_bvh_bytes

NATIVE = bvh_numbers.NATIVE
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C extension is not built (no C compiler at install)")


def _parse(body: bytes, channels: int, frames: int, *, native: bool) -> tuple[np.ndarray, int] | str:
    """``parse_motion_values`` by one path: its result, or the FormatError as text."""
    saved = bvh_numbers.NATIVE
    bvh_numbers.NATIVE = NATIVE if native else None
    try:
        return bvh_numbers.parse_motion_values(body, first_line=7, channels=channels, frames=frames, path="t.bvh",
                                               frames_line=5)
    except FormatError as exc:
        return str(exc)
    finally:
        bvh_numbers.NATIVE = saved


def _assert_same(a: tuple[np.ndarray, int] | str, b: tuple[np.ndarray, int] | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a[1] == b[1] and a[0].shape == b[0].shape
    assert np.array_equal(a[0].view(np.uint64), b[0].view(np.uint64))  # bit for bit, signed zeros too


def _both(body: bytes, channels: int, frames: int) -> tuple[np.ndarray, int] | str:
    c, numpy_path = _parse(body, channels, frames, native=True), _parse(body, channels, frames, native=False)
    _assert_same(c, numpy_path)
    return c


@pytest.fixture
def without_extension(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(bvh_numbers, "NATIVE", None)
    yield


def test_number_parser_names_the_path(without_extension: None) -> None:
    assert bvh_numbers.number_parser() == "NumPy"


@needs_native
def test_extension_is_used_when_built() -> None:
    assert bvh_numbers.number_parser() == "C extension"


def _family_files(mocap_dir: Path) -> list[Path]:
    return [min(d.glob("*.bvh")) for d in sorted(mocap_dir.iterdir()) if d.is_dir() and any(d.glob("*.bvh"))]


def test_both_paths_equal_float_on_a_file_of_every_family(mocap_dir: Path) -> None:
    files = _family_files(mocap_dir)
    assert len(files) >= 5
    for path in files:
        data = path.read_bytes()
        parsed = parse_bvh_bytes(data, str(path))
        body = data.split(b"Frame Time:")[1].split(b"\n", 1)[1]
        channels = parsed.values.shape[1]
        result = _both(body, channels, parsed.values.shape[0])
        assert not isinstance(result, str), result
        expected = np.array([float(t) for t in body.split()]).reshape(-1, channels)[: parsed.values.shape[0]]
        assert np.array_equal(result[0].view(np.uint64), expected.view(np.uint64)), path


TOKENS = [
    "0", "-0", "+0", "0.0", "-0.000", "1", "+2", "-3.5", ".5", "-.5", "5.", "-5.", "+.5e1", "1e5", "1E-5", "-2.5e+3",
    "5.e3", "0e999999999", "1e-400", "1e22", "1e23", "1e-22", "1e-23", "4.35e-22", "9007199254740992",
    "9007199254740993", "9007199254740993.0", "123456789012345678", "1234567890123456789", "12345678901234567890",
    "0.1234567890123456789", "0.00000000000000000000000123", "00000.000001", "000123.4500", "179.99", "-180",
    "2.2250738585072014e-308", "4.9e-324", "2e-324", "1.7976931348623157e308", "0.1", "0.2", "0.3", "1.0000",
    "-17.3198", "1" * 30, "1" * 30 + ".5", "3." + "1" * 40, "7e" + "0" * 30 + "1",
]  # fmt: skip


@pytest.mark.parametrize("sep", [" ", "\t", "  \t ", " \r", "\x0b", "\x0c"])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_number_form_bit_identical_to_float(sep: str, newline: str) -> None:
    rows = [TOKENS[i : i + 5] for i in range(0, len(TOKENS) - 4, 5)]
    body = ((sep + newline).join(sep.join(r) for r in rows) + newline).encode()
    result = _both(body, 5, len(rows))
    assert not isinstance(result, str), result
    expected = np.array([[float(t) for t in r] for r in rows])
    assert np.array_equal(result[0].view(np.uint64), expected.view(np.uint64))


def _window_tokens() -> list[str]:
    """Short tokens of every shape: every length from 1 to 10 characters after the sign, the dot at every
    place (or none), each sign, some digits zero (where a word-at-a-time scanner would have its edges)."""
    out = []
    for length in range(1, 11):
        digits = "".join("9876543210"[(k * 7) % 10] for k in range(length))
        forms = [digits] + [digits[:k] + "." + digits[k:] for k in range(length + 1)]
        out += [sign + form for form in forms for sign in ("", "-", "+")]
    return out + ["0", "-0", "+0", "-0.", "-.0", "00000000", "0000000.0", ".0000000", "12345678", "1234567.", ".1234567",
                  "9999999.9", "99999999", "0.0000001", "1.5e3", "15.e-2", "-.5E+2"]  # fmt: skip


@pytest.mark.parametrize("newline", ["\n", ""])
def test_short_tokens_bit_identical_to_float(newline: str) -> None:
    tokens = _window_tokens()
    body = (" ".join(tokens) + newline).encode()  # one frame line: tokens follow each other closely
    result = _both(body, len(tokens), 1)
    assert not isinstance(result, str), result
    assert np.array_equal(result[0][0].view(np.uint64), np.array([float(t) for t in tokens]).view(np.uint64))
    for token in tokens:  # alone, at the very end of the text (fewer than 8 bytes left), and before a newline
        for text in (token, token + "\n", token + "\t\r\n", token + "\n" + "0\n" * 4):
            alone = _both(text.encode(), 1, 1)
            assert not isinstance(alone, str), (text, alone)
            assert alone[0].view(np.uint64)[0, 0] == np.array(float(token)).view(np.uint64), text


@pytest.mark.parametrize("token", ["1.2.3", "12..3", "1234567..", "-", "+", ".", "-.", "+-1", "1-", "12345678-",
                                   "1234.567x", "1234567\x00", "\x001", "1,5", "1_000", "0x1F", "1e", "12.3e+",
                                   "١٢"])  # fmt: skip
def test_short_tokens_rejected_like_the_grammar_says(token: str) -> None:
    # alone, at the end of the text, and with more text after the token
    for text, channels in ((token, 1), (token + "\n", 1), (token + " 1\n", 2), ("1 " + token + "\n", 2),
                           (token + "\n" + "1\n" * 8, 1), ("1 " + token + "\n" + "1 1\n" * 8, 2)):
        result = _both(text.encode("utf-8"), channels, 1)
        assert isinstance(result, str) and "expected" in result, (text, result)


BAD = [
    (b"1 2 3\n4 5\n", "expected 3 channel values on frame 1, found 2"),
    (b"1 2 3\n4 5 6 7\n", "found 4"),
    (b"1 2 3\n4 5 6", "expected 3 frames"),  # only 2 frames
    (b"1 2 3\n\n\n", "found 1 frame line"),
    (b"1 2 nan\n1 2 3\n1 2 3\n", "'nan'"),
    (b"1 2 inf\n1 2 3\n1 2 3\n", "'inf'"),
    (b"1 2 1e999\n1 2 3\n1 2 3\n", "out of range"),
    (b"1 2 -1.8e308\n1 2 3\n1 2 3\n", "out of range"),
    (b"1 2 3\n1 2 1.2.3\n1 2 3\n", "'1.2.3'"),
    (b"1 2 3\n1 2 3x\n1 2 3\n", "'3x'"),
    (b"1 2 3\n1 2 1_0\n1 2 3\n", "'1_0'"),
    (b"1 2 3\n1 2 0x10\n1 2 3\n", "'0x10'"),
    (b"1 2 3\n1 2 --1\n1 2 3\n", "'--1'"),
    (b"1 2 3\n1 2 +\n1 2 3\n", "'+'"),
    (b"1 2 3\n1 2 .\n1 2 3\n", "'.'"),
    (b"1 2 3\n1 2 e5\n1 2 3\n", "'e5'"),
    (b"1 2 3\n1 2 1e\n1 2 3\n", "'1e'"),
    (b"1 2 3\n1 2 1e+\n1 2 3\n", "'1e+'"),
    (b"1 2 3\n1 2 3\x00\n1 2 3\n", "expected a number"),
    (b"1 2 3\n1 2 \x00\n1 2 3\n", "expected a number"),
    (b"1 2 3\n1 2 3\n1 2 \xff\n", "expected a number"),
    (b"1 2 3\n1 2 \x1c3\n1 2 3\n", "expected a number"),
    (b"1 2 3\n1 2 3\n1 2 3\n0." + b"1" * 600 + b" 1 2\n", None),  # too long to copy: the NumPy path decides
    (b"1 2 3\n1 2 3\n1e" + b"9" * 600 + b" 1 2\n", "out of range"),
]


@pytest.mark.parametrize("body, message", BAD, ids=[str(i) for i in range(len(BAD))])
def test_errors_are_the_same_on_both_paths(body: bytes, message: str | None) -> None:
    result = _both(body, 3, 3)
    if message is None:
        assert not isinstance(result, str)
        return
    assert isinstance(result, str) and message in result, result
    assert result.startswith("t.bvh:")


@pytest.mark.parametrize("body, line, message", [
    (b"1 2 3-4x5678\n1 2\n", 7, "'3-4x5678'"),
    (b"1 2 3-4x56789\n1 2\n", 7, "'3-4x56789'"),  # a 9-character token: checked after the counts, line 8's, had been
    (b"1 2 1e400\n1 2\n", 7, "out of range"),
    (b"1 2 1e400\n1 2 x\n", 7, "out of range"),
    (b"1 2 3\n1 2 123456789012345678x\n4 5\n", 8, "'123456789012345678x'"),
    (b"1 2 3\n4 5\n1 2 1e400\n", 8, "found 2"),  # the count error is the first now
])
def test_the_first_bad_line_is_named_whatever_is_wrong_with_it(body: bytes, line: int, message: str) -> None:
    result = _both(body, 3, 2)
    assert isinstance(result, str) and result.startswith(f"t.bvh:{line}:") and message in result, result


def test_bad_arguments_are_refused_alike_on_both_paths() -> None:
    for native in (True, False):
        for kwargs in ({"start": 7}, {"start": -1}, {"frames": -1}, {"channels": -3}):
            arguments = {"first_line": 1, "channels": 3, "frames": 1, "path": "t.bvh", **kwargs}
            saved = bvh_numbers.NATIVE
            bvh_numbers.NATIVE = NATIVE if native else None
            try:
                with pytest.raises(ValueError, match="start|negative"):
                    bvh_numbers.parse_motion_values(b"1 2 3\n", **arguments)  # type: ignore[arg-type]
            finally:
                bvh_numbers.NATIVE = saved
    result = _both(b"1 2 3\n", 10**12, 1)  # no room for a row of 10^12 in 6 bytes: none allocated (a MemoryError had been)
    assert isinstance(result, str) and "expected 1000000000000 channel values on frame 0, found 3" in result


@needs_native
def test_the_scanner_writes_only_into_an_aligned_float64_buffer() -> None:
    """An audit: the compiled scanner wrote doubles into whatever writable buffer it was given (float32 values came
    out as garbage; a misaligned one is undefined behaviour on strict platforms); it refuses them now."""
    body = b"1 2 3\n4 5 6\n"
    good = np.empty((2, 3))
    assert NATIVE.parse_motion(body, 0, good, 3) == (2, 2) and good.tolist() == [[1, 2, 3], [4, 5, 6]]
    misaligned = np.frombuffer(bytearray(8 * 6 + 1), dtype=np.float64, offset=1, count=6)
    for bad in (np.empty((2, 3), np.float32), np.empty(48, np.uint8), misaligned, np.empty((2, 3), np.int64)):
        with pytest.raises(ValueError, match="out must be an aligned float64 buffer"):
            NATIVE.parse_motion(body, 0, bad, 3)


def test_extra_frames_and_blank_lines() -> None:
    result = _both(b"\n1 2 3\n \t\r\n4 5 6\n7 8 9\n10 11 12\n\n", 3, 2)
    assert not isinstance(result, str)
    assert result[1] == 2 and result[0].tolist() == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize("tail", [b"1 2 x\n", b"1 2\n", b"1 2", b"1 2 3 4\n\n1 2 3\n", b"1e" + b"9" * 600 + b" 1 2\n",
                                  b"1 2 \xff\n"])  # fmt: skip
def test_a_bad_line_after_the_declared_frames_is_ignored_with_them(tail: bytes) -> None:
    """An audit: a line cut off after the declared frames (an export that stopped there) had lost the whole file,
    though every declared frame was whole; it is ignored with the other lines after them. A bad line among the
    declared frames is still an error (above)."""
    body = b"1 2 3\n\n4 5 6\n" + tail
    result = _both(body, 3, 2)
    assert not isinstance(result, str), result
    assert result[0].tolist() == [[1, 2, 3], [4, 5, 6]] and result[1] == len([s for s in tail.split(b"\n") if s.strip()])
    assert isinstance(_both(body, 3, 3), str)  # the same line as a declared frame


def test_huge_declared_frame_count_does_not_allocate_it() -> None:
    result = _both(b"1 2 3\n", 3, 10**15)
    assert isinstance(result, str) and "expected 1000000000000000 frames" in result and ":7:" in result


ALPHABET = st.sampled_from([b"0", b"1", b"9", b".", b"-", b"+", b"e", b"E", b" ", b"\t", b"\r", b"\n", b"\n",
                            b"\x00", b"x", b"\xff", b"12.5", b"-0.25", b"1e3", b"inf", b"nan"])


@needs_native  # without the extension both "paths" are the NumPy one: nothing would be compared
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(ALPHABET, max_size=60), channels=st.integers(1, 4), frames=st.integers(1, 4))
def test_random_blocks_same_on_both_paths(parts: list[bytes], channels: int, frames: int) -> None:
    body = b"".join(parts)
    result = _both(body, channels, frames)
    if not isinstance(result, str):  # read: the first `frames` non-blank lines are float() of their tokens
        lines = [line.split() for line in body.split(b"\n") if line.split()][:frames]
        expected = np.array([[float(t) for t in line] for line in lines])
        assert np.array_equal(result[0].view(np.uint64), expected.view(np.uint64))


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.floats(-1e300, 1e300, allow_nan=False), min_size=6, max_size=6),
       fmt=st.sampled_from(["{!r}", "{:.17g}", "{:.6f}", "{:e}", "{:+.3E}"]))
def test_random_doubles_round_trip_exactly(values: list[float], fmt: str) -> None:
    tokens = [fmt.format(v) for v in values]
    body = (" ".join(tokens[:3]) + "\n" + " ".join(tokens[3:]) + "\n").encode()
    result = _both(body, 3, 2)
    assert not isinstance(result, str), result
    expected = np.array([float(t) for t in tokens]).reshape(2, 3)
    assert np.array_equal(result[0].view(np.uint64), expected.view(np.uint64))


@needs_native
def test_scanner_writes_only_the_rows_it_is_given() -> None:
    assert NATIVE is not None
    out = np.full((1, 3), -7.0)
    assert NATIVE.parse_motion(b"1 2 3\n4 5 6\n7 8 9", 0, out, 3) == (3, 3)
    assert out.tolist() == [[1, 2, 3]]
    guard = np.full(8, -7.0)  # rows = 0: nothing written
    assert NATIVE.parse_motion(b"1 2 3 4 5 6 7 8 9\n", 0, guard[:0], 9) == (1, 1)
    assert NATIVE.parse_motion(b"", 0, guard[:0], 3) == (0, 0)
    assert NATIVE.parse_motion(b"1 2\n", 0, guard[:3], 3) is None  # may have written into its row, not beyond
    assert NATIVE.parse_motion(b"1 2 3\n4 5 6 7\n", 0, guard[:3], 3) is None
    assert (guard[3:] == -7.0).all()
    with pytest.raises(TypeError):
        NATIVE.parse_motion("1 2 3", 0, out, 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        NATIVE.parse_motion(b"1 2 3", 0, out, 0)
    with pytest.raises(ValueError):
        NATIVE.parse_motion(b"1 2 3", 6, out, 3)
    assert NATIVE.parse_motion(b"x\n1 2 3\n4 5 6", 2, out, 3) == (2, 2)  # from an offset
    assert out.tolist() == [[1, 2, 3]]


@needs_native
def test_scanner_survives_binary_junk() -> None:
    assert NATIVE is not None
    rng = np.random.default_rng(0)
    out = np.empty((2, 3))
    for size in range(200):
        junk = rng.integers(0, 256, size=size, dtype=np.uint8).tobytes()
        lines = junk.count(b"\n") + (bool(junk) and not junk.endswith(b"\n"))
        assert NATIVE.parse_motion(junk, 0, out, 3) in (None, (0, lines))
        cut = size // 3
        tail = junk[cut:]
        tail_lines = tail.count(b"\n") + (bool(tail) and not tail.endswith(b"\n"))
        assert NATIVE.parse_motion(junk, cut, out, 3) in (None, (0, tail_lines))


@needs_native  # without the extension both loads take the NumPy path: nothing would be compared
def test_loading_without_the_extension_gives_the_same_motion(mocap_dir: Path) -> None:
    path = _family_files(mocap_dir)[0]
    native = bvh.load(path)
    saved = bvh_numbers.NATIVE
    bvh_numbers.NATIVE = None
    try:
        fallback = bvh.load(path)
    finally:
        bvh_numbers.NATIVE = saved
    values = fallback.metadata["bvh_values"]
    body = path.read_bytes().split(b"Frame Time:")[1].split(b"\n", 1)[1]
    expected = np.array([float(t) for t in body.split()]).reshape(-1, values.shape[1])[: values.shape[0]]
    assert np.array_equal(values.view(np.uint64), expected.view(np.uint64))  # float() of the text, bit for bit
    assert np.array_equal(native.metadata["bvh_values"], fallback.metadata["bvh_values"])
    assert native.rotations.equal(fallback.rotations) and native.root_positions.equal(fallback.root_positions)
    assert math.isfinite(float(native.positions().abs().max()))


@needs_native
def test_scanner_stops_at_a_chunk_end() -> None:
    assert NATIVE is not None
    text = b"1 2 3\n  4 5 6\n7 8 9\n"
    out = np.full((3, 3), -7.0)
    assert NATIVE.parse_motion(text, 0, out, 3, 6) == (1, 1)  # the next line starts with spaces
    assert out[1:].tolist() == [[-7.0] * 3] * 2
    assert NATIVE.parse_motion(text, 6, out, 3, 14) == (1, 1)
    assert out[0].tolist() == [4, 5, 6]
    assert NATIVE.parse_motion(text, 6, out, 3, 6) == (0, 0)
    with pytest.raises(ValueError, match="newline"):
        NATIVE.parse_motion(text, 0, out, 3, 5)  # a chunk must end with whole lines
    with pytest.raises(ValueError):
        NATIVE.parse_motion(text, 7, out, 3, 6)


def _big_block(rng: np.random.Generator, lines: int, channels: int) -> tuple[bytes, np.ndarray]:
    values = np.round(rng.normal(0, 50, size=(lines, channels)), 4)
    text = "\n".join(" ".join(f"{v:.4f}" for v in row) for row in values).encode() + b"\n"
    return text, values


@needs_native
@pytest.mark.parametrize("cpus", [2, 3, 5])
def test_threaded_scan_equals_one_pass(monkeypatch: pytest.MonkeyPatch, cpus: int) -> None:
    """Chunks scanned by several threads give the one-pass result: values bit for bit, counts, frames
    cut by 'Frames:', blank lines (which move rows) and a bad token in any chunk (None)."""
    assert NATIVE is not None
    monkeypatch.setattr(bvh_numbers, "THREAD_CHUNK_BYTES", 512)
    monkeypatch.setattr(bvh_numbers, "_available_cpus", lambda: cpus)
    rng = np.random.default_rng(cpus)
    text, values = _big_block(rng, 300, 7)
    blank = text.replace(b"\n", b"\n\n \n", 40)  # blank lines in the first chunks
    for body in (text, blank, b"junk\n" + blank):
        for rows in (300, 123):
            start = 5 if body.startswith(b"junk") else 0
            one, threaded = np.full((rows, 7), np.nan), np.full((rows, 7), np.nan)
            expected = NATIVE.parse_motion(body, start, one, 7)
            assert expected == (300, body.count(b"\n") - start // 5)
            assert len(bvh_numbers._line_chunks(body, start, cpus)) == cpus
            assert bvh_numbers._scan_native(body, start, threaded, 7) == expected
            assert np.array_equal(threaded, values[:rows]) and np.array_equal(one, threaded)
    broken = bytearray(text)
    broken[-20] = ord("x")  # in the last chunk
    assert bvh_numbers._scan_native(bytes(broken), 0, np.empty((300, 7)), 7) is None
    assert bvh_numbers._scan_native(text[:-9], 0, np.empty((300, 7)), 7) is None  # a short last line
    result = _parse(text, 7, 300, native=True)
    assert not isinstance(result, str) and np.array_equal(result[0], values)
    long_token = b"1.23456789012345678901234e-3"  # beyond the fast path: PyOS_string_to_double, GIL taken back
    exact = text.replace(b"\n", b" " + long_token + b"\n")
    threaded = np.empty((300, 8))
    assert bvh_numbers._scan_native(exact, 0, threaded, 8) == (300, 300)
    assert (threaded[:, 7] == float(long_token)).all() and np.array_equal(threaded[:, :7], values)
