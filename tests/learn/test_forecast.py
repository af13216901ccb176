"""Continuing a motion file (``predict_motion``): the input is kept frame for frame, and the continuation
follows at the input's frame rate on the input's own skeleton. Motion of another skeleton is continued through
the model's (``predict_retargeted``, ``skelanim predict --retarget``) and scored there (``learn predict eval
--retarget``)."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.data import MotionDataset
from skelanim.data.clips import clip_from_motion
from skelanim.learn.forecast import predict_motion


def _rig(motion):
    return MotionDataset(clips=[clip_from_motion(motion, fps=25.0)], fps=25.0).rig


@pytest.mark.parametrize("frames", [1 + 6 * 20, 100])  # 4 s (a whole number of 25 fps frames), 3.3 s (not)
def test_a_zero_velocity_continuation_holds_the_last_input_pose_after_the_unchanged_input(learn_files, frames):
    walk = skelanim.load(learn_files[0])
    assert abs(walk.fps - 30.0) < 1e-3 and walk.joint_translations is not None  # Bandai: 30 fps, dummy root
    motion = walk[:frames]  # the model's 25 fps frames end on its last frame in both cases
    out = predict_motion(motion, method="zero_velocity", rig=_rig(motion), seconds=0.5)
    alone = predict_motion(motion, method="zero_velocity", seconds=0.5)  # no rig: the shipped predictors' (an audit)
    torch.testing.assert_close(alone.positions(), out.positions(), atol=1e-6 * motion.height, rtol=0)
    assert out.num_frames == frames + 15 and out.fps == motion.fps
    assert out.metadata["predicted_from_frame"] == motion.num_frames
    assert out.skeleton is motion.skeleton
    before, after = motion.positions(), out.positions()
    assert torch.allclose(after[: motion.num_frames], before, atol=1e-9)  # the input, every joint, unchanged
    held = (after[motion.num_frames :] - before[-1]).norm(dim=-1).max()
    assert float(held) < 1e-4 * motion.height  # then its last pose held (the model's float32 arrays)
    assert torch.equal(out.root_positions[frames:], motion.root_positions[-1].expand(15, 3))  # the dummy stays


def test_a_constant_velocity_continuation_is_sampled_evenly_at_the_input_rate(learn_files):
    walk = skelanim.load(learn_files[0])
    motion = walk[:100]  # 3.3 s: the input ends between two 25 fps frames
    out = predict_motion(motion, method="constant_velocity", rig=_rig(motion), seconds=1.0)
    assert out.num_frames == 100 + 30
    hips = out.positions()[100:, 1]
    steps = hips[1:] - hips[:-1]  # the body root moves on a straight line at a constant speed
    assert float(steps.norm(dim=-1).mean()) > 0.5  # cm per frame: a walk
    assert float((steps - steps.mean(dim=0)).norm(dim=-1).max()) < 1e-3
    first = out.positions()[100, 1] - motion.positions()[-1, 1]  # one input-rate step after the input's end
    assert float((first - steps.mean(dim=0)).norm()) < 0.2 * float(steps.mean(dim=0).norm())


def test_a_method_the_model_cannot_run_or_a_length_that_is_not_positive_is_refused(learn_files):
    # the model given runs whatever the method says: an unknown or mismatched method would label one network's
    # continuation with another's name, and a negative length gave one frame
    from skelanim.learn.predict import CombinedPredictor, Predictor

    walk = skelanim.load(learn_files[0])[:60]
    gcn = Predictor.load(None, default="predict_gcn")
    for method, model, message in (("foo", gcn, "unknown prediction method 'foo'"),
                                   ("rnn", gcn, "'rnn' needs a rnn Predictor as model, got a gcn predictor"),
                                   ("combined", gcn, "needs a CombinedPredictor"),
                                   ("mlp", CombinedPredictor([gcn, gcn]), "got a combined predictor")):
        with pytest.raises(ValueError, match=message):
            predict_motion(walk, method=method, model=model)
    for seconds in (-1.0, 0.0, float("nan")):
        with pytest.raises(ValueError, match="seconds must be a positive number"):
            predict_motion(walk, method="zero_velocity", rig=_rig(walk), seconds=seconds)
    assert predict_motion(walk, method="gcn", model=gcn, seconds=0.2).num_frames == 60 + 6
    # no model: the method's shipped one (it had been refused as "got none")
    assert torch.equal(predict_motion(walk, method="gcn", seconds=0.2).rotations,
                       predict_motion(walk, method="gcn", model=gcn, seconds=0.2).rotations)  # fmt: skip
    import numpy as np

    assert predict_motion(walk, method="zero_velocity", rig=_rig(walk), seconds=np.float32(0.5)).num_frames == 75


def test_a_motion_shorter_than_one_model_frame_is_refused_naming_the_file(learn_files, tmp_path, capsys):
    from skelanim.cli import main

    short = tmp_path / "short.bvh"
    skelanim.save(skelanim.load(learn_files[0])[:1], short)
    assert main(["predict", str(short), "-o", str(tmp_path / "out.bvh"), "--method", "zero_velocity"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {short}") and "at least 0.04 s" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.bvh").exists()


def test_motion_of_another_skeleton_is_continued_through_the_models_from_its_last_frame(mocap_dir, learn_files):
    """``predict_retargeted``: there onto the model's skeleton and back. Zero velocity holds the input's last
    frame exactly (the round trip's change of that frame is undone on every predicted frame, rotations, root and
    translation channels alike), on a CMU skeleton and on the model's own; a learned continuation of a CMU walk
    starts at the input's last pose and moves on."""
    from skelanim.learn.forecast import predict_retargeted
    from skelanim.learn.predict import Predictor

    model = Predictor.load(None, default="predict_gcn")
    cmu = skelanim.load(mocap_dir / "cmu_cgspeed_max" / "131_02.bvh")[:400]
    bandai = skelanim.load(learn_files[0])
    for motion in (cmu, bandai):  # no translation channels / a body root travelling under a static dummy root
        n, h = motion.num_frames, motion.height
        out = predict_retargeted(motion, method="zero_velocity", model=model, seconds=0.5)
        k = round(0.5 * motion.fps)
        assert out.num_frames == n + k and out.skeleton.same_topology(motion.skeleton)
        assert torch.equal(out.rotations[:n], motion.rotations) and out.metadata["predicted_from_frame"] == n
        held = (out.positions()[n:] - motion.positions()[-1]).norm(dim=-1).max()
        assert float(held) < 1e-5 * h
    walk = predict_retargeted(cmu, method="gcn", model=model, seconds=0.5).positions()
    n, h = cmu.num_frames, cmu.height
    seam = (walk[n] - walk[n - 1]).norm(dim=-1).mean()
    before = (walk[n - 1] - walk[n - 2]).norm(dim=-1).mean()
    assert float(seam) < 2 * float(before)  # no jump where the prediction starts
    assert float((walk[-1] - walk[n - 1]).norm(dim=-1).mean()) > 0.05 * h  # it moves on
    # played at the input's 120 fps without a jolt at each of the model's 25 fps frames (a review: straight pieces
    # between them); the predicted part's jerk at the 95th percentile is 0.54 times the input's with the splines,
    # 2.1 times with the slerp between the model's frames
    jerk = (walk[3:] - 3 * walk[2:-1] + 3 * walk[1:-2] - walk[:-3]).norm(dim=-1).mean(-1)
    assert float(jerk[n:].quantile(0.95)) < 1.2 * float(jerk[: n - 3].quantile(0.95))


