"""NKN's loss terms and its two pieces of heading geometry against values worked out by hand.

Every loss test drives :class:`NKNTrainer` with a scripted network (it answers the trainer's three calls with motion
chosen here) on the canonical T-pose skeleton, whose numbers are short enough to work with on paper: leg length
0.87 (hips to hip joint 0.05 down, thigh 0.42, shin 0.40), ankles 0.87 and toes 0.92 below the hips, every bone
frame the identity in the T-pose, so a joint's position under identity rotations is the sum of the offsets above
it. Source and target are the same skeleton (equal values in separate tensors), so the copied hips the network
corrects are the source's own (leg, sole and stride ratios all 1).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scripted_nkn import ScriptedNKN  # tests/helpers
from torch import Tensor

from skelanim.retarget.loss import LossWeights, NKNTrainer
from skelanim.retarget.model import NKN, NKNConfig, heading
from skelanim.retarget.rig import SLOT, canonical_tpose

TINY = NKNConfig(hidden=16, disc_hidden=8)
LEG = 0.87  # 0.05 + 0.42 + 0.40, read off canonical_tpose()'s offsets
FPS = 30.0


def _rot(axis, angle: float) -> np.ndarray:
    """Rodrigues' closed form: the rotation by ``angle`` (right-handed) about ``axis`` (any length)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * k + (1.0 - math.cos(angle)) * (k @ k)


def _t(a) -> Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float32)


def _batch(hips: Tensor, local: Tensor | None = None, contacts: Tensor | None = None) -> dict[str, Tensor]:
    """A training batch of ``(B, T, 3)`` source hips on the canonical T-pose skeleton for source and target."""
    b, t = hips.shape[:2]
    off = canonical_tpose().offsets.float().expand(b, -1, -1)
    local = torch.eye(3).expand(b, t, 22, 3, 3).clone() if local is None else local
    return {"src_local": local, "src_hips": hips, "contacts": torch.zeros(b, t, 4) if contacts is None else contacts,
            "src_off": off.clone(), "src_leg": torch.full((b,), LEG), "tgt_off": off.clone(),
            "tgt_leg": torch.full((b,), LEG), "real_local": local.clone(), "real_hips": hips.clone(),
            "fps": torch.tensor(FPS)}  # fmt: skip


def _parts(batch: dict[str, Tensor], adv: float = 0.0, **answers: tuple[Tensor, Tensor]) -> dict[str, float]:
    model = NKNTrainer(TINY, LossWeights(adv=adv))
    model.net = ScriptedNKN(batch, **answers)  # type: ignore[assignment]
    with torch.no_grad():
        _, parts = model(batch)
    return parts


def _random_locals(b: int, t: int, seed: int) -> Tensor:
    rng = np.random.default_rng(seed)
    rows = [_rot(rng.normal(size=3), rng.uniform(0.1, 1.0)) for _ in range(b * t * 22)]
    return _t(np.stack(rows)).reshape(b, t, 22, 3, 3)


def _hips(*rows) -> Tensor:
    """``(1, T, 3)`` hips from rows of (x, y, z)."""
    return _t(rows)[None]


# ---------------------------------------------------------------------------------------------------------- cyc


def test_cycle_term_is_the_hips_shift_and_the_rotation_change_of_the_way_back():
    """Coming back ``A -> B -> A`` with the hips shifted by ``d`` and the head (a leaf: it moves no joint) turned by
    0.5 rad costs, per the docstring's reconstruction form, every joint's squared shift in leg lengths,
    ``|d|^2 / l^2``, plus 0.1 times the head's squared Frobenius change averaged over the 22 joints:
    ``||L R - L||^2 = ||R - I||^2 = 2 (3 - tr R) = 4 (1 - cos 0.5)``."""
    local = _random_locals(2, 4, seed=1)
    hips = _t(np.random.default_rng(2).normal(size=(2, 4, 3))) + _t([0.0, 1.0, 0.0])
    batch = _batch(hips, local)
    d = np.array([0.03, -0.02, 0.05])
    back = local.clone()
    back[:, :, SLOT["head"]] = local[:, :, SLOT["head"]] @ _t(_rot([1.0, 2.0, -0.5], 0.5))
    parts = _parts(batch, ba=(back, hips + _t(d)))
    expected = float(d @ d) / LEG**2 + 0.1 * 4 * (1 - math.cos(0.5)) / 22
    assert parts["cyc"] == pytest.approx(expected, rel=1e-4)
    assert parts["rec"] == pytest.approx(0.0, abs=1e-10)  # the way A -> A was scripted as the input itself


# -------------------------------------------------------------------------------------------------------- skate


