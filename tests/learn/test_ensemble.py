"""Deep ensembles of recognisers: combined folders predict the members' mean, keep their features, and refuse
members of another recipe with a one-line error."""

from __future__ import annotations

import json

import pytest
import torch

from skelanim.cli import main
from skelanim.errors import FormatError
from skelanim.learn.ensemble import combine_recognizers
from skelanim.learn.recognize import Recognizer, content_log_probabilities, train_recognizer
from skelanim.nn.train import TrainConfig

TINY = {"channels": (8, 8), "strides": (1, 2)}


@pytest.fixture(scope="module")
def members(tiny_ds, tmp_path_factory):
    """Two tiny ST-GCNs of one recipe (seeds 0 and 1) and one trained on other data."""
    root = tmp_path_factory.mktemp("members")
    folders = []
    five = tiny_ds.subset([1, 2, 3, 4, 5])  # every content and style still there, other statistics
    for seed, ds in ((0, tiny_ds), (1, tiny_ds), (0, five)):
        torch.manual_seed(seed)
        loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, seed=seed)
        out = root / f"m{len(folders)}"
        train_recognizer(ds, None, out, window=32, stride=16, loop=loop, arch_options=TINY)
        folders.append(out)
    return folders


def test_ensemble_is_the_mean_of_its_members(members, tmp_path):
    a, b = Recognizer.load(members[0]), Recognizer.load(members[1])
    ens = combine_recognizers(members[:2], tmp_path / "ens", command="test")
    again = Recognizer.load(tmp_path / "ens")
    x = 3.0 * torch.randn(5, 32, a.rig.num_joints, 16)
    pa, fa = a.classify(x)
    pb, fb = b.classify(x)
    assert not torch.allclose(pa, pb)  # the members differ, so the mean is not one of them
    for model in (ens, again):
        p, f = model.classify(x)
        torch.testing.assert_close(p, 0.5 * (pa + pb))
        torch.testing.assert_close(f, torch.cat([fa, fb], dim=-1))
        assert model.feature_dim == a.feature_dim + b.feature_dim
    config = json.loads((tmp_path / "ens" / "config.json").read_text())
    assert config["members"] == 2 and len(config["training"]["members"]) == 2
    assert config["training"]["members"][1]["seed"] == 1 and config["training"]["command"] == "test"


def test_log_probabilities_of_members_are_the_log_of_their_mean():
    logits = torch.randn(3, 4, 6)
    expected = torch.softmax(logits, -1).mean(0).log()
    torch.testing.assert_close(content_log_probabilities(logits), expected)
    torch.testing.assert_close(content_log_probabilities(logits[0]), torch.log_softmax(logits[0], -1))


def test_combine_refuses_members_of_another_recipe(members, tmp_path):
    with pytest.raises(FormatError, match="normalisation") as err:
        combine_recognizers([members[0], members[2]], tmp_path / "bad")
    assert str(members[2]) in str(err.value) and not (tmp_path / "bad").exists()
    combine_recognizers(members[:2], tmp_path / "ens")
    with pytest.raises(FormatError, match="already an ensemble"):
        combine_recognizers([tmp_path / "ens", members[0]], tmp_path / "bad")


def test_cli_combine_and_its_one_line_errors(members, tmp_path, capsys):
    out = tmp_path / "ens"
    assert main(["learn", "recognize", "combine", str(members[0]), str(members[1]), "-o", str(out)]) == 0
    assert "2 members" in capsys.readouterr().out and Recognizer.load(out).members == 2
    assert main(["learn", "recognize", "combine", str(members[0]), str(members[2]), "-o", str(tmp_path / "x")]) != 0
    err = capsys.readouterr().err
    assert str(members[2]) in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()
    assert main(["learn", "recognize", "combine", str(members[0]), "-o", str(tmp_path / "y")]) == 2
    assert "two or more" in capsys.readouterr().err and not (tmp_path / "y").exists()
