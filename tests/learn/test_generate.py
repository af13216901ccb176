"""Generation: the CVAE learns, the GAN step moves each player only by its own loss, samples are BVH on the
training skeleton with exact bone lengths, interpolation, evaluation keys."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
from replaying import replaying  # tests/helpers

import skelanim
from skelanim.learn.generate import Generator
from skelanim.learn.generate_eval import evaluate_generation
from skelanim.learn.generate_train import GenerateTask, train_generator
from skelanim.metrics.kinematic import bone_length_error
from skelanim.nn.train import TrainConfig, seeded_generator

SMALL = {"latent": 8, "hidden": 32, "embed": 4}


def _generator(ds) -> Generator:
    torch.manual_seed(0)
    return Generator(ds.rig, sorted(set(ds.labels("content"))), sorted(set(ds.labels("style"))), length=16, options=SMALL)  # fmt: skip


def test_vectors_round_trip(tiny_ds):
    gen = _generator(tiny_ds)
    g = tiny_ds.gather(tiny_ds.windows(16, 16)[:3], 16, keys=("rot", "pelvis", "yaw", "positions"))
    x = gen.to_vectors(g["rot"].double(), g["pelvis"].double(), g["yaw"].double())
    assert x.shape == (3, 16, 6 * 21 + 4)
    rot, pelvis, _ = gen.to_world(x, yaw0=g["yaw"][:, 0].double(), start=g["pelvis"][:, 0].double())
    assert torch.allclose(rot, g["rot"].double(), atol=1e-5) and torch.allclose(pelvis, g["pelvis"].double(), atol=1e-3)


def test_a_few_vae_steps_lower_the_loss(tiny_ds):
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8)
    batch = task.batch(torch.arange(16), seeded_generator(0))
    opt = torch.optim.Adam(gen.parameters(), lr=2e-3)
    first = float(task.loss(gen, batch)[0].detach())
    for _ in range(15):
        loss, _ = task.loss(gen, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(task.loss(gen, batch)[0].detach()) < 0.7 * first


def test_batches_carry_the_real_windows_as_a_step_would_compute_them(tiny_ds):
    """The task computes every window's standardised vectors, positions and contacts once; a batch's are bit for
    bit what the step computed from the window itself, so the training terms are the same as without them."""
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8, adversarial=1.0)
    pick = torch.tensor([5, 0, 3, 3, 1])
    batch = task.batch(pick, seeded_generator(0))
    x = gen.norm(task._vectors(task.windows[pick]))
    assert torch.equal(batch["x"], x)
    assert torch.equal(batch["positions"], gen.positions(gen.norm.inverse(x))[0])
    assert torch.equal(batch["contacts"], task._contacts(task.windows[pick]))
    args = (batch["x"], batch["content"], batch["style"], batch["eps"], batch["prior"], batch["contacts"])
    torch.manual_seed(0)
    given = gen(*args, positions=batch["positions"])
    torch.manual_seed(0)
    computed = gen(*args)
    for key in ("rec", "pos", "vel", "skate", "speed", "speed_frames", "contact_frames", "fake_skate"):
        assert torch.equal(given[key], computed[key]), key


def _kl(gen: Generator, task: GenerateTask, batch: dict) -> torch.Tensor:
    """Per-dimension KL of the posterior to N(0, I), batch mean, by torch.distributions (not the loss's formula)."""
    from torch.distributions import Normal, kl_divergence

    with torch.no_grad():
        mu, logvar = gen.vae.encode(batch["x"], gen.vae.condition(batch["content"], batch["style"]))
    return kl_divergence(Normal(mu, torch.exp(0.5 * logvar)), Normal(0.0, 1.0)).mean(0)


def test_free_bits_keep_the_latent_in_use(tiny_ds):
    """After a start with no KL weight (the latent carries information), a heavy KL weight collapses the
    posterior onto the prior; with a floor of 0.5 nat per dimension the KL below it costs nothing and the
    latent stays in use."""
    floor, steps = 0.5, 40
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8, beta=0.0)
    batch = task.batch(torch.linspace(0, task.num_samples() - 1, 32).long(), seeded_generator(0))

    def train(task: GenerateTask) -> None:
        opt = torch.optim.Adam(gen.parameters(), lr=3e-3)
        for _ in range(steps):
            loss, _ = task.loss(gen, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()

    train(task)
    start, kls = {k: v.clone() for k, v in gen.state_dict().items()}, {}
    assert int((_kl(gen, task, batch) > floor).sum()) == SMALL["latent"]  # informative start
    for fb in (0.0, floor):
        gen.load_state_dict(start)
        heavy = GenerateTask(gen, tiny_ds, stride=8, beta=1.0, free_bits=fb)
        train(heavy)
        kls[fb] = _kl(gen, heavy, batch)
        assert abs(float(kls[fb].sum()) - heavy.loss(gen, batch)[1]["kl"]) < 1e-3 * (1 + float(kls[fb].sum()))
    assert float(kls[0.0].max()) < 0.02 * floor  # plain KL: collapsed in every dimension
    # free bits: no pressure below the floor (Adam's momentum still carries it under), so every dimension keeps
    # more information than any collapsed one, and the total is an order of magnitude above the collapsed total
    assert float(kls[floor].min()) > float(kls[0.0].max()) and float(kls[floor].sum()) > 8 * float(kls[0.0].sum())


def test_z_reaches_every_decoder_layer_only_with_z_every():
    from skelanim.learn.cvae import MotionCVAE

    torch.manual_seed(0)
    c = torch.randn(2, 8)
    for z_every in (False, True):
        vae = MotionCVAE(10, 16, 3, 2, latent=4, hidden=8, embed=4, z_every=z_every)
        with torch.no_grad():
            vae.from_latent.weight[:, :4] = 0.0  # cut the first layer's path from z
            a, b = vae.decode(torch.zeros(2, 4), c), vae.decode(torch.ones(2, 4), c)
        assert (float((a - b).abs().max()) > 1e-4) == z_every


def test_gan_terms_move_only_their_own_player(tiny_ds):
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8, adversarial=1.0)
    batch = task.batch(torch.arange(8), seeded_generator(0))
    _, parts = task.loss(gen, batch)
    assert {"rec", "kl", "pos", "vel", "skate", "g_adv", "d", "fake_skate", "speed", "contact_frames",
            "speed_frames"} == set(parts)  # fmt: skip
    terms = gen(batch["x"], batch["content"], batch["style"], batch["eps"], batch["prior"])
    d_params, dec_params = list(gen.disc.parameters()), list(gen.vae.dec.parameters())

    def moved(loss, params):
        grads = torch.autograd.grad(loss, params, allow_unused=True, retain_graph=True)
        return any(g is not None and float(g.abs().max()) > 0 for g in grads)

    assert not moved(terms["g_adv"], d_params) and moved(terms["g_adv"], dec_params)  # G's term: decoder only
    assert moved(terms["d"], d_params) and not moved(terms["d"], dec_params)  # D's term: discriminator only


