"""``skelanim.ik.evaluate`` scores a known error as it says: a solver that answers with a 10° turn of one forearm and
the true rotations otherwise, is off by 10° at that joint (local), at it and the hand below it (global),
and by the chord the hand sweeps (positions), each averaged over the evaluated joints; the methods get the windows
with each one's first frame marked as a start; noise on the input is ``noise * height`` per axis and reaches the
methods, and the scores measure the answer against the clean positions."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.rotations import quat_multiply


@pytest.fixture(scope="module")
def model():
    from skelanim.ik.solve import IKModel

    return IKModel.load()


def _catch_poses_and_frames(monkeypatch: pytest.MonkeyPatch) -> dict[str, torch.Tensor]:
    """Let ``evaluate`` read its poses and pick its frames as it does, catching the true local rotations
    (``"local"``) and the picked frames (``"idx"``) on the way, for a stand-in method to answer with."""
    from skelanim.ik import evaluate as ik_evaluate

    caught: dict[str, torch.Tensor] = {}
    pose_set, select_frames = ik_evaluate.pose_set, ik_evaluate.select_frames

    def catch_poses(*args, **kwargs):
        poses = pose_set(*args, **kwargs)
        caught["local"] = poses.local
        return poses

    def catch_frames(*args, **kwargs):
        idx, starts = select_frames(*args, **kwargs)
        caught["idx"] = idx
        return idx, starts

    monkeypatch.setattr(ik_evaluate, "pose_set", catch_poses)
    monkeypatch.setattr(ik_evaluate, "select_frames", catch_frames)
    return caught


def test_a_known_turn_is_scored_in_degrees_and_its_chord_in_percent_of_the_height(bandai_files, model, monkeypatch,
                                                                                   torch_threads):  # fmt: skip
    """Two stand-in solvers answer with the true rotations of the evaluated frames (caught on their way into the
    scoring): one as they are, one with the left forearm turned 10° across the bone in its own frame."""
    from skelanim.ik import evaluate as ik_evaluate

    rig = model.rig
    names = rig.skeleton.names
    forearm, hand = names.index("LowerArm_L"), names.index("Hand_L")
    assert rig.parents[hand] == forearm and sorted(rig.evaluated) == list(range(1, rig.num_joints))
    bone = rig.offsets[hand].double()  # the forearm, in the forearm joint's own frame
    axis = torch.linalg.cross(bone, torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64))
    axis = axis / axis.norm()  # across the bone: the hand sweeps a chord of 2 L sin(5°)
    half = math.radians(10.0) / 2
    turn = torch.cat([torch.tensor([math.cos(half)], dtype=torch.float64), math.sin(half) * axis])
    solve = ik_evaluate.run_method
    caught = _catch_poses_and_frames(monkeypatch)

    def true_rotations(method, inputs, model, *, starts=None):
        caught[f"starts {method}"] = starts
        _, trans = solve("swing_mean", inputs, model, starts=starts)  # the root's place, from the positions
        quats = caught["local"][caught["idx"]].clone()
        if method == "swing_rest":
            quats[:, forearm] = quat_multiply(quats[:, forearm], turn.to(quats.dtype))
        return quats, trans

    monkeypatch.setattr(ik_evaluate, "run_method", true_rotations)
    report = ik_evaluate.evaluate([str(bandai_files[0])], model, methods=("swing_mean", "swing_rest"), max_frames=12,
                                  timing=False)  # fmt: skip
    exact, wrong = report["methods"]["swing_mean"], report["methods"]["swing_rest"]
    n = len(rig.evaluated)
    assert report["frames"] == 12 and exact["local_geodesic_deg"] < 1e-4 and exact["global_geodesic_deg"] < 1e-4
    assert exact["mpjpe"] < 1e-6 * report["height"]
    assert wrong["local_geodesic_deg"] == pytest.approx(10.0 / n, abs=1e-4)
    assert wrong["global_geodesic_deg"] == pytest.approx(2 * 10.0 / n, abs=1e-4)  # the forearm and the hand
    chord = 2 * float(bone.norm()) * math.sin(half)
    assert wrong["mpjpe"] == pytest.approx(chord / n, rel=1e-4)
    assert wrong["mpjpe_pct_height"] == pytest.approx(100 * chord / n / report["height"], rel=1e-4)
    assert report["per_joint"]["swing_rest"]["LowerArm_L"] == pytest.approx(10.0, abs=1e-4)
    # the hand's own (local) rotation is right, its world rotation 10 degrees off: the breakdown is of the local one
    assert report["per_joint"]["swing_rest"]["Hand_L"] == pytest.approx(0.0, abs=1e-4)
    assert report["per_joint"]["swing_rest"]["UpperArm_L"] == pytest.approx(0.0, abs=1e-4)
    # 12 frames of one long file: a window of 8 and one of 4, consecutive frames each, each begun as a sequence
    idx = caught["idx"].tolist()
    assert idx[:8] == list(range(idx[0], idx[0] + 8)) and idx[8:] == list(range(idx[8], idx[8] + 4))
    for method in ("swing_mean", "swing_rest"):
        assert caught[f"starts {method}"].tolist() == [i % 8 == 0 for i in range(12)]


def test_input_noise_reaches_the_methods(bandai_files, model, torch_threads):
    from skelanim.ik.evaluate import evaluate

    clean = evaluate([str(bandai_files[0])], model, methods=("swing_mean",), max_frames=12, timing=False)
    noisy = evaluate([str(bandai_files[0])], model, methods=("swing_mean",), max_frames=12, timing=False, noise=0.01)
    # joints moved by 1 % of the height each: positions off by about that much (the swing solver follows the bones)
    assert clean["methods"]["swing_mean"]["mpjpe_pct_height"] < 1e-4
    assert 0.2 < noisy["methods"]["swing_mean"]["mpjpe_pct_height"] < 5.0


def test_noise_is_a_fraction_of_the_height_per_axis_and_scores_use_the_clean_positions(bandai_files, model,
                                                                                        monkeypatch, torch_threads):  # fmt: skip
    """A stand-in solver answers with the true rotations and the IK root at the origin, whatever noisy positions it
    is given: every score is zero. Its input minus forward kinematics of the true rotations (numbers of the files,
    caught on their way in) is the noise: mean 0, standard deviation ``noise * height`` on each axis."""
    from skelanim.core.kinematics import forward_kinematics
    from skelanim.ik import evaluate as ik_evaluate

    rig = model.rig
    caught = _catch_poses_and_frames(monkeypatch)

    def true_rotations(method, inputs, model, *, starts=None):
        caught["inputs"] = inputs
        quats = caught["local"][caught["idx"]].clone()
        return quats, rig.translations(torch.zeros(quats.shape[0], 3, dtype=torch.float64))

    monkeypatch.setattr(ik_evaluate, "run_method", true_rotations)
    noise = 0.01
    report = ik_evaluate.evaluate([str(bandai_files[0])], model, methods=("swing_mean",), max_frames=64, timing=False,
                                  noise=noise)  # fmt: skip
    scores = report["methods"]["swing_mean"]
    assert scores["mpjpe"] < 1e-6 * rig.height and scores["local_geodesic_deg"] < 1e-4
    assert scores["global_geodesic_deg"] < 1e-4
    quats = caught["local"][caught["idx"]]
    _, clean = forward_kinematics(
        quats, rig.translations(torch.zeros(quats.shape[0], 3, dtype=torch.float64)), rig.parents
    )
    added = (caught["inputs"] - clean)[:, rig.evaluated].reshape(-1, 3).numpy()  # (64 * 21, 3): 1344 per axis
    sigma = noise * rig.height
    # the standard deviation of 1344 normal samples is within 4 * 1.9 % of the true one, their mean within 4 * 2.7 %
    assert np.abs(added.std(0) / sigma - 1).max() < 0.08
    assert np.abs(added.mean(0)).max() < 4 * sigma / np.sqrt(added.shape[0])
