"""Normalisation: scale, unit height, ground/origin placement, facing, checked with scipy rotations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

import skelanim
from skelanim import Motion, Skeleton
from skelanim.core.rotations import quat_apply, quat_multiply
from skelanim.errors import ShapeError, SkeletonError
from skelanim.ops import (
    face_forward,
    facing_directions,
    foot_contacts,
    normalize,
    root_relative,
    rotate_about_up,
    scale,
)


def z_up(skeleton: Skeleton) -> Skeleton:
    """The same body with Z up (Y-up offsets rotated by +90 degrees about X: y -> z, z -> -y)."""
    r = torch.tensor([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]], dtype=torch.float64)
    return Skeleton(
        skeleton.names,
        skeleton.parents,
        skeleton.offsets @ r.T,
        list(skeleton.channels),
        {k: r @ v for k, v in skeleton.end_sites.items()},
    )


def test_scale(motion, check_unchanged):
    done = check_unchanged(motion)
    out = scale(motion, 2.5)
    assert done()
    assert torch.allclose(out.positions(end_sites=True), 2.5 * motion.positions(end_sites=True), atol=1e-12)
    assert torch.equal(out.rotations, motion.rotations)
    assert out.height == pytest.approx(2.5 * motion.height)
    with pytest.raises(ShapeError):
        scale(motion, 0.0)
    with pytest.raises(ShapeError):
        scale(motion, float("nan"))


@pytest.mark.parametrize("factor", [10.0, 0.01])
def test_scale_keeps_the_unit_so_an_export_to_metres_scales_too(motion, factor):
    """A figure in centimetres in a file that names no unit: the unit guessed before scaling is pinned, so glTF's
    metres change by the factor (guessing again from the scaled height read 10x as millimetres, 0.01x as metres)."""
    from skelanim.io.gltf import export_scale

    assert 1.0 < motion.height < 3.0  # a human-sized figure in metres, made centimetres below
    bare = motion.copy(skeleton=motion.skeleton.scaled(100.0), root_positions=motion.root_positions * 100.0,
                       metadata={k: v for k, v in motion.metadata.items() if k != "units"})  # fmt: skip
    metres, unit = export_scale(bare)
    assert unit == "cm"
    scaled = scale(bare, factor)
    assert export_scale(scaled)[0] * scaled.height == pytest.approx(factor * metres * bare.height)
    named = scale(bare.copy(metadata={"units": "inch"}), factor)
    assert named.metadata["units"] == "inch"  # a unit the file names is kept
    from skelanim.ops import normalize

    tall = scale(normalize(bare), 170.0)  # had been labelled metres: a 170 m figure in glTF
    assert tall.metadata["units"] == "height"
    assert export_scale(tall)[0] * tall.height == pytest.approx(1.7, rel=1e-6)


def test_scale_joint_translations(helpers):
    m = helpers.random_motion(helpers.body_skeleton(), 10, translations=True)
    out = scale(m, 0.01)
    assert torch.allclose(out.positions(), 0.01 * m.positions(), atol=1e-14)


@pytest.mark.parametrize("zup", [False, True])
def test_normalize(zup, helpers, check_unchanged):
    skel = helpers.body_skeleton()
    if zup:
        skel = z_up(skel)
    m = helpers.random_motion(skel, 30)
    up = m.up_axis()
    assert up == (2 if zup else 1)
    done = check_unchanged(m)
    out = normalize(m)
    assert done()
    h = m.height
    assert out.height == pytest.approx(1.0, abs=1e-12)
    horiz = [a for a in range(3) if a != up]
    assert torch.allclose(out.root_positions[0, horiz], torch.zeros(2, dtype=torch.float64), atol=1e-12)
    p0 = out.positions(end_sites=True)[0]
    assert float(p0[:, up].min()) == pytest.approx(0.0, abs=1e-12)
    # the result is the original scaled by 1/h and translated by one constant vector
    a, b = out.positions(end_sites=True), m.positions(end_sites=True) / h
    shift = a[0, 0] - b[0, 0]
    assert torch.allclose(a, b + shift, atol=1e-12)
    assert float(shift[up]) == pytest.approx(-float(b[0, :, up].min()), abs=1e-12)

    no_ground = normalize(m, ground=False, height=2.0)
    assert torch.allclose(no_ground.root_positions[0, up], m.root_positions[0, up] / 2.0)
    assert torch.allclose(no_ground.root_positions[0, horiz], torch.zeros(2, dtype=torch.float64), atol=1e-12)
    with pytest.raises(ShapeError):
        normalize(m, height=0.0)


def test_root_relative():
    x = np.random.default_rng(0).normal(size=(4, 5, 6, 3))
    out = root_relative(x)
    assert isinstance(out, np.ndarray) and np.allclose(out, x - x[..., :1, :])
    assert np.all(out[..., 0, :] == 0)
    out_t = root_relative(torch.from_numpy(x), root=2)
    assert isinstance(out_t, torch.Tensor) and torch.allclose(out_t, torch.from_numpy(x - x[..., 2:3, :]))
    with pytest.raises(ShapeError):
        root_relative(np.zeros((4, 2)), root=5)
    assert np.allclose(root_relative(x, root=-1), x - x[..., -1:, :])  # counted from the end, as in Python


def feet_direction(motion: Motion, frame: int = 0) -> np.ndarray:
    """``(3,)`` horizontal unit direction the hand-built body's feet point in at ``frame``: ankle (``*Foot``) to toe
    (``*ToeBase``), both feet summed, the up component dropped. A second method for the facing, from the anatomy
    (the toes are in front of the ankles) instead of the left/right joints."""
    names, pos, up = motion.skeleton.names, motion.positions()[frame].numpy(), motion.up_axis()
    d = sum(pos[names.index(f"{s}ToeBase")] - pos[names.index(f"{s}Foot")] for s in ("Left", "Right"))
    d[up] = 0.0
    return d / np.linalg.norm(d)


def test_the_hand_built_body_faces_where_its_feet_point(helpers):
    """The facing direction against the skeleton's geometry, not against itself. The hand-built body
    (tests/ops/conftest.py) stands at rest with +Y up, its left hip at +X (offset (0.1, 0, 0), the right one at
    -X) and its toes 0.12 in front of its ankles along +Z. So it faces +Z: the way its feet point, and by hand
    ``(p_left - p_right) x up = (+X) x (+Y) = +Z``, the module's definition. Turned by a yaw ``t`` about +Y it faces
    ``(sin t, 0, cos t)``; stood with Z up (y -> z, z -> -y) it faces -Y."""
    rest = Motion.rest(helpers.body_skeleton(), 3)
    pos, names = rest.positions()[0].numpy(), rest.skeleton.names
    assert np.allclose(pos[names.index("LeftUpLeg")] - pos[names.index("RightUpLeg")], [0.2, 0.0, 0.0])
    assert np.allclose(np.cross([1.0, 0.0, 0.0], [0.0, 1.0, 0.0]), [0.0, 0.0, 1.0])
    assert np.allclose(feet_direction(rest), [0.0, 0.0, 1.0], atol=1e-12)
    forward_z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    assert torch.allclose(facing_directions(rest), forward_z.expand(3, 3), atol=1e-12)
    for yaw in (30.0, 90.0, -135.0, 180.0):
        t = math.radians(yaw)
        expected = np.array([math.sin(t), 0.0, math.cos(t)])
        turned = helpers.turned(rest, t)
        assert np.allclose(feet_direction(turned), expected, atol=1e-12)  # the turn itself, by the feet
        assert np.allclose(facing_directions(turned)[0].numpy(), expected, atol=1e-12), yaw
    z_rest = Motion.rest(z_up(helpers.body_skeleton()), 3)
    assert z_rest.up_axis() == 2 and np.allclose(feet_direction(z_rest), [0.0, -1.0, 0.0], atol=1e-12)
    assert np.allclose(facing_directions(z_rest)[0].numpy(), [0.0, -1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("yaw_deg", [0.0, 37.0, 90.0, 179.0, -120.0])
def test_face_forward(yaw_deg, helpers, check_unchanged):
    base = helpers.random_motion(helpers.body_skeleton(), 20, amplitude=0.05)
    # at rest the body faces +Z (left side towards +X); turn it by a known yaw about +Y
    m = helpers.turned(base, math.radians(yaw_deg))
    facing = facing_directions(m)[0]
    expected = Rotation.from_rotvec([0, math.radians(yaw_deg), 0]).apply(facing_directions(base)[0].numpy())
    assert np.allclose(facing.numpy(), expected, atol=1e-12)
    done = check_unchanged(m)
    out = face_forward(m)
    assert done()
    assert torch.allclose(facing_directions(out)[0], torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64), atol=1e-12)
    # independent check: the new positions are the old ones turned rigidly about the vertical line
    # through the first-frame root position, by the angle that takes the old facing to +Z
    angle = -math.atan2(float(facing[0]), float(facing[2]))
    pivot = m.root_positions[0].numpy()
    p = m.positions(end_sites=True).numpy()
    expected = Rotation.from_rotvec([0, angle, 0]).apply((p - pivot).reshape(-1, 3)).reshape(p.shape) + pivot
    assert np.allclose(out.positions(end_sites=True).numpy(), expected, atol=1e-12)
    assert torch.equal(out.rotations[:, 1:], m.rotations[:, 1:])
    # the checks above take the facing from facing_directions itself; these do not. The feet point forward: within
    # a few degrees of +Z after face_forward (observed at most 2.5 degrees for these small random joint rotations)
    assert float(feet_direction(out) @ [0.0, 0.0, 1.0]) > math.cos(math.radians(10.0))
    # and the body at rest (facing +Z, see above) turned by the yaw is turned back exactly
    rest = Motion.rest(helpers.body_skeleton(), 2)
    back = face_forward(helpers.turned(rest, math.radians(yaw_deg)))
    assert torch.allclose(back.positions(end_sites=True), rest.positions(end_sites=True), atol=1e-12)


def test_face_forward_other_directions_and_axes(helpers):
    m = helpers.turned(helpers.random_motion(helpers.body_skeleton(), 5), 1.0)
    rest = helpers.turned(Motion.rest(helpers.body_skeleton(), 2), 1.0)
    for direction, vec in (("+x", [1, 0, 0]), ("-z", [0, 0, -1]), ([1.0, 5.0, 1.0], [2**-0.5, 0, 2**-0.5])):
        got = facing_directions(face_forward(m, forward=direction))[0]
        assert torch.allclose(got, torch.tensor(vec, dtype=torch.float64), atol=1e-12)
        # independently of facing_directions: the feet point that way (exactly at rest, nearly in motion)
        assert np.allclose(feet_direction(face_forward(rest, forward=direction)), vec, atol=1e-12), direction
        assert float(feet_direction(face_forward(m, forward=direction)) @ vec) > math.cos(math.radians(10.0))
    with pytest.raises(ShapeError, match="parallel to the up axis"):
        face_forward(m, forward="+y")
    # Z-up: facing is measured about Z
    mz = helpers.random_motion(z_up(helpers.body_skeleton()), 5, amplitude=0.05)
    out = face_forward(mz, forward="+x")
    got = facing_directions(out)[0]
    assert torch.allclose(got, torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), atol=1e-12)
    assert torch.allclose(out.root_positions[:, 2], mz.root_positions[:, 2])
    z_rest = Motion.rest(z_up(helpers.body_skeleton()), 2)  # faces -Y (see above)
    assert np.allclose(feet_direction(face_forward(z_rest, forward="+x")), [1.0, 0.0, 0.0], atol=1e-12)


def _stood_along_z(motion: Motion) -> Motion:
    """The motion turned by +90 degrees about X (y -> z), root rotation and trajectory together."""
    q = torch.from_numpy(Rotation.from_rotvec([math.pi / 2, 0, 0]).as_quat(scalar_first=True))
    q = q.expand(motion.num_frames, 4)
    rot = motion.rotations.clone()
    rot[:, 0] = quat_multiply(q, rot[:, 0])
    return motion.copy(rotations=rot, root_positions=quat_apply(q, motion.root_positions))


def test_an_up_axis_given_overrides_the_guess(helpers):
    """A Y-up body turned to stand along Z: whatever the guess says (it weighs the pose against the pelvis's
    travel, test_skeleton.py), the caller can say Z."""
    upright = helpers.random_motion(helpers.body_skeleton(), 12, amplitude=0.05)
    standing_z = _stood_along_z(upright)
    assert standing_z.height_along(2) == pytest.approx(upright.height, abs=1e-9)
    out = normalize(standing_z, up_axis=2)
    assert out.height_along(2) == pytest.approx(1.0, abs=1e-9)
    assert float(out.positions(end_sites=True)[0, :, 2].min()) == pytest.approx(0.0, abs=1e-12)
    faced = face_forward(standing_z, forward="+y", up_axis=2)
    got = facing_directions(faced, up_axis=2)[0]
    assert torch.allclose(got, torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64), atol=1e-12)
    with pytest.raises(ShapeError, match="axis must be 0, 1 or 2"):
        normalize(standing_z, up_axis=3)
    # foot contacts' thresholds scale with the height along the axis given: standing still, both feet are down
    swaying = helpers.random_motion(helpers.body_skeleton(), 30, amplitude=0.05, freq_range=(0.3, 0.6))
    still = _stood_along_z(swaying.copy(root_positions=swaying.root_positions[:1].expand(30, 3)))
    assert bool(foot_contacts(still, up_axis=2).all())


def test_rotate_about_up_matches_scipy(motion):
    out = rotate_about_up(motion, 0.7, pivot=np.array([1.0, 0.0, 2.0]))
    p = motion.positions().numpy()
    expected = Rotation.from_rotvec([0, 0.7, 0]).apply((p - [1, 0, 2]).reshape(-1, 3)).reshape(p.shape) + [1, 0, 2]
    assert np.allclose(out.positions().numpy(), expected, atol=1e-12)


def test_rotate_takes_a_rotation_and_refuses_what_is_none(motion):
    """``rotate`` had used its quaternion as given (a zero one dropped the root's turn, ``[2, 0, 0, 0]`` was stored
    with norm 2) and projected any matrix onto a rotation (a random one moved the pose 350 cm): now a quaternion
    is normalised, and a zero one, a scaled, sheared or reflecting matrix, or NaN are one-line errors."""
    from skelanim.ops import rotate

    r = Rotation.from_rotvec([0.3, -0.5, 0.2])
    x, y, z, w = r.as_quat()
    want = rotate(motion, r.as_matrix()).positions()
    for given in (np.array([w, x, y, z]), 2.5 * np.array([w, x, y, z])):
        out = rotate(motion, given)
        torch.testing.assert_close(out.positions(), want, rtol=0, atol=1e-12)
        torch.testing.assert_close(out.rotations.norm(dim=-1), torch.ones(out.rotations.shape[:-1], dtype=torch.float64))
    p = motion.positions().numpy()
    assert np.allclose(want.numpy(), r.apply(p.reshape(-1, 3)).reshape(p.shape), atol=1e-12)  # scipy's turn
    for bad, words in [(np.zeros(4), "zero quaternion"), (1.01 * r.as_matrix(), "no rotation"),
                       (np.diag([1.0, 1.0, -1.0]), "determinant -1"), (np.full(4, np.nan), "NaN")]:  # fmt: skip
        with pytest.raises(ShapeError, match=words):
            rotate(motion, bad)


def test_facing_needs_pairs():
    skel = Skeleton(["Root", "Head"], np.array([-1, 0]), torch.tensor([[0, 0, 0], [0, 1.0, 0]]))
    with pytest.raises(SkeletonError, match="left/right"):
        face_forward(Motion.rest(skel, 2))


# ------------------------------------------------------------------------------------------ real data
@pytest.mark.parametrize(
    "relative",
    ["bandai_namco_1/dataset-1_walk_normal_001.bvh", "cmu_cgspeed_mb/01_01.bvh", "cmu_iclone_ccrig/002_01.bvh"],
)
def test_normalize_and_face_forward_real(relative, real):
    m = real(relative)
    out = face_forward(normalize(m))
    assert out.height == pytest.approx(1.0, abs=1e-9)
    up = out.up_axis()
    p0 = out.positions(end_sites=True)[0]
    assert float(p0[:, up].min()) == pytest.approx(0.0, abs=1e-9)
    target = torch.zeros(3, dtype=torch.float64)
    target[2 if up != 2 else 1] = 1.0
    assert torch.allclose(facing_directions(out)[0], target, atol=1e-9)
    # the body (Bandai's Hips, not its static joint_Root 4 m away) at the horizontal origin, and turned in place
    pelvis = m.skeleton.pelvis
    assert m.skeleton.names[pelvis] == {"bandai": "Hips", "cmu_cgspeed_mb": "Hips", "cmu_iclone_ccrig": "CC_Base_Hip"}[
        relative.split("/")[0].removesuffix("_namco_1")]  # fmt: skip
    horizontal = [a for a in range(3) if a != up]
    assert float(p0[pelvis, horizontal].abs().max()) < 1e-9
    turned = face_forward(m)
    before, after = m.positions()[0, pelvis], turned.positions()[0, pelvis]
    assert float((before - after).abs().max()) < 1e-9 * m.height
    # geometry is kept: pairwise distances at a later frame scale by exactly 1/height
    k = m.num_frames // 2
    pk, qk = m.positions()[k], out.positions()[k]
    d0 = (pk[:, None] - pk[None]).norm(dim=-1) / m.height
    d1 = (qk[:, None] - qk[None]).norm(dim=-1)
    assert torch.allclose(d0, d1, atol=1e-9)


@pytest.mark.parametrize(
    "relative, way",
    [
        ("bandai_namco_1/dataset-1_walk_normal_001.bvh", 1.0),
        ("bandai_namco_1/dataset-1_walk-back_normal_001.bvh", -1.0),
        ("xia_style/neutral_01_000.bvh", 1.0),
        ("cmu_iclone_ccrig/002_01.bvh", 1.0),
    ],
)
def test_real_walks_faced_forward_travel_along_it(mocap_files, relative, way):
    """Real walks, Y up, turned by face_forward: over the first second the pelvis travels along +Z, the documented
    default forward (backwards for Bandai's walk-back: the facing is the body's, not the way it goes), and along +X
    when asked for +X. Observed within 6 degrees (the iClone walk: 7 degrees) of it; a facing off by 90 or 180
    degrees is not within 20."""
    (path,) = mocap_files([relative])
    m = skelanim.load(path)
    assert m.up_axis() == 1
    for direction, vec in (("+z", np.array([0.0, 0.0, 1.0])), ("+x", np.array([1.0, 0.0, 0.0]))):
        out = face_forward(m, forward=direction)
        pelvis = out.positions()[:, out.skeleton.pelvis].numpy()
        travel = pelvis[min(round(m.fps), m.num_frames - 1)] - pelvis[0]
        travel[1] = 0.0
        assert np.linalg.norm(travel) > 0.3 * m.height  # it walks
        cos = float(travel @ (way * vec)) / float(np.linalg.norm(travel))
        assert cos > math.cos(math.radians(20.0)), (direction, math.degrees(math.acos(min(cos, 1.0))))


def test_upside_down_data_reads_with_its_up_pointing_down(mocap_files):
    """Camera-space poses have Y down. A CMU walk turned 180 degrees about X (``up_direction`` (1, -1)) keeps its foot
    contacts, normalises to the turned image of the normalised walk (feet on the floor, not the head) and faces the
    turned way; a bare array is read so with ``up_axis="-y"``. Each ignored the sign: no contact at all, the head on
    the floor, facing reversed."""
    import skelanim
    from skelanim.core.rotations import axis_angle_to_quat, quat_multiply
    from skelanim.ops import foot_contacts

    (path,) = mocap_files(["cmu_cgspeed_mb/01_01.bvh"])
    walk = skelanim.load(path)[:240]
    flip = torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64)  # 180 degrees about X
    q = axis_angle_to_quat(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64), torch.tensor(math.pi, dtype=torch.float64))
    rot = walk.rotations.clone()
    rot[:, 0] = quat_multiply(q.expand_as(rot[:, 0]), rot[:, 0])
    turned = walk.copy(rotations=rot, root_positions=walk.root_positions * flip)
    assert turned.up_direction() == (1, -1.0)
    contacts = foot_contacts(walk)
    assert 0.3 < float(contacts.double().mean()) and torch.equal(foot_contacts(turned), contacts)
    assert float((normalize(turned).positions() - normalize(walk).positions() * flip).abs().max()) < 1e-9
    assert float((facing_directions(turned) - facing_directions(walk) * flip).abs().max()) < 1e-9
    turned_forward = face_forward(turned, forward="-z")
    assert float((facing_directions(turned_forward)[0] - torch.tensor([0.0, 0.0, -1.0], dtype=torch.float64)).abs().max()) < 1e-9
    feet = walk.skeleton.indices(["LeftToeBase", "RightToeBase"])
    array, array_turned = walk.positions().numpy(), turned.positions().numpy()
    expected = foot_contacts(array, fps=walk.fps, joints=feet, up_axis="y")
    assert np.array_equal(foot_contacts(array_turned, fps=walk.fps, joints=feet, up_axis="-y"), expected)


def test_a_normalised_motion_has_no_length_unit(mocap_files):
    """Unit height in the file's unit read as 1 cm tall in a glTF export; a normalised motion names no unit, so the
    export reads its unit height as metres."""
    import skelanim
    from skelanim.io.gltf import export_scale

    (path,) = mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])
    walk = skelanim.load(path)[:20]
    assert export_scale(scale(walk, 1.0 / walk.height))[1] == "cm"  # scaled, it stays in its unit (by design)
    out = normalize(walk)
    assert out.metadata["units"] == "height" and export_scale(out) == (1.0, "m")


def test_the_default_height_is_the_clips_own_and_stature_gives_one_scale_per_body(mocap_files) -> None:
    """The ``height`` parameter's account: by default each clip is divided by its own extent, so the DeepMimic
    crawl's body comes out 3.1 times its walk's (the same URDF, bone for bone) and a Bandai bow 0.91 times the same
    actor's walk; with ``height=motion.stature`` every clip of a body gets the one scale (bone lengths equal)."""
    import skelanim
    from skelanim import ops

    walk, crawl = (skelanim.load(p) for p in mocap_files(["deepmimic/humanoid3d_walk.txt",
                                                           "deepmimic/humanoid3d_crawl.txt"]))  # fmt: skip
    bow, bandai_walk = (skelanim.load(p) for p in mocap_files(["bandai_namco_1/dataset-1_bow_normal_001.bvh",
                                                                "bandai_namco_1/dataset-1_walk_normal_001.bvh"]))

    # the body's scale after normalising: its stature, which no pose changes (the same bones: the same stature)
    assert ops.normalize(crawl).stature / ops.normalize(walk).stature == pytest.approx(3.14, abs=0.01)
    assert ops.normalize(bow).stature / ops.normalize(bandai_walk).stature == pytest.approx(0.91, abs=0.01)
    assert crawl.stature == walk.stature and bow.stature == pytest.approx(bandai_walk.stature, rel=1e-6)
    for motion in (crawl, walk, bow, bandai_walk):
        assert ops.normalize(motion, height=motion.stature).stature == pytest.approx(1.0, rel=1e-12)


