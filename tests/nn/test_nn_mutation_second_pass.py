"""Second-pass mutation audit of ``skelanim.nn`` (graph attention, checkpoints, the training loop, resume checks,
the output folder): behaviour no earlier test pinned, each checked against numpy, a closed form or the documented
rule. The data half is test_data_nn_mutation_second_pass.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

F64 = torch.float64


# ------------------------------------------------------------------------------------------- graph attention
def _gat_numpy(layer, x: np.ndarray, bias: np.ndarray, slope: float) -> np.ndarray:
    """e_ij = LeakyReLU_slope(a_dst . W x_i + a_src . W x_j) + bias_ij per head, softmax over j, W_o concat + b_o."""
    w = layer.proj.weight.detach().numpy()
    a_dst, a_src = layer.att_dst.detach().numpy(), layer.att_src.detach().numpy()
    h = x @ w.T  # (J, D)
    heads, dh = a_dst.shape
    outs = []
    for k in range(heads):
        hk = h[:, k * dh : (k + 1) * dh]
        e = (hk @ a_dst[k])[:, None] + (hk @ a_src[k])[None, :]
        e = np.where(e > 0, e, slope * e) + bias
        a = np.exp(e - e.max(1, keepdims=True))
        outs.append((a / a.sum(1, keepdims=True)) @ hk)
    return np.concatenate(outs, 1) @ layer.out.weight.detach().numpy().T + layer.out.bias.detach().numpy()


def test_graph_mask_links_the_root_to_its_children():
    """Parents [-1, 0, 1, 0] (a root with two children, one with a child): hops 1 is the tree's edges 0-1, 1-2, 0-3
    plus self loops, written out; hops 2 adds 0-2 (via 1) and 1-3 (via 0); 2-3 are 3 edges apart."""
    from skelanim.nn.layers import graph_mask

    one = np.array([[1, 1, 0, 1], [1, 1, 1, 0], [0, 1, 1, 0], [1, 0, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(graph_mask([-1, 0, 1, 0]).numpy(), one)
    two = np.array([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1]], dtype=bool)
    np.testing.assert_array_equal(graph_mask([-1, 0, 1, 0], hops=2).numpy(), two)


@pytest.mark.parametrize("grad", [True, False])
def test_graph_attention_uses_its_own_negative_slope(grad):
    """A layer built with negative_slope=0.5 scores with 0.5 (training and inference paths alike), not GAT's 0.2."""
    from skelanim.nn.layers import GraphAttention, graph_mask, mask_bias

    torch.manual_seed(1)
    layer = GraphAttention(6, 2, negative_slope=0.5).double()
    bias = mask_bias(graph_mask([-1, 0, 1, 1, 0])).double()
    x = torch.randn(5, 6, dtype=F64) * 3.0
    with torch.set_grad_enabled(grad):
        got = layer(x[None], bias)[0].detach().numpy()
    np.testing.assert_allclose(got, _gat_numpy(layer, x.numpy(), bias.numpy(), 0.5), atol=1e-10)
    assert not np.allclose(got, _gat_numpy(layer, x.numpy(), bias.numpy(), 0.2), atol=1e-6)  # the slope matters here


def test_graph_attention_in_its_onnx_export_form_gives_the_same_values(monkeypatch):
    """The form exported to ONNX (shifted scores clipped at -80) has "the same values as torch.softmax": a masked
    pair weighs exp(-80) ~ 2e-35, nothing next to a row sum >= 1 (clipped at, say, -8 it would weigh 3e-4)."""
    from skelanim.nn.layers import GraphAttention, graph_mask, mask_bias

    torch.manual_seed(2)
    layer = GraphAttention(6, 3).double()
    bias = mask_bias(graph_mask([-1, 0, 1, 2, 3, 4])).double()
    x = torch.randn(6, 6, dtype=F64)
    monkeypatch.setattr(torch.onnx, "is_in_onnx_export", lambda: True)
    with torch.no_grad():
        got = layer(x[None], bias)[0].numpy()
    np.testing.assert_allclose(got, _gat_numpy(layer, x.numpy(), bias.numpy(), 0.2), atol=1e-12)


