"""FBX through Blender (skelanim.io.fbx), checked against Blender's own reading of each file: the FBX we write,
imported by Blender, puts every joint where our forward kinematics does (in metres, Z up); an FBX Blender writes, of
an armature placed as Mixamo's are (turned 90 degrees about X, scaled 0.01), reads as Blender poses it; and the
failures are one line naming the file (tests/helpers/blender.py says where Blender's ``bpy`` lives)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from blender import blender_python, heads_by_name, run_blender, run_ufbx, y_up_to_z_up, z_up_to_y_up  # tests/helpers
from cli_output import run_cli  # tests/helpers

import skelanim
from skelanim.data.samples import sample_path
from skelanim.errors import FormatError
from skelanim.io import fbx
from skelanim.ops import resample, turned_up

TOLERANCE = 2e-5  # of the figure's extent, as in test_blender_peer.py


@pytest.fixture
def blender(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Blender's Python, named by SKELANIM_BLENDER for skelanim.io.fbx."""
    python = blender_python()
    monkeypatch.setenv(fbx.BLENDER_ENV, str(python))
    return python


def _walk() -> skelanim.Motion:
    return resample(skelanim.load(sample_path("walk.txt")), 30.0)  # DeepMimic's walk at a whole rate, metres, Y up


def _in_order(motion: skelanim.Motion, like: skelanim.Motion) -> np.ndarray:
    """``motion``'s joint positions (F, J, 3) in the joint order of ``like`` (Blender orders bones its own way)."""
    return motion.positions().numpy()[:, [motion.skeleton.names.index(n) for n in like.skeleton.names]]


def _ufbx_metres(path: Path, work: Path, like: skelanim.Motion) -> np.ndarray:
    """ufbx's world positions of ``like``'s joints in the FBX ``path``, in metres, the file's axes; (F, J, 3)."""
    peer = run_ufbx(path, work)  # as Godot's importer reads the file itself
    return heads_by_name(peer, list(like.skeleton.names)) * float(peer["unit_meters"])


