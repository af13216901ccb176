"""Third mutation audit of ``skelanim.ik`` (solve, train, data) and ``skelanim.retarget`` (train, retargeter,
baselines): rules a one-token change to the library broke with every earlier test passing, each checked against a
closed form, a hand value, fnmatch/scipy, the shipped model's own record or a docstring's rule (quoted). No mocap."""

from __future__ import annotations

import fnmatch
import inspect
import json
import math
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

import skelanim
from skelanim.cli.ik import train as cli_train
from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_geodesic, quat_identity, rotvec_to_quat
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError, ShapeError, SkelanimError, SkeletonError
from skelanim.ik.data import augment, checked_split, load_motions, pose_set, up_axis
from skelanim.ik.frames import IKRig
from skelanim.ik.model import GATConfig
from skelanim.ik.solve import DEFAULT_MODEL, IKModel, load_model, run_method, solve, to_motion
from skelanim.ik.train import LossWeights as IKLossWeights
from skelanim.ik.train import model_config
from skelanim.ik.train import train as train_ik
from skelanim.nn.train import TrainConfig
from skelanim.ops.resample import resample
from skelanim.retarget.baselines import FEET, IKRetarget, PinState, causal_contacts, hang_step, pin_step, two_bone
from skelanim.retarget.data import Family
from skelanim.retarget.loss import LossWeights
from skelanim.retarget.model import DEFAULT_MODEL as NKN_MODEL
from skelanim.retarget.model import NKN, NKNConfig
from skelanim.retarget.retargeter import Retargeter, RetargetError, bone_size, make_rig, world_turn
from skelanim.retarget.rig import SLOT, CanonicalRig, canonical_locals, canonical_tpose, frames_from_locals
from skelanim.retarget.train import RetargetTask

F64 = torch.float64


def _skeleton(names: list[str], parents: list[int], offsets: list[list[float]]) -> Skeleton:
    return Skeleton(names, np.array(parents), torch.tensor(offsets, dtype=F64))


def _chain() -> Skeleton:
    """root -> hips -> spine -> head, with a static dummy root (IK root 1); height 10 + 5 = 15 along Y."""
    return _skeleton(["root", "hips", "spine", "head"], [-1, 0, 1, 2],
                     [[0, 0, 0], [0, 90.0, 0], [0, 10.0, 0], [0, 5.0, 0]])  # fmt: skip


def _motion(sk: Skeleton, frames: int, seed: int = 0) -> Motion:
    """``frames`` frames of random turns (the dummy root kept still), the root at x = frame index."""
    gen = torch.Generator().manual_seed(seed)
    q = rotvec_to_quat(0.3 * torch.randn(frames, sk.num_joints, 3, generator=gen, dtype=F64))
    q[:, 0] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=F64)
    root = torch.zeros(frames, 3, dtype=F64)
    root[:, 0] = torch.arange(frames, dtype=F64)
    return Motion(sk, q, root, 30.0)


def _files(tmp_path: Path, names: list[str]) -> list[str]:
    for n in names:
        (tmp_path / n).write_text("")  # never read: the split refuses before loading anything
    return [str(tmp_path / n) for n in names]


@pytest.mark.parametrize("option", ["exclude", "val"])
def test_every_file_excluded_or_validating_is_said_as_that(tmp_path: Path, option: str) -> None:
    """``checked_split`` refuses "every file excluded" and "every file validating" naming the option, before any file
    is read (the files here are empty)."""
    data = _files(tmp_path, ["a_x.bvh", "b_x.bvh"])
    with pytest.raises(FileNotFoundError, match=f"every file matches --{option}"):
        checked_split(data, exclude=["*_x*"] if option == "exclude" else (), val=["*_x*"] if option == "val" else ())


def test_the_hint_for_a_val_word_is_a_glob_that_matches_it(tmp_path: Path) -> None:
    """A ``--val`` word without glob characters matches no file name; the refusal's example pattern ("patterns are
    globs on file names, such as ...") must be one that fnmatch finds in a name holding that word."""
    data = _files(tmp_path, ["walk_proud_001.bvh", "walk_sad_001.bvh"])
    with pytest.raises(FileNotFoundError) as err:
        checked_split(data, val=["proud"])
    hint = str(err.value).split("such as ")[1].split(")")[0].strip("'")
    assert fnmatch.fnmatch("walk_proud_001.bvh", hint)


def test_without_need_val_a_lone_file_is_the_training_file(tmp_path: Path) -> None:
    """``checked_split``: "Without ``need_val`` a lone file ... is the training file, with no validation"."""
    data = _files(tmp_path, ["only.bvh"])
    train, val = checked_split(data, need_val=False)
    assert [f.name for f in train] == ["only.bvh"] and val == []


