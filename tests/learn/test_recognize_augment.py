"""Recognition options: amplitude augmentation (checked against quaternion slerp and FK), ground travel scaling, file-balanced window
weights, test-time mirror votes (a property of the mirror map), the adaptive adjacency."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from skelanim.core.rotations import matrix_to_quat, mean_rotations, quat_slerp, quat_to_matrix, rotvec_to_matrix
from skelanim.learn.augment import scale_amplitude, scale_travel
from skelanim.learn.recognize import Recognizer, mirror_features, mirror_labels
from skelanim.learn.recognize_train import RecognizeTask
from skelanim.learn.stgcn import STGCN

TINY = {"channels": (8, 8), "strides": (1, 2)}


def _random_rotations(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return rotvec_to_matrix(torch.randn(*shape, 3, generator=g, dtype=torch.float64) * 0.8)


def test_mean_rotations_of_a_symmetric_spread_is_its_centre():
    centre = _random_rotations(5, seed=1)
    spread = rotvec_to_matrix(torch.tensor([[0.4, 0.0, 0.0], [-0.4, 0.0, 0.0], [0.0, 0.3, 0.0], [0.0, -0.3, 0.0]],
                                           dtype=torch.float64))  # fmt: skip
    rot = centre[None] @ spread[:, None]  # (4, 5, 3, 3): each joint's centre turned +-theta about two axes
    assert torch.allclose(mean_rotations(rot), centre, atol=1e-9)


def test_scale_amplitude_is_slerp_toward_the_mean_and_keeps_the_root():
    rot = _random_rotations(2, 3, 4)  # (B, T, M)
    mean = _random_rotations(4, seed=2)
    assert torch.allclose(scale_amplitude(rot, mean, torch.ones(2)), rot, atol=1e-9)
    zero = scale_amplitude(rot, mean, torch.zeros(2))
    assert torch.allclose(zero[:, :, 1:], mean[1:].expand(2, 3, 3, 3, 3), atol=1e-9)
    half = scale_amplitude(rot, mean, torch.tensor([0.5, 0.25]))
    assert torch.equal(half[:, :, 0], rot[:, :, 0])  # the body root (heading, tilt) is never scaled
    q_mean = matrix_to_quat(mean[1:]).expand(2, 3, 3, 4)
    for b, t in ((0, 0.5), (1, 0.25)):  # independent path: quaternion slerp from the mean toward the pose
        ref = quat_to_matrix(quat_slerp(q_mean[b], matrix_to_quat(rot[b, :, 1:]), t))
        assert torch.allclose(half[b, :, 1:], ref, atol=1e-7)


def test_amplitude_augmentation_recomputes_positions_by_fk(tiny_ds):
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], [], window=32, arch_options=TINY)
    task = RecognizeTask(model, tiny_ds, None, stride=16, amplitude=(0.5, 1.2))
    w = task.windows[:4]
    plain = task._features(w, 32)
    assert torch.allclose(task._features(w, 32, torch.ones(4)), plain, atol=1e-4)  # FK reproduces the file's positions
    small = task._features(w, 32, torch.full((4,), 0.5))
    hand = tiny_ds.rig.names.index("Hand_L")
    # the hand's path relative to the pelvis shrinks: less spread over the window with half the amplitude
    assert small[:, :, hand, :3].std(dim=1).mean() < 0.9 * plain[:, :, hand, :3].std(dim=1).mean()
    assert torch.equal(small[..., 12:], plain[..., 12:])  # root features untouched


def test_file_balance_weighs_short_files_up(tiny_ds):
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], [], window=32, arch_options=TINY)
    plain = RecognizeTask(model, tiny_ds, None, stride=8)
    task = RecognizeTask(model, tiny_ds, None, stride=8, file_balance=1.0)
    assert torch.allclose(plain.sample_weight, torch.ones(len(plain.windows)))
    clip = task.windows[:, 0]
    counts = torch.bincount(clip).float()
    assert math.isclose(float(task.sample_weight.mean()), 1.0, rel_tol=1e-5)
    # balance 1: every file carries the same total weight, whatever its number of windows
    totals = torch.zeros(len(counts)).index_add_(0, clip, task.sample_weight)
    assert counts.max() > 2 * counts.min() and torch.allclose(totals, totals[0].expand_as(totals), rtol=1e-5)


def test_test_mirror_votes_are_mirror_consistent(tiny_ds):
    """With test-time mirror votes a window and its mirror image get the same probabilities, classes mapped
    by ``mirror_labels`` (an untrained network alone has no such symmetry)."""
    torch.manual_seed(0)
    names = ["bye", "walk", "walk-left", "walk-right"]
    rig = tiny_ds.rig
    x = torch.randn(3, 32, rig.num_joints, 16)
    to = mirror_labels(names)
    model = Recognizer("stgcn", rig, names, [], window=32, arch_options=TINY)
    perm, left, right, lateral = model.mirror_map()
    xm = mirror_features(x, perm, lateral, (left, right))
    p, pm = model.classify(x)[0], model.classify(xm)[0]
    assert not torch.allclose(p[:, 1:], pm[:, to[1:]], atol=1e-4)
    model.test_mirror = True
    p, pm = model.classify(x)[0], model.classify(xm)[0]
    assert torch.allclose(p[:, 1:], pm[:, to[1:]], atol=1e-5)  # walk, walk-left <-> walk-right
    own, seen = torch.softmax(model(x)[0], -1)[:, 0], torch.softmax(model(xm)[0], -1)[:, 0]
    assert torch.allclose(p[:, 0], 0.5 * (own + seen))  # bye, the one class without a mirror: the images' mean mass
    assert torch.allclose(p.sum(-1), torch.ones(3))
    assert Recognizer.from_config(model.config()).test_mirror


def test_adaptive_adjacency_starts_at_the_tree_and_learns():
    torch.manual_seed(0)
    parents = [-1, 0, 1, 1]
    plain = STGCN(parents, 5, 3, channels=(8, 8), strides=(1, 2))
    adaptive = STGCN(parents, 5, 3, channels=(8, 8), strides=(1, 2), adaptive=True)
    missing, unexpected = adaptive.load_state_dict(plain.state_dict(), strict=False)
    assert not unexpected and all(k.endswith("adaptive") for k in missing) and missing
    plain.eval(), adaptive.eval()
    x = torch.randn(2, 16, 4, 5)
    assert torch.allclose(plain(x)[0], adaptive(x)[0], atol=1e-6)
    adaptive(x)[0].sum().backward()
    grad = adaptive.blocks[0].adaptive.grad
    assert grad is not None and bool((grad[:, 2, 3] != 0).any())  # two siblings, not neighbours in the tree


@pytest.mark.parametrize("flag", ["--amplitude", "--travel"])
def test_cli_rejects_a_reversed_range(tmp_path, capsys, flag):
    from skelanim.cli import main

    out = tmp_path / "rec"
    assert main(["learn", "recognize", "train", "--data", str(tmp_path), "--out", str(out), flag, "1.2", "0.5"]) == 2
    err = capsys.readouterr().err
    assert flag in err and "Traceback" not in err and not out.exists()


def _offset_task(tiny_ds, option: str):
    """A task with per-joint rotation offsets (``posture`` or ``frame_jitter``), two windows' plain features and
    identity offsets, checked to change nothing."""
    rig = tiny_ds.rig
    model = Recognizer("stgcn", rig, ["bow", "run", "walk"], [], window=32, arch_options=TINY)
    task = RecognizeTask(model, tiny_ds, None, stride=16, **{option: 10.0})
    w = task.windows[:2]
    plain = task._features(w, 32)
    eye = torch.eye(3).expand(2, rig.num_joints, 3, 3)
    keyword = "posture" if option == "posture" else "jitter"
    assert torch.allclose(task._features(w, 32, **{keyword: eye}), plain, atol=1e-4)
    return rig, task, w, plain, eye


def test_posture_augmentation_offsets_one_joint_and_moves_only_its_descendants(tiny_ds):
    """A constant 90-degree offset of the left upper arm's local rotation: the identity offset changes nothing,
    the offset moves the left forearm and hand (keeping their distance from the shoulder: FK, not a shift) and
    leaves every joint outside that arm where it was."""
    rig, task, w, plain, eye = _offset_task(tiny_ds, "posture")
    arm = rig.names.index("UpperArm_L")
    offset = eye.clone()
    offset[:, arm] = rotvec_to_matrix(torch.tensor([0.0, 0.0, math.pi / 2]))
    moved = task._features(w, 32, posture=offset)
    below = [rig.names.index(n) for n in ("LowerArm_L", "Hand_L")]
    others = [j for j in range(rig.num_joints) if j not in below]
    assert torch.allclose(moved[:, :, others, :3], plain[:, :, others, :3], atol=1e-4)
    shift = (moved[:, :, below, :3] - plain[:, :, below, :3]).norm(dim=-1)
    assert float(shift.min()) > 0.02  # heights
    reach = lambda x: (x[:, :, below, :3] - x[:, :, arm : arm + 1, :3]).norm(dim=-1)
    assert torch.allclose(reach(moved), reach(plain), atol=1e-4)


def test_cli_rejects_rescale_without_centre(tmp_path, capsys):
    from skelanim.cli import main

    out = tmp_path / "rec"
    assert main(["learn", "recognize", "train", "--data", str(tmp_path), "--out", str(out), "--rescale"]) == 2
    err = capsys.readouterr().err
    assert "--rescale" in err and "--centre" in err and "Traceback" not in err and not out.exists()


def test_cli_rejects_turn_relabelling_with_path_features_in_one_line(tmp_path, capsys):
    """The pair was refused inside training with a bare ValueError: a traceback and exit 1."""
    from skelanim.cli import main

    out = tmp_path / "rec"
    args = ["learn", "recognize", "train", "--data", str(tmp_path), "--out", str(out), "--turn", "0.5", "--path"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--turn" in err and "--path" in err and "Traceback" not in err and not out.exists()


def test_cli_rejects_an_unknown_keep(tmp_path, capsys):
    from skelanim.cli import main

    out = tmp_path / "rec"
    assert main(["learn", "recognize", "train", "--data", str(tmp_path), "--out", str(out), "--keep", "first"]) == 2
    err = capsys.readouterr().err
    assert "--keep" in err and "Traceback" not in err and not out.exists()


def test_style_adversary_reverses_the_style_gradient_into_the_network_only(tiny_ds):
    torch.manual_seed(0)
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], ["angry", "elderly", "happy", "normal"], window=32,
                       arch_options={**TINY, "dropout": 0.0})  # fmt: skip
    grads = {}
    for adversary in (0.0, 2.0):
        task = RecognizeTask(model, tiny_ds, None, stride=16, style_weight=1.0, style_adversary=adversary)
        batch = task.batch(torch.arange(4), torch.Generator().manual_seed(0))
        model.zero_grad()
        content = model(batch["x"])[0]
        loss, _ = task.loss(model, batch)
        style_ce = loss - nn.functional.cross_entropy(content, batch["content"], label_smoothing=0.1)
        style_ce.backward()  # the style term alone
        grads[adversary] = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    plain, adversarial = grads[0.0], grads[2.0]
    head = [n for n in plain if "style_head" in n]
    trunk = [n for n in plain if "style_head" not in n and plain[n].abs().sum() > 0]
    assert head and trunk
    for n in head:  # the head still learns to name the style
        assert torch.allclose(adversarial[n], plain[n], atol=1e-6)
    for n in trunk:  # the network before it is pushed the other way, twice as hard
        assert torch.allclose(adversarial[n], -2.0 * plain[n], atol=1e-6, rtol=1e-4)


def test_style_adversary_trains_through_the_ddp_wrapper(tiny_ds, tmp_path):
    """Under torchrun the loop hands the loss a DistributedDataParallel wrapper, which has no ``.net``: the reversed
    style head is the wrapped network's (one process of gloo is enough to build the wrapper)."""
    import torch.distributed as dist

    torch.manual_seed(0)
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], ["angry", "elderly", "happy", "normal"], window=32,
                       arch_options={**TINY, "dropout": 0.0})  # fmt: skip
    task = RecognizeTask(model, tiny_ds, None, stride=16, style_weight=1.0, style_adversary=2.0)
    batch = task.batch(torch.arange(4), torch.Generator().manual_seed(0))
    bare, _ = task.loss(model, batch)
    dist.init_process_group("gloo", init_method=(tmp_path / "store").as_uri(), rank=0, world_size=1)
    try:
        wrapped, _ = task.loss(nn.parallel.DistributedDataParallel(model), batch)
    finally:
        dist.destroy_process_group()
    assert torch.allclose(wrapped, bare)


