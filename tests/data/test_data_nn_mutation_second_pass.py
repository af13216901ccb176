"""Second-pass mutation audit of ``skelanim.data`` (the nn half is ..._2.py): behaviour no earlier test pinned, each
checked against a hand-built clip with known values, numpy, or a closed form worked out in the comments."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from skelanim.core.skeleton import Skeleton
from skelanim.data.clips import Clip
from skelanim.data.dataset import MotionDataset, feature_stats

F64 = torch.float64


def _skeleton() -> Skeleton:
    """A 3-joint chain: root, a child 1 unit up, a grandchild 1 unit up again."""
    return Skeleton(["root", "mid", "tip"], [-1, 0, 1], [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


def _clip(name: str, frames: int, *, root: int = 0, height: float = 2.0, lift: float = 0.0,
          labels: dict[str, str] | None = None) -> Clip:  # fmt: skip
    """A still clip whose pelvis (joint ``root``) moves 1 unit along X per frame, its joint heights 0, 1, 2 (+ lift)."""
    quats = torch.zeros(frames, 3, 4)
    quats[..., 0] = 1.0
    positions = torch.zeros(frames, 3, 3)
    positions[:, :, 1] = torch.tensor([0.0, 1.0, 2.0]) + lift
    positions[:, :, 0] = torch.arange(frames, dtype=torch.float32)[:, None]
    return Clip(name, f"/nowhere/{name}.bvh", dict(labels or {}), 25.0, _skeleton(), quats, positions,
                torch.zeros(frames), torch.zeros(frames, 0, dtype=torch.bool), [], 1, height, root)  # fmt: skip


# ------------------------------------------------------------------------------------------- normalisation statistics
def test_feature_stats_reduces_over_every_named_dimension():
    """Statistics over windows AND frames (dims (0, 1)) are those of all B*T samples of a channel (numpy, ddof=1),
    kept as (1, 1, C); a reduction over the first named dim alone gives a (1, T, C) mean."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 5, 3)) * np.array([1.0, 10.0, 0.0]) + np.array([2.0, -1.0, 7.0])
    mean, std = feature_stats(torch.tensor(x), (0, 1), min_std=0.5)
    flat = x.reshape(-1, 3)
    assert mean.shape == std.shape == (1, 1, 3)
    np.testing.assert_allclose(mean.numpy().reshape(3), flat.mean(0), rtol=1e-12)
    want_std = np.maximum(flat.std(0, ddof=1), 0.5)  # the constant channel gets the floor
    np.testing.assert_allclose(std.numpy().reshape(3), want_std, rtol=1e-12)
    assert std.reshape(3)[2].item() == 0.5


def test_feature_stats_counts_samples_over_all_named_dimensions():
    """One window of 4 frames, stats over (windows, frames): 4 samples, so the sample std of 1, 2, 4, 7 (numpy,
    ddof=1), not the floor a count of the first dimension alone (1) would give."""
    x = torch.tensor([[[1.0], [2.0], [4.0], [7.0]]], dtype=F64)
    _, std = feature_stats(x, (0, 1), min_std=1e-3)
    assert float(std) == pytest.approx(np.std([1.0, 2.0, 4.0, 7.0], ddof=1), rel=1e-12)


# ------------------------------------------------------------------------------------------- rig and splits
def test_the_rig_keeps_joint_0_unless_every_clip_has_a_dummy_root():
    """The rig has "body root 1 only when every clip's joint 0 is a dummy": one clip without one keeps joint 0."""
    ds = MotionDataset(fps=25.0, clips=[_clip("a", 10, root=1), _clip("b", 10, root=0), _clip("c", 10, root=1)])
    assert ds.rig.root == 0 and ds.rig.num_joints == 3
    # the floor is then the lowest joint of all three (height 0), not of joints 1.. (height 1)
    assert ds.rig.floor == 0.0
    only_dummies = MotionDataset(fps=25.0, clips=[_clip("a", 10, root=1), _clip("c", 10, root=1)])
    assert only_dummies.rig.root == 1 and only_dummies.rig.num_joints == 2 and only_dummies.rig.floor == 1.0