def test_pose_set_keeps_at_most_max_frames_evenly_spaced_and_marks_each_files_start() -> None:
    """``pose_set``: "Keep at most this many frames per file, evenly spaced". 5 frames, at most 4: 4 samples. 10
    frames, at most 4: frames 0, 3, 6, 9 (the root's x is its frame index; positions are IK-root relative, so the
    local rotations tell the frames apart)."""
    sk = _chain()
    rig = IKRig(sk, ik_root=1)
    assert len(pose_set([_motion(sk, 5)], rig, max_frames=4)) == 4
    m = _motion(sk, 10, seed=1)
    got = pose_set([m], rig, max_frames=4).local
    torch.testing.assert_close(got[:, 2], m.rotations[[0, 3, 6, 9], 2], atol=1e-12, rtol=0)
    poses = pose_set([_motion(sk, 3), _motion(sk, 2, seed=2)], rig)  # starts: "true on each file's first frame"
    assert poses.starts.tolist() == [True, False, False, True, False]


def test_augmented_headings_cover_the_whole_circle() -> None:
    """``augment``: "a random heading about the data's up axis": over 400 draws a bone along +X ends up in all four
    quadrants of the horizontal plane (a heading drawn from half the circle reaches two)."""
    sk = _skeleton(["hips", "arm"], [-1, 0], [[0, 0, 0], [1.0, 0, 0]])
    rig = IKRig(sk, ik_root=0)
    pos = torch.tensor([[0.0, 0, 0], [1.0, 0, 0]]).expand(400, 2, 3).clone()
    world = torch.eye(3).expand(400, 2, 3, 3).clone()
    out, _, _ = augment(pos, world, rig, torch.Generator().manual_seed(0), up=1)
    x, z = out[:, 1, 0], out[:, 1, 2]
    quadrants = {(bool(a > 0), bool(b > 0)) for a, b in zip(x, z)}
    assert len(quadrants) == 4


def test_loss_weight_defaults_are_those_the_shipped_model_was_trained_with() -> None:
    """The shipped model's ``config.json`` records the loss it was trained with (``training.loss``); its command
    set only ``--noise``/``--noisy``, so ``frame`` and ``position`` are the defaults. ``noise``/``noisy`` default to
    the ``ik train`` options' defaults (``--noise`` 0.01, ``--noisy`` 0.5, skelanim/cli/ik.py)."""
    config = json.loads((DEFAULT_MODEL / "config.json").read_text())["training"]
    assert "--frame" not in config["command"] and "--position" not in config["command"]
    weights = IKLossWeights()
    assert (weights.frame, weights.position) == (config["loss"]["frame"], config["loss"]["position"])
    options = inspect.signature(cli_train).parameters
    assert (weights.noise, weights.noisy) == (options["noise"].default.default, options["noisy"].default.default)


@pytest.mark.parametrize(("init", "message"), [(DEFAULT_MODEL, r"trained with --chain \(this run: --no-chain\)"),
                                               (NKN_MODEL, "needs an IK-GAT model folder")])  # fmt: skip
def test_init_weights_that_do_not_fit_are_refused_before_the_data(tmp_path: Path, init: Path, message: str) -> None:
    """``train``: a misfit ``--init`` "is said at once" (no data exists here), naming the options that give each side's
    values (the shipped model's config: ``chain`` true, so ``--chain``); a folder "where its architecture is not
    ``gat``" (the shipped NKN, ``skelanim-retarget-nkn``) is no IK-GAT folder."""
    with pytest.raises(FormatError, match=message):
        train_ik([str(tmp_path / "none")], tmp_path / "out", gat=GATConfig(hidden=48, chain=False), init=init)


@pytest.fixture(scope="module")
def shipped():
    return load_model(None)


def _model_folder(tmp_path: Path, **config: object) -> Path:
    """A copy of the shipped model folder with ``config`` entries replaced."""
    folder = tmp_path / "model"
    shutil.copytree(DEFAULT_MODEL, folder)
    data = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**data, **config}))
    return folder


@pytest.mark.parametrize(("entry", "message"), [({"up_axis": 3}, r"up_axis 3 \(0, 1 or 2\)"),
                                                ({"format": "skelanim-learn"}, "not an IK-GAT model")])  # fmt: skip