def test_skating_counts_only_frames_planted_now_and_before():
    """All four feet touch down at frame 1 (contacts 0, 1, 1, 1) and the target's hips (so every foot) move by ``u``
    along x between frames 0-1 and 2-3. The step 0-1 lands the foot: it is no skate (the foot was not planted the
    frame before). Planted pairs are steps 1-2 (still) and 2-3 (speed ``v = u fps / l``): mean ``v^2 / 2``."""
    u = 0.01
    hips = _hips((0, 1, 0), (u, 1, 0), (u, 1, 0), (2 * u, 1, 0))
    contacts = _t([0.0, 1.0, 1.0, 1.0])[None, :, None].expand(1, 4, 4).clone()
    batch = _batch(_hips((0, 1, 0), (0, 1, 0), (0, 1, 0), (0, 1, 0)), contacts=contacts)
    parts = _parts(batch, ab=(batch["src_local"], hips))
    v = u * FPS / LEG
    assert parts["skate"] == pytest.approx(v**2 / 2, rel=1e-4)


@pytest.mark.parametrize(("direction", "moves"), [((1, 0, 0), True), ((0, 0, 1), True), ((0, 1, 0), False)])
def test_skating_is_horizontal_speed_only(direction, moves):
    """Planted feet (all contacts on) carried by the target's hips at ``u`` per frame: along x or z (the floor's
    axes, up is +Y) they skate at ``v = u fps / l``, cost ``v^2``; straight up they do not slide at all: 0."""
    u = 0.01
    step = u * np.array(direction, dtype=np.float64)
    hips = _t(np.array([0.0, 1.0, 0.0]) + np.arange(5)[:, None] * step)[None]
    batch = _batch(_hips(*[(0, 1, 0)] * 5), contacts=torch.ones(1, 5, 4))
    parts = _parts(batch, ab=(batch["src_local"], hips))
    assert parts["skate"] == pytest.approx((u * FPS / LEG) ** 2 if moves else 0.0, rel=1e-4, abs=1e-10)


# ---------------------------------------------------------------------------------------------------------- pen


@pytest.mark.parametrize("height", [1.0, 0.92, 0.8])
def test_penetration_is_the_depth_below_the_floor(height):
    """Target hips at ``h`` in the T-pose put the ankles at ``h - 0.87`` and the toes at ``h - 0.92``. Above the
    floor (h = 1.0, and the toes just on it at 0.92) nothing is paid; at h = 0.8 ankles sink 0.07 and toes 0.12:
    the mean over the four feet of the squared depth in leg lengths, ``((0.07 / l)^2 + (0.12 / l)^2) / 2``."""
    hips = _hips(*[(0.1, height, 0.2)] * 3)
    batch = _batch(_hips(*[(0, 1, 0)] * 3))
    parts = _parts(batch, ab=(batch["src_local"], hips))
    ankle, toe = max(0.0, 0.87 - height), max(0.0, 0.92 - height)
    assert parts["pen"] == pytest.approx(((ankle / LEG) ** 2 + (toe / LEG) ** 2) / 2, rel=1e-4, abs=1e-10)
    assert (parts["pen"] > 0) == (height < 0.92)


# ------------------------------------------------------------------------------------------------------- smooth


def test_a_constant_correction_is_smooth_and_a_ramp_pays_its_step():
    """The correction is ``delta = L_A^T L_B`` per joint and the hips' offset from the copy (in leg lengths). A
    correction that holds (every joint turned by its own fixed rotation, the hips shifted by a fixed ``e``, over a
    source that moves every frame) changes by nothing from frame to frame: 0. Hips shifted by ``k w`` at frame
    ``k`` change by ``w / l`` each frame: ``|w|^2 / l^2``."""
    local = _random_locals(2, 5, seed=3)
    hips = _t(np.random.default_rng(4).normal(size=(2, 5, 3))) + _t([0.0, 1.0, 0.0])
    batch = _batch(hips, local)
    fixed = _random_locals(1, 1, seed=5)[0, 0]  # (22, 3, 3), one rotation per joint
    turned = local @ fixed
    e, w = np.array([0.02, -0.01, 0.03]), np.array([0.01, 0.0, -0.02])
    held = _parts(batch, ab=(turned, hips + _t(e)))
    assert held["smooth"] == pytest.approx(0.0, abs=1e-10)
    assert held["reg"] > 0.01  # a correction there is, it just holds still
    ramp = _parts(batch, ab=(turned, hips + _t(np.arange(5)[:, None] * w)))
    assert ramp["smooth"] == pytest.approx(float(w @ w) / LEG**2, rel=1e-3)


