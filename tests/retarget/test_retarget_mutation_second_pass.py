"""Second mutation audit of :mod:`skelanim.retarget`: rules that a one-token change to the library broke without
any earlier test noticing, each checked against a closed form, a hand value, numpy/scipy or the documented rule."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from scripted_nkn import ScriptedNKN  # tests/helpers
from torch import Tensor, nn

from skelanim.core.motion import Motion
from skelanim.core.rotations import matrix_to_quat, quat_identity
from skelanim.core.skeleton import Skeleton
from skelanim.errors import FormatError
from skelanim.io.deepmimic import humanoid_skeleton
from skelanim.retarget.baselines import causal_contacts, pin_step
from skelanim.retarget.data import encode_clip, variant_offsets
from skelanim.retarget.evaluate import hinge_violations, proportion_metrics, reference_error
from skelanim.retarget.loss import LossWeights, NKNTrainer
from skelanim.retarget.mapping import LIMB_ALIASES, load_mapping_file, map_skeleton
from skelanim.retarget.model import DEFAULT_MODEL, NKN, NKNConfig, heading
from skelanim.retarget.retargeter import Retargeter, RetargetError
from skelanim.retarget.rig import (
    SLOT,
    CanonicalRig,
    canonical_locals,
    canonical_tpose,
    frames_from_locals,
    leg_length,
    physical_zero_pose,
    stride_leg,
)
from skelanim.retarget.robot import FOOT_BOX, make_feasible
from skelanim.retarget.stance import floor_level, level_feet, scaled_hips, toeless

F64 = torch.float64
TINY = NKNConfig(hidden=16, disc_hidden=8)
LEG = 0.87  # the canonical T-pose's leg: hips to hip joint 0.05 down, thigh 0.42, shin 0.40
FPS = 30.0


def _rot(axis: tuple[float, ...] | np.ndarray, angle: float) -> np.ndarray:
    """Rodrigues' closed form: the right-handed rotation by ``angle`` about ``axis`` (any length)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _t(a: np.ndarray | list | tuple) -> Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float32)


def _batch(hips: Tensor, local: Tensor | None = None, tgt_scale: float = 1.0) -> dict[str, Tensor]:
    """A batch of ``(1, T, 3)`` source hips on the canonical T-pose onto itself, scaled by ``tgt_scale``."""
    b, t = hips.shape[:2]
    off = canonical_tpose().offsets.float().expand(b, -1, -1)
    local = torch.eye(3).expand(b, t, 22, 3, 3).clone() if local is None else local
    return {"src_local": local, "src_hips": hips, "contacts": torch.zeros(b, t, 4), "src_off": off.clone(),
            "src_leg": torch.full((b,), LEG), "tgt_off": off * tgt_scale, "tgt_leg": torch.full((b,), LEG * tgt_scale),
            "real_local": local.clone(), "real_hips": hips.clone(), "fps": torch.tensor(FPS)}  # fmt: skip


def _parts(batch: dict[str, Tensor], weights: LossWeights | None = None,
           **answers: tuple[Tensor, Tensor]) -> tuple[float, dict[str, float]]:  # fmt: skip
    model = NKNTrainer(TINY, weights or LossWeights(adv=0.0))
    model.net = ScriptedNKN(batch, **answers)  # type: ignore[assignment]
    with torch.no_grad():
        total, parts = model(batch)
    return float(total), parts


def test_loss_weight_defaults_are_those_the_shipped_model_was_trained_with() -> None:
    """``skelanim retarget train`` with default weights retrains the shipped model: the README says how that model
    was trained and its ``config.json`` records the weights (``loss_weights``); the defaults must be those."""
    recorded = json.loads((DEFAULT_MODEL / "config.json").read_text())["loss_weights"]
    assert LossWeights().to_dict() == pytest.approx(recorded)
    assert recorded == {"rec": 1.0, "cyc": 1.0, "skate": 10.0, "pen": 10.0, "reg": 1.0, "twist": 0.1,
                        "smooth": 20.0, "adv": 0.02}  # fmt: skip


def test_reconstruction_pays_for_a_rotation_change_as_the_cycle_does() -> None:
    """``rec``: "retarget A -> A: positions and rotations equal the input". Scripting A -> A with the head (a leaf:
    no joint moves) turned by 0.5 rad costs 0.1 times the squared Frobenius change averaged over 22 joints,
    ``||L R - L||^2 = 2 (3 - tr R) = 4 (1 - cos 0.5)``, the cycle term's form."""
    batch = _batch(_t([[0.0, 1.0, 0.0]] * 3)[None])
    turned = batch["src_local"].clone()
    turned[:, :, SLOT["head"]] = _t(_rot((1.0, 2.0, -0.5), 0.5))
    _, parts = _parts(batch, aa=(turned, batch["src_hips"]))
    assert parts["rec"] == pytest.approx(0.1 * 4 * (1 - math.cos(0.5)) / 22, rel=1e-4)