def test_train_sample_write_bvh_and_interpolate(tiny_ds, tmp_path):
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    out = tmp_path / "gen"
    result = train_generator(
        tiny_ds, out, length=16, stride=16, vae_loop=loop, gan_loop=loop, options=SMALL, command="t"
    )
    assert result["gan"] is not None and (out / "vae" / "model.safetensors").is_file()
    from skelanim.nn.checkpoint import load_model_files

    for folder in (out / "vae", out):  # each stage ends with its latent prior fitted
        chol = load_model_files(folder)[0]["latent_chol"]
        assert not torch.equal(chol, torch.eye(chol.shape[-1]).expand_as(chol))
    config = json.loads((out / "config.json").read_text())
    assert config["training"]["stage"] == "gan" and config["format"] == "skelanim-generator"
    gen = Generator.load(out)
    x = gen.sample(["walk", "run"], ["happy", "elderly"], generator=torch.Generator().manual_seed(0))
    assert x.shape == (2, 16, 130)
    for i, motion in enumerate(gen.to_motions(x)):
        path = tmp_path / f"g{i}.bvh"
        skelanim.save(motion, path)
        back = skelanim.load(path)
        assert back.skeleton.same_topology(tiny_ds.rig.skeleton) and back.num_frames == 16
        pos = back.positions()
        assert bone_length_error(pos[:, 2:], [-1] + [p - 2 for p in back.skeleton.parents[3:].tolist()],
                                 back.skeleton.offsets[2:]) < 1e-4  # exact up to the file's 6 decimals  # fmt: skip
    with pytest.raises(Exception, match="unknown content"):
        gen.sample(["fly"], ["happy"])
    clips = [skelanim.load(tiny_ds.clips[i].path) for i in (0, 4)]
    labels = [(c.labels["content"], c.labels["style"]) for c in (tiny_ds.clips[0], tiny_ds.clips[4])]
    steps = gen.interpolate(clips[0], clips[1], labels[0], labels[1], 3)
    assert len(steps) == 3 and [m.metadata["interpolation"] for m in steps] == [0.0, 0.5, 1.0]


