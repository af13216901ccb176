"""The learning CLI with the shipped defaults: eval JSON keys, generate/predict write loadable BVH, evaluate,
one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from PIL import Image

import skelanim
from skelanim.cli import main
from skelanim.learn.common import pretrained_dir
from skelanim.metrics.kinematic import bone_length_error

SHIPPED = ("recognize", "recognize_cnn", "predict_rnn", "predict_gcn", "predict_mlp", "generate")


@pytest.fixture(scope="module")
def shipped():
    missing = [n for n in SHIPPED if not (pretrained_dir(n) / "model.safetensors").is_file()]
    if missing:
        pytest.fail(f"shipped pretrained models missing: {missing}")


@pytest.mark.parametrize("name", SHIPPED)
def test_each_shipped_default_fits_the_5_mb_budget(name):
    """Issue #5: every pretrained default ships in at most 5 MB (weights, config and provenance together)."""
    folder = pretrained_dir(name)
    size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    assert 0 < size <= 5_000_000, f"{name}: {size} bytes"


@pytest.fixture(scope="module")
def data_args(learn_files, tmp_path_factory, monkeypatch_module):
    """``--data`` arguments for four files copied into a temporary folder (cache redirected there too)."""
    folder = tmp_path_factory.mktemp("cli-data")
    for f in learn_files[:4]:
        shutil.copy(f, folder / f.name)
    monkeypatch_module.setenv("SKELANIM_CACHE", str(tmp_path_factory.mktemp("cli-cache")))
    return ["--data", str(folder)]


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_recognize_eval_json_keys(shipped, data_args, capsys, tmp_path):
    plot = tmp_path / "confusion.png"
    obj = _json(capsys, ["learn", "recognize", "eval", *data_args, "--split", "none", "--json", "--plot", str(plot)])
    with Image.open(plot) as image:  # the JSON stays the only thing printed
        assert image.format == "PNG"
    assert set(obj) == {"top1_files", "top1_windows", "per_class", "baseline_cnn", "files", "windows"}  # #5's + counts
    assert set(obj["baseline_cnn"]) == {"top1_files", "top1_windows"}
    assert set(obj["per_class"]) == {"walk", "bow"} and 0.0 <= obj["top1_files"] <= 1.0


def test_predict_eval_json_keys(shipped, data_args, capsys, tmp_path):
    plot = tmp_path / "horizons.svg"
    obj = _json(capsys, ["learn", "predict", "eval", *data_args, "--split", "none", "--stride", "25", "--json",
                         "--plot", str(plot)])  # fmt: skip
    assert plot.read_text().lstrip().startswith("<?xml") and "horizon (ms)" in plot.read_text()
    assert set(obj) == {"horizons_ms", "horizons_ms_measured", "methods", "windows"}
    assert obj["horizons_ms"] == obj["horizons_ms_measured"] == [80, 160, 320, 400, 560, 1000]  # 25 fps: exact
    assert set(obj["methods"]) == {"rnn", "gcn", "mlp", "combined", "zero_velocity", "constant_velocity"}
    for scores in obj["methods"].values():
        assert set(scores) == {"mpjpe", "mpjpe_pose", "mpjpe_global", "angle_deg"} and all(len(v) == 6 for v in scores.values())
    scores = {name: obj["methods"][name]["mpjpe"] for name in ("rnn", "gcn", "mlp", "combined")}
    assert scores["combined"] not in (scores["rnn"], scores["gcn"], scores["mlp"])  # its own, not a copy of one


def test_generate_writes_bvh_on_the_training_skeleton(shipped, tmp_path, capsys):
    assert (
        main(["generate", "--content", "walk", "--style", "happy", "-n", "2", "-o", str(tmp_path), "--seed", "3"]) == 0
    )
    files = sorted(tmp_path.glob("*.bvh"))
    assert len(files) == 2
    for f in files:
        motion = skelanim.load(f)
        assert motion.skeleton.num_joints == 22
        pos = motion.positions()
        parents = motion.skeleton.parents.tolist()
        assert bone_length_error(pos[:, 1:], [-1] + [p - 1 for p in parents[2:]], motion.skeleton.offsets[1:]) < 1e-4
    assert main(["generate", "--content", "fly", "-o", str(tmp_path)]) == 2
    assert "unknown content 'fly'" in capsys.readouterr().err


