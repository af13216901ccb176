"""The learning commands on motion that is not Bandai's: another skeleton (Xia et al.'s 31-joint CMU rig) and
other file names (``--labels none`` or a pattern), from training to eval and use."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

import skelanim
from skelanim.cli import main
from skelanim.data.labels import LabelError, label_parser

XIA = ["xia_style/angry_13_000.bvh", "xia_style/depressed_13_000.bvh", "xia_style/neutral_01_000.bvh",
       "xia_style/sexy_01_000.bvh", "xia_style/strutting_01_000.bvh"]  # fmt: skip
#: Xia's names are STYLE_SUBJECT_TAKE; for the tests the subject number stands in for a content.
XIA_LABELS = r"(?P<style>[a-z]+)_(?P<content>\d+)_"


def test_label_parser_presets_none_and_patterns():
    assert label_parser("bandai")("x/dataset-1_walk-back_not-confident_001.bvh") == {
        "dataset": "1", "content": "walk-back", "style": "not-confident", "take": "001"}  # fmt: skip
    assert label_parser("generated")("walk_happy_00.bvh") == {"content": "walk", "style": "happy", "take": "00"}
    # a content with "_" (DeepMimic's dance_a; generate writes nostyle for a styleless model) had matched nothing
    assert label_parser("generated")("dance_a_nostyle_00.bvh") == {"content": "dance_a", "style": "nostyle", "take": "00"}
    assert label_parser("generated")("side_step_angry_03.bvh")["content"] == "side_step"
    assert label_parser("none") is None
    lafan = label_parser(r"(?P<content>\D+)\d*_subject(?P<style>\d+)$")  # LaFAN1's walk1_subject5.bvh
    assert lafan("walk1_subject5.bvh") == {"content": "walk", "style": "5"}
    assert lafan("fallAndGetUp2_subject3.bvh") == {"content": "fallAndGetUp", "style": "3"}
    with pytest.raises(LabelError, match="walk_subject5x"):
        lafan("walk_subject5x.bvh")
    with pytest.raises(ValueError, match="not bandai, generated, none or a regular expression"):
        label_parser("(?P<content>[a-z]+")
    with pytest.raises(ValueError, match="no named group"):
        label_parser("[a-z]+_")


@pytest.fixture(scope="module")
def xia(mocap_files, tmp_path_factory):
    """``--data`` for the five Xia clips copied into a temporary folder (the cache redirected there too)."""
    folder = tmp_path_factory.mktemp("xia")
    for f in mocap_files(XIA):
        shutil.copy(f, folder / f.name)
    mp = pytest.MonkeyPatch()
    mp.setenv("SKELANIM_CACHE", str(tmp_path_factory.mktemp("xia-cache")))
    yield folder
    mp.undo()


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_predictor_trains_evaluates_and_predicts_on_an_unlabelled_other_skeleton(xia, tmp_path, capsys):
    data = ["--data", str(xia)]
    code, _, err = _run(capsys, ["learn", "predict", "train", *data, "-o", str(tmp_path / "m"), "--epochs", "1"])
    shown = [line.rsplit("\r", 1)[-1] for line in err.split("\n")]  # as a terminal shows it: a \r overwrites
    shown = [line for line in shown if line.strip()]  # (the loading bar, cleared before the error)
    assert code == 2 and len(shown) == 1 and shown[0].startswith("error: ")  # Bandai labels by default: one line
    assert "does not match the label pattern" in err and "--labels none" in err and not (tmp_path / "m").exists()
    code, _, err = _run(capsys, ["learn", "predict", "train", *data, "--labels", "none", "-o", str(tmp_path / "m")])
    assert code == 2 and "needs a style in every file name" in err and "--split file or none" in err

    model = tmp_path / "mlp"
    train = ["learn", "predict", "train", *data, "--labels", "none", "--split", "file", "--arch", "mlp", "--mirror",
             "--epochs", "1", "--max-steps", "2", "--no-progress", "-o", str(model)]  # fmt: skip
    code, _, err = _run(capsys, train)  # 8 training windows, batches of 64
    assert code == 2 and "fewer than one batch of 64" in err and "--batch-size" in err
    assert len([line for line in err.strip().splitlines() if not line.startswith("note:")]) == 1 and not model.exists()
    assert _run(capsys, [*train, "--batch-size", "4"])[0] == 0
    config = json.loads((model / "config.json").read_text())
    assert len(config["rig"]["skeleton"]["names"]) == 31

    # eval scores the named model and the baselines; the shipped (Bandai) predictors are left out, not crashed into
    code, out, err = _run(capsys, ["learn", "predict", "eval", *data, "--labels", "none", "--split", "none",
                                   "--mlp", str(model), "--json"])  # fmt: skip
    assert code == 0, err
    methods = json.loads(out)["methods"]
    assert set(methods) == {"mlp", "zero_velocity", "constant_velocity"}
    for scores in methods.values():
        assert len(scores["mpjpe"]) == 6 and all(0 < v < 1 for v in scores["mpjpe"])
    code, _, err = _run(capsys, ["learn", "predict", "eval", "--data", str(xia), "--labels", "none", "--split", "none",
                                 "--mlp", str(model), "--gcn", str(model)])  # fmt: skip
    assert code == 2 and "is a mlp predictor, not gcn" in err, err  # it would be scored as a DCT-GCN (it had been)

    src = xia / "neutral_01_000.bvh"
    out_file = tmp_path / "next.bvh"
    assert main(["predict", str(src), "--method", "mlp", "--model", str(model), "--seconds", "0.5", "-o", str(out_file)]) == 0
    given, result = skelanim.load(src), skelanim.load(out_file)
    assert result.skeleton.names == given.skeleton.names and result.num_frames == given.num_frames + round(0.5 * given.fps)
    torch.testing.assert_close(result.positions()[: given.num_frames], given.positions(), atol=1e-3, rtol=0)


def _warnings_apart(err: str) -> tuple[list[str], str]:
    """stderr's ``warning:`` lines, and the rest."""
    lines = err.splitlines(keepends=True)
    return [line for line in lines if line.startswith("warning:")], "".join(line for line in lines if not line.startswith("warning:"))


