"""The shared training loop on a toy regression task: it learns, it resumes exactly."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from toy_task import ToyTask  # tests/helpers

from skelanim.nn.checkpoint import load_model_files
from skelanim.nn.train import TrainConfig, fit


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))


def test_fit_lowers_loss_and_writes_best(tmp_path):
    cfg = TrainConfig(epochs=4, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    model = _model()
    before = ToyTask().validate(model)["val_mse"]
    result = fit(model, ToyTask(), tmp_path, cfg, log=lambda s: None)
    assert result["best"]["val_mse"] < 0.2 * before
    _, config = load_model_files(tmp_path)
    assert config["toy"] and config["training"]["best"]["val_mse"] == result["best"]["val_mse"]
    assert (tmp_path / "train_state.safetensors").is_file()


def test_resume_gives_identical_state(tmp_path):
    cfg = TrainConfig(epochs=3, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    straight = _model()
    fit(straight, ToyTask(), tmp_path / "a", cfg, log=lambda s: None)
    # interrupted mid-epoch 2 (step 23 of 16 per epoch), then resumed in a fresh model
    first = _model()
    fit(first, ToyTask(), tmp_path / "b", TrainConfig(**{**cfg.__dict__, "max_steps": 23}), log=lambda s: None)
    resumed = _model()
    torch.manual_seed(123)  # a different global RNG state must not matter
    result = fit(resumed, ToyTask(), tmp_path / "b", cfg, resume=True, log=lambda s: None)
    assert result["steps"] == 48
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name
    # the logged curve too: the resumed epoch's training loss is the mean over all its steps (it had been over the
    # steps after the resume alone, so `learn curves` drew another curve than the uninterrupted run's)
    _, whole = load_model_files(tmp_path / "a")
    _, cut = load_model_files(tmp_path / "b")
    losses = [[epoch["train_loss"] for epoch in c["training"]["history"]] for c in (whole, cut)]
    assert losses[0] == pytest.approx(losses[1], rel=1e-12, abs=0)


class RecordedTask(ToyTask):
    """The toy task with a config that records task options and data, as the learning tasks' do."""

    def __init__(self, mirror: bool = False, data: tuple[str, ...] = ("a.bvh",), arch: dict | None = None) -> None:
        super().__init__()
        self.config = {"toy": True, "arch_options": arch or {"centre": False},
                       "training": {"command": "toy", "date": "now", "data": list(data),
                                    "augmentation": {"mirror": mirror, "amplitude": (0.9, 1.1)}}}  # fmt: skip

    def model_config(self):
        return self.config


def test_resume_refuses_other_task_or_architecture_options_and_notes_other_data(tmp_path, capsys):
    """``--resume`` compared the loop's settings only: a run resumed with ``--mirror`` or ``--centre`` went on and
    its config recorded options the weights were partly trained without. Those are refused naming the option and
    both values; other data passes, with a note on stderr; provenance (command, date) may differ."""
    from skelanim.errors import FormatError

    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    fit(_model(), RecordedTask(), tmp_path, TrainConfig(**{**cfg.__dict__, "max_steps": 3}), log=lambda s: None)
    for task, said in ((RecordedTask(mirror=True), "augmentation.mirror false -> true"),
                       (RecordedTask(arch={"centre": True}), "arch_options.centre false -> true")):  # fmt: skip
        with pytest.raises(FormatError, match=f"resume with the options the run was started with \\({said}\\)"):
            fit(_model(), task, tmp_path, cfg, resume=True, log=lambda s: None)
    capsys.readouterr()
    again = RecordedTask(data=("a.bvh", "b.bvh"))
    again.config["training"]["command"] = "toy --resume"
    again.config["training"]["init"] = "/elsewhere/spelt/otherwise"  # a review: --init as typed had been compared
    again.config["training"]["vae"] = {"init": None, "history": [1]}  # nested records too (the generator's stages)
    result = fit(_model(), again, tmp_path, cfg, resume=True, log=lambda s: None)
    assert result["steps"] == 32
    captured = capsys.readouterr()
    assert captured.out == "" and "note:" in captured.err and "other data" in captured.err and "(data differ)" in captured.err


