"""Pure functions over :class:`~skelanim.core.motion.Motion` objects or arrays.

Every function returns new objects and never modifies its inputs. A result may share tensors with its input
where an op leaves them as they are (``to_origin`` the rotations, ``smooth(rotations=False)`` the rotations, a
Y-up motion's ``up_to_y`` everything, like :meth:`Motion.copy <skelanim.core.motion.Motion.copy>`, which is
shallow): clone a tensor before editing it in place (``out.copy(root_positions=out.root_positions.clone())``), or
the input changes with it. Array functions take torch tensors or
numpy arrays and return the same kind (the filters, :func:`smooth_rotations`, :func:`foot_contacts`); the
alignment path and cost of :func:`dtw` and :func:`dtw_from_cost` are NumPy whatever the input.

The package's names are its functions: ``skelanim.ops.normalize`` is the function :func:`normalize`, not the module
of the same name (likewise ``mirror`` and ``resample``); reach a module's other names from the module
(``from skelanim.ops.mirror import joint_reflections``) or from here where listed.

========================  ==============================================================================
module                    functions
========================  ==============================================================================
:mod:`.normalize`         :func:`normalize`, :func:`scale`, :func:`to_units`, :func:`root_relative`, :func:`face_forward`,
                          :func:`facing_directions`, :func:`rotate_about_up`, :func:`rotate`, :func:`up_to_y`,
                          :func:`turned_up`, :func:`to_origin`
:mod:`.filters`           :func:`savgol`, :func:`butterworth`, :func:`one_euro` (positions, any array)
:mod:`.smoothing`         :func:`smooth`, :func:`smooth_rotations`, :func:`quat_continuous` (manifold)
:mod:`.resample`          :func:`resample`, :func:`sample_times`, :func:`sample_frames`, :func:`repeat_loop`
:mod:`.mirror`            :func:`mirror`, :func:`mirror_skeleton`, :func:`mirror_quat`, :func:`mirror_permutation`,
                          :func:`lateral_axis`, :func:`joint_reflections` (the mirror on the same rig)
:mod:`.contacts`          :func:`foot_contacts`, :func:`find_feet`
:mod:`.align`             :func:`dtw`, :func:`dtw_from_cost`, :func:`align_motions`
:mod:`.subset`            :func:`collapse`, :func:`figures`, :func:`figure_roots`, :func:`rename`, :func:`reorder_joints`,
                          :func:`simplify_channels`
========================  ==============================================================================
"""

from typing import TYPE_CHECKING

from skelanim.ops.align import align_motions, dtw, dtw_from_cost
from skelanim.ops.contacts import find_feet, foot_contacts
from skelanim.ops.filters import butterworth, one_euro, savgol
from skelanim.ops.mirror import (
    joint_reflections,
    lateral_axis,
    mirror,
    mirror_permutation,
    mirror_quat,
    mirror_skeleton,
)
from skelanim.ops.normalize import (
    face_forward,
    facing_directions,
    normalize,
    root_relative,
    rotate,
    rotate_about_up,
    scale,
    to_origin,
    to_units,
    turned_up,
    up_to_y,
)
from skelanim.ops.resample import repeat_loop, resample, sample_frames, sample_times
from skelanim.ops.smoothing import quat_continuous, smooth, smooth_rotations
from skelanim.ops.subset import collapse, figure_roots, figures, rename, reorder_joints, simplify_channels

__all__ = [
    "align_motions",
    "butterworth",
    "collapse",
    "dtw",
    "dtw_from_cost",
    "face_forward",
    "facing_directions",
    "figure_roots",
    "figures",
    "find_feet",
    "foot_contacts",
    "joint_reflections",
    "lateral_axis",
    "mirror",
    "mirror_permutation",
    "mirror_quat",
    "mirror_skeleton",
    "normalize",
    "one_euro",
    "quat_continuous",
    "rename",
    "reorder_joints",
    "repeat_loop",
    "resample",
    "root_relative",
    "rotate",
    "rotate_about_up",
    "sample_frames",
    "sample_times",
    "savgol",
    "scale",
    "simplify_channels",
    "smooth",
    "smooth_rotations",
    "to_origin",
    "to_units",
    "turned_up",
    "up_to_y",
]

if not TYPE_CHECKING:  # modules imported on first use (skelanim.ops.<module> without an import)
    from skelanim._modules import submodule_loader

    __getattr__ = submodule_loader(__name__)