def test_through_its_own_skeleton_the_retargeted_prediction_is_the_direct_one(learn_files):
    """On the model's own skeleton the way there and back is all but the identity (joints off the canonical
    chains keep their captured hold), so the two predictions agree to 1.5 % of the height (their error against
    the real continuation is 2-3 % at 1 s)."""
    from skelanim.learn.forecast import predict_retargeted
    from skelanim.learn.predict import Predictor

    model = Predictor.load(None, default="predict_gcn")
    walk = skelanim.load(learn_files[0])
    direct = predict_motion(walk, method="gcn", model=model).positions()
    through = predict_retargeted(walk, method="gcn", model=model).positions()
    assert float((direct - through).norm(dim=-1).max()) < 0.015 * walk.height
    moved = (direct[walk.num_frames :] - direct[walk.num_frames - 1]).norm(dim=-1).max()
    assert float(moved) > 0.05 * walk.height  # the bound is not met by a prediction that stands still


def test_the_cli_continues_another_skeleton_only_when_told_to_retarget(mocap_dir, tmp_path, capsys):
    from skelanim.cli import main

    cmu = tmp_path / "cmu.bvh"
    skelanim.save(skelanim.load(mocap_dir / "cmu_cgspeed_max" / "131_02.bvh")[:300], cmu)
    out = tmp_path / "out.bvh"
    args = ["predict", str(cmu), "-o", str(out), "--method", "gcn", "--seconds", "0.5"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cmu}") and "--retarget" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
    assert main([*args, "--retarget"]) == 0
    assert "through the model's 22-joint skeleton" in capsys.readouterr().out
    written = skelanim.load(out)
    assert written.skeleton.num_joints == 31 and written.num_frames == 300 + 60


