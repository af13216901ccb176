"""Motion retargeting: joint mapping, rest-pose-aware baselines, online neural retargeting (NKN), robots.

* :mod:`.mapping` - any skeleton's joints onto 22 canonical joints (names first, the tree to settle the rest);
* :mod:`.rig` - rest bone frames, canonical offsets, encode/decode between a skeleton and canonical space;
* :mod:`.baselines` - rest-aware copy, IK retargeting with feet held, online foot contacts;
* :mod:`.model` / :mod:`.loss` / :mod:`.data` / :mod:`.train` - NKN and its unsupervised training;
* :mod:`.retargeter` - :class:`Retargeter` (``step`` for streams, ``__call__`` for clips);
* :mod:`.evaluate` - every method side by side; :mod:`.robot` - the DeepMimic humanoid.

See ``README.md`` in this folder for how the shipped model was trained and what it scores.
"""

from typing import TYPE_CHECKING

from skelanim.retarget.mapping import CANONICAL_JOINTS, JointMapping, MappingError, load_mapping_file, map_skeleton
from skelanim.retarget.retargeter import DEFAULT_MODEL, METHODS, Retargeter, RetargetError, load_nkn
from skelanim.retarget.rig import CanonicalRig

__all__ = [
    "CANONICAL_JOINTS",
    "DEFAULT_MODEL",
    "METHODS",
    "CanonicalRig",
    "JointMapping",
    "MappingError",
    "RetargetError",
    "Retargeter",
    "load_mapping_file",
    "load_nkn",
    "map_skeleton",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.retarget.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
