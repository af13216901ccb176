"""ONNX export of IK-GAT and an onnxruntime runner.

The exported graph is :class:`~skelanim.ik.model.IKGATExport`: input ``positions`` ``(batch, J, 3)``
float32 in the skeleton's units, output ``rotations`` ``(batch, J, 4)`` local unit quaternions
(w, x, y, z), batch size dynamic (:class:`OrtRunner` also keeps a static batch-1 graph for single
poses: fewer nodes, faster per call; onnxruntime's overhead of about a microsecond per node is most of a
single pose's time, so that graph is also rid of the ``Squeeze``/``Unsqueeze`` pairs the component-wise
rotation formulas export to, :func:`lift_squeezes`). Export uses the TorchScript-based exporter
(``dynamo=False``), which needs no extra packages.
"""

from __future__ import annotations

import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

from skelanim.ik.model import IKGAT, IKGATExport
from skelanim.io.atomic import atomic_path

__all__ = ["OPSET", "OrtRunner", "export_onnx", "lift_squeezes", "onnx_bytes"]

OPSET = 17
#: Operators applied element by element with numpy broadcasting (a size-1 axis can be carried through them).
_ELEMENTWISE = frozenset({"Abs", "Add", "And", "Cast", "Clip", "Div", "Equal", "Erf", "Exp", "Greater", "GreaterOrEqual",
                          "Identity", "Less", "LessOrEqual", "Log", "Max", "Min", "Mul", "Neg", "Not", "Or", "Pow",
                          "Reciprocal", "Sign", "Sqrt", "Sub", "Where"})  # fmt: skip


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
        torch.onnx.export(wrapper, (dummy,), buffer, dynamo=False, input_names=["positions"],
                          output_names=["rotations"], opset_version=OPSET, dynamic_axes=dynamic)  # fmt: skip
    return buffer.getvalue()


