"""Third-pass mutation audit of ``skelanim.learn``: the CVAE, the recognition and generation training tasks, the
ensembles and the predictors. Each test checks a rule that a surviving mutant broke against an independent
source: a closed form on hand-built numbers, the rule a docstring or the learn README states, or torch doing
the same maths another way. The rig is the shipped predictor's (its ``config.json``, no weights); the motion
is built here, so no capture data is needed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

import skelanim.learn
from skelanim.core.rotations import rotvec_to_matrix
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.rig import Rig

FPS = 25.0
TINY = {"channels": (8, 8), "strides": (1, 2)}
SMALL_GEN = {"latent": 4, "hidden": 8, "embed": 2}


@pytest.fixture(scope="module")
def rig() -> Rig:
    config = json.loads(
        (Path(skelanim.learn.__file__).parent / "pretrained" / "predict_rnn" / "config.json").read_text()
    )
    return Rig.from_dict(config["rig"])


def _swaying(rig: Rig, frames: int, phase: float = 0.0) -> tuple[Tensor, Tensor]:
    """Model-joint rotations ``(F, M, 3, 3)`` and pelvis ``(F, 3)`` (file units): every joint swings about z
    with a 20-frame period, the pelvis 0.7 heights up and sliding slowly along a floor axis."""
    t = torch.arange(frames, dtype=torch.float64)
    angle = 0.3 * torch.sin(2 * math.pi * t / 20 + phase)
    vec = torch.zeros(frames, rig.num_joints, 3, dtype=torch.float64)
    vec[..., 2] = angle[:, None]
    rot = rotvec_to_matrix(vec)
    pelvis = torch.zeros(frames, 3, dtype=torch.float64)
    pelvis[:, rig.up] = 0.7 * rig.height
    pelvis[:, 0 if rig.up != 0 else 2] = 0.01 * t * rig.height
    return rot, pelvis


def _dataset(rig: Rig, labelled: list[dict[str, str]], frames: int = 48) -> MotionDataset:
    """One swaying clip per label set (each with its own phase)."""
    clips = []
    for i, labels in enumerate(labelled):
        rot, pelvis = _swaying(rig, frames, phase=0.7 * i)
        clips.append(clip_from_motion(rig.to_motion(rot, pelvis, FPS), fps=FPS, up=rig.up, labels=labels))
    return MotionDataset(clips=clips, rig=rig, fps=FPS)


# ---------------------------------------------------------------------------------------------- CVAE


def test_the_cvae_forward_pass_decodes_the_reparameterised_draw() -> None:
    """``MotionCVAE.forward`` "reconstructs": ``x_hat = decode(mu + eps * sigma, c)`` with ``sigma = exp(logvar / 2)``
    and ``eps ~ N(0, I)`` (the reparameterisation of Kingma & Welling 2014, cited in the module docstring); with
    a seeded generator ``eps`` is the generator's first standard-normal draw of ``mu``'s shape."""
    from skelanim.learn.cvae import MotionCVAE

    torch.manual_seed(0)
    vae = MotionCVAE(6, 16, 2, 2, latent=3, hidden=8, embed=2).eval()
    x, c = torch.randn(2, 16, 6), vae.condition(torch.tensor([0, 1]), torch.tensor([1, 1]))
    with torch.no_grad():
        x_hat, mu, logvar = vae(x, c, generator=torch.Generator().manual_seed(5))
        mu_ref, logvar_ref = vae.encode(x, c)
        eps = torch.randn(2, 3, generator=torch.Generator().manual_seed(5))
        expected = vae.decode(mu_ref + eps * logvar_ref.mul(0.5).exp(), c)
    assert float(logvar.abs().max()) > 1e-3  # a draw the variance's scale matters for
    torch.testing.assert_close(mu, mu_ref)
    torch.testing.assert_close(x_hat, expected)
    with torch.no_grad():  # and not the mean alone
        assert not torch.allclose(x_hat, vae.decode(mu_ref, c), atol=1e-5)


def test_class_weights_condition_on_the_weighted_mean_of_the_embeddings() -> None:
    """``condition`` takes class indices "(or ``(B, C)`` / ``(B, S)`` class weights)": weights give the weighted sum
    of the embedding rows, so one-hot weights are the index's embedding and ``(0.5, 0.5)`` the two rows' mean."""
    from skelanim.learn.cvae import MotionCVAE

    torch.manual_seed(0)
    vae = MotionCVAE(6, 16, 3, 2, latent=3, hidden=8, embed=2)
    ce, se = vae.content_embed.weight.detach(), vae.style_embed.weight.detach()
    content = torch.tensor([[0.0, 1.0, 0.0], [0.25, 0.25, 0.5]])
    style = torch.tensor([[0.5, 0.5], [0.0, 1.0]])
    with torch.no_grad():
        got = vae.condition(content, style)
    expected = torch.cat([torch.stack([ce[1], 0.25 * ce[0] + 0.25 * ce[1] + 0.5 * ce[2]]),
                          torch.stack([(se[0] + se[1]) / 2, se[1]])], -1)  # fmt: skip
    torch.testing.assert_close(got, expected)


# ---------------------------------------------------------------------------------------------- generation training


@pytest.fixture(scope="module")
def gen_ds(rig: Rig) -> MotionDataset:
    return _dataset(rig, [{"content": "walk", "style": "happy"}, {"content": "bow", "style": "happy"}])


def test_a_generator_start_needs_a_gan_stage(gen_ds: MotionDataset, tmp_path: Path) -> None:
    """``train_generator``: "With ``init`` ... the VAE stage is skipped and the GAN stage starts from those weights",
    so ``init`` without a GAN stage (``gan_loop=None``) would train nothing: refused before anything is read."""
    from skelanim.learn.generate_train import train_generator

    with pytest.raises(ValueError, match="needs a GAN stage"):
        train_generator(gen_ds, tmp_path / "out", length=16, init=tmp_path / "missing", gan_loop=None,
                        options=SMALL_GEN)  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_a_generator_start_at_another_frame_rate_is_refused(gen_ds: MotionDataset, tmp_path: Path) -> None:
    """The ``init`` folder must be "a generator folder with the same classes and options" (``train_generator``); its
    frames are a rate's frames (``fps`` in its config): one trained at 30 fps does not start a 25 fps run."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_train import train_generator
    from skelanim.nn.checkpoint import save_model_files
    from skelanim.nn.train import TrainConfig

    torch.manual_seed(0)
    other = Generator(gen_ds.rig, ["bow", "walk"], ["happy"], length=16, fps=30.0, options=SMALL_GEN)
    save_model_files(tmp_path / "start", other.state_dict(), other.config())
    loop = TrainConfig(epochs=1, batch_size=4, lr=1e-3, warmup_steps=1, progress=False)
    with pytest.raises(ValueError, match="fps"):
        train_generator(gen_ds, tmp_path / "out", length=16, init=tmp_path / "start", gan_loop=loop,
                        options=SMALL_GEN, fit_prior=False)  # fmt: skip


