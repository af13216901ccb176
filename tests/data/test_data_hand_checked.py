"""Hand-checked values for splits, windows, feature statistics, heading features, labels, the clip cache and the
rig (each against a closed form, numpy or the documented rule, not a recorded output)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import skelanim
import skelanim.data.cache as cache_module
from skelanim.data import LabelError, parse_labels
from skelanim.data.cache import cache_key, write_cached
from skelanim.data.clips import load_clip
from skelanim.data.dataset import feature_stats
from skelanim.data.features import heading_features, local_positions, to_heading_frame, window_path
from skelanim.data.labels import label_parser
from skelanim.data.rig import body_root

F64 = torch.float64


# ------------------------------------------------------------------------------------------- splits
def _members(part) -> set[str]:
    return set(part.names) if part is not None else set()


def _check_partition(ds, parts) -> None:
    train, val, test = (_members(parts[k]) for k in ("train", "val", "test"))
    assert not (train & val) and not (train & test) and not (val & test), (train, val, test)
    assert train | val | test == set(ds.names)


def test_split_by_style_parts_are_disjoint_when_a_style_is_in_test_and_val(few_dataset):
    """A style named in both test and val is tested, not validated too (the parts are a partition)."""
    parts = few_dataset.split_by_style(test=["angry", "normal"], val=["normal"])
    _check_partition(few_dataset, parts)
    styles = dict(zip(few_dataset.names, few_dataset.labels("style"), strict=True))
    assert {styles[n] for n in _members(parts["test"])} == {"angry", "normal"}
    assert _members(parts["val"]) == set()


def test_a_style_spelt_two_ways_is_held_out_whole(mocap_files, bandai_few, tmp_path):
    """Bandai's dataset 1 says ``masculinity``, dataset 2 ``masculine``: testing (or validating) on either had left
    the other's files in training, the same style on both sides of the split."""
    from skelanim.data import MotionDataset

    files = mocap_files(["bandai_namco_1/dataset-1_walk_masculinity_001.bvh",
                         "bandai_namco_2/dataset-2_walk_masculine_001.bvh"])  # fmt: skip
    ds = MotionDataset([*files, bandai_few[0]], fps=25.0, cache=tmp_path)
    for name in ("masculine", "masculinity"):
        for part in ("test", "val"):
            parts = ds.split_by_style(**{part: [name], **({"test": ["angry"]} if part == "val" else {})})
            _check_partition(ds, parts)
            assert _members(parts[part]) == {f.stem for f in files} and _members(parts["train"]) == {bandai_few[0].stem}
    # the command line's split refuses one spelling to test and the other to validate, as it refuses one name
    from skelanim.learn.common import split_dataset

    with pytest.raises(ValueError, match="style masculine, masculinity cannot both test and validate"):
        split_dataset(ds, "style:masculine/masculinity")


@pytest.mark.parametrize(("test_fraction", "val_fraction", "stratify"),
                         [(0.0, 0.5, None), (0.6, 0.0, "content"), (0.6, 0.3, "content"), (0.9, 0.5, None)])  # fmt: skip
def test_split_by_file_is_a_partition_and_every_class_keeps_a_training_file(few_dataset, test_fraction, val_fraction,
                                                                           stratify):  # fmt: skip
    parts = few_dataset.split_by_file(test_fraction=test_fraction, val_fraction=val_fraction, stratify=stratify,
                                      seed=0)  # fmt: skip
    _check_partition(few_dataset, parts)
    keys = few_dataset.labels(stratify) if stratify else [""] * len(few_dataset)
    train = _members(parts["train"])
    for k in set(keys):
        assert any(n in train for n, kk in zip(few_dataset.names, keys, strict=True) if kk == k), k
    # the documented counts: round(n * fraction) per class, capped so one training file is left
    if stratify is None:
        n = len(few_dataset)
        n_test = min(round(n * test_fraction), n - 1)
        n_val = min(round(n * val_fraction), n - 1 - n_test)
        assert (len(_members(parts["test"])), len(_members(parts["val"]))) == (n_test, n_val)


def test_split_by_file_seeds_give_different_memberships(few_dataset):
    """Files are shuffled with the seed: of a few seeds, not all pick the same 3 of 6 test files."""
    tests = {frozenset(_members(few_dataset.split_by_file(test_fraction=0.5, val_fraction=0.0, stratify=None,
                                                          seed=s)["test"])) for s in range(4)}  # fmt: skip
    assert len(tests) > 1


