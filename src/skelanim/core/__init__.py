"""The math everything sits on: rotations, the skeleton tree, motions and forward kinematics."""

from typing import TYPE_CHECKING

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton

__all__ = ["Motion", "Skeleton"]

if not TYPE_CHECKING:  # modules imported on first use (skelanim.core.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