def test_evaluate_generation_keys(tiny_ds):
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8)  # sets the normaliser

    def embed(rot, pelvis, yaw, positions):
        f = positions.reshape(positions.shape[0], -1)[:, :6].float()
        return torch.softmax(f[:, :3], -1), f

    res = evaluate_generation(gen, embed, tiny_ds.subset([0, 2, 4]), tiny_ds.subset([1, 3, 5]), stride=16)
    assert {"fid", "fid_real", "recognised", "diversity", "foot_skating", "foot_skating_real"} <= set(res)
    assert res["fid"] >= 0 and res["fid_real"] >= 0 and 0 <= res["recognised"] <= 1
    assert 0 <= res["contact_share"] <= 1 and 0.3 < res["contact_share_real"] <= 1  # real feet rest on the ground
    assert res["limb_speed_real"] > 0.05 and res["limb_speed"] >= 0  # walks, bows and runs move their limbs
    assert 0 <= res["pose_outliers"] <= 1
    assert task.num_samples() > 0


def _shape_features(rot, pelvis, yaw, positions):
    """Recogniser stand-in: every window's mean and spread of its hand-to-foot and hand-to-hand distances (the same
    wherever and whichever way the body stands, as generated windows start at the origin facing +Z), and a
    'class' that is always the first content."""
    hands, feet = (8, 12), (15, 19)  # the rig's model joints: Hand_L, Hand_R, Foot_L, Foot_R
    d = [(positions[..., a, :] - positions[..., b, :]).norm(dim=-1) for a in hands for b in (*feet, 12) if a != b]
    d = torch.stack(d, -1).float()  # (B, T, 5)
    feats = torch.cat([d.mean(1), d.std(1)], -1)
    return torch.nn.functional.one_hot(torch.zeros(len(feats), dtype=torch.long), 3).float(), feats


def test_evaluate_generation_scores_a_perfect_and_a_frozen_generator_by_hand(tiny_ds):
    """A generator that replays the real windows it is scored against has FID 0 with them, and a recogniser that
    always answers the first content recognises exactly the share of requests for it (counted here from the file
    names); one that replays a single window for every request is far from them, while the FID between the two
    real sets (here the same set) stays 0. So ``fid`` is the generated set's and ``recognised`` counts answers."""
    real = tiny_ds.subset([0, 2, 4])
    windows = real.windows(16, 16)
    gen = _generator(tiny_ds)
    GenerateTask(gen, tiny_ds, stride=8)  # sets the normaliser
    perfect = evaluate_generation(replaying(gen, real, windows), _shape_features, real, real, stride=16)
    asked = [real.clips[i].labels["content"] for i in windows[:, 0].tolist()]
    first = min(tiny_ds.labels("content"))  # the generator's vocabulary is sorted: its first content
    share = asked.count(first) / len(asked)
    assert perfect["samples"] == perfect["real_windows"] == len(windows) and 0 < share < 1
    assert abs(perfect["recognised"] - share) < 1e-12
    assert perfect["fid_real"] < 1e-6 and perfect["fid"] < 1e-6
    frozen = evaluate_generation(replaying(_generator(tiny_ds), real, windows[:1]), _shape_features, real, real, stride=16)
    assert frozen["fid_real"] < 1e-6 and frozen["fid"] > 100.0  # squared distances in the rig's units (cm): far apart
    assert frozen["diversity"] < 1e-4 < frozen["diversity_real"]  # one window again and again


