"""A streaming retargeter as an ONNX file, for engine runtimes (Unity Sentis, Unreal NNE, onnxruntime).

The file is the graph :meth:`.Retargeter.step` runs (:mod:`.online`): one source frame in, one target frame
out, the stream state in and out, so the engine keeps the state between frames and the graph stays stateless.
Inputs, in order (the stream state a method keeps: ``nkn`` the started flag, the floor, the previous feet, the GRU
states and the previous hips, ``ik`` the started flag, the floor, the previous feet and its foot pins, ``copy`` and
``naive`` none: each frame of theirs stands alone):

All floats are float32 (``skelanim.dtype``; ``dtype="float64"`` keeps :meth:`.Retargeter.step`'s float64):

========================  =============  ==========================================================================
``rotations``             ``(J_A, 4)``   the source frame's local quaternions ``w, x, y, z`` (BVH order of
                                         ``skelanim.source_joints``)
``root_position``         ``(3,)``       the source root's position, in the source file's units and world
``joint_offsets``         ``(J_A, 3)``   local joint translations (the rest offsets of ``skelanim.source_offsets``
                                         unless joints are animated; row 0 is ignored)
``started``               ``(1,)``       stream state: 0 on a stream's first frame (the state given with it is
                                         then ignored), 1 after
``floor``                 ``(1, 4)``     stream state: the running floor of the four foot joints
``previous_feet``         ``(1, 4, 3)``  stream state: the previous frame's foot positions
``encoder_state``,        ``(1, 1, H)``  stream state: the NKN's GRU hidden states
``decoder_state``
``previous_hips``         ``(1, 3)``     stream state: the previous frame's hips
``foot_pins``             ``(4, 3)``     stream state (``ik``): where each foot and toe joint is pinned
``foot_pinned``           ``(4,)``       stream state (``ik``): 1 where that joint is pinned, 0 where it is free
``foot_offsets``          ``(4, 3)``     stream state (``ik``): each foot and toe target's offset from the copy
``toe_offsets``           ``(2, 3)``     stream state (``ik``): each ankle's offset while it hangs from its toe
========================  =============  ==========================================================================

Outputs: ``target_rotations`` ``(J_B, 4)`` (local quaternions of ``skelanim.target_joints``),
``target_root_position`` ``(3,)``, ``target_joint_translations`` ``(J_B, 3)`` where the target animates its hips'
translation (``skelanim.hips_translated``), then the next stream state: ``next_started``, ``next_floor``, ``next_previous_feet``,
``next_encoder_state``, ``next_decoder_state``, ``next_previous_hips``, ``next_foot_pins``, ``next_foot_pinned``,
``next_foot_offsets``, ``next_toe_offsets`` (those the method keeps), each fed back as its input on the next frame.
The first frame's state is all zeros (``skelanim.initial_state`` gives each one's shape): no NaN or infinity is
needed as a flag anywhere, for runtimes whose fast math does not keep them.
The frame rate, the floor and the calibration of both skeletons are fixed in the graph
(``skelanim.fps``); a source or target that is not Y up is turned inside it, as :meth:`.Retargeter.step` turns it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from skelanim.core.rotations import quat_apply, quat_identity, quat_multiply
from skelanim.core.units import guess_unit, signed_axis_name
from skelanim.io.atomic import atomic_path
from skelanim.nn.device import module_device
from skelanim.retarget.online import onnx_bytes
from skelanim.retarget.retargeter import Retargeter, RetargetError

__all__ = ["FORMAT", "STATE_INPUTS", "export_step", "float32_graph"]

#: ``skelanim.format`` of an exported step.
FORMAT = "skelanim-retarget-step"
#: The stream state, in the order of the graph's inputs (and, prefixed ``next_``, of its last outputs).
STATE_INPUTS = ("started", "floor", "previous_feet", "encoder_state", "decoder_state", "previous_hips", "foot_pins",
                "foot_pinned", "foot_offsets", "toe_offsets")


#: The stream state each method keeps (the rest would pass through the graph unchanged, so it is left out).
_STATE_OF = {"nkn": STATE_INPUTS[:6], "ik": (*STATE_INPUTS[:3], *STATE_INPUTS[6:]), "copy": (), "naive": ()}


class _TurnedStep(nn.Module):
    """:meth:`.Retargeter._step_module` with the source's world turned Y up before it and the target's turned
    back after it, as :meth:`.Retargeter.step` does (the root's rotation and position only); the stream state
    the method does not keep is a constant inside, not an input."""

    def __init__(self, retargeter: Retargeter) -> None:
        super().__init__()
        self.inner = retargeter._step_module()
        self.turn_in, self.turn_out = retargeter._turn_in, retargeter._turn_out
        self.translated = retargeter.target.hips_translated
        self.kept = _STATE_OF[retargeter.method]
        self.fresh = dict(zip(STATE_INPUTS, retargeter._fresh_stream_state(), strict=True))

    def forward(self, rot: Tensor, root: Tensor, offsets: Tensor, *kept: Tensor) -> tuple[Tensor, ...]:
        if self.turn_in is not None:
            rot = torch.cat([quat_multiply(self.turn_in, rot[:1]), rot[1:]])
            root = quat_apply(self.turn_in, root)
        given = dict(zip(self.kept, kept, strict=True))
        state = [given.get(name, self.fresh[name]) for name in STATE_INPUTS]
        q, root2, translations, *next_state = self.inner(rot, root, offsets, *state)
        if self.turn_out is not None:
            q = torch.cat([quat_multiply(self.turn_out, q[:1]), q[1:]])
            root2 = quat_apply(self.turn_out, root2)
        following = [t for name, t in zip(STATE_INPUTS, next_state, strict=True) if name in self.kept]
        return (q, root2, *([translations] if self.translated else []), *following)


def float32_graph(model: Any) -> Any:
    """``model`` (an ``onnx.ModelProto``) with every float64 tensor made float32, in place: inputs, outputs, value
    infos, initializers, constants and casts, so the whole step then computes in float32. Engine runtimes such as
    Unity Sentis take no float64; the tests hold the float32 step's frames within 1e-5 of the float64 one's."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    double, single = onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT

    def narrowed(tensor: Any) -> Any:
        return numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float32), tensor.name)

    graph = model.graph
    for i, init in enumerate(graph.initializer):
        if init.data_type == double:
            graph.initializer[i].CopyFrom(narrowed(init))
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH or attr.type == onnx.AttributeProto.GRAPHS:
                raise RetargetError(f"a float32 graph cannot be made of a {node.op_type} node with a subgraph")
            if attr.name == "to" and attr.i == double:
                attr.i = single
            if attr.type == onnx.AttributeProto.TENSOR and attr.t.data_type == double:
                attr.t.CopyFrom(narrowed(attr.t))
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.tensor_type.elem_type == double:
            value.type.tensor_type.elem_type = single
    return model