# ---------------------------------------------------------------------------------------------- recognition training


@pytest.fixture(scope="module")
def recognize_task(rig: Rig):  # -> RecognizeTask
    """A task on four swaying clips: ``walk-left`` and ``walk-right`` (each other's mirror), two styles."""
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    labelled = [{"content": c, "style": s} for c in ("walk-left", "walk-right") for s in ("happy", "sad")]
    ds = _dataset(rig, labelled)
    torch.manual_seed(0)
    model = Recognizer("stgcn", rig, ["walk-left", "walk-right"], ["happy", "sad"], window=16, arch_options=TINY)
    return RecognizeTask(model, ds, None, stride=8)


class _Heads(nn.Module):
    """A stand-in network: fixed content and style logits whatever the input."""

    def __init__(self, content: Tensor, style: Tensor | None) -> None:
        super().__init__()
        self.content, self.style = content, style

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor | None, Tensor]:
        return self.content, self.style, torch.zeros(len(self.content), 1)


def test_the_style_head_counts_half_the_content_head(recognize_task) -> None:
    """Rule: "Cross-entropy with label smoothing on the content head plus half that on the style head" (module docstring;
    README: "+0.5 × style"). Uniform logits make each head's label-smoothed cross-entropy ``log K`` whatever the
    smoothing: ``log 2 + 0.5 log 2`` for two contents and two styles."""
    batch = {"x": torch.zeros(3, 1), "content": torch.tensor([0, 1, 1]), "style": torch.tensor([1, 0, 1]),
             "weight": torch.ones(3)}  # fmt: skip
    loss, _ = recognize_task.loss(_Heads(torch.zeros(3, 2), torch.zeros(3, 2)), batch)
    assert float(loss) == pytest.approx(1.5 * math.log(2.0), rel=1e-6)
    alone, _ = recognize_task.loss(_Heads(torch.zeros(3, 2), None), batch)
    assert float(alone) == pytest.approx(math.log(2.0), rel=1e-6)