# ------------------------------------------------------------------------------------------- checkpoints
def test_training_state_round_trip_keeps_every_tensor_dtype_scalar_group_and_the_random_stream(tmp_path):
    """save_train_state -> load_train_state gives back each model tensor bit for bit in its dtype, the optimizer's
    tensor AND plain-number entries, its param groups as saved, the meta, and the torch random stream at the save."""
    from skelanim.nn.checkpoint import load_train_state, save_train_state

    model = {
        "w": torch.tensor([[1.5, -2.0]], dtype=torch.float64),
        "n": torch.tensor([7], dtype=torch.int64),
        "h": torch.tensor([0.1, 0.2], dtype=torch.float16),
        "f": torch.arange(6, dtype=torch.float32).reshape(2, 3),
    }
    optim = {
        "state": {0: {"step": 3, "exp_avg": torch.full((1, 2), 0.25)}, 2: {"step": torch.tensor(4.0)}},
        "param_groups": [{"params": [0, 1, 2], "lr": 0.003, "betas": [0.9, 0.95], "weight_decay": 0.01}],
    }
    meta = {"epoch": 2, "step_in_epoch": 1, "global_step": 9, "seconds": 1.5, "history": [{"epoch": 1}], "best": None}
    torch.manual_seed(123)
    path = tmp_path / "train_state.safetensors"
    save_train_state(path, model, optim, meta)
    after_save = torch.rand(4)  # what the stream draws next, from the state that was saved
    torch.manual_seed(999)
    got_model, got_optim, got_meta = load_train_state(path)
    assert torch.equal(torch.rand(4), after_save)
    assert got_model.keys() == model.keys()
    for k, v in model.items():
        assert got_model[k].dtype == v.dtype and torch.equal(got_model[k], v), k
    assert got_optim["state"][0]["step"] == 3 and torch.equal(
        got_optim["state"][0]["exp_avg"], optim["state"][0]["exp_avg"]
    )
    assert torch.equal(got_optim["state"][2]["step"], torch.tensor(4.0))
    assert got_optim["param_groups"] == optim["param_groups"]
    assert got_meta == meta


