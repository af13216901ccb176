"""Figures of learning results: the plotted data must be the data given (read back from the artists)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from skelanim.cli import main
from skelanim.errors import FormatError
from skelanim.nn.checkpoint import read_model_config, save_model_files, save_train_state
from skelanim.viz.charts import (
    confusion_matrix,
    plot_confusion,
    plot_horizon_errors,
    plot_training_history,
    training_history,
)


def test_confusion_matrix_counts_a_hand_built_case():
    counts, labels = confusion_matrix(["a", "a", "b", "c"], ["a", "b", "b", "a"])
    assert labels == ["a", "b", "c"]
    assert counts.tolist() == [[1, 1, 0], [0, 1, 0], [1, 0, 0]]
    counts, labels = confusion_matrix(["a"], ["b"], labels=["b", "a", "z"])
    assert labels == ["b", "a", "z"] and counts.tolist() == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match="2 true labels but 1 predictions"):
        confusion_matrix(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="not in the given order: c"):
        confusion_matrix(["a"], ["c"], labels=["a"])


def test_plot_confusion_colours_rows_by_share_and_writes_counts():
    fig = plot_confusion({"files": (["walk", "walk", "run"], ["walk", "run", "run"]),
                          "windows": (["walk"] * 3 + ["bow"], ["walk", "walk", "bow", "bow"])})  # fmt: skip
    files, windows = fig.axes[0], fig.axes[1]
    # shared label order: bow, run, walk
    assert np.allclose(files.images[0].get_array(), [[0, 0, 0], [0, 1, 0], [0, 0.5, 0.5]])
    assert np.allclose(windows.images[0].get_array(), [[1, 0, 0], [0, 0, 0], [1 / 3, 0, 2 / 3]])
    assert sorted(t.get_text() for t in windows.texts) == ["1", "1", "2"]
    assert files.get_title() == "files: 2/3 right" and windows.get_title() == "windows: 3/4 right"


def test_plot_horizon_errors_draws_the_given_values():
    result = {"horizons_ms": [80, 1000],
              "methods": {"rnn": {"mpjpe": [0.01, 0.04], "mpjpe_global": [0.02, 0.08], "angle_deg": [3.0, 9.0]},
                          "zero_velocity": {"mpjpe": [0.02, 0.03], "mpjpe_global": [0.05, 0.5], "angle_deg": [4.0, 7.0]}}}  # fmt: skip
    fig = plot_horizon_errors(result)
    rr, glob, angle = fig.axes[:3]
    lines = {line.get_label(): line for line in rr.get_lines()}
    assert np.allclose(lines["rnn"].get_xdata(), [80, 1000]) and np.allclose(lines["rnn"].get_ydata(), [1.0, 4.0])
    assert np.allclose(lines["zero_velocity"].get_ydata(), [2.0, 3.0])  # percent of height
    assert np.allclose(angle.get_lines()[0].get_ydata(), [3.0, 9.0])  # degrees, unscaled
    assert glob.get_ylabel() == "MPJPE with root motion (% of height)"
    assert np.allclose([line.get_ydata() for line in glob.get_lines()], [[2.0, 8.0], [5.0, 50.0]])  # % of height
    with_pose = plot_horizon_errors(
        {"horizons_ms": [80, 1000], "methods": {"x": {"mpjpe": [0.01, 0.04], "mpjpe_pose": [0.02, 0.03]}}}
    )
    assert [a.get_ylabel()[:18] for a in with_pose.axes] == ["MPJPE, root-relati", "MPJPE, pose only ("]
    assert np.allclose(with_pose.axes[1].get_lines()[0].get_ydata(), [2.0, 3.0])
    only_rr = plot_horizon_errors({"horizons_ms": [80], "methods": {"x": {"mpjpe": [0.01]}}})
    assert len([a for a in only_rr.axes if a.get_visible()]) == 1
    with pytest.raises(ValueError, match="no errors to plot"):
        plot_horizon_errors({"horizons_ms": [80], "methods": {}})


def _run_folder(path, history_in_config, history_in_state=None, best=2):
    save_model_files(path, {"w": torch.zeros(1)},
                     {"format": "x", "training": {"history": history_in_config, "best": {"epoch": best}}})  # fmt: skip
    if history_in_state is not None:
        save_train_state(path / "train_state.safetensors", {"w": torch.zeros(1)}, {"state": {}, "param_groups": []},
                         {"history": history_in_state, "best": {"epoch": best}})  # fmt: skip


def test_training_history_prefers_the_full_history_of_the_training_state(tmp_path):
    epochs = [{"epoch": e, "train_loss": 1.0 / e, "val_error": 0.5 + (e - 2) ** 2 / 10, "seconds": 3.0 * e} for e in (1, 2, 3)]
    _run_folder(tmp_path / "run", epochs[:2], epochs)  # config.json stops at the best epoch
    history, best = training_history(tmp_path / "run")
    assert [r["epoch"] for r in history] == [1, 2, 3] and best == 2
    _run_folder(tmp_path / "shipped", epochs[:2])
    assert [r["epoch"] for r in training_history(tmp_path / "shipped")[0]] == [1, 2]
    fig = plot_training_history(history, best_epoch=best)
    loss, val = fig.axes[:2]
    assert loss.get_title() == "train_loss" and val.get_title() == "val_error"  # seconds left out
    assert np.allclose(val.get_lines()[0].get_ydata(), [0.6, 0.5, 0.6])
    assert np.allclose(val.get_lines()[1].get_xdata(), [2, 2])  # the best-epoch marker
    with pytest.raises(FormatError, match="not a model or training folder"):
        training_history(tmp_path)
    (tmp_path / "started").mkdir()  # stopped within its first epoch: a training state, no history yet
    save_train_state(tmp_path / "started" / "train_state.safetensors", {"w": torch.zeros(1)},
                     {"state": {}, "param_groups": []}, {"history": [], "best": None})  # fmt: skip
    with pytest.raises(FormatError, match="no finished epoch"):
        training_history(tmp_path / "started")


def test_a_metric_validated_every_few_epochs_is_drawn_at_those_epochs():
    history = [{"epoch": e, "train_loss": 1.0 / e, **({"val_error": 0.1 * e} if e % 2 == 0 else {})} for e in range(1, 6)]
    loss, val = plot_training_history(history).axes[:2]  # the first epoch has no validation metric
    assert loss.get_title() == "train_loss" and val.get_title() == "val_error"
    assert np.allclose(val.get_lines()[0].get_xdata(), [2, 4]) and np.allclose(val.get_lines()[0].get_ydata(), [0.2, 0.4])


def test_cli_curves_writes_an_image_and_refuses_a_bad_name_before_work(tmp_path, capsys):
    epochs = [{"epoch": e, "train_loss": 1.0 / e, "val_error": 1.0 / e} for e in (1, 2)]
    _run_folder(tmp_path / "run", epochs, best=2)
    out = tmp_path / "curves.png"
    assert main(["learn", "curves", str(tmp_path / "run"), "-o", str(out)]) == 0
    assert "2 epochs, best 2" in capsys.readouterr().out
    with Image.open(out) as image:
        assert image.format == "PNG" and image.size[0] > 300
    bad = tmp_path / "curves.xyz"
    assert main(["learn", "curves", str(tmp_path / "run"), "-o", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "cannot write a figure as 'xyz'" in err and len(err.strip().splitlines()) == 1
    assert not bad.exists()


def test_cli_curves_reads_the_config_once_for_the_history_and_the_kept_epoch(tmp_path, capsys, monkeypatch):
    from skelanim.viz import charts

    epochs = [{"epoch": e, "train_loss": 1.0 / e, "val_error": 0.5 + (e - 2) ** 2 / 10} for e in (1, 2, 3)]
    save_model_files(tmp_path / "run", {"w": torch.zeros(1)},
                     {"format": "x", "training": {"history": epochs, "best": {"epoch": 2}, "loop": {"keep": "last"}}})  # fmt: skip
    reads = []

    def counted(path):
        reads.append(path)
        return read_model_config(path)

    monkeypatch.setattr(charts, "read_model_config", counted)
    assert main(["learn", "curves", str(tmp_path / "run"), "-o", str(tmp_path / "curves.png")]) == 0
    assert "(3 epochs, best score at 2; the weights are epoch 3's (--keep last))" in capsys.readouterr().out
    assert reads == [tmp_path / "run" / "config.json"]
    run = charts.training_run(tmp_path / "run")
    assert (len(run.history), run.best_epoch, run.keeps_last) == (3, 2, True)


def test_a_best_epoch_part_way_through_is_said_as_it_is(tmp_path, capsys):
    """A run stopped by ``max_steps`` half-way through an epoch keeps that point as its best ("epoch 0.5"); ``learn
    curves`` said "best 0" (the epoch truncated to an integer)."""
    epochs = [{"epoch": 0.5, "train_loss": 1.0, "val_error": 0.4}]
    _run_folder(tmp_path / "half", epochs, best=0.5)
    assert training_history(tmp_path / "half")[1] == 0.5
    assert main(["learn", "curves", str(tmp_path / "half"), "-o", str(tmp_path / "c.png")]) == 0
    assert "best 0.5)" in capsys.readouterr().out


def test_a_generators_two_stages_are_drawn_one_after_the_other(tmp_path, capsys):
    """``learn generate train`` records its VAE stage's epochs beside the GAN stage's (``vae_history``): the curves
    show both, the GAN's numbered on from the VAE's last, a dotted line where the GAN begins (a review: the shipped
    generator's curves had shown 2 epochs of 182). A run of one stage has no stages."""
    from skelanim.viz import charts

    vae = [{"epoch": e, "train_loss": 2.0 / e, "val_fid": 100.0 / e} for e in (1, 2, 3)]
    gan = [{"epoch": e, "train_loss": 0.5 / e, "train_d": 0.7 / e, "val_fid": 20.0 / e} for e in (1, 2)]
    save_model_files(tmp_path / "gen", {"w": torch.zeros(1)}, {"format": "skelanim-generator", "training": {
        "stage": "gan", "vae_history": vae, "history": gan, "best": {"epoch": 2}}})  # fmt: skip
    run = charts.training_run(tmp_path / "gen")
    assert [r["epoch"] for r in run.history] == [1, 2, 3, 4, 5] and run.best_epoch == 5
    assert run.stages == [(1, "VAE"), (4, "GAN")]
    assert run.history[3] == {**gan[0], "epoch": 4}
    figure = charts.plot_training_history(run.history, best_epoch=run.best_epoch, stages=run.stages)
    fid = next(ax for ax in figure.axes if ax.get_title() == "val_fid")
    assert np.allclose(fid.get_lines()[0].get_xdata(), [1, 2, 3, 4, 5])
    assert [float(line.get_xdata()[0]) for line in fid.get_lines()[1:]] == [5.0, 3.5]  # best epoch, the GAN's start
    assert [t.get_text() for t in fid.texts] == [" GAN"]
    assert main(["learn", "curves", str(tmp_path / "gen"), "-o", str(tmp_path / "c.png")]) == 0
    assert "(5 epochs: VAE 1-3, GAN 4-5, best 5)" in capsys.readouterr().out
    _run_folder(tmp_path / "plain", vae, best=3)
    assert charts.training_run(tmp_path / "plain").stages == []
    # a GAN stage planned for 4 epochs and stopped after 2: 5 of 7 epochs in all (it had said "5 epochs of 4")
    save_model_files(tmp_path / "cut", {"w": torch.zeros(1)}, {"format": "skelanim-generator", "training": {
        "stage": "gan", "vae_history": vae, "history": gan, "best": {"epoch": 2},
        "unfinished": {"epoch": 2, "epochs": 4}}})  # fmt: skip
    assert charts.training_run(tmp_path / "cut").planned_epochs == 7
