"""NKN retargeting trains and runs on a device other than the CPU (the stand-in accelerator of
``tests/helpers/virtual_device``, which enforces CUDA's device rules on CPU values): the same weights and
validation history as on the CPU, and the same retargeted clips and streams (to float rounding)."""

from __future__ import annotations

import copy

import pytest
import torch
from safetensors.torch import load_file
from virtual_device import OnDevice, VirtualDevice  # tests/helpers

from skelanim.nn.train import TrainConfig
from skelanim.retarget import Retargeter, load_nkn
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


def test_retargeting_on_a_device_gives_the_cpu_clip_and_stream(clips):
    """The shipped NKN on the device: a whole clip, and the same clip streamed frame by frame (eagerly: the
    compiled step is onnxruntime's, on the CPU), equal the CPU run's, and come back as CPU tensors."""
    source, target = clips["cmu_mb"][:24], clips["bandai"][:24]
    on_cpu = Retargeter(source, target, "nkn", fps=source.fps, floor=0.0)
    whole_cpu = on_cpu(source)
    rows_cpu = [on_cpu.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    with VirtualDevice():
        net = copy.deepcopy(load_nkn()).to("meta")
        on_device = Retargeter(source, target, "nkn", model=net, fps=source.fps, floor=0.0)
        whole = on_device(source)
        rows = [on_device.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
        by_name = Retargeter(source, target, "nkn", fps=source.fps, floor=0.0, device="meta")(source)
    assert on_device._compiled is False  # the stream ran eagerly, on the device
    assert load_nkn().head[0].weight.device.type == "cpu"  # device=: a copy of the cached model moved
    torch.testing.assert_close(by_name.rotations, whole.rotations, rtol=0, atol=0)
    for got in (whole.rotations, whole.root_positions, *rows[-1][:2]):
        assert not isinstance(got, OnDevice) and got.device.type == "cpu"
    torch.testing.assert_close(whole.rotations, whole_cpu.rotations, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(whole.root_positions, whole_cpu.root_positions, rtol=1e-5, atol=1e-4)
    for (q, root, _), (q_cpu, root_cpu, _) in zip(rows, rows_cpu, strict=True):
        dots = (q * q_cpu).sum(-1).abs()  # the CPU stream ran through onnxruntime: float32 rounding
        assert float(dots.min()) > 1 - 1e-6
        torch.testing.assert_close(root, root_cpu, rtol=1e-5, atol=1e-3)


def test_eval_runs_the_nkn_on_the_device_it_is_given(mocap_dir):
    """``evaluate(device=)`` (``retarget eval --device``): the NKN's scores on the device equal the CPU run's,
    and the cached shipped model stays on the CPU."""
    from skelanim.retarget.evaluate import evaluate

    options = {"methods": ["nkn"], "clips": 1, "max_frames": 12}
    on_cpu = evaluate(mocap_dir, **options)
    with VirtualDevice():
        on_device = evaluate(mocap_dir, **options, device="meta")
    assert load_nkn().head[0].weight.device.type == "cpu"
    assert on_device["reference"]["nkn"]["overall"] == pytest.approx(on_cpu["reference"]["nkn"]["overall"], rel=1e-4)
    for key, value in on_cpu["proportions"]["nkn"].items():
        assert on_device["proportions"]["nkn"][key] == pytest.approx(value, rel=1e-4, abs=1e-6), key
