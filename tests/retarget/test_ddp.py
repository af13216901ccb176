"""``torchrun --nproc-per-node 2 -m skelanim retarget train`` (gloo on CPU) on two families, a few steps: the
run succeeds, rank 0 alone reports, the ranks end with identical weights (checked by
:func:`skelanim.nn.fit`; ``tests/nn/test_ddp.py`` shows the check fails when gradients are not averaged),
and the written model loads and retargets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from skelanim.retarget import Retargeter, load_nkn

REPO = Path(__file__).resolve().parents[2]


def test_train_with_two_ddp_processes(mocap_dir, clips, tmp_path):
    out = tmp_path / "nkn"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1", "SKELANIM_CACHE": str(tmp_path / "cache")}  # fmt: skip
    # --standalone: a local rendezvous on a free port
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "skelanim",
           "retarget", "train", "--data", str(mocap_dir), "--families", "bandai,deepmimic", "--max-files", "2",
           "-o", str(out), "--epochs", "2", "--samples", "16", "--batch-size", "4", "--hidden", "8", "--window", "16",
           "--threads", "1", "--no-progress"]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("ranks hold identical weights") == 1
    assert done.stdout.count("wrote") == 1  # rank 0 only
    config = json.loads((out / "config.json").read_text())
    # 16 samples / (4 x 2 ranks) = 2 steps per epoch
    assert config["training"]["world_size"] == 2 and len(config["training"]["history"]) == 2
    net = load_nkn(out)
    assert net.config.hidden == 8
    motion = clips["cmu_mb"][:10]
    result = Retargeter(motion.skeleton, clips["bandai"].skeleton, "nkn", model=net)(motion)
    assert torch.isfinite(result.rotations).all()