def _up_name(turn: Tensor | None) -> str:
    """``"+y"``, ``"+z"``, ... : the world up axis a turn onto +Y starts from (``None``: Y up already)."""
    if turn is None:
        return "+y"
    up = turn[1]  # the row that takes the up direction onto +Y
    axis = int(up.abs().argmax())
    return signed_axis_name(axis, float(up[axis]))


def export_step(retargeter: Retargeter, path: str | os.PathLike, *, dtype: str = "float32") -> Path:
    """Write ``retargeter``'s streamed step as an ONNX file (module docstring), atomically.

    Parameters
    ----------
    retargeter : Retargeter
        Built for the stream (its ``fps`` and ``floor`` are fixed in the graph); any method.
    path : path
        The ``.onnx`` file to write.
    dtype : {"float32", "float64"}
        The graph's floats: ``float32`` (engines: Unity Sentis and Unreal's GPU runtimes take no float64; the
        GRU states are float32 either way) or ``float64``, exactly :meth:`.Retargeter.step`.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    RetargetError
        For a bad ``dtype``, or a network off the CPU.
    """
    import onnx

    if dtype not in ("float32", "float64"):
        raise RetargetError(f"dtype must be float32 or float64, not {dtype!r}", path=path)
    if retargeter.net is not None and module_device(retargeter.net).type != "cpu":
        raise RetargetError("export a Retargeter whose network is on the CPU (the file runs wherever the engine "
                            "puts it)", path=path)  # fmt: skip
    source, target = retargeter.source.skeleton, retargeter.target.skeleton
    step = _TurnedStep(retargeter)
    example = (quat_identity((source.num_joints,)), source.offsets[0].clone(), source.offsets.clone(),
               *(step.fresh[name] for name in step.kept))  # fmt: skip
    outputs = ["target_rotations", "target_root_position"]
    if retargeter.target.hips_translated:
        outputs.append("target_joint_translations")
    outputs += [f"next_{name}" for name in step.kept]
    data = onnx_bytes(step, example, ["rotations", "root_position", "joint_offsets", *step.kept], outputs)
    model = onnx.load_from_string(data)
    if dtype == "float32":
        float32_graph(model)
    kept = [i.name for i in model.graph.input]
    initial = {name: {"shape": list(step.fresh[name].shape), "fill": 0.0} for name in STATE_INPUTS}  # all zeros
    meta = {
        "skelanim.format": FORMAT,
        "skelanim.method": retargeter.method,
        "skelanim.fps": f"{retargeter.fps:g}",
        "skelanim.source_joints": json.dumps(list(source.names)),
        "skelanim.source_parents": json.dumps([int(p) for p in source.parents]),
        "skelanim.source_offsets": json.dumps(source.offsets.tolist()),
        "skelanim.target_joints": json.dumps(list(target.names)),
        "skelanim.target_parents": json.dumps([int(p) for p in target.parents]),
        "skelanim.target_offsets": json.dumps(target.offsets.tolist()),
        "skelanim.hips_translated": json.dumps(bool(retargeter.target.hips_translated)),
        "skelanim.source_units": guess_unit(float(retargeter.source.height)),
        "skelanim.target_units": guess_unit(float(retargeter.target.height)),
        "skelanim.source_up": _up_name(retargeter.source_turn),
        "skelanim.target_up": _up_name(retargeter.target_turn),
        "skelanim.source_floor": json.dumps(retargeter.stream_floor),  # what the graph stands on (a review)
        "skelanim.target_floor": json.dumps(retargeter.target_floor),
        "skelanim.dtype": dtype,
        "skelanim.inputs": json.dumps(kept),
        "skelanim.outputs": json.dumps([o.name for o in model.graph.output]),
        "skelanim.initial_state": json.dumps({k: v for k, v in initial.items() if k in kept}),
        "skelanim.convention": "quaternions w, x, y, z; local rotations relative to the parent (the root's in world "
                               "axes), world = parent world @ local (BVH); each next_* output is fed back as the "
                               "input of its name on the next frame; feed frames at skelanim.fps (velocities and "
                               "contact thresholds are in the graph), in the source file's units and world "
                               "(skelanim.source_units, skelanim.source_up; its feet standing at skelanim.source_floor "
                               "along that up axis); the output is in the target file's (skelanim.target_*)",
    }  # fmt: skip
    onnx.helper.set_model_props(model, meta)
    with atomic_path(path) as tmp:
        tmp.write_bytes(model.SerializeToString())
    return Path(path)
