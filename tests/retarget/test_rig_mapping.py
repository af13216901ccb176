"""``CanonicalRig(skeleton, mapping=...)`` takes a :class:`JointMapping` of that skeleton and refuses anything else in
one line: a dict or a file's path (which :func:`map_skeleton` or :func:`make_rig` turn into a rig) and a mapping
made for another skeleton (whose joint indices are another skeleton's) had failed deep inside with an
AttributeError or built a rig of the wrong joints."""

from __future__ import annotations

import pytest
import torch

from skelanim.core.skeleton import Skeleton
from skelanim.retarget.mapping import MappingError, map_skeleton
from skelanim.retarget.retargeter import make_rig
from skelanim.retarget.rig import CanonicalRig, canonical_tpose


@pytest.mark.parametrize("mapping", [{"hips": "hips"}, "map.json"])
def test_a_dict_or_a_path_is_a_one_line_type_error_naming_the_way(mapping):
    with pytest.raises(TypeError, match=r"JointMapping.*map_skeleton.*got (dict|str)") as err:
        CanonicalRig(canonical_tpose(), mapping=mapping)
    assert "\n" not in str(err.value)


def test_a_mapping_of_another_skeleton_is_refused_in_one_line():
    tpose = canonical_tpose()
    renamed = Skeleton([n.upper() for n in tpose.names], tpose.parents, tpose.offsets)
    with pytest.raises(MappingError, match="another skeleton") as err:
        CanonicalRig(renamed, mapping=map_skeleton(tpose))
    assert "\n" not in str(err.value)


def test_a_joint_mapping_of_the_skeleton_is_what_a_dict_through_make_rig_gives():
    tpose = canonical_tpose()
    override = {"l_toe": None}  # drop a joint: a mapping that is not the default one
    given = CanonicalRig(tpose, mapping=map_skeleton(tpose, override))
    made = make_rig(tpose, override)
    assert not bool(given.present[list(tpose.names).index("l_toe")])
    assert torch.equal(given.joint_of_slot, made.joint_of_slot)
    assert torch.allclose(given.to_canonical, made.to_canonical)


def test_make_rig_takes_a_ready_joint_mapping_as_its_dict():
    """``make_rig`` (and so ``Retargeter`` and ``AvatarEncoder``) takes the :class:`JointMapping` that
    :func:`map_skeleton` made for the skeleton, giving the rig its dict gives; a motion is calibrated on itself alike."""
    from skelanim.core.motion import Motion

    tpose = canonical_tpose()
    override = {"l_toe": None}
    ready, made = make_rig(tpose, map_skeleton(tpose, override)), make_rig(tpose, override)
    assert torch.equal(ready.joint_of_slot, made.joint_of_slot) and torch.equal(ready.present, made.present)
    motion = Motion.rest(tpose, 3)
    assert torch.allclose(make_rig(motion, map_skeleton(tpose, override)).to_canonical,
                          make_rig(motion, override).to_canonical)  # fmt: skip


def test_a_mapping_given_with_a_ready_rig_is_refused_not_ignored():
    """An API review: ``make_rig(rig, mapping)`` (so ``AvatarEncoder(rig, mapping=...)``, ``Retargeter(rig, ...,
    source_map=...)``) returned the rig and dropped the mapping without a word."""
    from skelanim.retarget import RetargetError

    tpose = canonical_tpose()
    rig = make_rig(tpose)
    assert make_rig(rig) is rig
    for mapping in ({"l_toe": None}, map_skeleton(tpose)):
        with pytest.raises(RetargetError, match="carries its own joint mapping") as err:
            make_rig(rig, mapping)
        assert "\n" not in str(err.value)
