"""The all-MLP predictor (siMLPe after Guo et al. 2023): its DCT round trip, a numpy re-implementation, its
starting point, and its options at the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from skelanim.learn.predict import Predictor
from skelanim.learn.predictors import MotionMLP, dct_matrix


def test_untrained_mlp_holds_the_last_observed_frame():
    torch.manual_seed(0)
    net = MotionMLP(5, observed=8, horizon=6, blocks=3)
    x = torch.randn(2, 11, 5)
    assert torch.equal(net(x), x[:, -1:].expand(2, 6, 5))  # the output layer starts at zero


def test_mlp_with_identity_maps_returns_the_observed_frames_through_the_dct():
    """With the coordinate maps the identity and the blocks' temporal maps zero (so each block adds the norm's
    shift, zero), the network's offsets are the inverse DCT of the DCT of the observed frames, cut to the
    horizon: the observed frames themselves."""
    net = MotionMLP(4, observed=7, horizon=5, blocks=2)
    with torch.no_grad():
        for fc in (net.fc_in, net.fc_out):
            fc.weight.copy_(torch.eye(4))
            fc.bias.zero_()
        for lin in net.temporal:
            lin.weight.zero_()
            lin.bias.zero_()
    x = torch.randn(3, 7, 4)
    torch.testing.assert_close(net(x), x[:, -1:] + x[:, :5], atol=1e-5, rtol=1e-5)


def _numpy_mlp(net: MotionMLP, x: np.ndarray) -> np.ndarray:
    """siMLPe written out in numpy (float64), block by block, from the paper's description."""
    p = {k: v.detach().double().numpy() for k, v in net.named_parameters()}
    k_len = net.observed
    d = dct_matrix(k_len).double().numpy()
    seq = x[:, -k_len:]
    h = np.einsum("kl,bld->bkd", d, seq) @ p["fc_in.weight"].T + p["fc_in.bias"]  # coefficients, coordinates mixed
    for i in range(len(net.temporal)):
        t = np.einsum("kl,bld->bkd", p[f"temporal.{i}.weight"], h) + p[f"temporal.{i}.bias"][None, :, None]
        t = (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5)
        h = h + t * p[f"norms.{i}.weight"] + p[f"norms.{i}.bias"]
    out = h @ p["fc_out.weight"].T + p["fc_out.bias"]
    return seq[:, -1:] + np.einsum("kl,bkd->bld", d, out)[:, : net.horizon]


def test_mlp_matches_a_numpy_implementation_with_random_weights():
    torch.manual_seed(2)
    net = MotionMLP(6, observed=9, horizon=7, blocks=4)
    with torch.no_grad():
        for param in net.parameters():
            param.normal_(0.0, 0.4)
    x = torch.randn(3, 12, 6)
    np.testing.assert_allclose(net(x).detach().double().numpy(), _numpy_mlp(net, x.double().numpy()), atol=1e-4, rtol=1e-4)


def test_mlp_rejects_a_horizon_past_its_observed_frames(tiny_ds):
    with pytest.raises(ValueError, match="at most its 10 observed frames"):
        MotionMLP(7, observed=10, horizon=12)
    model = Predictor("mlp", tiny_ds.rig, observed=25, horizon=25, arch_options={"blocks": 2})
    assert model.config()["arch_options"] == {"observed": 25, "blocks": 2}
    twin = Predictor.from_config(model.config())
    twin.load_state_dict(model.state_dict())
    x = torch.randn(2, 25, 6 * tiny_ds.rig.num_joints + 3)
    torch.testing.assert_close(twin.eval()(x), model.eval()(x))


@pytest.mark.parametrize("flags,hint", [(["--arch", "mlp", "--hidden", "32"], "--arch"),
                                        (["--arch", "mlp", "--half-period"], "--arch"),
                                        (["--arch", "rnn", "--blocks", "3"], "--blocks"),
                                        (["--arch", "lstm"], "unknown architecture 'lstm'"),
                                        (["--arch", "mlp", "--gcn-observed", "10"], "at least 25, got 10")])  # fmt: skip
def test_cli_rejects_options_the_architecture_lacks(tmp_path, capsys, flags, hint):
    from skelanim.cli import main

    out = tmp_path / "pred"
    assert main(["learn", "predict", "train", "--data", str(tmp_path), "--out", str(out), *flags]) == 2
    err = capsys.readouterr().err
    assert hint in err and "Traceback" not in err and not out.exists()
