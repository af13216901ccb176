"""Labels, features and their inverses, the clip cache, windows, splits and the rig."""

from __future__ import annotations

import json
import math
import os
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.rotations import rotvec_to_matrix
from skelanim.data import LabelError, MotionDataset, Vocabulary, parse_labels
from skelanim.data.cache import cache_dir, check_outside
from skelanim.data.features import (
    from_heading_frame,
    from_reference_frame,
    heading_features,
    horizontal_axes,
    to_heading_frame,
    to_reference_frame,
    window_path,
    yaw_from_directions,
    yaw_matrix,
)  # fmt: skip


# ------------------------------------------------------------------------------------------- labels
def test_parse_bandai_labels():
    assert parse_labels("x/dataset-1_walk-back_not-confident_001.bvh") == {
        "dataset": "1", "content": "walk-back", "style": "not-confident", "take": "001"}  # fmt: skip
    assert parse_labels("dataset-2_raise-up-left-hand_elderly_001.bvh")["content"] == "raise-up-left-hand"
    with pytest.raises(LabelError, match="does not match"):
        parse_labels("walk.bvh")
    assert parse_labels("a-b.bvh", pattern=r"(?P<content>\w)-(?P<style>\w)") == {"content": "a", "style": "b"}
    from skelanim.data.labels import known_labels  # the datasets' names, then the ones skelanim generate writes

    assert known_labels("dataset-1_walk_happy_001.bvh")["dataset"] == "1"
    assert known_labels("out/walk-back_happy_03.bvh") == {"content": "walk-back", "style": "happy", "take": "03"}
    assert known_labels("neutral walk.bvh") == {}


def test_vocabulary():
    v = Vocabulary.build("content", ["walk", "bow", "walk"])
    assert v.names == ("bow", "walk") and v.index("walk") == 1 and len(v) == 2
    with pytest.raises(LabelError, match="unknown content 'run'"):
        v.index("run")


