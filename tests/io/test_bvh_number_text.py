"""Writing a MOTION block's numbers: the compiled formatter (``format_rows`` in ``_bvh_numbers.c``) and the
``%`` path of :func:`skelanim.io.bvh_numbers.format_motion_values` give the text Python's ``"%.{p}f" % x``
gives (the independent reference), on values chosen to hit every rounding case; the BVH writer's output is the
same with and without the extension; the writer's angle wrap and its "every rotation as read" shortcut keep
what the slower forms gave.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import skelanim
from skelanim.core.rotations import quat_multiply
from skelanim.io import bvh, bvh_channels, bvh_numbers

NATIVE = bvh_numbers.NATIVE
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C extension is not built (no C compiler at install)")


def _python_text(values: np.ndarray, precision: int) -> str:
    """The reference: Python's own ``%`` formatting, one line per row."""
    return "".join(" ".join(f"%.{precision}f" % v for v in row) + "\n" for row in values.tolist())


def _hard_values() -> np.ndarray:
    """Values at every rounding case of ``%.6f``: exact binary ties (k / 128 * 10**-6 ... are not dyadic, so
    ties come from k / 2**n), the doubles on each side of a decimal half-way point, signed zeros, subnormals,
    numbers past 2**52 / 10**p (beyond the compiled fast path) and random values over 30 decades."""
    rng = np.random.default_rng(7)
    halfway = (np.arange(1, 2000) + 0.5) / 1e6
    return np.concatenate([
        np.arange(-3000, 3000) / 128.0,  # 0.0078125 = 1/128: "%.6f" rounds the exact tie to even, 0.007812
        np.arange(-3000, 3000) / 2.0**21,
        halfway, np.nextafter(halfway, 0.0), np.nextafter(halfway, 1.0), -halfway,
        [0.0, -0.0, 5e-324, -5e-324, 1e-9, -1e-9, 0.5, 1.5, 2.5, -2.5, 2.0**52, -(2.0**53), 4503599627370495.5,
         1e15, 1e17, 1e22, 1e300, -1e308],
        rng.normal(size=20000) * 10.0 ** rng.uniform(-12, 18, size=20000),
    ])


@needs_native
@pytest.mark.parametrize("precision", range(18))
def test_compiled_text_is_pythons_at_every_precision(precision: int) -> None:
    values = _hard_values()
    values = values[: len(values) // 6 * 6].reshape(-1, 6)
    assert NATIVE is not None
    assert NATIVE.format_rows(values, 6, precision) == _python_text(values, precision)


def test_both_paths_give_pythons_text(monkeypatch: pytest.MonkeyPatch) -> None:
    values = _hard_values()[:6000].reshape(-1, 3)
    want = _python_text(values, 6)
    assert bvh_numbers.format_motion_values(values, 6) == want
    monkeypatch.setattr(bvh_numbers, "NATIVE", None)
    assert bvh_numbers.format_motion_values(values, 6) == want


@needs_native
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12),
       st.integers(min_value=0, max_value=17))
def test_compiled_text_is_pythons_for_any_finite_double(row: list[float], precision: int) -> None:
    values = np.array([row])
    assert NATIVE is not None
    assert NATIVE.format_rows(values, len(row), precision) == _python_text(values, precision)


def test_rows_without_columns_are_empty_lines() -> None:
    assert bvh_numbers.format_motion_values(np.zeros((3, 0)), 6) == "\n\n\n"


def test_a_strided_float32_block_is_formatted_as_its_values() -> None:
    """A column slice (not contiguous) of float32 values: formatted as the doubles they are."""
    block = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2] / np.float32(3)
    assert bvh_numbers.format_motion_values(block, 6) == _python_text(block.astype(np.float64), 6)


@needs_native
@pytest.mark.parametrize("columns, precision", [(0, 6), (-1, 6), (4, 6), (3, -1), (3, 18)])
def test_compiled_formatter_refuses_bad_shapes(columns: int, precision: int) -> None:
    """10 values cannot be rows of 4; columns must be positive and the precision in [0, 17]."""
    assert NATIVE is not None
    with pytest.raises(ValueError, match="format_rows"):
        NATIVE.format_rows(np.zeros(10) if columns == 4 else np.zeros(9), columns, precision)


