"""A small Y-up humanoid in metres for the viz and serve tests (``tests/helpers`` is on ``sys.path``): head and feet
named so that up is found by name; optionally a finger below each hand (``IndexA``, ``IndexB``, no side in their
names)."""

from __future__ import annotations

import numpy as np
import torch

from skelanim.core.skeleton import Skeleton

#: name, parent, offset (Y up, facing +Z, the left side towards +X)
BODY = [
    ("Hips", None, (0.0, 1.0, 0.0)),
    ("Spine", "Hips", (0.0, 0.25, 0.0)),
    ("Neck", "Spine", (0.0, 0.3, 0.0)),
    ("Head", "Neck", (0.0, 0.12, 0.0)),
    ("LeftArm", "Spine", (0.18, 0.25, 0.0)),
    ("LeftForeArm", "LeftArm", (0.28, 0.0, 0.0)),
    ("LeftHand", "LeftForeArm", (0.25, 0.0, 0.0)),
    ("IndexA", "LeftHand", (0.08, 0.0, 0.0)),
    ("RightArm", "Spine", (-0.18, 0.25, 0.0)),
    ("RightForeArm", "RightArm", (-0.28, 0.0, 0.0)),
    ("RightHand", "RightForeArm", (-0.25, 0.0, 0.0)),
    ("IndexB", "RightHand", (-0.08, 0.0, 0.0)),
    ("LeftUpLeg", "Hips", (0.1, 0.0, 0.0)),
    ("LeftLeg", "LeftUpLeg", (0.0, -0.45, 0.0)),
    ("LeftFoot", "LeftLeg", (0.0, -0.45, 0.0)),
    ("RightUpLeg", "Hips", (-0.1, 0.0, 0.0)),
    ("RightLeg", "RightUpLeg", (0.0, -0.45, 0.0)),
    ("RightFoot", "RightLeg", (0.0, -0.45, 0.0)),
]
FINGERS = ("IndexA", "IndexB")


def small_body(*, fingers: bool = False) -> Skeleton:
    """The body of :data:`BODY`, without its two fingers unless ``fingers``."""
    rows = [row for row in BODY if fingers or row[0] not in FINGERS]
    names = [n for n, _, _ in rows]
    parents = [-1 if p is None else names.index(p) for _, p, _ in rows]
    offsets = torch.tensor([o for _, _, o in rows], dtype=torch.float64)
    return Skeleton(names, np.array(parents), offsets)
