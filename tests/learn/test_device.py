"""The learning trainers run on a device other than the CPU (the stand-in accelerator of
``tests/helpers/virtual_device``, which enforces CUDA's device rules on CPU values): the same weights and
validation scores as on the CPU, to float rounding (on the stand-in a GRU runs as its decomposition)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from virtual_device import VirtualDevice  # tests/helpers

from skelanim.learn.generate_train import train_generator
from skelanim.learn.predict import train_predictor
from skelanim.learn.recognize import Recognizer
from skelanim.learn.recognize_train import train_recognizer
from skelanim.nn.train import TrainConfig

TINY = {"channels": (8, 8), "strides": (1, 2)}


def _loop(device: str) -> TrainConfig:
    return TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, device=device)


def _recognizer(arch: str) -> Callable[..., dict]:
    def run(ds, out: Path, device: str) -> dict:
        options = TINY if arch == "stgcn" else {"channels": (8, 8), "strides": (1, 2)}
        return train_recognizer(ds, ds.subset([0, 4]), out, arch=arch, window=32, stride=16, loop=_loop(device),
                                arch_options=options, amplitude=(0.8, 1.2), posture=2.0, frame_jitter=1.0,
                                test_mirror=True)  # fmt: skip

    return run


def _predictor(arch: str) -> Callable[..., dict]:
    def run(ds, out: Path, device: str) -> dict:
        options = {"hidden": 16} if arch != "mlp" else None
        return train_predictor(ds, ds.subset([0, 4]), out, arch=arch, stride=25, loop=_loop(device),
                               arch_options=options, test_mirror=True)  # fmt: skip

    return run


def _generator(ds, out: Path, device: str) -> dict:
    """Both stages, with the validation FID and the frozen recogniser's term (an untrained one is enough here)."""
    torch.manual_seed(0)
    recognizer = Recognizer("stgcn", ds.rig, sorted(set(ds.labels("content"))), sorted(set(ds.labels("style"))),
                            window=16, fps=ds.fps, arch_options=TINY, test_mirror=True).eval()  # fmt: skip
    reference = torch.randn(40, recognizer.net.feature_dim, generator=torch.Generator().manual_seed(0))
    return train_generator(ds, out, length=16, stride=16, vae_loop=_loop(device), gan_loop=_loop(device),
                           options={"latent": 8, "hidden": 32, "embed": 4}, embed=recognizer.embed_arrays,
                           reference=reference, recognizer=recognizer, weights={"recognition": 0.5})  # fmt: skip


TRAINERS = {"recognize-stgcn": _recognizer("stgcn"), "recognize-cnn": _recognizer("cnn"), "predict-rnn": _predictor("rnn"),
            "predict-gcn": _predictor("gcn"), "predict-mlp": _predictor("mlp"), "generate": _generator}  # fmt: skip


def _scores(result: dict) -> list[dict[str, float]]:
    return [{k: v for k, v in epoch.items() if k != "seconds" and isinstance(v, float)} for epoch in result["history"]]


@pytest.mark.parametrize("name", TRAINERS)
def test_training_on_a_device_gives_the_cpu_weights(tiny_ds, tmp_path, name):
    torch.manual_seed(0)
    on_cpu = TRAINERS[name](tiny_ds, tmp_path / "cpu", "cpu")
    torch.manual_seed(0)
    with VirtualDevice():
        on_device = TRAINERS[name](tiny_ds, tmp_path / "device", "meta")
    cpu_weights = load_file(tmp_path / "cpu" / "model.safetensors")
    device_weights = load_file(tmp_path / "device" / "model.safetensors")
    assert cpu_weights.keys() == device_weights.keys()
    for key, weight in cpu_weights.items():
        torch.testing.assert_close(device_weights[key], weight, rtol=1e-4, atol=1e-5, msg=key)
    results = [(on_cpu, on_device)] if name != "generate" else [(on_cpu["vae"], on_device["vae"]), (on_cpu["gan"], on_device["gan"])]
    for cpu_result, device_result in results:
        for cpu_epoch, device_epoch in zip(_scores(cpu_result), _scores(device_result), strict=True):
            assert cpu_epoch.keys() == device_epoch.keys()
            for key, value in cpu_epoch.items():
                assert device_epoch[key] == pytest.approx(value, rel=1e-3, abs=1e-6), key