def test_generated_motion_stands_on_the_captures_floor_moved_whole(shipped, tmp_path, capsys):
    """A review: the shipped generator's samples sank into the floor of its training captures, up to 7.6 cm (the
    rig's: their lowest body joint's median). Written, each motion's lowest body joint lies on that floor, and it is
    the ``--no-ground`` motion's body moved along the up axis by one distance (every joint, every frame), so nothing
    about its feet's sliding or its jerk changes."""
    from skelanim.learn.generate import Generator

    rig = Generator.load(None).rig
    args = ["generate", "--content", "bow", "-n", "3", "--seed", "3"]
    assert main([*args, "-o", str(tmp_path / "on")]) == 0 and main([*args, "-o", str(tmp_path / "raw"), "--no-ground"]) == 0
    sunk = 0.0
    for name in ("bow_normal_00.bvh", "bow_normal_01.bvh", "bow_normal_02.bvh"):
        on, raw = (skelanim.load(tmp_path / part / name).positions() for part in ("on", "raw"))
        assert float(on[:, rig.root :, rig.up].min()) == pytest.approx(rig.floor, abs=1e-4)
        moved = (on - raw)[:, rig.root :]  # the body (the dummy root stays at the origin)
        assert torch.allclose(moved, moved[:1, :1].expand_as(moved), atol=1e-4)
        assert float(moved[..., [a for a in range(3) if a != rig.up]].abs().max()) < 1e-4
        sunk = max(sunk, float(moved[0, 0, rig.up]))
    assert sunk > 0.5  # these samples had sunk by more than half a centimetre


def test_settling_a_body_rooted_at_joint_0_moves_every_joint_alike():
    """A review of this change: with a body root at joint 0 that stands still and translation channels on the
    joints, the lift went into joint 0's children and left the hips behind; the rig's body root decides now."""
    from skelanim.core.motion import Motion
    from skelanim.data.rig import Rig
    from skelanim.learn.generate import settle_on_floor
    from tests.helpers.small_body import small_body

    skeleton = small_body()
    still = Motion.rest(skeleton, num_frames=4)
    motion = still.copy(joint_translations=skeleton.offsets.expand(4, -1, -1).clone())
    lowest = float(motion.positions()[..., 1].min())
    for floor in (lowest + 3.0, lowest - 2.0):
        settled, shift = settle_on_floor(motion, Rig(skeleton, 0, 1, 100.0, floor))
        moved = settled.positions() - motion.positions()
        assert shift == pytest.approx(floor - lowest)
        assert torch.allclose(moved, torch.tensor([0.0, floor - lowest, 0.0], dtype=moved.dtype).expand_as(moved))


