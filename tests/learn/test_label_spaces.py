"""Label spaces: a model trained on two datasets that name their classes each in its own way classifies a file
that names its dataset among that dataset's classes only, and a right answer can never become wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from skelanim.data.labels import label_spaces, parse_labels
from skelanim.learn.recognize import Recognizer, evaluate_recognizer
from skelanim.learn.recognize_train import train_recognizer
from skelanim.nn.train import TrainConfig

TINY = {"channels": (8, 8), "strides": (1, 2)}
CONTENTS = ["bow", "bye", "run", "walk", "wave-right-hand"]
SPACES = {"1": ["bow", "bye", "run", "walk"], "2": ["run", "walk", "wave-right-hand"]}


def _model(rig, spaces=SPACES) -> Recognizer:
    return Recognizer("stgcn", rig, CONTENTS, [], window=32, arch_options=TINY, label_spaces=spaces)


def test_label_spaces_of_file_names():
    names = ["dataset-1_bye_happy_001", "dataset-1_walk_sad_001", "dataset-2_walk_elderly_001",
             "dataset-2_wave-right-hand_active_001", "dataset-1_walk_happy_002"]  # fmt: skip
    spaces = label_spaces([parse_labels(n) for n in names])
    assert spaces == {"1": ("bye", "walk"), "2": ("walk", "wave-right-hand")}
    assert label_spaces([parse_labels(n) for n in names if n.startswith("dataset-1")]) is None  # one dataset
    assert label_spaces([{"content": "walk", "dataset": "1"}, {"content": "walk"}]) is None  # one does not say


def test_restriction_by_hand(tiny_ds):
    model = _model(tiny_ds.rig)
    probs = torch.tensor([[0.1, 0.1, 0.1, 0.2, 0.5],  # dataset 1 has no wave-right-hand: walk
                          [0.1, 0.5, 0.1, 0.2, 0.1],  # dataset 2 has no bye: walk
                          [0.1, 0.5, 0.1, 0.2, 0.1]])  # fmt: skip
    out = model.within_label_spaces(probs, ["1", "2", None])
    assert out[0].tolist() == pytest.approx([0.2, 0.2, 0.2, 0.4, 0.0])
    assert out[1].tolist() == pytest.approx([0.0, 0.0, 0.25, 0.5, 0.25])
    assert torch.equal(out[2], probs[2])  # a file that does not name its dataset: every class
    assert torch.equal(model.within_label_spaces(probs, ["3", "1", "2"])[0], probs[0])  # a dataset the model lacks
    plain = Recognizer("stgcn", tiny_ds.rig, CONTENTS, [], window=32, arch_options=TINY)
    assert torch.equal(plain.within_label_spaces(probs, ["1", "2", "1"]), probs)  # no label spaces: unchanged


def test_a_right_answer_stays_right(tiny_ds):
    model = _model(tiny_ds.rig)
    g = torch.Generator().manual_seed(0)
    probs = torch.rand(500, len(CONTENTS), generator=g).pow(4)
    probs = probs / probs.sum(-1, keepdim=True)
    datasets = [("1", "2")[int(i)] for i in torch.randint(0, 2, (500,), generator=g)]
    truth = torch.tensor([CONTENTS.index(SPACES[d][int(torch.randint(0, len(SPACES[d]), (), generator=g))])
                          for d in datasets])  # fmt: skip
    before = probs.argmax(-1) == truth
    after = model.within_label_spaces(probs, datasets).argmax(-1) == truth
    assert not (before & ~after).any()  # never right before and wrong after
    assert (after & ~before).sum() > 50  # and answers from the other dataset's classes are put right


def test_a_files_right_answer_stays_right_when_windows_disagree(tiny_ds):
    """Restricting each window before the file's vote could turn a file right without label spaces wrong: one
    window sure of `walk`, two spread over the other dataset's contents with a little `run`, became a `run` file."""
    from types import SimpleNamespace

    model = _model(tiny_ds.rig, {"1": ["run", "walk"], "2": ["bow", "bye", "wave-right-hand"]})
    walk, run, bow = (CONTENTS.index(c) for c in ("walk", "run", "bow"))
    others = [CONTENTS.index(c) for c in ("bow", "bye", "wave-right-hand")]  # not dataset 1's
    probs = torch.zeros(3, len(CONTENTS))
    probs[0, walk], probs[0, bow] = 0.9, 0.1
    probs[1:, run] = 0.1
    probs[1:, others] = 0.3
    ds = SimpleNamespace(clips=[SimpleNamespace(labels={"dataset": "1"})])
    out = {"windows": torch.zeros(3, 2, dtype=torch.long), "unrestricted": probs,
           "probs": model.within_label_spaces(probs, ["1"] * 3)}  # fmt: skip
    assert int(probs.mean(0).argmax()) == walk  # right without label spaces
    assert int(out["probs"].mean(0).argmax()) == run  # each window restricted before the vote: wrong
    ids, files = model.file_probabilities(out, ds)  # type: ignore[arg-type]
    assert ids.tolist() == [0] and int(files[0].argmax()) == walk and float(files[0].sum()) == pytest.approx(1.0)