def test_shipping_copy_is_float16_without_the_discriminator(tiny_ds, tmp_path):
    from skelanim.learn.common import export_for_shipping
    from skelanim.nn.checkpoint import load_model_files, save_model_files

    gen = _generator(tiny_ds)
    GenerateTask(gen, tiny_ds, stride=8)  # sets the statistics
    save_model_files(tmp_path / "full", gen.state_dict(), gen.config())
    size = export_for_shipping(tmp_path / "full", tmp_path / "ship", drop=("disc.",))
    tensors, config = load_model_files(tmp_path / "ship")
    assert size == (tmp_path / "ship" / "model.safetensors").stat().st_size
    assert not any(k.startswith("disc.") for k in tensors) and config["shipped"]["dropped"] == ["disc."]
    assert tensors["vae.out.conv.weight"].dtype == torch.float16 and tensors["norm.std"].dtype == torch.float32
    a = Generator.load(tmp_path / "ship").sample(["walk"], ["happy"], generator=torch.Generator().manual_seed(0))
    b = Generator.load(tmp_path / "full").sample(["walk"], ["happy"], generator=torch.Generator().manual_seed(0))
    assert torch.allclose(a, b, atol=1e-2 * float(b.abs().max()))
    assert config["options"] == {"latent": 8, "hidden": 32, "embed": 4, "z_every": False, "decoder": "conv",
                                 "layers": 4, "padding": "zeros"}  # recorded in full  # fmt: skip


def test_recognition_term_moves_only_the_decoder_and_can_be_lowered(tiny_ds):
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    torch.manual_seed(0)
    rec = Recognizer("cnn", tiny_ds.rig, sorted(set(tiny_ds.labels("content"))), [], window=16,
                     arch_options={"channels": (16, 16), "strides": (1, 2)})  # fmt: skip
    RecognizeTask(rec, tiny_ds, None, stride=8)  # sets its input statistics
    gen = _generator(tiny_ds)
    task = GenerateTask(gen, tiny_ds, stride=8, adversarial=1.0, recognizer=rec, w_recog=1.0)
    batch = task.batch(torch.linspace(0, task.num_samples() - 1, 12).long(), seeded_generator(0))
    assert len(set(batch["content"].tolist())) == 3
    _, parts = task.loss(gen, batch)
    assert "recog" in parts and "fake" not in parts
    assert all(not p.requires_grad for p in rec.parameters()) and not rec.training  # frozen
    fake = gen(batch["x"], batch["content"], batch["style"], batch["eps"], batch["prior"])["fake"]
    term = task.recognition(fake, batch["content"])
    grads = torch.autograd.grad(term, list(gen.vae.dec.parameters()) + list(gen.disc.parameters()), allow_unused=True)
    n_dec = len(list(gen.vae.dec.parameters()))
    assert any(g is not None and float(g.abs().max()) > 0 for g in grads[:n_dec])  # reaches the decoder
    assert all(g is None or float(g.abs().max()) == 0 for g in grads[n_dec:])  # not the discriminator
    opt = torch.optim.Adam(gen.vae.dec.parameters(), lr=3e-3)
    first = float(term.detach())
    for _ in range(20):
        fake = gen(batch["x"], batch["content"], batch["style"], batch["eps"], batch["prior"])["fake"]
        loss = task.recognition(fake, batch["content"])
        opt.zero_grad()
        loss.backward()
        opt.step()
    fake = gen(batch["x"], batch["content"], batch["style"], batch["eps"], batch["prior"])["fake"]
    assert float(task.recognition(fake, batch["content"]).detach()) < 0.5 * first
    task.recog_label[:] = -100  # contents the recogniser does not know: the mean over no label had been NaN
    assert float(task.recognition(fake, batch["content"])) == 0.0