def test_bandai_models_refuse_other_skeletons_in_one_line(xia, tmp_path, capsys, mocap_files):
    model = tmp_path / "mlp"
    train = ["learn", "predict", "train", "--data", str(xia), "--labels", "none", "--split", "none", "--arch", "mlp",
             "--epochs", "1", "--batch-size", "4", "--max-steps", "1", "--no-progress", "-o", str(model)]  # fmt: skip
    assert _run(capsys, train)[0] == 0
    bandai = mocap_files(["bandai_namco_1/dataset-1_walk_angry_001.bvh"])[0]
    code, _, err = _run(capsys, ["learn", "predict", "eval", "--data", str(bandai), "--split", "none", "--mlp", str(model),
                                 "--json"])  # fmt: skip
    warned, err = _warnings_apart(err)  # one step of one epoch: the model warns that its run is unfinished
    assert warned and all("unfinished training run" in line for line in warned)
    assert code == 2 and err.startswith(f"error: {bandai}") and "31-joint skeleton" in err
    assert "--retarget" in err and len(err.strip().splitlines()) == 1 and "name your own" not in err
    # no predictor named: the shipped ones are tried, and the hint says how to name one's own
    code, _, err = _run(capsys, ["learn", "predict", "eval", "--data", str(xia), "--labels", "none", "--split", "none",
                                 "--json"])  # fmt: skip
    assert code == 2 and "22-joint skeleton" in err and "--rnn/--gcn/--mlp name your own predictors" in err
    cmu = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]  # 31 joints too, named otherwise
    code, _, err = _run(capsys, ["predict", str(cmu), "--method", "mlp", "--model", str(model), "-o", str(tmp_path / "p.bvh")])
    err = _warnings_apart(err)[1]
    assert code == 2 and err.startswith(f"error: {cmu}") and "this motion has joint " in err and " named '" in err
    assert not (tmp_path / "p.bvh").exists()


