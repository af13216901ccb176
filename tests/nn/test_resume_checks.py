"""A training state that opens but holds the wrong things is refused with one line naming the file (``--resume``
had ended in a 57-71-line traceback, or had gone on from nonsense: fresh Adam moments, any random state, NaN
weights), while genuine resumes (parameters without optimizer state, infinite bounds in buffers) go on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import nn
from toy_task import ToyTask  # tests/helpers

from skelanim.errors import FormatError
from skelanim.nn.checkpoint import STATE_NAME, load_train_state, read_train_meta
from skelanim.nn.train import TrainConfig, fit

CFG = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)


class WithUnused(nn.Module):
    """A net with a parameter its loss never reaches (a discriminator during a VAE stage: no optimizer state) and a
    persistent buffer of infinite bounds (a predictor's input range before calibration)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        self.unused = nn.Linear(3, 3)
        self.register_buffer("low", torch.full((4,), -torch.inf))

    def forward(self, x):
        return self.net(x.clamp(min=self.low))


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))


def _rewrite(path: Path, tensors: Callable[[dict], dict] | None = None, info: Callable[[Any], Any] | None = None) -> None:
    """Rewrite a training state with its tensors and its metadata (``{"meta", "param_groups", "optim_scalars"}``)
    passed through ``tensors`` and ``info`` (each may change its argument in place and return it)."""
    state = load_file(str(path))
    with safe_open(str(path), framework="pt") as handle:
        metadata = json.loads(handle.metadata()["state"])
    state, metadata = (tensors or (lambda t: t))(state), (info or (lambda m: m))(metadata)
    save_file(state, str(path), metadata={"state": json.dumps(metadata)})


def _first(tensors: dict, prefix: str, suffix: str = "") -> str:
    return next(k for k in tensors if k.startswith(prefix) and k.endswith(suffix) and tensors[k].dim() > 1)


def _halved(tensors: dict, key: str) -> dict:
    tensors[key] = tensors[key][:1].contiguous()
    return tensors


def _meta(change: Callable[[dict], Any]) -> Callable[[dict], dict]:
    def edit(info: dict) -> dict:
        change(info["meta"])
        return info

    return edit


def _info(change: Callable[[dict], Any]) -> Callable[[dict], dict]:
    def edit(info: dict) -> dict:
        change(info)
        return info

    return edit


#: name: (tensors edit, metadata edit, what the message says)
CORRUPTIONS: dict[str, tuple[Callable[[dict], dict] | None, Callable[[Any], Any] | None, str]] = {
    "rng of the wrong size": (lambda t: {**t, "rng/torch": torch.zeros(10, dtype=torch.uint8)}, None,
                              r"random-number state \(rng/torch\) does not fit"),
    "no rng": (lambda t: {k: v for k, v in t.items() if k != "rng/torch"}, None, r"no random-number state"),
    "epoch a string": (None, _meta(lambda m: m.update(epoch="two")), r'meta\.epoch is "two", not a count'),
    "negative step": (None, _meta(lambda m: m.update(step_in_epoch=-3)), r"meta\.step_in_epoch is -3"),
    "history not a list": (None, _meta(lambda m: m.update(history=7)), r"meta\.history is 7, not a list"),
    "metadata a list": (None, lambda i: [1, 2], r"its metadata is a JSON list, not an object"),
    "meta without epoch": (None, _meta(lambda m: m.pop("epoch")), r"meta has no 'epoch' entry"),
    "no optim_scalars": (None, _info(lambda i: i.pop("optim_scalars")), r"no 'optim_scalars'"),
    "no param_groups": (None, _info(lambda i: i.pop("param_groups")), r"no 'param_groups'"),
    "group of the wrong size": (None, _info(lambda i: i["param_groups"][0]["params"].pop()),
                                r"optimizer groups hold \[3\] parameters, the model's \[4\]"),
    "betas a string": (None, _info(lambda i: i["param_groups"][0].update(betas="x")), r"the optimizer's betas is \"x\""),
    "optimizer tensor of the wrong shape": (lambda t: _halved(t, _first(t, "optim/", "exp_avg")), None,
                                            r"optimizer entry optim/0/exp_avg is \[1, 4\], its parameter \[16, 4\]"),
    "no exp_avg_sq": (lambda t: {k: v for k, v in t.items() if not k.endswith("exp_avg_sq")}, None,
                      r"optimizer state lacks exp_avg_sq"),
    "no optimizer tensors mid-run": (lambda t: {k: v for k, v in t.items() if not k.startswith("optim/")}, None,
                                     r"no optimizer state \(the Adam moments\) after 20 steps"),
    "a stray optimizer tensor": (lambda t: {**t, "optim/x/exp_avg": torch.zeros(1)}, None,
                                 r"a tensor named 'optim/x/exp_avg'"),
    "NaN weights": (lambda t: {**t, "model/0.weight": torch.full_like(t["model/0.weight"], float("nan"))}, None,
                    r"the weights hold NaN or infinite values \(0\.weight\)"),
    "infinite weights": (lambda t: {**t, "model/2.bias": torch.full_like(t["model/2.bias"], float("inf"))}, None,
                         r"the weights hold NaN or infinite values \(2\.bias\)"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_a_training_state_with_wrong_contents_is_refused_in_one_line(tmp_path, name):
    tensors, info, said = CORRUPTIONS[name]
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**CFG.__dict__, "max_steps": 20}), log=lambda s: None)  # mid-run
    _rewrite(tmp_path / STATE_NAME, tensors, info)
    with pytest.raises(FormatError, match=f"corrupt training state: .*{said}") as caught:
        fit(_model(), ToyTask(), tmp_path, CFG, resume=True, log=lambda s: None)
    assert caught.value.path == str(tmp_path / STATE_NAME) and "\n" not in str(caught.value)