def test_a_window_weight_scales_its_term_of_the_content_loss(recognize_task) -> None:
    """Window weights (``balance``, ``file_balance``: "window weights ∝ ...") scale each window's cross-entropy in the
    batch mean: weights ``(2, 0)`` give the first window's loss alone, whatever the label smoothing."""
    logits = torch.tensor([[2.0, -1.0], [-3.0, 0.5]])
    labels = torch.tensor([0, 0])
    weighted, _ = recognize_task.loss(_Heads(logits, None),
                                      {"x": torch.zeros(2, 1), "content": labels, "weight": torch.tensor([2.0, 0.0])})  # fmt: skip
    first, _ = recognize_task.loss(_Heads(logits[:1], None),
                                   {"x": torch.zeros(1, 1), "content": labels[:1], "weight": torch.ones(1)})  # fmt: skip
    plain, _ = recognize_task.loss(
        _Heads(logits, None), {"x": torch.zeros(2, 1), "content": labels, "weight": torch.ones(2)}
    )
    assert float(weighted) == pytest.approx(float(first), rel=1e-6)
    assert abs(float(plain) - float(first)) > 0.1  # the second window's term is not small


def test_half_of_the_windows_whose_mirror_has_a_label_are_mirrored(recognize_task) -> None:
    """Rule: "A left/right mirror image for half of the samples whose mirror has a label (``walk-left`` becomes
    ``walk-right``)" (module docstring): over 400 draws each label turns into the other about half the time (a
    binomial's 400 draws at p = 1/2 stay within 0.38-0.62 but with probability ~1e-6)."""
    task = recognize_task
    picks = torch.arange(task.num_samples()).repeat(400 // task.num_samples() + 1)[:400]
    batch = task.batch(picks, torch.Generator().manual_seed(3))
    before = task.content[picks]
    for label in (0, 1):
        moved = float((batch["content"][before == label] != label).float().mean())
        assert 0.38 < moved < 0.62, (label, moved)
    assert set(batch["content"].tolist()) <= {0, 1}


def test_playback_speeds_span_the_documented_range(recognize_task, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule: "A playback-speed factor per batch (:data:`SPEED`, 0.4-1.8: the window is read longer or shorter and
    resampled)" (module docstring; README: "playback speed 0.4-1.8"): a 16-frame window is read over
    ``16 * speed`` frames, so over 100 batches the lengths read reach below ``0.45 * 16`` and above ``1.7 * 16``
    and stay within ``[0.4 * 16, 1.8 * 16]`` (give or take the rounding to a frame)."""
    task = recognize_task
    lengths: list[int] = []
    features = task._features

    def spy(windows: Tensor, length: int | None = None, *args: Tensor | None) -> Tensor:
        lengths.append(int(length or task.model.window))
        return features(windows, length, *args)

    monkeypatch.setattr(task, "_features", spy)
    g = torch.Generator().manual_seed(0)
    for _ in range(100):
        task.batch(torch.tensor([0]), g)
    t = task.model.window
    assert 0.4 * t - 0.5 <= min(lengths) < 0.45 * t and 1.7 * t < max(lengths) <= 1.8 * t + 0.5


def test_only_the_length_channels_scale_with_the_body_size_of_at_most_ten_percent(recognize_task,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Rule: "A body-size factor per sample (0.9-1.1 on lengths)" (module docstring; README "body size ±10 %"). Of the 16
    channels (:mod:`skelanim.learn.joints`: position relative to the pelvis, its change, 6D rotation, step along
    and across the heading, turning rate, pelvis height) the positions, their changes, the steps and the height
    are lengths; the rotation and the turning rate are not. With the speed fixed at 1, no noise and no mirror,
    the batch is the window's features with each sample's length channels times one factor in ``[0.9, 1.1]``."""
    import skelanim.learn.recognize_train as rt

    task = recognize_task
    monkeypatch.setattr(rt, "SPEED", (1.0, 1.0))
    monkeypatch.setattr(task, "mirror", False)
    monkeypatch.setattr(task, "noise_std", torch.zeros_like(task.noise_std))
    picks = torch.arange(task.num_samples()).repeat(20)
    x = task.batch(picks, torch.Generator().manual_seed(1))["x"]
    plain = task._features(task.windows[picks])
    lengths = torch.tensor([True] * 6 + [False] * 6 + [True, True, False, True])
    ok = plain.abs() > 1e-4
    ratio = torch.where(ok, x / torch.where(ok, plain, torch.ones_like(plain)), torch.nan)
    torch.testing.assert_close(x[..., ~lengths], plain[..., ~lengths])
    per_sample = ratio[..., lengths].flatten(1)
    factor = per_sample.nanmean(1)
    spread = (per_sample - factor[:, None]).abs().nan_to_num(0.0).amax(1)
    assert float(spread.max()) < 1e-4  # one factor per sample
    assert 0.9 - 1e-6 <= float(factor.min()) < 0.92 and 1.08 < float(factor.max()) <= 1.1 + 1e-6


def test_model_selection_scores_the_window_error(recognize_task, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule: "Model selection: the window error on the validation styles" (module docstring): with validation clips the
    selection metric ``val_error`` is one minus the window accuracy, not the file accuracy."""
    import skelanim.learn.recognize_train as rt

    monkeypatch.setattr(rt, "evaluate_recognizer", lambda model, ds: {"top1_windows": 0.75, "top1_files": 0.5})
    monkeypatch.setattr(recognize_task, "val_ds", object())
    out = recognize_task.validate(recognize_task.model)
    assert out["val_error"] == pytest.approx(0.25) and out["val_top1_files"] == 0.5


def test_the_recognition_term_is_weighted_by_w_recog(gen_ds: MotionDataset) -> None:
    """``GenerateTask``: "in the GAN stage the prior samples pay ``w_recog`` times [the frozen recogniser's]
    cross-entropy": two tasks on one batch that differ only in ``w_recog`` (0.25 and 0.75) differ in loss by
    ``0.5`` times the ``recog`` term they report."""
    from skelanim.learn.generate import Generator
    from skelanim.learn.generate_train import GenerateTask
    from skelanim.learn.recognize import Recognizer

    torch.manual_seed(0)
    gen = Generator(gen_ds.rig, ["bow", "walk"], ["happy"], length=16, options=SMALL_GEN)
    rec = Recognizer("stgcn", gen_ds.rig, ["bow", "walk"], [], window=16, arch_options=TINY)
    losses, recog = [], []
    for w in (0.25, 0.75):
        task = GenerateTask(gen, gen_ds, stride=8, adversarial=1.0, recognizer=rec, w_recog=w)
        batch = task.batch(torch.arange(4), torch.Generator().manual_seed(0))
        torch.manual_seed(1)
        loss, parts = task.loss(gen, batch)
        losses.append(float(loss.detach()))
        recog.append(parts["recog"])
    assert recog[0] == pytest.approx(recog[1]) and recog[0] > 0.1
    assert losses[1] - losses[0] == pytest.approx(0.5 * recog[0], rel=1e-4)


# ---------------------------------------------------------------------------------------------- ensembles


def _save(model: nn.Module, folder: Path) -> Path:
    from skelanim.nn.checkpoint import save_model_files

    save_model_files(folder, model.state_dict(), model.config())  # type: ignore[operator]
    return folder


def test_recognisers_of_other_window_lengths_are_not_combined(rig: Rig, tmp_path: Path) -> None:
    """``combine_recognizers`` refuses folders that differ "in anything but weights and architecture options (the
    message names the folder and the first differing setting)": the window length is the recipe's (ensemble
    module docstring: "rig, window, input statistics"), although an ST-GCN's weights fit any length."""
    from skelanim.errors import FormatError
    from skelanim.learn.ensemble import combine_recognizers
    from skelanim.learn.recognize import Recognizer

    torch.manual_seed(0)
    a = _save(Recognizer("stgcn", rig, ["bow", "walk"], [], window=16, arch_options=TINY), tmp_path / "a")
    b = _save(Recognizer("stgcn", rig, ["bow", "walk"], [], window=32, arch_options=TINY), tmp_path / "b")
    with pytest.raises(FormatError, match="'window' differs") as err:
        combine_recognizers([a, b], tmp_path / "ens")
    assert str(b) in str(err.value) and not (tmp_path / "ens").exists()


