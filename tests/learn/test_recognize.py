"""ST-GCN and the CNN baseline: graph partitions, shapes, a few steps lower the loss, checkpoint round trip."""

from __future__ import annotations

import json

import pytest
import torch

from skelanim.learn.recognize import Recognizer, evaluate_recognizer
from skelanim.learn.recognize_train import RecognizeTask, train_recognizer
from skelanim.learn.stgcn import STGCN, TemporalCNN, spatial_partitions
from skelanim.nn.train import TrainConfig, seeded_generator

TINY = {"channels": (8, 8), "strides": (1, 2)}


def test_spatial_partitions_of_a_chain():
    a = spatial_partitions([-1, 0, 1])
    assert a.shape == (3, 3, 3)
    assert torch.allclose(a.sum(dim=(0, 1)), torch.ones(3))  # each joint's inputs sum to one
    assert a[0].diagonal().gt(0).all()
    assert a[1, 0, 1] > 0 and a[1, 1, 0] == 0  # joint 1 hears its parent (nearer the root) centripetally
    assert a[2, 1, 0] > 0  # joint 0 hears its child centrifugally


@pytest.mark.parametrize(
    "net",
    [STGCN([-1, 0, 1, 1], 5, 3, 2, channels=(8, 16), strides=(1, 2)), TemporalCNN(4, 5, 3, 2),
     STGCN([-1, 0, 1, 1], 5, 3, 2, channels=(8, 16), strides=(1, 2), readout=12)],
)
def test_networks_take_any_length(net):
    for t in (16, 23):
        content, style, feats = net(torch.randn(2, t, 4, 5))
        assert content.shape == (2, 3) and style.shape == (2, 2) and feats.shape == (2, net.feature_dim)
    if isinstance(net, STGCN):
        assert net.feature_dim == (12 if net.readout is not None else 16)


@pytest.mark.parametrize("arch", ["stgcn", "cnn"])
def test_a_few_steps_lower_the_loss(tiny_ds, arch):
    torch.manual_seed(0)
    options = TINY if arch == "stgcn" else {"channels": (32, 32), "strides": (1, 2)}
    model = Recognizer(arch, tiny_ds.rig, sorted(set(tiny_ds.labels("content"))), sorted(set(tiny_ds.labels("style"))),
                       window=32, arch_options=options)  # fmt: skip
    task = RecognizeTask(model, tiny_ds, None, stride=16)
    batch = task.batch(torch.arange(min(24, task.num_samples())), seeded_generator(0))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    first = float(task.loss(model, batch)[0].detach())
    for _ in range(12):
        loss, _ = task.loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(task.loss(model, batch)[0].detach()) < 0.8 * first