def test_a_model_config_out_of_its_range_is_refused(tmp_path: Path, entry: dict, message: str) -> None:
    """``IKModel.load`` raises ``FormatError`` for "a config this version cannot read": an up axis is 0, 1 or 2 (X, Y,
    Z), and the folder must be an IK-GAT model's."""
    with pytest.raises(FormatError, match=message):
        IKModel.load(_model_folder(tmp_path, **entry))


def test_probe_positions_place_each_pose_at_random(shipped) -> None:
    """``probe_positions``: "the mean pose with every joint turned at random ..., placed at a random position": over
    64 poses the hips spread along every axis (drawn with 0.5 height per axis; a quarter is a safe floor)."""
    pos = shipped.probe_positions(64, seed=3)
    assert float(pos[:, 1].std(0).min()) > 0.25 * float(shipped.rig.height)


@pytest.mark.filterwarnings("ignore:.*toes point backwards")
@pytest.mark.parametrize("method", ["gat", "swing_warm"])
def test_solve_runs_every_method_and_moves_the_hips_to_the_input(shipped, method: str) -> None:
    """``solve``: "method: Any of :data:`ALL_METHODS`" (``swing_warm`` included), the method recorded in the
    motion's metadata (``skelanim ik solve`` prints it); the hips translation is the input hips' (``to_motion``: "the
    IK root's translation is animated"), here for the network's answer too: ``x_hips - offsets[root]``."""
    pos = shipped.probe_positions(3, seed=1)
    motion = solve(pos.numpy(), shipped, method=method)
    assert motion.metadata["ik_method"] == method
    assert motion.joint_translations is not None
    expected = pos[:, 1] - shipped.skeleton.offsets[0]
    torch.testing.assert_close(motion.joint_translations[:, 1], expected, atol=1e-9, rtol=0)


def test_an_infinite_frame_rate_is_refused_naming_the_source(shipped) -> None:
    """``solve`` raises ``ShapeError`` for "an fps that is not a positive number" (a Motion's own rule: infinity is
    none), and ``source`` is "The file the positions came from, named in error messages"."""
    with pytest.raises(ShapeError, match="take.npy: fps must be a positive number"):
        solve(shipped.probe_positions(2).numpy(), shipped, method="swing_mean", fps=math.inf, source="take.npy")


@pytest.mark.filterwarnings("ignore")
def test_a_larger_body_is_refined_at_the_models_size_about_the_hips(shipped) -> None:
    """``gat_refined``: "a body of another size is fitted at the model's (about the IK root)": poses 10 % larger about
    their hips keep their hips where the input puts them (fitted about the static root above, they would move)."""
    pos = shipped.probe_positions(3, seed=2)
    big = pos[:, 1:2] + 1.1 * (pos - pos[:, 1:2])
    motion = solve(big.numpy(), shipped, method="gat_refined")
    assert motion.joint_translations is not None
    hips = motion.joint_translations[:, 1] + shipped.skeleton.offsets[0]
    torch.testing.assert_close(hips, big[:, 1], atol=1e-6, rtol=0)


def test_swing_warm_starts_its_first_frame_from_the_mean_pose(shipped) -> None:
    """solve.py: ``swing_warm`` is swing IK "each frame from the previous frame's answer (the first from the mean
    pose)": its first frame is ``swing_mean``'s."""
    pos = shipped.probe_positions(2, seed=4)
    warm, _ = run_method("swing_warm", pos, shipped)
    mean, _ = run_method("swing_mean", pos[:1], shipped)
    torch.testing.assert_close(warm[0], mean[0], atol=1e-12, rtol=0)


def test_a_dummy_root_stays_at_its_own_rest_offset() -> None:
    """``to_motion``: "Under a dummy root that never rotates, the root stays at its rest offset and the IK root's
    translation is animated ... when the skeleton has position channels there" (the shipped skeleton's root offset is
    zero; here it is (5, 0, 0))."""
    sk = _chain()
    sk.offsets[0] = torch.tensor([5.0, 0.0, 0.0], dtype=F64)
    sk.channels[1] = ("Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation")
    model = SimpleNamespace(skeleton=sk, rig=IKRig(sk, ik_root=1))
    trans = sk.offsets.expand(2, 4, 3).clone()
    motion = to_motion(model, quat_identity((2, 4), dtype=F64), trans, 30.0)  # type: ignore[arg-type]
    torch.testing.assert_close(motion.root_positions, sk.offsets[0].expand(2, 3))


