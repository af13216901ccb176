"""Real skeletons and short clips for the retargeting tests (skipped visibly when the data is absent)."""

from __future__ import annotations

import pytest

import skelanim
from skelanim.core.motion import Motion

FILES = {
    "bandai": "bandai_namco_1/dataset-1_walk_normal_001.bvh",
    "cmu_mb": "cmu_cgspeed_mb/01_01.bvh",
    "cmu_max": "cmu_cgspeed_max/131_01.bvh",
    "xia": "xia_style/angry_13_000.bvh",
    "pymo": "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh",
    "ccrig": "cmu_iclone_ccrig/001_01.bvh",
    "deepmimic": "deepmimic/humanoid3d_walk.txt",
}


@pytest.fixture(scope="session")
def clips(mocap_files) -> dict[str, Motion]:
    """A short clip of every skeleton family in the shared data (about 1-2 s each)."""
    out = {}
    for name, path in zip(FILES, mocap_files(list(FILES.values()))):
        motion = skelanim.load(path)
        step = max(1, round(motion.fps / 30))
        out[name] = motion[::step][:45].copy(fps=motion.fps / step)
    return out
