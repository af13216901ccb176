"""Synthetic skeletons and motions for the ops tests (real data comes from the top-level ``mocap_dir``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from skelanim import Motion, Skeleton
from skelanim.core.rotations import quat_multiply, rotvec_to_quat

# name, parent name, offset (Y up, facing +Z, the character's left towards +X)
_BODY = [
    ("Hips", None, (0.0, 1.0, 0.0)),
    ("Spine", "Hips", (0.0, 0.1, 0.0)),
    ("Chest", "Spine", (0.0, 0.2, 0.0)),
    ("Neck", "Chest", (0.0, 0.2, 0.0)),
    ("Head", "Neck", (0.0, 0.1, 0.0)),
    ("LeftShoulder", "Chest", (0.05, 0.15, 0.0)),
    ("LeftArm", "LeftShoulder", (0.12, 0.0, 0.0)),
    ("LeftForeArm", "LeftArm", (0.25, 0.0, 0.0)),
    ("LeftHand", "LeftForeArm", (0.25, 0.0, 0.0)),
    ("RightShoulder", "Chest", (-0.05, 0.15, 0.0)),
    ("RightArm", "RightShoulder", (-0.12, 0.0, 0.0)),
    ("RightForeArm", "RightArm", (-0.25, 0.0, 0.0)),
    ("RightHand", "RightForeArm", (-0.25, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (0.1, 0.0, 0.0)),
    ("LeftLeg", "LeftUpLeg", (0.0, -0.45, 0.0)),
    ("LeftFoot", "LeftLeg", (0.0, -0.45, 0.0)),
    ("LeftToeBase", "LeftFoot", (0.0, -0.05, 0.12)),
    ("RightUpLeg", "Hips", (-0.1, 0.0, 0.0)),
    ("RightLeg", "RightUpLeg", (0.0, -0.45, 0.0)),
    ("RightFoot", "RightLeg", (0.0, -0.45, 0.0)),
    ("RightToeBase", "RightFoot", (0.0, -0.05, 0.12)),
]
_ENDS = {
    "Head": (0.0, 0.15, 0.0),
    "LeftHand": (0.1, 0.0, 0.0),
    "RightHand": (-0.1, 0.0, 0.0),
    "LeftToeBase": (0.0, 0.0, 0.05),
    "RightToeBase": (0.0, 0.0, 0.05),
}


def body_skeleton(*, asymmetric: bool = False, seed: int = 0) -> Skeleton:
    """A 21-joint symmetric humanoid, Y up, 1.7 units tall; ``asymmetric`` perturbs every offset a little."""
    names = [n for n, _, _ in _BODY]
    parents = [-1 if p is None else names.index(p) for _, p, _ in _BODY]
    offsets = torch.tensor([o for _, _, o in _BODY], dtype=torch.float64)
    if asymmetric:
        offsets = offsets + 0.01 * torch.from_numpy(np.random.default_rng(seed).normal(size=offsets.shape))
    ends = {names.index(k): torch.tensor(v, dtype=torch.float64) for k, v in _ENDS.items()}
    return Skeleton(names, np.array(parents), offsets, end_sites=ends)


def random_motion(
    skeleton: Skeleton,
    frames: int = 40,
    *,
    seed: int = 0,
    fps: float = 30.0,
    amplitude: float = 0.6,
    translations: bool = False,
    freq_range: tuple[float, float] = (0.3, 2.0),
) -> Motion:
    """Smooth random joint rotations (sums of sinusoids as rotation vectors), a root walking forward,
    and optionally animated joint translations."""
    rng = np.random.default_rng(seed)
    j = skeleton.num_joints
    t = np.arange(frames)[:, None, None] / fps
    freq = rng.uniform(*freq_range, size=(1, j, 3))
    phase = rng.uniform(0, 2 * np.pi, size=(1, j, 3))
    amp = amplitude * rng.uniform(0.2, 1.0, size=(1, j, 3))
    rotvec = torch.from_numpy(amp * np.sin(2 * np.pi * freq * t + phase))
    rotations = rotvec_to_quat(rotvec)
    root = torch.from_numpy(
        np.stack([0.1 * np.sin(t[:, 0, 0]), 1.0 + 0.02 * np.cos(3 * t[:, 0, 0]), 1.2 * t[:, 0, 0]], -1)
    )
    jt = None
    if translations:
        jt = skeleton.offsets.expand(frames, -1, -1).clone()
        jt = jt + torch.from_numpy(0.02 * np.sin(2 * np.pi * rng.uniform(0.5, 2, size=(1, j, 3)) * t))
    return Motion(skeleton, rotations, root, fps, joint_translations=jt)


def yaw_quat(angle: float, up: int = 1) -> torch.Tensor:
    v = torch.zeros(3, dtype=torch.float64)
    v[up] = angle
    return rotvec_to_quat(v)


def turned(motion: Motion, angle: float) -> Motion:
    """The motion with its root rotation pre-multiplied by a yaw (positions untouched)."""
    rot = motion.rotations.clone()
    rot[:, 0] = quat_multiply(yaw_quat(angle), rot[:, 0])
    return motion.copy(rotations=rot)


@pytest.fixture
def body() -> Skeleton:
    return body_skeleton()


@pytest.fixture
def motion(body: Skeleton) -> Motion:
    return random_motion(body)


@pytest.fixture
def helpers():
    """The helper functions, for tests that build their own data."""

    class H:
        body_skeleton = staticmethod(body_skeleton)
        random_motion = staticmethod(random_motion)
        yaw_quat = staticmethod(yaw_quat)
        turned = staticmethod(turned)

    return H


def snapshot(motion: Motion) -> dict[str, torch.Tensor]:
    """Copies of every tensor of a motion, to check that an op did not modify its input."""
    out = {
        "rotations": motion.rotations.clone(),
        "root_positions": motion.root_positions.clone(),
        "offsets": motion.skeleton.offsets.clone(),
    }
    if motion.joint_translations is not None:
        out["joint_translations"] = motion.joint_translations.clone()
    return out


def unchanged(motion: Motion, snap: dict[str, torch.Tensor]) -> bool:
    now = snapshot(motion)
    return now.keys() == snap.keys() and all(torch.equal(now[k], snap[k]) for k in snap)


@pytest.fixture
def check_unchanged() -> Callable[[Motion], Callable[[], bool]]:
    """``done = check_unchanged(m)`` ... ``assert done()``: the motion was not modified meanwhile."""

    def start(m: Motion) -> Callable[[], bool]:
        snap = snapshot(m)
        return lambda: unchanged(m, snap)

    return start


def load_real(mocap_dir: Path, relative: str) -> Motion:
    """Load a real BVH, skipping when the file is absent (failing in CI, :func:`needs.missing_data`)."""
    from needs import missing_data

    from skelanim.io import bvh

    path = Path(mocap_dir) / relative
    if not path.exists():
        missing_data(f"{path} not present")
    return bvh.load(path)


@pytest.fixture
def real(mocap_dir):
    """``real("folder/file.bvh")`` loads a file from the shared mocap data (skips when absent)."""
    return lambda relative: load_real(mocap_dir, relative)