def test_max_steps_inside_the_first_epoch_still_writes_the_model(tmp_path):
    """A run cut short by ``max_steps`` before any epoch ends leaves a usable folder (the weights at that step,
    validated), and it resumes from its step; a folder written by an earlier epoch is kept (``keep="best"``)."""
    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    model = _model()
    result = fit(model, ToyTask(), tmp_path / "a", TrainConfig(**{**cfg.__dict__, "max_steps": 5}), log=lambda s: None)
    weights, config = load_model_files(tmp_path / "a")
    for name, value in model.state_dict().items():
        assert torch.equal(weights[name], value), name
    stopped = config["training"]["stopped"]
    assert stopped["epoch"] == pytest.approx(5 / 16) and stopped["val_mse"] == pytest.approx(ToyTask().validate(model)["val_mse"])
    assert result["best"]["val_mse"] == stopped["val_mse"] and config["training"]["history"] == []
    resumed = fit(_model(), ToyTask(), tmp_path / "a", cfg, resume=True, log=lambda s: None)
    assert resumed["steps"] == 32 and len(resumed["history"]) == 2
    _, config = load_model_files(tmp_path / "a")
    assert "stopped" not in config["training"]  # written again by a finished epoch
    later = _model()  # 20 steps: inside epoch 2, whose epoch 1 already wrote the folder
    fit(later, ToyTask(), tmp_path / "b", TrainConfig(**{**cfg.__dict__, "max_steps": 20}), log=lambda s: None)
    weights, config = load_model_files(tmp_path / "b")
    assert "stopped" not in config["training"] and len(config["training"]["history"]) == 1
    assert not torch.equal(weights["0.weight"], later.state_dict()["0.weight"])


def test_a_new_run_cut_inside_its_first_epoch_replaces_another_runs_folder(tmp_path):
    """A fresh run (not resumed) stopped by ``max_steps`` before any epoch ends writes its own weights over a folder
    an earlier run left there (before, the earlier weights stayed while the run said it wrote the folder)."""
    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    fit(_model(), ToyTask(), tmp_path, cfg, log=lambda s: None)  # a finished run's folder
    torch.manual_seed(7)
    other = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    fit(other, ToyTask(), tmp_path, TrainConfig(**{**cfg.__dict__, "max_steps": 3}), log=lambda s: None)
    weights, config = load_model_files(tmp_path)
    for name, value in other.state_dict().items():
        assert torch.equal(weights[name], value), name
    assert config["training"]["stopped"]["epoch"] == pytest.approx(3 / 16) and config["training"]["history"] == []


class FailingTask(ToyTask):
    """Toy task whose first training batch fails (a run that dies before it saves anything)."""

    def loss(self, model, batch):
        raise RuntimeError("out of memory")


def test_a_new_run_removes_the_training_state_of_the_run_it_replaces(tmp_path):
    """A fresh run into a folder with an interrupted run's state, dying before its own first save, had left that
    state, so a later ``resume`` went on from the replaced run; now the state goes when the fresh run starts."""
    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**cfg.__dict__, "max_steps": 20}), log=lambda s: None)
    assert (tmp_path / "train_state.safetensors").is_file()
    with pytest.raises(RuntimeError, match="out of memory"):
        fit(_model(), FailingTask(), tmp_path, cfg, log=lambda s: None)
    assert not (tmp_path / "train_state.safetensors").exists()


class ScriptedTask(ToyTask):
    """Toy task whose validation scores are given in advance, one per epoch."""

    def __init__(self, scores: list[float]) -> None:
        super().__init__()
        self.scores = list(scores)

    def validate(self, model):
        return {"val_mse": self.scores.pop(0)}


def test_the_folder_keeps_the_best_weights_and_the_whole_history(tmp_path):
    cfg = TrainConfig(epochs=3, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)
    result = fit(_model(), ScriptedTask([3.0, 1.0, 2.0]), tmp_path, cfg, log=lambda s: None)
    weights, config = load_model_files(tmp_path)  # config and weights still agree (the loader checks)
    assert result["best"]["epoch"] == 2 and config["training"]["best"]["epoch"] == 2
    assert [r["val_mse"] for r in config["training"]["history"]] == [3.0, 1.0, 2.0]
    again = _model()  # the folder's weights are epoch 2's: the same run stopped after two epochs ends with them
    fit(again, ScriptedTask([3.0, 1.0, 2.0]), tmp_path / "b", TrainConfig(**{**cfg.__dict__, "max_steps": 32}),
        log=lambda s: None)  # fmt: skip
    for name, value in again.state_dict().items():
        assert torch.equal(weights[name], value), name


