"""Blender as the peer for BVH and glTF, both ways (``tests/helpers/blender.py`` says where its ``bpy`` lives).

Blender's importers are what an animator opens our files with, and its exporters write the files a game pipeline
hands us, so each direction is checked on joint world positions, frame by frame, against a method that shares no
code with ours: Blender's own parser, its pose evaluation and its exporters.

* Blender reads each capture source's BVH as we do (every BVH folder of the real data: Bandai, CMU in three
  exporters' dialects, iClone, pymo, Xia), and a file of two figures;
* Blender reads the BVH and the glTF we write (an edited real take, the bundled DeepMimic clip, and a Z-up figure,
  which our glTF turns to Y up and Blender's importer turns back);
* we read the BVH and the glTF Blender writes, including an armature object moved, turned and scaled, and bones
  re-oriented by its importer;
* docs/engines.md's BVH → FBX recipe keeps every joint where it was.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pygltflib
import pytest
from blender import heads_by_name, run_blender, y_up_to_z_up, z_up_to_y_up  # tests/helpers
from bvh_text import two_figures  # tests/helpers
from cli_output import run_cli  # tests/helpers

import skelanim
from skelanim import Motion
from skelanim.data.samples import sample_path
from skelanim.io.bvh_parse import SCENE_ROOT
from skelanim.ops import mirror, resample, turned_up

#: One BVH per capture source of the real data: the first file, sorted, of each folder that holds BVH.
SOURCES = ["bandai_namco_1", "bandai_namco_2", "cmu_cgspeed_max", "cmu_cgspeed_mb", "cmu_iclone_ccrig", "pymo_demo",
           "xia_style"]  # fmt: skip
#: Positions agree to this share of the figure's extent (the largest difference seen is 2.4e-6: iClone's take,
#: 4e-4 cm, from Blender's float32 pose evaluation).
TOLERANCE = 2e-5


def _extent(points: np.ndarray) -> float:
    """The largest extent of a point cloud along any axis; ``points`` (..., 3)."""
    flat = points.reshape(-1, 3)
    return float((flat.max(axis=0) - flat.min(axis=0)).max())


def _assert_same(ours: np.ndarray, blender: np.ndarray, what: str) -> None:
    """``ours`` and ``blender`` (F, J, 3) agree to :data:`TOLERANCE` of the figure's extent."""
    assert ours.shape == blender.shape, f"{what}: shapes {ours.shape} and {blender.shape}"
    worst = float(np.abs(ours - blender).max())
    assert worst <= TOLERANCE * _extent(ours), f"{what}: joints differ by up to {worst:.3g} (extent {_extent(ours):.3g})"


def _deepmimic_clip() -> Motion:
    """The bundled DeepMimic walk at exactly 30 fps (its file says 30.0012; Blender's scenes run at whole rates)."""
    return resample(skelanim.load(sample_path("walk.txt")), 30.0)


