"""The training loop against its documented rules (schedule, data order, augmentation seeds, clipping, keep-best,
keep-last with validate_every, resume checks) and the graph-attention layers against their written-out formulas."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest
import torch
from toy_task import ToyTask

from skelanim.errors import FormatError
from skelanim.nn.layers import GATBlock, GraphAttention, graph_mask, mask_bias
from skelanim.nn.train import TrainConfig, fit

WEIGHTS = "model.safetensors"


def _fit(task, out, resume=False, **config):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    return fit(model, task, out, TrainConfig(progress=False, **config), resume=resume, log=lambda s: None)


class _Recording(torch.optim.AdamW):
    """AdamW that records, at each step, the learning rate and the norm of the gradients it is given."""

    lrs: ClassVar[list[float]] = []
    norms: ClassVar[list[float]] = []

    def step(self, closure=None):
        _Recording.lrs.append(self.param_groups[0]["lr"])
        grads = [p.grad.flatten() for g in self.param_groups for p in g["params"] if p.grad is not None]
        _Recording.norms.append(float(torch.cat(grads).norm()))
        return super().step(closure)


@pytest.fixture
def recording(monkeypatch):
    _Recording.lrs, _Recording.norms = [], []
    monkeypatch.setattr(torch.optim, "AdamW", _Recording)
    return _Recording


def test_learning_rate_follows_the_documented_schedule(recording, tmp_path):
    """512 samples, batch 64: 8 steps an epoch, 16 planned; warm-up (s + 1) / w for s < w, then
    0.02 + 0.98 (1 + cos(pi p)) / 2 with p = (s - w) / (total - w): from 1 down to 2 % of the peak."""
    lr, w, total = 0.5, 4, 16
    _fit(ToyTask(), tmp_path / "m", epochs=2, batch_size=64, lr=lr, warmup_steps=w)
    want = [lr * (s + 1) / w for s in range(w)]
    want += [lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * (s - w) / (total - w)))) for s in range(w, total)]
    assert recording.lrs == pytest.approx(want, rel=1e-12, abs=0)
    assert recording.lrs[w - 1] == pytest.approx(lr) and recording.lrs[w] == pytest.approx(lr)  # peak twice
    assert recording.lrs[-1] == pytest.approx(lr * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * 11 / 12))))


class _HugeLoss(ToyTask):
    def loss(self, model, batch):
        loss, parts = super().loss(model, batch)
        return 1e6 * loss, parts


@pytest.mark.parametrize("clip", [0.5, 0.0])
def test_grad_clip_bounds_the_gradient_the_optimiser_sees(recording, tmp_path, clip):
    _fit(_HugeLoss(), tmp_path / "m", epochs=1, batch_size=128, grad_clip=clip, warmup_steps=1)
    assert len(recording.norms) == 4
    if clip:
        assert max(recording.norms) <= clip * (1 + 1e-5)
    else:
        assert min(recording.norms) > 1e3  # unclipped: the huge loss's gradient


class _Recorder(ToyTask):
    def __init__(self) -> None:
        super().__init__()
        self.indices: list[list[int]] = []
        self.draws: list[float] = []

    def batch(self, indices, generator):
        self.indices.append(indices.tolist())
        self.draws.append(float(torch.rand(1, generator=generator)))
        return super().batch(indices, generator)


def test_epochs_visit_the_samples_in_different_orders(tmp_path):
    task = _Recorder()
    _fit(task, tmp_path / "m", epochs=3, batch_size=128)
    epochs = [[i for batch in task.indices[4 * e : 4 * e + 4] for i in batch] for e in range(3)]
    for order in epochs:
        assert sorted(order) == list(range(512))  # each epoch a permutation
    assert len({tuple(o) for o in epochs}) == 3


def test_batches_of_one_epoch_draw_different_augmentation(tmp_path):
    task = _Recorder()
    _fit(task, tmp_path / "m", epochs=2, batch_size=64)
    assert len(task.draws) == 16 and len(set(task.draws)) == 16


def test_keep_best_tie_keeps_the_first_epoch(tmp_path):
    task = ToyTask()
    scores = iter([1.0, 1.0, 2.0])
    task.validate = lambda model: {"val_mse": next(scores)}
    result = _fit(task, tmp_path / "m", epochs=3, batch_size=64)
    assert result["best"]["epoch"] == 1


def test_keep_last_writes_no_model_folder_before_the_first_validated_epoch(tmp_path):
    out = tmp_path / "m"
    task = ToyTask()
    seen: list[bool] = []
    plain = task.validate

    def validate(model):
        seen.append((out / WEIGHTS).exists())
        return plain(model)

    task.validate = validate
    result = _fit(task, out, epochs=2, batch_size=128, keep="last", validate_every=2)
    assert seen == [False]  # validated once (epoch 2), and nothing of epoch 1 was written before it
    assert [r["epoch"] for r in result["history"]] == [1, 2] and "val_mse" not in result["history"][0]
    assert (out / WEIGHTS).exists()


def test_resume_with_another_seed_is_refused(tmp_path):
    out = tmp_path / "m"
    _fit(ToyTask(), out, epochs=2, batch_size=64, max_steps=5)
    with pytest.raises(FormatError, match="seed 0 -> 7"):
        _fit(ToyTask(), out, resume=True, epochs=2, batch_size=64, seed=7)
    _fit(ToyTask(), out, resume=True, epochs=2, batch_size=64)  # the same settings resume


# ------------------------------------------------------------------------------------------- layers
PARENTS = [-1, 0, 1, 2, 1, 4, 0, 6]


def _attention_by_formula(layer: GraphAttention, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """e[i, j] = LeakyReLU(a_dst . W x_i + a_src . W x_j) + bias[i, j]; out_i = W_o concat_h(sum_j softmax_j(e[i]) W x_j),
    with explicit loops over heads, receivers i and senders j."""
    J = x.shape[0]
    H, dh = layer.heads, layer.head_dim
    w = x @ layer.proj.weight.T
    heads = []
    for k in range(H):
        hk = w[:, k * dh : (k + 1) * dh]
        out = torch.zeros(J, dh, dtype=x.dtype)
        for i in range(J):
            e = torch.tensor([float(torch.nn.functional.leaky_relu(layer.att_dst[k] @ hk[i] + layer.att_src[k] @ hk[j],
                                                                    0.2)) + float(bias[i, j]) for j in range(J)])  # fmt: skip
            a = torch.softmax(e.to(x.dtype), 0)
            out[i] = sum(a[j] * hk[j] for j in range(J))
        heads.append(out)
    return torch.cat(heads, 1) @ layer.out.weight.T + layer.out.bias


def test_graph_attention_matches_its_formula():
    torch.manual_seed(0)
    layer = GraphAttention(8, 2).double()
    bias = mask_bias(graph_mask(PARENTS)).double()
    x = torch.randn(2, 8, 8, dtype=torch.float64)
    with torch.no_grad():
        got = layer(x, bias)
        for b in range(2):
            assert torch.allclose(got[b], _attention_by_formula(layer, x[b], bias), atol=1e-10)


def test_gat_block_is_post_norm_residual():
    """x1 = LN1(x + attn(x)); y = LN2(x1 + ffn(x1)), with LayerNorm written out (fresh: weight 1, bias 0)."""
    torch.manual_seed(0)
    block = GATBlock(8, 2).double()
    bias = mask_bias(graph_mask(PARENTS)).double()
    x = torch.randn(2, 8, 8, dtype=torch.float64)

    def ln(v):
        return (v - v.mean(-1, keepdim=True)) / torch.sqrt(v.var(-1, unbiased=False, keepdim=True) + 1e-5)

    with torch.no_grad():
        x1 = ln(x + torch.stack([_attention_by_formula(block.attn, x[b], bias) for b in range(2)]))
        want = ln(x1 + block.ffn(x1))
        assert torch.allclose(block(x, bias), want, atol=1e-10)


def test_the_progress_bar_into_a_log_file_is_a_few_lines_not_one_per_step(tmp_path, capfd):
    """stderr captured (not a terminal): 320 steps draw the bar at its start, at most every LOG_BAR_INTERVAL seconds
    and at its close, not once per step (one ~100-byte line per step had filled `> train.log`)."""
    torch.manual_seed(0)
    fit(torch.nn.Linear(4, 1), ToyTask(), tmp_path / "m", TrainConfig(epochs=2, batch_size=4, lr=1e-2, progress=True),
        log=lambda s: None)  # fmt: skip
    err = capfd.readouterr().err
    draws = err.count("\r") + err.count("\n")
    assert "epoch 1/2" in err  # the bar is there
    assert draws <= 12, (draws, len(err))


@pytest.mark.parametrize(("rank", "world", "printed"),
                         [(None, None, True), ("0", "2", True), ("1", "2", False), ("1", None, True), ("1", "1", True)])
def test_a_note_about_the_data_comes_from_process_0_only(monkeypatch, capsys, rank, world, printed):
    """Before the process group is set up (the data loads first), torchrun's RANK decides where it launched several
    processes: every process had printed the same note. A RANK without them (set by hand, or WORLD_SIZE 1) is the
    only process, the main one (it had trained and written nothing)."""
    from types import SimpleNamespace

    from skelanim.learn.common import note_short_clips
    from skelanim.nn.distributed import is_main

    for name, value in (("RANK", rank), ("WORLD_SIZE", world)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert is_main() is printed
    note_short_clips(SimpleNamespace(clips=[SimpleNamespace(name="short", num_frames=3)]), 64)
    assert ("note: 1 of 1 training clips are shorter" in capsys.readouterr().err) is printed


def test_an_unfinished_runs_folder_says_so_when_loaded_until_its_resume_finishes_it(tmp_path):
    """A run stopped before its epochs (here by max_steps; Ctrl-C leaves the same folder) records how far it got, and
    loading the folder warns; the resumed run, once done, removes the record, and loading is silent. A run that keeps
    an earlier epoch's weights (keep best) is finished all the same."""
    import json
    import warnings

    from skelanim.nn.checkpoint import UNFINISHED, load_model_files
    from skelanim.viz.charts import training_run

    out = tmp_path / "m"
    _fit(ToyTask(), out, epochs=3, batch_size=64, lr=1e-2, max_steps=12)  # 8 steps an epoch: stopped in epoch 2
    # the folder holds the best epoch so far, the first (keep best): its weights are those of epoch 1 of 3
    assert json.loads((out / "config.json").read_text())["training"][UNFINISHED] == {"epoch": 1.0, "epochs": 3}
    with pytest.warns(UserWarning, match=r"unfinished training run \(epoch 1\.0 of 3\)"):
        load_model_files(out)
    assert training_run(out).planned_epochs == 3  # learn curves says "of 3"
    _fit(ToyTask(), out, resume=True, epochs=3, batch_size=64, lr=1e-2)
    assert UNFINISHED not in json.loads((out / "config.json").read_text())["training"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model_files(out)
    assert training_run(out).planned_epochs is None
    class Worsening(ToyTask):  # each validation worse than the last: the first epoch's weights are kept
        calls = 0

        def validate(self, model):
            self.calls += 1
            return {"val_mse": float(self.calls)}

    kept = tmp_path / "k"
    _fit(Worsening(), kept, epochs=3, batch_size=64, lr=1e-2)
    training = json.loads((kept / "config.json").read_text())["training"]
    assert training["best"]["epoch"] < 3 and UNFINISHED not in training, training["best"]


def test_a_run_resumed_with_more_max_steps_inside_the_epoch_writes_its_new_weights(tmp_path):
    """An audit: stopped at step 2 of an 8-step epoch, then resumed with max_steps 4, the run trained steps 3-4 and
    kept step 2's weights (a provisional best, which the epoch's end would have replaced whatever its score) while
    saying it had run 4 steps. The later stop replaces the earlier one; a whole epoch's best stays as it was."""
    import json

    from skelanim.nn.checkpoint import load_model_files

    out = tmp_path / "m"
    _fit(ToyTask(), out, epochs=3, batch_size=64, lr=1e-2, max_steps=2)
    first = load_model_files(out)[0]["weight"].clone()
    _fit(ToyTask(), out, resume=True, epochs=3, batch_size=64, lr=1e-2, max_steps=4)
    tensors, config = load_model_files(out)
    assert not torch.equal(tensors["weight"], first)
    assert config["training"]["stopped"]["epoch"] == pytest.approx(0.5) and config["training"]["best"]["epoch"] == 0.5
    unstopped = tmp_path / "u"  # the same four steps in one run: the same weights
    _fit(ToyTask(), unstopped, epochs=3, batch_size=64, lr=1e-2, max_steps=4)
    assert torch.equal(load_model_files(unstopped)[0]["weight"], tensors["weight"])
    _fit(ToyTask(), out, resume=True, epochs=3, batch_size=64, lr=1e-2, max_steps=12)  # epoch 1 whole, then 4 steps
    whole = json.loads((out / "config.json").read_text())["training"]
    assert whole["best"]["epoch"] == 1


def test_a_resumed_state_whose_best_was_scored_by_another_measure_is_replaced_not_a_key_error(tmp_path):
    """A state saved when the task named its score otherwise (a generator's train_subset_* had been val_*): the
    resumed run's next validated epoch becomes the best (it had raised KeyError)."""
    import json

    class Renamed(ToyTask):
        metric = "train_subset_mse"

        @torch.no_grad()
        def validate(self, model):
            return {"train_subset_mse": float(((model(self.x) - self.y) ** 2).mean())}

    out = tmp_path / "m"
    _fit(ToyTask(), out, epochs=3, batch_size=64, lr=1e-2, max_steps=8)  # one epoch, its best under val_mse
    _fit(Renamed(), out, resume=True, epochs=3, batch_size=64, lr=1e-2)
    best = json.loads((out / "config.json").read_text())["training"]["best"]
    assert "train_subset_mse" in best and best["epoch"] >= 2


def test_an_ensemble_with_an_unfinished_member_warns_when_loaded(tmp_path):
    """The marker of a member (combine keeps each member's training record) warns too, naming the member."""
    from skelanim.nn.checkpoint import load_model_files, save_model_files

    training = {"members": [{"history": []}, {"history": [], "unfinished": {"epoch": 0.8, "epochs": 30}}]}
    save_model_files(tmp_path / "e", {"w": torch.zeros(2)}, {"format": "x", "training": training})
    with pytest.warns(UserWarning, match=r"member 1 is the weights of an unfinished training run \(epoch 0\.8 of 30\)"):
        load_model_files(tmp_path / "e")


def test_a_generator_folder_stopped_in_its_vae_stage_points_to_it(tmp_path):
    """A generator run stopped before its GAN stage leaves its model in OUT/vae: loading OUT, or drawing its curves,
    says so (both had said only that OUT is no model folder)."""
    from skelanim.errors import FormatError
    from skelanim.nn.checkpoint import load_model_files, save_model_files
    from skelanim.viz.charts import training_run

    out = tmp_path / "gen"
    save_model_files(out / "vae", {"w": torch.zeros(1)}, {"format": "skelanim-generator", "training": {}})
    with pytest.raises(FormatError, match=r"gen/vae holds the VAE stage of a generator run stopped before its GAN"):
        load_model_files(out)
    with pytest.raises(FormatError, match=r"gen/vae holds a generator's VAE stage"):
        training_run(out)
