"""The observed root frame of IK-GAT on rigs whose IK root's children sit on it (CMU: ``Hips``' children
``LHipJoint``, ``RHipJoint``, ``LowerBack`` at zero offset): found through them, so the answers turn with the
input; the direct-children rule kept where it finds a pair (Bandai, the shipped model); configs saved before
``root_frame_descendants`` keep the world axes their weights were trained on."""

from __future__ import annotations

import pytest
import torch

import skelanim
from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import matrix_to_quat, quat_normalize, quat_to_matrix
from skelanim.core.skeleton import Skeleton
from skelanim.ik import model
from skelanim.ik.data import detect_ik_root, mean_pose, up_axis
from skelanim.ik.frames import IKRig, primary_children
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import load_model

CMU = "cmu_cgspeed_max/131_01.bvh"


@pytest.fixture(scope="module")
def cmu(mocap_files) -> tuple[IKRig, torch.Tensor, torch.Tensor]:
    """The CMU rig, ``(F, J, 4)`` local quaternions and ``(F, J, 3)`` positions recomputed on its offsets
    (40 frames, float64)."""
    motion = skelanim.load(mocap_files([CMU])[0])[::20][:40]
    rig = IKRig(motion.skeleton, ik_root=detect_ik_root([motion]))
    q = quat_normalize(motion.rotations)
    _, pos = forward_kinematics(q, rig.translations(motion.positions()[:, rig.ik_root]), rig.parents)
    return rig, q, pos


def _net(rig: IKRig, q: torch.Tensor, config: GATConfig) -> IKGAT:
    torch.manual_seed(0)
    net = IKGAT(rig, config)
    net.set_mean_pose(mean_pose(q))
    return net.eval()


def _turn(kind: str, up: int) -> torch.Tensor:
    """``(3, 3)`` float64: a random rotation about the up axis, or about an arbitrary axis."""
    gen = torch.Generator().manual_seed(7)
    if kind == "up":
        half = torch.rand(1, generator=gen, dtype=torch.float64) * torch.pi  # half the angle, in [0, pi)
        axis = torch.zeros(3, dtype=torch.float64)
        axis[up] = 1.0
        quat = torch.cat([half.cos(), half.sin() * axis])
    else:
        quat = torch.randn(4, generator=gen, dtype=torch.float64)
    return quat_to_matrix(quat / quat.norm())


@pytest.mark.parametrize("kind", ["up", "any"])
@pytest.mark.parametrize("kw", [{}, {"chain": True}, {"flat": True}])  # flat had failed: the boneless root a leaf
def test_cmu_answers_turn_with_the_input(cmu, kind, kw, torch_threads):
    rig, q, pos = cmu
    r = rig.ik_root
    names = rig.skeleton.names
    assert [names[i] for i in rig.skeleton.children(r)] == ["LHipJoint", "RHipJoint", "lowerback"]
    assert all(float(rig.offsets[i].norm()) == 0.0 for i in rig.skeleton.children(r))  # what hid the frame
    net = _net(rig, q, GATConfig(**kw))
    assert net.root_axes is not None, "no observed root frame on the CMU rig"
    turn = _turn(kind, up_axis(pos.float()))
    turned = pos @ turn.T + torch.tensor([30.0, -4.0, 12.0], dtype=torch.float64)  # and moved
    with torch.no_grad():
        local = net.local_rotations(pos.float()).double()
        local2 = net.local_rotations(turned.float()).double()
    below = [j for j in range(rig.num_joints) if j != r]
    assert torch.allclose(local2[:, below], local[:, below], atol=1e-4)
    assert torch.allclose(local2[:, r], turn @ local[:, r], atol=1e-4)  # only the root's turns
    _, fk = forward_kinematics(matrix_to_quat(local), rig.translations(pos[:, r]), rig.parents)
    _, fk2 = forward_kinematics(matrix_to_quat(local2), rig.translations(turned[:, r]), rig.parents)
    moved = fk @ turn.T + torch.tensor([30.0, -4.0, 12.0], dtype=torch.float64)
    assert float((fk2 - moved).norm(dim=-1).max()) < 1e-5 * rig.height