@pytest.mark.parametrize("source", SOURCES)
def test_blender_reads_each_sources_bvh_as_we_do(mocap_dir: Path, tmp_path: Path, source: str) -> None:
    files = sorted((mocap_dir / source).rglob("*.bvh"))
    assert files, f"no BVH under {mocap_dir / source}"
    ours = skelanim.load(files[0])
    stride = max(1, ours.num_frames // 300)
    job = run_blender({"import": {"path": str(files[0]), "format": "bvh"}, "stride": stride}, tmp_path)
    assert job["frames"][0] == 1 and len(job["frames"]) == len(range(0, ours.num_frames, stride)), job["frames"][[0, -1]]
    assert abs(float(job["fps"]) - ours.fps) < 1e-3 * ours.fps
    expected = ours.positions().numpy()[job["frames"] - 1]
    _assert_same(expected, heads_by_name(job, list(ours.skeleton.names)), f"{files[0].name}, read by Blender")


def test_blender_reads_a_bvh_of_two_figures_and_ours_as_we_do(mocap_dir: Path, tmp_path: Path) -> None:
    """Xia's angry walk and CMU's 01_01 as two ROOTs of one file, and our writing of what we read of it: Blender
    puts both figures' joints where we do and names the second figure's repeated joints ``.001`` as we do."""
    texts = [(mocap_dir / name).read_text() for name in ("xia_style/angry_13_000.bvh", "cmu_cgspeed_mb/01_01.bvh")]
    (tmp_path / "two.bvh").write_text(two_figures(*texts, 40))
    with pytest.warns(UserWarning, match="joint name"):
        scene = skelanim.load(tmp_path / "two.bvh")
    skelanim.save(scene, tmp_path / "ours.bvh")
    names = [n for n in scene.skeleton.names if n != SCENE_ROOT]
    assert "Hips.001" in names
    ours = scene.positions().numpy()[:, [scene.skeleton.names.index(n) for n in names]]
    for path in (tmp_path / "two.bvh", tmp_path / "ours.bvh"):
        job = run_blender({"import": {"path": str(path), "format": "bvh"}}, tmp_path)
        assert sorted(str(b) for b in job["names"]) == sorted(names)
        _assert_same(ours, heads_by_name(job, names), f"{path.name}, two figures, read by Blender")


def test_blender_reads_the_bvh_we_write_of_an_edited_take(mocap_dir: Path, tmp_path: Path) -> None:
    """A Bandai take resampled from 30 to 24 fps and mirrored: rotations and root path our ops computed."""
    take = skelanim.load(min((mocap_dir / "bandai_namco_1").glob("*walk*.bvh")))
    edited = mirror(resample(take, 24.0))
    skelanim.save(edited, tmp_path / "edited.bvh")
    job = run_blender({"import": {"path": str(tmp_path / "edited.bvh"), "format": "bvh"}}, tmp_path)
    assert float(job["fps"]) == pytest.approx(24.0, rel=1e-4)
    _assert_same(edited.positions().numpy(), heads_by_name(job, list(edited.skeleton.names)), "edited take")


def test_blender_reads_the_bvh_we_write_of_a_deepmimic_clip(tmp_path: Path) -> None:
    """A DeepMimic clip (no BVH in its past: spherical joints as quaternions, revolute knees and elbows)."""
    clip = _deepmimic_clip()
    skelanim.save(clip, tmp_path / "walk.bvh")
    job = run_blender({"import": {"path": str(tmp_path / "walk.bvh"), "format": "bvh"}}, tmp_path)
    _assert_same(clip.positions().numpy(), heads_by_name(job, list(clip.skeleton.names)), "DeepMimic clip as BVH")


def _glb_as_blender_sees_it(motion: Motion, tmp_path: Path, metres_per_unit: float) -> tuple[np.ndarray, np.ndarray]:
    """Our GLB of ``motion`` imported by Blender: (expected, Blender's) joint positions in Blender's world (F, J, 3).
    The expectation is our forward kinematics in metres, turned from Y up to Blender's Z up."""
    assert motion.fps == round(motion.fps)
    path = tmp_path / "clip.glb"
    skelanim.save(motion, path, scale=metres_per_unit)
    job = run_blender({"import": {"path": str(path), "format": "gltf", "fps": round(motion.fps)}}, tmp_path)
    assert job["frames"][0] == 0 and len(job["frames"]) == motion.num_frames, job["frames"][[0, -1]]
    return motion.positions().numpy() * metres_per_unit, heads_by_name(job, list(motion.skeleton.names))


def test_blender_reads_the_glb_we_write_of_a_real_take(mocap_dir: Path, tmp_path: Path) -> None:
    take = skelanim.load(min((mocap_dir / "bandai_namco_1").glob("*run*.bvh")))  # Y up, centimetres
    ours, blender = _glb_as_blender_sees_it(take, tmp_path, 0.01)
    _assert_same(y_up_to_z_up(ours), blender, "Bandai take as GLB")


def test_blender_reads_the_glb_we_write_of_a_deepmimic_clip(tmp_path: Path) -> None:
    clip = _deepmimic_clip()
    ours, blender = _glb_as_blender_sees_it(clip, tmp_path, 1.0)
    _assert_same(y_up_to_z_up(ours), blender, "DeepMimic clip as GLB")


def test_a_z_up_figure_lands_in_blender_as_it_stands(tmp_path: Path) -> None:
    """Our glTF turns a Z-up source to glTF's Y up; Blender's importer turns Y up to its Z up: the two turns
    cancel, so Blender shows the Z-up figure's own coordinates (in metres)."""
    clip, _ = turned_up(_deepmimic_clip(), 2)
    assert clip.up_axis() == 2
    ours, blender = _glb_as_blender_sees_it(clip, tmp_path, 1.0)
    _assert_same(ours, blender, "Z-up clip as GLB")


def _blender_round_trip(tmp_path: Path, source: Path, export: dict, bone_heuristic: str = "BLENDER",
                        **spec: object) -> tuple[Motion, np.ndarray]:
    """Blender imports ``source`` (a glTF at its rate, with ``bone_heuristic``) and exports it as ``export`` says;
    return our reading of Blender's file and Blender's own joint positions (its world, Z up) at every frame."""
    import_spec = {"path": str(source), "format": "bvh" if source.suffix == ".bvh" else "gltf",
                   "fps": round(skelanim.load(source).fps),
                   "bone_heuristic": bone_heuristic}
    job = run_blender({"import": import_spec, "export": export, **spec}, tmp_path)
    ours = skelanim.load(export["path"])
    assert ours.num_frames == len(job["frames"]), (ours.num_frames, job["frames"][[0, -1]])
    return ours, heads_by_name(job, list(ours.skeleton.names))


@pytest.mark.parametrize("rotate_mode", ["NATIVE", "XYZ", "YXZ"])
def test_we_read_the_bvh_blender_writes(tmp_path: Path, rotate_mode: str) -> None:
    """Blender's BVH exporter: six channels on every joint, rest offsets of its own bones, the rotation order
    asked for (``NATIVE`` keeps the source's ZXY, the others re-order every joint's channels)."""
    skelanim.save(_deepmimic_clip(), tmp_path / "walk.bvh")
    out = tmp_path / "blender.bvh"
    ours, blender = _blender_round_trip(tmp_path, tmp_path / "walk.bvh",
                                        {"path": str(out), "format": "bvh", "rotate_mode": rotate_mode})  # fmt: skip
    assert "CHANNELS 6" in out.read_text().split("MOTION")[0].split("JOINT", 2)[1]
    _assert_same(ours.positions().numpy(), blender, f"Blender's BVH ({rotate_mode})")


def test_we_read_the_glb_blender_writes_of_a_placed_armature(tmp_path: Path) -> None:
    """The armature object moved, turned 90 degrees about X (as an FBX import leaves it) and scaled by 0.01:
    Blender writes that as a parent node's transform, which our reader must apply to every joint."""
    skelanim.save(_deepmimic_clip(), tmp_path / "walk.bvh")
    ours, blender = _blender_round_trip(tmp_path, tmp_path / "walk.bvh",
                                        {"path": str(tmp_path / "blender.glb"), "format": "glb"},
                                        object={"location": [1.5, -2.0, 0.25], "rotation_deg": [90, 0, 30],
                                                "scale": [0.01, 0.01, 0.01]})  # fmt: skip
    _assert_same(ours.positions().numpy(), z_up_to_y_up(blender), "Blender's GLB of a placed armature")


@pytest.mark.parametrize("bone_heuristic", ["TEMPERANCE", "FORTUNE"])
def test_we_read_the_glb_blender_writes_with_reoriented_bones(tmp_path: Path, bone_heuristic: str) -> None:
    """Blender's glTF importer points each bone at its child (its rest rotations change) and its exporter writes
    those bones back: the joints' rest rotations are then far from identity."""
    skelanim.save(_deepmimic_clip(), tmp_path / "walk.glb")
    ours, blender = _blender_round_trip(tmp_path, tmp_path / "walk.glb",
                                        {"path": str(tmp_path / "blender.glb"), "format": "glb"},
                                        bone_heuristic)  # fmt: skip
    rest = pygltflib.GLTF2().load(str(tmp_path / "blender.glb"))
    turns = [2 * np.degrees(np.arccos(min(1.0, abs(n.rotation[3])))) for n in rest.nodes if n.rotation]
    assert max(turns) > 45, f"Blender wrote rest rotations of at most {max(turns):.1f} degrees"
    _assert_same(ours.positions().numpy(), z_up_to_y_up(blender), f"Blender's GLB ({bone_heuristic} bones)")


def test_docs_bvh_to_fbx_recipe_keeps_every_joint(mocap_dir: Path, tmp_path: Path) -> None:
    """docs/engines.md's way to an FBX for Unity's Humanoid or Unreal: Blender imports the BVH at 0.01 (cm to m),
    forward -Z, up Y, and exports an FBX of the armature, baked with simplify 0, without leaf bones, FBX units scale. The FBX, read
    back into a fresh Blender, puts every joint where our forward kinematics does, in metres and Z up."""
    take_path = min((mocap_dir / "bandai_namco_1").glob("*walk*.bvh"))
    take = skelanim.load(take_path)
    expected = y_up_to_z_up(take.positions().numpy() * 0.01)
    names = list(take.skeleton.names)
    fbx = tmp_path / "walk.fbx"
    imported = run_blender({"import": {"path": str(take_path), "format": "bvh", "scale": 0.01, "axes": "y_up"},
                            "export": {"path": str(fbx), "format": "fbx"}}, tmp_path)  # fmt: skip
    _assert_same(expected, heads_by_name(imported, names), "the BVH as docs/engines.md imports it")
    again = run_blender({"import": {"path": str(fbx), "format": "fbx"}}, tmp_path)
    assert len(again["frames"]) == take.num_frames, again["frames"][[0, -1]]
    _assert_same(expected, heads_by_name(again, names), "the FBX of docs/engines.md's recipe, read back")


def test_convert_take_picks_an_animation_of_a_glb_blender_writes(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Blender writes a GLB of two animations (the walk, and a copy with the root moved): ``convert --take`` reads
    either by index or name, as ``skelanim.load(..., animation=)`` does; the two differ by the move."""
    skelanim.save(_deepmimic_clip(), tmp_path / "walk.bvh")
    run_blender({"import": {"path": str(tmp_path / "walk.bvh"), "format": "bvh"},
                 "second_take": {"name": "shifted", "bone": "root", "offset": [0.3, 0.0, 0.4]},
                 "export": {"path": str(tmp_path / "two.glb"), "format": "glb"}}, tmp_path)  # fmt: skip
    names = [a.name for a in pygltflib.GLTF2().load(str(tmp_path / "two.glb")).animations]
    assert len(names) == 2, names
    for take in ("1", names[0]):
        code, _, err = run_cli(["convert", str(tmp_path / "two.glb"), str(tmp_path / "out.npz"), "--take", take],
                               capsys)  # fmt: skip
        assert code == 0, err
        chosen = skelanim.load(tmp_path / "two.glb", animation=int(take) if take.isdigit() else take)
        assert np.allclose(np.load(tmp_path / "out.npz")["positions"], chosen.positions().numpy(), atol=1e-6)
    first, second = (skelanim.load(tmp_path / "two.glb", animation=k).positions().numpy() for k in (0, 1))
    assert np.linalg.norm((second - first)[0, 0]) == pytest.approx(0.5, abs=1e-4)
