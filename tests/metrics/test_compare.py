"""``compare_sets``: a set against itself, against a sliding copy, with and without a feature extractor."""

from __future__ import annotations

import pytest
import torch

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.metrics.compare import compare_sets


def _legs() -> Skeleton:
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    return Skeleton(names, [-1, 0, 0, 0], offsets)


def _standing(frames: int = 30) -> Motion:
    return Motion.rest(_legs(), frames, fps=30.0)


def _sliding(frames: int = 30, speed: float = 0.6) -> Motion:
    m = _standing(frames)
    root = m.root_positions.clone()
    root[:, 0] += speed * torch.arange(frames) / 30.0  # the whole body glides with feet on the floor
    return m.copy(root_positions=root)


def test_a_set_against_itself():
    res = compare_sets([_standing()], [_standing()])
    for side in ("a", "b"):
        assert res[side]["jerk"] == 0.0 and res[side]["foot_skating"] == 0.0
        assert res[side]["ground_penetration"] == 0.0 and res[side]["bone_length_error"] == pytest.approx(
            0.0, abs=1e-12
        )
        assert res[side]["diversity"] is None and res[side]["frames"] == 30
    assert res["fid"] is None
    assert res["paired"] == {"mpjpe": 0.0, "mpjpe_root_relative": 0.0, "angle_deg": 0.0}
    assert res["height"] == pytest.approx(1.7)


def test_a_set_measured_against_another_skeleton_keeps_its_own_numbers():
    alone = compare_sets([_sliding()], [_sliding()])
    assert alone["notes"] == [] and alone["a"]["height"] == pytest.approx(1.7)
    giant = _sliding()
    giant = giant.copy(skeleton=Skeleton(giant.skeleton.names, giant.skeleton.parents, giant.skeleton.offsets * 100),
                       root_positions=giant.root_positions * 100)  # the same motion in centimetres  # fmt: skip
    mixed = compare_sets([_sliding()], [giant])
    assert mixed["height"] is None and "each is measured against its own height" in mixed["notes"][0]
    for key in ("foot_skating", "jerk", "ground_penetration"):  # in heights: the same numbers for both
        assert mixed["a"][key] == pytest.approx(alone["a"][key], rel=1e-6, abs=1e-12)
        assert mixed["b"][key] == pytest.approx(alone["a"][key], rel=1e-6, abs=1e-12)
    assert mixed["b"]["height"] == pytest.approx(170.0)


def test_gliding_feet_skate_and_pair_up():
    res = compare_sets([_standing()], [_sliding()])
    assert res["a"]["foot_skating"] == 0.0
    assert res["b"]["foot_skating"] == pytest.approx(0.6 / 1.7, rel=1e-6)  # heights per second
    assert res["paired"]["mpjpe_root_relative"] == pytest.approx(0.0, abs=1e-12)
    assert res["paired"]["mpjpe"] > 0.0


def test_feature_extractor_gives_fid_diversity_and_recognition():
    def embed(motions):
        if any(m.num_frames < 10 for m in motions):
            raise ValueError("too short")
        feats = torch.stack([m.root_positions[:, 0].reshape(-1)[:10] for m in motions for _ in range(3)]).float()
        feats = feats + 0.01 * torch.arange(feats.shape[0])[:, None]
        return feats, ["walk" for _ in motions]

    res = compare_sets([_standing(), _sliding()], [_sliding(), _sliding(speed=0.3)], embed=embed,
                       contents_a=["walk", "run"], contents_b=["walk", "walk"])  # fmt: skip
    assert res["fid"] is not None and res["fid"] > 0
    assert res["a"]["recognised"] == 0.5 and res["b"]["recognised"] == 1.0
    assert res["a"]["diversity"] > 0
    short = compare_sets([_standing(5)], [_standing()], embed=embed)
    assert short["fid"] is None and short["notes"] and "too short" in short["notes"][0]


def test_root_relative_error_subtracts_the_hips_below_a_static_dummy_root():
    """Bandai-Namco's rigs put a static ``joint_Root`` above the hips, which carry the travel (translation
    channels): a copy whose hips glide is the same pose, root-relative, though the dummy never moves."""
    names = ["joint_Root", "Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    still = Motion.rest(Skeleton(names, [-1, 0, 1, 1, 1], offsets), 30, fps=30.0)
    travel = offsets.expand(30, 5, 3).clone()
    gliding = travel.clone()
    gliding[:, 1, 0] += 0.6 * torch.arange(30) / 30.0
    a, b = still.copy(joint_translations=travel), still.copy(joint_translations=gliding)
    res = compare_sets([a], [b])
    assert res["paired"]["mpjpe"] > 0.05
    assert res["paired"]["mpjpe_root_relative"] == pytest.approx(0.0, abs=1e-12)
