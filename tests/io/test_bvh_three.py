"""BVH files as other readers take them, and :func:`skelanim.ops.simplify_channels`, which writes the layout they
all take alike.

three.js's BVHLoader (``tools/three_bvh_pose.mjs``) adds a joint's position channels to its OFFSET, and pybvh
refuses position channels below the root; skelanim (as MotionBuilder and bvhio) lets position channels replace
the OFFSET. So a Bandai-Namco file (six channels on every joint, under a static ``joint_Root``) stood metres
off in three.js and did not load in pybvh (a read-only audit's finding). After ``simplify_channels`` both
readers pose every joint where skelanim does. Needs ``node`` and ``npm ci`` in ``tools/`` (skips without them,
fails under ``SKELANIM_REQUIRE_NODE=1``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from needs import node_tool  # tests/helpers

import skelanim
from skelanim import ops
from skelanim.errors import SkeletonError

FRAMES = [0, 17, 59]


def three_positions(path: Path, names: list[str]) -> np.ndarray:
    """``(len(FRAMES), J, 3)`` world positions of ``names`` as three.js poses ``path``."""
    tools = node_tool("three", "the three.js check of written BVH")
    command = ["node", str(tools / "three_bvh_pose.mjs"), str(path), "--frames", ",".join(map(str, FRAMES))]
    run = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    poses = json.loads(run.stdout)["poses"]
    return np.array([[poses[str(f)][n] for n in names] for f in FRAMES])


@pytest.mark.parametrize(
    "relative", ["bandai_namco_1/dataset-1_walk_normal_001.bvh", "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"]
)
def test_simplified_channels_are_read_alike_by_three_and_pybvh(relative, mocap_files, tmp_path):
    pybvh = pytest.importorskip("pybvh")
    (path,) = mocap_files([relative])
    motion = skelanim.load(path)[:60]
    simple = ops.simplify_channels(motion)
    names = simple.skeleton.names
    want = motion.positions()[:, [motion.skeleton.names.index(n) for n in names]]
    torch.testing.assert_close(simple.positions(), want, rtol=0, atol=1e-9 * motion.height)
    assert all(len(c) == 3 for c in simple.skeleton.channels[1:]) and len(simple.skeleton.channels[0]) == 6
    skelanim.save(motion, tmp_path / "as_read.bvh")
    skelanim.save(simple, tmp_path / "simple.bvh")
    height = motion.height
    as_three = three_positions(tmp_path / "simple.bvh", names)
    np.testing.assert_allclose(as_three, want[FRAMES].numpy(), rtol=0, atol=1e-5 * height)  # three.js is float32
    bvh = pybvh.read_bvh_file(tmp_path / "simple.bvh", world_up="+y")
    as_pybvh = np.asarray(bvh.joint_positions())[FRAMES][:, [list(bvh.joint_names).index(n) for n in names]]
    np.testing.assert_allclose(as_pybvh, want[FRAMES].numpy(), rtol=0, atol=1e-6 * height)
    before = three_positions(tmp_path / "as_read.bvh", names)  # the layout as read: three.js stands it elsewhere
    assert float(np.abs(before - want[FRAMES].numpy()).max()) > 0.05 * height


def test_an_animated_translation_below_the_root_is_refused(mocap_files):
    """A layout with translations only at the root cannot hold a joint that moves against its parent."""
    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    motion = skelanim.load(path)[:30]
    moved = motion.joint_translations.clone()
    moved[:, 5, 0] += torch.linspace(0, 10, 30, dtype=moved.dtype)  # the head slides 10 cm
    with pytest.raises(SkeletonError, match="joint Head's translation is animated"):
        ops.simplify_channels(motion.copy(joint_translations=moved))