# ---------------------------------------------------------------------------------------------------------- adv


@pytest.mark.parametrize("score", [0.3, -0.4])
def test_adversarial_terms_are_least_squares_against_real_one_and_fake_zero(score):
    """Least-squares GAN: the discriminator is pushed to score real windows 1 and the generator's windows 0,
    ``(D(real) - 1)^2 + D(fake)^2``; the generator to have its windows scored as real, ``(D(fake) - 1)^2``. A
    discriminator whose last layer answers the constant ``c`` whatever it sees gives ``adv = (c - 1)^2`` and
    ``disc = (c - 1)^2 + c^2``."""
    batch = _batch(_hips(*[(0.0, 1.0, 0.01 * k) for k in range(8)]))
    model = NKNTrainer(TINY, LossWeights(adv=0.02))
    model.net = ScriptedNKN(batch)  # type: ignore[assignment]
    with torch.no_grad():
        model.disc.out.weight.zero_()
        model.disc.out.bias.fill_(score)
        _, parts = model(batch)
    assert parts["adv"] == pytest.approx((score - 1) ** 2, rel=1e-5)
    assert parts["disc"] == pytest.approx((score - 1) ** 2 + score**2, rel=1e-5)


# -------------------------------------------------------------------------------------------------------- twist

#: Joints whose bone runs straight to one child in the T-pose, the bone's direction (the child's offset) and a
#: natural swing axis across it: the upper arm (along +x) raised forward about z, the shin (along -y) bent at the
#: knee about x, the spine (along +y) bent forward about x.
_BONES = {"l_upperarm": ("l_forearm", (0, 0, 1)), "l_leg": ("l_foot", (1, 0, 0)), "spine": ("spine1", (1, 0, 0))}


def _turned(about: str, angle: float) -> tuple[dict[str, Tensor], Tensor]:
    """A batch and its source's locals with each joint of :data:`_BONES` turned by ``angle`` about its bone
    (``about="bone"``) or across it (``"swing"``)."""
    local = _random_locals(1, 3, seed=6)
    batch = _batch(_hips(*[(0, 1, 0)] * 3), local)
    offsets = canonical_tpose().offsets.numpy()
    turned = local.clone()
    for joint, (child, swing) in _BONES.items():
        axis = offsets[SLOT[child]] if about == "bone" else swing
        assert abs(float(np.dot(offsets[SLOT[child]], swing))) < 1e-12  # the swing axis is across the bone
        turned[:, :, SLOT[joint]] = local[:, :, SLOT[joint]] @ _t(_rot(axis, angle))
    return batch, turned


def test_twist_term_is_the_squared_turn_about_each_bone():
    """Turning three bones by 0.3 rad about their own axes (the docstring: "the correction does not turn bones
    about their own axis (angle squared)") costs 0.3^2 for each of them, averaged over the 21 bones below the
    hips: ``3 * 0.09 / 21``."""
    batch, turned = _turned("bone", 0.3)
    parts = _parts(batch, ab=(turned, batch["src_hips"]))
    assert parts["twist"] == pytest.approx(3 * 0.3**2 / 21, rel=1e-4)


def test_twist_term_leaves_a_swing_free():
    """The same three bones swung by 0.3 rad across themselves (arm raised, knee bent, spine bent): the bones
    change direction but do not turn about themselves, and the twist term costs nothing (the rest of the
    regulariser still pays for the change)."""
    batch, turned = _turned("swing", 0.3)
    parts = _parts(batch, ab=(turned, batch["src_hips"]))
    assert parts["twist"] == pytest.approx(0.0, abs=1e-9)
    assert parts["reg"] == pytest.approx(3 * 4 * (1 - math.cos(0.3)) / 22, rel=1e-4)  # ||R - I||^2 per bone


# ------------------------------------------------------------------------------------------------------ heading


def _yaw(angle: float) -> np.ndarray:
    return _rot([0.0, 1.0, 0.0], angle)


