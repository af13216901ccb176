"""The avatar encoder's arguments spelt as the rest of the library spells them: ``up_axis=`` (``1``, ``"y"``,
``"-z"``, the ops' parser) beside the ``up=(axis, sign)`` pair, a ready :class:`JointMapping` beside a dict, one
live frame ``(J, 4)``/``(J, 3)`` as :meth:`Retargeter.step` gives it, and one-line errors for the rest."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import skelanim
from skelanim.core.motion import Motion
from skelanim.core.rotations import axis_angle_to_quat
from skelanim.core.units import up_to_y_matrix
from skelanim.errors import ShapeError
from skelanim.retarget.mapping import MappingError, map_skeleton
from skelanim.retarget.rig import canonical_tpose
from skelanim.serve.vmc import AvatarEncoder, AvatarFrames, StreamError, avatar_frames


def _bent(frames: int = 4) -> Motion:
    """The canonical T-pose with every joint turned a little differently in every frame (no data needed)."""
    motion = Motion.rest(canonical_tpose(), frames, fps=30.0)
    gen = torch.Generator().manual_seed(7)
    axes = torch.randn(frames, motion.skeleton.num_joints, 3, generator=gen, dtype=torch.float64)
    angles = 0.4 * torch.rand(frames, motion.skeleton.num_joints, generator=gen, dtype=torch.float64)
    return motion.copy(rotations=axis_angle_to_quat(axes / axes.norm(dim=-1, keepdim=True), angles))


def _same(a: AvatarFrames, b: AvatarFrames) -> None:
    assert a.bones == b.bones and a.fps == b.fps
    assert a.rotations.shape == b.rotations.shape and a.positions.shape == b.positions.shape
    assert torch.allclose(a.rotations, b.rotations, atol=1e-12) and torch.allclose(a.positions, b.positions, atol=1e-12)


# ---------------------------------------------------------------------------------------------------- up_axis
@pytest.mark.parametrize(("up_axis", "direction"), [(1, (1, 1.0)), ("y", (1, 1.0)), ("+Y", (1, 1.0)),
                                                    ("-y", (1, -1.0)), ("z", (2, 1.0)), ("-z", (2, -1.0)),
                                                    (np.int64(0), (0, 1.0)), ("+x", (0, 1.0))])  # fmt: skip
def test_up_axis_is_spelt_as_in_ops_and_means_what_up_means(up_axis, direction):
    motion = _bent(2)
    encoder = AvatarEncoder(motion, up_axis=up_axis)
    assert torch.equal(encoder.turn, up_to_y_matrix(*direction))
    _same(avatar_frames(motion, up_axis=up_axis), avatar_frames(motion, up=direction))


def test_giving_both_up_and_up_axis_is_one_line():
    for call in (lambda: AvatarEncoder(_bent(1), up=(1, 1.0), up_axis="y"),
                 lambda: avatar_frames(_bent(1), up=(2, 1.0), up_axis="z")):  # fmt: skip
        with pytest.raises(StreamError, match="up=.*or up_axis=.*not both") as err:
            call()
        assert "\n" not in str(err.value)


@pytest.mark.parametrize("up", ["y", "+y", 1, (1,), (3, 1.0), (1, 1.0, 0.0), ("y", 1.0), (1, "up"), (True, 1.0),
                                (1, math.nan)])  # fmt: skip
def test_a_malformed_up_is_one_line_naming_what_is_expected(up):
    with pytest.raises(StreamError, match=r"up is an \(axis, sign\) pair.*up_axis=") as err:
        AvatarEncoder(_bent(1), up=up)
    assert "\n" not in str(err.value)


def test_a_bad_up_axis_is_the_ops_error():
    with pytest.raises(ShapeError, match="axis must be one of x, y, z"):
        AvatarEncoder(_bent(1), up_axis="w")


# ---------------------------------------------------------------------------------------------------- mapping
def test_a_ready_joint_mapping_is_taken_as_its_dict_is(mocap_dir):
    """Bandai's zero pose is no body pose, so the encoder calibrates on the clip: a JointMapping must get the same
    calibrated rig as the dict it was made from (the explicit ``mapping=dict`` call is the reference)."""
    motion = skelanim.load(mocap_dir / "bandai_namco_1" / "dataset-1_walk_normal_001.bvh")[:20]
    override = {"l_toe": None}
    by_dict = AvatarEncoder(motion, mapping=override)
    by_mapping = AvatarEncoder(motion, mapping=map_skeleton(motion.skeleton, override))
    assert by_mapping.rig.calibration is not None and by_dict.rig.calibration is not None
    assert torch.equal(by_mapping.rig.joint_of_slot, by_dict.rig.joint_of_slot)
    rot, trans = motion.rotations, motion.local_translations()
    _same(by_mapping.encode(rot, trans), by_dict.encode(rot, trans))
    on_skeleton = AvatarEncoder(motion.skeleton, mapping=map_skeleton(motion.skeleton, override))
    assert on_skeleton.rig.calibration is None and torch.equal(on_skeleton.rig.joint_of_slot, by_dict.rig.joint_of_slot)


def test_a_joint_mapping_of_another_skeleton_is_refused_in_one_line():
    tpose = canonical_tpose()
    renamed = Motion.rest(skelanim.Skeleton([n.upper() for n in tpose.names], tpose.parents, tpose.offsets), 2)
    with pytest.raises(MappingError, match="another skeleton") as err:
        AvatarEncoder(renamed, mapping=map_skeleton(tpose))
    assert "\n" not in str(err.value)


# ---------------------------------------------------------------------------------------------------- one frame
def test_one_live_frame_is_encoded_as_the_one_frame_clip():
    motion = _bent(4)
    encoder = AvatarEncoder(motion)
    rot, trans = motion.rotations, motion.local_translations()
    for k in range(4):
        one = encoder.encode(rot[k], trans[k], fps=25.0)
        _same(one, encoder.encode(rot[k : k + 1], trans[k : k + 1], fps=25.0))
        assert one.num_frames == 1
    _same(encoder.encode(rot[2].numpy(), trans[2].numpy()), encoder.encode(rot[2:3], trans[2:3]))  # numpy too


@pytest.mark.parametrize(("rot_shape", "trans_shape"), [((22, 3), (22, 3)), ((4, 22, 4), (3, 22, 3)),
                                                        ((4, 21, 4), (4, 21, 3)), ((22, 4), (2, 22, 3)),
                                                        ((1, 1, 22, 4), (1, 1, 22, 3)), ((4,), (3,))])  # fmt: skip
def test_a_wrong_shape_is_a_one_line_shape_error(rot_shape, trans_shape):
    encoder = AvatarEncoder(_bent(1))
    with pytest.raises(ShapeError, match=r"\(F, 22, 4\) or \(22, 4\)") as err:
        encoder.encode(torch.zeros(rot_shape, dtype=torch.float64), torch.zeros(trans_shape, dtype=torch.float64))
    assert "\n" not in str(err.value)