def _direct_rule(rig: IKRig) -> tuple[int, int] | None:
    """The IK root's primary child and its first child with a bone not collinear with it (the rule before
    ``root_frame_descendants``)."""
    r = rig.ik_root
    first = primary_children(rig.skeleton)[r]
    if first < 0:
        return None
    a = rig.offsets[first] / rig.offsets[first].norm()
    for c in rig.bone_children[r]:
        b = rig.offsets[c] / rig.offsets[c].norm()
        if c != first and float(torch.linalg.cross(a, b).norm()) > 0.1:
            return first, c
    return None


def test_bandai_keeps_the_direct_children_pair(bandai_rig, bandai_poses):
    names = bandai_rig.skeleton.names
    expected = _direct_rule(bandai_rig)
    assert expected is not None and [names[i] for i in expected] == ["Spine", "UpperLeg_L"]
    for flag in (True, False):
        net = _net(bandai_rig, bandai_poses[0], GATConfig(hidden=16, layers=1, heads=2, root_frame_descendants=flag))
        assert net.root_axes == expected
    shipped = load_model(None)
    assert shipped.net.config.root_frame_descendants is False  # its config predates the option
    assert shipped.net.root_axes == expected


def test_a_direct_pair_wins_over_farther_descendants():
    """Root with two bone children (a pair) and a zero-offset child whose descendant is farther: the direct pair,
    as before; the look-through alone would have taken the far joint."""
    offsets = [[0, 0, 0], [0, 1.0, 0], [1.0, 0, 0], [0, 0, 0], [0, 0, 5.0]]
    rig = IKRig(Skeleton(["root", "up", "side", "hub", "far"], [-1, 0, 0, 0, 3], torch.tensor(offsets)))
    primary = primary_children(rig.skeleton)
    assert model._root_axes(rig, primary) == (1, 2) == _direct_rule(rig)
    assert model._descendant_axes(rig) == (4, 1)


def test_look_through_picks_the_farthest_then_the_first_not_collinear():
    """Chains of coinciding joints are looked through; the farthest (ties by index) first, then the first by
    index whose direction is not collinear with it (``collinear`` lies along ``far``)."""
    names = ["root", "a", "a2", "far", "b", "collinear", "tie", "side"]
    parents = [-1, 0, 1, 2, 0, 4, 4, 4]
    offsets = [[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 3.0], [0, 0, 0], [0, 0, 1.0], [3.0, 0, 0], [0, 1.0, 0]]
    rig = IKRig(Skeleton(names, parents, torch.tensor(offsets)))
    assert _direct_rule(rig) is None
    assert model._root_axes(rig, primary_children(rig.skeleton), descendants=False) is None
    assert model._root_axes(rig, primary_children(rig.skeleton)) == (3, 6)


def test_a_config_saved_before_the_option_keeps_world_axes(cmu):
    rig, q, pos = cmu
    saved = GATConfig(hidden=16, layers=1, heads=2).to_dict()
    assert saved["root_frame_descendants"] is True  # new models record it
    del saved["root_frame_descendants"]
    old = GATConfig.from_dict(saved)
    assert old.root_frame_descendants is False
    assert GATConfig.from_dict(GATConfig().to_dict()).root_frame_descendants is True
    net = _net(rig, q, old)
    assert net.root_axes is None
    with torch.no_grad():
        _, canon = net.features(pos[:5].float())
    assert torch.equal(canon, torch.eye(3).expand(5, 3, 3))  # world axes, as those weights were trained on
    new = _net(rig, q, GATConfig.from_dict({**saved, "root_frame_descendants": True}))
    names = rig.skeleton.names
    assert new.root_axes is not None and [names[i] for i in new.root_axes] == ["LeftHip", "RightHip"]
