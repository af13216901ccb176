"""BVH reading and writing: every real file, an independent FK reference, round trips, edge cases, errors.

The FK reference below (``_reference_fk``) shares no code with skelanim: its own token parse of the file
and scipy's ``Rotation.from_euler`` with upper-case (intrinsic) orders in degrees, joint by joint.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from bvh_text import POS, ROT, STD  # tests/helpers
from bvh_text import make_bvh as _make_bvh
from bvh_text import random_values as _values
from needs import peer_library
from scipy.spatial.transform import Rotation

import skelanim
from skelanim import Motion, Skeleton
from skelanim.errors import FormatError
from skelanim.io import bvh, bvh_channels
from skelanim.io.bvh_parse import parse_bvh_bytes


def _data_root() -> Path:
    # Same rule as the ``mocap_dir`` fixture (tests/conftest.py); needed at collection time to parametrize.
    configured = os.environ.get("SKELANIM_DATA")
    path = Path(configured).expanduser() if configured else Path("..") / "shared" / "data" / "mocap"
    return path if path.is_absolute() else (Path(__file__).resolve().parents[2] / path).resolve()


ALL_FILES = sorted(str(p.relative_to(_data_root())) for p in _data_root().glob("*/*.bvh"))
FAMILY_JOINTS = {  # joints per family; the CC rig has 101 joints in takes that add one extra bone
    "bandai_namco_1": {22},
    "bandai_namco_2": {22},
    "cmu_cgspeed_mb": {31},
    "cmu_cgspeed_max": {31},
    "cmu_iclone_ccrig": {100, 101},
    "xia_style": {31},
    "pymo_demo": {23},
}
# one file per skeleton family (and the two CMU conversions), for the slower checks
FAMILY_SAMPLES = [
    "bandai_namco_1/dataset-1_bow_active_001.bvh",
    "bandai_namco_2/dataset-2_raise-up-both-hands_active_001.bvh",
    "cmu_cgspeed_mb/01_01.bvh",
    "cmu_cgspeed_max/131_01.bvh",
    "cmu_iclone_ccrig/002_01.bvh",
    "cmu_iclone_ccrig/001_01.bvh",
    "xia_style/angry_13_000.bvh",
    "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh",
]
ROUND_TRIP = sorted(set(FAMILY_SAMPLES) | {f for f in ALL_FILES if not f.startswith("bandai")})


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    # These tests run many small torch ops; on a busy machine (or under pytest -n) torch's thread pool
    # only adds latency. Restored afterwards.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------- reference


def _reference_parse(text: str) -> tuple[list[str], list[int], np.ndarray, list[list[str]], np.ndarray]:
    """Minimal independent BVH parse: names, parents, offsets (J, 3), channels, values (F, C)."""
    head, motion = re.split(r"^\s*MOTION\s*$", text, maxsplit=1, flags=re.MULTILINE)
    toks = head.replace("{", " { ").replace("}", " } ").split()
    names, parents, offsets, chans, stack, current, i = [], [], [], [], [], None, 0
    while i < len(toks):
        t = toks[i]
        if t in ("ROOT", "JOINT"):
            names.append(toks[i + 1])
            parents.append(next((s for s in reversed(stack) if s is not None), -1))
            offsets.append(None)
            chans.append([])
            current = len(names) - 1
            i += 2
        elif t == "End":
            current = None
            i += 2
        elif t == "{":
            stack.append(current)
            i += 1
        elif t == "}":
            stack.pop()
            i += 1
        elif t == "OFFSET":
            if current is not None:
                offsets[current] = np.array(toks[i + 1 : i + 4], float)
            i += 4
        elif t == "CHANNELS":
            n = int(toks[i + 1])
            chans[current] = toks[i + 2 : i + 2 + n]
            i += 2 + n
        else:
            i += 1
    lines = [ln for ln in motion.strip().splitlines() if ln.strip()]
    n_cols = sum(len(c) for c in chans)
    values = np.array(" ".join(lines[2:]).split(), float).reshape(-1, n_cols)
    return names, parents, np.stack(offsets), chans, values


def _reference_fk(text: str) -> tuple[list[str], np.ndarray]:
    """World joint positions ``(F, J, 3)`` with scipy: R_w[j] = R_w[p] R_j, p_w[j] = p_w[p] + R_w[p] t_j."""
    names, parents, offsets, chans, values = _reference_parse(text)
    frames, col = values.shape[0], 0
    world_rot: list[Rotation] = []
    world_pos: list[np.ndarray] = []
    for j, channels in enumerate(chans):
        t = np.tile(offsets[j], (frames, 1))  # position channels replace offset components
        order, angles = "", []
        for c in channels:
            if c.endswith("position"):
                t[:, "XYZ".index(c[0])] = values[:, col]
            else:
                order += c[0]
                angles.append(values[:, col])
            col += 1
        local = Rotation.from_euler(order, np.stack(angles, 1), degrees=True) if order else Rotation.identity(frames)
        if parents[j] < 0:
            world_rot.append(local)
            world_pos.append(t)
        else:
            p = parents[j]
            world_rot.append(world_rot[p] * local)
            world_pos.append(world_pos[p] + world_rot[p].apply(t))
    return names, np.stack(world_pos, 1)


# --------------------------------------------------------------------------------------------- real data


@pytest.mark.parametrize("name", ALL_FILES or [pytest.param("none", marks=pytest.mark.skip("no mocap data"))])
def test_every_real_file_loads(mocap_dir: Path, name: str) -> None:
    motion = bvh.load(mocap_dir / name)
    family = name.split("/")[0]
    skeleton = motion.skeleton
    assert skeleton.num_joints in FAMILY_JOINTS[family]
    assert motion.num_frames > 0 and motion.fps > 0
    assert torch.isfinite(motion.rotations).all() and torch.isfinite(motion.root_positions).all()
    norms = motion.rotations.norm(dim=-1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-12)
    assert skeleton.end_sites, "every family has End Sites"
    assert len(skeleton.channels) == skeleton.num_joints
    assert (motion.joint_translations is not None) == family.startswith("bandai")  # 6 channels on every joint
    text = (mocap_dir / name).read_text()
    assert motion.num_frames == int(re.search(r"Frames:\s*(\d+)", text).group(1))
    assert sum(len(c) for c in skeleton.channels) == len(text.split("Frame Time:")[1].split("\n")[1].split())


@pytest.mark.parametrize("name", FAMILY_SAMPLES)
def test_fk_matches_independent_scipy_reference(mocap_dir: Path, name: str) -> None:
    text = (mocap_dir / name).read_text()
    names, expected = _reference_fk(text)
    motion = bvh.load(mocap_dir / name)
    assert motion.skeleton.names == names
    got = motion.positions().numpy()
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() <= 1e-5 * motion.height


def test_fk_matches_pybvh_world_positions(mocap_dir: Path) -> None:
    pybvh = peer_library("pybvh")
    path = mocap_dir / "cmu_cgspeed_mb/01_01.bvh"
    peer = pybvh.read_bvh_file(path, world_up="+y")
    motion = bvh.load(path)
    index = peer.joint_index
    expected = peer.joint_positions()[:, [index[n] for n in motion.skeleton.names]]
    assert np.abs(motion.positions().numpy() - expected).max() <= 1e-5 * motion.height


@pytest.mark.parametrize("name", ROUND_TRIP)
def test_round_trip_real_file(mocap_dir: Path, name: str, tmp_path: Path) -> None:
    """read -> write -> read: identical hierarchy; channel values equal to the printed precision.

    Compared: the raw channel numbers parsed from both files (not through skelanim's rotation code).
    Positions and rotation angles must agree to 1e-6 (6 printed decimals; the source has at most 6), also at
    gimbal lock (the production rig's eyes sit at a middle angle of -90 deg in every frame), where a whole line
    of Euler triples gives the same rotation and only the file's own is its numbers.
    """
    source = (mocap_dir / name).read_bytes()
    out = tmp_path / "out.bvh"
    bvh.save(bvh.load(mocap_dir / name), out)
    a = parse_bvh_bytes(source, "a")
    b = parse_bvh_bytes(out.read_bytes(), "b")
    assert a.names == b.names and a.channels == b.channels
    assert np.array_equal(a.parents, b.parents)
    assert np.array_equal(a.offsets, b.offsets)  # written exactly (shortest repr)
    assert a.end_sites.keys() == b.end_sites.keys()
    assert all(np.array_equal(a.end_sites[k], b.end_sites[k]) for k in a.end_sites)
    assert a.frame_time == b.frame_time and a.values.shape == b.values.shape
    diff = np.abs(a.values - b.values)
    col = 0
    for j, chans in enumerate(a.channels):
        rot_cols = [col + i for i, c in enumerate(chans) if c.endswith("rotation")]
        pos_cols = [col + i for i, c in enumerate(chans) if c.endswith("position")]
        col += len(chans)
        assert diff[:, pos_cols].max(initial=0) <= 1.0000001e-6, a.names[j]
        if not rot_cols:
            continue
        bad = diff[:, rot_cols].max(axis=1) > 1.0000001e-6
        assert not bad.any(), f"{a.names[j]}: frame {int(np.argmax(bad))} {a.values[bad][0]} != {b.values[bad][0]}"


def test_io_dispatch_and_public_api(mocap_dir: Path, tmp_path: Path) -> None:
    motion = skelanim.load(mocap_dir / "xia_style/angry_13_000.bvh")
    assert isinstance(motion, Motion) and motion.skeleton.num_joints == 31
    skelanim.save(motion, tmp_path / "a.bvh")
    again = skelanim.load(tmp_path / "a.bvh")
    assert torch.allclose(again.positions(), motion.positions(), atol=1e-5)


def test_parse_is_exact_for_every_number(mocap_dir: Path) -> None:
    """The vectorised MOTION parser gives exactly Python's float() for every token of every family."""
    for name in FAMILY_SAMPLES:
        data = (mocap_dir / name).read_bytes()
        parsed = parse_bvh_bytes(data, name)
        body = data.split(b"Frame Time:")[1].split(b"\n", 1)[1]
        expected = np.array([float(t) for t in body.split()]).reshape(parsed.values.shape)
        assert np.array_equal(parsed.values, expected)
        assert np.array_equal(np.signbit(parsed.values), np.signbit(expected))


# --------------------------------------------------------------------------------------------- synthetic

def _check_against_reference(text: str) -> Motion:
    motion = bvh.loads(text)
    names, expected = _reference_fk(text)
    assert motion.skeleton.names == names
    assert np.abs(motion.positions().numpy() - expected).max() < 1e-9
    return motion


def test_standard_layout_and_end_sites() -> None:
    text = _make_bvh(STD, _values(STD))
    motion = _check_against_reference(text)
    sk = motion.skeleton
    assert sk.names == ["Hips", "Spine", "Head", "LeftLeg"]
    assert sk.parents.tolist() == [-1, 0, 1, 0]
    assert sk.channels == [tuple(POS + ROT), tuple(ROT), tuple(ROT), tuple(ROT)]
    assert sorted(sk.end_sites) == [2, 3] and sk.end_sites[2].tolist() == [0.0, 5.0, 0.0]
    assert motion.joint_translations is None
    assert motion.fps == pytest.approx(1 / 0.0333333)
    assert motion.metadata["frame_time"] == 0.0333333


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"])
@pytest.mark.parametrize("indent", ["\t", "    ", "  \t "])
def test_line_ends_and_indentation(newline: str, indent: str) -> None:
    values = _values(STD)
    motion = bvh.loads(_make_bvh(STD, values, newline=newline, indent=indent))
    reference = bvh.loads(_make_bvh(STD, values))
    assert torch.equal(motion.rotations, reference.rotations)
    assert torch.equal(motion.root_positions, reference.root_positions)


def test_three_channel_root_and_rotation_only_root() -> None:
    chans = [ROT, ROT, ROT, ROT]
    motion = _check_against_reference(_make_bvh(chans, _values(chans)))
    assert torch.equal(motion.root_positions, torch.tensor([[1.0, 2.0, 3.0]] * 5, dtype=torch.float64))
    rot_first = [ROT + POS, ROT, ROT, ROT]  # rotation channels listed before positions
    _check_against_reference(_make_bvh(rot_first, _values(rot_first)))


def test_position_channels_on_non_root_joint_replace_the_offset() -> None:
    chans = [POS + ROT, POS + ROT, ["Yposition"] + ROT, ROT]
    values = _values(chans)
    motion = _check_against_reference(_make_bvh(chans, values))
    assert motion.joint_translations is not None
    assert np.allclose(motion.joint_translations[:, 1].numpy(), values[:, 6:9])
    # a partial subset replaces only its component: Head keeps x, z of its OFFSET (0, 10, 0)
    assert np.allclose(motion.joint_translations[:, 2, 1].numpy(), values[:, 12])
    assert np.allclose(motion.joint_translations[:, 2, [0, 2]].numpy(), 0.0)


@pytest.mark.parametrize("order", ["XYZ", "YXZ", "ZYX", "YZX", "XZY", "ZXY", "ZXZ", "YXY"])
def test_every_rotation_order(order: str) -> None:
    rot = [f"{a}rotation" for a in order]
    chans = [POS + rot, rot, rot, rot]
    _check_against_reference(_make_bvh(chans, _values(chans)))


def test_channel_subsets_and_zero_channel_joints() -> None:
    chans = [["Yposition", "Xrotation"], [], ["Zrotation", "Yrotation"], ["Yrotation"]]
    motion = _check_against_reference(_make_bvh(chans, _values(chans)))
    assert motion.skeleton.channels[1] == ()
    assert torch.equal(motion.rotations[:, 1], torch.tensor([1.0, 0, 0, 0], dtype=torch.float64).expand(5, 4))
    no_line = [POS + ROT, None, ROT, ROT]  # no CHANNELS line at all
    motion = bvh.loads(_make_bvh(no_line, _values(no_line)))
    assert motion.skeleton.channels[1] == ()


@pytest.mark.parametrize("label", ["End Site", "End site", "End", "End Site LeftToe_End", "END SITE"])
def test_end_site_names_vary(label: str) -> None:
    motion = bvh.loads(_make_bvh(STD, _values(STD), end_label=label))
    assert sorted(motion.skeleton.end_sites) == [2, 3]


def test_lenient_syntax_case_braces_and_number_forms() -> None:
    text = _make_bvh(STD, _values(STD, frames=2)).replace("JOINT Spine\n\t{", "joint Spine{")
    text = text.replace("Zrotation", "ZROTATION").replace("Frame Time: 0.0333333", "Frame Time:\t.025")
    lines = text.split("\n")
    lines[-3] = " ".join(["+1.5e+00", "-.5", "5.", "1E-3", "0", "-0"] + lines[-3].split()[6:])
    motion = bvh.loads("\n".join(lines))
    assert motion.skeleton.channels[0][3] == "Zrotation"
    assert motion.fps == pytest.approx(40.0)
    assert motion.root_positions[0].tolist() == [1.5, -0.5, 5.0]


def test_joint_names_with_spaces_round_trip() -> None:
    text = _make_bvh(STD, _values(STD)).replace("JOINT Spine", "JOINT Upper Spine")
    motion = bvh.loads(text)
    assert motion.skeleton.names[1] == "Upper Spine"
    assert bvh.loads(bvh.dumps(motion)).skeleton.names[1] == "Upper Spine"


def test_very_long_file_loads_quickly() -> None:
    rng = np.random.default_rng(1)
    frames = 100_000
    values = np.round(rng.uniform(-180, 180, size=(frames, 15)), 4)
    text = _make_bvh(STD, values[:1])
    body = "\n".join(" ".join(f"{v:.4f}" for v in row) for row in values[: 1000]) + "\n"
    text = text.rsplit("Frames:", 1)[0] + f"Frames: {frames}\nFrame Time: 0.01\n" + body * 100
    start = time.perf_counter()
    motion = bvh.loads(text)
    elapsed = time.perf_counter() - start
    assert motion.num_frames == frames
    assert np.allclose(motion.root_positions[1000:1003].numpy(), values[:3, :3])
    assert elapsed < 10.0, f"100k frames took {elapsed:.1f} s"


def test_deep_nesting_has_no_recursion_limit() -> None:
    depth = 3000
    head = ["HIERARCHY", "ROOT j0", "{", "OFFSET 0 0 0", "CHANNELS 3 Zrotation Xrotation Yrotation"]
    for i in range(1, depth):
        head += [f"JOINT j{i}", "{", "OFFSET 0 1 0", "CHANNELS 1 Zrotation"]
    head += ["}"] * depth
    text = "\n".join(head + ["MOTION", "Frames: 1", "Frame Time: 0.1", " ".join(["0"] * (depth + 2))]) + "\n"
    motion = bvh.loads(text)
    assert motion.skeleton.num_joints == depth
    assert len(bvh.dumps(motion)) > 0
    with pytest.raises(FormatError, match="missing '}'"):
        bvh.loads("\n".join(head[:-1] + ["MOTION", "Frames: 1", "Frame Time: 0.1", "0"]))


def test_extra_frame_lines_are_ignored_with_a_warning() -> None:
    text = _make_bvh(STD, _values(STD)).replace("Frames: 5", "Frames: 3")
    with pytest.warns(UserWarning, match="2 line.s. after the 3 frames"):
        motion = bvh.loads(text)
    assert motion.num_frames == 3 and motion.metadata["bvh_extra_frames"] == 2
    # junk after the frames (a trailing word, a row cut off) is ignored with them; the frames read are the same
    for tail in ("END\n", "0 0\n"):
        with pytest.warns(UserWarning, match="3 line.s. after the 3 frames"):
            junk = bvh.loads(text + tail)
        assert junk.metadata["bvh_extra_frames"] == 3 and torch.equal(junk.positions(), motion.positions())


def test_first_end_site_kept_when_a_joint_has_two() -> None:
    text = _make_bvh(STD, _values(STD)).replace(
        "\t\t\tEnd Site", "\t\t\tEnd Site\n\t\t\t{\n\t\t\t\tOFFSET 9 9 9\n\t\t\t}\n\t\t\tEnd Site", 1)
    motion = bvh.loads(text)
    assert motion.skeleton.end_sites[2].tolist() == [9.0, 9.0, 9.0]
    assert motion.metadata["bvh_dropped_end_sites"] == 1


# --------------------------------------------------------------------------------------------- writing


def _strip(motion: Motion) -> Motion:
    """The motion without the values it was read with (the writer then relies on continuity only)."""
    return motion.copy(metadata={})


def test_writer_format_tabs_and_channel_order() -> None:
    chans = [ROT + POS, ["Yrotation", "Xrotation", "Zrotation"], ROT, []]
    text = bvh.dumps(bvh.loads(_make_bvh(chans, _values(chans))))
    assert "\tJOINT Spine\n\t{\n\t\tOFFSET 0 10 0\n\t\tCHANNELS 3 Yrotation Xrotation Zrotation\n" in text
    assert "CHANNELS 6 Zrotation Xrotation Yrotation Xposition Yposition Zposition" in text
    assert "\t\tCHANNELS 0\n" in text
    assert "\t\t\tEnd Site\n\t\t\t{\n\t\t\t\tOFFSET 0 5 0\n\t\t\t}\n" in text
    assert "Frame Time: 0.0333333\n" in text


def test_writer_recovers_continuous_angles_beyond_180_without_metadata() -> None:
    frames = 200
    t = np.linspace(0, 1, frames)
    values = np.zeros((frames, 15))
    values[:, 3] = 720 * t - 100  # root Z: -100 .. 620 degrees, continuous
    values[:, 4] = 30 * np.sin(6 * t)
    values[:, 9] = -400 * t  # Head Z down to -400
    values[:, 11] = 150 + 60 * t  # Head Y (last of ZXY): 150 .. 210
    values = np.round(values, 6)
    motion = _strip(bvh.loads(_make_bvh(STD, values)))
    written = parse_bvh_bytes(bvh.dumps(motion).encode(), "w").values
    assert np.abs(written - values).max() < 2e-6


def test_writer_recovers_middle_angle_beyond_90_without_metadata() -> None:
    frames = 100
    values = np.zeros((frames, 15))
    values[:, 4] = np.linspace(40, 140, frames)  # root X, the middle of ZXY, crosses 90
    values[:, 3] = 20.0
    values[:, 5] = -35.0
    values = np.round(values, 6)
    motion = _strip(bvh.loads(_make_bvh(STD, values)))
    written = parse_bvh_bytes(bvh.dumps(motion).encode(), "w").values
    near_lock = np.abs(values[:, 4] - 90) < 1e-3
    assert np.abs(written - values)[~near_lock].max() < 2e-6


def test_writer_wrapped_source_without_metadata_matches_mod_360() -> None:
    values = np.zeros((4, 15))
    values[:, 3] = [170, 179, -178, -170]  # the source wraps at +-180
    motion = _strip(bvh.loads(_make_bvh(STD, values)))
    written = parse_bvh_bytes(bvh.dumps(motion).encode(), "w").values
    assert np.allclose(written[:, 3], [170, 179, 182, 190])  # continuous: the same angles mod 360
    kept = parse_bvh_bytes(bvh.dumps(bvh.loads(_make_bvh(STD, values))).encode(), "w").values
    assert np.allclose(kept, values)  # with the values it was read with: the file's own numbers


def test_writer_from_a_motion_built_in_memory(tmp_path: Path) -> None:
    names = ["root", "a", "b"]
    skeleton = Skeleton(names, np.array([-1, 0, 1]), torch.tensor([[0, 0, 0], [0, 1.0, 0], [0, 1.0, 0]]),
                        end_sites={2: torch.tensor([0, 0.5, 0])})
    rng = np.random.default_rng(3)
    rot = torch.nn.functional.normalize(torch.from_numpy(rng.normal(size=(7, 3, 4))), dim=-1)
    motion = Motion(skeleton, rot, torch.from_numpy(rng.normal(size=(7, 3))), fps=24.0)
    path = tmp_path / "sub" / "m.bvh"
    bvh.save(motion, path, precision=9)
    again = bvh.load(path)
    assert again.skeleton == skeleton
    assert again.fps == pytest.approx(24.0, rel=1e-12)
    assert torch.allclose(again.positions(end_sites=True), motion.positions(end_sites=True), atol=1e-7)
    assert not [p for p in path.parent.iterdir() if p.name != "m.bvh"]  # no temporary files left


def test_save_is_atomic_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "keep.bvh"
    path.write_text("old")
    motion = bvh.loads(_make_bvh(STD, _values(STD)))
    with pytest.raises(ValueError):
        bvh.save(motion, path, precision=-1)
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.bvh"]


@pytest.mark.parametrize("with_source", [True, False])
def test_save_in_blocks_writes_what_one_block_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     with_source: bool) -> None:
    # the writer works out Euler angles a few joints at a time and writes frame lines in blocks (a long take's
    # memory); blocks of 3 frames and joints one at a time must give the bytes of one block of everything
    motion = bvh.loads(_make_bvh(STD, _values(STD, frames=11, seed=4)))
    motion = motion if with_source else _strip(motion)
    whole = bvh.dumps(motion)
    monkeypatch.setattr(bvh, "FRAMES_PER_BLOCK", 3)
    monkeypatch.setattr(bvh_channels, "EULER_JOINTS_AT_ONCE", 1)
    bvh.save(motion, tmp_path / "blocks.bvh")
    assert (tmp_path / "blocks.bvh").read_text() == whole
    assert bvh.dumps(motion) == whole
    assert len(whole.splitlines()) == whole.splitlines().index("MOTION") + 3 + 11


def test_bandai_style_translations_round_trip(mocap_dir: Path, tmp_path: Path) -> None:
    motion = bvh.load(mocap_dir / FAMILY_SAMPLES[0])
    edited = _strip(motion.copy(joint_translations=motion.joint_translations * 1.5))
    bvh.save(edited, tmp_path / "e.bvh")
    again = bvh.load(tmp_path / "e.bvh")
    assert torch.allclose(again.positions(), edited.positions(), atol=1e-5)