def test_two_bone_reaches_a_target_in_reach_with_both_bones_kept_in_the_knees_plane() -> None:
    """:func:`two_bone`: "knee and foot positions reaching for ``target`` with fixed bone lengths", the knee bending
    in the plane of the current knee ("gives the bending plane") and on its side; the hint here is not at right
    angles to the hip-target line."""
    hip, hint, target = (torch.tensor(v, dtype=F64) for v in ([0.0, 0, 0], [0.05, -0.5, 0.3], [0.0, -0.6, 0.1]))
    knee, foot = two_bone(hip, hint, target, 0.5, 0.4)
    torch.testing.assert_close(foot, target, atol=1e-12, rtol=0)
    assert float((knee - hip).norm()) == pytest.approx(0.5, abs=1e-12)
    assert float((foot - knee).norm()) == pytest.approx(0.4, abs=1e-12)
    assert abs(float(torch.linalg.det(torch.stack([knee - hip, target - hip, hint - hip])))) < 1e-12
    u = target / target.norm()
    assert float((knee - (knee @ u) * u) @ (hint - (hint @ u) * u)) > 0


def test_two_bone_soft_reach_is_the_documented_exponential() -> None:
    """:func:`two_bone`: a target at ``d`` beyond ``L - s`` is reached at ``L - s + s (1 - exp(-(d - L + s) / s))``
    (``L = upper + lower``, ``s = soft L``). Thigh 0.5, shin 0.4, soft 0.02, target 0.95 away."""
    big, small, soft, d = 0.5, 0.4, 0.02, 0.95
    s = soft * (big + small)
    want = big + small - s + s * (1 - math.exp(-(d - big - small + s) / s))
    _, foot = two_bone(torch.zeros(3, dtype=F64), torch.tensor([0.0, -0.4, 0.2], dtype=F64),
                       torch.tensor([0.0, -d, 0.0], dtype=F64), big, small, soft=soft)  # fmt: skip
    assert float(foot.norm()) == pytest.approx(want, abs=1e-12)


def test_two_bone_keeps_both_bone_lengths_for_a_target_too_near_the_hip() -> None:
    """Fixed bone lengths also for a target nearer the hip than ``|upper - lower|``: the foot stops on the line
    towards it at that distance (thigh 0.5, shin 0.3: 0.2 away, plus the 1e-6 share of the limb kept off it)."""
    hip, target = torch.zeros(3, dtype=F64), torch.tensor([0.0, -0.01, 0.0], dtype=F64)
    knee, foot = two_bone(hip, torch.tensor([0.0, -0.2, 0.3], dtype=F64), target, 0.5, 0.3)
    assert float(knee.norm()) == pytest.approx(0.5, abs=1e-9)
    assert float((foot - knee).norm()) == pytest.approx(0.3, abs=1e-9)
    torch.testing.assert_close(foot, torch.tensor([0.0, -(0.2 + 0.8e-6), 0.0], dtype=F64), atol=1e-12, rtol=0)


def test_a_knee_off_the_line_by_less_than_the_share_of_a_long_thigh_bends_in_one_fixed_plane() -> None:
    """baselines.py: "A knee off the hip-to-target line by less than this share of the thigh [1e-4] is a straight leg:
    it bends in the fixed fallback plane, not in the direction of rounding noise". A thigh of 100 units: knees 0.005
    off the line, towards +X or +Z, are straight legs (0.005 < 0.01) and bend alike."""
    hip, target = torch.zeros(3, dtype=F64), torch.tensor([0.0, -150.0, 0.0], dtype=F64)
    knees = [two_bone(hip, torch.tensor(h, dtype=F64), target, 100.0, 80.0)[0]
             for h in ([0.005, -100.0, 0.0], [0.0, -100.0, 0.005])]  # fmt: skip
    torch.testing.assert_close(knees[0], knees[1], atol=1e-9, rtol=0)


def test_contact_needs_a_speed_per_second_and_a_height_strictly_below_the_thresholds() -> None:
    """Module docstring: in contact when the "height above its lowest point so far is below ``0.05 h`` and its speed
    (backward difference) below ``0.25 h`` per second". Sliding 0.1 h per frame at 30 fps (3 h/s): in contact only on
    its first frame (no speed). Still, 0.05 h up at 1 fps: not in contact; 0.04 h up: in contact."""
    x = torch.arange(5, dtype=F64) * 0.1
    pos = torch.stack([x, torch.zeros(5, dtype=F64), torch.zeros(5, dtype=F64)], -1)[:, None]
    assert causal_contacts(pos, 30.0, 1.0)[0][:, 0].tolist() == [True, False, False, False, False]
    for rise, expected in ((0.05, False), (0.04, True)):
        pos = torch.tensor([[[0.0, 0.0, 0.0]], [[0.0, rise, 0.0]]], dtype=F64)
        assert causal_contacts(pos, 1.0, 1.0)[0][:, 0].tolist() == [True, expected]


