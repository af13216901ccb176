"""BVH writing of figures in tiny units: the channel values keep the positions."""

from __future__ import annotations

import pytest

import skelanim
from skelanim import ops


@pytest.mark.parametrize("factor", [1e-3, 1e-6, 1e-9])
def test_a_figure_of_a_tiny_unit_keeps_its_positions(factor, mocap_files, tmp_path):
    """Channel values had 6 decimals whatever the figure's size: ``convert --scale 1e-9`` wrote every position
    as 0 (the motion 100 % off). A figure under 1 unit tall gets the decimals that keep 1e-6 of its height."""
    source = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0]
    motion = ops.scale(skelanim.load(source)[:20], factor)
    path = tmp_path / "tiny.bvh"
    skelanim.save(motion, path)
    back = skelanim.load(path)
    size = float((motion.positions().amax((0, 1)) - motion.positions().amin((0, 1))).max())
    assert float((back.positions() - motion.positions()).abs().max()) < 1e-5 * size
