"""The IK augmentation's left/right mirror on the same rig (real Bandai poses; skipped visibly without the data)."""

from __future__ import annotations

import torch

from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_geodesic, matrix_to_quat, quat_to_matrix
from skelanim.ik.data import augment, mean_pose, mirror_map, mirror_world
from skelanim.ik.frames import world_to_local

LATERAL = 0  # the walk goes along +z: mirroring across x keeps its heading


def _mirrored(bandai_rig, bandai_poses, reference):
    world = bandai_poses[1]
    perm, m, right = mirror_map(bandai_rig, LATERAL, reference)
    return perm, m.double(), mirror_world(world, perm, m, right)


def _fk_root_relative(rig, world):
    local = world_to_local(world, rig.parent_index, rig.has_parent)
    zero = torch.zeros(world.shape[0], 3, dtype=world.dtype)
    _, pos = forward_kinematics(matrix_to_quat(local), rig.translations(zero), rig.parents)
    return local, pos - pos[:, rig.ik_root : rig.ik_root + 1]


def test_mirrored_rotations_put_the_joints_at_the_mirrored_positions(bandai_rig, bandai_poses):
    """FK of ``M G_P N`` on the rest offsets = reflected positions with left and right swapped; twice = identity."""
    q, world, pos = bandai_poses
    reference = quat_to_matrix(mean_pose(q))
    perm, m, m_world = _mirrored(bandai_rig, bandai_poses, reference)
    _, m_pos = _fk_root_relative(bandai_rig, m_world)
    rel = pos - pos[:, bandai_rig.ik_root : bandai_rig.ik_root + 1]
    error = (m_pos - rel[:, perm] * m)[:, bandai_rig.evaluated].norm(dim=-1).max() / bandai_rig.height
    assert float(error) < 1e-3
    assert float((m_world - world[:, perm] * m[:, None]).abs().max()) > 0.5  # not the plain M G_P M on this rig
    back = mirror_world(m_world, *mirror_map(bandai_rig, LATERAL, reference))
    assert torch.equal(back, world)


def test_mirrored_walk_keeps_the_walks_mean_pose(bandai_rig, bandai_poses):
    """A walk's mirror image is a walk: its mean local rotations match the original's (the bones' twist
    included, which positions cannot show). The reflections that merely satisfy the rest offsets, or the
    bone-frame rule ``M G_P diag(1, 1, -1)`` used before, turn some joints by a half turn."""
    q, world, _ = bandai_poses
    reference = quat_to_matrix(mean_pose(q))
    joints = bandai_rig.evaluated

    def gap(m_world):
        local, _ = _fk_root_relative(bandai_rig, m_world)
        mirrored_mean = quat_to_matrix(mean_pose(matrix_to_quat(local)))
        return torch.rad2deg(matrix_geodesic(mirrored_mean, reference))[joints]

    assert float(gap(_mirrored(bandai_rig, bandai_poses, reference)[2]).max()) < 30.0
    assert float(gap(_mirrored(bandai_rig, bandai_poses, None)[2]).max()) > 150.0
    perm, m, _ = mirror_map(bandai_rig, LATERAL)
    flip = torch.tensor([1.0, 1.0, -1.0], dtype=world.dtype)
    old = m[:, None] * bandai_rig.world_to_frames(world)[:, perm] * flip @ bandai_rig.rest_frames.transpose(-1, -2)
    old[:, bandai_rig.fixed] = torch.eye(3, dtype=world.dtype)
    assert float(gap(old).max()) > 150.0


def test_augment_mirrors_the_chosen_samples_and_keeps_them_consistent(bandai_rig, bandai_poses):
    """Every sample mirrored (probability 1) and turned to a random heading: its joints' heights are their
    partners', and FK of its rotations gives its positions."""
    q, world, pos = bandai_poses
    rel = (pos - pos[:, bandai_rig.ik_root : bandai_rig.ik_root + 1]).float()
    rel[:, bandai_rig.fixed] = -bandai_rig.offsets[bandai_rig.ik_root].float()
    reflection = mirror_map(bandai_rig, 2, quat_to_matrix(mean_pose(q)))
    _, clean, m_world = augment(rel, world.float(), bandai_rig, torch.Generator().manual_seed(0), up=1,
                                mirror=1.0, reflection=reflection)  # fmt: skip
    _, fk_pos = _fk_root_relative(bandai_rig, m_world.double())
    joints = bandai_rig.evaluated
    assert float((fk_pos - clean.double())[:, joints].norm(dim=-1).max()) / bandai_rig.height < 1e-3
    perm = reflection[0]  # heights do not change with the heading: they are the partners' heights
    assert float((clean[..., 1] - rel[:, perm, 1])[:, joints].abs().max()) / bandai_rig.height < 1e-5
    assert float((clean[..., 1] - rel[..., 1])[:, joints].abs().max()) / bandai_rig.height > 0.02
