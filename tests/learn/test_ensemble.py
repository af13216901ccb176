"""Deep ensembles of recognisers and predictors: combined folders predict the members' mean (recognisers also
keep their features), and refuse members of another recipe with a one-line error."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from skelanim.cli import main
from skelanim.core.rotations import rotvec_to_matrix
from skelanim.errors import FormatError
from skelanim.learn.ensemble import combine_predictors, combine_recognizers
from skelanim.learn.predict import Predictor, train_predictor
from skelanim.learn.predictors import frames_to_vectors, vectors_to_frames
from skelanim.learn.recognize import Recognizer, content_log_probabilities
from skelanim.learn.recognize_train import train_recognizer
from skelanim.nn.checkpoint import read_model_config, save_model_files
from skelanim.nn.train import TrainConfig

TINY = {"channels": (8, 8), "strides": (1, 2)}


@pytest.fixture(scope="module")
def members(tiny_ds, tmp_path_factory):
    """Two tiny ST-GCNs of one recipe (seeds 0 and 1), one trained on other data, one that centres its poses."""
    root = tmp_path_factory.mktemp("members")
    folders = []
    five = tiny_ds.subset([1, 2, 3, 4, 5])  # every content and style still there, other statistics
    for seed, ds, options in ((0, tiny_ds, TINY), (1, tiny_ds, TINY), (0, five, TINY),
                              (1, tiny_ds, {**TINY, "centre": True})):  # fmt: skip
        torch.manual_seed(seed)
        loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, seed=seed)
        out = root / f"m{len(folders)}"
        train_recognizer(ds, None, out, window=32, stride=16, loop=loop, arch_options=options)
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


def test_members_may_differ_in_architecture_options(members, tmp_path):
    plain, centred = Recognizer.load(members[0]), Recognizer.load(members[3])
    combine_recognizers([members[0], members[3]], tmp_path / "mixed")
    mixed = Recognizer.load(tmp_path / "mixed")
    config = json.loads((tmp_path / "mixed" / "config.json").read_text())
    assert config["member_options"] == [{}, {"centre": True}] and config["arch_options"]["centre"] is False
    x = 3.0 * torch.randn(5, 32, plain.rig.num_joints, 16, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(mixed.classify(x)[0], 0.5 * (plain.classify(x)[0] + centred.classify(x)[0]))
    posture = x.clone()
    posture[..., :3] += torch.randn(1, 1, plain.rig.num_joints, 3)  # a constant offset of every joint's position
    torch.testing.assert_close(centred.classify(posture)[0], centred.classify(x)[0])  # the centring member ignores it
    # the other does not (its features: the probabilities of these tiny nets can saturate at random inputs)
    assert not torch.allclose(mixed.classify(posture)[1], mixed.classify(x)[1])
    combine_recognizers(members[:2], tmp_path / "alike")
    assert json.loads((tmp_path / "alike" / "config.json").read_text())["member_options"] is None


def test_log_probabilities_of_members_are_the_log_of_their_mean():
    logits = torch.randn(3, 4, 6)
    expected = torch.softmax(logits, -1).mean(0).log()
    torch.testing.assert_close(content_log_probabilities(logits), expected)
    torch.testing.assert_close(content_log_probabilities(logits[0]), torch.log_softmax(logits[0], -1))


def test_combine_refuses_members_of_another_recipe(members, tmp_path):
    with pytest.raises(FormatError, match="statistics") as err:
        combine_recognizers([members[0], members[2]], tmp_path / "bad")
    assert str(members[2]) in str(err.value) and not (tmp_path / "bad").exists()
    combine_recognizers(members[:2], tmp_path / "ens")
    with pytest.raises(FormatError, match="statistics"):  # an ensemble's members are checked one by one
        combine_recognizers([members[2], tmp_path / "ens"], tmp_path / "bad")
    positions_only = tmp_path / "no_rotations"  # members[1] as if trained without rotations
    shutil.copytree(members[1], positions_only)
    config = json.loads((positions_only / "config.json").read_text())
    (positions_only / "config.json").write_text(json.dumps({**config, "rotations": False}))
    with pytest.raises(FormatError, match="'rotations' differs"):
        combine_recognizers([members[0], positions_only], tmp_path / "bad")


def test_an_ensemble_joins_another_member_by_member(members, tmp_path):
    """Combining the ensemble of members 0 and 3 (plain and centred) with member 1 gives three members with
    their own options, records and weights: the same model as combining the three single folders."""
    combine_recognizers([members[0], members[3]], tmp_path / "pair")
    grown = combine_recognizers([tmp_path / "pair", members[1]], tmp_path / "grown")
    direct = combine_recognizers([members[0], members[3], members[1]], tmp_path / "direct")
    assert grown.members == 3 and grown.member_options == [{}, {"centre": True}, {}]
    config = json.loads((tmp_path / "grown" / "config.json").read_text())
    assert [m["seed"] for m in config["training"]["members"]] == [0, 1, 1]
    x = 3.0 * torch.randn(4, 32, grown.rig.num_joints, 16, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(grown.classify(x)[1], direct.classify(x)[1])
    pair = Recognizer.load(tmp_path / "pair")
    assert not torch.allclose(grown.classify(x)[0], pair.classify(x)[0])  # the third member counts


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
    # into a folder a training run had used: its state goes (a --resume there went on from it over the ensemble)
    trained = tmp_path / "trained"
    shutil.copytree(members[2], trained)
    assert (trained / "train_state.safetensors").is_file()
    (trained / "refine.json").write_text("{}")  # as an IK model's folder holds: another model's file
    before = (trained / "model.safetensors").read_bytes()
    # a folder holding a model is refused without --overwrite (it had been replaced without a word)
    assert main(["learn", "recognize", "combine", str(members[0]), str(members[1]), "-o", str(trained)]) == 2
    assert "which this would replace: --overwrite replaces it" in capsys.readouterr().err
    assert (trained / "model.safetensors").read_bytes() == before
    assert main(["learn", "recognize", "combine", str(members[0]), str(members[1]), "-o", str(trained),
                 "--overwrite"]) == 0  # fmt: skip
    assert "removed" in capsys.readouterr().err and not (trained / "train_state.safetensors").exists()
    assert not (trained / "refine.json").exists() and Recognizer.load(trained).members == 2
    shipped = tmp_path / "shipped"  # learn ship likewise
    assert main(["learn", "ship", str(trained), str(shipped)]) == 0
    assert main(["learn", "ship", str(members[0]), str(shipped)]) == 2
    assert "--overwrite" in capsys.readouterr().err and Recognizer.load(shipped).members == 2
    assert main(["learn", "ship", str(members[0]), str(shipped), "--overwrite"]) == 0


@pytest.fixture(scope="module")
def predictors(tiny_ds, tmp_path_factory):
    """Two tiny GRU predictors of one recipe (seeds 0 and 1), one trained on other data, one of another size."""
    root = tmp_path_factory.mktemp("predictors")
    folders = []
    five = tiny_ds.subset([1, 2, 3, 4, 5])
    for seed, ds, hidden in ((0, tiny_ds, 16), (1, tiny_ds, 16), (0, five, 16), (1, tiny_ds, 8)):
        loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, seed=seed)
        out = root / f"p{len(folders)}"
        train_predictor(ds, None, out, arch="rnn", stride=25, loop=loop,
                        arch_options={"hidden": hidden, "attention": 8, "anchor": True})  # fmt: skip
        folders.append(out)
    return folders


def test_predictor_ensemble_predicts_the_mean_of_its_members(predictors, tmp_path):
    a, b = Predictor.load(predictors[0]), Predictor.load(predictors[1])
    ens = combine_predictors(predictors[:2], tmp_path / "ens", command="test")
    again = Predictor.load(tmp_path / "ens")
    torch.manual_seed(0)
    rot = rotvec_to_matrix(0.3 * torch.randn(3, 25, a.rig.num_joints, 3))
    pelvis = 0.1 * torch.randn(3, 25, 3)
    with torch.no_grad():
        x = frames_to_vectors(rot, pelvis)
        va, vb = a(x)[:, -a.horizon :], b(x)[:, -b.horizon :]
    assert not torch.allclose(va, vb, atol=1e-3)  # the members differ, so the mean is not one of them
    mean_rot, mean_pelvis = vectors_to_frames(0.5 * (va + vb))
    for model in (ens, again):
        got_rot, got_pelvis = model.predict(rot, pelvis)
        torch.testing.assert_close(got_rot, mean_rot, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got_pelvis, mean_pelvis, atol=1e-5, rtol=1e-5)
    assert again.members == 2
    assert sum(p.numel() for p in again.parameters()) == 2 * sum(p.numel() for p in a.parameters())
    config = json.loads((tmp_path / "ens" / "config.json").read_text())
    assert config["members"] == 2 and config["training"]["members"][1]["seed"] == 1


def test_predictor_combine_refuses_other_data_and_other_recipes(predictors, tmp_path, capsys):
    with pytest.raises(FormatError, match="statistics") as err:
        combine_predictors([predictors[0], predictors[2]], tmp_path / "bad")
    assert str(predictors[2]) in str(err.value) and not (tmp_path / "bad").exists()
    out = tmp_path / "ens"
    assert main(["learn", "predict", "combine", str(predictors[0]), str(predictors[1]), "-o", str(out)]) == 0
    assert "2 members" in capsys.readouterr().out and Predictor.load(out).members == 2
    assert main(["learn", "predict", "combine", str(predictors[0]), str(predictors[3]), "-o", str(tmp_path / "x")]) != 0
    err = capsys.readouterr().err
    assert "arch_options" in err and str(predictors[3]) in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and not (tmp_path / "x").exists()
    model = Predictor.load(predictors[1])  # the same statistics up to float rounding (another machine) are the same
    state = {k: v * (1 + 1e-7) if k == "norm.std" else v for k, v in model.state_dict().items()}
    save_model_files(tmp_path / "rounded", state, read_model_config(predictors[1] / "config.json"))
    assert combine_predictors([predictors[0], tmp_path / "rounded"], tmp_path / "ok").members == 2
    grown = combine_predictors([out, predictors[0]], tmp_path / "grown")  # an ensemble counts member by member
    assert grown.members == 3
    records = json.loads((tmp_path / "grown" / "config.json").read_text())["training"]["members"]
    assert [m["seed"] for m in records] == [0, 1, 0]
    torch.testing.assert_close(grown.net.members[2].state_dict(), Predictor.load(predictors[0]).net.state_dict())