def test_recognition_and_generation_with_a_label_pattern_on_another_skeleton(xia, tmp_path, capsys):
    data = ["--data", str(xia), "--labels", XIA_LABELS, "--split", "none"]
    code, _, err = _run(capsys, ["learn", "recognize", "train", "--data", str(xia), "--labels", "none", "-o", str(tmp_path / "r")])
    assert code == 2 and "needs the content of each file" in err
    rec = tmp_path / "rec"
    code, _, err = _run(capsys, ["learn", "recognize", "train", *data, "--epochs", "1", "--batch-size", "4",
                                 "--max-steps", "1", "--no-progress", "-o", str(rec)])  # fmt: skip
    assert code == 0 and json.loads((rec / "config.json").read_text())["contents"] == ["01", "13"]
    # --mirror is on by default and flips nothing here (01 and 13 have no mirror label): said, not silent
    assert "warning: --mirror flips no window: no content has a mirror label" in err and "here: 01, 13" in err
    # clips shorter than the 64-frame window (at 25 fps) are padded by their last pose: said too, counted by hand
    short = sum(round(skelanim.load(f).duration * 25) + 1 < 64 for f in sorted(xia.glob("*.bvh")))
    assert 0 < short and f"note: {short} of 5 training clips are shorter than the 64-frame window" in err
    code, out, err = _run(capsys, ["learn", "recognize", "eval", *data, "--model", str(rec), "--json"])
    assert code == 0, err
    obj = json.loads(out)
    assert obj["baseline_cnn"] is None and set(obj["per_class"]) == {"01", "13"}  # no shipped baseline for this rig
    # evaluate reads the contents of its sets by the same pattern, for 'recognised'
    code, out, err = _run(capsys, ["evaluate", str(xia), str(xia), "--recognizer", str(rec), "--labels", XIA_LABELS, "--json"])
    assert code == 0, err
    compared = json.loads(out)
    assert all(0 < compared[k]["recognised"] <= 1 for k in ("a", "b"))  # 3 files of 01, 2 of 13: any answer hits
    code, out, err = _run(capsys, ["evaluate", str(xia), str(xia), "--recognizer", str(rec), "--json"])
    assert code == 0, err  # by default Xia's names read as CONTENT_STYLE_TAKE: contents 'angry', ... it never says
    assert json.loads(out)["a"]["recognised"] == 0.0

    gen = tmp_path / "gen"
    code, _, err = _run(capsys, ["learn", "generate", "train", *data, "--vae-epochs", "1", "--gan-epochs", "1",
                                 "--batch-size", "4", "--max-steps", "1", "--no-progress", "-o", str(gen)])  # fmt: skip
    assert code == 0 and "chosen by reconstruction" in err
    scored = [*data[:-1], "file"]  # real sets A and B: the files split (a file of each content in B)
    code, _, err = _run(capsys, ["learn", "generate", "eval", *scored, "--model", str(gen), "--json"])
    assert code == 2 and "--recognizer" in err and len(err.strip().splitlines()) == 1
    code, out, err = _run(capsys, ["learn", "generate", "eval", *scored, "--model", str(gen), "--recognizer", str(rec), "--json"])
    assert code == 0, err
    scores = json.loads(out)
    assert 0 <= scores["recognised"] <= 1
    # an audit: --json had left out the checks the README quotes from it (the text output printed them)
    assert {"limb_speed", "limb_speed_real", "contact_share", "contact_share_real", "diversity_real"} <= scores.keys()
    # '--split none' made real set B real set A: fid_real 0 and pose_outliers 1 for any generator
    code, _, err = _run(capsys, ["learn", "generate", "eval", *data, "--model", str(gen), "--recognizer", str(rec), "--json"])
    assert code == 2 and "--split" in err and len(err.strip().splitlines()) == 1
    assert main(["generate", "--model", str(gen), "--content", "13", "--style", "angry", "-n", "1", "-o", str(tmp_path / "g")]) == 0
    (sample,) = (tmp_path / "g").glob("*.bvh")
    assert skelanim.load(sample).skeleton.num_joints == 31
    # the generator keeps its --labels, so --interpolate reads Xia's names by it (they had read as content 'angry')
    assert json.loads((gen / "config.json").read_text())["labels"] == XIA_LABELS
    a, b = sorted(xia.glob("*_13_*.bvh"))
    code, _, err = _run(capsys, ["generate", "--model", str(gen), "--interpolate", str(a), "--interpolate", str(b),
                                 "-n", "2", "-o", str(tmp_path / "i")])  # fmt: skip
    assert code == 0, err
    assert len(list((tmp_path / "i").glob("interp_*.bvh"))) == 2


def test_motion_in_other_units_is_refused_or_read_at_the_models_size(learn_files, tmp_path, capsys):
    """A learning audit: a Bandai walk saved in metres scored 0 % in `learn recognize eval`, 11 times the error in
    `learn predict eval`, trained beside centimetre files without a word, and `generate --interpolate` read its
    stride as 524 cm where the centimetre original gave 306. Now the eval and train commands name the file and the
    factor, and interpolation reads it at the generator's size: the same latent as the original."""
    from skelanim.learn.generate import Generator
    from skelanim.ops import scale

    walk = skelanim.load(learn_files[0])
    (tmp_path / "metres").mkdir()
    (tmp_path / "mixed").mkdir()
    skelanim.save(scale(walk, 0.01), tmp_path / "metres" / learn_files[0].name)
    shutil.copy(learn_files[0], tmp_path / "mixed" / learn_files[0].name)
    skelanim.save(scale(skelanim.load(learn_files[1]), 0.01), tmp_path / "mixed" / learn_files[1].name)
    message = "times the {}'s size (another length unit?); scale it first: skelanim convert FILE OUT --scale 100"
    for command, kind in (("recognize", "recogniser"), ("predict", "predictor")):
        capsys.readouterr()
        assert main(["learn", command, "eval", "--data", str(tmp_path / "metres"), "--split", "none", "--json"]) == 2
        err = capsys.readouterr().err
        assert str(tmp_path / "metres" / learn_files[0].name) in err and message.format(kind) in err
    assert main(["learn", "predict", "train", "--data", str(tmp_path / "mixed"), "--split", "none",
                 "-o", str(tmp_path / "out"), "--epochs", "1"]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert "times the first file's size (another length unit?)" in err and not (tmp_path / "out").exists()
    gen = Generator.load(None)
    content, style = "walk", "normal"
    same = gen.encode_motion(walk, content, style)
    torch.testing.assert_close(gen.encode_motion(scale(walk, 0.01), content, style), same, atol=1e-4, rtol=0)


def test_predict_eval_on_clips_too_short_for_a_window_is_an_error(mocap_dir, capsys):
    """It had printed ``"methods": {}`` and exited 0 (two DeepMimic clips under 2 s, through --retarget)."""
    clips = [str(mocap_dir / "deepmimic" / f"humanoid3d_{name}.txt") for name in ("walk", "run")]
    assert main(["learn", "predict", "eval", "--retarget", "--data", clips[0], "--data", clips[1], "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no test clip lasts the 2 s (50 frames at 25 fps) a window needs" in captured.err