def test_style_adversary_refuses_an_ensemble(tiny_ds):
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], ["angry", "elderly", "happy", "normal"], window=32,
                       arch_options=TINY, members=2)  # fmt: skip
    with pytest.raises(ValueError, match="not an ensemble of 2"):
        RecognizeTask(model, tiny_ds, None, stride=16, style_adversary=1.0)


def test_mean_rotations_per_window_is_the_mean_of_each_window():
    rot = _random_rotations(3, 6, 4)  # (B, T, M)
    each = torch.stack([mean_rotations(rot[b]) for b in range(3)])
    assert torch.allclose(mean_rotations(rot, dim=1), each, atol=1e-12)
    shifted = rot.clone()
    shifted[1] = _random_rotations(4, seed=5)[None] @ rot[1]  # another window moved: only its own mean moves
    means = mean_rotations(shifted, dim=1)
    assert torch.allclose(means[[0, 2]], each[[0, 2]]) and not torch.allclose(means[1], each[1], atol=1e-3)
    half = scale_amplitude(rot, each, torch.tensor([0.5, 1.0, 0.0]))
    assert torch.allclose(half[1], rot[1], atol=1e-9)  # factor 1 keeps its window
    assert torch.allclose(half[2, :, 1:], each[2, 1:].expand(6, 3, 3, 3), atol=1e-9)  # factor 0: its own mean
    q = matrix_to_quat(each[0, 1:]).expand(6, 3, 4)  # factor 0.5: halfway along the geodesic to its own mean
    assert torch.allclose(half[0, :, 1:], quat_to_matrix(quat_slerp(q, matrix_to_quat(rot[0, :, 1:]), 0.5)), atol=1e-7)


