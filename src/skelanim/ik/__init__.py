"""Inverse kinematics: joint positions to joint rotations.

* :mod:`.model` - IK-GAT, the graph-attention network (one forward pass for all joints);
* :mod:`.frames` - rest bone frames and the exact bone-frame -> local rotation map;
* :mod:`.classical` - analytic swing IK and per-frame Levenberg-Marquardt optimisation (the baselines);
* :mod:`.train` / :mod:`.data` - training on BVH files with :func:`skelanim.nn.fit`;
* :mod:`.solve` - :func:`solve` and :class:`IKModel` (the shipped Bandai-Namco model is the default);
* :mod:`.evaluate` - all methods side by side; :mod:`.onnx` - export and onnxruntime.

See ``README.md`` in this folder for how the shipped model was trained and measured.
"""

from typing import TYPE_CHECKING

from skelanim.ik.classical import kabsch, optimize_ik, rotation_between, swing_ik
from skelanim.ik.frames import IKRig, bone_frames_to_local, rest_bone_frames
from skelanim.ik.model import IKGAT, GATConfig
from skelanim.ik.solve import ALL_METHODS, DEFAULT_MODEL, METHODS, IKModel, load_model, run_method, solve

__all__ = [
    "ALL_METHODS",
    "DEFAULT_MODEL",
    "IKGAT",
    "METHODS",
    "GATConfig",
    "IKModel",
    "IKRig",
    "bone_frames_to_local",
    "kabsch",
    "load_model",
    "optimize_ik",
    "rest_bone_frames",
    "rotation_between",
    "run_method",
    "solve",
    "swing_ik",
]  # fmt: skip

if not TYPE_CHECKING:  # modules imported on first use (skelanim.ik.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
