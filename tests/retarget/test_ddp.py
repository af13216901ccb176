"""``torchrun --nproc-per-node 2 -m skelanim retarget train`` (gloo on CPU) on two families, a few steps: the
run succeeds, rank 0 alone reports, the ranks end with identical weights (checked by
:func:`skelanim.nn.fit`; ``tests/nn/test_ddp.py`` shows the check fails when gradients are not averaged),
and the written model loads and retargets."""

from __future__ import annotations

import json

import torch
from torchrun import torchrun  # tests/helpers

from skelanim.retarget import Retargeter, load_nkn


def test_train_with_two_ddp_processes(mocap_dir, clips, tmp_path):
    out = tmp_path / "nkn"
    done = torchrun(["-m", "skelanim", "retarget", "train", "--data", str(mocap_dir), "--families", "bandai,deepmimic",
                     "--max-files", "2", "-o", str(out), "--epochs", "2", "--samples", "16", "--batch-size", "4",
                     "--hidden", "8", "--window", "16", "--threads", "1", "--no-progress"],
                    {"SKELANIM_CACHE": str(tmp_path / "cache")})  # fmt: skip
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
