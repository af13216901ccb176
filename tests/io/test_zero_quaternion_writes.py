"""A zero quaternion is no rotation: every writer refuses it naming the frame and joint, and writes nothing.

A review (2026-12-07) found ``Motion(..., rotations * 0, ...)`` saved as BVH with identity rotations without a word
(the DeepMimic reader refuses the same data), and as positions with FK's reading of it, 0.4 m off at a foot."""

from __future__ import annotations

import pytest

import skelanim
from skelanim.errors import ShapeError


@pytest.mark.parametrize("suffix", [".bvh", ".glb", ".txt", ".npz", ".csv"])
def test_a_zero_quaternion_is_refused_by_every_writer(mocap_files, tmp_path, suffix) -> None:
    walk = skelanim.load(mocap_files(["deepmimic/humanoid3d_walk.txt"])[0])[:5]
    rotations = walk.rotations.clone()
    rotations[2, 3] = 0.0
    out = tmp_path / f"walk{suffix}"
    with pytest.raises(ShapeError, match=r"frame 2, joint right_hip: cannot write a zero quaternion") as err:
        skelanim.save(walk.copy(rotations=rotations), out)
    assert err.value.path == str(out) and not out.exists() and list(tmp_path.iterdir()) == []
    rotations[2, 3] = 1e-6 * walk.rotations[2, 3]  # tiny but a rotation: written as its direction
    skelanim.save(walk.copy(rotations=rotations), out)
    assert out.exists()