def test_generate_keeps_an_earlier_run_s_files_unless_told(shipped, tmp_path, capsys):
    """A second run with another seed into the same folder had replaced the first set without a word: it is refused
    before any sampling, the files kept byte for byte; ``--overwrite`` replaces them; other names are written."""
    first = ["generate", "--content", "walk", "--style", "happy", "-n", "2", "-o", str(tmp_path), "--seed", "3"]
    assert main(first) == 0
    kept = {f.name: f.read_bytes() for f in tmp_path.glob("*.bvh")}
    capsys.readouterr()
    assert main([*first[:-1], "4"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "already holds walk_happy_00.bvh and 1 more" in err and "\n" not in err
    assert {f.name: f.read_bytes() for f in tmp_path.glob("*.bvh")} == kept
    assert main(["generate", "--content", "walk", "--style", "angry", "-n", "1", "-o", str(tmp_path)]) == 0
    assert main([*first[:-1], "4", "--overwrite"]) == 0
    replaced = {f.name: f.read_bytes() for f in tmp_path.glob("walk_happy_*.bvh")}
    assert replaced.keys() == kept.keys() and replaced != kept


def test_generate_leaves_no_part_of_a_batch_when_a_write_fails(shipped, tmp_path, capsys, monkeypatch):
    """The disk fills after the first of three files: the command is one line and writes none of them."""
    import errno

    real_save, calls = skelanim.save, []

    def filling_disk(motion, path):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_save(motion, path)

    monkeypatch.setattr(skelanim, "save", filling_disk)
    out = tmp_path / "gen"
    assert main(["generate", "--content", "walk", "-n", "3", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {out / 'walk_normal_01.bvh'}: No space left on device") and "\n" not in err
    assert not out.exists() and len(calls) == 2


def test_generate_refuses_a_count_beyond_any_use(shipped, tmp_path, capsys):
    """``-n`` above 2**63 reached numpy's index conversion (an OverflowError traceback)."""
    assert main(["generate", "--content", "walk", "-n", str(2**64), "-o", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert "'-n'" in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "g").exists()


def test_generate_seconds_writes_longer_motion_in_one_piece(shipped, tmp_path, capsys):
    assert main(["generate", "--content", "walk", "--seconds", "6", "-n", "1", "-o", str(tmp_path / "long")]) == 0
    motion = skelanim.load(tmp_path / "long" / "walk_normal_00.bvh")
    assert motion.num_frames == 150 and motion.fps == pytest.approx(25.0)
    pelvis = motion.positions()[:, 1]
    step = (pelvis[1:] - pelvis[:-1]).norm(dim=-1)
    assert float(step.max()) < 4 * float(step.mean())  # no jump where windows meet
    travelled = float((pelvis[-1] - pelvis[0])[[0, 2]].norm())  # a 6 s walk goes somewhere (Y up)
    assert travelled > 2 * motion.height
    assert main(["generate", "--interpolate", "a.bvh", "--interpolate", "b.bvh", "--seconds", "6",
                 "-o", str(tmp_path / "x")]) == 2  # fmt: skip
    assert "--seconds" in capsys.readouterr().err and not (tmp_path / "x").exists()
    for option, value in (("--seed", "3"), ("--temperature", "0.5")):  # ignored there, silently, before
        assert main(["generate", "--interpolate", "a.bvh", "--interpolate", "b.bvh", option, value,
                     "-o", str(tmp_path / "x")]) == 2  # fmt: skip
        assert f"{option} applies to sampling, not to --interpolate" in capsys.readouterr().err
    for bad in ("inf", "0", "-2", "nan"):
        assert main(["generate", "--content", "walk", "--seconds", bad, "-o", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert "is not a length" in err and "Traceback" not in err and not (tmp_path / "x").exists()


def test_generate_plays_a_plan_of_contents(shipped, tmp_path, capsys):
    assert main(["generate", "--content", "walk:2,run:1.5", "-n", "1", "-o", str(tmp_path / "plan")]) == 0
    motion = skelanim.load(tmp_path / "plan" / "walk-run_normal_00.bvh")
    assert motion.num_frames == 50 + 38
    for bad, said in (("walk:x,run:2", "'walk:x' is not CONTENT:SECONDS"), ("walk:2,run:inf", "'run:inf'"),
                      ("walk:2,:3", "':3'"), ("walk:2,fly:2", "unknown content 'fly'")):  # fmt: skip
        assert main(["generate", "--content", bad, "-o", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
    assert not (tmp_path / "bad").exists()
    assert main(["generate", "--content", "walk:2,run:2", "--seconds", "3", "-o", str(tmp_path / "bad")]) == 2
    assert "leave out --seconds" in capsys.readouterr().err


def test_generate_interpolates_files_named_anyhow_and_refuses_another_skeleton(shipped, learn_files, mocap_files,
                                                                                tmp_path, capsys):  # fmt: skip
    walk, bow = tmp_path / "my walk.bvh", tmp_path / "take2.bvh"
    shutil.copy(learn_files[0], walk)
    shutil.copy(learn_files[2], bow)
    args = ["generate", "--interpolate", str(walk), "--interpolate", str(bow), "-n", "2", "-o", str(tmp_path / "i")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {walk}") and "give --content and --style" in err
    assert main([*args, "--content", "walk", "--style", "happy"]) == 0
    assert len(list((tmp_path / "i").glob("interp_*.bvh"))) == 2
    xia_named = tmp_path / "neutral_01_000.bvh"  # CONTENT_STYLE_TAKE reads content 'neutral', style '01'
    shutil.copy(learn_files[0], xia_named)
    assert main(["generate", "--interpolate", str(xia_named), "--interpolate", str(bow), "--style", "happy", "-n", "2",
                 "-o", str(tmp_path / "k")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith(f"error: {xia_named}: content 'neutral' read from the file name is not one of the generator's")
    assert err.strip().endswith("give --content") and len(err.strip().splitlines()) == 1 and not (tmp_path / "k").exists()
    cmu = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    assert main(["generate", "--interpolate", str(cmu), "--interpolate", str(learn_files[0]), "--content", "walk",
                 "-n", "2", "-o", str(tmp_path / "j")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith(f"error: {cmu}") and "22-joint skeleton" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "j").exists()


def test_curves_of_a_shipped_ensemble_plot_one_members_run(shipped, tmp_path, capsys):
    folder = pretrained_dir("predict_mlp")
    members = json.loads((folder / "config.json").read_text())["training"]["members"]
    out = tmp_path / "c.png"
    assert main(["learn", "curves", str(folder), "-o", str(out), "--member", "3"]) == 0
    said = capsys.readouterr().out
    assert f"({len(members[3]['history'])} epochs" in said and out.is_file()
    assert members[3]["loop"]["keep"] == "last"  # the shipped members keep their last epoch, not their best score's
    assert f"the weights are epoch {members[3]['history'][-1]['epoch']}'s (--keep last)" in said
    assert main(["learn", "curves", str(folder), "-o", str(out), "--member", str(len(members))]) == 2
    assert f"members 0 to {len(members) - 1}" in capsys.readouterr().err


def test_eval_needs_only_the_test_part_of_the_split(shipped, learn_files, capsys):
    angry = [str(f) for f in learn_files if "_angry_" in f.name]  # held-out style only: no training files
    obj = _json(capsys, ["learn", "recognize", "eval", *[a for f in angry for a in ("--data", f)], "--json"])
    assert 0 <= obj["top1_files"] <= 1 and set(obj["per_class"]) <= {"walk", "bow"}
    happy = [a for f in learn_files if "_happy_" in f.name for a in ("--data", str(f))]  # training styles only
    assert main(["learn", "recognize", "eval", *happy, "--json"]) == 2
    assert "the split leaves no test files" in capsys.readouterr().err


def test_predict_file(shipped, learn_files, tmp_path):
    out = tmp_path / "pred.bvh"
    assert main(["predict", str(learn_files[0]), "--seconds", "0.5", "-o", str(out), "--method", "gcn"]) == 0
    by_mlp = tmp_path / "mlp.bvh"
    assert main(["predict", str(learn_files[0]), "--seconds", "0.5", "-o", str(by_mlp), "--method", "mlp"]) == 0
    source, result = skelanim.load(learn_files[0]), skelanim.load(out)
    assert abs(result.num_frames - (source.num_frames + 0.5 * source.fps)) <= 2
    continued = skelanim.load(by_mlp)
    assert continued.num_frames == result.num_frames
    gap = (continued.positions()[-5:] - result.positions()[-5:]).norm(dim=-1).max()  # another predictor's future
    assert float(gap) > 1e-3 * source.height
    assert main(["predict", str(learn_files[0]), "-o", str(out), "--method", "magic"]) == 2
    both = tmp_path / "combined.bvh"
    assert main(["predict", str(learn_files[0]), "--seconds", "0.5", "-o", str(both), "--method", "combined"]) == 0
    assert skelanim.load(both).num_frames == result.num_frames
    assert main(["predict", str(learn_files[0]), "-o", str(both), "--method", "combined", "-m", str(out)]) == 2


def test_evaluate_two_sets(shipped, learn_files, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    for f in learn_files[:2]:
        shutil.copy(f, a / f.name)
    for f in learn_files[2:4]:
        shutil.copy(f, b / f.name)
    obj = _json(capsys, ["evaluate", str(a), str(b), "--json"])
    assert {"a", "b", "fid", "paired"} <= set(obj)
    for side in ("a", "b"):
        assert {"jerk", "foot_skating", "ground_penetration", "bone_length_error", "diversity", "recognised"} <= set(
            obj[side]
        )
        assert obj[side]["bone_length_error"] < 1e-3
    assert obj["fid"] > 0 and obj["paired"] is not None and obj["paired"]["mpjpe"] > 0
    same = _json(capsys, ["evaluate", str(a), str(a), "--json"])
    assert same["fid"] == pytest.approx(0.0, abs=1e-6) and same["paired"]["mpjpe"] == 0.0
    assert torch.isfinite(torch.tensor(same["a"]["jerk"]))
    generated = tmp_path / "generated"  # skelanim generate's own names carry the content
    assert main(["generate", "--content", "walk", "--style", "happy", "-n", "2", "-o", str(generated)]) == 0
    capsys.readouterr()
    obj = _json(capsys, ["evaluate", str(a), str(generated), "--json"])
    # skelanim generate writes 25 fps, the captures are 30: jerk is taken at 25 (and the pairs by time), said so;
    # and two clips give fewer recogniser windows than feature dimensions: a biased fid, said so
    assert obj["b"]["recognised"] is not None and obj["notes"]
    assert all("frame rate" in n or "feature dimensions" in n for n in obj["notes"])
    assert any("feature dimensions: fid from so few samples is biased" in n for n in obj["notes"])
    unnamed = tmp_path / "unnamed"
    unnamed.mkdir()
    shutil.copy(learn_files[0], unnamed / "take.bvh")
    obj = _json(capsys, ["evaluate", str(a), str(unnamed), "--json"])
    assert obj["b"]["recognised"] is None
    assert any("set b: its file names carry no content label" in n for n in obj["notes"])
    misread = tmp_path / "misread"  # a Xia-style name fits CONTENT_STYLE_TAKE: content 'sexy', which no model knows
    misread.mkdir()
    shutil.copy(learn_files[0], misread / "sexy_01_000.bvh")
    obj = _json(capsys, ["evaluate", str(a), str(misread), "--json"])
    assert obj["b"]["recognised"] == 0.0 and not any("set a:" in n and "recogniser's" in n for n in obj["notes"])
    assert any("set b: 1 content label(s) read from its file names are not the recogniser's (sexy)" in n
               for n in obj["notes"])  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["evaluate", str(a), str(empty)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {empty}") and "no motion files" in err and len(err.strip().splitlines()) == 1


def test_generate_fit_prior_refuses_motion_of_another_skeleton(shipped, mocap_files, tmp_path, capsys):
    """``learn generate fit-prior`` read the files on the generator's rig without checking them: another
    skeleton gave a traceback (or, with its joint count, a prior fitted to it), as ``generate eval`` refuses."""
    cmu = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])[0]
    named = tmp_path / "data" / "dataset-1_walk_normal_001.bvh"  # a Bandai name, another skeleton
    named.parent.mkdir()
    shutil.copy(cmu, named)
    out = tmp_path / "fitted"
    assert main(["learn", "generate", "fit-prior", str(pretrained_dir("generate")), "--data", str(named.parent),
                 "--split", "none", "-o", str(out)]) == 2  # fmt: skip
    err = capsys.readouterr().err.replace("\r", "\n")  # the loading bar comes first
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {named}: the generator works on a 22-joint skeleton")
    assert "Traceback" not in err and not out.exists()


def test_generate_fit_prior_fits_the_contents_of_the_training_files(shipped, data_args, tmp_path, capsys):
    """``learn generate fit-prior`` on a folder without a fitted prior (the shipped one with its prior
    removed): the contents of the given files get one, the others keep N(0, I), and sampling uses it."""
    from skelanim.learn.generate import Generator
    from skelanim.nn.checkpoint import load_model_files, save_model_files

    tensors, config = load_model_files(pretrained_dir("generate"))
    save_model_files(tmp_path / "old", {k: v for k, v in tensors.items() if not k.startswith("latent_")}, config)
    assert main(["learn", "generate", "fit-prior", str(tmp_path / "old"), *data_args, "--split", "none",
                 "-o", str(tmp_path / "fitted")]) == 0  # fmt: skip
    written, _ = load_model_files(tmp_path / "fitted")  # the folder's own tensors in their dtypes, plus the prior
    assert set(written) == set(tensors) and written["latent_chol"].dtype == torch.float32
    assert written["vae.out.conv.weight"].dtype == tensors["vae.out.conv.weight"].dtype == torch.float16
    gen = Generator.load(tmp_path / "fitted")
    eye = torch.eye(gen.vae.latent)
    fitted = [name for i, name in enumerate(gen.contents.names) if not torch.equal(gen.latent_chol[i], eye)]
    files = sorted(p.name for p in Path(data_args[1]).iterdir())
    assert fitted and set(fitted) == {f.split("_")[1] for f in files}
    assert main(["generate", "-m", str(tmp_path / "fitted"), "--content", fitted[0], "-n", "1", "-o",
                 str(tmp_path / "g")]) == 0  # fmt: skip
