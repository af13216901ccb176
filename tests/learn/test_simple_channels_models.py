"""A Bandai take written by ``convert --simple-channels`` (the rig without its static ``joint_Root``, the hips as the
root) is read by the shipped models as the take itself (``Rig.with_dummy_root``; a review found it refused by
``recognize`` and ``predict`` as "21 joints, not 22" and given no FID by ``evaluate``). The reference: the original
file under a name of the same kind (so that both get the same label space), and its prediction."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

import skelanim
from skelanim.cli import main
from skelanim.learn.recognize import Recognizer

WALK = "bandai_namco_1/dataset-1_walk_normal_001.bvh"


def test_a_simple_channels_take_is_recognised_and_predicted_as_the_take(mocap_files, tmp_path: Path, capsys) -> None:
    source = mocap_files([WALK])[0]
    original, simple = tmp_path / "original.bvh", tmp_path / "simple.bvh"
    shutil.copy(source, original)
    assert main(["convert", str(source), str(simple), "--simple-channels"]) == 0
    motion = skelanim.load(simple)
    assert motion.skeleton.num_joints == 21 and motion.skeleton.names[0] == "Hips"
    recogniser = Recognizer.load(None, default="recognize")
    a, b = (recogniser.recognize_motions([skelanim.load(p)]) for p in (original, simple))
    np.testing.assert_allclose(b["window_probs"].numpy(), a["window_probs"].numpy(), atol=1e-4)
    outs = {}
    for path in (original, simple):
        out = tmp_path / f"{path.stem}_predicted.bvh"
        assert main(["predict", str(path), "-o", str(out), "--no-progress"]) == 0
        outs[path.stem] = skelanim.load(out)
    predicted, reference = outs["simple"], outs["original"]
    assert predicted.skeleton.names == motion.skeleton.names  # written on the input's own skeleton
    order = [reference.skeleton.names.index(n) for n in predicted.skeleton.names]
    gap = (predicted.positions() - reference.positions()[:, order]).abs().max()
    assert float(gap) < 1e-3 * reference.height
    capsys.readouterr()
    assert main(["evaluate", str(original), str(simple), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"fid": null' not in out and '"fid":' in out


def test_the_dummy_root_goes_only_under_the_rig_without_it(mocap_files) -> None:
    """A motion of other joints (CMU) or of the rig itself comes back as it is."""
    rig = Recognizer.load(None, default="recognize").rig
    bandai, cmu = (skelanim.load(p) for p in mocap_files([WALK, "cmu_cgspeed_max/131_01.bvh"]))
    assert rig.with_dummy_root(bandai) is bandai and rig.with_dummy_root(cmu) is cmu


def test_the_rig_s_joints_in_another_order_are_read_as_the_rig_s(mocap_files) -> None:
    """The take's joints stored breadth first (parents still first; BVH lists them depth first, DeepMimic's humanoid
    its own way): the recogniser gives the take's window probabilities and the predictor its prediction, the joints
    in the input's order (a review found a model trained on DeepMimic clips refusing the BVH written for them)."""
    import torch

    from skelanim.learn.forecast import predict_motion
    from skelanim.learn.predict import Predictor
    from skelanim.ops import reorder_joints

    take = skelanim.load(mocap_files([WALK])[0])[:60]
    names, parents = take.skeleton.names, [int(p) for p in take.skeleton.parents]
    order, frontier = [0], [0]
    while frontier:  # breadth first
        frontier = [j for p in frontier for j in range(len(names)) if parents[j] == p]
        order += frontier
    shuffled = reorder_joints(take, [names[j] for j in order])
    assert shuffled.skeleton.names != names
    recogniser = Recognizer.load(None, default="recognize")
    a, b = (recogniser.recognize_motions([m]) for m in (take, shuffled))
    np.testing.assert_allclose(b["window_probs"].numpy(), a["window_probs"].numpy(), atol=1e-5)
    model = Predictor.load(None, default="predict_mlp")
    want = predict_motion(take, method="mlp", model=model, seconds=0.4)
    got = predict_motion(shuffled, method="mlp", model=model, seconds=0.4)
    assert got.skeleton.names == shuffled.skeleton.names
    torch.testing.assert_close(got.positions(), want.positions()[:, order], rtol=0, atol=1e-6 * take.height)
