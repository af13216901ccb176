"""Long generation: windows chained by latent optimisation (``skelanim.learn.generate_long``), on the shipped
generator (no data needed)."""

from __future__ import annotations

import pytest
import torch

from skelanim.learn.generate import Generator
from skelanim.learn.generate_long import chain_windows, crossfade_weights, sample_long, sample_plan, seam_fit


@pytest.fixture(scope="module")
def shipped() -> Generator:
    return Generator.load()


def test_crossfade_weights_rise_and_pair_up_to_one():
    w = crossfade_weights(16)
    assert w.shape == (16,) and bool((w > 0).all() and (w < 1).all())
    assert bool((w[1:] > w[:-1]).all())
    assert torch.allclose(w + w.flip(0), torch.ones(16, dtype=w.dtype))


def test_chain_windows_blends_only_the_overlap():
    prev, win = torch.zeros(2, 10, 3), torch.ones(2, 8, 3)
    out = chain_windows(prev, win, 4)
    assert out.shape == (2, 14, 3)
    assert torch.equal(out[:, :6], prev[:, :6]) and torch.equal(out[:, 10:], win[:, 4:])
    assert torch.allclose(out[0, 6:10, 0], crossfade_weights(4).float())
    same = torch.randn(1, 6, 2)  # windows that agree on the overlap are joined exactly
    assert torch.allclose(chain_windows(same[:, :4], same[:, 1:], 3), same)


def test_short_requests_are_the_plain_sample(shipped):
    plain = shipped.sample(["walk", "bow"], ["happy", "normal"], generator=torch.Generator().manual_seed(3))
    short = sample_long(shipped, ["walk", "bow"], ["happy", "normal"], 40, generator=torch.Generator().manual_seed(3))
    assert torch.allclose(short, plain[:, :40])


def test_seam_fit_pulls_the_window_onto_the_motion_and_stays_near_its_draw(shipped):
    contents = ["walk"] * 8
    content = torch.tensor(shipped.contents.indices(contents))
    cond = shipped.condition(contents, ["normal"] * 8)
    with torch.no_grad():
        target = shipped.vae.decode(shipped.draw_latent(content, torch.Generator().manual_seed(1)), cond)[:, -16:]
        z0 = shipped.draw_latent(content, torch.Generator().manual_seed(2))
        before = (shipped.vae.decode(z0, cond)[:, :16] - target).pow(2).mean()
        z = seam_fit(shipped, z0, cond, target, content)
        after = (shipped.vae.decode(z, cond)[:, :16] - target).pow(2).mean()
        assert after < 0.3 * before  # measured: rms 0.41 -> 0.17
        white = torch.linalg.solve_triangular(shipped.latent_chol[content], (z - shipped.latent_mean[content])[:, :, None],
                                              upper=False)[:, :, 0]  # fmt: skip
        assert 0.5 < float(white.pow(2).sum(1).mean()) / shipped.vae.latent < 2  # still a typical draw
        held = seam_fit(shipped, z0, cond, target, content, anchor_weight=1e6)
        assert torch.allclose(held, z0, atol=1e-3)


def test_long_motion_is_continuous_across_seams(shipped):
    """Four seams of a 208-frame walk: the joints' speed and jerk at the seams stay at the windows' own level."""
    x = sample_long(shipped, ["walk"] * 4, ["normal"] * 4, 208, generator=torch.Generator().manual_seed(0))
    assert x.shape == (4, 208, shipped.vae.dim)
    pos, *_ = shipped.positions(x)
    jerk = (pos[:, 3:] - 3 * pos[:, 2:-1] + 3 * pos[:, 1:-2] - pos[:, :-3]).norm(dim=-1).mean((0, 2))
    at_seams = torch.zeros(len(jerk), dtype=torch.bool)
    for start in (48, 96, 144, 192):  # each overlap begins `length - overlap` frames after the last one did
        at_seams[start - 2 : start + 16] = True
    assert float(jerk[at_seams].mean()) < 1.5 * float(jerk[~at_seams].mean())
    step = (pos[:, 1:, 0] - pos[:, :-1, 0]).norm(dim=-1)  # the pelvis path has no jumps
    assert float(step.max()) < 4 * float(step.mean())