def test_a_streamed_frame_keeps_the_lowest_height_so_far() -> None:
    """Streamed one frame at a time, the floor is "its lowest point so far": a foot raised 0.1 h (slowly, 1 fps)
    above where it stood is off the floor though this frame alone is its own lowest."""
    state, labels = None, []
    for y in (0.0, 0.1):
        contact, state = causal_contacts(torch.tensor([[[0.0, y, 0.0]]], dtype=F64), 1.0, 1.0, state)
        labels.append(bool(contact[0, 0]))
    assert labels == [True, False]


def test_bone_size_leaves_out_the_root_childs_offset_and_takes_the_median() -> None:
    """:func:`bone_size`: "the median ratio of the rest offsets of the joints below the root's children ... a root
    child's offset ... (where the body stands) [is] left out". Hips offset halved: size 1. Bones 1, 1 and 1.6 times
    as long: the median, 1 (the mean would be 1.2)."""
    ref = _skeleton(["root", "hips", "a", "b", "c"], [-1, 0, 1, 2, 3],
                    [[0, 0, 0], [0, 90.0, 0], [0, 10.0, 0], [0, 10.0, 0], [0, 10.0, 0]])  # fmt: skip
    off = ref.offsets.clone()
    off[1] *= 0.5
    assert bone_size(Skeleton(ref.names, ref.parents, off), ref) == pytest.approx(1.0)
    off[4] *= 1.6
    assert bone_size(Skeleton(ref.names, ref.parents, off), ref) == pytest.approx(1.0)
    two = _skeleton(["root", "hips", "a"], [-1, 0, 1], [[0, 0, 0], [0, 90.0, 0], [0, 10.0, 0]])
    half = _skeleton(["root", "hips", "a"], [-1, 0, 1], [[0, 0, 0], [0, 45.0, 0], [0, 10.0, 0]])
    assert bone_size(half, two) == pytest.approx(1.0)


def _still(frames: int, hips_y: float = 1.5) -> Motion:
    """The canonical T-pose standing still, its hips ``hips_y`` up (its toes, its lowest joints, 0.92 below them)."""
    sk = canonical_tpose()
    root = torch.tensor([[0.0, hips_y, 0.0]] * frames, dtype=F64).reshape(frames, 3)
    return Motion(sk, quat_identity((frames, 22), dtype=F64), root, 30.0)


def test_the_retargeter_refuses_frames_and_clips_it_cannot_take() -> None:
    """``Retargeter``: ``target_floor`` is a finite height (as ``floor`` is); ``step`` takes "``(J_A, 4)`` local
    quaternions", a ``(3,)`` root and "``(J_A, 3)`` animated local translations"; ``__call__`` takes "A motion of the
    source skeleton" with frames; a :class:`CanonicalRig` brings its own mapping (none other may be given)."""
    sk = canonical_tpose()
    with pytest.raises(RetargetError, match="target_floor must be a finite number"):
        Retargeter(sk, sk, "copy", target_floor=math.inf)
    with pytest.raises(RetargetError, match="fps must be a positive number"):  # as a Motion's: infinity is none
        Retargeter(sk, sk, "copy", fps=math.inf)
    r = Retargeter(sk, sk, "copy", floor=0.0, runtime="torch")
    with pytest.raises(RetargetError, match=r"a frame needs \(22, 4\) rotations"):
        r.step(quat_identity((21,), dtype=F64), torch.zeros(3, dtype=F64))
    with pytest.raises(RetargetError, match=r"joint translations must be \(22, 3\)"):
        r.step(quat_identity((22,), dtype=F64), torch.zeros(3, dtype=F64), torch.zeros(21, 3, dtype=F64))
    other = _skeleton(["a", "b"], [-1, 0], [[0, 0, 0], [0, 1.0, 0]])
    with pytest.raises(RetargetError, match="not the Retargeter's source skeleton"):
        r(Motion(other, quat_identity((2, 2), dtype=F64), torch.zeros(2, 3, dtype=F64), 30.0))
    with pytest.raises(RetargetError, match="no frames"):
        r(_still(0))
    with pytest.raises(RetargetError, match="carries its own joint mapping"):  # make_rig: a rig "is used as it is"
        make_rig(CanonicalRig(canonical_tpose()), {"hips": "Hips"})


def _family(frames: list[int]):
    rig = CanonicalRig(canonical_tpose())
    clips = [{"local": torch.eye(3).expand(n, 22, 3, 3).clone(), "hips": torch.tensor([[0.0, 0.92, 0.0]] * n),
              "contacts": torch.ones(n, 4), "name": f"clip{i}.bvh"} for i, n in enumerate(frames)]  # fmt: skip
    return Family("bandai", rig, clips, True)