def test_test_time_mirror_probabilities_sum_to_one(tiny_ds):
    """Classes with a mirror image were averaged with the mirrored window's, the others (handed contents such as
    `bye`) kept the window's own: rows summed to 1.25-1.29 on the shipped networks."""
    torch.manual_seed(0)
    contents = ["bye", "walk", "walk-left", "walk-right", "wave-right-hand"]
    model = Recognizer("stgcn", tiny_ds.rig, contents, [], window=32, arch_options=TINY, test_mirror=True).eval()
    windows = tiny_ds.windows(32, 16)
    keys = ("rot", "pelvis", "yaw", "positions")
    g = tiny_ds.gather(windows, 32, keys=keys)
    x = model.inputs(*(g[k].float() for k in keys))
    probs, _ = model.classify(x)
    assert torch.allclose(probs.sum(-1), torch.ones(len(probs)), atol=1e-6)
    model.test_mirror = False
    plain, _ = model.classify(x)
    assert not torch.allclose(probs, plain)  # the mirror image did vote


def test_saved_checked_and_refused_when_bad(tiny_ds, tmp_path):
    with pytest.raises(ValueError, match="label space '2'"):
        _model(tiny_ds.rig, {"1": ["walk"], "2": ["swim"]})
    model = _model(tiny_ds.rig)
    again = Recognizer.from_config(json.loads(json.dumps(model.config())))
    assert again.label_spaces == {k: tuple(v) for k, v in SPACES.items()}


def test_training_records_the_spaces_and_eval_uses_them(tiny_ds, tmp_path):
    out = tmp_path / "rec"
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    train_recognizer(tiny_ds, None, out, window=32, stride=16, loop=loop, arch_options=TINY)
    model = Recognizer.load(out)
    assert model.label_spaces == {"1": ("bow", "walk"), "2": ("run",)}  # the tiny set's two datasets
    res = evaluate_recognizer(model, tiny_ds, stride=16)
    truth, guess = res["predicted"]["windows"]
    datasets = [tiny_ds.clips[int(c)].labels["dataset"] for c in tiny_ds.windows(32, 16)[:, 0]]
    assert all(g in model.label_spaces[d] for g, d in zip(guess, datasets, strict=True))
    assert all(g == "run" for t, g in zip(truth, guess, strict=True) if t == "run")  # dataset 2 has only runs


def test_user_files_that_name_their_dataset(tiny_ds, tmp_path):
    import skelanim

    model = _model(tiny_ds.rig)
    motion = skelanim.load(tiny_ds.clips[0].path)
    named = {}
    for stem in ("dataset-2_walk_x_001", "my_walk"):
        m = motion.copy()
        m.metadata["path"] = str(Path(tmp_path) / f"{stem}.bvh")
        named[stem] = model.recognize_motions([m])["probs"][0]
    allowed = torch.tensor([c in SPACES["2"] for c in CONTENTS])
    assert named["dataset-2_walk_x_001"][~allowed].abs().max() == 0  # only dataset 2's classes
    m = motion.copy()
    m.metadata["path"] = str(Path(tmp_path) / "dataset-2_walk_x_001.bvh")
    voted = model.embed_motions([m])[1][0]  # what `skelanim evaluate` counts as recognised
    assert voted == CONTENTS[int(named["dataset-2_walk_x_001"].argmax())] and voted in SPACES["2"]
    assert named["my_walk"][~allowed].min() > 0  # a name that says nothing: every class
    assert float(named["dataset-2_walk_x_001"].sum()) == pytest.approx(1.0)


def test_ensemble_members_must_share_the_spaces(tiny_ds, tmp_path):
    from skelanim.learn.ensemble import combine_recognizers
    from skelanim.nn.checkpoint import save_model_files

    folders = []
    for i, spaces in enumerate((SPACES, SPACES, {"1": ["bow"], "2": ["run"]})):
        model = _model(tiny_ds.rig, spaces)
        folders.append(tmp_path / f"m{i}")
        save_model_files(folders[-1], model.state_dict(), model.config())
    assert combine_recognizers(folders[:2], tmp_path / "pair").label_spaces == _model(tiny_ds.rig).label_spaces
    with pytest.raises(Exception, match="label_spaces"):
        combine_recognizers([folders[0], folders[2]], tmp_path / "bad")


def test_shipped_recognisers_have_their_training_files_spaces():
    """The shipped folders' label spaces are what the names of the files they were trained on say."""
    for name in ("recognize", "recognize_cnn"):
        model = Recognizer.load(None, default=name)
        config = json.loads((Path(__import__("skelanim.learn", fromlist=["x"]).__file__).parent / "pretrained" / name
                             / "config.json").read_text())  # fmt: skip
        training = config["training"]
        files = training["members"][0]["data"] if "members" in training else training["data"]
        assert model.label_spaces == label_spaces([parse_labels(f) for f in files])
        assert set(model.label_spaces) == {"1", "2"}