def test_predict_eval_scores_another_skeletons_files_on_the_models(mocap_dir, tmp_path, capsys):
    """``learn predict eval --retarget``: every file is retargeted onto the models' skeleton and scored there
    (zero velocity as :func:`evaluate_prediction` scores it on those clips); a file whose skeleton cannot be
    mapped is a one-line error naming it."""
    import json

    from skelanim.cli import main
    from skelanim.data.clips import clip_from_motion
    from skelanim.learn.forecast import model_reference_motion, retarget_onto_model
    from skelanim.learn.predict import Predictor
    from skelanim.learn.predict_eval import evaluate_prediction
    from tests.helpers.bvh_text import STD, make_bvh, random_values

    cmu = mocap_dir / "cmu_cgspeed_max" / "131_02.bvh"
    assert main(["learn", "predict", "eval", "--data", str(cmu), "--retarget", "--stride", "20", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)["methods"]
    model = Predictor.load(None, default="predict_rnn")  # the CLI calibrates on its first model's mean pose
    onto = retarget_onto_model(skelanim.load(cmu), model_reference_motion(model))
    ds = MotionDataset(clips=[clip_from_motion(onto, fps=25.0)], rig=model.rig, fps=25.0)
    want = evaluate_prediction({}, ds, rig=model.rig, methods=("zero_velocity",), stride=20)["methods"]["zero_velocity"]
    assert scores["zero_velocity"]["mpjpe"] == pytest.approx(want["mpjpe"], rel=1e-6)
    assert scores["combined"]["mpjpe"][0] < scores["zero_velocity"]["mpjpe"][0]
    chain = tmp_path / "chain.bvh"  # four joints in a chain: no legs, no arms
    chain.write_text(make_bvh(STD, random_values(STD, frames=60)))
    assert main(["learn", "predict", "eval", "--data", str(chain), "--retarget", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {chain}") and len(err.strip().splitlines()) == 1


def test_a_joint_mapping_lets_predict_retarget_read_a_skeleton_whose_names_do_not_tell(mocap_dir, tmp_path, capsys):
    """The CMU walk with its joints renamed J00, J01, ...: refused without a mapping, and with one (canonical
    joint -> new name) continued exactly as the original file is."""
    import json
    import re

    from skelanim.cli import main
    from skelanim.retarget.mapping import map_skeleton

    source = mocap_dir / "cmu_cgspeed_max" / "131_02.bvh"
    text = source.read_text()
    names = re.findall(r"(?:ROOT|JOINT)\s+(\S+)", text)
    renamed = {name: f"J{i:02d}" for i, name in enumerate(names)}
    anonymous = tmp_path / "anonymous.bvh"
    anonymous.write_text(re.sub(r"((?:ROOT|JOINT)\s+)(\S+)", lambda m: m.group(1) + renamed[m.group(2)], text))
    mapping = {canon: renamed[names[j]] for canon, j in map_skeleton(skelanim.load(source).skeleton).joints.items()}
    (tmp_path / "map.json").write_text(json.dumps(mapping))
    common = ["--method", "gcn", "--seconds", "0.5", "--retarget"]
    assert main(["predict", str(anonymous), "-o", str(tmp_path / "a.bvh"), *common]) == 2
    assert "cannot map the skeleton" in capsys.readouterr().err
    mapped = ["predict", str(anonymous), "-o", str(tmp_path / "a.bvh"), *common, "--map", str(tmp_path / "map.json")]
    assert main(mapped) == 0
    assert main(["predict", str(source), "-o", str(tmp_path / "o.bvh"), *common]) == 0
    a, o = skelanim.load(tmp_path / "a.bvh"), skelanim.load(tmp_path / "o.bvh")
    assert a.num_frames == o.num_frames and torch.allclose(a.positions(), o.positions(), atol=1e-6 * o.height)


def test_the_models_skeleton_in_other_units_or_size_is_read_at_the_models_size(learn_files):
    """A Bandai walk in metres (or 1.3 times as large) has the model's joints but not its lengths: its prediction
    jumped from 0.9 m to 37 m high within the second, and the recogniser read the walk as a dash. Scaled to the
    rig's size and back, the prediction is the walk's own prediction scaled, and the reading the walk's."""
    from skelanim.learn.predict import Predictor
    from skelanim.learn.recognize import Recognizer
    from skelanim.ops import scale

    walk = skelanim.load(learn_files[0])
    walk = walk[walk.num_frames - 40 :]
    model = Predictor.load(None, default="predict_mlp")
    direct = predict_motion(walk, method="mlp", model=model).positions()
    recogniser = Recognizer.load()
    reading = recogniser.recognize_motions([walk])["probs"]
    for factor in (0.01, 1.3):
        other = scale(walk, factor)
        out = predict_motion(other, method="mlp", model=model)
        assert out.skeleton is other.skeleton and out.num_frames == direct.shape[0]
        assert float((out.positions() / factor - direct).abs().max()) < 1e-6 * walk.height
        assert float((recogniser.recognize_motions([other])["probs"] - reading).abs().max()) < 1e-5


def test_a_looping_clips_continuation_is_written_as_no_loop(mocap_dir, tmp_path):
    """A DeepMimic walk loops (``Loop: wrap``); its continuation does not come back to its first frame (0.38 m apart
    at the seam), so the written clip must not say it loops (it had kept ``wrap``: an engine looping it jumped)."""
    import json

    from skelanim.cli import main

    source = mocap_dir / "deepmimic" / "humanoid3d_walk.txt"
    assert skelanim.load(source).metadata["loop"] == "wrap"
    out = tmp_path / "next.txt"
    assert main(["predict", str(source), "--retarget", "--method", "zero_velocity", "--seconds", "0.5", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["Loop"] == "none"
    assert skelanim.load(out).metadata["loop"] == "none"


def test_a_long_prediction_shows_its_progress(learn_files, tmp_path, capsys):
    """``predict --seconds 150`` ran half a minute without a word; the chained seconds now show a bar on stderr
    (``--no-progress``: none), counting the model-rate frames the continuation needs."""
    from skelanim.cli import main

    out = tmp_path / "next.bvh"
    assert main(["predict", str(learn_files[0]), "--method", "zero_velocity", "--seconds", "3", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "predict:" in err and "/75 " in err  # 3 s at the model's 25 fps
    assert main(["predict", str(learn_files[0]), "--method", "zero_velocity", "--seconds", "3", "-o", str(out),
                 "--no-progress"]) == 0  # fmt: skip
    assert "predict:" not in capsys.readouterr().err


def test_predict_names_a_missing_model_folder_and_refuses_a_map_it_would_not_read(learn_files, tmp_path, capsys):
    """A CLI audit: `predict -m /nonexistent` said "combined averages two or more predictors: repeat --model", and
    `--retarget --map MISSING` on motion of the model's own skeleton exited 0 (the map was never read)."""
    from skelanim.cli import main

    out = tmp_path / "p.bvh"
    assert main(["predict", str(learn_files[0]), "-o", str(out), "-m", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere'}: no such model folder" in capsys.readouterr().err
    assert main(["predict", str(learn_files[0]), "-o", str(out), "--retarget", "--map", str(tmp_path / "m.json")]) == 2
    assert "is on the model's skeleton, which needs no joint mapping" in capsys.readouterr().err
    assert not out.exists()