def test_model_weights_swapped_for_others_of_the_same_shapes_are_refused(tmp_path):
    """config.json records the SHA-256 of model.safetensors: weights of the same names and shapes but other values
    (a half-finished write, a copy from another run) are refused, not loaded under the old config."""
    from safetensors.torch import save_file

    from skelanim.errors import FormatError
    from skelanim.nn.checkpoint import load_model_files, save_model_files

    saved = {"w": torch.full((2, 3), 0.1, dtype=torch.float64), "n": torch.tensor([5])}
    save_model_files(tmp_path, saved, {"format": "toy"})
    tensors, config = load_model_files(tmp_path)
    for k, v in saved.items():  # each tensor as saved, dtype too (0.1 in float64 is not float32's)
        assert tensors[k].dtype == v.dtype and torch.equal(tensors[k], v), k
    assert config["tensors"] == {"n": [1], "w": [2, 3]} and config["format"] == "toy"
    save_file({**saved, "w": torch.ones(2, 3, dtype=torch.float64)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(FormatError, match="SHA-256"):
        load_model_files(tmp_path)


# ------------------------------------------------------------------------------------------- the training loop
class _SeenTask:
    """ToyTask's data (512 samples) recording the sample indices of every batch."""

    metric = "val_mse"

    def __init__(self) -> None:
        from toy_task import ToyTask

        self.toy, self.seen = ToyTask(), []

    def num_samples(self) -> int:
        return 512

    def batch(self, indices, generator):
        self.seen.append(indices.tolist())
        return self.toy.batch(indices, generator)

    def loss(self, model, batch):
        return self.toy.loss(model, batch)

    def validate(self, model):
        return self.toy.validate(model)

    def model_config(self):
        return {"toy": True}


def test_rank_0_of_two_takes_every_other_batch_of_the_one_process_order(tmp_path, monkeypatch):
    """With 2 processes a global batch is 2 x 32 samples: 512 // 64 = 8 steps an epoch, and rank 0 reads the first
    half of each, i.e. batches 0, 2, 4, ... of the one-process run over the same permutation (the other ranks are
    simulated: their collective calls return this rank's values)."""
    from skelanim.nn import distributed as ddp
    from skelanim.nn.train import TrainConfig, fit

    cfg = TrainConfig(epochs=2, batch_size=32, lr=1e-3, warmup_steps=2, progress=False)
    one = _SeenTask()
    torch.manual_seed(0)
    fit(torch.nn.Linear(4, 1), one, tmp_path / "one", cfg, log=lambda s: None)
    assert len(one.seen) == 2 * 16
    monkeypatch.setattr(ddp, "world_size", lambda: 2)
    monkeypatch.setattr(ddp, "barrier", lambda: None)
    monkeypatch.setattr(ddp, "any_rank", lambda flag: flag)
    monkeypatch.setattr(ddp, "broadcast_object", lambda value: value)
    two = _SeenTask()
    torch.manual_seed(0)
    result = fit(torch.nn.Linear(4, 1), two, tmp_path / "two", cfg, log=lambda s: None)
    assert result["steps"] == 2 * 8 and len(two.seen) == 2 * 8
    assert two.seen == [one.seen[e * 16 + 2 * s] for e in range(2) for s in range(8)]


def test_a_new_run_into_a_folder_holding_another_kind_of_model_is_refused(tmp_path):
    """fit (without resume) refuses to replace a model folder whose config.json names another format; the folder's
    files stay as they were. The same format, no format, or an unreadable config pass."""
    import json

    from skelanim.errors import FormatError
    from skelanim.nn.outdir import check_same_kind
    from skelanim.nn.train import TrainConfig, fit

    class Kind(_SeenTask):
        def model_config(self):
            return {"format": "skelanim-predictor"}

    held = tmp_path / "m"
    held.mkdir()
    (held / "config.json").write_text(json.dumps({"format": "skelanim-recognizer"}))
    with pytest.raises(FormatError, match="holds a skelanim-recognizer model"):
        fit(torch.nn.Linear(4, 1), Kind(), held, TrainConfig(epochs=1, batch_size=64, progress=False),
            log=lambda s: None)  # fmt: skip
    assert json.loads((held / "config.json").read_text()) == {"format": "skelanim-recognizer"}
    assert sorted(p.name for p in held.iterdir()) == ["config.json"]
    # resuming it as this kind's run is refused as such (it had been "options differ", some no command has)
    with pytest.raises(FormatError, match="holds a skelanim-recognizer model's run, not a skelanim-predictor's"):
        fit(torch.nn.Linear(4, 1), Kind(), held, TrainConfig(epochs=1, batch_size=64, progress=False), resume=True,
            log=lambda s: None)  # fmt: skip
    check_same_kind(held, "skelanim-recognizer")
    check_same_kind(held, None)
    (held / "config.json").write_text("{not json")
    check_same_kind(held, "skelanim-predictor")


def test_resume_settings_keep_the_data_entries_whole_so_other_data_is_a_note_not_a_refusal(tmp_path, capsys):
    """Entries describing the data (rig, ...) are kept as one value: another rig is "other data" (a note on stderr),
    another architecture option is refused."""
    from skelanim.errors import FormatError
    from skelanim.nn.resume import check_same_settings, resume_settings

    before = resume_settings({"rig": {"height": 150.0, "floor": 4.0}, "width": 64})
    assert before == {"rig": {"height": 150.0, "floor": 4.0}, "width": 64}
    check_same_settings(before, resume_settings({"rig": {"height": 160.0, "floor": 4.0}, "width": 64}),
                        tmp_path / "s", True)  # fmt: skip
    assert "resumes on other data" in capsys.readouterr().err
    with pytest.raises(FormatError, match="width 64 -> 32"):
        check_same_settings(before, resume_settings({"rig": {"height": 150.0, "floor": 4.0}, "width": 32}),
                            tmp_path / "s", True)  # fmt: skip
