"""The math everything sits on: rotations, the skeleton tree, motions and forward kinematics."""

from skelanim.core.motion import Motion
from skelanim.core.skeleton import Skeleton

__all__ = ["Motion", "Skeleton"]
