"""The training loop when a run goes wrong or is cut short: divergence stops it, a stop inside an epoch leaves
the run on the trajectory of an uninterrupted one, a resume on another number of processes is refused."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from toy_task import ToyTask  # tests/helpers

from skelanim.errors import FormatError, TrainingError
from skelanim.nn.checkpoint import STATE_NAME, WEIGHTS_NAME, load_model_files, load_train_state, save_train_state
from skelanim.nn.train import TrainConfig, fit

CFG = TrainConfig(epochs=2, batch_size=32, lr=1e-2, warmup_steps=5, progress=False)  # 16 steps an epoch


def _model(dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 1))


def _quiet(_: str) -> None:
    pass


class DivergingTask(ToyTask):
    """The toy task whose loss turns NaN from its ``at``-th step on (counted over this task's calls)."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at, self.steps = at, 0

    def loss(self, model, batch):
        loss, parts = super().loss(model, batch)
        self.steps += 1
        return (loss * math.nan if self.steps >= self.at else loss), parts


def test_a_diverging_run_stops_with_one_line_and_keeps_the_last_good_folder(tmp_path):
    """A loss that turned NaN had been trained on: the run ended with exit 0 and a folder of NaN weights."""
    with pytest.raises(TrainingError) as caught:
        fit(_model(), DivergingTask(at=20), tmp_path, CFG, log=_quiet)  # epoch 1 is 16 steps: it finishes
    assert str(caught.value) == (f"{tmp_path}: the gradient norm is nan at step 20 (epoch 2; training loss nan): the run "
                                 "diverged (try a lower --lr); it keeps the files written before (model folder and "
                                 "training state)")  # fmt: skip
    tensors, config = load_model_files(tmp_path)
    assert all(bool(torch.isfinite(t).all()) for t in tensors.values())
    assert [e["epoch"] for e in config["training"]["history"]] == [1]
    with pytest.raises(TrainingError, match=r": the gradient norm is nan at step 3 \(epoch 1; .*nothing was written$"):
        fit(_model(), DivergingTask(at=3), tmp_path / "new", CFG, log=_quiet)
    assert not (tmp_path / "new").exists()  # the failed run leaves no folder


def test_a_huge_learning_rate_is_caught_by_the_gradient_or_the_loss(tmp_path):
    with pytest.raises(TrainingError, match="the run diverged"):
        fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**CFG.__dict__, "lr": 1e30, "grad_clip": 0.0}), log=_quiet)


class NoLabels(ToyTask):
    """A loss term that is a mean over no labels: NaN, with a zero gradient (``nll_loss`` with every target
    ignored, as the generator's recognition term when no content is the recogniser's)."""

    def loss(self, model, batch):
        loss, parts = super().loss(model, batch)
        out = model(batch["x"])
        empty = nn.functional.cross_entropy(torch.cat([out, -out], 1), torch.full((len(out),), -100), ignore_index=-100)
        return loss + 0.1 * empty, parts


def test_a_nan_loss_with_a_zero_gradient_trains_on(tmp_path):
    """Only the gradient decides: the loss is each rank's own (one rank had stopped while the other waited in the
    next all-reduce), and a mean over no labels is NaN without harming the weights."""
    result = fit(_model(), NoLabels(), tmp_path, CFG, log=_quiet)
    assert result["best"]["epoch"] == 2 and math.isfinite(result["best"]["val_mse"])
    assert math.isnan(result["history"][0]["train_loss"])


class NanValidation(ToyTask):
    def validate(self, model):
        return {"val_mse": math.nan}


def test_a_validation_metric_that_is_not_finite_stops_the_run(tmp_path):
    """A NaN validation score had become the best, which no later epoch could beat."""
    with pytest.raises(TrainingError, match=r": the validation val_mse is nan at epoch 1: "):
        fit(_model(), NanValidation(), tmp_path, CFG, log=_quiet)