def test_gan_stage_can_start_from_a_trained_generator(tiny_ds, tmp_path):
    from skelanim.learn.common import export_for_shipping

    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    train_generator(tiny_ds, tmp_path / "a", length=16, stride=16, vae_loop=loop, options=SMALL)
    export_for_shipping(tmp_path / "a", tmp_path / "a16")  # float16, as shipped
    before = Generator.load(tmp_path / "a16").state_dict()
    no_steps = TrainConfig(epochs=1, batch_size=8, lr=0.0, warmup_steps=1, progress=False)
    result = train_generator(tiny_ds, tmp_path / "b", length=16, stride=16, gan_loop=no_steps, options=SMALL,
                             init=tmp_path / "a16")  # fmt: skip
    assert result["vae"]["init"] == str(tmp_path / "a16")
    after = Generator.load(tmp_path / "b").state_dict()
    assert torch.allclose(after["vae.out.conv.weight"], before["vae.out.conv.weight"].float())  # lr 0: unchanged
    with pytest.raises(ValueError, match="differ"):
        train_generator(tiny_ds, tmp_path / "c", length=16, stride=16, gan_loop=loop, options={**SMALL, "latent": 4},
                        init=tmp_path / "a16")  # fmt: skip


def test_limb_speed_of_a_joint_circling_a_moving_pelvis():
    """Chord speed of a joint on a circle (radius r, angular speed w) round a pelvis in uniform motion, which
    does not count: 2 r sin(w dt / 2) / dt."""
    from skelanim.learn.generate import limb_speed

    fps, r, w = 25.0, 0.3, 4.0
    t = torch.arange(10, dtype=torch.float64) / fps
    pelvis = torch.stack([2.0 * t, torch.zeros_like(t), 0.5 * t], -1)
    joint = pelvis + r * torch.stack([torch.cos(w * t), torch.sin(w * t), torch.zeros_like(t)], -1)
    speed = limb_speed(torch.stack([pelvis, joint], 1)[None], fps)
    assert speed.shape == (1, 9, 2) and float(speed[..., 0].abs().max()) == 0.0
    assert torch.allclose(speed[..., 1], torch.full((1, 9), 2 * r * math.sin(w / fps / 2) * fps, dtype=torch.float64))


