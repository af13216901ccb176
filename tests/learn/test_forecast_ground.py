"""A continuation keeps out of the floor its input stood on (``lift_out_of_floor``, on by default in
``predict_motion``, ``predict_retargeted`` and ``skelanim predict``; ``--no-ground`` turns it off)."""

from __future__ import annotations

import math

import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.learn.forecast import FLOOR_QUANTILE, lift_out_of_floor

_X_TURN = torch.tensor([math.cos(math.pi / 2), math.sin(math.pi / 2), 0.0, 0.0], dtype=torch.float64)  # 180° about X


def _body() -> Skeleton:
    """Hips with a foot 10 below and a head 8 above (+Y up)."""
    return Skeleton(["Hips", "LeftFoot", "Head"], [-1, 0, 0], torch.tensor([[0, 0, 0], [0, -10.0, 0], [0, 8.0, 0]]))


def test_sinking_frames_are_lifted_by_exactly_their_depth_and_the_input_is_untouched():
    """Hand-built: the input stands its foot on y = 0 for ten frames; the continuation's hips go to 10, 9, 8, 11,
    7.5 and, turned upside down (the head now lowest, 8 below), 5: lifts 0, 1, 2, 0, 2.5 and 3."""
    hips = [10.0] * 10 + [10.0, 9.0, 8.0, 11.0, 7.5, 5.0]
    rot = torch.zeros(len(hips), 3, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    rot[-1, 0] = _X_TURN
    root = torch.tensor([[0.0, y, 0.0] for y in hips], dtype=torch.float64)
    motion = Motion(_body(), rot, root, 30.0)
    lifted, lift = lift_out_of_floor(motion, 10)
    assert torch.allclose(lift, torch.tensor([0, 1, 2, 0, 2.5, 3.0], dtype=torch.float64), atol=1e-9)
    before, after = motion.positions(), lifted.positions()
    assert torch.equal(after[:10], before[:10])
    up = torch.stack([torch.zeros_like(lift), lift, torch.zeros_like(lift)], -1)  # (6, 3)
    assert torch.allclose(after[10:] - before[10:], up[:, None].expand(-1, 3, -1))
    assert float(after[10:, :, 1].min(-1).values.min()) > -1e-9  # nothing below the floor any more
    unlifted, none = lift_out_of_floor(motion[:11], 10)  # a continuation that stays up is left alone
    assert float(none.abs().max()) == 0.0 and torch.equal(unlifted.root_positions, root[:11])


def test_the_floor_is_a_low_quantile_of_the_input_not_its_one_deepest_glitch():
    """One input frame dips 5 below the floor the other 199 stand on: the floor stays at 0 (the 1 % quantile)."""
    hips = [10.0] * 200 + [8.0]
    hips[50] = 5.0
    rot = torch.zeros(len(hips), 3, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    motion = Motion(_body(), rot, torch.tensor([[0.0, y, 0.0] for y in hips], dtype=torch.float64), 30.0)
    assert FLOOR_QUANTILE * 199 >= 1  # the quantile lies between the second and third lowest: both on the floor
    _, lift = lift_out_of_floor(motion, 200)
    assert abs(float(lift[0]) - 2.0) < 1e-9  # by the minimum it would be lifted by 0


def test_a_body_under_a_static_dummy_root_is_lifted_through_its_own_translation_channels():
    """Bandai-Namco's layout: a dummy root at the origin, turned 90° about Z here, so the lift must be turned into its
    frame; the hips hang from it by their own translations. The dummy stays, the feet end on the floor."""
    skeleton = Skeleton(["joint_Root", "Hips", "LeftFoot", "Head"], [-1, 0, 1, 1],
                        torch.tensor([[0, 0, 0], [0, 0, 0], [0, -10.0, 0], [0, 8.0, 0]]))  # fmt: skip
    frames = 12
    rot = torch.zeros(frames, 4, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    rot[:, 0] = torch.tensor([math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)], dtype=torch.float64)
    translations = torch.zeros(frames, 4, 3, dtype=torch.float64)
    translations[:, 2] = torch.tensor([0, -10.0, 0])
    translations[:, 3] = torch.tensor([0, 8.0, 0])
    # the turn takes the root's local +X to world +Y and local -X... so a height v is the local (v, 0, 0)
    hips_world_y = torch.tensor([10.0] * 8 + [10.0, 7.0, 6.0, 9.5], dtype=torch.float64)
    translations[:, 1, 0] = hips_world_y
    translations[:, 2:, :] = torch.tensor([[-10.0, 0, 0], [8.0, 0, 0]], dtype=torch.float64)  # 10 below, 8 above
    motion = Motion(skeleton, rot, torch.zeros(frames, 3, dtype=torch.float64), 30.0, joint_translations=translations)
    lowest = motion.positions()[:, 1:, 1].min(-1).values
    assert torch.allclose(lowest[:8], torch.zeros(8, dtype=torch.float64), atol=1e-9)  # the input stands on y = 0
    lifted, lift = lift_out_of_floor(motion, 8)
    assert torch.allclose(lift, torch.tensor([0, 3.0, 4.0, 0.5], dtype=torch.float64), atol=1e-9)
    assert torch.equal(lifted.root_positions, motion.root_positions)  # the dummy root stays at the origin
    after = lifted.positions()
    assert torch.allclose(after[:, 0], torch.zeros(frames, 3, dtype=torch.float64))
    assert torch.allclose(after[8:, 1:, 1].min(-1).values, torch.zeros(4, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(after[8:, 1:, [0, 2]], motion.positions()[8:, 1:, [0, 2]], atol=1e-9)  # only up


def test_predict_retarget_keeps_a_cmu_walk_out_of_its_floor_and_says_so(mocap_dir, tmp_path, capsys):
    """Through the Bandai-Namco models a CMU walk's continuation sinks below the floor its input stood on
    (``--no-ground``: several % of the height); by default it stands on it, and the command says how far it lifted."""
    from skelanim.cli import main

    cmu = tmp_path / "cmu.bvh"
    walk = skelanim.load(mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh")[:600]
    skelanim.save(walk, cmu)
    n, h = walk.num_frames, walk.height
    heights = walk.positions(end_sites=True)[..., 1].min(-1).values
    floor = float(torch.quantile(heights, FLOOR_QUANTILE))
    lowest = {}
    for flag in ("--ground", "--no-ground"):
        out = tmp_path / f"out{flag}.bvh"
        assert main(["predict", str(cmu), "--retarget", "--method", "mlp", "-o", str(out), flag]) == 0
        said = capsys.readouterr().out
        assert ("lifted out of the floor" in said) == (flag == "--ground")
        lowest[flag] = float(skelanim.load(out).positions(end_sites=True)[n:, :, 1].min()) - floor
    assert lowest["--no-ground"] < -0.01 * h  # the defect the default removes
    assert lowest["--ground"] > -1e-6 * h


def test_the_up_axis_is_the_inputs_however_the_continuation_lies():
    """Hand-built: the body stands for ten frames (+Y up, foot on y = 0), then lies along X for thirty, sunk to
    y = -2 (the foot 10 along +X, the head 8 along -X): the whole clip's up guess is X (its long extent), the input's is
    Y. The lift is along Y, by the depth: 2 each frame (the foot, the hips and the head all at y = -2)."""
    lie = torch.tensor([math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)], dtype=torch.float64)  # 90° about Z
    rot = torch.zeros(40, 3, 4, dtype=torch.float64)
    rot[..., 0] = 1.0
    rot[10:, 0] = lie
    root = torch.tensor([[0.0, 10.0, 0.0]] * 10 + [[0.0, -2.0, 0.0]] * 30, dtype=torch.float64)
    motion = Motion(_body(), rot, root, 30.0)
    assert motion.up_direction()[0] == 0 and motion[:10].up_direction() == (1, 1.0)
    lifted, lift = lift_out_of_floor(motion, 10)
    torch.testing.assert_close(lift, torch.full((30,), 2.0, dtype=torch.float64), rtol=0, atol=1e-12)
    moved = lifted.positions()[10:]
    assert abs(float(moved[..., 1].min())) < 1e-12
    torch.testing.assert_close(moved[..., 0].amin(-1), torch.full((30,), -8.0, dtype=torch.float64), rtol=0, atol=1e-12)
    same, along_y = lift_out_of_floor(motion, 10, up=1)  # as predict_motion passes its rig's
    assert along_y.tolist() == lift.tolist() and torch.equal(same.root_positions, lifted.root_positions)
