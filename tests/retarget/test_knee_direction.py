"""IK retargeting bends knees forward (``retarget.baselines.KNEE_AHEAD``; found by a read-only review: CMU 131_01 onto
the Bandai rig with ``--method ik`` bent the left knee backwards in 12 of 994 frames, by up to 3.5 % of the stature,
with a 154-degree swivel of the knee in one frame, where the copied leg was straight to a hair behind its line).

References: the two-bone solution written out by hand (the knee on the circle of radius ``sqrt(a^2 - x^2)`` about
the hip-foot line), and on real takes the knee's side of the hip-ankle line measured against the body's forward
direction (left hip minus right hip, crossed with up), the source's own as read."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

import skelanim
from skelanim.cli import main
from skelanim.retarget import map_skeleton
from skelanim.retarget.baselines import KNEE_AHEAD, two_bone

BANDAI = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def test_a_nearly_straight_leg_bent_backward_by_a_hair_is_bent_forward() -> None:
    """A leg down -Y with the knee 1e-3 of the thigh *behind* the line (-Z), the body facing +Z (``bend``), the foot
    pulled in to 0.9 of the leg's length: the knee lands ahead of the line at the closed-form distance
    ``sqrt(a^2 - x^2)``, ``x = (a^2 - b^2 + d^2) / 2 d``; without ``bend`` (the old rule) it follows the hair back."""
    hip = torch.zeros(1, 3, dtype=torch.float64)
    a = b = 0.45
    knee = torch.tensor([[0.0, -a, -1e-3 * a]], dtype=torch.float64)
    target = torch.tensor([[0.0, -0.9 * (a + b), 0.0]], dtype=torch.float64)
    forward = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    d = 0.9 * (a + b)
    x = (a * a - b * b + d * d) / (2 * d)
    new_knee, foot = two_bone(hip, knee, target, a, b, bend=forward)
    np.testing.assert_allclose(new_knee[0].numpy(), [0.0, -x, math.sqrt(a * a - x * x)], atol=1e-12)
    np.testing.assert_allclose(foot[0].numpy(), target[0].numpy(), atol=1e-12)
    old_knee, _ = two_bone(hip, knee, target, a, b)
    assert float(old_knee[0, 2]) < -0.1  # the hair's direction, amplified to a knee bent backwards


def test_a_knee_bent_sideways_or_forward_keeps_its_plane_beyond_the_least_forward_offset() -> None:
    """A knee ahead of the line by more than ``KNEE_AHEAD`` of the thigh keeps its own plane (the copy's), turned
    sideways too; one ahead by less is moved ahead to exactly that share, its sideways part kept."""
    hip = torch.zeros(1, 3, dtype=torch.float64)
    a = b = 0.45
    target = torch.tensor([[0.0, -0.8 * (a + b), 0.0]], dtype=torch.float64)
    forward = torch.tensor([[0.0, 0.0, 1.0]], dtype=torch.float64)
    for ahead, side in ((0.2, 0.0), (0.1, 0.3), (0.01, 0.2), (-0.05, 0.1)):
        knee = torch.tensor([[side * a, -a, ahead * a]], dtype=torch.float64)
        new_knee, _ = two_bone(hip, knee, target, a, b, bend=forward)
        plane = new_knee[0, [0, 2]].numpy()
        expected = np.array([side, max(ahead, KNEE_AHEAD)])
        np.testing.assert_allclose(plane / np.linalg.norm(plane), expected / np.linalg.norm(expected), atol=1e-12)


def knees_behind(path: Path) -> tuple[int, float]:
    """Frames in which a knee lies more than 1 % of the stature behind its hip-ankle line, and the worst offset
    (% of the stature, negative behind), forward being left-hip-minus-right-hip crossed with up (+Y)."""
    motion = skelanim.load(path)
    joints = map_skeleton(motion.skeleton).joints
    p = motion.positions().numpy()
    lateral = p[:, joints["l_upleg"]] - p[:, joints["r_upleg"]]
    lateral[:, 1] = 0.0
    forward = np.cross(lateral / np.linalg.norm(lateral, axis=-1, keepdims=True), [0.0, 1.0, 0.0])
    count, worst = 0, math.inf
    for side in "lr":
        hip, knee, ankle = (p[:, joints[f"{side}_{part}"]] for part in ("upleg", "leg", "foot"))
        line = (ankle - hip) / np.linalg.norm(ankle - hip, axis=-1, keepdims=True)
        off = (knee - hip) - ((knee - hip) * line).sum(-1, keepdims=True) * line
        ahead = 100 * (off * forward).sum(-1) / motion.stature
        count += int((ahead < -1.0).sum())
        worst = min(worst, float(ahead.min()))
    return count, worst


def test_ik_retargeting_of_a_cmu_walk_bends_no_knee_backwards(mocap_files, tmp_path: Path) -> None:
    """CMU 131_01 onto the Bandai rig and Xia's neutral walk (whose source knees hyperextend a little: the copy has
    them up to 1.8 % of the stature behind the line in 53 frames) with ``--method ik``: no knee behind its line by
    more than 1 % of the stature (12 frames and -3.5 %, and 99 frames and -3.3 %, before)."""
    cmu, xia, bandai = mocap_files(["cmu_cgspeed_max/131_01.bvh", "xia_style/neutral_01_000.bvh", BANDAI])
    for source in (cmu, xia):
        out = tmp_path / f"{source.stem}_ik.bvh"
        assert main(["retarget", "run", str(source), "--to", str(bandai), "--method", "ik", "-o", str(out)]) == 0
        count, worst = knees_behind(out)
        assert count == 0, (source.name, count, worst)
