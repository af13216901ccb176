"""Fuzzing the BVH reader: corrupted files give a Motion or a FormatError, never another exception.

Plus a property test on random *valid* files (random trees, channel subsets and orders): the reader
agrees with an independent scipy forward kinematics, and read -> write -> read keeps every number.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from skelanim import Motion
from skelanim.errors import FormatError
from skelanim.io import bvh
from skelanim.io.bvh_parse import parse_bvh_bytes

BASE = """HIERARCHY
ROOT Hips
{
\tOFFSET 0.5 1.0 -2.0
\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
\tJOINT Spine
\t{
\t\tOFFSET 0 10 0
\t\tCHANNELS 3 Zrotation Xrotation Yrotation
\t\tJOINT Head
\t\t{
\t\t\tOFFSET 0 10 0
\t\t\tCHANNELS 6 Xposition Yposition Zposition Yrotation Xrotation Zrotation
\t\t\tEnd Site
\t\t\t{
\t\t\t\tOFFSET 0 5 0
\t\t\t}
\t\t}
\t}
\tJOINT Leg
\t{
\t\tOFFSET 5 -10 0
\t\tCHANNELS 0
\t}
}
MOTION
Frames: 3
Frame Time: 0.0333333
1.0 90.5 -3.25 10 -20.5 30 1 2 3 0.1 0.2 0.3 45 -45 179.99
1.5 91.5 -3.5e-1 11 -21.5 31 2 3 4 0.2 0.3 0.4 46 -46 -179.5
2.0 92.5 -3.75 12 -22.5 +32 3 4 5 0.3 0.4 0.5 47 -47 181.0
"""
BASES = [BASE.encode(), BASE.replace("\n", "\r\n").encode()]
WEIRD = ["nan", "inf", "-inf", "1e999", "-1e308", "1e-400", "99999999999999999999999", "0x10", "1_0", "", "--1",
         ".", "e5", "1e", "+-1", "1.2.3", "-0", "1e22", "1e23", "0.00000000000000000001", "٣", "½", "{", "}",
         "JOINT", "End", "MOTION", "Frames:", "CHANNELS", "OFFSET", "ROOT", "\x00", "\xff", "9" * 40]

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True, scope="module")
def _single_thread() -> Iterator[None]:
    # thousands of tiny loads: torch's thread pool only adds latency here
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _load_or_format_error(data: bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            motion = bvh.loads(data, "fuzz.bvh")
        except FormatError as exc:
            assert type(exc) is FormatError
            assert str(exc).startswith("fuzz.bvh:") and exc.line is not None and exc.line >= 1
            assert exc.__cause__ is None, f"an unexpected {type(exc.__cause__).__name__} was wrapped: {exc}"
            return
    assert isinstance(motion, Motion)
    assert torch.isfinite(motion.rotations).all() and torch.isfinite(motion.root_positions).all()


def _tokens(data: bytes) -> list[bytes]:
    return re.split(rb"(\s+)", data)  # words at even indices, whitespace at odd ones


fuzz = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


@fuzz
@given(base=st.sampled_from(BASES), cut=st.floats(0, 1))
def test_truncated_anywhere(base: bytes, cut: float) -> None:
    _load_or_format_error(base[: int(cut * len(base))])


@fuzz
@given(base=st.sampled_from(BASES), edits=st.lists(
    st.tuples(st.sampled_from(["delete", "swap", "duplicate"]), st.floats(0, 1), st.floats(0, 1)),
    min_size=1, max_size=4))
def test_tokens_deleted_swapped_duplicated(base: bytes, edits: list[tuple[str, float, float]]) -> None:
    parts = _tokens(base)
    for kind, a, b in edits:
        words = list(range(0, len(parts), 2))
        i, j = words[int(a * (len(words) - 1))], words[int(b * (len(words) - 1))]
        if kind == "delete":
            parts[i] = b""
        elif kind == "swap":
            parts[i], parts[j] = parts[j], parts[i]
        else:
            parts[i] = parts[i] + b" " + parts[i]
    _load_or_format_error(b"".join(parts))


@fuzz
@given(base=st.sampled_from(BASES), where=st.floats(0, 1),
       value=st.one_of(st.sampled_from(WEIRD), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                       st.integers(-10**30, 10**30).map(str), st.text(max_size=8)))
def test_weird_numbers_and_words(base: bytes, where: float, value: str) -> None:
    parts = _tokens(base)
    words = list(range(0, len(parts), 2))
    parts[words[int(where * (len(words) - 1))]] = value.encode("utf-8", "surrogatepass")
    _load_or_format_error(b"".join(parts))


@fuzz
@given(base=st.sampled_from(BASES), which=st.sampled_from([rb"CHANNELS (\d+)", rb"Frames: (\d+)", rb"Frame Time: (\S+)"]),
       nth=st.integers(0, 3),
       value=st.one_of(st.integers(-3, 12).map(str), st.integers(0, 10**12).map(str),
                       st.sampled_from(["0", "-0.1", "1e-320", "1e308", "abc", "", "3.0", "0x3"])))
def test_counts_changed(base: bytes, which: bytes, nth: int, value: str) -> None:
    matches = list(re.finditer(which, base))
    m = matches[nth % len(matches)]
    _load_or_format_error(base[: m.start(1)] + value.encode() + base[m.end(1):])


@fuzz
@given(base=st.sampled_from(BASES), where=st.floats(0, 1), length=st.integers(0, 20), junk=st.binary(max_size=24))
def test_random_bytes_spliced_in(base: bytes, where: float, length: int, junk: bytes) -> None:
    i = int(where * len(base))
    _load_or_format_error(base[:i] + junk + base[i + length:])


@fuzz
@given(data=st.one_of(st.binary(max_size=300), st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.lists(st.sampled_from(["HIERARCHY", "ROOT", "JOINT", "a", "{", "}", "OFFSET", "0", "1.5",
                                                "CHANNELS", "3", "Xrotation", "Yposition", "End", "Site", "MOTION",
                                                "Frames:", "Frame", "Time:", "\n", " ", "\t", "\r\n"]),
                               max_size=80).map(lambda w: " ".join(w).encode())))
def test_arbitrary_input(data: bytes) -> None:
    _load_or_format_error(data)


# ------------------------------------------------------------------------------- random valid files


@st.composite
def valid_bvh(draw: st.DrawFn) -> tuple[str, list[int], list[list[str]], np.ndarray]:
    n = draw(st.integers(1, 7))
    parents = [-1] + [draw(st.integers(0, j - 1)) for j in range(1, n)]
    all_channels = [f"{a}{k}" for a in "XYZ" for k in ("position", "rotation")]
    channels = []
    for _ in range(n):
        chosen = draw(st.lists(st.sampled_from(all_channels), unique=True, max_size=6))
        rot = [c for c in chosen if c.endswith("rotation")]
        channels.append([c for c in chosen if c.endswith("position")] + rot if draw(st.booleans()) else chosen)
    frames = draw(st.integers(1, 6))
    n_cols = sum(len(c) for c in channels)
    values = np.array(draw(st.lists(st.floats(-400, 400, allow_nan=False).map(lambda v: round(v, 4)),
                                    min_size=frames * n_cols, max_size=frames * n_cols)), float)
    values = values.reshape(frames, n_cols)
    offsets = np.round(np.array(draw(st.lists(st.floats(-50, 50), min_size=3 * n, max_size=3 * n))), 3).reshape(n, 3)
    children: list[list[int]] = [[] for _ in range(n)]
    for j in range(1, n):
        children[parents[j]].append(j)
    lines, order, stack = ["HIERARCHY"], [], [(0, 0, False)]
    while stack:  # depth-first, iterative, so the file order is the writer's order
        j, depth, closing = stack.pop()
        ind = "  " * depth
        if closing:
            lines.append(ind + "}")
            continue
        order.append(j)
        lines += [f"{ind}{'ROOT' if j == 0 else 'JOINT'} j{j}", ind + "{",
                  f"{ind}  OFFSET {' '.join(repr(float(v)) for v in offsets[j])}",
                  f"{ind}  CHANNELS {len(channels[j])} {' '.join(channels[j])}".rstrip()]
        if not children[j]:
            lines += [f"{ind}  End Site", f"{ind}  {{", f"{ind}    OFFSET 0 1 0", f"{ind}  }}"]
        stack.append((j, depth, True))
        stack.extend((c, depth + 1, False) for c in reversed(children[j]))
    # columns follow the file (depth-first) order
    starts = np.cumsum([0] + [len(c) for c in channels])
    cols = [starts[j] + k for j in order for k in range(len(channels[j]))]
    lines += ["MOTION", f"Frames: {frames}", "Frame Time: 0.05"]
    lines += [" ".join(f"{v:.4f}" for v in row) if len(row) else "" for row in values[:, cols]]
    new = {old: i for i, old in enumerate(order)}
    file_parents = [-1 if parents[j] < 0 else new[parents[j]] for j in order]
    return "\n".join(lines) + "\n", file_parents, [channels[j] for j in order], values[:, cols]


def _scipy_fk(parsed) -> np.ndarray:
    frames, col = parsed.values.shape[0], 0
    rots, poss = [], []
    for j, chans in enumerate(parsed.channels):
        t = np.tile(parsed.offsets[j], (frames, 1))
        order, angles = "", []
        for c in chans:
            if c.endswith("position"):
                t[:, "XYZ".index(c[0])] = parsed.values[:, col]
            else:
                order += c[0]
                angles.append(parsed.values[:, col])
            col += 1
        local = Rotation.from_euler(order, np.stack(angles, 1), degrees=True) if order else Rotation.identity(frames)
        p = int(parsed.parents[j])
        rots.append(local if p < 0 else rots[p] * local)
        poss.append(t if p < 0 else poss[p] + rots[p].apply(t))
    return np.stack(poss, 1)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=valid_bvh())
def test_random_valid_files_fk_and_round_trip(case) -> None:
    text, parents, channels, values = case
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        motion = bvh.loads(text)
    parsed = parse_bvh_bytes(text.encode(), "x")
    assert parsed.parents.tolist() == parents and [list(c) for c in parsed.channels] == channels
    assert np.array_equal(parsed.values, values)
    expected = _scipy_fk(parsed)
    assert np.abs(motion.positions().numpy() - expected).max() < 1e-9 * max(1.0, np.abs(expected).max())
    again = parse_bvh_bytes(bvh.dumps(motion).encode(), "y")
    assert again.channels == parsed.channels and np.array_equal(again.offsets, parsed.offsets)
    assert np.allclose(_scipy_fk(again), expected, atol=1e-5 * max(1.0, np.abs(expected).max()))