def test_the_cycle_is_measured_in_the_source_s_leg_lengths() -> None:
    """``A -> B -> A`` ends on A: its error is in A's leg lengths. B twice A's size, hips back off by ``d``: |d|^2 / l_A^2."""
    batch = _batch(_t([[0.0, 1.0, 0.0]] * 3)[None], tgt_scale=2.0)
    d = np.array([0.03, -0.02, 0.05])
    _, parts = _parts(batch, ba=(batch["src_local"], batch["src_hips"] + _t(d)))
    assert parts["cyc"] == pytest.approx(float(d @ d) / LEG**2, rel=1e-4)


def test_the_regulariser_pays_for_the_hips_correction_in_target_leg_lengths() -> None:
    """``reg``: "the correction to the rest-aware copy stays small (rotations and hips)". B is A at twice the size
    (copied hips ``2 h_A``); A -> B scripted as those hips plus ``e`` costs the offset in B's leg lengths (the hips
    offset is "in target leg lengths", :mod:`.model`): ``|e|^2 / l_B^2``."""
    hips = _t([[0.1, 1.0, 0.0], [0.12, 1.01, 0.02], [0.15, 0.99, 0.03]])[None]
    batch = _batch(hips, tgt_scale=2.0)
    e = np.array([0.04, -0.03, 0.02])
    _, parts = _parts(batch, ab=(batch["src_local"], 2.0 * hips + _t(e)))
    assert parts["reg"] == pytest.approx(float(e @ e) / (2.0 * LEG) ** 2, rel=1e-4)


def test_without_adversarial_weight_the_total_is_the_weighted_sum_of_the_table_s_terms() -> None:
    """With ``adv = 0`` no adversarial term is trained: the total is ``sum(w_k * part_k)`` over the module table's
    terms (rec, cyc, skate, pen, reg, twist, smooth) and no discriminator loss is added to it."""
    batch = _batch(hips := _t([[0.1 * k, 0.9, 0.0] for k in range(4)])[None])
    turned = batch["src_local"].clone()
    turned[:, :, SLOT["l_forearm"]] = _t(_rot((0.0, 1.0, 1.0), 0.4))
    total, parts = _parts(batch, w := LossWeights(adv=0.0), ab=(turned, hips * 1.1))
    assert parts["reg"] > 0 and parts["twist"] > 0
    terms = ("rec", "cyc", "skate", "pen", "reg", "twist", "smooth")
    assert total == pytest.approx(sum(getattr(w, k) * parts[k] for k in terms), rel=1e-6)


@pytest.mark.parametrize("score", [0.3, -0.4])
def test_one_optimiser_trains_the_discriminator_by_its_least_squares_gradient(score: float) -> None:
    """"the generator's term goes through a copy of the discriminator with frozen weights, the discriminator learns
    from detached windows, so one optimiser trains both". A discriminator answering its last bias ``c``: the total's
    gradient on ``c`` is the LSGAN discriminator's alone, ``d/dc [(c - 1)^2 + c^2] = 4 c - 2``."""
    batch = _batch(_t([[0.0, 1.0, 0.01 * k] for k in range(8)])[None])
    model = NKNTrainer(TINY, LossWeights())
    model.net = ScriptedNKN(batch)  # type: ignore[assignment]
    with torch.no_grad():
        model.disc.out.weight.zero_()
        model.disc.out.bias.fill_(score)
    total, _ = model(batch)
    total.backward()
    assert (grad := model.disc.out.bias.grad) is not None and float(grad[0]) == pytest.approx(4 * score - 2, rel=1e-5)


def _skeleton(extra: list[tuple[str, str, tuple[float, float, float]]] = (), *,  # type: ignore[assignment]
              under: dict[str, str] | None = None) -> Skeleton:  # fmt: skip
    """The canonical T-pose with ``extra`` joints ``(name, parent, offset)`` and re-parented ``under`` joints."""
    sk = canonical_tpose()
    names = list(sk.names) + [n for n, _, _ in extra]
    parent_names = [None if p < 0 else sk.names[p] for p in sk.parents.tolist()] + [p for _, p, _ in extra]
    for joint, parent in (under or {}).items():
        parent_names[names.index(joint)] = parent
    offsets = torch.cat([sk.offsets, torch.tensor([o for _, _, o in extra], dtype=F64).reshape(-1, 3)])
    order: list[str] = []
    while len(order) < len(names):  # parents first
        order += [n for n, p in zip(names, parent_names) if n not in order and (p is None or p in order)]
    at = {n: names.index(n) for n in order}
    return Skeleton(order, np.array([-1 if parent_names[at[n]] is None else order.index(parent_names[at[n]])  # type: ignore[arg-type]
                                     for n in order]), offsets[[at[n] for n in order]])  # fmt: skip


