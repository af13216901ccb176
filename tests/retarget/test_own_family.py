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