def test_split_by_file_does_not_depend_on_the_order_the_clips_are_given():
    """Files are sorted by name before the seeded shuffle, so the same clips in another order split alike."""
    names = [f"dataset-1_walk_s{i}_00{i}" for i in range(8)]
    clips = [_clip(n, 10, labels={"content": "walk"}) for n in names]
    forward = MotionDataset(fps=25.0, clips=clips).split_by_file(test_fraction=0.25, val_fraction=0.25, seed=5)
    backward = MotionDataset(fps=25.0, clips=clips[::-1]).split_by_file(test_fraction=0.25, val_fraction=0.25, seed=5)
    for part in ("train", "val", "test"):
        assert sorted(forward[part].names) == sorted(backward[part].names), part
    assert [len(forward[p]) for p in ("train", "val", "test")] == [4, 2, 2]  # round(8 * 0.25) = 2 each


def test_one_file_under_two_names_is_kept_under_the_first_name_in_sorted_order(tmp_path):
    """A file and a link to it are one clip, kept "under its first name" in (name, path) order: a/ before b/,
    whichever order the folders are named in."""
    from skelanim.data.dataset import expand_paths

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    real = tmp_path / "a" / "clip.bvh"
    real.write_text("HIERARCHY\n")
    (tmp_path / "b" / "clip.bvh").symlink_to(real)
    for order in ([tmp_path / "b", tmp_path / "a"], [tmp_path / "a", tmp_path / "b"]):
        assert expand_paths(order) == [real]


def test_a_selected_subsets_split_measures_its_own_training_part():
    """select() keeps a measured rig as measured: a split of the subset measures the rig on its training clips
    (median of heights 2 and 4 = 3, floors 0 and 0.5 -> 0.25), not the whole dataset's (median of 2, 4, 10, 10)."""
    clips = [_clip("dataset-1_walk_happy_001", 10, height=2.0, labels={"style": "happy"}),
             _clip("dataset-1_walk_sad_001", 10, height=4.0, lift=0.5, labels={"style": "sad"}),
             _clip("dataset-1_walk_angry_001", 10, height=10.0, labels={"style": "angry"}),
             _clip("dataset-1_run_angry_001", 10, height=10.0, lift=3.0, labels={"style": "angry"})]  # fmt: skip
    ds = MotionDataset(fps=25.0, clips=clips)
    assert ds.rig.height == 7.0  # (4 + 10) / 2
    parts = ds.select(["*walk*"]).split_by_style(test=["angry"])
    assert sorted(parts["train"].names) == ["dataset-1_walk_happy_001", "dataset-1_walk_sad_001"]
    assert parts["train"].rig.height == 3.0 and parts["test"].rig.height == 3.0
    assert parts["train"].rig.floor == 0.25


# ------------------------------------------------------------------------------------------- window path features
def test_window_path_heading_change_is_wrapped_across_pi():
    """Headings 3.0, 3.1, -3.1 (= 3.1832 - 2 pi): seen from the middle frame (c = 3 // 2 = 1) the changes are
    -0.1, 0 and 2 pi - 6.2 = 0.0832 (a small left turn), not -6.2 ("wrapped to [-pi, pi)")."""
    from skelanim.data.features import window_path

    yaw = torch.tensor([3.0, 3.1, -3.1], dtype=F64)
    path = window_path(torch.zeros(3, 3, dtype=F64), yaw, up=1, height=1.0)
    want = torch.tensor([-0.1, 0.0, 2 * math.pi - 6.2], dtype=F64)
    assert torch.allclose(path[:, 2], want, atol=1e-12)
    assert torch.equal(path[:, :2], torch.zeros(3, 2, dtype=F64))  # the pelvis stays at the origin


def test_joint_velocities_are_in_heights_per_frame():
    """A joint rising 0.1 per frame on a rig 2 high: local positions 0, 0.05, 0.1 heights, velocity 0.05 each."""
    from skelanim.data.features import heading_features

    rot = torch.eye(3, dtype=F64).expand(3, 2, 3, 3)
    pos = torch.zeros(3, 2, 3, dtype=F64)
    pos[:, 1, 1] = torch.tensor([0.0, 0.1, 0.2], dtype=F64)
    out = heading_features(rot, torch.zeros(3, 3, dtype=F64), torch.zeros(3, dtype=F64), pos, up=1, floor=0.0,
                           height=2.0)  # fmt: skip
    assert torch.allclose(out["positions"][:, 1, 1], torch.tensor([0.0, 0.05, 0.1], dtype=F64), atol=1e-12)
    assert torch.allclose(out["velocities"][:, 1, 1], torch.full((3,), 0.05, dtype=F64), atol=1e-12)