def test_a_limb_joint_of_two_sibling_candidates_takes_the_earlier_alias() -> None:
    """Chains are ranked "with the most joints, then the tightest chain" and then by alias (the code's "earlier
    aliases", :data:`LIMB_ALIASES` "best first"): a foot with two toe-named children at one depth, ``l_toebase``
    (``toebase``, the first toe alias) and ``l_toe`` (``toe``, the third), maps its toe to ``l_toebase``."""
    assert LIMB_ALIASES["toe"].index("toebase") < LIMB_ALIASES["toe"].index("toe")
    sk = _skeleton([("l_toebase", "l_foot", (0.01, -0.05, 0.14)), ("r_toebase", "r_foot", (-0.01, -0.05, 0.14))])
    names = map_skeleton(sk).names()
    assert names["l_toe"] == "l_toebase" and names["r_toe"] == "r_toebase"


def test_three_spine_joints_give_spine_and_spine1_in_order() -> None:
    """"``spine``/``spine1`` are the joints between them [hips and chest], in order": of three, the first two."""
    names = map_skeleton(_skeleton([("spine2", "spine1", (0.0, 0.06, 0.0))], under={"chest": "spine2"})).names()
    assert (names["spine"], names["spine1"], names["chest"]) == ("spine", "spine1", "chest")


def test_hips_prefer_a_joint_named_hips_over_one_named_pelvis() -> None:
    """"``hips`` is the joint named like hips/pelvis/root (in that order of preference) that carries both legs and
    the chest": a ``hips`` root over a ``pelvis`` that carries spine and legs maps ``hips`` onto ``hips``."""
    sk = _skeleton([("pelvis", "hips", (0.0, 0.0, 0.0))],
                   under={"spine": "pelvis", "l_upleg": "pelvis", "r_upleg": "pelvis"})  # fmt: skip
    assert map_skeleton(sk).names()["hips"] == "hips"


def test_an_invalid_json_mapping_file_names_the_line_of_the_error(tmp_path: Path) -> None:
    """``load_mapping_file`` raises :class:`FormatError` for invalid JSON; the error carries the line of the fault
    (here the fourth line, whose key follows the third without a comma: counted by hand)."""
    (path := tmp_path / "map.json").write_text('{\n  "hips": "Hips",\n  "chest": "Spine2"\n  "head": "Head"\n}\n')
    with pytest.raises(FormatError) as err:
        load_mapping_file(path)
    assert err.value.line == 4


def _with_toes(toe: tuple[float, float, float]) -> Skeleton:
    sk, off = canonical_tpose(), canonical_tpose().offsets.clone()  # names in SLOT order
    off[[SLOT["l_toe"], SLOT["r_toe"]]] = torch.tensor(toe, dtype=F64)
    return Skeleton(sk.names, sk.parents, off)


def test_a_rest_foot_50_degrees_down_is_not_levelled() -> None:
    """:mod:`.stance`: "a foot whose bone points more than 45 degrees off level in a body pose is not standing, and
    is left". Toe offset (0, -0.12, 0.1) points atan(1.2) = 50.2 degrees down: no levelling, so no sole (0), where
    a levelled foot would have stood 0.12 over its toe."""
    assert CanonicalRig(_with_toes((0.0, -0.12, 0.1))).sole == pytest.approx(0.0, abs=1e-12)


def _posed_feet(pitches_deg: list[float], toe_up: int = 0) -> tuple[Tensor, Tensor]:
    """Calibration poses (identity rotations) of the canonical T-pose: feet at ``pitches_deg`` (ankles 0.1 over toes
    at height 0, all among the lowest), then ``toe_up`` heel strikes (toe 0.2 above and ahead of the ankle)."""
    rows = [(-0.1, 0.1 / math.tan(math.radians(p))) for p in pitches_deg] + [(0.2, 0.2)] * toe_up
    pos = canonical_tpose().rest_positions().to(F64).repeat(len(rows), 1, 1)
    for f, (dy, dz) in enumerate(rows):
        for s in "lr":
            ankle = pos[f, SLOT[f"{s}_foot"]]
            ankle[1] = 0.1
            pos[f, SLOT[f"{s}_toe"]] = ankle + torch.tensor([0.0, dy, dz], dtype=F64)
    return torch.eye(3, dtype=F64).repeat(len(rows), 22, 1, 1), pos


def _level(posed: tuple[Tensor, Tensor] | None) -> Tensor:
    rest = canonical_tpose().rest_positions().to(F64)
    eye = torch.eye(3, dtype=F64).repeat(22, 1, 1)
    return level_feet(eye.clone(), np.arange(22), eye, rest, torch.tensor([0.0, 1.0, 0.0], dtype=F64), posed)


def _turn_deg(m: Tensor) -> float:
    return math.degrees(math.acos(max(-1.0, min(1.0, (float(torch.trace(m)) - 1) / 2))))


