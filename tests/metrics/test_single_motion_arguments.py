"""One bare :class:`Motion` where the metrics expect a set, and foot joints given by name."""

from __future__ import annotations

import re

import pytest

import skelanim
from skelanim import metrics
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError
from skelanim.ops import find_feet


def _clip(name: str) -> skelanim.Motion:
    return skelanim.load(sample_path(name))[:30]


def _same(x: object, y: object) -> bool:
    """Equal results, floats to rounding (a first computation may differ from later ones in the last digit)."""
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, float) and isinstance(y, float):
        return x == pytest.approx(y, rel=1e-12, abs=1e-15)
    return x == y


def test_compare_sets_takes_bare_motions_as_sets_of_one() -> None:
    """A Motion iterates as one-frame motions: compare_sets(a, b) had scored 30 one-frame motions per set."""
    a, b = _clip("walk"), _clip("run")
    wrapped = metrics.compare_sets([a], [b])
    assert _same(metrics.compare_sets(a, b), wrapped)
    assert _same(metrics.compare_sets(a, [b]), wrapped)
    assert wrapped["a"]["motions"] == 1 and wrapped["a"]["frames"] == 30 and wrapped["notes"] == []


def test_set_summary_takes_a_bare_motion() -> None:
    m = _clip("walk")
    kwargs = {"up_axis": 1, "height": m.height, "floor": 0.0}
    wrapped = metrics.set_summary([m], **kwargs)
    assert _same(metrics.set_summary(m, **kwargs), wrapped)
    assert _same(metrics.set_summary(m, positions=[m.positions()], **kwargs), wrapped)
    assert wrapped["motions"] == 1 and wrapped["frames"] == 30


@pytest.mark.parametrize("feet", [["left_ankle", "right_ankle"], "left_ankle", [10, "right_ankle"]])
def test_foot_skating_with_joint_names_says_feet_are_indices(feet: object) -> None:
    m = _clip("walk")
    with pytest.raises(ShapeError, match=re.escape("skeleton.indices(")) as info:  # a ValueError, as before
        metrics.foot_skating(m.positions(), feet, m.fps, threshold=0.05)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    by_index = metrics.foot_skating(m.positions(), m.skeleton.indices(["left_ankle", "right_ankle"]), m.fps,
                                    threshold=0.05)  # fmt: skip
    assert by_index == pytest.approx(metrics.foot_skating(m.positions(), find_feet(m.skeleton), m.fps, threshold=0.05))