# ------------------------------------------------------------------------------------------- labels
def test_a_bandai_name_with_an_underscore_inside_a_field_is_refused():
    """Fields are split on "_" (words inside a field use "-"): a content "walk_back" is a fifth field, not a label."""
    from skelanim.data.labels import LabelError, parse_labels

    assert parse_labels("dataset-1_walk-back_happy_001.bvh")["content"] == "walk-back"
    with pytest.raises(LabelError, match="does not match"):
        parse_labels("dataset-1_walk_back_happy_001.bvh")


def test_label_spaces_is_none_when_one_file_does_not_name_its_dataset():
    """It is "None when ... a file does not name its dataset or class": it cannot be told apart for every file."""
    from skelanim.data.labels import label_spaces

    labels = [{"dataset": "1", "content": "bye"}, {"dataset": "2", "content": "wave"}, {"content": "walk"}]
    assert label_spaces(labels) is None
    assert label_spaces(labels[:2]) == {"1": ("bye",), "2": ("wave",)}
    assert label_spaces([*labels[:2], {"dataset": "2", "content": ""}]) is None


def test_a_label_pattern_without_a_named_group_is_refused():
    from skelanim.data.labels import label_parser

    with pytest.raises(ValueError, match="no named group"):
        label_parser(r"[a-z]+_\d+")
    assert label_parser("none") is None


# ------------------------------------------------------------------------------------------- cache key
def test_the_cache_key_covers_the_inode(tmp_path, monkeypatch):
    """The key hashes size, mtime, ctime AND inode: a file replaced by another whose size and times match (a copy
    restored with its times) is another inode, so another key. Only st_ino differs between the two fakes."""
    import pathlib
    from types import SimpleNamespace

    from skelanim.data.cache import cache_key

    f = tmp_path / "a.bvh"
    f.write_text("x")
    keys = []
    for inode in (11, 12):
        fake = SimpleNamespace(st_size=1, st_mtime_ns=5, st_ctime_ns=7, st_ino=inode)
        monkeypatch.setattr(pathlib.Path, "stat", lambda self, *a, fake=fake, **k: fake)
        keys.append(cache_key(f, fps=25.0))
    assert keys[0] != keys[1]
    assert len(keys[0]) == 40 and int(keys[0], 16) >= 0  # 40 hex digits


# ------------------------------------------------------------------------------------------- resampling
def test_a_clip_a_little_off_the_asked_rate_is_resampled(mocap_files):
    """152 frames claimed at 30.2 fps last D = 151 / 30.2 = 5 s exactly: at 30 fps that is round(5 * 30) + 1 = 151
    frames, the last one the source's last (time 5 s). Only rates equal to 1e-6 relative are kept as they are."""
    import skelanim
    from skelanim.data.clips import clip_from_motion

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh"])
    m = skelanim.load(path)[:152]
    off = skelanim.Motion(m.skeleton, m.rotations, m.root_positions, 30.2, m.joint_translations, {})
    clip = clip_from_motion(off, fps=30.0)
    assert clip.num_frames == 151 and clip.fps == 30.0
    full = off.positions().float()
    assert torch.allclose(clip.positions[-1], full[-1], atol=1e-4)
    assert torch.allclose(clip.positions[0], full[0], atol=1e-4)
    assert clip_from_motion(m, fps=30.0).num_frames == 152  # at its own rate: untouched


# ------------------------------------------------------------------------------------------- rig
def _still_motion(parents: list[int]):
    import skelanim

    offsets = [[0.0, 0.0, 0.0]] + [[0.0, 1.0, 0.0]] * (len(parents) - 1)
    sk = Skeleton([f"j{i}" for i in range(len(parents))], parents, offsets)
    rot = torch.zeros(4, len(parents), 4, dtype=F64)
    rot[..., 0] = 1.0
    return skelanim.Motion(sk, rot, torch.zeros(4, 3, dtype=F64), 30.0)


def test_body_root_is_joint_0_when_the_static_root_has_two_children():
    """A dummy root has ONE child: a still joint 0 with two children (a hip between two legs) is the body root."""
    from skelanim.data.rig import body_root

    assert body_root(_still_motion([-1, 0, 1])) == 1
    assert body_root(_still_motion([-1, 0, 0])) == 0


