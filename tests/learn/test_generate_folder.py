"""The generator's training writes each stage's latent prior while ``fit`` still holds the stage's folder, and starts
the GAN stage from the VAE weights it trained: after ``fit`` returns, no folder is read back or written again."""

from __future__ import annotations

import pytest
import torch

from skelanim.learn import generate_train
from skelanim.learn.generate import Generator
from skelanim.learn.generate_train import train_generator
from skelanim.nn.checkpoint import load_model_files, save_model_files
from skelanim.nn.train import TrainConfig, parameter_fingerprint

SMALL = {"latent": 8, "hidden": 32, "embed": 4}


def test_train_generator_writes_the_weights_it_trained_and_reads_nothing_back(tiny_ds, tmp_path, monkeypatch):
    """After each stage's ``fit`` the generator's training read the folder again (to fit the latent prior) and
    rewrote it, and the GAN stage took its start from the VAE folder read back: what another run into the same
    ``--out`` had written there by then was taken for its own (the other run's weights with this run's prior, and a
    GAN stage trained on from them). Now the prior is fitted in ``fit``'s ``finish`` and the GAN stage starts from
    the weights that ``finish`` kept: a write by another run after ``fit`` is left as that run wrote it."""
    out = tmp_path / "gen"
    real_fit = generate_train.fit
    stages: list[dict] = []

    def fit_then_another_run_writes(model, task, out_dir, config, **options):
        start = {k: v.detach().clone() for k, v in model.state_dict().items()}
        result = real_fit(model, task, out_dir, config, **options)
        left = load_model_files(out_dir)
        tensors, cfg = left
        other = {k: 0.5 * v if v.is_floating_point() else v for k, v in tensors.items()}  # a plausible model
        save_model_files(out_dir, other, {**cfg, "training": {**cfg["training"], "seed": 99}})
        stages.append({"start": start, "left": left, "other": load_model_files(out_dir), "result": result})
        return result

    monkeypatch.setattr(generate_train, "fit", fit_then_another_run_writes)
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False, keep="last")
    result = train_generator(tiny_ds, out, length=16, stride=16, vae_loop=loop, gan_loop=loop, options=SMALL,
                             command="t")  # fmt: skip
    assert result["gan"] is not None and len(stages) == 2
    for folder, stage in zip((out / "vae", out), stages, strict=True):
        now, now_config = load_model_files(folder)  # the other run's files, nothing of this run mixed in
        other, other_config = stage["other"]
        assert now.keys() == other.keys()
        for name, value in other.items():
            assert torch.equal(now[name], value), (folder.name, name)
        assert now_config == other_config and now_config["training"]["seed"] == 99
        tensors, config = stage["left"]  # what fit left: the weights it trained, with their prior fitted
        chol = tensors["latent_chol"]
        assert bool(torch.isfinite(chol).all()) and not torch.equal(chol, torch.eye(chol.shape[-1]).expand_as(chol))
        kept = Generator.from_config(config)
        kept.load_state_dict(tensors)
        assert parameter_fingerprint(kept) == stage["result"]["weights_sha256"]
    vae, _ = stages[0]["left"]
    start = stages[1]["start"]  # the GAN stage began from this run's VAE, prior included, not the other run's
    for name, value in vae.items():
        assert torch.equal(start[name], value.float()), name


@pytest.mark.parametrize("fit_prior", [True, False])
def test_the_stages_end_as_before_with_or_without_the_prior(tiny_ds, tmp_path, fit_prior):
    """With ``fit_prior`` each stage's prior is fitted, without it the folders hold the loop's weights as written
    (that the GAN stage starts from the VAE folder's weights is the first test's)."""
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    out = tmp_path / "gen"
    train_generator(tiny_ds, out, length=16, stride=16, vae_loop=loop, gan_loop=loop, options=SMALL, command="t",
                    fit_prior=fit_prior)  # fmt: skip
    for folder in (out / "vae", out):
        chol = load_model_files(folder)[0]["latent_chol"]
        assert torch.equal(chol, torch.eye(chol.shape[-1]).expand_as(chol)) != fit_prior, folder