# ------------------------------------------------------------------------------------------- features
def _random_window(b: int = 3, t: int = 12, m: int = 4, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    rot = rotvec_to_matrix(0.5 * torch.randn(b, t, m, 3, generator=g, dtype=torch.float64))
    pelvis = torch.randn(b, t, 3, generator=g, dtype=torch.float64) * 10
    yaw = torch.cumsum(0.3 * torch.randn(b, t, generator=g, dtype=torch.float64), -1)
    return rot, pelvis, yaw


@pytest.mark.parametrize("up", [0, 1, 2])
def test_yaw_of_a_rotated_reference_direction(up):
    yaw = torch.tensor([0.0, 0.4, -2.0, 3.0], dtype=torch.float64)
    ref = torch.zeros(3, dtype=torch.float64)
    ref[(up + 1) % 3] = 1.0
    directions = yaw_matrix(yaw, up) @ ref
    assert torch.allclose(yaw_from_directions(directions, up), yaw, atol=1e-12)


@pytest.mark.parametrize("up", [1, 2])
def test_heading_frame_round_trip_is_exact(up):
    rot, pelvis, yaw = _random_window()
    rot_c, root = to_heading_frame(rot, pelvis, yaw, up=up, floor=-1.0, height=2.0)
    assert root.shape == (3, 12, 4)
    back_rot, back_pelvis, back_yaw = from_heading_frame(rot_c, root, up=up, floor=-1.0, height=2.0, yaw0=yaw[:, 0],
                                                         start=pelvis[:, 0])  # fmt: skip
    assert torch.allclose(back_rot, rot, atol=1e-10)
    assert torch.allclose(back_pelvis, pelvis, atol=1e-9)
    assert torch.allclose(
        torch.remainder(back_yaw - yaw + math.pi, 2 * math.pi), torch.full_like(yaw, math.pi), atol=1e-9
    )


def test_heading_frame_is_invariant_to_a_global_turn():
    rot, pelvis, yaw = _random_window()
    turn = yaw_matrix(torch.tensor(1.1, dtype=torch.float64), 1)
    a = to_heading_frame(rot, pelvis, yaw, up=1, floor=0.0, height=1.0)
    rot2 = rot.clone()
    rot2[..., 0, :, :] = turn @ rot[..., 0, :, :]
    b = to_heading_frame(rot2, pelvis @ turn.T, yaw + 1.1, up=1, floor=0.0, height=1.0)
    assert torch.allclose(a[0], b[0], atol=1e-10) and torch.allclose(a[1], b[1], atol=1e-9)


def test_reference_frame_round_trip():
    rot, pelvis, yaw = _random_window()
    rot_r, pel_r = to_reference_frame(rot, pelvis, yaw, 5, up=1, floor=0.5, height=3.0)
    assert torch.allclose(pel_r[:, 5, [0, 2]], torch.zeros(3, 2, dtype=torch.float64), atol=1e-12)
    back_rot, back_pel = from_reference_frame(rot_r, pel_r, yaw[:, 5], pelvis[:, 5], up=1, floor=0.5, height=3.0)
    assert torch.allclose(back_rot, rot, atol=1e-10) and torch.allclose(back_pel, pelvis, atol=1e-9)


@pytest.mark.parametrize("up", [1, 2])
def test_window_path_of_a_walk_on_a_circle_is_the_chord_in_the_middle_frame(up):
    """Walking forward on a circle of radius r while facing along it: seen from the middle frame, the pelvis is
    at r (sin d, 1 - cos d) after a heading change d (closed form), with a global turn and shift not mattering."""
    a, b = horizontal_axes(up)
    theta = torch.linspace(-0.8, 1.1, 21, dtype=torch.float64)  # middle frame: theta[10]
    r, turn = 0.7, 2.5
    pelvis = torch.zeros(21, 3, dtype=torch.float64)
    heading = theta + turn
    pelvis[:, a] = r * (torch.sin(heading) - math.sin(turn)) + 3.0
    pelvis[:, b] = r * (math.cos(turn) - torch.cos(heading)) - 1.0
    pelvis[:, up] = 0.9
    path = window_path(pelvis, heading, up=up, height=2.0)
    d = theta - theta[10]
    assert torch.allclose(path[:, 0], r * torch.sin(d) / 2.0, atol=1e-12)
    assert torch.allclose(path[:, 1], r * (1 - torch.cos(d)) / 2.0, atol=1e-12)
    assert torch.allclose(path[:, 2], d, atol=1e-12)


def test_heading_features_shapes():
    rot, pelvis, yaw = _random_window()
    f = heading_features(rot, pelvis, yaw, torch.randn(3, 12, 4, 3, dtype=torch.float64), up=1, floor=0.0, height=1.0)
    assert {k: tuple(v.shape) for k, v in f.items()} == {
        "rot6d": (3, 12, 4, 6), "root": (3, 12, 4), "positions": (3, 12, 4, 3), "velocities": (3, 12, 4, 3)}  # fmt: skip


# ------------------------------------------------------------------------------------------- cache
def test_cache_dir_env_and_outside_check(tmp_path, monkeypatch):
    monkeypatch.setenv("SKELANIM_CACHE", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.bvh").write_text("")
    with pytest.raises(ValueError, match="inside the data folder"):
        check_outside(data / "cache", [data / "a.bvh"])
    check_outside(tmp_path / "elsewhere", [data / "a.bvh"])
    # the entries go to <cache>/clips: a data folder named clips under the cache folder is where they would land
    (tmp_path / "clips").mkdir()
    (tmp_path / "clips" / "b.bvh").write_text("")
    with pytest.raises(ValueError, match="inside the data folder"):
        check_outside(tmp_path, [tmp_path / "clips" / "b.bvh"])


def test_a_damaged_cache_entry_is_parsed_anew_and_a_hit_keeps_this_files_name(bandai_few, tmp_path):
    """An entry whose numbers were overwritten (NaN, its header intact) trained to NaN losses without a word: it is
    now read as a miss, parsed again and rewritten. A file reached by another name (a link) hits the same entry
    but keeps its own name and path (the first reader's were returned)."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    fresh = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    (entry,) = (tmp_path / "clips").glob("*.safetensors")
    with safe_open(str(entry), framework="pt") as handle:
        meta = handle.metadata()
    tensors = load_file(str(entry))
    tensors["positions"][3] = float("nan")
    save_file(tensors, str(entry), metadata=meta)
    again = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    assert torch.equal(again.positions, fresh.positions)
    assert bool(torch.isfinite(load_file(str(entry))["positions"]).all())  # rewritten
    link = tmp_path / "links" / "dataset-1_walk_sad_009.bvh"
    link.parent.mkdir()
    link.symlink_to(bandai_few[0].resolve())
    linked = MotionDataset([link], fps=25.0, cache=tmp_path).clips[0]
    assert (linked.name, linked.path, linked.labels["style"]) == ("dataset-1_walk_sad_009", str(link), "sad")


def test_an_entry_changed_after_writing_is_rebuilt(bandai_few, tmp_path):
    """An audit: an entry whose positions were changed but stayed finite (bits flipped, header intact) was served."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    fresh = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    (entry,) = (tmp_path / "clips").glob("*.safetensors")
    with safe_open(str(entry), framework="pt") as handle:
        meta = handle.metadata()
    tensors = load_file(str(entry))
    tensors["positions"] *= 0.5
    save_file(tensors, str(entry), metadata=meta)
    again = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    assert torch.equal(again.positions, fresh.positions)
    assert torch.equal(load_file(str(entry))["positions"], fresh.positions)  # rewritten


def test_a_shared_temporary_cache_folder_is_not_trusted(tmp_path, monkeypatch):
    """An audit: ``<tmp>/skelanim-cache`` had one name for every user, so whoever made it first could plant entries
    under another user's (predictable) keys. The folder is now the user's own; one others may write to is not used."""
    import skelanim.data.cache as cache_module
    from skelanim.data.cache import temporary_cache

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    at_exit: list = []
    monkeypatch.setattr(cache_module.atexit, "register", lambda f, *a, **k: at_exit.append((f, a, k)))
    own = temporary_cache()
    assert own == tmp_path / f"skelanim-cache-{os.getuid()}" and (own.stat().st_mode & 0o777) == 0o700
    own.chmod(0o777)
    monkeypatch.setattr(cache_module, "_PRIVATE", {})
    with pytest.warns(UserWarning, match=r"is not this user's own \(or others may write to it\), so it is not used"):
        fresh = temporary_cache()
    assert fresh != own and fresh.parent == tmp_path and (fresh.stat().st_mode & 0o777) == 0o700
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a review: every call had made (and warned about) another folder
        assert temporary_cache() == fresh
    ((func, args, kwargs),) = at_exit  # what the process does when it ends: the fresh folder goes (they piled up)
    func(*args, **kwargs)
    assert not fresh.exists()
    if os.getuid() == 0:  # root can give the folder to another user
        own.chmod(0o700)
        os.chown(own, 65534, 65534)
        monkeypatch.setattr(cache_module, "_PRIVATE", {})
        with pytest.warns(UserWarning, match="is not this user's own"):
            assert temporary_cache() != own


def test_hidden_files_of_a_folder_are_left_out(bandai_few, tmp_path):
    """An audit: a write killed outright leaves its hidden temporary file (``.walk.tmp-x.bvh``, empty or partial)
    beside the output; listing the folder had taken it as a motion, and every later command failed on it."""
    import shutil

    from skelanim.data.dataset import expand_paths

    shutil.copy(bandai_few[0], tmp_path / "walk.bvh")
    (tmp_path / ".walk.tmp-k2j4.bvh").write_text("")
    assert [f.name for f in expand_paths([tmp_path])] == ["walk.bvh"]
    assert [f.name for f in expand_paths([tmp_path / "*.bvh"])] == ["walk.bvh"]  # as a pattern (and a shell) reads it
    assert [f.name for f in expand_paths([tmp_path / ".walk.tmp-k2j4.bvh"])] == [".walk.tmp-k2j4.bvh"]  # named: kept


def test_one_file_named_twice_is_one_clip(bandai_few, tmp_path):
    """A folder and a pattern through another spelling of it (a link) that name the same files: one clip each
    (they were two, and a file split could put the copies on both sides)."""
    from skelanim.data.dataset import expand_paths

    folder = bandai_few[0].parent
    (tmp_path / "same").symlink_to(folder)  # another spelling of the folder
    both = expand_paths([folder, str(tmp_path / "same" / "dataset-1_walk_*")])
    assert len(both) == len({f.resolve() for f in both}) == len(expand_paths([folder]))


def test_second_load_comes_from_the_cache(bandai_few, tmp_path, monkeypatch):
    first = MotionDataset(bandai_few[:2], fps=25.0, cache=tmp_path)
    assert len(list((tmp_path / "clips").glob("*.safetensors"))) == 2

    def refuse(*args, **kwargs):
        raise AssertionError("BVH parsed again although cached")

    monkeypatch.setattr(skelanim, "load", refuse)
    second = MotionDataset(bandai_few[:2], fps=25.0, cache=tmp_path)
    assert torch.equal(first.clips[0].quats, second.clips[0].quats)
    assert {c.name: c.labels["style"] for c in second.clips} == {"dataset-1_walk_happy_001": "happy",
                                                                 "dataset-1_walk_angry_001": "angry"}  # fmt: skip
    with pytest.raises(AssertionError):  # a different fps is another cache entry
        MotionDataset(bandai_few[:1], fps=20.0, cache=tmp_path)


# ------------------------------------------------------------------------------------------- dataset
def test_clips_are_resampled_and_the_rig_is_measured(few_dataset):
    ds = few_dataset
    assert ds.fps == 25.0 and len(ds) == 6
    walk = ds.clips[[c.name for c in ds.clips].index("dataset-1_walk_happy_001")]
    source = skelanim.load(walk.path)
    assert walk.num_frames == round(source.duration * 25) + 1
    rig = ds.rig
    assert rig.root == 1 and rig.up == 1 and rig.num_joints == 21  # Bandai joint_Root is a static dummy
    assert 120 < rig.height < 160 and 0 < rig.floor < 10  # cm; the toes rest ~4 cm above y = 0
    assert [rig.names[f] for f in rig.feet] == ["Foot_L", "Foot_R", "Toes_L", "Toes_R"]


def test_rig_motion_reproduces_the_clip(few_dataset):
    ds = few_dataset
    fr = ds.frames()
    n = int(fr["length"][0])
    motion = ds.rig.to_motion(fr["rot"][:n], fr["pelvis"][:n], ds.fps)
    pos = motion.positions()[:, ds.rig.root :].float()
    assert (pos - fr["positions"][:n]).norm(dim=-1).max() < 1e-2  # cm: FK on rest offsets = the file's own FK


def test_rig_motion_keeps_a_dummy_root_in_place_and_moves_the_body_root(few_dataset):
    """Bandai's static ``joint_Root`` stays at its offset and ``Hips`` travels by its own position channels, as
    in the files (before, the dummy was moved so that Hips' rest offset, 4.5 m in some files, reached the pelvis)."""
    ds = few_dataset
    fr = ds.frames()
    n = int(fr["length"][0])
    rig = ds.rig
    motion = rig.to_motion(fr["rot"][:n], fr["pelvis"][:n], ds.fps)
    assert torch.equal(motion.root_positions, rig.skeleton.offsets[0].expand(n, 3))
    assert motion.joint_translations is not None
    pos = motion.positions()
    assert float((pos[:, 1] - fr["pelvis"][:n].double()).norm(dim=-1).max()) < 1e-4  # cm
    source = skelanim.load(ds.clips[1].path)  # another file's skeleton and its last frame's dummy placement
    on_source = rig.to_motion(fr["rot"][:n], fr["pelvis"][:n], ds.fps, like=source)
    assert on_source.skeleton is source.skeleton
    assert torch.equal(on_source.root_positions, source.root_positions[-1].expand(n, 3))
    assert float((on_source.positions()[:, 1] - pos[:, 1]).norm(dim=-1).max()) < 1e-4
    stick = skelanim.Skeleton(["a", "b"], np.array([-1, 0]), torch.tensor([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    with pytest.raises(skelanim.errors.SkeletonError, match="22-joint rig's motion on a 2-joint skeleton"):
        rig.to_motion(fr["rot"][:n], fr["pelvis"][:n], ds.fps, like=skelanim.Motion.rest(stick))


def test_windows_and_gather(few_dataset):
    ds = few_dataset
    win = ds.windows(32, 8)
    lengths = ds.lengths
    for clip, start in win.tolist():
        assert start == 0 or start + 32 <= lengths[clip]
    short = [i for i, c in enumerate(ds.clips) if c.num_frames < 32]
    assert short and all((win[:, 0] == i).sum() == 1 for i in short)  # short clips: one padded window
    assert not any(int(c) in short for c in ds.windows(32, 8, pad_short=False)[:, 0])
    for i in range(len(ds)):  # the last window ends at the clip's end
        starts = win[win[:, 0] == i, 1]
        assert int(starts.max()) == max(0, int(lengths[i]) - 32)
    g = ds.gather(win[:5], 32)
    assert g["rot"].shape == (5, 32, 21, 3, 3) and g["pelvis"].shape == (5, 32, 3) and g["contacts"].shape == (5, 32, 4)
    i = short[0]
    pad = ds.gather(win[win[:, 0] == i], 32)["pelvis"][0]
    assert torch.equal(pad[-1], pad[lengths[i] - 1])  # held at the clip's last frame


def test_gather_longer_than_placed_stays_inside_the_clip(few_dataset):
    """A window read longer than it was placed (speed augmentation, speed votes) ends at its clip's end, with
    every frame a distinct frame of the clip, instead of holding the last pose for the frames past the end."""
    ds = few_dataset
    fr = ds.frames()
    i = max(range(len(ds)), key=lambda c: int(ds.lengths[c]))
    n = int(ds.lengths[i])
    last = torch.tensor([[i, n - 32]])  # the clip's last 32-frame window, read as 40 frames
    pelvis = ds.gather(last, 40, keys=("pelvis",))["pelvis"][0]
    offset = int(fr["offset"][i])
    assert torch.equal(pelvis, fr["pelvis"][offset + n - 40 : offset + n])
    inside = torch.tensor([[i, 3]])  # a window with room to run on is read from where it was placed
    assert torch.equal(ds.gather(inside, 40, keys=("pelvis",))["pelvis"][0], fr["pelvis"][offset + 3 : offset + 43])


def test_splits(few_dataset):
    ds = few_dataset
    parts = ds.split_by_style(test=["angry", "elderly"], val=["normal"])
    assert sorted(parts["test"].labels("style")) == ["angry", "elderly"]
    assert set(parts["val"].labels("style")) == {"normal"}
    assert set(parts["train"].labels("style")) == {"happy"}
    by_file = ds.split_by_file(test_fraction=0.5, val_fraction=0.0, seed=3)
    names = sorted(by_file["train"].names + by_file["test"].names)
    assert names == sorted(ds.names) and by_file["val"] is None
    assert set(by_file["train"].labels("content")) == set(ds.labels("content"))  # every class keeps training files
    assert ds.select(["*walk*"]).labels("content") == ["walk"] * 3
    assert ds.split_by_file(test_fraction=0.5, seed=3)["test"].names == by_file["test"].names  # seeded


def test_missing_files_raise(tmp_path):
    with pytest.raises(FileNotFoundError):
        MotionDataset([tmp_path / "nothing*.bvh"], cache=False)
    with pytest.raises(FileNotFoundError):
        MotionDataset([tmp_path], cache=False)


def test_data_in_the_home_folder_caches_in_the_temp_folder(bandai_few, tmp_path, monkeypatch, capsys):
    """Files kept in the home folder put the default cache, ``~/.cache/skelanim``, inside their folder: every
    learning command stopped with a traceback. The default cache now gives way to ``<tmp>/skelanim-cache-<uid>``; a
    cache chosen inside the data is still refused, in one line at the command line."""
    import shutil

    from skelanim.cli import main
    from skelanim.data.cache import cache_outside

    home = tmp_path / "home"
    home.mkdir()
    files = [Path(shutil.copy(f, home)) for f in bandai_few[:2]]
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SKELANIM_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    own = tmp_path / "tmp" / f"skelanim-cache-{os.getuid()}"
    assert cache_outside(files) == own and (own.stat().st_mode & 0o777) == 0o700
    ds = MotionDataset(files)
    assert len(ds) == 2 and any((own / "clips").iterdir())
    monkeypatch.setenv("SKELANIM_CACHE", str(home / "mine"))
    args = ["learn", "predict", "eval", "--data", str(files[0]), "--split", "none"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "inside the data folder" in err[0] and "SKELANIM_CACHE" in err[0]


def test_a_folders_label_and_notes_files_are_not_read_as_deepmimic_clips(mocap_dir, tmp_path, capsys):
    """Bandai-Namco's folders hold ``content_label.txt`` beside the clips: ``skelanim recognize FOLDER`` and
    ``skelanim evaluate`` read every ``.txt`` as a DeepMimic clip and stopped on it ("invalid JSON"); a ``.txt``
    in a folder is now a clip only where it holds JSON, and one named on its own is still read (and refused)."""
    import shutil

    from skelanim.cli import main
    from skelanim.data.dataset import expand_paths

    folder = tmp_path / "clips"
    folder.mkdir()
    for name in ("dataset-1_walk_normal_001.bvh", "content_label.txt"):
        shutil.copy(mocap_dir / "bandai_namco_1" / name, folder / name)
    shutil.copy(mocap_dir / "deepmimic" / "humanoid3d_walk.txt", folder / "dm_walk.txt")
    (folder / "notes.txt").write_text("takes of 2026-12-05\n")
    found = [p.name for p in expand_paths([folder], suffixes=(".bvh", ".txt"))]
    assert found == ["dataset-1_walk_normal_001.bvh", "dm_walk.txt"]
    assert [p.name for p in expand_paths([folder / "notes.txt"], suffixes=(".txt",))] == ["notes.txt"]
    (folder / "dm_walk.txt").unlink()
    assert main(["recognize", str(folder), "--json"]) == 0
    assert '"content": "walk"' in capsys.readouterr().out
    assert main(["recognize", str(folder / "content_label.txt")]) == 2  # named: read, and refused in one line
    assert "content_label.txt" in capsys.readouterr().err


def test_an_upside_down_source_gets_the_contacts_of_the_upright_one(mocap_files):
    """Clips were given the unsigned up axis: a Y-down capture (camera-space poses) had no foot contact at all
    (0.0 against 0.433 upright, an audit's measure). Now the clip's contacts are the upright one's."""
    from skelanim.data.clips import clip_from_motion
    from skelanim.ops import rotate

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    upright = skelanim.load(path)[:120]
    down = rotate(upright, [0.0, 1.0, 0.0, 0.0])  # a half turn about X: Y down, facing turned
    assert down.up_direction() == (1, -1.0)
    a, b = clip_from_motion(upright, fps=30), clip_from_motion(down, fps=30)
    assert 0.2 < float(a.contacts.float().mean()) < 0.8
    assert torch.equal(a.contacts, b.contacts)


def test_the_cache_serves_no_stale_or_malformed_entry_and_works_around_an_unwritable_folder(bandai_few, tmp_path,
                                                                                           monkeypatch):  # fmt: skip
    """A data audit: a file edited with its size and modification time kept (cp -p, rsync -t) was served from the
    stale entry; an entry without a tensor was a bare KeyError, one whose arrays disagree in frames was accepted;
    a cache folder that cannot be written stopped the whole load."""
    import os
    import re
    import shutil

    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from skelanim.data import cache as cache_module
    from skelanim.errors import TrainingDataError

    copy = tmp_path / "data" / bandai_few[0].name
    copy.parent.mkdir()
    shutil.copy(bandai_few[0], copy)
    cache = tmp_path / "cache"
    first = MotionDataset([copy], fps=25.0, cache=cache).clips[0]
    st = copy.stat()
    head, motion = copy.read_bytes().split(b"MOTION", 1)
    copy.write_bytes(head + b"MOTION" + re.sub(rb"(\d)\.(\d)", rb"\1.7", motion, count=200))  # same size
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert copy.stat().st_size == st.st_size and copy.stat().st_mtime_ns == st.st_mtime_ns
    served = MotionDataset([copy], fps=25.0, cache=cache).clips[0]
    fresh = MotionDataset([copy], fps=25.0, cache=None).clips[0]
    assert torch.equal(served.positions, fresh.positions) and not torch.equal(served.positions, first.positions)

    for broken in ("without yaw", "misaligned"):  # each read as a miss: parsed anew and rewritten
        entry = cache / "clips" / f"{cache_module.cache_key(copy, fps=25.0)}.safetensors"  # the file as it is now
        with safe_open(str(entry), framework="pt") as handle:
            meta = handle.metadata()
        tensors = load_file(str(entry))
        if broken == "without yaw":
            del tensors["yaw"]
        else:
            tensors["positions"] = tensors["positions"][:5].clone()
        save_file(tensors, str(entry), metadata=meta)
        again = MotionDataset([copy], fps=25.0, cache=cache).clips[0]
        assert torch.equal(again.positions, fresh.positions) and torch.equal(again.yaw, fresh.yaw)

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("skelanim.data.clips.write_cached", refuse)
    with pytest.warns(UserWarning, match="cannot be written .*: clips are read without it; SKELANIM_CACHE"):
        loaded = MotionDataset([bandai_few[1]], fps=25.0, cache=tmp_path / "other").clips[0]
    assert loaded.num_frames > 2
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(TrainingDataError, match="cannot create the clip cache folder .*SKELANIM_CACHE"):
        cache_module.cache_dir(tmp_path / "a_file" / "sub")


def test_windows_stats_and_splits_refuse_what_would_go_wrong_quietly(few_dataset, mocap_dir):
    """A data audit: windows(64, 0) was a bare range() error, windows(0, 8) gave windows past the clip's end;
    one sample's std was NaN; a bare style string matched every style it contains; a 2-frame 120 fps cut became a
    1-frame clip at 25 fps."""
    from skelanim.data.clips import clip_from_motion
    from skelanim.data.dataset import feature_stats
    from skelanim.errors import FormatError

    for length, stride in ((64, 0), (64, -1), (0, 8), (-5, 8)):
        with pytest.raises(ValueError, match="must be a whole number of frames, at least 1"):
            few_dataset.windows(length, stride)
    mean, std = feature_stats(torch.ones(1, 1, 3), (0, 1))
    assert torch.equal(mean, torch.ones(1, 1, 3)) and bool(torch.isfinite(std).all())
    with pytest.raises(TypeError, match="not one string"):
        few_dataset.split_by_style("not-confident")
    xia = skelanim.load(mocap_dir / "xia_style" / "angry_13_000.bvh")
    for frames in (2, 3):
        with pytest.raises(FormatError, match=f"{frames} frames at 120 fps are 1 at 25 fps; a clip needs at least 2"):
            clip_from_motion(xia[:frames], fps=25.0)
    assert clip_from_motion(xia[:5], fps=25.0).num_frames == 2


def test_a_dataset_of_clips_along_different_up_axes_is_refused_naming_the_clip(mocap_files, tmp_path):
    """A Z-up copy beside Y-up files had been read into one dataset (the rig took the first clip's axis, the
    other clips' windows were read along it), silently wrong features and heights for a training run."""
    from skelanim.errors import SkeletonError
    from skelanim.ops import rotate

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    upright = skelanim.load(path)[:60]
    z_up = rotate(upright, [2**-0.5, 2**-0.5, 0.0, 0.0])  # a quarter turn about X: Y up becomes Z up
    assert z_up.up_axis() == 2
    skelanim.save(upright, tmp_path / "a_upright.bvh")
    skelanim.save(z_up, tmp_path / "b_z_up.bvh")
    with pytest.raises(SkeletonError) as caught:
        MotionDataset([tmp_path], fps=30, cache=False, label_parser=None)
    assert str(caught.value).startswith(f"{tmp_path / 'b_z_up.bvh'}: its up axis is Z, {tmp_path / 'a_upright.bvh'}'s Y")
    assert MotionDataset([tmp_path / "a_upright.bvh"], fps=30, cache=False, label_parser=None).rig.up == 1


def test_a_split_measures_the_rig_on_its_training_part_alone(few_dataset):
    """An audit: the rig (height, floor) a model is trained with and stores was the median over every clip, the
    held-out ones too, so adding test files changed the trained model. A split now measures it on the training part
    (the median of an even count is the mean of the middle two); a rig given at construction (a model's) is kept."""
    parts = few_dataset.split_by_style(test=["angry", "elderly"], val=["normal"])
    train = parts["train"].clips
    want = float(np.median([c.height for c in train]))
    want_floor = float(np.median([float(c.positions[:, 1:, c.up].min()) for c in train]))
    assert len(train) == 2  # an even count: numpy's median is the mean of the middle two
    for part in parts.values():
        assert part.rig.height == pytest.approx(want, rel=1e-12) and part.rig.floor == pytest.approx(want_floor, rel=1e-6)
    assert abs(few_dataset.rig.height - want) > 1e-3  # all six clips measure otherwise
    by_file = few_dataset.split_by_file(test_fraction=0.5, val_fraction=0.0, seed=3)
    assert by_file["test"].rig is by_file["train"].rig
    assert by_file["train"].rig.height == pytest.approx(np.median([c.height for c in by_file["train"].clips]), rel=1e-12)
    model = MotionDataset(fps=few_dataset.fps, rig=few_dataset.rig, clips=few_dataset.clips)
    assert all(p.rig is few_dataset.rig for p in model.split_by_style(test=["angry"]).values() if p is not None)


def test_a_cache_entry_whose_metadata_was_changed_is_rebuilt(bandai_few, tmp_path):
    """An audit: the digest covered the tensors only, so an entry whose metadata (height, frame rate, up axis, joint
    names) was changed in place was served as it was."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    fresh = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    (entry,) = (tmp_path / "clips").glob("*.safetensors")
    with safe_open(str(entry), framework="pt") as handle:
        stored = handle.metadata()
    tensors = load_file(str(entry))
    meta = json.loads(stored["meta"])
    meta["height"] = meta["height"] + 100.0
    save_file(tensors, str(entry), metadata={**stored, "meta": json.dumps(meta)})
    again = MotionDataset(bandai_few[:1], fps=25.0, cache=tmp_path).clips[0]
    assert again.height == fresh.height


def test_a_refused_cache_folder_is_not_made_inside_the_data(bandai_few, tmp_path, monkeypatch):
    """An audit: a cache folder chosen inside the data folder was refused, but only after it had been made there; the
    default one (``~/.cache`` with data kept in the home folder) was made, and probed with a file, before giving way."""
    import shutil

    from skelanim.data.cache import cache_outside
    from skelanim.errors import TrainingDataError

    home = tmp_path / "home"
    home.mkdir()
    files = [Path(shutil.copy(bandai_few[0], home))]
    with pytest.raises(TrainingDataError, match="inside the data folder"):
        cache_outside(files, home / "mycache")
    assert not (home / "mycache").exists()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SKELANIM_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert cache_outside(files) == tmp_path / "tmp" / f"skelanim-cache-{os.getuid()}"
    assert sorted(p.name for p in home.iterdir()) == [files[0].name]


def test_the_up_axis_refusal_names_a_function_reachable_as_written():
    """An API review: the refusal of a clip along another up axis told the user to call
    ``skelanim.ops.normalize.turned_up``, which is not reachable (``skelanim.ops.normalize`` is the function
    ``normalize``, not its module); the name it gives must resolve by attribute access from ``skelanim`` to the
    function that turns a motion onto an up axis."""
    import re
    from types import SimpleNamespace

    from skelanim.data.rig import require_up
    from skelanim.errors import SkeletonError
    from skelanim.ops.normalize import turned_up

    with pytest.raises(SkeletonError) as caught:
        require_up([SimpleNamespace(up=2, path="zup.bvh", name="zup")], 1)
    dotted = re.search(r"\((skelanim(?:\.\w+)+)\)", str(caught.value))
    assert dotted is not None, str(caught.value)
    target: object = skelanim
    for part in dotted.group(1).split(".")[1:]:
        target = getattr(target, part)
    assert target is turned_up