def test_bad_lengths_are_refused(shipped):
    with pytest.raises(ValueError, match="frames"):
        sample_long(shipped, ["walk"], ["normal"], 0)
    with pytest.raises(ValueError, match="overlap"):
        sample_long(shipped, ["walk"], ["normal"], 100, overlap=64)


def test_a_short_window_generator_samples_one_window_and_chains_more(shipped):
    """A generator trained with ``--window 16`` had refused every motion, one window too ("overlap must be
    between 1 and 15 frames, got 16"): the default overlap is half such a window, and an overlap that cannot fit
    is refused only where windows are chained."""
    from skelanim.learn.generate_long import default_overlap

    torch.manual_seed(0)
    small = Generator(shipped.rig, ["walk"], ["normal"], length=16, options={"latent": 8, "hidden": 16, "embed": 4})
    assert (default_overlap(64), default_overlap(16), default_overlap(8)) == (16, 8, 4)
    assert sample_long(small, ["walk"], ["normal"], 16).shape == (1, 16, small.vae.dim)
    assert sample_long(small, ["walk"], ["normal"], 12, overlap=16).shape[1] == 12  # one window: no overlap
    assert sample_plan(small, [("walk", "normal", 40)], steps=2).shape == (1, 40, small.vae.dim)
    with pytest.raises(ValueError, match="overlap must be between 1 and 15 frames .* got 16"):
        sample_long(small, ["walk"], ["normal"], 40, overlap=16)


def test_a_plan_plays_its_contents_in_turn(shipped):
    """walk for 100 frames, then run: the shipped recogniser reads the first window as a walk and the last as a
    run, and the pelvis speeds up where the plan says."""
    from skelanim.learn.recognize import Recognizer

    x = sample_plan(shipped, [("walk", "normal", 100), ("run", "normal", 100)], n=4,
                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert x.shape == (4, 200, shipped.vae.dim)
    pos, rot, pelvis, yaw = shipped.positions(x)
    rec = Recognizer.load()
    for start, content in ((0, "walk"), (136, "run")):
        cut = slice(start, start + 64)
        probs, _ = rec.embed_arrays(rot[:, cut], pelvis[:, cut], yaw[:, cut], pos[:, cut] * shipped.rig.height)
        assert [rec.contents.names[int(i)] for i in probs.argmax(1)] == [content] * 4
    horizontal = [a for a in range(3) if a != shipped.rig.up]
    speed = (pelvis[:, 1:] - pelvis[:, :-1])[..., horizontal].norm(dim=-1).mean(0) * shipped.fps / shipped.rig.height
    assert float(speed[150:].mean()) > 1.5 * float(speed[:90].mean())  # measured 1.85 against 0.8 heights/s
    same = sample_plan(shipped, [("walk", "normal", 100)], n=2, generator=torch.Generator().manual_seed(5))
    assert torch.equal(same, sample_long(shipped, ["walk"] * 2, ["normal"] * 2, 100, generator=torch.Generator().manual_seed(5)))
    with pytest.raises(ValueError, match="segment"):
        sample_plan(shipped, [])


def test_the_shipped_generator_s_windows_do_not_jolt_at_their_ends(shipped):
    """A window's end frames accelerate like its middle ones (the decoder's zero padding had made them jolt: 2.7 ×
    the middle's acceleration, the peak at an end frame in 92 % of samples; replicate padding since 2026-12-05)."""
    contents = [c for c in shipped.contents.names for _ in range(4)]
    x = shipped.sample(contents, ["normal"] * len(contents), generator=torch.Generator().manual_seed(0))
    pos = shipped.positions(x)[0]
    rel = pos - pos[..., :1, :]  # root-relative
    acc = (rel[:, 2:] - 2 * rel[:, 1:-1] + rel[:, :-2]).norm(dim=-1).mean(-1)  # (B, T - 2), by centre frame
    mean = acc.mean(0)
    ends = torch.cat([mean[:2], mean[-2:]]).mean() / mean[9:-11].mean()
    peaks = acc.argmax(1)
    at_an_end = ((peaks <= 1) | (peaks >= acc.shape[1] - 2)).float().mean()
    assert float(ends) < 1.5 and float(at_an_end) < 0.3, (float(ends), float(at_an_end))