def test_heading_of_a_frame_facing_x_is_a_quarter_turn_about_y():
    """A hips frame facing +X (its third column, the forward axis, is +X) is the canonical frame (facing +Z) turned
    by +90 degrees about +Y: ``[[0, 0, 1], [0, 1, 0], [-1, 0, 0]]``."""
    facing_x = _t([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    expected = _t([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    torch.testing.assert_close(heading(facing_x), expected, atol=1e-7, rtol=0)
    torch.testing.assert_close(heading(facing_x) @ _t([0.0, 0.0, 1.0]), _t([1.0, 0.0, 0.0]), atol=1e-7, rtol=0)


@pytest.mark.parametrize(
    ("yaw", "pitch", "roll"), [(0.4, 0.0, 0.0), (-2.0, 0.5, 0.0), (2.8, -0.7, 0.3), (-1.2, 1.2, -0.4)]
)
def test_heading_is_the_yaw_of_the_flattened_forward_axis(yaw, pitch, roll):
    """A frame yawed by ``psi`` after any pitch below 90 degrees and roll (``Ry(psi) Rx(pitch) Rz(roll)``) faces
    ``(sin psi, ., cos psi)`` once its forward axis is flattened: its heading is ``Ry(psi)`` (Rodrigues), a pure
    yaw that turns +Z onto that flattened forward direction."""
    frame = _yaw(yaw) @ _rot([1.0, 0.0, 0.0], pitch) @ _rot([0.0, 0.0, 1.0], roll)
    flat = frame[:, 2] * np.array([1.0, 0.0, 1.0])
    flat = flat / np.linalg.norm(flat)
    np.testing.assert_allclose(flat, [math.sin(yaw), 0.0, math.cos(yaw)], atol=1e-12)
    got = heading(torch.as_tensor(frame))
    np.testing.assert_allclose(got.numpy(), _yaw(yaw), atol=1e-12)
    np.testing.assert_allclose((got @ torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)).numpy(), flat, atol=1e-12)


def test_heading_of_a_frame_facing_straight_up_is_the_identity():
    """No horizontal forward part (forward +Y): no yaw to take, the identity (as ``atan2(0, 0) = 0``)."""
    up = torch.as_tensor(_rot([1.0, 0.0, 0.0], -math.pi / 2))
    assert torch.allclose(up[:, 2], torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64), atol=1e-12)
    torch.testing.assert_close(heading(up), torch.eye(3, dtype=torch.float64))


# --------------------------------------------------------------------------------------------------- hips offset


def test_the_networks_hips_offset_is_in_the_heading_frame_and_target_leg_lengths():
    """A network whose last layer emits the fixed hips offset ``o = (0.1, 0, 0.2)`` (and no rotation change), onto
    a target twice the source's size (every offset doubled: leg 1.74, copied hips ``2 h``, the soles' lift
    ``0.10 - 2 * 0.05 = 0``), for a source facing +X (yaw +90 degrees): ``o`` is right 0.1 and forward 0.2 leg
    lengths in the facing frame, i.e. world ``Ry(90) o = (0.2, 0, -0.1)`` times 1.74, added to the copy."""
    torch.manual_seed(0)
    net = NKN(TINY)
    offset = _t([0.1, 0.0, 0.2])
    with torch.no_grad():
        net.head[-1].weight.zero_()
        net.head[-1].bias.zero_()
        net.head[-1].bias[-3:] = offset
    src = canonical_tpose().offsets.float()[None]
    local = torch.eye(3).expand(1, 4, 22, 3, 3).clone()
    local[:, :, 0] = _t(_yaw(math.pi / 2))
    hips = _t([[0.0, 0.95, 0.0], [0.02, 0.96, 0.0], [0.04, 0.95, 0.01], [0.06, 0.94, 0.0]])[None]
    leg = torch.tensor([LEG])
    out_local, out_hips, _ = net(local, hips, torch.zeros(1, 4, 4), src, leg, 2 * src, 2 * leg, FPS)
    expected = 2 * hips + _t([0.2, 0.0, -0.1]) * (2 * LEG)
    torch.testing.assert_close(out_hips, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(out_local, local, atol=1e-6, rtol=0)


def test_adversarial_terms_count_only_samples_whose_target_has_captured_motion():
    """``batch["captured"]``: a bone-length variant's "real" window is another skeleton's motion copied onto it, so its
    samples leave both adversarial terms; with none captured both are 0, with all the plain least-squares means
    (a constant discriminator answer ``c``: ``(c - 1)^2`` and ``(c - 1)^2 + c^2``)."""
    batch = _batch(_hips(*[(0.0, 1.0, 0.01 * k) for k in range(8)]))
    model = NKNTrainer(TINY, LossWeights(adv=0.02))
    model.net = ScriptedNKN(batch)  # type: ignore[assignment]
    size = batch["src_local"].shape[0]
    with torch.no_grad():
        model.disc.out.weight.zero_()
        model.disc.out.bias.fill_(0.3)
        _, none = model({**batch, "captured": torch.zeros(size, dtype=torch.bool)})
        _, every = model({**batch, "captured": torch.ones(size, dtype=torch.bool)})
    assert none["adv"] == 0.0 and none["disc"] == 0.0
    assert every["adv"] == pytest.approx(0.49, rel=1e-5) and every["disc"] == pytest.approx(0.58, rel=1e-5)
