"""``retarget train --family NAME=SKELETON_FILE[:GLOB]``: a character's own rig and motion trained on beside the
shared families, drawn as a source and as a target (its real windows the discriminator's for its rig); a bad
spec is one line before any data is read. ``--init``: the shipped (or any) NKN fine-tuned from its weights."""

from __future__ import annotations

import json

import pytest
import torch

from skelanim.cli import main
from skelanim.nn.train import seeded_generator
from skelanim.retarget.data import Family, encode_clip
from skelanim.retarget.model import NKNConfig
from skelanim.retarget.rig import CanonicalRig
from skelanim.retarget.train import OWN_SOURCE_WEIGHT, OWN_TARGET_DRAWS, RetargetTask

TINY = NKNConfig(hidden=16, disc_hidden=8)


def _family(name: str, motion) -> Family:
    rig = CanonicalRig(motion.skeleton)
    return Family(name, rig, [encode_clip(motion, rig) | {"name": name}], variants=name == "bandai")


def test_an_own_family_is_drawn_as_source_and_target(clips):
    """pymo's skeleton, none of the default families', as one's own: it is among the sources with its weight and
    the targets with its draws; over 400 samples it is the target about 2 times in 5 (2 of bandai, 2 variants and
    its 2 draws) and its captured motion is then the discriminator's."""
    task = RetargetTask([_family("bandai", clips["bandai"]), _family("hero", clips["pymo"])], [], window=16,
                        samples=16, config=TINY)  # fmt: skip
    assert task.sources == ["bandai", "hero"] and task.source_weights["hero"] == OWN_SOURCE_WEIGHT
    assert task.targets.count("hero") == OWN_TARGET_DRAWS
    hero = task.families["hero"].rig.offsets.float()
    g = seeded_generator(0)
    samples = [task._sample(g) for _ in range(400)]
    onto = [s for s in samples if torch.equal(s["tgt_off"], hero)]
    assert 0.3 < len(onto) / len(samples) < 0.5 and all(bool(s["captured"]) for s in onto)
    from_hero = [s for s in samples if torch.equal(s["src_off"], hero)]
    share = OWN_SOURCE_WEIGHT / (OWN_SOURCE_WEIGHT + 0.55)  # against bandai's weight
    assert abs(len(from_hero) / len(samples) - share) < 0.08


def test_cli_trains_with_an_own_family(mocap_files, tmp_path, capsys):
    pymo = mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])[0]
    out = tmp_path / "nkn"
    assert main(["retarget", "train", "--families", "bandai,hero", "--family", f"hero={pymo}", "--max-files", "2",
                 "--max-steps", "2", "--epochs", "1", "--samples", "16", "--batch-size", "8", "--no-progress",
                 "-o", str(out)]) == 0  # fmt: skip
    families = json.loads((out / "config.json").read_text())["training"]["families"]
    assert families["hero"] == [pymo.name] and len(families["bandai"]) == 2