def test_log_uniform_stays_in_range_is_even_in_log_and_draws_nothing_for_a_point():
    from skelanim.learn.augment import log_uniform

    g = torch.Generator().manual_seed(0)
    x = log_uniform((0.5, 2.0), (20000,), g)
    assert float(x.min()) >= 0.5 and float(x.max()) <= 2.0
    assert abs(float((x < 1.0).float().mean()) - 0.5) < 0.02  # 1 is the geometric middle of 0.5 and 2
    state = g.get_state()
    assert torch.equal(log_uniform((0.8, 0.8), (3,), g), torch.full((3,), 0.8)) and torch.equal(g.get_state(), state)


def test_frame_jitter_turns_each_joint_frame_and_compensates_its_children():
    """``R'_k = D_p^T R_k D_k``: world rotations become ``W_k D_k`` (closed form, by hand along the chain), the
    root keeps its rotation, and a bone turns by its parent's offset only."""
    from skelanim.core.rotations import rotvec_to_matrix
    from skelanim.learn.augment import jitter_frames

    gen = torch.Generator().manual_seed(0)
    parents = [-1, 0, 1, 2, 1]  # a chain with a branch
    rot = rotvec_to_matrix(torch.randn(2, 3, 5, 3, generator=gen))  # (B, T, M, 3, 3)
    offsets = rotvec_to_matrix(0.3 * torch.randn(2, 5, 3, generator=gen))  # (B, M, 3, 3)
    out = jitter_frames(rot, offsets, parents)

    def world(local: torch.Tensor) -> list[torch.Tensor]:
        w: list[torch.Tensor] = []
        for k, p in enumerate(parents):
            w.append(local[:, :, k] if p < 0 else w[p] @ local[:, :, k])
        return w

    before, after = world(rot), world(out)
    torch.testing.assert_close(out[:, :, 0], rot[:, :, 0])  # the body root keeps its rotation
    for k in range(1, 5):
        torch.testing.assert_close(after[k], before[k] @ offsets[:, None, k], atol=1e-5, rtol=0)
    bone = torch.tensor([0.0, 1.0, 0.0])  # joint 3's offset from joint 2: turned by D_2 only, in world
    torch.testing.assert_close(after[2] @ bone, before[2] @ offsets[:, None, 2] @ bone, atol=1e-5, rtol=0)
    assert float((after[2] @ bone - before[2] @ bone).norm(dim=-1).min()) > 1e-3  # it does move