def test_predictors_of_other_horizons_are_not_combined(rig: Rig, tmp_path: Path) -> None:
    """Predictor members "must share one recipe" (``combine_predictors``: everything but the network weights,
    "for predictors also the architecture"): a GRU's weights fit any horizon, but one that predicts 10 frames
    and one that predicts 20 are not one model."""
    from skelanim.errors import FormatError
    from skelanim.learn.ensemble import combine_predictors
    from skelanim.learn.predict import Predictor

    torch.manual_seed(0)
    a = _save(Predictor("rnn", rig, horizon=10, arch_options={"hidden": 8}), tmp_path / "a")
    b = _save(Predictor("rnn", rig, horizon=20, arch_options={"hidden": 8}), tmp_path / "b")
    with pytest.raises(FormatError, match="'horizon' differs"):
        combine_predictors([a, b], tmp_path / "ens")
    assert not (tmp_path / "ens").exists()


def test_a_member_at_another_rate_is_named_by_its_rate(rig: Rig, tmp_path: Path) -> None:
    """``_combine`` checks the shared settings with ``fps`` first ("a rate also changes the rig: name the rate"): a
    member read at another rate, whose rig therefore differs too, is refused naming ``'fps'``, not ``'rig'``."""
    from skelanim.errors import FormatError
    from skelanim.learn.ensemble import combine_recognizers
    from skelanim.learn.recognize import Recognizer

    other = Rig.from_dict({**rig.to_dict(), "height": 1.25 * rig.height})  # the rig as read at the other rate
    assert other.to_dict() != rig.to_dict()
    torch.manual_seed(0)
    a = _save(Recognizer("stgcn", rig, ["bow", "walk"], [], window=16, arch_options=TINY), tmp_path / "a")
    b = _save(Recognizer("stgcn", other, ["bow", "walk"], [], window=16, fps=30.0, arch_options=TINY), tmp_path / "b")
    with pytest.raises(FormatError, match="'fps' differs"):
        combine_recognizers([a, b], tmp_path / "ens")