def test_a_state_without_its_weight_average_is_refused_in_one_line(tmp_path):
    """``averaged.load_state_dict`` (and ``optimizer.load_state_dict``) errors are a corrupt state, not a traceback."""
    cfg = TrainConfig(**{**CFG.__dict__, "ema": 0.9})
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**cfg.__dict__, "max_steps": 20}), log=lambda s: None)
    _rewrite(tmp_path / STATE_NAME, lambda t: {k: v for k, v in t.items() if not k.startswith("model/averaged/")},
             _meta(lambda m: m.pop("loop")))  # fmt: skip
    with pytest.raises(FormatError, match=r"corrupt training state: Error\(s\) in loading state_dict for AveragedModel"):
        fit(_model(), ToyTask(), tmp_path, cfg, resume=True, log=lambda s: None)


def test_read_train_meta_refuses_metadata_that_is_not_an_object(tmp_path):
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**CFG.__dict__, "max_steps": 20}), log=lambda s: None)
    assert read_train_meta(tmp_path / STATE_NAME)["global_step"] == 20
    assert load_train_state(tmp_path / STATE_NAME)[2]["global_step"] == 20
    _rewrite(tmp_path / STATE_NAME, info=_info(lambda i: i.update(meta=[1])))
    with pytest.raises(FormatError, match="no 'meta' object"):
        read_train_meta(tmp_path / STATE_NAME)


@pytest.mark.parametrize("ema", [0.0, 0.9])
def test_a_resume_with_parameters_without_optimizer_state_and_infinite_buffers_goes_on_exactly(tmp_path, ema):
    """The checks leave genuine states alone: a parameter that never had a gradient has no optimizer entry, and a
    buffer may hold infinite bounds; the resumed run ends with the uninterrupted run's weights."""
    cfg = TrainConfig(**{**CFG.__dict__, "ema": ema})

    def model() -> nn.Module:
        torch.manual_seed(0)
        return WithUnused()

    straight, resumed = model(), model()
    fit(straight, ToyTask(), tmp_path / "a", cfg, log=lambda s: None)
    fit(model(), ToyTask(), tmp_path / "b", TrainConfig(**{**cfg.__dict__, "max_steps": 20}), log=lambda s: None)
    optim = {k.split("/")[1] for k in load_file(str(tmp_path / "b" / STATE_NAME)) if k.startswith("optim/")}
    assert optim == {"0", "1", "2", "3"}  # the unused layer's parameters (4 and 5) have none
    result = fit(resumed, ToyTask(), tmp_path / "b", cfg, resume=True, log=lambda s: None)
    assert result["steps"] == 32
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name