def test_frame_jitter_in_the_task_moves_only_the_jittered_joints_children(tiny_ds):
    """In training features: jittering the left clavicle moves the joints below it (its bone to the upper arm
    turns) and nothing else; jittering the left hand, a leaf, moves no joint at all but changes its rotation."""
    rig, task, w, plain, eye = _offset_task(tiny_ds, "frame_jitter")
    turn = rotvec_to_matrix(torch.tensor([0.0, 0.0, 0.5]))
    clavicle, hand = rig.names.index("Shoulder_L"), rig.names.index("Hand_L")
    below = [rig.names.index(n) for n in ("UpperArm_L", "LowerArm_L", "Hand_L")]
    others = [j for j in range(rig.num_joints) if j not in below]
    offset = eye.clone()
    offset[:, clavicle] = turn
    moved = task._features(w, 32, jitter=offset)
    assert torch.allclose(moved[:, :, others, :3], plain[:, :, others, :3], atol=1e-4)
    assert float((moved[:, :, below, :3] - plain[:, :, below, :3]).norm(dim=-1).min()) > 0.005
    offset = eye.clone()
    offset[:, hand] = turn
    leaf = task._features(w, 32, jitter=offset)
    assert torch.allclose(leaf[..., :6], plain[..., :6], atol=1e-4)  # positions and their change
    assert not torch.allclose(leaf[:, :, hand, 6:12], plain[:, :, hand, 6:12], atol=1e-3)  # its rotation