def lift_squeezes(model: bytes) -> bytes:
    """Drop ``Squeeze`` / ``Unsqueeze`` pairs around element-wise arithmetic (same results, fewer nodes).

    Torch code that splits a tensor into its components (``unbind``), computes with them and stacks the
    results exports as ``Split -> Squeeze -> (arithmetic) -> Unsqueeze -> Concat``; a single pose pays about a
    microsecond of onnxruntime overhead per node, and these moves are a large share of the nodes of the
    rotation conversions. This pass keeps the squeezed axis instead: the arithmetic runs on the unsqueezed
    tensors (every other operand spans only the axes after the kept one, so numpy broadcasting lines up as
    before; constants with more axes get the size-1 axis inserted), and an ``Unsqueeze`` that would put the
    same axis back is skipped. Values still needed in squeezed form by other operators keep their original
    nodes; unused nodes are removed. No arithmetic changes, only shapes with a size-1 axis.

    Parameters
    ----------
    model : bytes
        An ONNX model (opset >= 13: axes are inputs).

    Returns
    -------
    bytes
        The rewritten model.
    """
    import onnx
    from onnx import helper, numpy_helper

    proto = onnx.shape_inference.infer_shapes(onnx.load_from_string(model))
    graph = proto.graph
    consts = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            consts[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in [*graph.input, *graph.value_info, *graph.output]
             if v.type.tensor_type.HasField("shape")}  # fmt: skip
    ranks.update({k: v.ndim for k, v in consts.items()})
    outputs = {o.name for o in graph.output}

    def single_axis(node: Any) -> int | None:
        axes = consts.get(node.input[1]) if len(node.input) > 1 else None
        return None if axes is None or axes.size != 1 else int(axes.reshape(-1)[0])

    lifted: dict[str, tuple[str, int]] = {}  # value -> (the same with a size-1 axis kept, axes after it)
    alias: dict[str, str] = {}
    nodes, extra = [], []
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in alias:
                node.input[i] = alias[name]
        nodes.append(node)
        axis = single_axis(node) if node.op_type in ("Squeeze", "Unsqueeze") else None
        rank = ranks.get(node.input[0]) if node.input else None
        if node.op_type == "Squeeze" and rank is not None and axis is not None:
            lifted[node.output[0]] = (node.input[0], rank - 1 - axis % rank)
        elif node.op_type == "Unsqueeze" and node.input[0] in lifted and node.output[0] not in outputs:
            if rank is not None and axis is not None and rank - axis % (rank + 1) == lifted[node.input[0]][1]:
                alias[node.output[0]] = lifted[node.input[0]][0]
        elif node.op_type in _ELEMENTWISE and any(n in lifted for n in node.input):
            after = {lifted[n][1] for n in node.input if n in lifted}
            if len(after) != 1 or len(node.output) != 1:
                continue
            q = after.pop()
            inputs = []
            for name in node.input:
                if not name or name in lifted:
                    inputs.append(lifted[name][0] if name else name)
                elif ranks.get(name, q + 1) <= q:
                    inputs.append(name)
                elif name in consts:  # insert the kept axis into the constant
                    value = consts[name]
                    inputs.append(f"{name}__lift{q}")
                    if inputs[-1] not in consts:
                        consts[inputs[-1]] = np.expand_dims(value, value.ndim - q)
                        extra.append(numpy_helper.from_array(consts[inputs[-1]], inputs[-1]))
                else:
                    break
            else:
                out = f"{node.output[0]}__lift"
                nodes.append(helper.make_node(node.op_type, inputs, [out], name=f"{node.name}__lift",
                                              domain=node.domain, **{a.name: helper.get_attribute_value(a) for a in node.attribute}))  # fmt: skip
                lifted[node.output[0]] = (out, q)
    needed = set(outputs)
    kept = []
    for node in reversed(nodes):  # drop what nothing reads
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(n for n in node.input if n)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    initializers = [t for t in [*graph.initializer, *extra] if t.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    del graph.value_info[:]
    return proto.SerializeToString()


def export_onnx(net: IKGAT, path: str | os.PathLike) -> Path:
    """Write ``net`` as ONNX to ``path`` (atomically)."""
    data = onnx_bytes(net)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def _basic_optimised(model: bytes) -> bytes:
    """``model`` after onnxruntime's basic graph optimisations (constant folding, redundant nodes; no
    hardware-specific rewrites), so static shapes are constants for :func:`lift_squeezes`."""
    import tempfile

    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    with tempfile.TemporaryDirectory() as tmp:
        options.optimized_model_filepath = str(Path(tmp) / "basic.onnx")
        ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        return Path(options.optimized_model_filepath).read_bytes()


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
        #: whether the batch-1 session runs the :func:`lift_squeezes` graph
        self.lifted = False

    @classmethod
    def from_model(cls, net: IKGAT, threads: int | None = None) -> OrtRunner:
        """Export ``net`` in memory and open sessions on it: dynamic batch, and batch 1 with static shapes
        (constant-folded by onnxruntime's basic level, then :func:`lift_squeezes`; used only if it gives the
        dynamic graph's results to 1e-5 on a probe pose, else the plain batch-1 graph)."""
        single = onnx_bytes(net, batch=1)
        runner = cls(onnx_bytes(net), threads, single=single)
        try:
            lifted = lift_squeezes(_basic_optimised(single))
            lean = cls(lifted, threads).session
        except Exception:  # noqa: BLE001 - the plain static graph still works
            return runner
        height = 1.0 / float(net.get_buffer("inv_height"))
        rest = net.get_buffer("rest_features")[:, 3:].numpy() * height  # the rest pose, jittered by 1% of height
        probe = (rest + np.random.default_rng(0).normal(scale=0.01 * height, size=(2, *rest.shape))).astype(np.float32)
        want = runner.session.run(None, {"positions": probe})[0][:1]
        if float(np.abs(lean.run(None, {"positions": probe[:1]})[0] - want).max()) <= 1e-5:
            runner.single, runner.lifted = lean, True
        return runner

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """``(B, J, 3)`` positions to ``(B, J, 4)`` local quaternions (float32 NumPy)."""
        x = np.ascontiguousarray(positions, dtype=np.float32)
        session = self.single if self.single is not None and x.shape[0] == 1 else self.session
        return session.run(None, {"positions": x})[0]