@needs_native
@pytest.mark.parametrize("values", [np.array([[1.25, 2**64, 3.5]]), np.array([[1, 2, 3]], np.int64),
                                    np.array([[1.0, 2.0, 3.0]], ">f8" if np.little_endian else "<f8")])  # fmt: skip
def test_compiled_formatter_refuses_items_other_than_float64(values: np.ndarray) -> None:
    """An audit: an object array (a value too large for an integer dtype) or int64 values, 8 bytes an item as
    doubles are, had been written as whatever doubles their bytes spell (zeros); so would swapped bytes."""
    assert NATIVE is not None
    with pytest.raises(ValueError, match="float64 buffer"):
        NATIVE.format_rows(values, 3, 6)
    assert NATIVE.format_rows(np.array([[1.25, 2.0, 3.5]]), 3, 6) == "1.250000 2.000000 3.500000\n"


def test_written_bvh_is_the_same_without_the_extension(mocap_files, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real take, turned so that its angles are worked out afresh, written by both paths: the same text."""
    motion = skelanim.load(mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0])[:300]
    turn = torch.tensor([np.cos(0.3), 0.0, np.sin(0.3), 0.0], dtype=motion.rotations.dtype)
    edited = motion.copy(rotations=quat_multiply(turn, motion.rotations))
    texts = [bvh.dumps(edited), bvh.dumps(motion)]
    monkeypatch.setattr(bvh_numbers, "NATIVE", None)
    assert [bvh.dumps(edited), bvh.dumps(motion)] == texts


def test_wrap_is_the_modulo_wrap() -> None:
    """``_wrap`` (a floor) against ``%`` (the form it replaced): [-180, 180), the same angles to float noise."""
    rng = np.random.default_rng(3)
    deg = np.concatenate([rng.uniform(-1e4, 1e4, 100000), [-540.0, -180.0, 180.0, 179.999999, 540.0, 0.0]])
    got = bvh_channels._wrap(deg)
    assert got.min() >= -180.0 and got.max() < 180.0
    assert np.allclose(got, (deg + 180.0) % 360.0 - 180.0, rtol=0, atol=1e-9)
    assert got[-6:].tolist() == [-180.0, -180.0, -180.0, 179.999999, -180.0, 0.0]


def test_a_take_written_back_unchanged_keeps_its_own_angles(mocap_files) -> None:
    """Every rotation still the one read (the shortcut): the file's own numbers come back, as the full
    computation gives them; one joint turned afterwards gets new angles and the others keep theirs."""
    source = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    motion = skelanim.load(source)  # the whole take: a slice drops the values read (they pick the angles)
    values = motion.metadata["bvh_values"]
    order = bvh._dfs_order(motion.skeleton.parents)
    assert np.array_equal(bvh_channels.frame_values(motion, order, 6), np.where(np.abs(values) < 5e-7, 0.0, values))
    joint = 5
    rotations = motion.rotations.clone()
    rotations[:, joint] = quat_multiply(torch.tensor([np.cos(0.2), np.sin(0.2), 0.0, 0.0], dtype=rotations.dtype),
                                        rotations[:, joint])
    turned = motion.copy(rotations=rotations)
    written = bvh_channels.frame_values(turned, order, 6)
    channels = motion.skeleton.channels
    start = sum(len(channels[j]) for j in order[: order.index(joint)])
    rotation_cols = {start + k for k, name in enumerate(channels[joint]) if name.endswith("rotation")}
    changed = set(np.flatnonzero(np.any(written != np.where(np.abs(values) < 5e-7, 0.0, values), axis=0)).tolist())
    assert changed == rotation_cols
    back = bvh.loads(bvh.dumps(turned))
    assert float((back.positions() - turned.positions()).abs().max()) < 1e-4
