"""The file commands end to end: info, convert, positions, and one-line errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import skelanim
from skelanim.cli import main
from skelanim.data.samples import sample_path


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_info_json_on_bundled_sample(capsys):
    code, out, _ = run(["info", str(sample_path("walk")), "--json"], capsys)
    assert code == 0
    facts = json.loads(out)
    motion = skelanim.load(sample_path("walk"))
    assert facts["joints"] == motion.skeleton.num_joints == 13
    assert facts["frames"] == motion.num_frames
    assert facts["fps"] == pytest.approx(motion.fps)
    assert facts["up_axis"] == "Y"
    assert facts["duration_s"] == pytest.approx((motion.num_frames - 1) / motion.fps)


def test_info_text_on_real_bvh(mocap_dir: Path, capsys):
    code, out, _ = run(["info", str(mocap_dir / "pymo_demo" / "AV_8Walk_Meredith_HVHA_Rep1.bvh")], capsys)
    assert code == 0
    assert "XYZ" in out and "joints: 23" in out.replace("  ", " ").replace(" :", ":")


@pytest.mark.parametrize(
    "relative,up,units",
    [("bandai_namco_1/dataset-1_walk_normal_001.bvh", "Y", "cm"), ("cmu_iclone_ccrig/001_01.bvh", "Y", "cm"),
     ("pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh", "Y", "in"), ("cmu_cgspeed_mb/01_01.bvh", "Y", "cmu")],
)
def test_info_guesses(mocap_dir: Path, capsys, relative, up, units):
    code, out, _ = run(["info", str(mocap_dir / relative), "--json"], capsys)
    facts = json.loads(out)
    assert code == 0 and facts["up_axis"] == up and facts["units_guess"] == units


def test_convert_resample_and_scale(tmp_path: Path, mocap_dir: Path, capsys):
    src = mocap_dir / "cmu_cgspeed_mb" / "01_01.bvh"
    dst = tmp_path / "out.bvh"
    code, _, err = run(["convert", str(src), str(dst), "--fps", "30", "--scale", "2"], capsys)
    assert code == 0, err
    original, converted = skelanim.load(src), skelanim.load(dst)
    assert converted.fps == pytest.approx(30)
    assert converted.duration == pytest.approx(original.duration, abs=1 / 30)
    assert converted.skeleton.height() == pytest.approx(2 * original.skeleton.height(), rel=1e-6)
    # every 4th frame of the 120 fps original is a 30 fps frame
    assert np.allclose(converted.positions()[10].numpy(), 2 * original.positions()[40].numpy(), atol=1e-3)


def test_convert_between_formats(tmp_path: Path, capsys):
    src = sample_path("run")
    for suffix in (".bvh", ".txt", ".npz", ".csv"):
        code, _, err = run(["convert", str(src), str(tmp_path / f"run{suffix}")], capsys)
        assert code == 0, err
    original, written = skelanim.load(src), skelanim.load(tmp_path / "run.bvh")
    # BVH stores joints depth-first, so the order may change: compare joint by joint, by name.
    order = [written.skeleton.index(name) for name in original.skeleton.names]
    assert float((original.positions() - written.positions()[:, order]).abs().max()) < 1e-5


def test_positions_npz_loads_without_pickle(tmp_path: Path, capsys):
    out = tmp_path / "walk.npz"
    code, _, err = run(["positions", str(sample_path("walk")), "-o", str(out), "--end-sites"], capsys)
    assert code == 0, err
    with np.load(out, allow_pickle=False) as data:
        positions, joints = data["positions"], data["joints"]
    motion = skelanim.load(sample_path("walk"))
    assert positions.shape == (motion.num_frames, motion.skeleton.num_joints + len(motion.skeleton.end_sites), 3)
    assert list(joints[: motion.skeleton.num_joints]) == motion.skeleton.names
    assert np.allclose(positions[:, : motion.skeleton.num_joints], motion.positions().numpy())


BAD_BVH = "HIERARCHY\nROOT Hips\n{\n\tOFFSET 0 0 0\n\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation\n}\nMOTION\nFrames: 2\nFrame Time: 0.033333\n0 0 0 0 0 0\n0 0 0 0 0\n"


@pytest.mark.parametrize(
    "name,content,expect",
    [
        ("short.bvh", BAD_BVH, "short.bvh:11:"),
        ("nan.bvh", BAD_BVH.replace("0 0 0 0 0\n0 0 0 0 0\n", "0 0 0 0 0\n0 0 nan 0 0 0\n"), "nan.bvh:11:"),
        ("junk.bvh", "\x00\xff\xfe binary junk", "junk.bvh"),
        ("motion.xyz", "whatever", "unknown suffix"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path: Path, capsys, name, content, expect):
    src = tmp_path / name
    src.write_bytes(content.encode("latin-1"))
    dst = tmp_path / "never.bvh"
    for argv in (["info", str(src)], ["convert", str(src), str(dst)], ["positions", str(src), "-o", str(dst)]):
        code, out, err = run(argv, capsys)
        assert code == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expect in lines[0], err
        assert "Traceback" not in err
    assert not dst.exists() and sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_missing_file(tmp_path: Path, capsys):
    code, _, err = run(["info", str(tmp_path / "absent.bvh")], capsys)
    assert code == 2 and err.startswith("error: ") and "absent.bvh" in err and len(err.strip().splitlines()) == 1


def test_help_documents_every_command(capsys):
    code, out, _ = run(["--help"], capsys)
    assert code == 0
    for command in ("info", "convert", "positions", "demo"):
        assert command in out