def test_train_checkpoint_round_trip_and_eval(tiny_ds, tmp_path):
    out = tmp_path / "rec"
    loop = TrainConfig(epochs=1, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    result = train_recognizer(tiny_ds, tiny_ds.subset([0, 2]), out, window=32, stride=16, loop=loop, arch_options=TINY,
                              command="test")  # fmt: skip
    assert result["steps"] >= 1 and (out / "model.safetensors").is_file()
    config = json.loads((out / "config.json").read_text())
    assert config["format"] == "skelanim-recognizer" and config["training"]["command"] == "test"
    assert config["training"]["seed"] == 0 and config["training"]["data"]
    model = Recognizer.load(out)
    again = Recognizer.load(out)
    x = torch.randn(3, 32, 21, 16)
    assert torch.equal(model(x)[0], again(x)[0])
    assert not torch.equal(model.norm.std, torch.ones_like(model.norm.std))  # statistics travel with the weights
    res = evaluate_recognizer(model, tiny_ds, stride=16)
    assert set(res) == {"top1_files", "top1_windows", "per_class", "files", "windows", "predicted"}
    assert set(res["per_class"]) == {"walk", "bow", "run"} and res["files"] == 6
    for part in ("files", "windows"):  # the named predictions agree with the accuracies
        truth, guess = res["predicted"][part]
        assert len(truth) == res[part] and sorted(set(truth)) == ["bow", "run", "walk"]
        assert abs(sum(t == g for t, g in zip(truth, guess, strict=True)) / len(truth) - res[f"top1_{part}"]) < 1e-9
    fr = tiny_ds.frames()
    feats, predicted = model.embed_motions([tiny_ds.rig.to_motion(fr["rot"][:40], fr["pelvis"][:40], 25.0)])
    assert feats.shape[1] == model.feature_dim and predicted[0] in model.contents.names


def test_load_rejects_other_models(tmp_path):
    from skelanim.errors import FormatError
    from skelanim.nn.checkpoint import save_model_files

    save_model_files(tmp_path / "m", {"w": torch.zeros(1)}, {"format": "something-else"})
    with pytest.raises(FormatError, match="not a skelanim-recognizer model"):
        Recognizer.load(tmp_path / "m")
    save_model_files(tmp_path / "m", {"w": torch.zeros(1)}, {"format": "skelanim-recognizer"})  # no entries
    with pytest.raises(FormatError, match=r"m/config\.json: corrupt model config: no '\w+' entry"):
        Recognizer.load(tmp_path / "m")


@pytest.mark.parametrize("path", [False, True])
def test_mirror_features_match_a_mirrored_motion(tiny_ds, path):
    """Features of ``ops.mirror(motion)`` (mirrored on the skeleton, then featurised) equal the mirrored
    features of the motion: an independent path through Motion, FK and the heading frame."""
    from skelanim.data import MotionDataset
    from skelanim.data.clips import clip_from_motion
    from skelanim.data.features import horizontal_axes
    from skelanim.learn.joints import joint_features, mirror_features
    from skelanim.ops.mirror import mirror, mirror_permutation

    rig = tiny_ds.rig
    fr = tiny_ds.frames()
    motion = rig.to_motion(fr["rot"][:48].double(), fr["pelvis"][:48].double(), 25.0)
    # one dataset each: the mirror image lives on the mirror image of the rig, which one dataset does not mix and a
    # model's rig refuses (Skeleton.rig_difference); the features are the rig's either way, so it is set afterwards
    x = []
    for m, n in ((motion, "a"), (mirror(motion), "b")):
        ds = MotionDataset(clips=[clip_from_motion(m, fps=25.0, name=n)], fps=25.0)
        ds.rig = rig
        g = ds.gather(torch.tensor([[0, 0]]), 40, keys=("rot", "pelvis", "yaw", "positions"))
        x.append(joint_features(g["rot"], g["pelvis"], g["yaw"], g["positions"], rig, path=path))
    x = torch.cat(x)
    assert x.shape[-1] == (19 if path else 16)
    perm = torch.as_tensor(mirror_permutation(rig.skeleton))[rig.root :] - rig.root
    mirrored = mirror_features(x[:1], perm, horizontal_axes(rig.up)[1])
    assert not torch.allclose(mirrored, x[:1], atol=1e-2)  # the walk is not its own mirror image
    assert torch.allclose(mirrored, x[1:], atol=2e-3)


def test_mirror_features_with_the_rig_reflections_match_the_motion_mirrored_on_its_own_rig(tiny_ds):
    """On the Bandai rig (bones along their joints' local axes) the mirrored motion on the *same* skeleton
    has other local rotations than ``S R S``: mirror the world frames joint by joint (:func:`mirror_frames`,
    reflections settled by the training mean pose), featurise that motion, and compare."""
    from skelanim.data import MotionDataset
    from skelanim.data.clips import clip_from_motion
    from skelanim.learn.joints import joint_features, mirror_features
    from skelanim.learn.mirror import mirror_frames
    from skelanim.learn.recognize import Recognizer
    from skelanim.learn.recognize_train import RecognizeTask

    rig = tiny_ds.rig
    model = Recognizer("stgcn", rig, ["bow", "run", "walk"], [], window=32, arch_options={"channels": (8,), "strides": (1,)})
    RecognizeTask(model, tiny_ds, None, stride=16)  # the normaliser, hence the mean pose
    perm, left, right, lateral = model.mirror_map()
    fr = tiny_ds.frames()
    rot, pelvis = fr["rot"][:48].double(), fr["pelvis"][:48].double()
    m_rot, m_pel = mirror_frames(rot, pelvis, perm, left.double(), right.double(), lateral)  # world frames
    motions = (rig.to_motion(rot, pelvis, 25.0), rig.to_motion(m_rot, m_pel, 25.0))
    ds = MotionDataset(clips=[clip_from_motion(m, fps=25.0, name=n) for m, n in zip(motions, "ab")], rig=rig, fps=25.0)
    g = ds.gather(torch.tensor([[0, 0], [1, 0]]), 40, keys=("rot", "pelvis", "yaw", "positions"))
    x = joint_features(g["rot"], g["pelvis"], g["yaw"], g["positions"], rig)
    mirrored = mirror_features(x[:1], perm, lateral, (left, right))
    assert torch.allclose(mirrored, x[1:], atol=2e-3)
    plain = mirror_features(x[:1], perm, lateral)  # S R S: right positions, rotations of another rig
    assert torch.allclose(plain[..., :6], x[1:, ..., :6], atol=2e-3)
    assert not torch.allclose(plain[..., 6:12], x[1:, ..., 6:12], atol=0.5)


def test_mirror_labels_swap_sides_and_skip_handed_contents():
    from skelanim.learn.joints import mirror_labels

    names = ["bye", "raise-up-left-hand", "raise-up-right-hand", "walk", "walk-left", "walk-right", "wave-left-hand"]
    assert mirror_labels(names).tolist() == [-1, 2, 1, 3, 5, 4, -1]  # wave-right-hand absent: not mirrored


def test_joint_input_gives_each_joint_its_own_map():
    torch.manual_seed(0)
    net = STGCN([-1, 0, 1, 2, 1], 6, 3, 0, channels=(8, 8), strides=(1, 2), joint_input=5).eval()

    def project(x: torch.Tensor) -> torch.Tensor:  # (1, T, V, C) to (V, N, T): each joint's input map
        return net.joint_input(net.data_bn(x.reshape(1, 12, 30).transpose(1, 2))).reshape(5, 5, 12)

    x = torch.randn(1, 12, 5, 6)
    y = x.clone()
    y[0, :, 3] += 1.0
    moved = (project(y) - project(x)).abs().sum(dim=(1, 2))
    assert moved[3] > 0 and moved[[0, 1, 2, 4]].eq(0).all()  # a change at joint 3 reaches only joint 3's channels
    same = x.clone()
    same[0, :, 4] = same[0, :, 3]  # joints 3 and 4 with equal features still map differently (own weights)
    out = project(same)
    assert not torch.allclose(out[3], out[4])
    assert net(x)[0].shape == (1, 3)


def test_joint_affine_starts_as_identity_and_acts_per_joint():
    torch.manual_seed(0)
    kw = {"channels": (8, 8), "strides": (1, 2), "readout": 6}
    net = STGCN([-1, 0, 1, 2, 1], 6, 3, 0, joint_affine=True, **kw).eval()
    plain = STGCN([-1, 0, 1, 2, 1], 6, 3, 0, **kw).eval()
    plain.load_state_dict(net.state_dict(), strict=False)  # the same weights without the affine terms
    x = torch.randn(2, 12, 5, 6)
    assert torch.allclose(net(x)[0], plain(x)[0], atol=1e-6)  # zero-initialised: no change at the start
    block = net.blocks[0]
    h = x.permute(0, 3, 1, 2)  # (B, C, T, V) block input
    before = block(h)
    with torch.no_grad():
        block.joint_affine[1, :, :, 2] = 5.0  # shift joint 2 only, after the graph convolution
    changed = (block(h) - before).abs().sum(dim=(0, 1, 2))
    assert changed[2] > 0 and changed[[0, 1, 3, 4]].eq(0).all()  # the temporal part and residual stay per joint


def test_centre_ignores_a_constant_posture_but_not_motion():
    torch.manual_seed(0)
    kw = {"channels": (8, 8), "strides": (1, 2), "readout": 6}
    centred = STGCN([-1, 0, 1, 2, 1], 16, 3, 0, centre=True, **kw).eval()
    plain = STGCN([-1, 0, 1, 2, 1], 16, 3, 0, **kw).eval()
    plain.load_state_dict(centred.state_dict())
    x = torch.randn(2, 12, 5, 16)
    stooped = x.clone()
    stooped[..., [0, 1, 2, 6, 7, 8, 9, 10, 11]] += torch.randn(1, 1, 5, 9)  # the same offset in every frame
    assert torch.allclose(centred(stooped)[0], centred(x)[0], atol=1e-5)
    assert not torch.allclose(plain(stooped)[0], plain(x)[0], atol=1e-3)
    moving = x.clone()
    moving[:, 6:, :, 0] += 1.0  # a joint that moves during the window still counts
    assert not torch.allclose(centred(moving)[0], centred(x)[0], atol=1e-3)
    step = x.clone()
    step[..., 3] += 1.0  # the change channels are not centred
    assert not torch.allclose(centred(step)[0], centred(x)[0], atol=1e-3)


def test_rescale_sees_a_small_motion_at_the_size_of_a_large_one():
    torch.manual_seed(0)
    kw = {"channels": (8, 8), "strides": (1, 2), "readout": 6}
    scaled = STGCN([-1, 0, 1, 2, 1], 16, 3, 0, centre=True, rescale=True, **kw).eval()
    centred = STGCN([-1, 0, 1, 2, 1], 16, 3, 0, centre=True, **kw).eval()
    centred.load_state_dict(scaled.state_dict())
    x = torch.randn(2, 12, 5, 16)
    pose, change = [0, 1, 2, 6, 7, 8, 9, 10, 11], [3, 4, 5]
    small = x.clone()
    small[..., pose] = 5.0 + 0.3 * x[..., pose]  # another posture, a third of the motion
    small[..., change] = 0.3 * x[..., change]
    assert torch.allclose(scaled(small)[0], scaled(x)[0], atol=1e-4)
    assert not torch.allclose(centred(small)[0], centred(x)[0], atol=1e-3)
    root = x.clone()
    root[..., 12] *= 0.3  # the root's channels keep their scale
    assert not torch.allclose(scaled(root)[0], scaled(x)[0], atol=1e-3)
    still = torch.zeros(1, 12, 5, 16)
    still[..., 0] = 1e-4 * torch.randn(1, 12, 5)  # a still window's noise is not blown up to unit size (the floor)
    assert torch.allclose(scaled(still)[0], scaled(torch.zeros_like(still))[0], atol=1e-3)
    with pytest.raises(ValueError, match="rescale needs centre"):
        STGCN([-1, 0, 1, 2, 1], 16, 3, 0, rescale=True, **kw)


def test_std_floor_keeps_every_channel_at_a_share_of_its_median_over_joints(tiny_ds):
    contents, styles = sorted(set(tiny_ds.labels("content"))), sorted(set(tiny_ds.labels("style")))
    plain = Recognizer("stgcn", tiny_ds.rig, contents, styles, window=32, arch_options=TINY)
    floored = Recognizer("stgcn", tiny_ds.rig, contents, styles, window=32, arch_options=TINY)
    RecognizeTask(plain, tiny_ds, None, stride=16)
    RecognizeTask(floored, tiny_ds, None, stride=16, std_floor=0.3)
    before, after = plain.norm.std, floored.norm.std  # (M, C)
    floor = 0.3 * before.median(dim=0).values
    assert torch.equal(after, torch.maximum(before, floor))  # raised to the floor where below it, else kept
    narrow = before < floor
    assert narrow.any() and (~narrow).any()  # the static root and the all-but-constant twists are below it
    assert torch.equal(plain.norm.mean, floored.norm.mean)


@pytest.mark.parametrize("arch", ["stgcn", "cnn"])
def test_without_rotations_the_network_reads_positions_and_root_motion_only(tiny_ds, tmp_path, arch):
    contents, styles = sorted(set(tiny_ds.labels("content"))), sorted(set(tiny_ds.labels("style")))
    options = TINY if arch == "stgcn" else {}
    model = Recognizer(arch, tiny_ds.rig, contents, styles, window=32, arch_options=options, rotations=False)
    RecognizeTask(model, tiny_ds, None, stride=16)  # fits the normaliser
    model.eval()
    keys = ("rot", "pelvis", "yaw", "positions")
    g = tiny_ds.gather(tiny_ds.windows(32, 16)[:4], 32, keys=keys)
    x = model.inputs(*(g[k].float() for k in keys))
    other = x.clone()
    other[..., 6:12] = torch.randn_like(other[..., 6:12])  # any other rotations, same positions
    moved = x.clone()
    moved[..., 0:3] += 0.1  # the same rotations, other positions
    with torch.no_grad():
        logits, _, _ = model(x)
        assert torch.equal(model(other)[0], logits)
        assert not torch.allclose(model(moved)[0], logits)
        model.rotations = True
        assert not torch.allclose(model(other)[0], logits)  # with rotations the same change is seen
    model.rotations = False
    config = json.loads(json.dumps(model.config()))
    assert config["rotations"] is False and Recognizer.from_config(config).rotations is False
    assert Recognizer.from_config({k: v for k, v in config.items() if k != "rotations"}).rotations  # older models


def test_without_validation_the_score_is_named_for_training_windows_and_the_last_epoch_is_kept(tiny_ds, tmp_path):
    notes: list[str] = []
    loop = TrainConfig(epochs=2, batch_size=8, lr=1e-3, warmup_steps=1, progress=False)
    result = train_recognizer(tiny_ds, None, tmp_path / "rec", window=32, stride=16, loop=loop, arch_options=TINY,
                              log=notes.append)  # fmt: skip
    assert result["metric"] == "train_subset_loss" and result["keep"] == "last"
    assert all("train_subset_loss" in r and "val_error" not in r for r in result["history"])
    assert any("no validation windows" in n for n in notes)
    assert json.loads((tmp_path / "rec" / "config.json").read_text())["training"]["loop"]["keep"] == "last"
