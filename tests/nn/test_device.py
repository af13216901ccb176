"""Training on a device other than the CPU, shown with the stand-in accelerator of ``tests/helpers``
(:mod:`virtual_device`): it enforces CUDA's rules (no CPU tensor of one or more dimensions beside device
tensors, no CPU generator drawing device tensors) while computing with CPU values, so a run on it must give the
CPU run's weights bit for bit."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file
from torch import nn
from virtual_device import DEVICE, DeviceMismatch, OnDevice, VirtualDevice  # tests/helpers

from skelanim.errors import SkelanimError
from skelanim.nn.device import module_device, resolve_device, to_device
from skelanim.nn.train import TrainConfig, fit


class ToyTask:
    """Linear regression whose loss needs a tensor the task holds (as rest offsets or statistics are held)."""

    metric = "val_mse"

    def __init__(self, movable: bool = True) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(256, 4, generator=g)
        self.weights = torch.tensor([1.0, -2.0, 0.5, 3.0])
        self.y = self.x @ self.weights[:, None]
        if not movable:
            self.to_device = None  # type: ignore[assignment]

    def to_device(self, device: torch.device) -> None:
        self.weights, self.x, self.y = to_device((self.weights, self.x, self.y), device)

    def num_samples(self) -> int:
        return 256

    def batch(self, indices: torch.Tensor, generator: torch.Generator) -> dict[str, torch.Tensor]:
        return {"x": self.x[indices].cpu() + 0.01 * torch.randn(len(indices), 4, generator=generator)}

    def loss(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        target = batch["x"] @ self.weights[:, None]
        mse = ((model(batch["x"]) - target) ** 2).mean()
        return mse, {"mse": float(mse.detach())}

    @torch.no_grad()
    def validate(self, model: nn.Module) -> dict[str, float]:
        return {"val_mse": float(((model(self.x) - self.y) ** 2).mean())}

    def model_config(self) -> dict[str, bool]:
        return {"toy": True}


def _train(out, device: str, task: ToyTask | None = None, ema: float = 0.0) -> tuple[nn.Module, dict]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
    config = TrainConfig(epochs=6, batch_size=32, lr=5e-2, warmup_steps=4, progress=False, device=device, ema=ema)
    result = fit(model, task or ToyTask(), out, config, log=lambda _: None)
    return model, result


@pytest.mark.parametrize("ema", [0.0, 0.99])
def test_a_run_on_the_device_equals_the_cpu_run(tmp_path, ema):
    _, cpu_result = _train(tmp_path / "cpu", "cpu", ema=ema)
    with VirtualDevice():
        dev_model, dev_result = _train(tmp_path / "dev", "meta", ema=ema)
        assert module_device(dev_model) == torch.device("cpu")  # back on the CPU when fit returns
    assert not any(isinstance(t, OnDevice) for t in [*dev_model.parameters(), *dev_model.buffers()])
    assert dev_result["weights_sha256"] == cpu_result["weights_sha256"]
    first, last = cpu_result["history"][0]["val_mse"], cpu_result["history"][-1]["val_mse"]
    assert dev_result["history"][-1]["val_mse"] == last < 0.5 * first  # it learned, the same on both
    for name in ("model.safetensors", "train_state.safetensors"):  # written from CPU copies, identical
        a, b = load_file(tmp_path / "cpu" / name), load_file(tmp_path / "dev" / name)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_resuming_on_the_device_a_run_begun_on_the_cpu(tmp_path):
    _, whole_result = _train(tmp_path / "whole", "cpu")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
    config = TrainConfig(epochs=6, batch_size=32, lr=5e-2, warmup_steps=4, progress=False, max_steps=11)
    fit(model, ToyTask(), tmp_path / "split", config, log=lambda _: None)
    torch.manual_seed(1)  # a fresh model: the state file alone carries the run on
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
    with VirtualDevice():
        config = TrainConfig(epochs=6, batch_size=32, lr=5e-2, warmup_steps=4, progress=False, device="meta")
        result = fit(model, ToyTask(), tmp_path / "split", config, resume=True, log=lambda _: None)
    assert result["weights_sha256"] == whole_result["weights_sha256"]


def test_the_stand_in_catches_a_task_that_leaves_its_tensors_on_the_cpu(tmp_path):
    with VirtualDevice(), pytest.raises(DeviceMismatch, match="CPU tensor of shape"):
        _train(tmp_path, "meta", task=ToyTask(movable=False))


def test_the_stand_in_catches_a_cpu_generator_numpy_and_float64():
    with VirtualDevice():
        x = torch.ones(3).to(DEVICE)
        with pytest.raises(DeviceMismatch, match="generator"):
            torch.randn(3, generator=torch.Generator().manual_seed(0), device=x.device)
        with pytest.raises((RuntimeError, TypeError)):
            x.numpy()
        assert torch.equal((x * torch.tensor(2.0)).cpu(), torch.full((3,), 2.0))  # 0-dim CPU tensors are scalars
        with pytest.raises(DeviceMismatch, match="float64 on the device"):
            x.double()
    with VirtualDevice(float64=True):
        assert torch.ones(3).to(DEVICE).double().cpu().dtype == torch.float64


def test_device_names():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto") == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(SkelanimError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(SkelanimError, match="no CUDA GPU"):
            resolve_device("cuda")


@pytest.mark.parametrize(("local_rank", "expected"), [(None, "cuda:0"), ("1", "cuda:1")])
def test_a_bare_cuda_device_gets_an_index_before_it_is_made_current(monkeypatch, local_rank, expected):
    """torch.cuda.set_device refuses a device without an index; without a GPU its rule is checked by hand here."""
    from torch._utils import _get_device_index

    from skelanim.nn.device import rank_device

    made_current: list[int] = []
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: made_current.append(_get_device_index(device)))
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    if local_rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    assert rank_device(torch.device("cuda")) == torch.device(expected)
    assert made_current == [torch.device(expected).index]
    assert rank_device(torch.device("cpu")) == torch.device("cpu") and len(made_current) == 1


def test_under_torchrun_each_rank_needs_a_gpu_of_its_own(monkeypatch):
    """An explicit GPU index would put every rank on that one GPU; more ranks than GPUs leave one without."""
    from skelanim.nn.device import rank_device

    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(SkelanimError, match="each of the 3 processes takes its own GPU"):
        rank_device(torch.device("cuda", 1))
    monkeypatch.setenv("LOCAL_RANK", "2")
    with pytest.raises(SkelanimError, match="has 2 CUDA GPU"):
        rank_device(torch.device("cuda"))


@pytest.mark.parametrize(("backend", "expected"), [("gloo", "cpu"), ("nccl", "cuda:0")])
def test_collectives_hold_their_tensors_where_the_backend_reduces(monkeypatch, backend, expected):
    """NCCL reduces only GPU tensors (``any_rank`` under NCCL had made a CPU one); gloo's stay on the CPU."""
    from skelanim.nn import distributed

    monkeypatch.setattr(distributed, "backend", lambda: backend)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert distributed.collective_device() == torch.device(expected)


