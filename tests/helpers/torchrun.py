"""Run a script or a ``skelanim`` command under ``torchrun --nproc-per-node 2`` (gloo on CPU, one thread per
rank) for the DDP tests; a failed run's assertion shows the ends of both its stdout and its stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def torchrun(target: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``torchrun --standalone --nproc-per-node 2 TARGET...`` and assert it succeeded.

    ``target`` is a script and its arguments, or ``["-m", "skelanim", ...]``; ``env`` adds to the environment
    (``PYTHONPATH`` gets ``src``, ``OMP_NUM_THREADS`` is 1).
    """
    full_env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
                "OMP_NUM_THREADS": "1", **(env or {})}  # fmt: skip
    # --standalone: a local rendezvous on a free port
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *target]
    done = subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"stdout ends:\n{done.stdout[-1500:]}\nstderr ends:\n{done.stderr[-3000:]}"
    return done
