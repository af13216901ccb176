"""The benchmarks without their data: one error line naming the missing path and exit status 2 (an audit: three of
them had ended in a traceback, one printed its complaint to stdout). ``rotations.py`` reads no data (it draws random
rotations): it is run on a tiny batch instead, and without a peer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from needs import peer_library

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
#: Benchmarks that read no mocap data.
WITHOUT_DATA = {"rotations.py"}


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("[!_]*.py") if p.name not in WITHOUT_DATA))
def test_a_benchmark_without_its_data_says_so_in_one_line(script, tmp_path):
    missing = tmp_path / "no-mocap"
    done = subprocess.run([sys.executable, str(BENCHMARKS / script)], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "SKELANIM_DATA": str(missing)}, cwd=tmp_path)  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {missing}"), done.stderr[-600:]
    assert "SKELANIM_DATA" in lines[0] and "Traceback" not in done.stderr


def _rotations(tmp_path: Path, *args: str, hide_roma: bool = False) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if hide_roma:  # a module named roma that fails to import, found before the installed one
        (tmp_path / "roma.py").write_text('raise ImportError("hidden by the test")\n')
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(BENCHMARKS / "rotations.py"), "--count", "300", "--repeats", "1", *args],
                          capture_output=True, text=True, timeout=300, check=False, env=env, cwd=tmp_path)  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_rotations_benchmark_agrees_with_its_peers_and_prints_the_table(dtype, tmp_path):
    peer_library("roma")  # a test extra: skips without it, fails in CI
    done = _rotations(tmp_path, "--dtype", dtype)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "TOO LARGE" not in done.stdout and "Traceback" not in done.stderr
    table = done.stdout.split("\nconversion")[1].splitlines()
    assert table[0].split() == ["skelanim", "roma", "scipy", "roma/sk", "scipy/sk"]
    names = [line[:24].strip() for line in table[1:12]]
    assert names[:2] == ["quat -> matrix", "matrix -> quat"] and names[-1] == "quat slerp (t = 0.3)"
    assert len(table[1].split()) == 8  # quat -> matrix: name (3 words), three times, two ratios


def test_the_rotations_benchmark_without_a_peer_stops_unless_told_to_leave_it_out(tmp_path):
    done = _rotations(tmp_path, hide_roma=True)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: peer roma"), done.stderr[-600:]
    done = _rotations(tmp_path, "--allow-missing-peers", hide_roma=True)
    assert done.returncode == 0, done.stderr[-600:]
    assert "roma is not installed" in done.stdout and "roma/sk" not in done.stdout and "scipy/sk" in done.stdout


def test_the_smoothing_benchmark_agrees_before_and_after_and_prints_the_table(mocap_dir, tmp_path):
    done = subprocess.run([sys.executable, str(BENCHMARKS / "smoothing.py"), "--frames", "3000", "--repeats", "1"],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "SKELANIM_DATA": str(mocap_dir)}, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "TOO LARGE" not in done.stdout and "Traceback" not in done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("rotations ", "positions "))]
    assert [row[:3] for row in rows] == [["rotations", "take", "2,752"], ["positions", "take", "2,752"],
                                         ["rotations", "tiled", "3,000"], ["positions", "tiled", "3,000"]]  # fmt: skip
    assert all(float(row[-1]) <= 1e-5 and row[5].endswith("x") for row in rows)