def test_the_stand_in_runs_inference_mode_as_no_grad():
    """Views and ``torch.as_tensor`` of device tensors under ``inference_mode`` (what inference code does) keep
    their values; ``torch.inference_mode`` is torch's own again outside."""
    real = torch.inference_mode
    with VirtualDevice():
        x = torch.arange(6.0).reshape(2, 3).to(DEVICE)
        with torch.inference_mode():
            view = torch.as_tensor(x[:, None], dtype=torch.float32)[..., None]
            assert isinstance(view, OnDevice) and torch.equal(view.cpu(), torch.arange(6.0).reshape(2, 1, 3, 1))
            assert not torch.is_grad_enabled()
    assert torch.inference_mode is real


def test_nccl_with_a_model_on_the_cpu_is_refused_before_training(tmp_path, monkeypatch):
    """NCCL reduces GPU tensors only: a run that asked for it and trains on the CPU stops with one message."""
    from skelanim.nn import distributed

    monkeypatch.setattr(distributed, "setup", lambda: True)
    monkeypatch.setattr(distributed, "backend", lambda: "nccl")
    with pytest.raises(SkelanimError, match="NCCL .* reduces GPU tensors only"):
        _train(tmp_path, "cpu")
    assert not (tmp_path / "model.safetensors").exists()


def test_auto_is_the_gpu_where_torch_sees_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(SkelanimError, match="only 1 CUDA device"):
        resolve_device("cuda:1")