def test_scale_travel_scales_the_ground_covered_and_keeps_height_and_pose():
    g = torch.Generator().manual_seed(0)
    pelvis = torch.randn(2, 6, 3, generator=g, dtype=torch.float64)
    positions = pelvis[:, :, None] + torch.randn(2, 6, 4, 3, generator=g, dtype=torch.float64)
    factor = torch.tensor([0.5, 2.0])
    moved, moved_positions = scale_travel(pelvis, positions, factor, up=1)
    floor = [0, 2]
    travel = (pelvis - pelvis[:, :1])[..., floor]
    assert torch.allclose((moved - moved[:, :1])[..., floor], travel * factor[:, None, None].double(), atol=1e-12)
    assert torch.equal(moved[:, 0], pelvis[:, 0]) and torch.equal(moved[..., 1], pelvis[..., 1])  # start, height
    assert torch.allclose(moved_positions - moved[:, :, None], positions - pelvis[:, :, None], atol=1e-12)  # the pose


def test_travel_augmentation_scales_only_the_pelvis_steps_of_the_features(tiny_ds):
    """In the heading frame the pelvis step along and across the heading (channels 12, 13) is linear in the
    ground travel; the joints relative to the pelvis, their changes, rotations, turning and height are not
    touched."""
    model = Recognizer("stgcn", tiny_ds.rig, ["bow", "run", "walk"], [], window=32, arch_options=TINY)
    task = RecognizeTask(model, tiny_ds, None, stride=16, travel=(0.4, 1.5))
    w = task.windows[:4]
    plain = task._features(w, 32)
    factor = torch.tensor([0.4, 0.7, 1.0, 1.5])
    moved = task._features(w, 32, travel=factor)
    steps = [12, 13]
    assert float(plain[..., steps].abs().max()) > 1e-3  # the windows travel
    assert torch.allclose(moved[..., steps], plain[..., steps] * factor[:, None, None, None], atol=1e-5)
    rest = [c for c in range(plain.shape[-1]) if c not in steps]
    assert torch.allclose(moved[..., rest], plain[..., rest], atol=1e-5)
    # in the training batches: a fixed factor (LO == HI draws nothing) changes the steps and nothing else
    fixed = RecognizeTask(model, tiny_ds, None, stride=16, travel=(0.5, 0.5))
    without = RecognizeTask(model, tiny_ds, None, stride=16)
    a, b = (t.batch(torch.arange(4), torch.Generator().manual_seed(0))["x"] for t in (fixed, without))
    assert torch.allclose(a[..., rest], b[..., rest], atol=1e-5) and not torch.allclose(a[..., steps], b[..., steps], atol=1e-3)