def test_rig_parents_are_renumbered_from_the_body_root():
    """Skeleton parents [-1, 0, 1, 2, 2] with body root 1: model joints 1..4 -> 0..3, parents [-1, 0, 1, 1]."""
    from skelanim.data.rig import Rig

    sk = _still_motion([-1, 0, 1, 2, 2]).skeleton
    rig = Rig(sk, 1, 1, 2.0, 0.0)
    assert rig.parents == [-1, 0, 1, 1] and rig.num_joints == 4
    assert Rig(sk, 0, 1, 2.0, 0.0).parents == [-1, 0, 1, 2, 2]


def test_rig_size_factor_is_rig_over_skeleton_with_a_tolerance():
    """Documented: "the same joints in metres instead of centimetres give 100": rig height / skeleton height; within 1e-3 it
    is exactly 1."""
    from skelanim.data.rig import Rig

    sk = _still_motion([-1, 0, 1, 2]).skeleton
    rig = Rig(sk, 0, 1, 3.0, 0.0)
    assert rig.size_factor(sk.scaled(0.01)) == pytest.approx(100.0, rel=1e-12)
    assert rig.size_factor(sk.scaled(2.0)) == pytest.approx(0.5, rel=1e-12)
    assert rig.size_factor(sk.scaled(1.0005)) == 1.0
    assert rig.size_factor(sk.scaled(1.002)) == pytest.approx(1 / 1.002, rel=1e-12)


# ------------------------------------------------------------------------------------------- files and selection
def test_files_of_several_folders_are_sorted_by_file_name_not_by_folder(tmp_path):
    """Files are "sorted by name": b/a.bvh comes before a/z.bvh (a path sort would put a/ first)."""
    from skelanim.data.dataset import expand_paths

    for rel in ("a/z.bvh", "b/a.bvh", "a/m.bvh"):
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text("HIERARCHY\n")
    got = expand_paths([tmp_path / "a", tmp_path / "b"])
    assert got == [tmp_path / "b" / "a.bvh", tmp_path / "a" / "m.bvh", tmp_path / "a" / "z.bvh"]


def test_select_matches_a_pattern_against_the_clip_name_without_its_suffix():
    """A pattern ending in the take ("*_001") matches the clip name (file stem), though not "x_001.bvh"."""
    clips = [_clip(n, 10) for n in ("dataset-1_walk_happy_001", "dataset-1_walk_happy_002", "dataset-1_run_sad_001")]
    ds = MotionDataset(fps=25.0, clips=clips)
    assert ds.select(["*_001"]).names == ["dataset-1_walk_happy_001", "dataset-1_run_sad_001"]
    assert ds.select(["*_001"], invert=True).names == ["dataset-1_walk_happy_002"]
    assert ds.select(["*_002.bvh"]).names == ["dataset-1_walk_happy_002"]  # the file name too


# ------------------------------------------------------------------------------------------- windows, frames
def test_window_starts_step_by_the_stride_and_the_last_is_aligned_to_the_clip_end():
    """Clips of 30, 31, 10 and 5 frames, T = 10, stride 4: starts range(0, F - T + 1, 4) plus F - T when missing:
    30 -> 0, 4, ..., 20 (20 = 30 - 10, already there); 31 -> 0, 4, ..., 20 and 21; 10 -> 0; 5 -> one padded 0."""
    clips = [_clip("a", 30), _clip("b", 31), _clip("c", 10), _clip("d", 5)]
    contacts = torch.tensor([[True, False], [False, True]]).repeat(15, 1)
    clips[0].contacts, clips[0].feet = contacts, [1, 2]
    for c in clips[1:]:
        c.contacts, c.feet = torch.zeros(c.num_frames, 2, dtype=torch.bool), [1, 2]
    ds = MotionDataset(fps=25.0, clips=clips)
    want = [(0, s) for s in range(0, 21, 4)] + [(1, s) for s in [0, 4, 8, 12, 16, 20, 21]] + [(2, 0), (3, 0)]
    assert [tuple(w) for w in ds.windows(10, 4).tolist()] == want
    assert [tuple(w) for w in ds.windows(10, 4, pad_short=False).tolist()] == want[:-1]
    # contacts are read as float 0/1, frame by frame: window (0, 4) starts on an even frame, (1, 21) reads b's last 10
    got = ds.gather(torch.tensor([[0, 4], [1, 21]]), 10, keys=("contacts", "pelvis"))
    assert got["contacts"].dtype == torch.float32
    assert torch.equal(got["contacts"][0], contacts[4:14].float())
    assert got["pelvis"][1, :, 0].tolist() == [float(f) for f in range(21, 31)]  # pelvis x = frame index