def test_the_stance_pitch_of_a_motion_is_its_most_common_pitch() -> None:
    """"the most common pitch of the motion's standing frames": 10 frames stand at exactly 30 degrees, 16 others
    each at its own pitch, 38 to 48.5 degrees (0.7 apart). The mode is 30 (counted with ``np.unique``): each foot
    frame is turned by 30 degrees (a spread cluster must not outweigh a pitch held frame after frame)."""
    pitches = [30.0] * 10 + [38.0 + 0.7 * k for k in range(16)]
    assert np.unique(pitches, return_counts=True)[1].max() == 10  # 30 degrees, 10 times: all others once
    out = _level(_posed_feet(pitches))
    for s in "lr":
        assert _turn_deg(out[SLOT[f"{s}_foot"]]) == pytest.approx(30.0, abs=1e-6)


def test_feet_more_than_60_degrees_off_level_in_every_frame_leave_the_rest_pose_s_pitch() -> None:
    """"no more than 60 degrees off level" counts as standing; a motion whose feet all point 70 degrees down has no
    standing frame, and the frames are those of the rest pose ("no foot stands in this motion: the rest pose's
    feet", the canonical T-pose's 19.7 degrees), not turned by 70."""
    out = _level(_posed_feet([70.0] * 8))
    torch.testing.assert_close(out, _level(None))
    assert _turn_deg(out[SLOT["l_foot"]]) == pytest.approx(math.degrees(math.atan2(0.05, 0.14)), abs=1e-6)


def test_a_standing_frame_has_both_ankle_and_toe_among_the_lowest() -> None:
    """Standing frames are "those where the foot's ankle and toe joints are both in their lowest quarter": two
    frames stand flat at 30 degrees and six are heel strikes (ankle as low, toe 0.2 up: 45 degrees toe-up, within
    60 of level). Only the two are standing, so the feet turn by 30 degrees, not by the heel strikes' -45."""
    out = _level(_posed_feet([30.0, 30.0], toe_up=6))
    for s in "lr":
        assert _turn_deg(out[SLOT[f"{s}_foot"]]) == pytest.approx(30.0, abs=1e-6)


@pytest.mark.parametrize(("soles", "toeless_side", "stride", "hips", "want"), [
    ((0.05, 0.06), None, 1.5, (0.2, 1.0, -0.4), (0.3, 1.96, -0.6)),
    ((0.05, 0.0), None, None, (0.0, 1.0, 0.0), (0.0, 2.0, 0.0)),
    ((0.0, 0.06), "source", None, (0.0, 1.0, 0.0), (0.0, 2.06, 0.0)),
    ((0.05, 0.0), "target", None, (0.0, 1.0, 0.0), (0.0, 1.9, 0.0)),
])  # fmt: skip
def test_copied_hips_scale_above_each_skeleton_s_own_sole(soles: tuple, toeless_side: str | None,
                                                          stride: float | None, hips: tuple, want: tuple) -> None:
    """:func:`scaled_hips`, legs 1 -> 2: scaled "and stands on the target's own sole" (soles 0.05 -> 0.06: 2 (1 -
    0.05) + 0.06), travel by ``stride_ratio``; "A toed skeleton without a sole ... keeps none on either side" (2.0);
    a toeless side has sole 0: 2 + 0.06 from a toeless source, 2 (1 - 0.05) onto a toeless target."""
    out = scaled_hips(torch.tensor([hips], dtype=F64), 1.0, 2.0, *soles, source_toeless=toeless_side == "source",
                      target_toeless=toeless_side == "target", stride_ratio=stride)  # fmt: skip
    assert out[0].tolist() == pytest.approx(want, abs=1e-12)


def test_toeless_means_both_toe_offsets_zero_not_one_zero_coordinate() -> None:
    """:func:`toeless`: "both toe offsets zero". The T-pose's toes (0, -0.05, 0.14), one coordinate 0, are toes."""
    off = canonical_tpose().offsets.clone()
    assert float(off[SLOT["l_toe"], 0]) == 0.0 and not bool(toeless(off))
    off[[SLOT["l_toe"], SLOT["r_toe"]]] = 0.0
    assert bool(toeless(off))


@pytest.mark.parametrize(("lowest", "floor"), [(0.15, 0.0), (-0.15, 0.0), (0.25, 0.25), (-0.3, -0.3)])
def test_y_zero_is_the_floor_within_a_tenth_of_the_height(lowest: float, floor: float) -> None:
    """:func:`floor_level`: "0 where their lowest point is within CLEARANCE of the height of it, else that point";
    the README: "within 10 % of the height of it". Height 2: a lowest foot joint at +-0.15 (7.5 %) keeps y = 0, one
    at 0.25 or -0.3 (12.5 %, 15 %) is the floor."""
    heights = torch.tensor([[0.9, 0.8, 0.7, 0.6], [lowest, 0.5, 0.4, 0.45]], dtype=F64)
    assert floor_level(heights, 2.0) == pytest.approx(floor, abs=1e-12)


