"""Shared fixtures for every test package.

``mocap_dir`` is the real motion-capture data (never copied into the repository): the folder named by the
environment variable ``SKELANIM_DATA``, else ``<repo>/../shared/data/mocap``. A relative ``SKELANIM_DATA``
is resolved against the repository root, not the current directory. Tests that need the data skip with
the reason when it is absent, except under ``SKELANIM_REQUIRE_DATA=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from skelanim import Motion

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))  # plain helper modules shared by tests

from needs import missing_data


def mocap_path() -> Path:
    """Where the real mocap data should be (it may not exist)."""
    configured = os.environ.get("SKELANIM_DATA")
    path = Path(configured).expanduser() if configured else Path("..") / "shared" / "data" / "mocap"
    return path if path.is_absolute() else (REPO_ROOT / path).resolve()


@pytest.fixture(scope="session")
def mocap_dir() -> Path:
    """The real mocap data folder (``SKELANIM_DATA`` or ``<repo>/../shared/data/mocap``); skips when absent."""
    path = mocap_path()
    if not path.is_dir():
        missing_data(f"real mocap data not found at {path} (set SKELANIM_DATA to its folder)")
    return path


@pytest.fixture(scope="session")
def mocap_files(mocap_dir: Path) -> Callable[[list[str]], list[Path]]:
    """``mocap_files(names)``: ``mocap_dir / name`` for each name, each checked to exist (else skip, or fail
    in CI)."""

    def files(names: list[str]) -> list[Path]:
        paths = [mocap_dir / name for name in names]
        for path in paths:
            if not path.is_file():
                missing_data(f"mocap file missing: {path}")
        return paths

    return files


@pytest.fixture(scope="session")
def pose_pybullet_humanoid() -> Callable[..., None]:
    """``pose(pybullet, body, link_index, frame, client)``: put a pybullet body loaded from the DeepMimic humanoid
    URDF into one DeepMimic frame (44 values: duration, root position, root quaternion w-first, then the joints of
    ``deepmimic.FRAME_LAYOUT``; pybullet wants quaternions x, y, z, w)."""
    import numpy as np

    from skelanim.io import deepmimic

    def pose(pybullet, body: int, link_index: dict[str, int], frame, client: int) -> None:
        w, x, y, z = frame[4:8]
        pybullet.resetBasePositionAndOrientation(body, list(map(float, frame[1:4])), [x, y, z, w], physicsClientId=client)
        for name, part in deepmimic.FRAME_LAYOUT.items():
            if name in ("duration", "root_position", "root"):
                continue
            values = np.asarray(frame[part], dtype=float)
            if len(values) == 4:
                values = values / np.linalg.norm(values)
                target = [values[1], values[2], values[3], values[0]]
            else:
                target = [float(values[0])]
            pybullet.resetJointStateMultiDof(body, link_index[name], target, physicsClientId=client)

    return pose


@pytest.fixture(scope="session")
def looped_walk() -> Callable[[int], Motion]:
    """``looped_walk(loops)``: the bundled DeepMimic walk repeated ``loops`` times, a walk with several gait
    cycles. Each loop is frames ``0..F-2`` of the clip with the root shifted forward (horizontally) by the
    clip's displacement, so every gait event repeats exactly every ``F - 1`` frames."""
    import torch

    import skelanim
    from skelanim.data.samples import sample_path

    walk = skelanim.load(sample_path("walk"))

    def looped(loops: int) -> Motion:
        n = walk.num_frames - 1
        step = walk.root_positions[-1] - walk.root_positions[0]
        step[1] = 0.0  # the DeepMimic humanoid is Y up
        return walk.copy(
            rotations=torch.cat([walk.rotations[:n]] * loops),
            root_positions=torch.cat([walk.root_positions[:n] + i * step for i in range(loops)]),
        )

    return looped