# ------------------------------------------------------------------------------------------- rig storage
def test_rig_offsets_are_in_heights_and_the_rig_survives_its_dict():
    """Rig.offsets = rest offsets from the body root on / height (float32); to_dict -> from_dict keeps every field."""
    from skelanim.data.rig import Rig

    sk = _still_motion([-1, 0, 1, 2]).skeleton
    rig = Rig(sk, 1, 1, 4.0, 0.5, [1, 2])
    assert rig.offsets.dtype == torch.float32
    assert rig.offsets.tolist() == [[0.0, 0.25, 0.0]] * 3  # offsets (0, 1, 0) of joints 1..3, over 4
    back = Rig.from_dict(rig.to_dict())
    assert (back.root, back.up, back.height, back.floor, back.feet) == (1, 1, 4.0, 0.5, [1, 2])
    assert back.skeleton.names == sk.names and torch.equal(back.skeleton.offsets, sk.offsets)


# ------------------------------------------------------------------------------------------- cache round trip
def test_a_clip_read_from_the_cache_equals_the_parsed_one_dtypes_included(mocap_files, tmp_path):
    """The second load is a cache hit: every array equal to the parsed clip's with its dtype (contacts bool, as the
    Clip documents, though stored as uint8), and every scalar the same."""
    from skelanim.data.clips import load_clip

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_happy_001.bvh"])
    fresh = load_clip(path, fps=20.0, cache=tmp_path)
    assert len(list((tmp_path / "clips").glob("*.safetensors"))) == 1
    hit = load_clip(path, fps=20.0, cache=tmp_path)
    for name in ("quats", "positions", "yaw", "contacts"):
        a, b = getattr(fresh, name), getattr(hit, name)
        assert a.dtype == b.dtype and torch.equal(a, b), name
    assert hit.contacts.dtype == torch.bool
    for name in ("fps", "up", "height", "root", "feet", "name", "path"):
        assert getattr(hit, name) == getattr(fresh, name), name
    assert hit.labels == fresh.labels == {"dataset": "1", "content": "walk", "style": "happy", "take": "001"}


def test_heading_features_give_the_root_rotation_without_its_heading():
    """rot6d holds rot_c[t, 0] = R_yaw^T rot[t, 0]: a root turned by a pure yaw of pi/2 about Y (the matrix written
    out: Z -> X) with that heading reads as the identity, like an unturned root with heading 0."""
    from skelanim.core.rotations import matrix_to_rot6d
    from skelanim.data.features import heading_features

    turned = torch.tensor([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]], dtype=F64)
    rot = torch.eye(3, dtype=F64).repeat(2, 2, 1, 1)
    rot[:, 0] = turned
    out = heading_features(rot, torch.zeros(2, 3, dtype=F64), torch.full((2,), math.pi / 2, dtype=F64),
                           torch.zeros(2, 2, 3, dtype=F64), up=1, floor=0.0, height=1.0)  # fmt: skip
    identity6 = matrix_to_rot6d(torch.eye(3, dtype=F64))
    assert torch.allclose(out["rot6d"][:, 0], identity6.expand(2, 6), atol=1e-12)
    assert not torch.allclose(matrix_to_rot6d(turned), identity6)  # the world rotation reads otherwise


def test_a_one_frame_window_has_zero_steps_and_its_height():
    """One frame has no step to take: root = [0, 0, 0, (y - floor) / height] = [0, 0, 0, (1.3 - 0.1) / 2 = 0.6]."""
    from skelanim.data.features import heading_features

    pelvis = torch.tensor([[0.4, 1.3, -2.0]], dtype=F64)
    out = heading_features(torch.eye(3, dtype=F64).expand(1, 2, 3, 3), pelvis, torch.tensor([0.7], dtype=F64),
                           torch.zeros(1, 2, 3, dtype=F64), up=1, floor=0.1, height=2.0)  # fmt: skip
    assert torch.allclose(out["root"], torch.tensor([[0.0, 0.0, 0.0, 0.6]], dtype=F64), atol=1e-12)
    assert torch.equal(out["velocities"], torch.zeros(1, 2, 3, dtype=F64))