def test_an_ensemble_of_one_folder_or_one_network_is_refused(rig: Rig, tmp_path: Path) -> None:
    """``combine_recognizers``: "Two or more single-model recogniser folders"; ``MemberMean``: ``K`` networks
    averaged, "an ensemble needs at least two": one alone is refused rather than written as an "ensemble"."""
    from skelanim.learn.ensemble import combine_predictors, combine_recognizers
    from skelanim.learn.predict import Predictor
    from skelanim.learn.predictors import MemberMean, Seq2SeqGRU
    from skelanim.learn.recognize import Recognizer

    torch.manual_seed(0)
    a = _save(Recognizer("stgcn", rig, ["bow", "walk"], [], window=16, arch_options=TINY), tmp_path / "a")
    p = _save(Predictor("rnn", rig, horizon=10, arch_options={"hidden": 8}), tmp_path / "p")
    with pytest.raises(ValueError, match="at least two"):
        combine_recognizers([a], tmp_path / "ens")
    with pytest.raises(ValueError, match="at least two"):
        combine_predictors([p], tmp_path / "ens")
    assert not (tmp_path / "ens").exists()
    with pytest.raises(ValueError, match="at least two"):
        MemberMean([Seq2SeqGRU(9, hidden=4)])


# ---------------------------------------------------------------------------------------------- predictors


def test_predictor_networks_refuse_what_their_docstrings_rule_out() -> None:
    """``DCTGCN``: the periodic pad "needs ``observed > 8``" (so 8 is refused when the network is built, not at its
    first forward pass) and a given ``horizon`` "must equal the model's"; a ``half_period`` network needs the
    mirror of its frames (``Seq2SeqGRU``: "``mirror`` ... used with ``half_period``"; ``_half``: "an error
    without it")."""
    from skelanim.learn.predictors import DCTGCN, Seq2SeqGRU

    with pytest.raises(ValueError, match="more than 8"):
        DCTGCN(9, observed=8, horizon=5, pad="periodic")
    gcn = DCTGCN(9, observed=10, horizon=5, hidden=4, blocks=1)
    with pytest.raises(ValueError, match="predicts 5 frames"):
        gcn(torch.zeros(1, 10, 9), 6)
    gru = Seq2SeqGRU(9, hidden=4, anchor=True, half_period=True)
    with pytest.raises(ValueError, match="mirror"):
        gru(torch.randn(1, 12, 9), 3, torch.ones(9))


def test_class_balance_weighs_windows_by_the_inverse_class_count_with_mean_one(rig: Rig) -> None:
    """``balance``: "class weights of the content loss ``∝ n_c^-balance``" and "the average training window weighs
    1". Three clips of 48 frames give 5 windows of 16 each at stride 8: ``walk-left`` has 10, ``walk-right`` 5; with
    ``balance = 1`` the weights are ``c / 10`` and ``c / 5`` with ``(10 c / 10 + 5 c / 5) / 15 = 1``: 0.75 and 1.5."""
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    labelled = [{"content": "walk-left", "style": "happy"}, {"content": "walk-left", "style": "sad"},
                {"content": "walk-right", "style": "happy"}]  # fmt: skip
    ds = _dataset(rig, labelled)
    torch.manual_seed(0)
    model = Recognizer("stgcn", rig, ["walk-left", "walk-right"], ["happy", "sad"], window=16, arch_options=TINY)
    task = RecognizeTask(model, ds, None, stride=8, balance=1.0)
    assert task.content.tolist() == [0] * 10 + [1] * 5
    torch.testing.assert_close(task.sample_weight, torch.tensor([0.75] * 10 + [1.5] * 5))
