"""Length units and up axes (skelanim.core.units)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import skelanim
from skelanim.core.units import UNITS, canonical_unit, guess_unit, metres_per_unit, up_to_y_matrix
from skelanim.data.samples import sample_path
from skelanim.errors import ShapeError
from skelanim.io.gltf import export_scale
from skelanim.metrics.gait import gait_analysis
from skelanim.ops import scale
from skelanim.viz.video import overlay_frame
from skelanim.viz.viewer import viewer_positions


@pytest.mark.parametrize("axis", [0, 2])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_up_to_y_is_the_smallest_turn(axis: int, sign: float) -> None:
    """Against scipy's minimal rotation between two vectors (a quarter turn for X and Z)."""
    up = np.zeros(3)
    up[axis] = sign
    expected, _ = Rotation.align_vectors([[0.0, 1.0, 0.0]], [up])
    np.testing.assert_allclose(up_to_y_matrix(axis, sign).numpy(), expected.as_matrix(), atol=1e-12)


def test_up_to_y_by_hand() -> None:
    """The turns the glTF exporter documents, and the Y cases."""
    v = np.array([1.0, 2.0, 3.0])
    x, y, z = v
    assert up_to_y_matrix(2).numpy() @ v == pytest.approx([x, z, -y])  # Z up: -90 degrees about X
    assert up_to_y_matrix(0).numpy() @ v == pytest.approx([-y, x, z])  # X up: +90 degrees about Z
    assert up_to_y_matrix(1).numpy() @ v == pytest.approx(v)
    assert up_to_y_matrix(1, -1.0).numpy() @ v == pytest.approx([x, -y, -z])  # half turn about X


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_up_to_y_is_proper_and_exact(axis: int, sign: float) -> None:
    rotation = up_to_y_matrix(axis, sign).numpy()
    up = np.zeros(3)
    up[axis] = sign
    assert np.array_equal(rotation @ up, [0.0, 1.0, 0.0])
    assert np.array_equal(rotation @ rotation.T, np.eye(3)) and np.linalg.det(rotation) == pytest.approx(1.0)
    assert set(np.unique(rotation)) <= {-1.0, 0.0, 1.0}


def test_up_to_y_rejects_a_bad_axis() -> None:
    with pytest.raises(ShapeError, match="up axis must be 0, 1 or 2, got 3"):
        up_to_y_matrix(3)


@pytest.mark.parametrize(
    ("height", "unit"),
    [(1.75, "m"), (0.9, "m"), (17.0, "cmu"), (30.0, "cmu"), (68.0, "in"), (170.0, "cm"), (172.0, "cm"), (1700.0, "mm")],
)
def test_guess_unit(height: float, unit: str) -> None:
    assert guess_unit(height) == unit
    assert metres_per_unit(height) == UNITS[unit]
    assert 0.8 < height * UNITS[unit] < 3.5


def test_guess_unit_edges_and_names() -> None:
    assert guess_unit(0.0) == guess_unit(float("nan")) == "m"
    # the boundaries the module docstring states, where two units are equally far from 1.7 m in ratio
    assert guess_unit(7.1) == "m" and guess_unit(7.3) == "cmu"
    assert guess_unit(44.0) == "cmu" and guess_unit(46.0) == "in"
    assert guess_unit(106.0) == "in" and guess_unit(108.0) == "cm"
    assert guess_unit(537.0) == "cm" and guess_unit(539.0) == "mm"
    assert canonical_unit(" Inches ") == "in" and canonical_unit("cm") == "cm" and canonical_unit("feet") is None


def test_every_consumer_reads_a_declared_unit_before_guessing() -> None:
    """A child-sized figure in inches (0.6 units tall: a guess says metres): the glTF export, the browser viewer,
    the video overlay and the gait report all take the declared inch. The last three had guessed metres."""
    walk = skelanim.load(sample_path("walk"))  # DeepMimic, metres
    small = scale(walk, 0.35)
    small = small.copy(metadata={**small.metadata, "units": "inches"})
    assert guess_unit(small.height) == "m"
    assert export_scale(small) == (UNITS["in"], "in")
    assert viewer_positions(small)[1] == UNITS["in"]
    drawn, was = overlay_frame([walk, small])
    assert drawn[1].height == pytest.approx(small.height * UNITS["in"]) and was[1].startswith("in,")
    assert gait_analysis(small).metres_per_unit == UNITS["in"]
    undeclared = small.copy(metadata={k: v for k, v in small.metadata.items() if k != "units"})
    assert export_scale(undeclared)[1] == "m" and viewer_positions(undeclared)[1] == 1.0


