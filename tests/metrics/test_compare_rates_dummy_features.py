"""``compare_sets`` and ``skelanim evaluate`` on an audit's cases (2026-12): jerk and skating of a faster clip taken at
the slowest rate from the sample times within its duration, jerk over the body's joints (a static dummy root left
out), a set the recogniser cannot take (a 1-frame file, a short 120-fps clip) noted instead of aborting, ``pairs``
refused unless a whole number of 1 or more, and a note that names how the sets differ."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton
from skelanim.data.rig import body_root
from skelanim.data.samples import sample_path
from skelanim.metrics import diversity, jerk, multimodality
from skelanim.metrics.compare import compare_sets, set_summary
from skelanim.ops import resample


def _cubic(t: torch.Tensor) -> torch.Tensor:
    """A path along X with jerk exactly 6 units/s^3 (third differences are exact for cubics)."""
    return 10 + 2 * t + 3 * t**2 + t**3


def _legs_at(x_of_t, frames: int, fps: float) -> Motion:
    """1.7-tall legs (hips, head, two feet; no dummy root) on the floor, the whole body at ``x_of_t(t)`` along X."""
    names = ["Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    m = Motion.rest(Skeleton(names, [-1, 0, 0, 0], offsets), frames, fps=fps)
    root = m.root_positions.clone()
    root[:, 0] += x_of_t(torch.arange(frames, dtype=torch.float64) / fps)
    return m.copy(root_positions=root)


# --- 1: a faster clip taken at the slowest rate, from the sample times within its duration ---------------------


@pytest.mark.parametrize("frames", [41, 42, 43, 44, 45, 121, 123])
def test_jerk_of_a_faster_clip_is_its_own_at_the_slower_rate(frames):
    """A cubic path at 120 fps taken at 30 fps: the resampled clip holds its last frame where the last sample time
    falls past the end (43 frames: 0.35 s, the 12th sample at 0.367 s), a frame at the wrong time that read a jerk
    of 231 for the exact 6. Only the samples within the duration are taken: 6 at every frame count."""
    m = _legs_at(_cubic, frames, 120.0)
    out = set_summary([m], up_axis=1, height=1.0, floor=0.0, jerk_fps=30.0)
    assert out["jerk"] == pytest.approx(6.0, rel=1e-5)
    res = compare_sets([_legs_at(_cubic, 31, 30.0)], [m])  # the other set at 30 fps
    assert res["b"]["jerk_raw"] == pytest.approx(6.0, rel=1e-5)
    assert res["a"]["jerk_raw"] == pytest.approx(6.0, rel=1e-5)


@pytest.mark.parametrize("frames", [43, 44, 45])
def test_skating_of_a_faster_clip_is_its_own_at_the_slower_rate(frames):
    """A glide at 0.6 units/s, feet on the floor, at 120 fps taken at 30: the held last frame had made a last step
    shorter than the others (a slower one); every step is 0.6 units/s now."""
    m = _legs_at(lambda t: 0.6 * t, frames, 120.0)
    out = set_summary([m], up_axis=1, height=1.0, floor=0.0, jerk_fps=30.0)
    assert out["foot_skating"] == pytest.approx(0.6, rel=1e-9)


def test_a_real_clip_taken_at_30_fps_is_its_every_fourth_frame(mocap_files):
    """A 120-fps capture of 43 frames taken at 30 fps: its jerk is that of frames 0, 4, ..., 40."""
    m = skelanim.load(mocap_files(["xia_style/angry_13_000.bvh"])[0])[:43]
    assert m.fps == 120.0
    out = set_summary([m], up_axis=1, height=1.0, floor=0.0, jerk_fps=30.0)
    r = body_root(m)
    assert out["jerk"] == pytest.approx(jerk(m.positions()[::4, r:], 30.0), rel=1e-9)


# --- 2: jerk over the body's joints -------------------------------------------------------------------------------


def test_jerk_leaves_a_static_dummy_root_out():
    """A body under a static ``joint_Root`` at the origin (Bandai-Namco's layout) whose hips travel along a cubic:
    every body joint's jerk is 6 units/s^3, the dummy's 0. Averaged over all five joints it read 6 * 4/5."""
    names = ["joint_Root", "Hips", "Head", "LeftFoot", "RightFoot"]
    offsets = torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.5, 0.0], [0.0, 0.7, 0.0], [0.2, -1.0, 0.0], [-0.2, -1.0, 0.0]])
    still = Motion.rest(Skeleton(names, [-1, 0, 1, 1, 1], offsets), 31, fps=30.0)
    travel = offsets.expand(31, 5, 3).clone().double()
    travel[:, 1, 0] += _cubic(torch.arange(31, dtype=torch.float64) / 30.0)
    m = still.copy(joint_translations=travel)
    assert body_root(m) == 1
    out = set_summary([m], up_axis=1, height=1.0, floor=0.0)
    assert out["jerk"] == pytest.approx(6.0, rel=1e-6)
    res = compare_sets([m], [m])
    assert res["a"]["jerk_raw"] == pytest.approx(6.0, rel=1e-6)
    assert res["a"]["jerk"] == pytest.approx(6.0 / m.height, rel=1e-6)


def test_a_bandai_walk_has_the_jerk_of_its_body_joints(mocap_files):
    """An audit: a Bandai walk's jerk read 21/22 of its body's (the dummy ``joint_Root`` averaged in)."""
    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:60]
    assert body_root(walk) == 1
    res = compare_sets([walk], [walk])
    assert res["a"]["jerk_raw"] == pytest.approx(jerk(walk.positions()[:, 1:], walk.fps), rel=1e-6)


# --- 3: a set the feature extractor cannot take -------------------------------------------------------------------


def _clip_embed(motions):
    """A feature extractor on the recogniser's path: each motion made a clip at 25 fps
    (:func:`~skelanim.data.clips.clip_from_motion`, a FormatError for a clip under 2 frames there)."""
    from skelanim.data.clips import clip_from_motion

    clips = [clip_from_motion(m, fps=25.0) for m in motions]
    feats = torch.stack([c.positions[:2].reshape(-1)[:8].float() for c in clips for _ in range(3)])
    return feats + 0.01 * torch.arange(feats.shape[0])[:, None], ["walk" for _ in motions]


@pytest.mark.parametrize("case", ["one frame", "three frames at 120 fps"])
def test_a_set_the_feature_extractor_cannot_take_gets_null_features_and_a_note(case):
    """A 1-frame file, or 3 frames at 120 fps (1 frame at the recogniser's 25), raised a FormatError out of
    compare_sets (``skelanim evaluate`` exited 2); the feature metrics are ``None`` with a note instead."""
    walk = skelanim.load(sample_path("walk"))
    short = walk[:1] if case == "one frame" else resample(walk, 120.0)[:3]
    res = compare_sets([walk], [short], embed=_clip_embed, contents_a=["walk"], contents_b=["walk"])
    assert res["fid"] is None and res["b"]["diversity"] is None and res["b"]["recognised"] is None
    assert res["a"]["diversity"] is not None and res["a"]["recognised"] == 1.0
    assert any(n.startswith("set b: no recogniser features (") and "a clip needs at least 2" in n
               for n in res["notes"])  # fmt: skip


def test_evaluate_notes_a_file_too_short_for_the_recogniser(mocap_files, tmp_path, capsys):
    """``skelanim evaluate A ONE --json`` with a valid 1-frame file (or a 3-frame 120-fps clip) in B exited 2 with
    "1 frame(s); a clip needs at least 2"; it reports, with null feature metrics for B and a note."""
    from skelanim.cli import main

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:70]
    for name, motion in (("a", walk), ("one", walk[:1]), ("three120", resample(walk, 120.0)[:3])):
        (tmp_path / name).mkdir()
        skelanim.save(motion, tmp_path / name / "dataset-1_walk_normal_001.bvh")
    for short in ("one", "three120"):
        capsys.readouterr()
        assert main(["evaluate", str(tmp_path / "a"), str(tmp_path / short), "--json"]) == 0, short
        obj = json.loads(capsys.readouterr().out)
        assert obj["fid"] is None and obj["b"]["diversity"] is None and obj["b"]["recognised"] is None
        assert obj["a"]["diversity"] is not None or any("one recogniser window" in n for n in obj["notes"])
        assert any(n.startswith("set b: no recogniser features") and "a clip needs at least 2" in n
                   for n in obj["notes"]), obj["notes"]  # fmt: skip
    # a recogniser asked for by name that cannot read a set is an error (it had exited 0 with null FIDs and a note)
    named = str(Path(skelanim.__file__).parent / "learn" / "pretrained" / "recognize_cnn")
    assert main(["evaluate", str(tmp_path / "a"), str(tmp_path / "one"), "--json", "--recognizer", named]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"error: --recognizer {named}: set b: no recogniser features")


# --- 4: pairs, and the note that says how the sets differ ---------------------------------------------------------


@pytest.mark.parametrize("pairs", [0, -5, 2.5, True])
def test_pairs_must_be_a_whole_number_of_one_or_more(pairs):
    """``pairs=0`` gave ``nan`` without a word, ``pairs=-5`` a bare RuntimeError of torch's."""
    x = np.random.default_rng(0).normal(size=(10, 4))
    for call in (lambda: diversity(x, pairs=pairs), lambda: multimodality(x, [0] * 5 + [1] * 5, pairs=pairs)):
        with pytest.raises(ValueError, match=r"^pairs must be a whole number of 1 or more, got ") as info:
            call()
        assert "\n" not in str(info.value)
    assert diversity(x, pairs=1) > 0 and multimodality(x, [0] * 5 + [1] * 5, pairs=np.int64(3)) > 0


def test_the_note_names_how_the_sets_differ():
    """Sets in other up axes were noted as differing "in skeleton, up axis or height at rest (183.7 against 183.7)";
    the note names the difference, with its values (the heights the metrics take, not the rest pose's extents)."""
    from skelanim.core.units import up_to_y_matrix
    from skelanim.ops import rotate

    walk = skelanim.load(sample_path("walk"))
    z_up = rotate(walk, up_to_y_matrix(2).T)
    notes = compare_sets([walk], [z_up])["notes"]
    assert "the sets differ in up axis (Y in set a, Z in set b): every motion is turned Y up first" in notes
    assert not [n for n in notes if n.startswith("the sets differ in") and "up axis" not in n]  # nothing else
    # two sets that mix the same axes do not differ in them (a review: they were said to)
    assert not [n for n in compare_sets([walk, z_up], [z_up, walk])["notes"] if n.startswith("the sets differ")]
    big = walk.copy(skeleton=Skeleton(walk.skeleton.names, walk.skeleton.parents, walk.skeleton.offsets * 2),
                    root_positions=walk.root_positions * 2)  # fmt: skip
    compared = compare_sets([walk], [big])
    notes, height = compared["notes"], compared["a"]["height"]  # the height the metrics take, not the rest extents
    assert compared["b"]["height"] == pytest.approx(2 * height) and height < 0.99 * walk.skeleton.height()
    want = (f"the sets differ in size (heights {height:.4g} against {2 * height:.4g}, skeletons 2 times as tall at "
            "rest): each is measured against its own height and floor")  # fmt: skip
    assert [n for n in notes if n.startswith("the sets differ in")] == [want]
    legs = _legs_at(lambda t: 0 * t, 31, 30.0)
    notes = compare_sets([walk], [legs])["notes"]
    differ = [n for n in notes if n.startswith("the sets differ in")]
    assert len(differ) == 1 and differ[0].startswith(
        f"the sets differ in skeleton (set b's first motion: 4 joints, not {walk.skeleton.num_joints})"
    )