def test_heading_poses_do_not_depend_on_where_the_body_faces():
    from skelanim.data.features import yaw_matrix
    from skelanim.learn.generate_eval import POSE_EVERY, heading_poses

    pos = torch.randn(2, 9, 5, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    yaw = torch.randn(2, 9, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    turn = torch.tensor(0.7, dtype=torch.float64)
    turned = pos @ yaw_matrix(turn, 1).T + torch.tensor([3.0, 0.0, -2.0], dtype=torch.float64)  # turned and moved
    rows = heading_poses(pos, yaw, 1)
    assert rows.shape == (2 * len(range(0, 9, POSE_EVERY)), 15)
    assert torch.allclose(heading_poses(turned, yaw + turn, 1), rows, atol=1e-12)
    assert not torch.allclose(heading_poses(turned, yaw, 1), rows, atol=1e-3)  # the heading is what is undone


def test_the_per_frame_speed_gap_sees_fast_ends_the_mean_gap_misses():
    from skelanim.learn.generate import speed_gaps

    fps = 25.0
    t = torch.arange(11, dtype=torch.float64)
    steady = torch.stack([torch.zeros_like(t), torch.zeros_like(t), t * 0.02], -1)  # a joint moving 0.5 / s
    bursty = steady.clone()
    bursty[:, 2] = torch.tensor([0.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.2], dtype=torch.float64)
    pelvis = torch.zeros(11, 3, dtype=torch.float64)  # the same mean speed (0.2 over 10 steps), all at the ends

    def window(joint):
        return torch.stack([pelvis, joint], 1)[None]

    mean_gap, frame_gap = speed_gaps(window(bursty), window(steady), fps)
    assert float(mean_gap) == pytest.approx(0.0, abs=1e-12)
    # frames 0 and 9 move 0.1 (2.5 / s), the 8 others none; real: 0.5 / s everywhere; joint 0 (pelvis) 0 in both
    assert float(frame_gap) == pytest.approx((2 * 2.0 + 8 * 0.5) / 10 / 2, abs=1e-12)
    assert float(speed_gaps(window(steady), window(steady), fps)[1]) == pytest.approx(0.0, abs=1e-12)


def test_sinusoidal_codes_match_the_closed_form():
    from skelanim.learn.cvae import sinusoidal_codes

    codes = sinusoidal_codes(50, 8)
    for t in (0, 7, 49):
        for i in range(4):
            w = 10000 ** (-2 * i / 8)
            assert math.isclose(codes[t, 2 * i], math.sin(t * w), abs_tol=1e-5)
            assert math.isclose(codes[t, 2 * i + 1], math.cos(t * w), abs_tol=1e-5)


def test_transformer_decoder_trains_and_tells_frames_apart(tiny_ds, tmp_path):
    """The ACTOR-style decoder: frames differ even with a constant (z, condition) input (the time codes reach
    every frame), a few steps lower its loss, and the option travels with the saved model."""
    torch.manual_seed(0)
    options = {**SMALL, "decoder": "transformer", "layers": 2}
    gen = Generator(tiny_ds.rig, sorted(set(tiny_ds.labels("content"))), sorted(set(tiny_ds.labels("style"))),
                    length=16, options=options)  # fmt: skip
    with torch.no_grad():
        out = gen.vae.decode(torch.zeros(2, 8), gen.vae.condition(torch.tensor([0, 0]), torch.tensor([0, 0])))
    assert out.shape == (2, 16, 130) and float((out[:, 1:] - out[:, :-1]).abs().mean()) > 1e-3
    task = GenerateTask(gen, tiny_ds, stride=8)
    batch = task.batch(torch.arange(16), seeded_generator(0))
    opt = torch.optim.Adam(gen.parameters(), lr=3e-3)
    losses = []
    for _ in range(30):
        loss, _ = task.loss(gen, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.7 * losses[0]
    with pytest.raises(ValueError, match="decoder must be"):
        Generator(tiny_ds.rig, ["walk"], ["happy"], length=16, options={**SMALL, "decoder": "mlp"})
    from skelanim.nn.checkpoint import save_model_files

    save_model_files(tmp_path / "tf", gen.state_dict(), gen.config())
    back = Generator.load(tmp_path / "tf")
    assert back.vae.decoder == "transformer"
    z, c = torch.randn(3, 8), back.vae.condition(torch.tensor([0, 1, 0]), torch.tensor([1, 0, 0]))
    assert torch.allclose(back.vae.decode(z, c), gen.eval().vae.decode(z, c), atol=1e-5)


def test_replicate_padding_gives_the_window_ends_no_inputs_of_their_own():
    """A still input stays still through a replicate-padded decoder layer; with zero padding the first and
    last frames differ from the rest (the free edge that limb-speed matching exploited)."""
    from skelanim.learn.cvae import _CondConv

    torch.manual_seed(0)
    x, c = torch.randn(2, 6, 1).expand(-1, -1, 20), torch.randn(2, 3)
    for padding, still in (("replicate", True), ("zeros", False)):
        layer = _CondConv(6, 3, 5, 5, padding=padding)
        y = layer(x, c)
        assert y.shape == (2, 5, 20)
        assert torch.allclose(y, y[..., 10:11].expand_as(y), atol=1e-6) is still


def test_soft_contacts_follow_the_contact_test_of_the_metric():
    from skelanim.learn.generate import SKATE_THRESHOLD, soft_contacts

    pos = torch.zeros(1, 4, 3, 3)  # joints 1 and 2 are the feet, y up
    pos[0, :, 1, 1] = torch.tensor([0.0, SKATE_THRESHOLD, 0.2, 0.0])  # planted, at the threshold, lifted, planted
    pos[0, :, 2, 1] = 0.5  # a foot that stays level: its lowest point everywhere
    soft = soft_contacts(pos, [1, 2], 1)
    assert soft.shape == (1, 4, 2)
    assert torch.allclose(soft[0, :, 0], torch.tensor([torch.sigmoid(torch.tensor(4.0)), 0.5, 0.0, torch.sigmoid(torch.tensor(4.0))]), atol=1e-6)
    assert torch.allclose(soft[0, :, 1], torch.sigmoid(torch.tensor(4.0)).expand(4))


def test_fit_latent_takes_each_contents_aggregate_posterior_moments(tiny_ds, monkeypatch):
    """Closed form: per content, the mean of the posterior means and the mixture covariance cov(mu) + mean
    sigma^2; with shrinkage, the weighted mean with all windows' covariance. Draws reproduce the moments."""
    gen = _generator(tiny_ds)
    g = torch.Generator().manual_seed(0)
    n, latent = 400, gen.vae.latent
    content = torch.tensor([0] * 300 + [2] * 100)
    mu = torch.randn(n, latent, generator=g) @ torch.randn(latent, latent, generator=g) * 0.5 + 3.0 * content[:, None]
    logvar = torch.randn(n, latent, generator=g) * 0.3 - 1.0
    monkeypatch.setattr(gen.vae, "encode", lambda x, c: (mu, logvar))  # one batch of all n windows
    gen.fit_latent(torch.zeros(n, 16, 130), content, torch.zeros(n, dtype=torch.long), shrink=0.0, batch=n)

    def expected_cov(sel):
        return torch.cov(mu[sel].T.double()) + torch.diag(logvar[sel].exp().double().mean(0))

    for c in (0, 2):
        sel = content == c
        assert torch.allclose(gen.latent_mean[c], mu[sel].mean(0), atol=1e-4)
        chol = gen.latent_chol[c].double()
        assert torch.allclose(chol @ chol.T, expected_cov(sel), atol=1e-3)
    assert torch.equal(gen.latent_mean[1], torch.zeros(latent)) and torch.equal(gen.latent_chol[1], torch.eye(latent))
    draws = gen.draw_latent(torch.full((40000,), 2), torch.Generator().manual_seed(1)).double()
    assert torch.allclose(draws.mean(0), mu[content == 2].mean(0).double(), atol=0.05 * float(mu.std()))
    assert torch.allclose(torch.cov(draws.T), expected_cov(content == 2), atol=0.05 * float(expected_cov(content == 2).abs().max()))
    gen.fit_latent(torch.zeros(n, 16, 130), content, torch.zeros(n, dtype=torch.long), shrink=100.0, batch=n)
    chol = gen.latent_chol[2].double()
    shrunk = (100 * expected_cov(content == 2) + 100 * expected_cov(content >= 0)) / 200
    assert torch.allclose(chol @ chol.T, shrunk, atol=1e-3)


def test_folders_without_a_fitted_prior_sample_from_the_standard_normal(tiny_ds, tmp_path):
    from skelanim.nn.checkpoint import save_model_files

    gen = _generator(tiny_ds)
    GenerateTask(gen, tiny_ds, stride=8)  # sets the statistics
    state = {k: v for k, v in gen.state_dict().items() if not k.startswith("latent_")}
    save_model_files(tmp_path / "old", state, gen.config())
    old = Generator.load(tmp_path / "old")
    assert torch.equal(old.latent_mean, torch.zeros_like(old.latent_mean))
    assert torch.equal(old.latent_chol, torch.eye(old.vae.latent).expand_as(old.latent_chol))
    z = old.draw_latent(torch.tensor([0, 1]), torch.Generator().manual_seed(0))
    assert torch.equal(z, torch.randn(2, old.vae.latent, generator=torch.Generator().manual_seed(0)))


def test_a_run_stopped_inside_the_vae_stage_resumes_to_the_uninterrupted_weights(tiny_ds, tmp_path):
    """``max_steps`` inside the VAE stage: the GAN stage waits (it had started from the unfinished VAE, and a resume
    then went on from that stale start: weights 0.15 away from an uninterrupted run's, found by a user audit); the
    resumed run ends with the uninterrupted run's weights, both stages."""
    from dataclasses import replace

    vae = TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    gan = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    common = {"length": 16, "stride": 16, "options": SMALL, "command": "t"}
    whole = train_generator(tiny_ds, tmp_path / "whole", vae_loop=vae, gan_loop=gan, **common)
    cut = train_generator(tiny_ds, tmp_path / "cut", vae_loop=replace(vae, max_steps=1), gan_loop=replace(gan, max_steps=1),
                          **common)  # fmt: skip
    assert not cut["vae_finished"] and cut["gan"] is None and not (tmp_path / "cut" / "model.safetensors").exists()
    again = train_generator(tiny_ds, tmp_path / "cut", vae_loop=vae, gan_loop=gan, resume=True, **common)
    assert again["vae_finished"] and whole["vae_finished"] and again["gan"] is not None
    for folder in ("vae", "."):
        a = Generator.load(tmp_path / "whole" / folder).state_dict()
        b = Generator.load(tmp_path / "cut" / folder).state_dict()
        assert all(torch.equal(a[k], b[k]) for k in a), folder


def test_too_few_windows_for_the_fid_validate_by_reconstruction(tiny_ds):
    """One training window, or one reference window, cannot give a FID (it had failed after the first epoch:
    "features must be (N >= 2, D), got (1, 256)"): the task validates by reconstruction instead."""
    gen = _generator(tiny_ds)
    def embed(*args):
        return torch.zeros(1, 3), torch.zeros(1, 4)

    # no validation clips: training windows are scored, and named so
    assert GenerateTask(gen, tiny_ds, stride=16, embed=embed, reference=torch.randn(5, 4)).metric == "train_subset_fid"
    task = GenerateTask(gen, tiny_ds, stride=16, embed=embed, reference=torch.randn(1, 4))
    assert task.metric == "train_subset_rec" and set(task.validate(gen)) == {"train_subset_rec"}


def test_validation_scores_the_validation_clips_not_the_training_windows(tiny_ds):
    """With validation clips the scores are theirs (val_*): reconstruction of their windows, and the FID against
    their own features; clips of a style the model has no class for are left out, and none left means training
    windows (train_subset_*). They had scored training windows as val_* whatever was held out."""
    from skelanim.data import MotionDataset

    gen = _generator(tiny_ds)
    feats = []

    def embed(rot, pelvis, yaw, positions):  # features: each window's mean pelvis height (real or sampled)
        f = pelvis[..., 1].mean(-1, keepdim=True).expand(-1, 4) + 0.01 * torch.arange(4.0)
        feats.append(f)
        return torch.zeros(len(f), 3), f

    clip = tiny_ds.clips[0]
    lifted = MotionDataset(clips=[replace(clip, positions=clip.positions + torch.tensor([0.0, 50.0, 0.0]))], fps=tiny_ds.fps)
    lifted.rig = tiny_ds.rig
    plain = GenerateTask(gen, tiny_ds, stride=16, embed=embed, reference=torch.randn(5, 4))
    held = GenerateTask(gen, tiny_ds, stride=16, embed=embed, reference=torch.randn(5, 4), val_ds=lifted)
    assert held.validated and held.metric == "val_fid" and not plain.validated
    assert torch.allclose(held.reference[:, 0], feats[0][:, 0])  # the validation windows' own features
    scores, on_training = held.validate(gen), plain.validate(gen)
    assert set(scores) == {"val_rec", "val_fid", "val_recognised"}
    assert set(on_training) == {"train_subset_rec", "train_subset_fid", "train_subset_recognised"}
    unknown = MotionDataset(clips=[replace(clip, labels={**clip.labels, "style": "never-seen"})], fps=tiny_ds.fps)
    unknown.rig = tiny_ds.rig
    assert not GenerateTask(gen, tiny_ds, stride=16, val_ds=unknown).validated


def test_sampling_needs_one_style_per_content():
    """Two styles for one content had ended in torch's "Sizes of tensors must match"; now a plain error."""
    from skelanim.learn.common import pretrained_dir
    from skelanim.learn.generate import Generator

    gen = Generator.load(pretrained_dir("generate"))
    assert gen.sample(["walk"], ["happy"], generator=torch.Generator().manual_seed(0)).shape[0] == 1
    with pytest.raises(ValueError, match="one style per content: 1 contents and 2 styles"):
        gen.sample(["walk"], ["happy", "sad"])