def test_a_clip_of_exactly_the_window_is_drawn_and_a_shorter_family_refused() -> None:
    """:class:`RetargetTask`: "clips of at least ``window`` frames are used": a family whose one clip has exactly
    ``window`` frames trains; one whose clips are all shorter is refused, naming it."""
    task = RetargetTask([_family([6])], [], window=6, samples=2)
    assert task.batch(torch.arange(2), torch.Generator().manual_seed(0))["src_local"].shape[:2] == (2, 6)
    with pytest.raises(SkelanimError, match="family bandai has no training clip of 6 frames"):
        RetargetTask([_family([5, 4])], [], window=6)


def test_validation_is_the_mean_over_batches_and_its_total_leaves_out_only_the_adversary() -> None:
    """``validate``: "Mean loss terms over the fixed validation batches; ``val_total`` leaves out the adversarial
    part": two batches scoring each term 1 and 3 give 2, and the total is the weighted sum of every term but ``adv``
    (the weights: :class:`~skelanim.retarget.loss.LossWeights`' defaults)."""
    weights = LossWeights()
    terms = [k for k in weights.to_dict() if k != "adv"]
    task = RetargetTask.__new__(RetargetTask)
    task.val_batches, task.weights = [{"v": torch.tensor(1.0)}, {"v": torch.tensor(3.0)}], weights

    def model(batch: dict) -> tuple:
        return None, {k: float(batch["v"]) for k in [*terms, "adv"]}

    out = task.validate(model)  # type: ignore[arg-type]
    assert out["val_smooth"] == 2.0 and out["val_adv"] == 2.0
    assert out["val_total"] == pytest.approx(2.0 * sum(weights.to_dict()[k] for k in terms))


def _write_clips(folder: Path, sk: Skeleton, count: int = 2) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"clip_{i}.bvh" for i in range(count)]
    for i, p in enumerate(paths):
        skelanim.save(_motion(sk, 4, seed=i), p)
    return paths


def test_files_of_another_skeleton_are_refused_naming_the_file(tmp_path: Path) -> None:
    """:func:`load_motions`: files "must all share one skeleton topology", else ``SkeletonError`` "naming the first
    file whose skeleton differs" (here the second of two)."""
    first = _write_clips(tmp_path / "a", _chain(), count=1)
    other = _skeleton(["root", "hips", "spine"], [-1, 0, 1], [[0, 0, 0], [0, 90.0, 0], [0, 10.0, 0]])
    second = _write_clips(tmp_path / "b", other, count=1)
    with pytest.raises(SkeletonError) as err:
        load_motions(first + second)
    assert "b/clip_0.bvh" in str(err.value)


def test_stretch_is_a_fraction_of_the_height() -> None:
    """``PoseSet.stretch``: "the largest distance between the file's own FK positions and the rest-offset ones, as a
    fraction of height": the spine translated 12 units up instead of its 10 puts spine and head 2 units off."""
    sk = _chain()
    m = _motion(sk, 3)
    trans = sk.offsets.expand(3, 4, 3).clone()
    trans[:, 2, 1] = 12.0
    m = Motion(sk, m.rotations, m.root_positions, 30.0, joint_translations=trans)
    rig = IKRig(sk, ik_root=1)
    assert pose_set([m], rig).stretch == pytest.approx(2.0 / float(rig.height), rel=1e-9)


def test_init_weights_for_another_skeleton_say_how_it_differs(tmp_path: Path) -> None:
    """``train``: ``--init`` weights "made for another skeleton than the data's" are refused "as one line that says
    how it differs": the shipped model's 22 joints against the data's 4."""
    _write_clips(tmp_path / "data", _chain())
    with pytest.raises(FormatError, match="they are for a skeleton of 22 joints, the data's has 4"):
        train_ik([str(tmp_path / "data")], tmp_path / "out", gat=GATConfig(hidden=48, chain=True), init=DEFAULT_MODEL)


def test_a_written_config_is_version_one_with_the_datas_up_axis(shipped) -> None:
    """``model_config`` writes what :meth:`IKModel.load` reads ("this skelanim reads version 1") and the up axis the
    data stood along ("read by export and the units check")."""
    config = model_config(shipped.net, shipped.rig, 2, {})
    assert config["version"] == 1 and config["up_axis"] == 2 and config["format"] == "skelanim-ik-gat"