@pytest.mark.parametrize(
    ("spec", "words"),
    [("hero", "expected NAME=SKELETON_FILE"), ("bandai={file}", "already a family"),
     ("hero=/nowhere/x.bvh", "no such skeleton file"), ("hero={file}:/nowhere/*.bvh", "no file matches")],
)
def test_cli_refuses_a_bad_family_in_one_line(spec, words, mocap_files, tmp_path, capsys):
    pymo = mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])[0]
    code = main(["retarget", "train", "--family", spec.format(file=pymo), "--max-steps", "1", "--no-progress",
                 "-o", str(tmp_path / "x")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "x").exists()


def test_the_shipped_nkn_is_fine_tuned_from_its_weights_with_an_own_family(mocap_files, tmp_path, capsys):
    """``--init shipped``: the run starts from the shipped network and discriminator (at lr 1e-9, two steps: their
    weights to 1e-6), its architecture kept, the start recorded; ``--hidden`` is refused, a folder of another kind
    is one line."""
    from safetensors.torch import load_file

    from skelanim.retarget import DEFAULT_MODEL, load_nkn

    pymo = mocap_files(["pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"])[0]
    out = tmp_path / "tuned"
    args = ["retarget", "train", "--families", "bandai,hero", "--family", f"hero={pymo}", "--max-files", "2",
            "--epochs", "1", "--samples", "16", "--batch-size", "8", "--no-progress"]  # fmt: skip
    assert main([*args, "--init", "shipped", "--max-steps", "2", "--lr", "1e-9", "-o", str(out)]) == 0
    start, tuned = load_file(DEFAULT_MODEL / "model.safetensors"), load_file(out / "model.safetensors")
    assert sorted(start) == sorted(tuned) and any(k.startswith("disc.") for k in start)
    assert max(float((start[k] - tuned[k]).abs().max()) for k in start) < 1e-6
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["init"]["folder"] == "shipped" and config["architecture"]["hidden"] == 128
    assert load_nkn(out).config.hidden == 128
    capsys.readouterr()
    assert main([*args, "--init", "shipped", "--hidden", "64", "-o", str(tmp_path / "x")]) == 2
    assert "--hidden" in capsys.readouterr().err and not (tmp_path / "x").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps({"format": "skelanim-predictor"}))
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(1)}, tmp_path / "other" / "model.safetensors")
    assert main([*args, "--init", str(tmp_path / "other"), "-o", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err
    assert "needs an NKN retargeting model" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "y").exists()


PYMO = "pymo_demo/AV_8Walk_Meredith_HVHA_Rep1.bvh"


def _train(*extra: str) -> list[str]:
    return ["retarget", "train", "--max-files", "2", "--max-steps", "1", "--epochs", "1", "--samples", "16",
            "--batch-size", "8", "--no-progress", *extra]  # fmt: skip


def test_a_family_is_refused_before_any_data_where_it_cannot_train(mocap_files, tmp_path, capsys):
    """From a review: a family named ``variant`` (the training's own draw of scaled Bandai bones) had never been
    drawn; one left out of ``--families`` was dropped without a word; a rig the joint mapping cannot read said so
    only after the six shared families had loaded, without naming the family."""
    pymo = mocap_files([PYMO])[0]
    for args, words in (
        (["--family", f"variant={pymo}"], "already a family's name (or the training's own draw)"),
        (["--family", f"hero={pymo}", "--families", "bandai"], "'hero' (--family) is not among them"),
    ):
        assert main(_train(*args, "-o", str(tmp_path / "x"))) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1
    chain = tmp_path / "chain.bvh"  # three joints in a row: no humanoid
    chain.write_text("HIERARCHY\\nROOT a\\n{\\n OFFSET 0 0 0\\n CHANNELS 6 Xposition Yposition Zposition Zrotation "
                     "Xrotation Yrotation\\n JOINT b\\n {\\n  OFFSET 0 1 0\\n  CHANNELS 3 Zrotation Xrotation Yrotation\\n"
                     "  End Site\\n  {\\n   OFFSET 0 1 0\\n  }\\n }\\n}\\nMOTION\\nFrames: 2\\nFrame Time: 0.0333333\\n"
                     "0 0 0 0 0 0 0 0 0\\n0 0 0 0 0 0 0 0 0\\n".replace("\\\\n", "\\n"))  # fmt: skip
    assert main(_train("--family", f"hero={chain}", "-o", str(tmp_path / "y"))) == 2
    err = capsys.readouterr().err
    assert "'hero' family's skeleton is one the joint mapping cannot read" in err and str(chain) in err
    assert len(err.strip().splitlines()) == 1 and "warning" not in err  # before the shared families' loading
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_an_own_familys_clips_on_other_bones_are_left_out(mocap_files, tmp_path, capsys):
    """From a review: a clip of the family's joints with bones 1.5 times as long had been encoded on the family's
    bones (its hips at 0.67 of the leg); it is left out with a warning now, and a family with no clip left is one
    line saying so (it had advised a shorter --window)."""
    import skelanim
    from skelanim.ops import scale

    pymo = mocap_files([PYMO])[0]
    folder = tmp_path / "own"
    folder.mkdir()
    skelanim.save(scale(skelanim.load(pymo), 1.5), folder / "big.bvh")
    from skelanim.retarget.data import load_families

    with pytest.warns(UserWarning, match=r"big.bvh: its bones differ from its family's skeleton file's"):
        fams = load_families(folder, ["hero"], use_cache=False, extra={"hero": (str(pymo), (str(folder / "*.bvh"), str(pymo)), ())})
    assert [c["name"] for c in fams[0].clips] == [pymo.name]
    capsys.readouterr()
    assert main(_train("--families", "hero", "--family", f"hero={pymo}:{folder / '*.bvh'}", "-o", str(tmp_path / "x"))) == 2
    err = capsys.readouterr().err
    assert "none of the 1 clip(s) of the 'hero' family is on its skeleton" in err and not (tmp_path / "x").exists()


def test_init_takes_a_network_alone_and_names_a_mismatched_resume(mocap_files, tmp_path, capsys):
    """From a review: a folder of the network alone (as ``load_nkn`` reads it) had been refused by ``--init`` (its
    adversary now starts fresh); ``--resume`` with another ``--init`` than the run's recorded a start not used;
    ``--init`` equal to the output folder is refused."""
    from safetensors.torch import load_file, save_file

    from skelanim.retarget import DEFAULT_MODEL

    alone = tmp_path / "alone"
    alone.mkdir()
    save_file({k[4:]: v for k, v in load_file(DEFAULT_MODEL / "model.safetensors").items() if k.startswith("net.")},
              alone / "model.safetensors")  # fmt: skip
    config = json.loads((DEFAULT_MODEL / "config.json").read_text())
    (alone / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k in ("format", "architecture",
                                                                                           "train_fps", "training")}))  # fmt: skip
    out = tmp_path / "out"
    assert main(_train("--families", "bandai", "--init", str(alone), "-o", str(out))) == 0
    capsys.readouterr()
    assert main(_train("--families", "bandai", "--init", "shipped", "--resume", "-o", str(out))) == 2
    err = capsys.readouterr().err
    assert f"started from {alone}, not from --init shipped" in err and len(err.strip().splitlines()) == 1
    assert main(_train("--families", "bandai", "--init", str(out), "--overwrite", "-o", str(out))) == 2
    assert "is the output folder" in capsys.readouterr().err
