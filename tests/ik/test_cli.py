"""``skelanim ik solve|export|eval|train``: end to end with the shipped model, and one-line errors (exit 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import skelanim
from skelanim.cli import main
from skelanim.io.positions import JointPositions

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def positions_file(bandai_files, tmp_path_factory) -> Path:
    """40 frames of a held-out style as .npz (names, fps)."""
    motion = skelanim.load(bandai_files[1])[:40]
    path = tmp_path_factory.mktemp("ik") / "pos.npz"
    skelanim.save(JointPositions.from_motion(motion), path)
    return path


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.mark.parametrize("refine, tolerance", [(False, 0.03), (True, 0.005)])
def test_solve_writes_a_motion_on_the_model_skeleton(positions_file, tmp_path, refine, tolerance, torch_threads):
    out = tmp_path / "out.bvh"
    assert main(["ik", "solve", str(positions_file), "-o", str(out)] + (["--refine"] if refine else [])) == 0
    motion = skelanim.load(out)
    source = skelanim.load_positions(positions_file)
    assert motion.num_frames == 40 and motion.fps == pytest.approx(source.fps)
    err = np.linalg.norm(motion.positions().numpy()[:, 1:] - source.positions[:, 1:], axis=-1)
    assert err.mean() < tolerance * motion.skeleton.height()


def test_solve_rejects_wrong_joint_count(positions_file, tmp_path, capsys):
    data = skelanim.load_positions(positions_file)
    bad = tmp_path / "bad.npz"
    skelanim.save(JointPositions(data.names[:-1], data.positions[:, :-1], fps=30), bad)
    assert main(["ik", "solve", str(bad), "-o", str(tmp_path / "x.bvh")]) == 2
    line = _error(capsys)
    assert "21 joints given" in line and "expects 22 joints" in line and "joint_Root" in line
    assert not (tmp_path / "x.bvh").exists()


def test_solve_rejects_wrong_names(positions_file, tmp_path, capsys):
    data = skelanim.load_positions(positions_file)
    bad = tmp_path / "names.npz"
    skelanim.save(JointPositions([f"J{i}" for i in range(22)], data.positions, fps=30), bad)
    assert main(["ik", "solve", str(bad), "-o", str(tmp_path / "x.bvh")]) == 2
    assert "joint names do not match" in _error(capsys)


def test_solve_rejects_nan_frames(positions_file, tmp_path, capsys):
    import torch

    from skelanim.errors import ShapeError
    from skelanim.ik import solve

    data = skelanim.load_positions(positions_file)
    array = data.positions.copy()
    array[3, 9] = np.nan
    with pytest.raises(ShapeError, match="frame 3, joint Hand_L"):
        solve(torch.from_numpy(array))
    bad = tmp_path / "nan.npy"
    np.save(bad, array)
    assert main(["ik", "solve", str(bad), "-o", str(tmp_path / "x.bvh")]) == 2
    assert "frame 3" in _error(capsys)


def test_missing_and_corrupt_model(positions_file, tmp_path, capsys):
    out = str(tmp_path / "x.bvh")
    assert main(["ik", "solve", str(positions_file), "-o", out, "--model", str(tmp_path / "nope")]) == 2
    assert "no such model folder" in _error(capsys)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    (broken / "model.safetensors").write_bytes(b"\x00" * 10)
    assert main(["ik", "solve", str(positions_file), "-o", out, "--model", str(broken)]) == 2
    assert "corrupt" in _error(capsys)


def test_eval_json_has_exactly_the_documented_keys(bandai_files, capsys, torch_threads):
    assert main(["ik", "eval", "--data", str(bandai_files[0]), "--max-frames", "16", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"frames", "methods"} and report["frames"] == 16
    names = {"gat", "gat_refined", "swing_rest", "swing_mean", "optimize_rest", "optimize_mean", "optimize_warm"}
    assert set(report["methods"]) == names
    keys = {"local_geodesic_deg", "global_geodesic_deg", "mpjpe", "mpjpe_pct_height", "poses_per_s_batch1",
            "poses_per_s_batched"}  # fmt: skip
    for values in report["methods"].values():
        assert set(values) == keys and all(np.isfinite(v) for v in values.values())
    assert report["methods"]["swing_mean"]["mpjpe_pct_height"] < 1e-6


def test_eval_table_and_unknown_method(bandai_files, capsys, torch_threads):
    assert main(["ik", "eval", "--data", str(bandai_files[0]), "--max-frames", "8", "--methods", "gat,swing_mean"]) == 0
    out = capsys.readouterr().out
    assert "local geodesic per joint" in out and "UpperArm_L" in out
    assert main(["ik", "eval", "--data", str(bandai_files[0]), "--methods", "magic"]) == 2


def test_export_onnx(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    out = tmp_path / "m.onnx"
    assert main(["ik", "export", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    line = capsys.readouterr().out
    assert float(line.rsplit(" ", 1)[1].rstrip(")\n")) <= 1e-4


def test_train_with_two_ddp_processes(bandai_files, tmp_path):
    """``torchrun --nproc-per-node 2 -m skelanim ik train`` (gloo on CPU) on a tiny set."""
    folder = bandai_files[0].parent
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "skelanim", "ik", "train", "--data", str(folder / "dataset-1_walk_*_001.bvh"), "--val", "*_happy_*",
           "--out", str(out), "--epochs", "1", "--batch-size", "16", "--max-frames-per-file", "40", "--hidden", "8",
           "--layers", "1", "--heads", "2", "--threads", "1", "--no-progress"]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["world_size"] == 2 and config["skeleton"]["names"][1] == "Hips"
    assert done.stdout.count("wrote") == 1  # only rank 0 reports