_FRESH = (torch.zeros(1, 3, dtype=F64), torch.zeros(1, dtype=F64), torch.zeros(1, 3, dtype=F64))


def _pin(copy: list[float], contact: bool, state: tuple[Tensor, Tensor, Tensor],
         decay: float = 0.5) -> tuple[list[float], tuple[Tensor, Tensor, Tensor]]:  # fmt: skip
    target, *new = pin_step(torch.tensor([copy], dtype=F64), torch.tensor([contact]), decay, *state)
    return target[0].tolist(), (new[0], new[1], new[2])


def test_a_released_foot_s_offset_decays_and_a_touch_down_starts_from_the_decayed_target() -> None:
    """After lift-off "the offset from the copy decays by ``decay`` per frame"; a touch-down pins "the copy's position
    plus its decayed offset". Pinned at x = 0, the copy at x = 0.4 leaves an offset of -0.4; released with decay 0.5
    the target is ``copy - 0.2``, then ``copy - 0.1``; touching down again pins ``copy - 0.05``."""
    _, state = _pin([0.0, 0.0, 0.0], True, _FRESH)
    _, state = _pin([0.4, 0.0, 0.0], True, state)
    target, state = _pin([1.0, 0.0, 0.0], False, state)
    assert target == pytest.approx([0.8, 0.0, 0.0], abs=1e-12)
    target, state = _pin([2.0, 0.0, 0.0], False, state)
    assert target == pytest.approx([1.9, 0.0, 0.0], abs=1e-12)
    target, _ = _pin([3.0, 0.0, 0.0], True, state)
    assert target == pytest.approx([2.95, 0.0, 0.0], abs=1e-12)


@pytest.mark.parametrize(("path", "labels"), [
    ([(0.0, 0.3, 0.0), (0.0, 0.0, 0.0), (0.0, 0.1, 0.0), (0.0, 0.1, 0.0), (0.0, 0.1, 0.0)], [1, 0, 0, 0, 0]),
    ([(0.1 * t, 0.0, 0.0) for t in range(5)], [1, 0, 0, 0, 0]),
])  # fmt: skip
def test_contacts_streamed_in_pieces_are_the_whole_clip_s(path: list[tuple], labels: list[int]) -> None:
    """:func:`causal_contacts` (height 1, 30 fps): in contact when "its height above its lowest point so far is below
    0.05 h and its speed (backward difference) below 0.25 h per second", and causal: "a stream processed [in pieces]
    gives the same result as the whole clip". A foot dropping 0.3 then standing 0.1 above its lowest point, and one
    gliding at 3 h/s on its floor, touch only in their first frame (speed 0; by hand), in pieces of 2 and 3 too."""
    pos = torch.tensor(path, dtype=F64)[:, None]
    whole, _ = causal_contacts(pos, 30.0, 1.0)
    first, state = causal_contacts(pos[:2], 30.0, 1.0)
    rest, _ = causal_contacts(pos[2:], 30.0, 1.0, state)
    assert whole[:, 0].tolist() == [bool(v) for v in labels]
    assert torch.cat([first, rest])[:, 0].tolist() == whole[:, 0].tolist()


def test_rest_bone_frames_take_the_forward_axis_second_for_arms_and_feet_without_toes_point_forward() -> None:
    """:mod:`.rig`: "second axis: ... its forward axis (arms)", "forward = lateral x up"; "a foot without toes points
    forward". The canonical T-pose: lateral +X, up +Y, forward +X x +Y = +Z; its left upper arm's frame is (+X along
    the bone, +Z forward, +X x +Z = -Y); without toes, the foot's first axis is +Z."""
    arm = CanonicalRig(canonical_tpose()).rest_frames[SLOT["l_upperarm"]]
    torch.testing.assert_close(arm, torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]], dtype=F64))
    toeless_rig = CanonicalRig(_with_toes((0.0, 0.0, 0.0)))  # zero toe offsets: no toe to point at
    assert toeless_rig.rest_frames[SLOT["l_foot"]][:, 0].tolist() == pytest.approx([0.0, 0.0, 1.0], abs=1e-12)


@pytest.mark.parametrize(("thigh", "body_pose"), [((0.0, -0.42, 0.0), True), ((0.42, 0.0, 0.0), False),
                                                  ((0.0, -0.3, 0.3), True), ((0.0, 0.42, 0.0), False)])  # fmt: skip
def test_a_zero_pose_is_a_body_pose_when_both_thighs_point_down(thigh: tuple, body_pose: bool) -> None:
    """:func:`physical_zero_pose`: "both upper legs point down, away from the chest". Left knee offsets: straight
    down and 45 degrees forward-down are body poses; a thigh held out level (+X) or up along the spine is not."""
    sk = canonical_tpose()
    off = sk.offsets.clone()
    off[SLOT["l_leg"]] = torch.tensor(thigh, dtype=F64)
    assert physical_zero_pose(Skeleton(sk.names, sk.parents, off)) is body_pose


