"""Retargeting works in a Y-up canonical space: a Z-up or X-up clip is turned Y up on the way in, and the result is
turned into a Z-up target's world on the way out (:func:`~skelanim.retarget.retargeter.world_turn`). So a capture
turned to another up axis retargets to the same motion, turned as its target is, clip by clip and frame by frame.
Before, the turned source kept its world: a Z-up CMU walk came out lying on its back on a Y-up target, its floor
and hips height read along a horizontal axis."""

from __future__ import annotations

import math

import pytest
import torch

import skelanim
from skelanim.core.rotations import quat_apply, quat_inverse
from skelanim.ops import rotate
from skelanim.retarget import Retargeter

#: Quarter turns taking Y up to Z up (+90° about X) and to X up (-90° about Z), and a half turn (Y down).
TURNS = {
    "z-up": torch.tensor([math.cos(math.pi / 4), math.sin(math.pi / 4), 0.0, 0.0], dtype=torch.float64),
    "x-up": torch.tensor([math.cos(math.pi / 4), 0.0, 0.0, -math.sin(math.pi / 4)], dtype=torch.float64),
    "y-down": torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64),
}
UPS = {"z-up": (2, 1.0), "x-up": (0, 1.0), "y-down": (1, -1.0)}


@pytest.fixture(scope="module")
def clips(mocap_files):
    cmu, bandai = mocap_files(["cmu_cgspeed_mb/01_01.bvh", "bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    return skelanim.load(cmu)[:240], skelanim.load(bandai)


def _unturned(positions: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
    return quat_apply(quat_inverse(turn).expand(*positions.shape[:-1], 4), positions)


@pytest.mark.parametrize("method", ["copy", "nkn", "ik"])
@pytest.mark.parametrize("name", list(TURNS))
def test_a_turned_source_retargets_as_the_upright_one(clips, method, name):
    cmu, bandai = clips
    turned = rotate(cmu, TURNS[name])
    assert turned.up_direction() == UPS[name]
    upright = Retargeter(cmu, bandai, method)(cmu).positions()
    out = Retargeter(turned, bandai, method)(turned)
    assert out.up_direction() == (1, 1.0)  # standing on the Y-up target, not lying in the source's world
    assert float((out.positions() - upright).norm(dim=-1).max()) < 1e-9 * bandai.height


@pytest.mark.parametrize("method", ["copy", "nkn"])
def test_a_turned_target_gets_the_upright_result_turned_as_it_is(clips, method):
    cmu, bandai = clips
    turn = TURNS["z-up"]
    upright = Retargeter(cmu, bandai, method)(cmu).positions()
    out = Retargeter(cmu, rotate(bandai, turn), method)(cmu)
    assert out.up_direction() == (2, 1.0)
    assert float((_unturned(out.positions(), turn) - upright).norm(dim=-1).max()) < 1e-9 * bandai.height


def test_a_turned_source_streams_frame_by_frame_as_its_clip(clips):
    """:meth:`Retargeter.step` turns each streamed frame as the clip was turned (eager torch and the ONNX step); one
    floor for both (a clip's default is where its feet stand, a stream's y = 0). At the NKN's training rate, 30 fps,
    at which it reads a clip of any rate (the stream runs at the rate it is given)."""
    cmu, bandai = clips
    turned = rotate(cmu[:48:4].copy(fps=cmu.fps / 4), TURNS["z-up"])
    target_z = rotate(bandai, TURNS["z-up"])
    clip = Retargeter(turned, target_z, "nkn", floor=0.0)(turned).positions()
    for runtime in ("torch", "onnx"):
        stream = Retargeter(turned, target_z, "nkn", fps=turned.fps, runtime=runtime, floor=0.0)
        frames = [stream.step(turned.rotations[k], turned.root_positions[k]) for k in range(turned.num_frames)]
        q, root = torch.stack([f[0] for f in frames]), torch.stack([f[1] for f in frames])
        moved = None if frames[0][2] is None else torch.stack([f[2] for f in frames])
        streamed = skelanim.Motion(bandai.skeleton, q, root, turned.fps, joint_translations=moved).positions()
        assert float((streamed - clip).norm(dim=-1).max()) < 1e-4 * bandai.height, runtime


def test_predict_through_the_models_continues_a_turned_source_as_the_upright_one(clips):
    """``predict --retarget`` retargets there and back: a Z-up walk's continuation is the Y-up one's, turned (before,
    the turned walk's continuation was up to a height away from it)."""
    from skelanim.learn.forecast import predict_retargeted
    from skelanim.learn.predict import Predictor

    cmu, _ = clips
    model = Predictor.load(None, default="predict_gcn")
    turn = TURNS["z-up"]
    upright = predict_retargeted(cmu, method="gcn", model=model, seconds=0.5).positions()
    turned = predict_retargeted(rotate(cmu, turn), method="gcn", model=model, seconds=0.5).positions()
    assert float((_unturned(turned, turn) - upright).norm(dim=-1).max()) < 1e-6 * cmu.height


def test_rotate_turns_the_world_about_a_pivot_by_a_quaternion_or_its_matrix(clips):
    from skelanim.core.rotations import quat_to_matrix
    from skelanim.ops import up_to_y

    cmu, _ = clips
    q = torch.nn.functional.normalize(torch.tensor([0.9, 0.2, -0.3, 0.25], dtype=torch.float64), dim=0)
    pivot = torch.tensor([10.0, -4.0, 3.0], dtype=torch.float64)
    by_quat, by_matrix = rotate(cmu, q, pivot=pivot), rotate(cmu, quat_to_matrix(q), pivot=pivot)
    expected = (cmu.positions() - pivot) @ quat_to_matrix(q).T + pivot  # every joint turned about the pivot
    assert torch.allclose(by_quat.positions(), expected, atol=1e-9)
    assert torch.allclose(by_matrix.positions(), expected, atol=1e-9)
    for name, turn in TURNS.items():  # up_to_y undoes each turn of a Y-up clip (it may also turn about up)
        back = up_to_y(rotate(cmu, turn))
        assert back.up_direction() == (1, 1.0), name
        assert torch.allclose(back.positions()[..., 1], cmu.positions()[..., 1], atol=1e-9), name
    same = up_to_y(cmu)  # a copy, as every op returns (it had been the input itself: its metadata shared)
    assert same is not cmu and torch.equal(same.positions(), cmu.positions())
    same.metadata["units"] = "m"
    assert cmu.metadata.get("units") != "m"


@pytest.mark.parametrize("method", ["copy", "nkn"])
def test_the_command_line_turns_a_z_up_source_and_target_as_the_library_does(clips, tmp_path, method):
    """``skelanim retarget`` builds its rigs itself (mappings, --calibrate), which show no up axis: it turns the
    files Y up first and hands the Retargeter the turns. Before, a Z-up source came out lying in its own world (1.05
    heights from the upright result for the production rig onto CMU)."""
    from skelanim.cli import main

    cmu, bandai = clips
    turn = TURNS["z-up"]
    files = {"cmu.bvh": cmu[:60], "cmu_z.bvh": rotate(cmu[:60], turn), "bandai.bvh": bandai[:60],
             "bandai_z.bvh": rotate(bandai[:60], turn)}  # fmt: skip
    for name, motion in files.items():
        skelanim.save(motion, tmp_path / name)

    def run(src: str, to: str) -> skelanim.Motion:
        out = tmp_path / f"{src}_{to}_{method}.bvh"
        assert main(["retarget", str(tmp_path / src), "--to", str(tmp_path / to), "-o", str(out), "--method", method]) == 0
        return skelanim.load(out)

    upright = run("cmu.bvh", "bandai.bvh")
    from_z = run("cmu_z.bvh", "bandai.bvh")
    onto_z = run("cmu.bvh", "bandai_z.bvh")
    assert from_z.up_direction() == (1, 1.0) and onto_z.up_direction() == (2, 1.0)
    tol = 1e-5 * bandai.height  # the files' six decimals
    assert float((from_z.positions() - upright.positions()).norm(dim=-1).max()) < tol
    assert float((_unturned(onto_z.positions(), turn) - upright.positions()).norm(dim=-1).max()) < tol


def test_a_z_up_source_onto_the_deepmimic_humanoid_is_the_upright_one(clips):
    """:func:`to_deepmimic` builds its rigs itself too: a Z-up source reaches the robot as the upright one does."""
    from skelanim.retarget.robot import to_deepmimic

    cmu, _ = clips
    upright = to_deepmimic(cmu[:60], method="copy")
    turned = to_deepmimic(rotate(cmu[:60], TURNS["z-up"]), method="copy")
    assert float((turned.positions() - upright.positions()).norm(dim=-1).max()) < 1e-6 * float(upright.height)
