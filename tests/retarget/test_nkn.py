"""NKN: the untrained network is the copy, a few training steps lower the loss, streaming equals whole
clips, checkpoints load, the shipped model is small and loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from skelanim.nn.train import TrainConfig, seeded_generator
from skelanim.retarget import DEFAULT_MODEL, Retargeter, load_nkn
from skelanim.retarget.data import Family, encode_clip, leg_length, variant_offsets
from skelanim.retarget.loss import LossWeights, NKNTrainer, twist_angle
from skelanim.retarget.model import NKN, NKNConfig
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_tpose
from skelanim.retarget.train import RetargetTask

TINY = NKNConfig(hidden=16, disc_hidden=8)


@pytest.fixture(scope="module")
def task(clips) -> RetargetTask:
    fams = []
    for name in ("bandai", "cmu_mb", "xia", "deepmimic"):
        motion = clips[name]
        rig = CanonicalRig(motion.skeleton)
        fams.append(Family(name, rig, [encode_clip(motion, rig) | {"name": name}], variants=name == "bandai"))
    return RetargetTask(fams, [], window=16, samples=16, config=TINY)


def test_untrained_network_is_the_copy(clips):
    source, target = clips["bandai"], clips["cmu_mb"].skeleton
    torch.manual_seed(0)
    net = NKN(TINY)
    nkn = Retargeter(source.skeleton, target, "nkn", model=net)(source)
    copy = Retargeter(source.skeleton, target, "copy")(source)
    torch.testing.assert_close(nkn.positions(), copy.positions(), atol=1e-4 * copy.height, rtol=0)


def test_the_copy_costs_no_regularisation(clips):
    """``reg`` keeps the network's correction to the copy small: the untrained network, which is the copy, pays
    none, also between skeletons whose toes stand at other heights (the copy's hips stand on the target's soles;
    the term had measured against the hips scaled alone, and so paid for that lift)."""
    from skelanim.retarget.stance import sole_height

    fams = []
    for name in ("cmu_mb", "cmu_max", "xia", "pymo"):  # all stand on toes
        rig = CanonicalRig(clips[name].skeleton)
        fams.append(Family(name, rig, [encode_clip(clips[name], rig) | {"name": name}]))
    batch = RetargetTask(fams, [], window=16, samples=8, config=TINY).batch(torch.arange(8), seeded_generator(3))
    soles = sole_height(batch["src_off"]) / batch["src_leg"], sole_height(batch["tgt_off"]) / batch["tgt_leg"]
    assert ((soles[0] > 0) & (soles[1] > 0) & ((soles[0] - soles[1]).abs() > 0.005)).any()  # other sole heights
    torch.manual_seed(0)
    with torch.no_grad():
        _, parts = NKNTrainer(TINY, LossWeights(adv=0.0))(batch)
    assert parts["reg"] == pytest.approx(0.0, abs=1e-10)


def test_a_few_steps_lower_the_loss(task):
    torch.manual_seed(0)
    model = NKNTrainer(TINY, LossWeights(adv=0.0))
    batch = task.batch(torch.arange(8), seeded_generator(3))
    with torch.no_grad():
        model.net.head[-1].weight.normal_(0.0, 0.05)  # start away from the copy so every term is active
        before, _ = model(batch)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(8):
        loss, _ = model(batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        after, parts = model(batch)
    assert float(after) < 0.7 * float(before), (float(before), float(after), parts)


def test_fit_writes_a_loadable_model(task, tmp_path, clips):
    """``fit`` trains (four steps) and writes a model that loads with the weights it trained to: on the task's
    fixed validation batches the loaded network scores better than the untrained one (the copy) did."""
    from skelanim.nn.train import fit

    torch.manual_seed(0)
    model = NKNTrainer(TINY)
    with torch.no_grad():
        untrained = task.validate(model)["val_total"]
    result = fit(model, task, tmp_path / "m", TrainConfig(epochs=1, batch_size=4, warmup_steps=1, progress=False),
                 log=lambda line: None)  # fmt: skip
    assert result["steps"] == 4 and (tmp_path / "m" / "model.safetensors").is_file()
    net = load_nkn(tmp_path / "m")
    assert net.config.hidden == 16
    trained = model.net.state_dict()
    assert all(torch.equal(value, trained[key]) for key, value in net.state_dict().items())
    judge = NKNTrainer(TINY)
    judge.net = net
    with torch.no_grad():
        loaded = task.validate(judge)["val_total"]  # val_total leaves the discriminator out
    assert loaded < 0.95 * untrained, (untrained, loaded)
    motion = clips["xia"]
    out = Retargeter(motion.skeleton, clips["bandai"].skeleton, "nkn", model=tmp_path / "m")(motion)
    assert torch.isfinite(out.rotations).all()


def test_nkn_step_equals_whole_clip(clips):
    source, target = clips["cmu_mb"][:20], clips["ccrig"].skeleton
    torch.manual_seed(1)
    net = NKN(TINY)
    with torch.no_grad():
        net.head[-1].weight.normal_(0.0, 0.05)
    retarget = Retargeter(source.skeleton, target, "nkn", model=net, fps=source.fps, floor=0.0)
    whole = retarget(source)
    rows = [retarget.step(source.rotations[f], source.root_positions[f]) for f in range(source.num_frames)]
    assert type(retarget._compiled).__name__ == "OnnxStep"  # the fast path users get, not a silent fallback
    torch.testing.assert_close(torch.stack([r[1] for r in rows]), whole.root_positions, atol=1e-4, rtol=0)
    dots = (torch.stack([r[0] for r in rows]) * whole.rotations).sum(-1).abs()
    assert float(dots.min()) > 1 - 1e-6


def _ankle_drop(offsets: torch.Tensor) -> float:
    """The hips' height over the ankles in the canonical T-pose worked out by hand: every rotation is the identity
    there, so an ankle sits at the sum of the offsets down its leg (hip joint, knee, ankle); mean of the sides."""
    return -sum(float(offsets[SLOT[f"{s}_{part}"], 1]) for s in "lr" for part in ("upleg", "leg", "foot")) / 2


def test_variants_and_leg_length(clips):
    """The leg length is the hips' height over the ankles in the canonical T-pose: 0.05 + 0.42 + 0.40 = 0.87 on the
    canonical skeleton, the rest pose's own hips-over-ankles on the DeepMimic humanoid (which stands straight-legged
    in it), the offsets summed down the legs on Bandai-Namco (whose zero pose lies its legs flat) and its variants."""
    assert float(leg_length(canonical_tpose().offsets)) == pytest.approx(0.87, abs=1e-12)
    humanoid = clips["deepmimic"].skeleton
    rest = humanoid.rest_positions().numpy()
    names = list(humanoid.names)
    ankles = [rest[names.index(f"{s}_ankle"), 1] for s in ("left", "right")]
    assert CanonicalRig(humanoid).leg_length == pytest.approx(rest[0, 1] - sum(ankles) / 2, abs=1e-9)
    rig = CanonicalRig(clips["bandai"].skeleton)
    assert rig.leg_length == pytest.approx(_ankle_drop(rig.offsets), rel=1e-12)
    off = variant_offsets(rig.offsets, torch.Generator().manual_seed(0))
    assert float(leg_length(off)) == pytest.approx(_ankle_drop(off), rel=1e-12)
    ratio = (off.norm(dim=-1) / rig.offsets.norm(dim=-1).clamp_min(1e-9))[rig.present]
    assert float(ratio[1:].min()) >= 0.7 - 1e-9 and float(ratio.max()) <= 1.4 + 1e-9 and float(ratio.std()) > 0.01


def test_twist_angle():
    axis, ref = torch.tensor([0.0, 1.0, 0.0]), torch.tensor([1.0, 0.0, 0.0])
    c, s = torch.cos(torch.tensor(0.3)), torch.sin(torch.tensor(0.3))
    about_axis = torch.tensor([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    assert abs(float(twist_angle(about_axis, axis, ref)) - 0.3) < 1e-6  # right-handed about +y
    swing = torch.tensor([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])  # about the reference axis itself
    assert abs(float(twist_angle(swing, axis, ref))) < 1e-6


def test_shipped_model_is_small_and_loads():
    files = {p.name: p for p in Path(DEFAULT_MODEL).iterdir()} if Path(DEFAULT_MODEL).is_dir() else {}
    assert {"model.safetensors", "config.json"} <= set(files)  # part of the package: missing is a packaging fault
    assert sum(p.stat().st_size for p in files.values()) <= 5 * 2**20
    assert isinstance(load_nkn(), NKN)


def test_a_model_keeps_the_hips_basis_it_was_trained_on(clips):
    """The copied hips an NKN corrects travel by the stride legs since 2026-12-05; a model saved before (its config
    without ``stride_travel``) keeps the leg-length basis it learned, new networks and the shipped model the new."""
    assert NKNConfig().stride_travel and load_nkn(None).config.stride_travel
    old = NKNConfig.from_dict({"hidden": 16, "disc_hidden": 8, "calibrated_frames": True})
    assert not old.stride_travel and NKNConfig.from_dict(old.to_dict()) == old
    source, target = clips["bandai"], clips["cmu_mb"].skeleton
    torch.manual_seed(0)
    net = NKN(old)  # untrained: its answer is its basis
    hips = Retargeter(source.skeleton, target, "nkn", model=net)(source).root_positions
    copy = Retargeter(source.skeleton, target, "copy")(source).root_positions
    travel = (hips[-1] - hips[0])[[0, 2]].norm() / (copy[-1] - copy[0])[[0, 2]].norm()
    rigs = Retargeter(source.skeleton, target, "copy")
    rig_s, rig_t = rigs.source, rigs.target
    expected = (rig_t.leg_length / rig_s.leg_length) / (rig_t.stride_leg / rig_s.stride_leg)
    assert float(travel) == pytest.approx(expected, rel=1e-3) and abs(expected - 1) > 0.03