def test_a_crawl_gets_the_unit_of_its_standing_body(mocap_dir) -> None:
    """A viz audit: a DeepMimic crawl written in centimetres is 41 units tall on all fours, which the posed height
    reads as CMU units (`skelanim info`, the video overlay) or, its tallest frame, inches (the viewer: drawn 2.54 times
    too large beside a walk). The bones say centimetres."""
    from skelanim.cli.files import describe
    from skelanim.io.positions import JointPositions

    crawl = skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_crawl.txt")
    in_cm = scale(crawl, 100.0)
    in_cm = in_cm.copy(metadata={k: v for k, v in in_cm.metadata.items() if k != "units"})  # undeclared
    assert guess_unit(in_cm.height) == "cmu"
    assert in_cm.stature == pytest.approx(100 * crawl.stature) and guess_unit(in_cm.stature) == "cm"
    assert export_scale(in_cm) == (UNITS["cm"], "cm")
    assert describe(in_cm, "crawl.bvh")["units_guess"] == "cm"
    assert JointPositions.from_motion(in_cm).metadata["units"] == "cm"
    assert scale(in_cm, 1.0).metadata["units"] == "cm"


def test_the_viewer_and_the_overlay_draw_a_crawl_at_its_size(mocap_dir) -> None:
    """The same viz audit: beside a Bandai walk the cm crawl was drawn 2.54 times too large by the viewer and
    5.6 times by the video overlay; the two also disagreed with each other."""
    crawl = skelanim.load(mocap_dir / "deepmimic" / "humanoid3d_crawl.txt")
    in_cm = scale(crawl, 100.0)
    in_cm = in_cm.copy(metadata={k: v for k, v in in_cm.metadata.items() if k != "units"})
    assert viewer_positions(in_cm)[1] == UNITS["cm"]
    np.testing.assert_allclose(viewer_positions(in_cm)[0], viewer_positions(crawl)[0], atol=1e-9)
    walk = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")
    drawn, _ = overlay_frame([walk, in_cm])
    true_ratio = crawl.height / (walk.height * UNITS["cm"])  # the crawl's height (m) over the walk's (cm -> m)
    assert drawn[1].height / drawn[0].height == pytest.approx(true_ratio, rel=1e-9)


def test_gait_guesses_the_unit_as_info_does(mocap_dir) -> None:
    """A review: gait still guessed from the posed height while info and the exporters read the stature. A pymo walk
    (inches) scaled by 0.75 stands 43.7 units tall (CMU units by the height) with 46.1 of stature (inches): gait's
    stride in metres had been 2.2 times info's."""
    from skelanim.cli.files import describe

    walk = skelanim.load(mocap_dir / "pymo_demo" / "AV_8Walk_Meredith_HVHA_Rep1.bvh")
    child = scale(walk, 0.75)
    child = child.copy(metadata={k: v for k, v in child.metadata.items() if k != "units"})
    report = gait_analysis(child)
    assert guess_unit(child.height) == "cmu" and guess_unit(child.stature) == "in"
    assert describe(child, "child.bvh")["units_guess"] == "in"
    assert report.metres_per_unit == UNITS["in"] and report.to_dict()["units_guess"] == "in"


def test_documented_unit_boundaries_are_guess_unit_s() -> None:
    """The boundaries the module docstring states are where ``guess_unit`` switches, to the three decimals it gives
    (it said 7.2 / 45 / 107 / 538, rounded so far that 7.18 read as metres there and CMU units here); the approach of
    tests/io/test_gltf.py's test of the glTF docs."""
    import math
    import re

    from skelanim.core import units

    found = re.findall(r"``h < ([\d.]+)``|``[\d.]+ <= h < ([\d.]+)``", units.__doc__ or "")
    bounds = [float(first or second) for first, second in found]
    names = list(UNITS)
    assert len(bounds) == len(names) - 1, bounds
    for k, bound in enumerate(bounds):
        exact = units.TYPICAL_HEIGHT_M / math.sqrt(UNITS[names[k]] * UNITS[names[k + 1]])
        assert abs(bound - exact) <= 0.0005, (bound, exact)
        assert (guess_unit(bound * 0.9999), guess_unit(bound * 1.0001)) == (names[k], names[k + 1]), bound
