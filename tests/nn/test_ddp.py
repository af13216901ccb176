"""The shared loop under ``torchrun --nproc-per-node 2`` (gloo on CPU): gradients are averaged (both ranks end
with the same weights although their batches differ), parameters without gradient are detected, and a task
that bypasses the DDP wrapper is caught by the end-of-training weight check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from safetensors.torch import load_file
from torchrun import torchrun  # tests/helpers

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch
    from torch import nn
    from safetensors.torch import save_file
    from skelanim.nn import distributed as ddp
    from skelanim.errors import TrainingError
    from skelanim.nn.train import TrainConfig, fit

    torch.set_num_threads(1)
    out = sys.argv[1]

    class Toy(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
            self.unused = nn.Linear(3, 3)  # never called: DDP needs find_unused_parameters

        def forward(self, x):
            return self.body(x)

    class ToyTask:
        metric = "val_mse"

        def __init__(self, bypass=False):
            g = torch.Generator().manual_seed(0)
            self.x = torch.randn(512, 4, generator=g)
            self.y = self.x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1
            self.bypass = bypass

        def num_samples(self):
            return 512

        def batch(self, indices, generator):
            return {"x": self.x[indices], "y": self.y[indices] + 0.01 * torch.randn(len(indices), 1, generator=generator)}

        def loss(self, model, batch):
            if self.bypass:  # calls the wrapped module directly: DDP never sees the forward
                model = model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model
            return ((model(batch["x"]) - batch["y"]) ** 2).mean(), {}

        @torch.no_grad()
        def validate(self, model):
            return {"val_mse": float(((model(self.x) - self.y) ** 2).mean())}

        def model_config(self):
            return {"toy": True}

    torch.manual_seed(0)
    model = Toy()
    before = ToyTask().validate(model)["val_mse"]
    cfg = TrainConfig(epochs=3, batch_size=16, lr=1e-2, warmup_steps=5, progress=False)
    result = fit(model, ToyTask(), os.path.join(out, "good"), cfg, log=print)
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, os.path.join(out, f"rank{ddp.rank()}.safetensors"))
    torch.manual_seed(0)
    try:
        fit(Toy(), ToyTask(bypass=True), os.path.join(out, "bad"), cfg, log=print)
        caught = ""
    except RuntimeError as err:
        caught = str(err)

    class Diverging(ToyTask):  # rank 1's loss turns NaN at its third step
        steps = 0

        def loss(self, model, batch):
            loss, parts = super().loss(model, batch)
            self.steps += 1
            return (loss * float("nan") if self.steps >= 3 and ddp.rank() == 1 else loss), parts

    class NanValidation(ToyTask):  # validated by rank 0 alone, at a max_steps stop inside the first epoch
        def validate(self, model):
            return {"val_mse": float("nan")}

    stopped = []
    for name, task, steps in (("diverged", Diverging(), None), ("nan_val", NanValidation(), 3)):
        try:
            fit(Toy(), task, os.path.join(out, name), TrainConfig(**{**cfg.__dict__, "max_steps": steps}), log=print)
            stopped.append("")
        except TrainingError as err:  # every rank, or one rank had waited for the other for ever
            stopped.append(str(err))
    with open(os.path.join(out, f"rank{ddp.rank()}.json"), "w") as f:
        json.dump({"before": before, "best": result["best"]["val_mse"], "world": result["world_size"],
                   "find_unused": result["find_unused_parameters"], "steps": result["steps"], "caught": caught,
                   "stopped": stopped}, f)
    ddp.exit_worker(0)  # leave the group and skip finalization (what the CLI does)
    """
)


def test_two_ranks_average_gradients_and_agree(tmp_path):
    script = tmp_path / "ddp_toy.py"
    script.write_text(SCRIPT)
    done = torchrun([str(script), str(tmp_path)])
    a, b = (load_file(tmp_path / f"rank{r}.safetensors") for r in (0, 1))
    assert a.keys() == b.keys()
    for name in a:
        assert bool((a[name] == b[name]).all()), name
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for report in reports:
        assert report["world"] == 2 and report["find_unused"] is True
        # 512 samples / (16 x 2 ranks) = 16 steps per epoch
        assert report["steps"] == 48
        assert "different weights" in report["caught"]
        # a NaN on one rank, or in rank 0's validation, stops both ranks (one had raised while the other hung)
        assert "the gradient norm is nan at step 2 (epoch 1" in report["stopped"][0]  # the probe took a loss
        assert "the validation val_mse is nan at epoch 0.1875" in report["stopped"][1]
    assert reports[0]["best"] < 0.5 * reports[0]["before"]
    assert (tmp_path / "good" / "model.safetensors").is_file()
    assert done.stdout.count("ranks hold identical weights") == 1  # printed by rank 0 only


def test_probe_finds_unused_parameters_without_side_effects():
    """The probe step reports exactly the parameters without gradient and leaves model and RNG as they were."""
    import torch
    from torch import nn

    from skelanim.nn.train import unused_parameters

    torch.manual_seed(0)
    model = nn.ModuleDict({"used": nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)), "idle": nn.Linear(2, 2)})

    class Task:
        def loss(self, m, batch):
            return (m["used"](batch["x"]) + 0.1 * torch.randn(1)).pow(2).mean(), {}

    state = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(8, 3)
    rng = torch.get_rng_state()
    model.eval()
    names = unused_parameters(model, Task(), {"x": x})
    assert names == ["idle.weight", "idle.bias"]
    assert torch.equal(torch.get_rng_state(), rng)
    assert not model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, state[k]), k
    assert all(p.grad is None for p in model.parameters())


def test_exit_worker_runs_the_exit_handlers_flushes_and_keeps_the_code():
    """A worker's exit without finalization still runs the atexit handlers (the group's leave among them) and
    loses no buffered output."""
    script = textwrap.dedent(
        """
        import atexit, sys
        from skelanim.nn.distributed import exit_worker
        atexit.register(lambda: print("handler ran"))
        print("buffered", end=" ")  # stdout is a pipe here: block-buffered until flushed
        exit_worker(3)
        print("never")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          check=False)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == "buffered handler ran\n"