def test_face_forward_of_rotations_with_a_gradient_warns_nothing(motion) -> None:
    """The turn's angle is a number; ``float()`` of a tensor that carries a gradient had printed torch's warning about
    it, which reads like the caller's mistake. The turned rotations still carry the gradient."""
    import warnings

    rotations = motion.rotations.clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turned = face_forward(motion.copy(rotations=rotations))
    turned.positions().sum().backward()
    assert rotations.grad is not None and bool(rotations.grad.abs().sum() > 0)


def test_to_units_converts_the_lengths_and_the_label(mocap_files, tmp_path) -> None:
    """A Bandai take (centimetres, by its stature) in metres: positions times 0.01 and labelled ``m``, so a glTF export
    (metres) writes the same figure as from the original, and back in centimetres it is the original; ``scale`` alone
    keeps the label (a 1.7 cm figure to an exporter)."""
    from skelanim import ops
    from skelanim.io.gltf import load as load_gltf

    walk = skelanim.load(mocap_files(["bandai_namco_1/dataset-1_walk_normal_001.bvh"])[0])[:20]
    metres = ops.to_units(walk, "metres")
    assert metres.metadata["units"] == "m" and ops.scale(walk, 0.01).metadata["units"] == "cm"
    torch.testing.assert_close(metres.positions(), walk.positions() * 0.01, rtol=1e-12, atol=1e-12)
    back = ops.to_units(metres, "cm")
    torch.testing.assert_close(back.positions(), walk.positions(), rtol=1e-12, atol=1e-9)
    skelanim.save(walk, tmp_path / "cm.glb")
    skelanim.save(metres, tmp_path / "m.glb")
    a, b = load_gltf(tmp_path / "cm.glb"), load_gltf(tmp_path / "m.glb")
    torch.testing.assert_close(a.positions(), b.positions(), rtol=0, atol=1e-6)
    inches = ops.to_units(walk, "in")
    torch.testing.assert_close(inches.positions(), walk.positions() / 2.54, rtol=1e-12, atol=1e-9)
    with pytest.raises(ShapeError, match="unknown length unit 'furlong'"):
        ops.to_units(walk, "furlong")
    with pytest.raises(ShapeError, match="no length unit"):
        ops.to_units(ops.normalize(walk), "m")