# ------------------------------------------------------------------------------------------- windows, stats
def test_a_clip_of_exactly_t_frames_gives_one_window_without_padding(few_dataset):
    for i in range(len(few_dataset)):
        n = few_dataset.clips[i].num_frames
        assert few_dataset.windows(n, 4, pad_short=False, clips=[i]).tolist() == [[i, 0]]
        assert few_dataset.windows(n + 1, 4, pad_short=False, clips=[i]).tolist() == []


@pytest.mark.parametrize("values", [[0.0, 2.0], [1.0, 4.0, 10.0]])
def test_feature_stats_std_is_the_sample_std(values):
    x = torch.tensor(values, dtype=F64)[:, None]
    mean, std = feature_stats(x, (0,))
    assert float(mean) == pytest.approx(np.mean(values))
    assert float(std) == pytest.approx(np.std(values, ddof=1))


def test_feature_stats_constant_channel_gets_the_floor():
    x = torch.stack([torch.tensor([0.0, 1.0, 3.0, 4.0]), torch.full((4,), 5.0)], dim=1)
    mean, std = feature_stats(x, (0,), min_std=0.25)
    assert std[0, 1].item() == 0.25 and mean[0, 1].item() == 5.0
    assert std[0, 0].item() == pytest.approx(np.std([0.0, 1.0, 3.0, 4.0], ddof=1))
    assert feature_stats(x[:1], (0,), min_std=0.25)[1].tolist() == [[0.25, 0.25]]  # one sample: the floor