def test_the_stride_leg_is_thigh_plus_shin_and_the_leg_the_hips_height_over_the_ankles() -> None:
    """:func:`stride_leg`: "thigh plus shin, the leg from its hip joint to the ankle (mean of the sides)": the
    canonical T-pose's 0.42 + 0.40 = 0.82; with the right shin made 0.5, (0.82 + 0.92) / 2 = 0.87.
    :func:`leg_length`: "hips height above the feet" (ankles): 0.05 + 0.42 + 0.40 = 0.87, not the toes' 0.92."""
    off = canonical_tpose().offsets.clone()
    assert float(leg_length(off)) == pytest.approx(LEG, abs=1e-12)
    assert float(stride_leg(off)) == pytest.approx(0.82, abs=1e-12)
    off[SLOT["r_foot"]] = torch.tensor([0.0, -0.5, 0.0], dtype=F64)
    assert float(stride_leg(off)) == pytest.approx(0.87, abs=1e-12)


def test_canonical_locals_keep_the_hips_world_frame_and_invert_frames_from_locals() -> None:
    """:func:`canonical_locals`: "``Q_parent^T Q`` ... (hips: ``Q``)": the hips' local is its world frame, each other
    joint's its parent's transpose times its own (numpy, by hand), and :func:`frames_from_locals` undoes it."""
    rng = np.random.default_rng(7)
    frames_np = np.stack([_rot(rng.normal(size=3), rng.uniform(0.2, 2.0)) for _ in range(22)])
    frames = torch.from_numpy(frames_np)
    local = canonical_locals(frames)
    np.testing.assert_allclose(local[0].numpy(), frames_np[0], atol=1e-12)
    k, p = SLOT["l_forearm"], SLOT["l_upperarm"]
    np.testing.assert_allclose(local[k].numpy(), frames_np[p].T @ frames_np[k], atol=1e-12)
    torch.testing.assert_close(frames_from_locals(local), frames)


def test_a_static_root_above_the_hips_is_placed_so_that_the_hips_land_where_asked() -> None:
    """:mod:`.rig`: "joints above the hips (a static dummy root) keep their rest world rotation and the root is
    translated so that the hips land where asked". Hips 0.5 along +X from a ``world`` root (no position channels
    of its own): hips wanted at (1, 2, 3) put the root at (0.5, 2, 3)."""
    sk = canonical_tpose()
    offsets = torch.cat([torch.zeros(1, 3, dtype=F64), sk.offsets])
    offsets[1, 0] = 0.5
    rig = CanonicalRig(Skeleton(["world", *sk.names], np.array([-1, *(p + 1 for p in sk.parents.tolist())]), offsets))
    root, trans = rig.place_root(torch.tensor([[1.0, 2.0, 3.0]], dtype=F64))
    assert trans is None and root[0].tolist() == pytest.approx([0.5, 2.0, 3.0], abs=1e-12)


def test_the_network_s_rotation_multiplies_the_source_s_on_the_right() -> None:
    """:mod:`.model`: "a quaternion that multiplies the source's canonical local rotation (``q^B = q^A * delta``,
    ``delta = normalize(1 + out)``)". A head answering ``out = delta - (1, 0, 0, 0)`` for the left forearm, delta
    a 0.7 rad turn about (1, 2, 3): the target local is ``L_A R(delta)`` (Rodrigues), not ``R(delta) L_A``."""
    net = NKN(TINY)
    axis = np.array([1.0, 2.0, 3.0]) / math.sqrt(14.0)
    delta = np.concatenate([[math.cos(0.35)], math.sin(0.35) * axis])
    j = SLOT["l_forearm"]
    last = net.head[2]
    assert isinstance(last, nn.Linear)
    with torch.no_grad():
        last.bias[j * 4 : j * 4 + 4] = _t(delta - np.array([1.0, 0.0, 0.0, 0.0]))
    rng = np.random.default_rng(11)
    local = _t(np.stack([_rot(rng.normal(size=3), rng.uniform(0.1, 1.0)) for _ in range(66)])).reshape(1, 3, 22, 3, 3)
    off = canonical_tpose().offsets.float()[None]
    inputs = (local, _t(rng.normal(size=(1, 3, 3))), torch.zeros(1, 3, 4), off, torch.tensor([LEG]), off, torch.tensor([LEG]))
    out, _, state = net(*inputs, FPS)
    want = inputs[0][0, :, j].numpy() @ _rot(axis, 0.7)
    np.testing.assert_allclose(out[0, :, j].detach().numpy(), want, atol=1e-5)
    assert state.hips is not None and state.hips.tolist() == inputs[1][:, -1].tolist()  # the previous hips: the last


