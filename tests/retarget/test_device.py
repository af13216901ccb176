"""NKN retargeting trains on a device other than the CPU (the stand-in accelerator of
``tests/helpers/virtual_device``, which enforces CUDA's device rules on CPU values): the same weights and
validation history as on the CPU (to float rounding)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from virtual_device import VirtualDevice  # tests/helpers

from skelanim.nn.train import TrainConfig
from skelanim.retarget.model import NKNConfig
from skelanim.retarget.train import train


def _train(mocap_dir, out, device: str) -> dict:
    loop = TrainConfig(epochs=2, batch_size=4, lr=1e-3, warmup_steps=2, progress=False, device=device)
    return train(mocap_dir, out, loop=loop, config=NKNConfig(hidden=8), families=["bandai", "deepmimic"], max_files=2,
                 window=16, samples=8, log=lambda _: None)  # fmt: skip


def test_training_on_a_device_gives_the_cpu_weights(mocap_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SKELANIM_CACHE", str(tmp_path / "cache"))
    on_cpu = _train(mocap_dir, tmp_path / "cpu", "cpu")
    with VirtualDevice():
        on_device = _train(mocap_dir, tmp_path / "device", "meta")
    # not bit for bit: on the stand-in nn.GRU runs as its decomposition into matrix products, not the CPU's kernel
    cpu_weights, device_weights = load_file(tmp_path / "cpu" / "model.safetensors"), load_file(tmp_path / "device" / "model.safetensors")
    assert cpu_weights.keys() == device_weights.keys()
    for name, weight in cpu_weights.items():
        torch.testing.assert_close(device_weights[name], weight, rtol=1e-4, atol=1e-5, msg=name)
    for cpu_epoch, device_epoch in zip(on_cpu["history"], on_device["history"], strict=True):
        for key in ("val_total", "val_rec", "val_cyc", "train_loss"):
            assert device_epoch[key] == pytest.approx(cpu_epoch[key], rel=1e-4), key
