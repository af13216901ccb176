"""``skelanim recognize``: files classified by the vote of their windows, a timeline that follows a cut from one
content to another, one-line errors for files it cannot read that way."""

from __future__ import annotations

import json

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.core.motion import Motion
from skelanim.errors import SkeletonError
from skelanim.learn.recognize import Recognizer
from skelanim.metrics.distribution import vote

TINY = {"channels": (8, 8), "strides": (1, 2)}


def test_recognize_motions_is_the_vote_of_its_windows(tiny_ds, mocap_files):
    torch.manual_seed(0)
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], [], window=32, arch_options=TINY).eval()
    fr = tiny_ds.frames()
    motions = [tiny_ds.rig.to_motion(fr["rot"][a:b], fr["pelvis"][a:b], 25.0) for a, b in ((0, 90), (100, 120))]
    out = model.recognize_motions(motions, stride=8)
    per_motion = out["windows"][:, 0]
    assert out["probs"].shape == (2, 3) and out["window_probs"].shape == (len(per_motion), 3)
    assert int((per_motion == 1).sum()) == 1  # 20 frames, shorter than the window: one padded window
    assert int((per_motion == 0).sum()) == len(range(0, 90 - 32 + 1, 8)) + 1  # every 8 frames, and the tail
    for i in range(2):  # the mean of its windows' probabilities, which sum to one
        assert torch.allclose(out["probs"][i], out["window_probs"][per_motion == i].mean(0), atol=1e-6)
    assert torch.allclose(out["probs"].sum(-1), torch.ones(2), atol=1e-5)
    _, voted = vote(out["window_probs"], per_motion)
    assert torch.equal(out["probs"].argmax(-1), voted)  # the same decision as evaluate_recognizer's vote
    other = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    with pytest.raises(SkeletonError, match=f"{other}: the recogniser works on a 22-joint skeleton"):
        model.recognize_motions([motions[0], skelanim.load(other)])


def test_cli_names_each_file_and_follows_a_cut(learn_files, tmp_path, capsys):
    walk, bow = learn_files[0], learn_files[2]  # training styles of the shipped recogniser: a functional check
    cut = Motion.concatenate([skelanim.load(walk), skelanim.load(bow)])
    skelanim.save(cut, tmp_path / "walk_then_bow.bvh")
    capsys.readouterr()
    argv = ["recognize", str(walk), str(bow), str(tmp_path / "walk_then_bow.bvh"), "--windows", "--json", "--top", "2"]
    assert main(argv) == 0
    files = {f["path"]: f for f in json.loads(capsys.readouterr().out)["files"]}
    assert files[str(walk)]["content"] == "walk" and files[str(bow)]["content"] == "bow"
    assert all(len(f["top"]) == 2 and f["top"][0][1] >= f["top"][1][1] for f in files.values())
    timeline = files[str(tmp_path / "walk_then_bow.bvh")]["windows"]
    walk_s = skelanim.load(walk).duration
    assert timeline[0]["content"] == "walk" and timeline[-1]["content"] == "bow"
    assert timeline[-1]["start_s"] > walk_s  # the last window lies wholly in the bow
    changes = [i for i in range(1, len(timeline)) if timeline[i]["content"] != timeline[i - 1]["content"]]
    assert len(changes) >= 1 and all(abs(timeline[i]["start_s"] - walk_s) < 2.6 for i in changes)  # near the cut
    assert main(["recognize", str(walk)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{walk}: walk ") and "\n" not in line


def test_every_window_of_the_timeline_spans_the_window_length_cut_at_the_clips_end(learn_files, tmp_path, capsys):
    """A window is the span [start, start + 64 / 25 s) cut at the clip's end, F / fps (a review: the last window,
    moved back to end there, had ended at the last frame's time, (F - 1) / fps, the others a window's length after
    their start). A clip shorter than a window: one window, 0 to its end."""
    motion = skelanim.load(learn_files[0])
    short = tmp_path / "short.bvh"
    skelanim.save(motion[:40], short)
    capsys.readouterr()
    assert main(["recognize", str(learn_files[0]), str(short), "--windows", "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    span = motion.num_frames / motion.fps
    for w in files[0]["windows"]:
        assert w["end_s"] == pytest.approx(min(w["start_s"] + 64 / 25, span), abs=1e-3)
    assert files[0]["windows"][-1]["end_s"] == pytest.approx(span, abs=1e-3)  # the last window ends at the clip's end
    assert [(w["start_s"], w["end_s"]) for w in files[1]["windows"]] == [(0.0, round(40 / motion.fps, 3))]


def test_cli_one_line_errors(learn_files, mocap_files, tmp_path, capsys):
    other = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    capsys.readouterr()
    assert main(["recognize", str(learn_files[0]), str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {other}") and "22-joint skeleton" in err and "\n" not in err
    (tmp_path / "empty").mkdir()
    assert main(["recognize", str(tmp_path / "empty")]) == 2
    assert "no motion files" in capsys.readouterr().err
    assert main(["recognize", str(tmp_path / "missing.bvh")]) == 2
    assert "missing.bvh" in capsys.readouterr().err