def _close(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    extent = float(np.ptp(ours.reshape(-1, 3), axis=0).max())
    worst = float(np.abs(ours - theirs).max())
    assert worst <= TOLERANCE * extent, f"{what}: joints differ by up to {worst:.3g} (extent {extent:.3g})"


def test_blender_reads_our_fbx_where_our_kinematics_puts_every_joint(blender: Path, tmp_path: Path) -> None:
    walk = _walk()
    skelanim.save(walk, tmp_path / "walk.fbx")
    job = run_blender({"import": {"path": str(tmp_path / "walk.fbx"), "format": "fbx"}}, tmp_path)
    assert len(job["frames"]) == walk.num_frames
    assert float(job["fps"]) == pytest.approx(30.0, rel=1e-4)
    _close(y_up_to_z_up(walk.positions().numpy()), heads_by_name(job, list(walk.skeleton.names)), "our FBX")


def test_units_and_up_axis_become_metres_and_blenders_z_up(blender: Path, tmp_path: Path) -> None:
    """The walk in centimetres and turned to Z up: the FBX is in metres, standing up in Blender as the Y-up
    original does (the BVH step turns it to Y up, Blender's import back to Z up)."""
    walk = _walk()
    tall, _ = turned_up(skelanim.ops.scale(walk, 100.0), 2)
    skelanim.save(tall, tmp_path / "tall.fbx", scale="cm")
    job = run_blender({"import": {"path": str(tmp_path / "tall.fbx"), "format": "fbx"}}, tmp_path)
    _close(y_up_to_z_up(walk.positions().numpy()), heads_by_name(job, list(walk.skeleton.names)), "cm, Z up")


@pytest.mark.parametrize(("placing", "placement"), [
    ("object", {"location": [0.5, 1.0, 0.0], "rotation_deg": [90, 0, 0], "scale": [0.01] * 3}),  # as Mixamo's
    ("parent", {"location": [2.0, 0.5, 0.0], "rotation_deg": [0, 0, 90], "scale": [2.0] * 3}),  # below a null node
])  # fmt: skip
def test_we_read_blenders_fbx_of_a_placed_armature(blender: Path, tmp_path: Path, placing: str,
                                                   placement: dict) -> None:  # fmt: skip
    """Blender exports an armature turned 90 degrees about X, scaled by 0.01 and moved (as Mixamo's are), or hung
    below a null node that is turned, moved and scaled: read back, every joint is where Blender's pose puts it (its
    Z up as our Y up) and where ufbx, reading the file, puts it, in metres; the rate and frame count are the
    scene's. (The null node had been dropped, and the skeleton read where the armature alone would stand.)"""
    skelanim.save(_walk(), tmp_path / "walk.bvh")
    made = tmp_path / "placed.fbx"
    job = run_blender({"import": {"path": str(tmp_path / "walk.bvh"), "format": "bvh"}, placing: placement,
                       "export": {"path": str(made), "format": "fbx"}}, tmp_path)  # fmt: skip
    motion = skelanim.load(made)
    assert motion.metadata["format"] == "fbx" and motion.metadata["units"] == "m"
    assert motion.num_frames == len(job["frames"]) and motion.fps == 30.0  # Blender's scene: 30.00003, from 0.033333 s
    _close(motion.positions().numpy(), z_up_to_y_up(heads_by_name(job, list(motion.skeleton.names))), placing)
    _close(motion.positions().numpy(), _ufbx_metres(made, tmp_path, motion), f"{placing}, read by ufbx")


def test_an_fbx_of_two_takes_reads_either_by_name_or_index(blender: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Blender writes the walk and a copy whose root is moved 0.5 m as two takes: each reads by name and by index
    (``metadata["fbx_takes"]``, which ``skelanim info`` shows; ``convert --take``), the moved one rigidly 0.5 m from
    the other, which is the walk itself."""
    walk = _walk()
    skelanim.save(walk, tmp_path / "walk.bvh")
    made = tmp_path / "two.fbx"
    run_blender({"import": {"path": str(tmp_path / "walk.bvh"), "format": "bvh", "axes": "y_up"},
                 "second_take": {"name": "shifted", "bone": "root", "offset": [0.3, 0.0, 0.4]},
                 "export": {"path": str(made), "format": "fbx"}}, tmp_path)  # fmt: skip
    takes = skelanim.load(made).metadata["fbx_takes"]
    moved_name = next(t for t in takes if "shifted" in t)
    moved = skelanim.load(made, animation=moved_name)
    assert moved.metadata["fbx_take"] == moved_name
    assert np.array_equal(skelanim.load(made, animation=takes.index(moved_name)).positions(), moved.positions())
    others = [skelanim.load(made, animation=t) for t in takes if t != moved_name]
    plain = [m for m in others if np.abs(_in_order(m, walk) - walk.positions().numpy()).max() < 1e-4]
    assert plain, f"no take of {takes} is the walk itself"
    shift = _in_order(moved, walk) - _in_order(plain[0], walk)
    assert np.allclose(shift, shift[0, 0], atol=1e-5) and np.linalg.norm(shift[0, 0]) == pytest.approx(0.5, abs=1e-5)
    code, out, _ = run_cli(["info", str(made), "--json"], capsys)
    facts = json.loads(out)
    assert code == 0 and facts["takes"] == takes and facts["take"] in takes
    code, _, _ = run_cli(["convert", str(made), str(tmp_path / "moved.glb"), "--take", moved_name], capsys)
    assert code == 0 and np.allclose(skelanim.load(tmp_path / "moved.glb").positions(), moved.positions(), atol=1e-5)
    code, _, err = run_cli(["convert", str(made), str(tmp_path / "run.glb"), "--take", "run"], capsys)
    assert code == 2 and "two.fbx: no take 'run'" in err and err.count("\n") == 1 and not (tmp_path / "run.glb").exists()
    with pytest.raises(FormatError, match=r"two\.fbx: no take 'run'; its takes are '"):
        skelanim.load(made, animation="run")
    with pytest.raises(FormatError, match=rf"two\.fbx: no take {len(takes)}; it has {len(takes)}"):
        skelanim.load(made, animation=len(takes))


@pytest.mark.parametrize("fps", [24.0, 30000 / 1001, 120.0])
def test_frame_rates_come_back_as_written(blender: Path, tmp_path: Path, fps: float) -> None:
    """24, NTSC 29.97 and 120 fps through an FBX: Blender keeps such a rate as fps / fps_base (30 / 1.001) and its
    glTF step times keys by fps * fps_base; the rate read is the one written, the frames the same."""
    walk = resample(skelanim.load(sample_path("walk.txt")), fps)
    skelanim.save(walk, tmp_path / "walk.fbx")
    back = skelanim.load(tmp_path / "walk.fbx")
    assert back.fps == fps and back.num_frames == walk.num_frames
    _close(walk.positions().numpy(), _in_order(back, walk), f"{fps:g} fps")


@pytest.mark.parametrize("fps", [24.0, 30000 / 1001, 120.0])
def test_ufbx_reads_our_fbx_at_its_rate_where_our_kinematics_puts_every_joint(blender: Path, tmp_path: Path,
                                                                             fps: float) -> None:  # fmt: skip
    """A second reader, not Blender's: ufbx (Godot's FBX importer). Our FBX's rate is the motion's, its keys are
    1 / fps apart, its unit is the metre, and every joint stands where our forward kinematics puts it, frame by
    frame (an NTSC rate included, which Blender's own importer misplaces by 0.1 %)."""
    walk = resample(skelanim.load(sample_path("walk.txt")), fps)
    skelanim.save(walk, tmp_path / "walk.fbx")
    peer = run_ufbx(tmp_path / "walk.fbx", tmp_path)
    assert float(peer["fps"]) == pytest.approx(fps, rel=2e-6) and float(peer["unit_meters"]) == 1.0  # NTSC: "29.97"
    assert np.allclose(np.diff(peer["key_times"]), 1.0 / fps, rtol=1e-6)
    # one take, which Blender's exporter names "object|action" after the file (the clip an engine lists), and its
    # importer after its object once more (an audit found the docs saying "walk")
    assert peer["stacks"].tolist() == ["walk|walk"] and skelanim.load(tmp_path / "walk.fbx").metadata["fbx_takes"] == [
        "walk|walk|walk"
    ]
    heads = heads_by_name(peer, list(walk.skeleton.names))
    assert heads.shape[0] == walk.num_frames
    _close(walk.positions().numpy(), heads, f"ufbx at {fps:g} fps")


def test_a_bandai_take_s_fbx_runs_at_30_fps_not_blenders_reading_of_its_frame_time(blender: Path, tmp_path: Path,
                                                                                    mocap_dir: Path) -> None:  # fmt: skip
    """Bandai's ``Frame Time: 0.0333333`` is 30 fps to skelanim and 30.00003 to Blender's BVH importer: the FBX
    says 30 (a custom rate of 30.00003 had reached Unity and ufbx), and its keys are 1/30 s apart."""
    take = skelanim.load(min((mocap_dir / "bandai_namco_1").glob("*walk*.bvh")))
    assert take.fps == 30.0
    skelanim.save(take, tmp_path / "take.fbx")
    peer = run_ufbx(tmp_path / "take.fbx", tmp_path)
    assert float(peer["fps"]) == 30.0 and np.allclose(np.diff(peer["key_times"]), 1 / 30, rtol=1e-6, atol=0)


def test_convert_round_trip_through_fbx(blender: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``skelanim convert`` both ways: a Bandai-sized walk in centimetres comes back in metres, joint for joint."""
    walk = skelanim.ops.scale(_walk(), 100.0)
    skelanim.save(walk, tmp_path / "walk.bvh")
    assert run_cli(["convert", str(tmp_path / "walk.bvh"), str(tmp_path / "walk.fbx")], capsys)[0] == 0
    assert run_cli(["convert", str(tmp_path / "walk.fbx"), str(tmp_path / "back.bvh")], capsys)[0] == 0
    back = skelanim.load(tmp_path / "back.bvh")
    names = list(walk.skeleton.names)
    ours = back.positions().numpy()[:, [back.skeleton.names.index(n) for n in names]]
    _close(walk.positions().numpy() * 0.01, ours, "BVH -> FBX -> BVH")


def test_a_file_blender_cannot_import_is_one_line_naming_it(blender: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    bad = tmp_path / "bad.fbx"
    bad.write_bytes(b"Kaydara FBX Binary  \x00" + bytes(64))  # a binary FBX's first bytes, then nothing of one
    with pytest.raises(FormatError, match=r"bad\.fbx: Blender") as caught:
        skelanim.load(bad)
    assert "\n" not in str(caught.value)
    code, out, err = run_cli(["info", str(bad)], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "bad.fbx: Blender" in err, err


@pytest.mark.parametrize(("content", "message"), [
    (b"; FBX 7.4.0 project file\nFBXHeaderExtension:  {\n", "an ASCII FBX file; Blender reads binary FBX only"),
    (b"glTF\x02\x00\x00\x00", "not an FBX file"),
])  # fmt: skip
def test_what_is_no_binary_fbx_is_named_before_blender_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              content: bytes, message: str) -> None:  # fmt: skip
    """Blender had answered both with "ASCII FBX files are not supported" (a glTF renamed .fbx included)."""
    monkeypatch.setenv(fbx.BLENDER_ENV, str(tmp_path / "no-blender"))  # never reached
    (tmp_path / "odd.fbx").write_bytes(content)
    with pytest.raises(FormatError, match=rf"odd\.fbx: {message}"):
        skelanim.load(tmp_path / "odd.fbx")


def test_the_armature_and_take_are_named_after_the_file(blender: Path, tmp_path: Path) -> None:
    """Engines name a clip after its take: ``walk.fbx`` holds the armature and take ``walk`` (they had all been
    ``motion``, after the temporary BVH)."""
    skelanim.save(_walk(), tmp_path / "walk.fbx")
    peer = run_ufbx(tmp_path / "walk.fbx", tmp_path)
    takes = skelanim.load(tmp_path / "walk.fbx").metadata["fbx_takes"]
    assert all("motion" not in t and "walk" in t for t in takes), takes
    assert "walk" in [str(n) for n in peer["node_names"]]


def test_without_blender_fbx_says_how_to_get_it_and_writes_nothing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv(fbx.BLENDER_ENV, str(tmp_path / "no-blender"))
    with pytest.raises(fbx.BlenderNotFoundError, match="SKELANIM_BLENDER=.*names no file"):
        skelanim.save(_walk(), tmp_path / "walk.fbx")
    monkeypatch.delenv(fbx.BLENDER_ENV)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `blender` command
    monkeypatch.setattr(fbx.importlib.util, "find_spec", lambda name: None)  # and no bpy here
    skelanim.save(_walk(), tmp_path / "walk.bvh")
    code, _, err = run_cli(["convert", str(tmp_path / "walk.bvh"), str(tmp_path / "walk.fbx")], capsys)
    assert code == 2 and "pip install bpy" in err and err.count("\n") == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["walk.bvh"]


def test_inside_blender_the_running_blender_does_the_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Run from Blender's own Python (an add-on), bpy is importable but that Python cannot import it standalone:
    the Blender executable runs the job, in the background; with the bpy module from PyPI, this interpreter."""
    monkeypatch.delenv(fbx.BLENDER_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `blender` command
    monkeypatch.setattr(fbx.importlib.util, "find_spec", lambda name: object())
    inside = types.SimpleNamespace(app=types.SimpleNamespace(binary_path="/opt/blender-4.5/blender"))
    monkeypatch.setitem(sys.modules, "bpy", inside)
    assert fbx.blender_command()[:2] == ["/opt/blender-4.5/blender", "--background"]
    inside.app.binary_path = ""  # PyPI's bpy module
    assert fbx.blender_command() == [sys.executable]


def test_nothing_is_written_when_blender_fails(blender: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A Blender run that fails part-way leaves no FBX and no temporary file behind."""
    monkeypatch.setattr(fbx, "JOB", tmp_path / "missing_job.py")
    with pytest.raises(FormatError, match=r"out\.fbx: Blender failed"):
        skelanim.save(_walk(), tmp_path / "out.fbx")
    assert list(tmp_path.iterdir()) == []