# ------------------------------------------------------------------------------------------- heading features
def _still(T: int, M: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.eye(3, dtype=F64).expand(T, M, 3, 3), torch.zeros(T, 3, dtype=F64)


def test_turning_through_pi_gives_the_small_wrapped_rate():
    """yaw 3.0 -> 3.1 -> -3.1 (= 3.1832): steps 0.1 and 2 pi - 6.2 = 0.0832, the last repeated."""
    rot, pelvis = _still(3)
    _, root = to_heading_frame(rot, pelvis, torch.tensor([3.0, 3.1, -3.1], dtype=F64), up=1, floor=0.0, height=1.0)
    step2 = 2 * math.pi - 6.2
    assert torch.allclose(root[:, 2], torch.tensor([0.1, step2, step2], dtype=F64), atol=1e-9)


def test_constant_velocity_last_step_repeats_the_previous_one():
    """Walking 0.1 per frame along +Z facing +Z (yaw 0, up Y: a = Z): every forward step 0.1, the last too."""
    rot, pelvis = _still(5)
    pelvis[:, 2] = torch.arange(5, dtype=F64) * 0.1
    _, root = to_heading_frame(rot, pelvis, torch.zeros(5, dtype=F64), up=1, floor=0.0, height=1.0)
    assert torch.allclose(root[:, 0], torch.full((5,), 0.1, dtype=F64), atol=1e-12)
    assert torch.allclose(root[:, 1], torch.zeros(5, dtype=F64), atol=1e-12)


@pytest.mark.parametrize("T", [20, 4])
def test_window_path_centre_of_an_even_window_is_frame_t_over_2(T):
    """The circle closed form (see test_dataset) with T even: seen from frame c = T // 2."""
    up, (a, b) = 1, (2, 0)
    theta = torch.linspace(-0.8, 1.1, T, dtype=F64)
    r, turn = 0.7, 2.5
    heading = theta + turn
    pelvis = torch.zeros(T, 3, dtype=F64)
    pelvis[:, a] = r * (torch.sin(heading) - math.sin(turn)) + 3.0
    pelvis[:, b] = r * (math.cos(turn) - torch.cos(heading)) - 1.0
    pelvis[:, up] = 0.9
    path = window_path(pelvis, heading, up=up, height=2.0)
    d = theta - theta[T // 2]
    assert torch.allclose(path[:, 0], r * torch.sin(d) / 2.0, atol=1e-12)
    assert torch.allclose(path[:, 1], r * (1 - torch.cos(d)) / 2.0, atol=1e-12)
    assert torch.allclose(path[:, 2], d, atol=1e-12)


def test_local_positions_joint_in_front_of_a_body_facing_x_reads_in_front():
    """up Y: a = Z, b = X; yaw pi/2 faces +X. A joint 1 unit along +X (and 0.5 up) is 1 forward (Z), 0 across."""
    pos = torch.tensor([[[1.0, 0.5, 0.0], [0.0, 0.0, 1.0]]], dtype=F64)
    out = local_positions(pos, torch.zeros(1, 3, dtype=F64), torch.tensor([math.pi / 2], dtype=F64), up=1,
                          height=2.0)  # fmt: skip
    assert torch.allclose(out[0, 0], torch.tensor([0.0, 0.25, 0.5], dtype=F64), atol=1e-12)
    # +Z is then across, on the -b (= -X) side: the inverse heading turn (-pi/2 about Y) takes +Z to -X
    assert torch.allclose(out[0, 1], torch.tensor([-0.5, 0.0, 0.0], dtype=F64), atol=1e-12)


def test_joint_velocities_are_forward_differences():
    rot, pelvis = _still(3)
    pos = torch.zeros(3, 2, 3, dtype=F64)
    pos[:, 1, 1] = torch.tensor([0.0, 0.1, 0.2], dtype=F64)
    vel = heading_features(rot, pelvis, torch.zeros(3, dtype=F64), pos, up=1, floor=0.0, height=1.0)["velocities"]
    assert torch.allclose(vel[:, 1, 1], torch.full((3,), 0.1, dtype=F64), atol=1e-12)
    assert torch.allclose(vel[:, 0], torch.zeros(3, 3, dtype=F64))


# ------------------------------------------------------------------------------------------- labels
def test_custom_label_pattern_matches_from_the_start():
    parse = label_parser(r"(?P<content>walk|run)(?P<take>\d+)")
    assert parse("walk1.bvh") == {"content": "walk", "take": "1"}
    with pytest.raises(LabelError, match="does not match"):
        parse("fast_walk1.bvh")


def test_optional_group_that_does_not_match_leaves_the_key_absent():
    pattern = r"(?P<content>[a-z]+)(?:_(?P<style>[a-z]+))?$"
    assert parse_labels("walk.bvh", pattern=pattern) == {"content": "walk"}
    assert parse_labels("walk_happy.bvh", pattern=pattern) == {"content": "walk", "style": "happy"}


def test_bandai_name_with_trailing_text_is_refused():
    with pytest.raises(LabelError, match="does not match"):
        parse_labels("dataset-1_walk_happy_001_backup.bvh")


# ------------------------------------------------------------------------------------------- cache, clips, rig
def test_cache_key_changes_with_cache_version(tmp_path, monkeypatch):
    f = tmp_path / "a.bvh"
    f.write_text("x")
    before = cache_key(f, fps=25.0)
    monkeypatch.setattr(cache_module, "CACHE_VERSION", cache_module.CACHE_VERSION + 1)
    assert cache_key(f, fps=25.0) != before


def test_cache_entry_with_unequal_frame_counts_is_rebuilt(bandai_few, tmp_path):
    fresh = load_clip(bandai_few[0], fps=25.0, cache=None)
    t = fresh.tensors()
    t["yaw"] = t["yaw"][:-5]
    write_cached(tmp_path, cache_key(bandai_few[0], fps=25.0), t, fresh.meta())
    clip = load_clip(bandai_few[0], fps=25.0, cache=tmp_path)
    assert clip.yaw.shape[0] == clip.quats.shape[0] == fresh.num_frames
    assert torch.equal(clip.yaw, fresh.yaw)


def test_body_root_accepts_a_dummy_root_stored_as_minus_identity(bandai_few):
    m = skelanim.load(bandai_few[0])[:10]
    assert m.skeleton.children(0) == [1]
    for w in (1.0, -1.0):  # q and -q are the same rotation
        rot = m.rotations.clone()
        rot[:, 0] = torch.tensor([w, 0.0, 0.0, 0.0], dtype=rot.dtype)
        m2 = skelanim.Motion(m.skeleton, rot, m.root_positions, m.fps, m.joint_translations, {})
        assert body_root(m2) == 1, w
    rot = m.rotations.clone()
    rot[:, 0] = torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=rot.dtype)  # a constant half turn: still a dummy, turned
    assert body_root(skelanim.Motion(m.skeleton, rot, m.root_positions, m.fps, m.joint_translations, {})) == 1
    rot[5:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=rot.dtype)  # half turned, then not: it moves, the body's
    assert body_root(skelanim.Motion(m.skeleton, rot, m.root_positions, m.fps, m.joint_translations, {})) == 0


def test_a_turned_static_dummy_root_is_still_a_dummy(bandai_few, tmp_path) -> None:
    """Ops that turn a whole motion put the turn on joint 0: Bandai's ``joint_Root`` turned (a face-forward, half a
    degree, a Z-up copy) has a constant rotation other than the identity and is still a dummy, so a dataset of turned
    takes models the same 21 joints from the Hips, its pelvis as high as the raw takes' (it had taken ``joint_Root``,
    on the floor, for the pelvis: height 0 in every frame), and one turned take does not switch a folder's rig."""
    from skelanim import ops
    from skelanim.core.rotations import rotvec_to_matrix
    from skelanim.data import MotionDataset

    raw = [bandai_few[0], bandai_few[5]]  # Bandai-1 and Bandai-2 walks
    walk = skelanim.load(raw[0])
    z_up = ops.rotate(walk, rotvec_to_matrix(torch.tensor([math.pi / 2, 0.0, 0.0], dtype=F64)))
    for turned in (ops.face_forward(walk), ops.rotate_about_up(walk, math.radians(0.5)), z_up):
        assert float((turned.rotations[:, 0, 0].abs() - 1).abs().max()) > 1e-6  # a turn on joint 0 (the old rule: 1e-6)
        assert body_root(turned) == 1
    rot = walk.rotations.clone()
    rot[1:, 0] = torch.tensor([math.cos(0.15), 0.0, math.sin(0.15), 0.0], dtype=rot.dtype)  # turns 0.3 rad after frame 0
    assert body_root(walk.copy(rotations=rot)) == 0  # a joint 0 that moves is the body's
    turned_file = tmp_path / raw[1].name
    skelanim.save(ops.face_forward(skelanim.load(raw[1])), turned_file)
    plain = MotionDataset(raw, fps=25.0, cache=False)
    mixed = MotionDataset([raw[0], turned_file], fps=25.0, cache=False)
    assert plain.rig.root == mixed.rig.root == 1 and mixed.rig.num_joints == plain.rig.num_joints == 21
    up = plain.rig.up
    torch.testing.assert_close(mixed.frames()["pelvis"][:, up], plain.frames()["pelvis"][:, up], atol=1e-3, rtol=0)


def test_a_model_s_rig_refuses_clips_of_another_unit_or_skeleton(bandai_few, mocap_files, tmp_path) -> None:
    """``MotionDataset(files, rig=model.rig)``: the clips must be on the rig's skeleton and of its size (within a
    factor of 2), as they must stand along its up axis. The same Bandai walks in metres had been scored as motion
    a hundred times smaller, a Xia (CMU) clip read joint for joint as Bandai's, both without a word."""
    from skelanim import ops
    from skelanim.data import MotionDataset
    from skelanim.errors import SkeletonError

    own = MotionDataset(bandai_few[:2], fps=25.0, cache=False)
    MotionDataset(bandai_few[:2], fps=25.0, cache=False, rig=own.rig)  # its own clips: taken
    metres = tmp_path / bandai_few[1].name
    skelanim.save(ops.scale(skelanim.load(bandai_few[1]), 0.01), metres)
    with pytest.raises(SkeletonError, match=r"0\.01 times the predictor's size.*--scale 100\b") as err:
        MotionDataset([bandai_few[0], metres], fps=25.0, cache=False, rig=own.rig, rig_owner="the predictor")
    assert err.value.path == str(metres)
    xia = mocap_files(["xia_style/neutral_01_000.bvh"])[0]
    with pytest.raises(SkeletonError, match=r"the rig works on a 22-joint skeleton \(joint_Root, Hips, .*31 joints"):
        MotionDataset([xia], fps=25.0, cache=False, rig=own.rig, label_parser=None)


def test_a_style_or_label_no_clip_has_is_refused(few_dataset) -> None:
    """A misspelt label key had stratified nothing: it is named now, with the keys the clips have; a content-only
    pattern still gives the style ``""`` (a model without styles) and unlabelled clips ``""`` for any key."""
    from skelanim.data import LabelError, MotionDataset

    assert sorted(set(few_dataset.labels("style"))) == ["angry", "elderly", "happy", "normal"]
    parts = few_dataset.split_by_style(test=["angry"], val=["elderly"])
    assert parts["test"] is not None and parts["test"].labels("style") == ["angry"]
    with pytest.raises(LabelError, match=r"no clip has the label 'contnet'; labels here: content, dataset, style, take"):
        few_dataset.labels("contnet")
    with pytest.raises(LabelError, match="'contnet'"):
        few_dataset.split_by_file(stratify="contnet")
    content_only = MotionDataset(clips=[dataclasses.replace(c, labels={"content": c.labels["content"]})
                                        for c in few_dataset.clips[:2]], fps=few_dataset.fps)  # fmt: skip
    assert content_only.labels("style") == ["", ""]  # a content-only pattern: a model without styles
    unlabelled = MotionDataset(clips=[dataclasses.replace(c, labels={}) for c in few_dataset.clips[:2]],
                               fps=few_dataset.fps)  # fmt: skip
    assert unlabelled.labels("content") == ["", ""]
    assert unlabelled.split_by_file(stratify="content")["train"] is not None
