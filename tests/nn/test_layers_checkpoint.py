"""Graph attention, the FK layer and checkpoint files."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import quat_normalize
from skelanim.errors import FormatError
from skelanim.nn import ForwardKinematics, GATBlock, GraphAttention, grad_reverse, graph_mask, mask_bias
from skelanim.nn.checkpoint import load_model_files, save_model_files

PARENTS = [-1, 0, 1, 2, 1, 4, 0, 6]


def test_graph_mask_hops():
    one = graph_mask(PARENTS, hops=1)
    assert torch.equal(one, one.T) and bool(one.diagonal().all())
    assert bool(one[3, 2]) and not bool(one[3, 1])
    two = graph_mask(PARENTS, hops=2)
    assert bool(two[3, 1]) and not bool(two[3, 0])
    assert torch.equal(graph_mask(PARENTS, hops=0), torch.eye(len(PARENTS), dtype=torch.bool))  # had been hops 1
    with pytest.raises(ValueError, match="hops is a radius"):
        graph_mask(PARENTS, hops=-1)


def test_attention_only_sees_neighbours():
    torch.manual_seed(0)
    layer = GraphAttention(16, 4)
    bias = mask_bias(graph_mask(PARENTS, hops=1))
    x = torch.randn(2, len(PARENTS), 16)
    y = layer(x, bias)
    x2 = x.clone()
    x2[:, 7] += 5.0  # joint 7 neighbours joint 6 only
    y2 = layer(x2, bias)
    changed = (y2 - y).abs().amax(dim=(0, 2)) > 1e-6
    assert changed.tolist() == [False, False, False, False, False, False, True, True]


def test_gat_block_shapes_and_grad():
    torch.manual_seed(0)
    block = GATBlock(8, 2)
    x = torch.randn(3, len(PARENTS), 8, requires_grad=True)
    y = block(x, mask_bias(graph_mask(PARENTS)))
    assert y.shape == (3, len(PARENTS), 8)  # (B, J, D) in, the same out: one feature vector per joint
    # the block ends in a fresh LayerNorm (weight 1, bias 0): every joint's features have mean 0 and variance
    # 1 / (1 + eps / var) ~ 1 over D, by the definition of LayerNorm
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, len(PARENTS)), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(3, len(PARENTS)), atol=1e-3, rtol=0)
    flat = block(x.detach().reshape(-1, 8)[: len(PARENTS)], mask_bias(graph_mask(PARENTS)))  # (J, D): one sample
    assert flat.shape == (len(PARENTS), 8)
    torch.testing.assert_close(flat, y[0].detach())
    (g,) = torch.autograd.grad((y * torch.randn_like(y)).sum(), x)
    assert g.shape == x.shape and torch.isfinite(g).all() and bool((g != 0).any())


def test_grad_reverse_is_identity_forward_and_negated_scaled_backward():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 4, dtype=torch.float64)
    y = grad_reverse(x, 0.3)
    assert torch.equal(y, x)
    (g,) = torch.autograd.grad((w * y.pow(2)).sum(), x)
    assert torch.allclose(g, -0.3 * 2 * w * x)  # d/dx of sum(w x^2) is 2 w x, reversed and scaled


def test_fk_layer_matches_core():
    torch.manual_seed(1)
    offsets = torch.randn(len(PARENTS), 3, dtype=torch.float64)
    q = quat_normalize(torch.randn(4, len(PARENTS), 4, dtype=torch.float64))
    root = torch.randn(4, 3, dtype=torch.float64)
    layer = ForwardKinematics(PARENTS, offsets.numpy() * 123.456789)  # float64 offsets no float32 holds exactly
    _, pos = layer(q, root)
    trans = offsets.expand(4, -1, -1).clone() * 123.456789
    trans[:, 0] = root
    _, ref = forward_kinematics(q, trans, PARENTS)
    assert pos.dtype == torch.float64
    assert torch.allclose(pos, ref, rtol=0, atol=1e-12)  # the offsets had been rounded to float32: 1e-5 off
    _, pos32 = layer(q.float(), root.float())  # float32 rotations: float32 FK of the rounded offsets
    assert pos32.dtype == torch.float32 and torch.allclose(pos32.double(), ref, rtol=0, atol=1e-3)
    layer.offsets = (offsets * 2).float()  # a buffer changed afterwards: float64 FK follows it, not the old copy
    _, moved = layer(q, root)
    trans = (offsets * 2).float().double().expand(4, -1, -1).clone()
    trans[:, 0] = root
    assert torch.allclose(moved, forward_kinematics(q, trans, PARENTS)[1], rtol=0, atol=1e-12)


def test_model_files_roundtrip_and_corruption(tmp_path):
    tensors = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.ones(4)}
    save_model_files(tmp_path, tensors, {"name": "x"})
    back, config = load_model_files(tmp_path)
    assert config["name"] == "x" and torch.equal(back["a"], tensors["a"])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary files left
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(FormatError, match="corrupt weights"):
        load_model_files(tmp_path)
    save_model_files(tmp_path, tensors, {"name": "x"})
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["tensors"]["b"] = [5]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(FormatError, match="do not match"):
        load_model_files(tmp_path)
    with pytest.raises(FormatError, match="no such model folder"):
        load_model_files(tmp_path / "missing")
    (tmp_path / "config.json").unlink()
    with pytest.raises(FormatError, match="config.json is missing"):
        load_model_files(tmp_path)
    np.testing.assert_equal(True, True)


def test_a_failed_write_is_an_os_error_and_leaves_no_folder(tmp_path, monkeypatch):
    """safetensors reports a full disk as its own error: it becomes an OS error naming the weights file (the
    CLI's one line), and a model folder this call created is removed, not left empty or half-written."""
    import errno

    from safetensors import SafetensorError

    from skelanim.nn import checkpoint

    def full_disk(tensors, path):
        with open(path, "wb") as handle:
            handle.write(b"partial")
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(checkpoint, "save_file", full_disk)
    with pytest.raises(OSError) as caught:
        save_model_files(tmp_path / "new", {"w": torch.ones(2)}, {"kind": "toy"})
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "new" / "model.safetensors")
    assert not (tmp_path / "new").exists()
    monkeypatch.undo()
    save_model_files(tmp_path / "old", {"w": torch.ones(2)}, {"kind": "toy"})
    monkeypatch.setattr(checkpoint, "save_file", full_disk)
    with pytest.raises(OSError):
        save_model_files(tmp_path / "old", {"w": torch.zeros(2)}, {"kind": "toy"})
    tensors, _ = load_model_files(tmp_path / "old")  # an existing folder keeps its model
    assert torch.equal(tensors["w"], torch.ones(2)) and sorted(p.name for p in (tmp_path / "old").iterdir()) == [
        "config.json", "model.safetensors"]  # fmt: skip
