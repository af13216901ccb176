"""ONNX export of IK-GAT and an onnxruntime runner.

The exported graph is :class:`~skelanim.ik.model.IKGATExport`: input ``positions`` ``(batch, J, 3)``
float32 in the skeleton's units, output ``rotations`` ``(batch, J, 4)`` local unit quaternions
(w, x, y, z), batch size dynamic. A file written by :func:`export_onnx` says so in its metadata
(``metadata_props``, readable in any ONNX runtime: ``skelanim.joints``, ``skelanim.parents``,
``skelanim.offsets``, ``skelanim.ik_root``, ``skelanim.units``, ``skelanim.height`` (the length the network divides
positions by, the rest pose's extent: 183.7 for the Bandai rig, whose rest lies along X), ``skelanim.stature`` (the
standing body's size, bone lengths from head to foot: 137.1 there; the unit is guessed from it), ``skelanim.input``,
``skelanim.output``, and ``skelanim.up_axis`` where ``up_axis`` is given: ``skelanim ik export`` gives the model's), so an engine can feed it without skelanim (:class:`OrtRunner` also keeps a static batch-1 graph for single
poses: onnxruntime's overhead of about a microsecond per node is most of a single pose's time, so the
rotation formulas it exports are written with few, large operations, see :mod:`skelanim.core.rotation_convert`).
Export uses the TorchScript-based exporter
(``dynamo=False``), which needs no extra packages.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch

from skelanim.core.units import guess_unit
from skelanim.ik.frames import IKRig
from skelanim.ik.model import IKGAT, IKGATExport
from skelanim.io.atomic import atomic_path

__all__ = ["OPSET", "OrtRunner", "described", "export_onnx", "onnx_bytes"]

OPSET = 17


def onnx_bytes(net: IKGAT, *, batch: int | None = None) -> bytes:
    """Serialise ``net`` to an ONNX model (bytes).

    Parameters
    ----------
    net : IKGAT
        The network (it is put in eval mode).
    batch : int, optional
        A fixed batch size (static shapes: fewer nodes, faster single-pose calls); ``None``: dynamic.

    Returns
    -------
    bytes
        The ONNX protobuf.
    """
    net.eval()
    wrapper = IKGATExport(net).eval()
    dummy = torch.zeros(batch or 2, net.num_joints, 3)
    dynamic = None if batch else {"positions": {0: "batch"}, "rotations": {0: "batch"}}
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        # the TorchScript exporter (dynamo=False) writes to a file object; torch annotates ``f`` as a path only
        torch.onnx.export(wrapper, (dummy,), buffer, dynamo=False, input_names=["positions"],  # type: ignore[arg-type]
                          output_names=["rotations"], opset_version=OPSET, dynamic_axes=dynamic)  # fmt: skip
    return buffer.getvalue()


def described(data: bytes, rig: IKRig, up_axis: int | str | None = None) -> bytes:
    """``data`` (an IK-GAT ONNX model) with the output's joint and quaternion sizes fixed and the rig in its
    ``metadata_props`` (module docstring): joint names, parents and rest offsets as JSON, the unit the
    positions must be in (guessed from the rig's height), the up axis and what input and output hold."""
    import onnx

    model = onnx.load_from_string(data)
    sk = rig.skeleton
    dims = model.graph.output[0].type.tensor_type.shape.dim
    dims[1].dim_value, dims[2].dim_value = sk.num_joints, 4
    stature = sk.stature() or float(rig.height)  # a rest pose may lie down (Bandai's along X): its extent is no height
    unit = guess_unit(stature)
    meta = {
        "skelanim.joints": json.dumps(list(sk.names)),
        "skelanim.parents": json.dumps([int(p) for p in sk.parents]),
        "skelanim.offsets": json.dumps(sk.offsets.tolist()),
        "skelanim.ik_root": sk.names[rig.ik_root],
        "skelanim.units": unit,
        "skelanim.height": f"{float(rig.height):g}",  # what the network divides positions by: the rest pose's extent
        "skelanim.stature": f"{stature:g}",
        "skelanim.input": f"positions (batch, {sk.num_joints}, 3) float32: world joint positions in the order of "
                          f"skelanim.joints, in {unit}",
        "skelanim.output": f"rotations (batch, {sk.num_joints}, 4) float32: each joint's rotation relative to its "
                           "parent (the root's in world axes) as unit quaternions w, x, y, z, for the rest offsets "
                           "of skelanim.offsets (BVH convention: world = parent world @ local); the joint "
                           f"skelanim.ik_root ({sk.names[rig.ik_root]}) and those above it keep their input positions",
    }  # fmt: skip
    if up_axis is not None:
        meta["skelanim.up_axis"] = "xyz"[up_axis] if isinstance(up_axis, int) else str(up_axis)
    onnx.helper.set_model_props(model, meta)
    return model.SerializeToString()


def export_onnx(net: IKGAT, path: str | os.PathLike, *, rig: IKRig | None = None,
                up_axis: int | str | None = None) -> Path:  # fmt: skip
    """Write ``net`` as ONNX to ``path`` (atomically); with ``rig``, :func:`described` by it and ``up_axis`` (the
    model config's ``up_axis``; the rig's rest pose need not stand up, so it is not guessed from it)."""
    data = onnx_bytes(net)
    if rig is not None:
        data = described(data, rig, up_axis)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


class OrtRunner:
    """An onnxruntime session: ``runner(positions (B, J, 3) float32) -> (B, J, 4)`` quaternions.

    Parameters
    ----------
    model : bytes or path
        ONNX model.
    threads : int, optional
        Intra-op threads (default: torch's thread count; :class:`~skelanim.ik.solve.IKModel` uses one, as
        it sends only small batches here).
    single : bytes, optional
        A static batch-1 ONNX model of the same network, used for single poses.
    """

    def __init__(
        self, model: bytes | str | os.PathLike, threads: int | None = None, single: bytes | None = None
    ) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        source = model if isinstance(model, bytes) else str(model)
        self.session = ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
        self.single = (
            None if single is None else ort.InferenceSession(single, options, providers=["CPUExecutionProvider"])
        )

    @classmethod
    def from_model(cls, net: IKGAT, threads: int | None = None) -> OrtRunner:
        """Export ``net`` in memory and open sessions on it: dynamic batch, and batch 1 with static shapes."""
        return cls(onnx_bytes(net), threads, single=onnx_bytes(net, batch=1))

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """``(B, J, 3)`` positions to ``(B, J, 4)`` local quaternions (float32 NumPy)."""
        x = np.ascontiguousarray(positions, dtype=np.float32)
        session = self.single if self.single is not None and x.shape[0] == 1 else self.session
        return session.run(None, {"positions": x})[0]