def test_the_heading_of_a_frame_pitched_87_degrees_up_is_still_its_yaw() -> None:
    """:func:`heading`: yaw-only, "turning canonical +Z onto the facing direction", the identity only "facing straight
    up or down (no horizontal part)". A hips frame facing +X (yaw 90 degrees) pitched 87 degrees up keeps a
    horizontal part of sin(3 deg) along +X: its heading is the 90-degree yaw about +Y (Rodrigues)."""
    frame = _t(_rot((0.0, 1.0, 0.0), math.pi / 2) @ _rot((1.0, 0.0, 0.0), -math.radians(87.0)))
    assert float(frame[:, 2][0]) == pytest.approx(math.sin(math.radians(3.0)), abs=1e-6)
    np.testing.assert_allclose(heading(frame).numpy(), _rot((0.0, 1.0, 0.0), math.pi / 2), atol=1e-6)


def test_the_hips_velocity_feature_is_in_leg_lengths_per_second() -> None:
    """:mod:`.model`'s features: "the hips velocity in the heading frame and its height (in source leg lengths per
    second and leg lengths)". Facing +Z (identity rotations), hips moving 0.1 per frame along +Z at 30 fps with a
    leg of 0.87: velocity (0, 0, 3 / 0.87) after the first frame, height 0.9 / 0.87."""
    net = NKN(TINY)
    local = torch.eye(3).expand(1, 3, 22, 3, 3)
    hips = _t([[0.0, 0.9, 0.0], [0.0, 0.9, 0.1], [0.0, 0.9, 0.2]])[None]
    x, _ = net.features(local, hips, torch.zeros(1, 3, 4), torch.zeros(1, 66), torch.tensor([LEG]), FPS, None)
    assert x[0, 2, 132:136].tolist() == pytest.approx([0.0, 0.0, 3.0 / LEG, 0.9 / LEG], rel=1e-5, abs=1e-6)


@pytest.mark.parametrize(("fps", "warns"), [(25.0, True), (31.0, False)])
def test_the_nkn_warns_about_a_stream_more_than_5_percent_off_its_training_rate(fps: float, warns: bool) -> None:
    """:mod:`.retargeter`: the NKN "reads a clip more than 5 % off its 30 fps training rate at that rate"; a stream
    at another rate is warned about. 25 fps is 16.7 % off (warned), 31 fps 3.3 % (not)."""
    sk = canonical_tpose()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Retargeter(sk, sk, "nkn", model=NKN(TINY), fps=fps, runtime="torch")
    assert any("fps steps" in str(w.message) for w in caught) is warns


def _stepped_root(target: Skeleton, hips: tuple[float, float, float], **options: float) -> list[float]:
    """The root of one streamed frame of the canonical T-pose at rest, its hips at ``hips`` on ``floor`` 0, by copy."""
    r = Retargeter(canonical_tpose(), target, "copy", floor=0.0, runtime="torch", **options)  # type: ignore[arg-type]
    return r.step(quat_identity((22,), dtype=F64), torch.tensor(hips, dtype=F64))[1].tolist()


def test_a_stream_stands_on_the_target_floor_and_travels_by_the_stride_legs() -> None:
    """``target_floor``: "Height the result's feet stand on"; ``copy``: "their travel ... by the ratio of the stride
    legs, thigh plus shin". Onto itself with ``target_floor`` 0.3: hips 0.92 up go to 1.22. Onto thighs and shins
    doubled (stride legs 0.82 -> 1.64, ratio 2; the leg ratio is 1.69 / 0.87): x 0.3, z -0.6 go to 0.6, -1.2."""
    sk = canonical_tpose()
    assert _stepped_root(sk, (0.1, 0.92, -0.2), target_floor=0.3) == pytest.approx([0.1, 1.22, -0.2], abs=1e-9)
    off = sk.offsets.clone()
    off[[SLOT["l_leg"], SLOT["l_foot"], SLOT["r_leg"], SLOT["r_foot"]]] *= 2.0
    root = _stepped_root(Skeleton(sk.names, sk.parents, off), (0.3, 0.92, -0.6))
    assert [root[0], root[2]] == pytest.approx([0.6, -1.2], abs=1e-9)


def test_a_non_finite_floor_is_refused() -> None:
    """The Retargeter's ``floor`` is "a finite number or None": NaN and infinity are refused up front."""
    for bad in (math.nan, math.inf):
        with pytest.raises(RetargetError, match="floor must be a finite number"):
            Retargeter(canonical_tpose(), canonical_tpose(), "copy", floor=bad)


def _standing(root_y: list[float], x: float = 0.0) -> Motion:
    sk = canonical_tpose()
    root = torch.tensor([[x, y, 0.0] for y in root_y], dtype=F64)
    return Motion(sk, quat_identity((len(root_y), 22), dtype=F64), root, 30.0)