def _bent_legs(frames: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Canonical bone frames of the T-pose with both knees bent 60 degrees, and hips 0.8 up (``(F, 22, 3, 3)``,
    ``(F, 3)``), the hips moving 0.05 along +X per frame and the ankles pitched 20 degrees after the first frame."""
    local = torch.eye(3, dtype=F64).expand(frames, 22, 3, 3).clone()
    bend = torch.tensor(Rotation.from_euler("x", 60, degrees=True).as_matrix(), dtype=F64)
    local[:, [SLOT["l_leg"], SLOT["r_leg"]]] = bend
    pitch = torch.tensor(Rotation.from_euler("x", -20, degrees=True).as_matrix(), dtype=F64)
    local[1:, [SLOT["l_foot"], SLOT["r_foot"]]] = pitch
    hips = torch.tensor([[0.05 * t, 0.8, 0.0] for t in range(frames)], dtype=F64)
    return frames_from_locals(local), hips


def _short_shins():
    sk = canonical_tpose()
    off = sk.offsets.clone()
    off[[SLOT["l_foot"], SLOT["r_foot"]]] *= 0.5  # the shin ends at the ankle: thigh 0.42, shin 0.2
    return CanonicalRig(Skeleton(sk.names, sk.parents, off))


@pytest.mark.parametrize("planted", [[1, 1, 1, 1], [0, 0, 1, 1]])
def test_ik_retargeting_of_a_touch_down_frame_returns_the_copy(planted: list[int]) -> None:
    """baselines.py: feet are "held where they touched down" (on a touch-down frame, where the copy puts them; an
    ankle hanging from its toe's pin by "the copy's ankle-to-toe vector" is then the copy's ankle too), knees placed
    by two-bone IK "so the bones keep their lengths", and a joint whose position is the copy's gets "the copy's frame".
    So one touch-down frame of a pose in reach comes back as the copy on a target whose shin is half its thigh."""
    frames, hips = _bent_legs()
    out, _ = IKRetarget(_short_shins())(frames, hips, torch.tensor([planted]), 30.0)
    torch.testing.assert_close(out, frames, atol=1e-9, rtol=0)


def test_ik_retargeting_holds_a_planted_toe_where_it_touched_down() -> None:
    """"feet held where they touched down during the source's contacts": every foot joint planted on frame 0 and still
    planted on frame 1, when the copy has moved its hips 0.05 along X and pitched its ankles, stays where it was on
    frame 0 (ankle and toe both planted: the ankle keeps its own pin, it does not hang from the toe's)."""
    rig = _short_shins()
    frames, hips = _bent_legs(2)
    out, _ = IKRetarget(rig)(frames, hips, torch.ones(2, 4), 30.0)
    _, pos = rig.canonical_fk(canonical_locals(out), hips)
    torch.testing.assert_close(pos[1, list(FEET)], pos[0, list(FEET)], atol=1e-6, rtol=0)


def test_a_60_fps_clip_is_read_at_30_and_sampled_back_at_its_own_frame_times() -> None:
    """``Retargeter.__call__``: "The NKN reads a clip whose rate is more than ``NKN_RATE_TOLERANCE`` off its training
    rate (30 fps) resampled to that rate, and its answer is sampled back at the clip's frame times": frame ``2k`` of a
    60 fps clip is at ``k / 30`` s, frame ``k`` of the 30 fps answer."""
    torch.manual_seed(0)
    sk = canonical_tpose()
    gen = torch.Generator().manual_seed(5)
    q = rotvec_to_quat(0.2 * torch.randn(9, 22, 3, generator=gen, dtype=F64))
    root = torch.tensor([[0.02 * t, 0.92, 0.0] for t in range(9)], dtype=F64)
    clip = Motion(sk, q, root, 60.0)
    r = Retargeter(sk, sk, "nkn", model=NKN(NKNConfig(hidden=16, disc_hidden=8)), runtime="torch")
    assert r.net is not None and r.net.train_fps == 30.0
    at_60, at_30 = r(clip), r(resample(clip, 30.0))
    assert at_30.num_frames == 5
    assert float(quat_geodesic(at_60.rotations[::2], at_30.rotations).max()) < 1e-6


def test_a_planted_joint_keeps_its_pin_and_settles_only_downwards() -> None:
    """:func:`pin_step`: "At touch-down the joint's current target ... is pinned; while in contact the target stays
    there, but for its height (Y), which follows the copy's where that is lower". Touch-down at (0, 0.1, 0); the copy
    then at (0.3, 0.05, 0): the target is (0, 0.05, 0), and at (0.6, 0.2, 0) it is (0, 0.05, 0) still."""
    state = PinState.fresh()
    pins, pinned, offsets = state.pins[:1], state.pinned[:1], state.offsets[:1]
    targets = []
    for copy in ([0.0, 0.1, 0.0], [0.3, 0.05, 0.0], [0.6, 0.2, 0.0]):
        target, pins, pinned, offsets = pin_step(torch.tensor([copy], dtype=F64), torch.tensor([True]), 0.6,
                                                 pins, pinned, offsets)  # fmt: skip
        targets.append(target[0].tolist())
    assert targets == [pytest.approx(t, abs=1e-12) for t in ([0.0, 0.1, 0.0], [0.0, 0.05, 0.0], [0.0, 0.05, 0.0])]


def test_a_hung_ankle_eases_back_by_the_decay_once_released() -> None:
    """:func:`hang_step`: "the ankle eases onto that target and, after that, back onto the given one, the difference
    left shrinking by ``decay`` per frame". Decay 0.5, hung 1 along X: offsets 0.5 (hanging), then 0.25, 0.125."""
    given, hung, offsets = torch.zeros(1, 3, dtype=F64), torch.tensor([[1.0, 0.0, 0.0]], dtype=F64), torch.zeros(1, 3)
    seen = []
    for toe_only in (True, False, False):
        _, offsets = hang_step(given, hung, torch.tensor([toe_only]), 0.5, offsets.to(F64))
        seen.append(float(offsets[0, 0]))
    assert seen == pytest.approx([0.5, 0.25, 0.125], abs=1e-12)


def test_a_target_clip_sets_where_the_results_feet_stand_and_a_y_up_clip_needs_no_turn() -> None:
    """``target_floor``: "Default: when the target is given as a clip, that clip's (:func:`target_floor_of`)": the
    T-pose standing with its hips 2.0 up stands its toes 0.92 below, at 1.08 (heights are along +Y, canonical up).
    ``floor``: "Default: ... for a stream, that of the source clip given": hips 1.5 up, the toes at 0.58.
    :func:`world_turn`: "``None`` where it is +Y already"; an unknown ``runtime`` is refused."""
    r = Retargeter(canonical_tpose(), _still(3, hips_y=2.0), "copy", runtime="torch")
    assert r.target_floor == pytest.approx(1.08, abs=1e-9)
    r = Retargeter(_still(4), canonical_tpose(), "copy", runtime="torch")
    assert r.stream_floor == pytest.approx(0.58, abs=1e-9)
    assert world_turn(_still(3)) is None
    with pytest.raises(RetargetError, match="unknown runtime"):
        Retargeter(canonical_tpose(), canonical_tpose(), "copy", runtime="cuda")


def test_up_axis_is_judged_by_extent_not_by_position() -> None:
    """:func:`up_axis`: "The world axis along which poses are tallest (median over frames of the joints' extent)":
    poses 2 tall along Y standing 100 units along X are Y up."""
    pos = torch.tensor([[100.0, 0.0, 0.0], [100.1, 2.0, 0.5], [100.0, 1.0, 0.2]]).expand(5, 3, 3)
    assert up_axis(pos) == 1


def test_optimize_runs_the_documented_100_iterations_by_default(shipped) -> None:
    """solve.py: ``optimize_rest`` is "100 LM iterations from the rest pose": the default is 100."""
    pos = shipped.probe_positions(2, seed=2)
    default, _ = run_method("optimize_rest", pos, shipped)
    hundred, _ = run_method("optimize_rest", pos, shipped, iterations=100)
    torch.testing.assert_close(default, hundred, atol=0, rtol=0)



def test_a_trained_models_ik_root_offset_is_the_median_of_its_files(tmp_path: Path) -> None:
    """``train``: "the IK root's OFFSET is free (its translation is animated); files disagree, take the median": three
    files whose hips sit 90, 100 and 95 up give a model whose hips offset is 95 up."""
    (tmp_path / "data").mkdir()
    for i, height in enumerate((90.0, 100.0, 95.0)):
        sk = _chain()
        sk.offsets[1, 1] = height
        skelanim.save(_motion(sk, 4, seed=i), tmp_path / "data" / f"clip_{i}.bvh")
    train_ik([str(tmp_path / "data")], tmp_path / "out", gat=GATConfig(hidden=8, layers=1, heads=2),
             loop=TrainConfig(epochs=1, batch_size=4, max_steps=1, progress=False), log=lambda line: None)  # fmt: skip
    saved = json.loads((tmp_path / "out" / "config.json").read_text())["skeleton"]["offsets"]
    assert saved[1] == pytest.approx([0.0, 95.0, 0.0])
