"""The benchmarks without their data: one error line naming the missing path and exit status 2 (an audit: three of
them had ended in a traceback, one printed its complaint to stdout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.parametrize("script", sorted(p.name for p in BENCHMARKS.glob("[!_]*.py")))
def test_a_benchmark_without_its_data_says_so_in_one_line(script, tmp_path):
    missing = tmp_path / "no-mocap"
    done = subprocess.run([sys.executable, str(BENCHMARKS / script)], capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "SKELANIM_DATA": str(missing)}, cwd=tmp_path)  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"error: {missing}"), done.stderr[-600:]
    assert "SKELANIM_DATA" in lines[0] and "Traceback" not in done.stderr
