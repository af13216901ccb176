"""Every chain of a written BVH hierarchy ends with an ``End Site`` block, as strict readers (MotionBuilder,
Blender's importer, most parsers) require, also for skeletons whose leaves are joints with channels and no
End Site of their own (the DeepMimic humanoid, URDF skeletons, motions built in memory).

The hierarchy is checked with the strict grammar below (``_strict_hierarchy``), which shares no code with
skelanim: ``ROOT``/``JOINT name { OFFSET x y z CHANNELS n ... (JOINT ... | End Site { OFFSET x y z })* }``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from bvh_text import STD  # tests/helpers
from bvh_text import make_bvh as _make_bvh
from bvh_text import random_values as _values

from skelanim import Motion, Skeleton
from skelanim.data.samples import sample_path
from skelanim.io import bvh, deepmimic
from skelanim.io.bvh_parse import parse_bvh_bytes

_CHANNELS = {f"{a}{k}" for a in "XYZ" for k in ("position", "rotation")}


# ---------------------------------------------------------------------------------------- helpers


def _strict_hierarchy(text: str) -> dict[str, dict]:
    """Parse the HIERARCHY strictly: ``{joint: {"children": [...], "end_sites": [(x, y, z), ...]}}``.

    Tokens must appear exactly as the standard grammar has them (``End Site`` spelled so, an OFFSET of
    three numbers, CHANNELS with its count); anything else fails the test.
    """
    head = text.split("\nMOTION\n", 1)[0]
    tokens = head.replace("{", " { ").replace("}", " } ").split()
    assert tokens[0] == "HIERARCHY" and tokens[1] == "ROOT", tokens[:2]
    pos = 1
    joints: dict[str, dict] = {}

    def take(expected: str | None = None) -> str:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        assert expected is None or tok == expected, f"expected {expected!r}, found {tok!r} (token {pos - 1})"
        return tok

    def offset() -> tuple[float, ...]:
        take("OFFSET")
        return tuple(float(take()) for _ in range(3))

    def joint(parent: str | None) -> str:
        take("ROOT" if parent is None else "JOINT")
        name = take()  # the test skeletons have one-word names
        take("{")
        entry = {"parent": parent, "offset": offset(), "children": [], "end_sites": []}
        take("CHANNELS")
        count = int(take())
        entry["channels"] = tuple(take() for _ in range(count))
        assert set(entry["channels"]) <= _CHANNELS
        joints[name] = entry
        while tokens[pos] != "}":
            if tokens[pos] == "JOINT":
                entry["children"].append(joint(name))
            else:
                take("End")
                take("Site")
                take("{")
                entry["end_sites"].append(offset())
                take("}")
        take("}")
        return name

    joint(None)
    assert pos == len(tokens), f"tokens after the root's closing brace: {tokens[pos:pos + 5]}"
    return joints


def _assert_every_chain_ends(text: str) -> dict[str, dict]:
    joints = _strict_hierarchy(text)
    missing = [n for n, e in joints.items() if not e["children"] and len(e["end_sites"]) != 1]
    assert not missing, f"joints without JOINT children and without exactly one End Site: {missing}"
    assert all(len(e["end_sites"]) <= 1 for e in joints.values())
    return joints


def _assert_same_motion(again: Motion, motion: Motion) -> None:
    """Same joints, names, parents, offsets, channels and FK positions (to 1e-5 relative).

    Joints are matched by name: the writer puts them in depth-first order, which for some skeletons (the
    DeepMimic humanoid lists its arms after its legs) is not the order they had in memory.
    """
    a, b = again.skeleton, motion.skeleton
    assert sorted(a.names) == sorted(b.names) and a.num_joints == b.num_joints
    perm = [a.index(name) for name in b.names]  # again's index of each of motion's joints

    def parent_names(sk: Skeleton) -> dict[str, str | None]:
        return {n: (sk.names[p] if p >= 0 else None) for n, p in zip(sk.names, sk.parents.tolist())}

    assert parent_names(a) == parent_names(b)
    assert torch.equal(a.offsets[perm], b.offsets)  # offsets are written exactly
    assert [a.channels[k] for k in perm] == b.channels
    for j, end in b.end_sites.items():  # End Sites the skeleton had come back unchanged
        assert torch.equal(a.end_sites[perm[j]], end), b.names[j]
    expected = motion.positions()
    scale = max(1.0, float(expected.abs().max()))
    torch.testing.assert_close(again.positions()[:, perm], expected, rtol=0, atol=1e-5 * scale)


def _leaves(skeleton: Skeleton) -> list[int]:
    parents = set(skeleton.parents.tolist())
    return [j for j in range(skeleton.num_joints) if j not in parents]


def _random_motion(skeleton: Skeleton, frames: int = 6, seed: int = 0) -> Motion:
    rng = np.random.default_rng(seed)
    rot = torch.nn.functional.normalize(torch.from_numpy(rng.normal(size=(frames, skeleton.num_joints, 4))), dim=-1)
    return Motion(skeleton, rot, torch.from_numpy(rng.normal(size=(frames, 3))), fps=30.0)


# ------------------------------------------------------------------------------------------ tests


def test_deepmimic_clip_written_as_bvh_ends_every_chain(tmp_path) -> None:
    motion = deepmimic.load(sample_path("walk"))
    sk = motion.skeleton
    bare = [sk.names[j] for j in _leaves(sk) if j not in sk.end_sites]
    assert set(bare) == {"neck", "right_ankle", "left_ankle"}  # leaves with channels and no End Site
    path = tmp_path / "walk.bvh"
    bvh.save(motion, path)
    text = path.read_text()
    joints = _assert_every_chain_ends(text)
    assert sorted(joints) == sorted(sk.names)
    for name in bare:
        assert joints[name]["channels"] and joints[name]["end_sites"] == [(0.0, 0.0, 0.0)]
    for j, end in sk.end_sites.items():  # the wrists keep the URDF's End Sites
        assert joints[sk.names[j]]["end_sites"] == [tuple(end.tolist())]
    again = bvh.load(path)
    _assert_same_motion(again, motion)
    # read back, the leaves that had none have a zero End Site; joint positions are unchanged
    assert sorted(again.skeleton.end_sites) == sorted(_leaves(again.skeleton))
    assert all(not again.skeleton.end_sites[again.skeleton.index(n)].any() for n in bare)


def test_urdf_skeleton_motion_round_trips_with_end_sites() -> None:
    """A motion on the URDF humanoid (what ``skelanim retarget --to humanoid.urdf`` writes)."""
    motion = _random_motion(deepmimic.humanoid_skeleton(sample_path("humanoid.urdf")), seed=1)
    text = bvh.dumps(motion, precision=9)
    _assert_every_chain_ends(text)
    again = bvh.loads(text)
    _assert_same_motion(again, motion)
    assert bvh.dumps(again, precision=9) == text  # the zero End Sites read back write the same text


@pytest.mark.parametrize("parents", [[-1], [-1, 0], [-1, 0, 1, 0, 3, 3], [-1, 0, 0, 2, 3, 0]])
def test_in_memory_skeletons_without_end_sites(parents: list[int]) -> None:
    n = len(parents)
    offsets = torch.from_numpy(np.random.default_rng(n).uniform(-3, 3, size=(n, 3)))
    skeleton = Skeleton([f"j{k}" for k in range(n)], np.array(parents), offsets)
    assert not skeleton.end_sites
    motion = _random_motion(skeleton, seed=n)
    text = bvh.dumps(motion, precision=9)
    joints = _assert_every_chain_ends(text)
    assert sum(len(e["end_sites"]) for e in joints.values()) == len(_leaves(skeleton))
    assert all(not e["end_sites"] for e in joints.values() if e["children"])  # only chain ends get one
    _assert_same_motion(bvh.loads(text), motion)


def test_end_sites_read_from_a_file_write_back_unchanged() -> None:
    """A file with End Sites (one on a joint that has children too) writes its hierarchy as before."""
    text = _make_bvh(STD, _values(STD))
    motion = bvh.loads(text)
    extra = dict(motion.skeleton.end_sites)
    extra[1] = torch.tensor([0.5, 0.25, -1.0], dtype=torch.float64)  # Spine has a child (Head)
    sk = motion.skeleton
    motion = motion.copy(skeleton=Skeleton(sk.names, sk.parents, sk.offsets, sk.channels, extra))
    written = bvh.dumps(motion)
    joints = _assert_every_chain_ends(written)
    assert {n: e["end_sites"] for n, e in joints.items()} == {
        "Hips": [], "Spine": [(0.5, 0.25, -1.0)], "Head": [(0.0, 5.0, 0.0)], "LeftLeg": [(0.0, -10.0, 0.0)],
    }
    head = written.split("MOTION")[0]
    assert head.count("End Site") == 3 and "OFFSET 0 0 0" not in head
    parsed = parse_bvh_bytes(written.encode(), "w")
    assert sorted(parsed.end_sites) == [1, 2, 3]


def test_real_file_with_end_sites_writes_the_same_hierarchy(mocap_dir) -> None:
    """Every leaf of a real file already has an End Site: nothing is added, every offset is kept."""
    source = (mocap_dir / "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh").read_bytes()
    motion = bvh.loads(source)
    written = bvh.dumps(motion)
    joints = _assert_every_chain_ends(written)
    parsed = parse_bvh_bytes(source, "source")
    assert sum(len(e["end_sites"]) for e in joints.values()) == len(parsed.end_sites)
    for j, end in parsed.end_sites.items():
        assert joints[parsed.names[j]]["end_sites"] == [tuple(end.tolist())]


def test_a_named_end_site_keeps_its_name() -> None:
    """Some exporters name End Sites (``End Site Head_End``); the name was read and then written back as a plain
    ``End Site`` (an audit). It is kept now; a label that would not read back is written plain."""
    text = ("HIERARCHY\nROOT Hips\n{\n OFFSET 0 0 0\n CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
            "Yrotation\n JOINT Head\n {\n  OFFSET 0 1 0\n  CHANNELS 3 Zrotation Xrotation Yrotation\n  End Site Head_End\n"
            "  {\n   OFFSET 0 1 0\n  }\n }\n}\nMOTION\nFrames: 1\nFrame Time: 0.0333333\n0 0 0 0 0 0 10 0 0\n")
    motion = bvh.loads(text)
    assert motion.metadata["bvh_end_site_labels"] == {"Head": "End Site Head_End"}
    again = bvh.dumps(motion)
    assert "\tEnd Site Head_End\n" in again and bvh.loads(again).metadata["bvh_end_site_labels"] == {"Head": "End Site Head_End"}
    broken = motion.copy(metadata={**motion.metadata, "bvh_end_site_labels": {"Head": "End Site a{b"}})
    assert "\tEnd Site\n" in bvh.dumps(broken)