class RecordingTask(ToyTask):
    """Toy task whose loss records the model's state (parameters and buffers) before each forward pass."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[str, torch.Tensor]] = []

    def loss(self, model, batch):
        self.seen.append({k: v.detach().clone() for k, v in model.state_dict().items()})
        return super().loss(model, batch)


def _bn_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.Tanh(), nn.Linear(16, 1))


def _averaged_state(folder) -> dict[str, torch.Tensor]:
    from skelanim.nn.checkpoint import load_train_state

    state, _, _ = load_train_state(folder / "train_state.safetensors")
    return {k[len("averaged/module.") :]: v for k, v in state.items() if k.startswith("averaged/module.")}


def test_weight_average_follows_the_ema_recurrence(tmp_path):
    decay = 0.9
    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False, ema=decay)
    task, model = RecordingTask(), _bn_model()
    fit(model, task, tmp_path, cfg, log=lambda s: None)
    # the state after optimizer step k is what the loss sees at step k + 1 (and the final model after the last)
    after_steps = task.seen[1:] + [{k: v.detach().clone() for k, v in model.state_dict().items()}]
    assert len(after_steps) == 32
    expected = {k: v.clone() for k, v in after_steps[0].items()}  # the first update copies
    for n, state in enumerate(after_steps[1:], start=1):
        rate = max(1.0 - decay, 9.0 / (10.0 + n))  # the warm-up of the decay (TensorFlow's num_updates)
        for key, value in state.items():
            expected[key] = value.clone() if not value.is_floating_point() else expected[key] + rate * (value - expected[key])
    averaged = _averaged_state(tmp_path)
    assert averaged.keys() == expected.keys()
    for key, value in expected.items():
        torch.testing.assert_close(averaged[key], value, rtol=1e-5, atol=1e-6, msg=key)
    assert not torch.allclose(averaged["3.weight"], model.state_dict()["3.weight"])  # it is not the live model
    # validation and the model folder see the average: the saved best is the average at the best epoch
    weights, config = load_model_files(tmp_path)
    probe = _bn_model()
    probe.load_state_dict(weights)
    probe.eval()
    assert ToyTask().validate(probe)["val_mse"] == config["training"]["best"]["val_mse"]


def test_the_weight_average_keeps_infinite_buffers_infinite():
    """A fixer's finding: a predictor's input range is +-inf until set; lerped, inf - inf made the average's range
    NaN, and the clamp of validation passed NaN through. Infinite values are copied; finite ones still lerped."""
    from torch.optim.swa_utils import AveragedModel

    from skelanim.nn.train import ema_update

    model = nn.Linear(3, 2)
    model.register_buffer("low", torch.tensor([-math.inf, 0.0]))
    averaged = AveragedModel(model, multi_avg_fn=ema_update(0.9), use_buffers=True)
    start = model.weight.detach().clone()
    for _ in range(3):
        with torch.no_grad():
            model.weight.add_(1.0)
            model.low[1] += 1.0
        averaged.update_parameters(model)
    low = averaged.module.low
    assert low[0].item() == -math.inf and torch.isfinite(low[1]) and 0.0 < low[1].item() < 3.0
    weight = averaged.module.weight
    assert torch.all(weight > start) and torch.all(weight < model.weight)  # the average, between start and now


def test_resume_carries_the_weight_average(tmp_path):
    cfg = TrainConfig(epochs=3, batch_size=32, lr=1e-2, warmup_steps=5, progress=False, ema=0.95)
    fit(_bn_model(), ToyTask(), tmp_path / "a", cfg, log=lambda s: None)
    fit(_bn_model(), ToyTask(), tmp_path / "b", TrainConfig(**{**cfg.__dict__, "max_steps": 23}), log=lambda s: None)
    fit(_bn_model(), ToyTask(), tmp_path / "b", cfg, resume=True, log=lambda s: None)
    straight, resumed = _averaged_state(tmp_path / "a"), _averaged_state(tmp_path / "b")
    for key in straight:
        assert torch.equal(straight[key], resumed[key]), key


def test_keep_last_leaves_the_final_weights_in_the_folder(tmp_path):
    cfg = TrainConfig(epochs=3, batch_size=32, lr=1e-2, warmup_steps=5, progress=False, ema=0.9)
    # a validation metric that gets worse every epoch: "best" keeps epoch 1, "last" epoch 3
    task = ToyTask()
    worse = iter([1.0, 2.0, 3.0, 1.0, 2.0, 3.0])
    task.validate = lambda model: {"val_mse": next(worse)}
    fit(_bn_model(), task, tmp_path / "best", cfg, log=lambda s: None)
    fit(_bn_model(), task, tmp_path / "last", TrainConfig(**{**cfg.__dict__, "keep": "last"}), log=lambda s: None)
    best, _ = load_model_files(tmp_path / "best")
    last, config = load_model_files(tmp_path / "last")
    final = _averaged_state(tmp_path / "last")
    assert config["training"]["best"]["epoch"] == 1 and len(config["training"]["history"]) == 3
    for key, value in final.items():
        assert torch.equal(last[key], value), key
    assert not torch.equal(best["3.weight"], last["3.weight"])


def test_validate_every_validates_those_epochs_and_the_last_and_keeps_the_best_of_them(tmp_path):
    cfg = TrainConfig(epochs=5, batch_size=32, lr=1e-2, warmup_steps=5, progress=False, validate_every=2)
    task = ToyTask()
    validated, scores = [], iter([3.0, 1.0, 2.0])  # epochs 2, 4 and 5 (the last): the best is epoch 4
    states: dict[int, dict[str, torch.Tensor]] = {}

    def validate(model):
        validated.append(len(validated))
        states[len(validated)] = {k: v.clone() for k, v in model.state_dict().items()}
        return {"val_mse": next(scores)}

    task.validate = validate
    result = fit(_model(), task, tmp_path, cfg, log=lambda s: None)
    history = result["history"]
    assert [r["epoch"] for r in history if "val_mse" in r] == [2, 4, 5] and len(history) == 5
    assert all("train_loss" in r for r in history) and result["best"]["epoch"] == 4
    saved, config = load_model_files(tmp_path)
    assert config["training"]["best"]["epoch"] == 4
    for key, value in states[2].items():  # the folder holds the weights validated at epoch 4
        assert torch.equal(saved[key], value), key
    with pytest.raises(ValueError, match="validate_every must be >= 1"):
        TrainConfig(validate_every=0)


def test_the_result_says_where_max_steps_stopped_the_run_when_the_folder_holds_those_weights(tmp_path):
    """``fit`` returns ``stopped`` (step and epoch) where the model folder holds the weights of a stop inside an epoch,
    so that the summary line does not call them the last (or best) epoch's; a resume that stops at once says it too."""
    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False, keep="last")
    cut = TrainConfig(**{**cfg.__dict__, "max_steps": 20})  # 16 steps an epoch: inside epoch 2
    assert fit(_model(), ToyTask(), tmp_path / "a", cut, log=lambda s: None)["stopped"] == {"step": 20, "epoch": 1.25}
    again = fit(_model(), ToyTask(), tmp_path / "a", cut, resume=True, log=lambda s: None)  # nothing left to do
    assert again["stopped"] == {"step": 20, "epoch": 1.25} and again["steps"] == 20
    assert "stopped" not in fit(_model(), ToyTask(), tmp_path / "a", cfg, resume=True, log=lambda s: None)
    best = TrainConfig(**{**cut.__dict__, "keep": "best"})  # the folder holds epoch 1's weights
    assert "stopped" not in fit(_model(), ToyTask(), tmp_path / "b", best, log=lambda s: None)
    early = TrainConfig(**{**best.__dict__, "max_steps": 5})  # no epoch yet: the folder holds step 5's
    assert fit(_model(), ToyTask(), tmp_path / "c", early, log=lambda s: None)["stopped"] == {"step": 5, "epoch": 0.3125}