class Scripted(ToyTask):
    """Validation scores set by the number of training steps taken: best early in the first epoch."""

    def __init__(self, done: int = 0) -> None:
        super().__init__()
        self.done = done
        self.scores = {3: 1.0, 16: 2.0, 32: 3.0}

    def loss(self, model, batch):
        self.done += 1
        return super().loss(model, batch)

    def validate(self, model):
        return {"val_mse": self.scores[self.done]}


def test_a_stop_inside_the_first_epoch_does_not_compete_as_the_best_epoch(tmp_path):
    """A ``max_steps`` stop validates and writes the partial epoch; resumed, its score had counted as the best, so
    the folder kept the step-3 weights where the uninterrupted run keeps epoch 1's."""
    fit(_model(), Scripted(), tmp_path / "whole", CFG, log=_quiet)
    fit(_model(), Scripted(), tmp_path / "cut", TrainConfig(**{**CFG.__dict__, "max_steps": 3}), log=_quiet)
    fit(_model(), Scripted(done=3), tmp_path / "cut", CFG, resume=True, log=_quiet)
    (whole, whole_cfg), (cut, cut_cfg) = load_model_files(tmp_path / "whole"), load_model_files(tmp_path / "cut")
    assert whole_cfg["training"]["best"]["epoch"] == cut_cfg["training"]["best"]["epoch"] == 1
    for name in whole:
        assert torch.equal(whole[name], cut[name]), name


class RandomValidation(ToyTask):
    def validate(self, model):
        model.train()  # dropout on: the validation draws from torch's global generator
        return {"val_mse": float(((model(self.x) - self.y) ** 2).mean() + 0 * torch.randn(()))}


def test_a_validation_at_a_stop_draws_nothing_from_the_runs_random_stream(tmp_path):
    """The partial epoch's validation, which an uninterrupted run does not do, had moved the random state that the
    training state then saved: the resumed run followed another trajectory (dropout masks)."""
    whole = _model(0.3)
    fit(whole, RandomValidation(), tmp_path / "whole", CFG, log=_quiet)
    fit(_model(0.3), RandomValidation(), tmp_path / "cut", TrainConfig(**{**CFG.__dict__, "max_steps": 10}), log=_quiet)
    resumed = _model(0.3)
    fit(resumed, RandomValidation(), tmp_path / "cut", CFG, resume=True, log=_quiet)
    for (name, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_a_resume_on_another_number_of_processes_is_refused(tmp_path):
    """The number of processes sets the steps per epoch and each rank's slice of a batch; a 2-process run resumed
    by one process had gone on along another schedule, its config then saying one process trained it."""
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**CFG.__dict__, "max_steps": 3}), log=_quiet)
    state, optim, meta = load_train_state(tmp_path / STATE_NAME)
    assert meta["world_size"] == 1
    save_train_state(tmp_path / STATE_NAME, state, optim, {**meta, "world_size": 2})  # as a 2-process run leaves it
    with pytest.raises(FormatError, match=r"resume with the 2 process\(es\) the run was started with, not 1"):
        fit(_model(), ToyTask(), tmp_path, CFG, resume=True, log=_quiet)
    assert (tmp_path / WEIGHTS_NAME).is_file()


def test_a_nan_best_left_in_a_state_by_an_older_run_is_replaced_on_resume(tmp_path):
    """States saved before validation scores were checked could hold a NaN best (``--ema`` predictors), which no
    later epoch beat: the resumed run then never rewrote its folder."""
    fit(_model(), ToyTask(), tmp_path, TrainConfig(**{**CFG.__dict__, "max_steps": 20}), log=_quiet)
    state, optim, meta = load_train_state(tmp_path / STATE_NAME)
    save_train_state(tmp_path / STATE_NAME, state, optim, {**meta, "best": {**meta["best"], "val_mse": math.nan}})
    result = fit(_model(), ToyTask(), tmp_path, CFG, resume=True, log=_quiet)
    assert result["best"]["epoch"] == 2 and math.isfinite(result["best"]["val_mse"])
