"""The learning trainers under ``torchrun --nproc-per-node 2`` (gloo on CPU), a few steps on four files each:
the run succeeds, only rank 0 reports and writes, both ranks end with identical weights (checked by
:func:`skelanim.nn.fit` at the end of every stage; ``tests/nn/test_ddp.py`` shows that check fails when
gradients are not averaged), and the checkpoint is written. The generator's VAE stage leaves its
discriminator without gradients, which DDP must be told about (``find_unused_parameters``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from torchrun import torchrun  # tests/helpers


@pytest.fixture(scope="module")
def data_folder(learn_files, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ddp-data")
    for f in learn_files[:4]:
        shutil.copy(f, folder / f.name)
    return folder


def _torchrun(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    return torchrun(["-m", "skelanim", *args, "--threads", "1", "--no-progress"], {"SKELANIM_CACHE": str(cache)})


@pytest.mark.parametrize(
    ("trainer", "extra"),
    [
        ("recognize", ["--window", "32", "--stride", "16", "--epochs", "2", "--batch-size", "8", "--centre", "--rescale"]),
        ("predict", ["--stride", "16", "--hidden", "16", "--epochs", "2", "--batch-size", "8", "--amplitude", "0.8", "1.1"]),
    ],
)
def test_trainer_with_two_processes(data_folder, tmp_path, trainer, extra):
    out = tmp_path / "model"
    done = _torchrun(["learn", trainer, "train", "--data", str(data_folder), "--split", "none", "-o", str(out), *extra],
                     tmp_path / "cache")  # fmt: skip
    assert done.stdout.count("ranks hold identical weights") == 1
    assert done.stdout.count("wrote") == 1  # rank 0 only
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["world_size"] == 2
    assert (out / "model.safetensors").stat().st_size > 1000
    if trainer == "predict":  # the CLI's options reach the task or the network and are recorded with the model
        assert config["training"]["task_options"]["amplitude"] == [0.8, 1.1]
    else:
        assert config["arch_options"]["centre"] is True and config["arch_options"]["rescale"] is True


def test_generator_vae_and_gan_stages_with_two_processes(data_folder, tmp_path):
    out = tmp_path / "gen"
    done = _torchrun(["learn", "generate", "train", "--data", str(data_folder), "--split", "none", "-o", str(out),
                      "--stride", "16", "--vae-epochs", "1", "--gan-epochs", "1", "--batch-size", "4"],
                     tmp_path / "cache")  # fmt: skip
    # the VAE stage needs find_unused_parameters (idle discriminator); both stages end with agreeing ranks
    assert done.stdout.count("find_unused_parameters on") == 1 and "disc." in done.stdout
    assert done.stdout.count("ranks hold identical weights") == 2
    for folder in (out / "vae", out):
        config = json.loads((folder / "config.json").read_text())
        assert config["training"]["world_size"] == 2
        assert (folder / "model.safetensors").is_file()