def test_bone_length_variants_span_the_documented_range() -> None:
    """README: Bandai variants with "spine, arms, hip width, thigh, shin, foot each x U(0.7, 1.4)": over 200 draws the
    spine's factor reaches below 0.75 and above 1.35, never outside [0.7, 1.4]."""
    off, g = canonical_tpose().offsets, torch.Generator().manual_seed(0)
    f = torch.stack([variant_offsets(off, g)[SLOT["spine1"], 1] / off[SLOT["spine1"], 1] for _ in range(200)])
    assert 0.7 <= float(f.min()) < 0.75 and 1.35 < float(f.max()) <= 1.4


def test_an_encoded_training_clip_stands_its_lowest_foot_joint_on_zero() -> None:
    """:func:`encode_clip`: "hips positions (floor: the lowest foot or toe joint, moved to 0)". The canonical T-pose
    standing still with its hips 1.5 up has its toes (its lowest foot joints) 0.92 below them: hips at 0.92."""
    clip = encode_clip(_standing([1.5] * 4), CanonicalRig(canonical_tpose()))
    assert clip["hips"][:, 1].tolist() == pytest.approx([0.92] * 4, abs=1e-6)


def test_the_robot_s_feet_stand_on_the_ground_in_nine_frames_of_ten() -> None:
    """:func:`make_feasible`: "in nine frames out of ten, the lowest corner of the foot boxes ... is on or above the
    ground plane y = 0 and the stance feet touch it; the remaining frames are lifted just enough". The humanoid's
    root rising 0.05 per frame over 21 frames: the 10 % quantile is frame 2's, corners end at max(0.05 i - 0.1, 0)."""
    sk = humanoid_skeleton()
    root = torch.tensor([[0.0, 1.0 + 0.05 * i, 0.0] for i in range(21)], dtype=F64)
    out = make_feasible(Motion(sk, quat_identity((21, sk.num_joints), dtype=F64), root, 30.0))
    world, pos = out.world()
    centre, half = (torch.tensor(v, dtype=F64) for v in FOOT_BOX)
    corners = centre + torch.tensor([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=F64) * half
    lows = [(pos[:, j, None] + (world[:, j, None] @ corners[..., None])[..., 0])[..., 1].min(-1).values
            for j in (sk.names.index("right_ankle"), sk.names.index("left_ankle"))]  # fmt: skip
    lowest = torch.stack(lows, -1).min(-1).values
    assert lowest.tolist() == pytest.approx([max(0.05 * i - 0.1, 0.0) for i in range(21)], abs=1e-3)


def test_reference_error_is_measured_about_the_hip_centre() -> None:
    """:mod:`.evaluate`: "canonical joint positions relative to the hip centre (the midpoint of the upper legs) are
    compared": a take moved 1 along +X against itself differs by nothing about its hip centre."""
    err = reference_error(_standing([0.92] * 3, x=1.0), _standing([0.92] * 3), CanonicalRig(canonical_tpose()))
    assert err["overall"] == pytest.approx(0.0, abs=1e-12)


def test_skating_is_horizontal_and_penetration_is_the_lowest_foot_joint_s_depth() -> None:
    """``skate``: "horizontal speed of the target's feet ... while the source's are planted"; ``penetration``: "mean
    depth of the lowest foot or toe joint below the floor". Source standing still (planted): a result rising skates
    0; one standing 0.05 low (toes at -0.05, ankles at 0) penetrates 0.05 / h."""
    rig = CanonicalRig(canonical_tpose())
    source = _standing([0.92] * 4)
    rising = proportion_metrics(source, _standing([0.92 + 0.01 * k for k in range(4)]), rig, rig)
    assert rising["skate"] == pytest.approx(0.0, abs=1e-12)
    sunk = proportion_metrics(source, _standing([0.87] * 4), rig, rig)
    assert sunk["penetration"] == pytest.approx(0.05 / rig.height, abs=1e-12)


@pytest.mark.parametrize(("degrees", "share"), [(7.0, 1.0), (3.0, 0.0)])
def test_a_hinge_more_than_5_degrees_off_its_axis_is_a_violation(degrees: float, share: float) -> None:
    """``limits``: "the share of knee and elbow frames whose rotation leaves the URDF's 1-DoF hinge (off-axis part
    above 5 degrees) or its angle range". A right knee bent 0.5 rad about its +z hinge and turned 7 degrees about
    x is off its hinge in every frame; 3 degrees is within."""
    sk = humanoid_skeleton()
    rot = quat_identity((2, sk.num_joints), dtype=F64)
    turn = _rot((0.0, 0.0, 1.0), -0.5) @ _rot((1.0, 0.0, 0.0), math.radians(degrees))
    rot[:, sk.names.index("right_knee")] = matrix_to_quat(torch.from_numpy(turn))
    assert hinge_violations(Motion(sk, rot, torch.zeros(2, 3, dtype=F64), 30.0), {"right_knee": (-3.14, 0.0)}) == share
