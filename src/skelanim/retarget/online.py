"""One streamed frame as a compiled graph: what makes :meth:`.Retargeter.step` fast.

A streamed frame is a few hundred tiny tensor operations (quaternions of a few dozen joints, two GRU cells
of width 128); run one by one from Python, each costs more in dispatch than in arithmetic, which held the
eager NKN step to ~400 frames/s and a TorchScript trace to ~900 (eager steps measured 2026-12-05: ik ~290, nkn
~640, copy ~1,600, naive ~2,400 frames/s; their graphs 2.5-4.7 times that). :class:`OnnxStep` exports the per-frame
function once (in memory, with the TorchScript-based exporter, ``dynamo=False``, which needs no extra
packages) and runs it in an onnxruntime session with one thread, where the whole frame is a single call.
The stream state (a ``started`` flag, 0 on the first frame; running floor, previous foot positions, GRU hidden
states, previous hips; IK's foot pins, pinned flags and foot and toe offsets) goes in and comes out as graph
inputs and outputs, so the graph itself is stateless, and an all-zero state starts a stream.

The ``torch`` runtime (:class:`.Retargeter`'s ``runtime="torch"``) runs the same function eagerly; a test
checks the two against each other.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["OPSET", "OnnxStep", "onnx_available", "onnx_bytes"]

OPSET = 17


def onnx_available() -> bool:
    """Whether onnxruntime can be imported."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:  # pragma: no cover - onnxruntime is a dependency
        return False
    return True


def onnx_bytes(module: nn.Module, example: tuple[Tensor, ...], input_names: Sequence[str],
               output_names: Sequence[str] | None = None) -> bytes:  # fmt: skip
    """``module`` (a pure function of its tensor inputs) exported with ``example`` inputs (shapes fixed) as an
    ONNX model, in memory; inputs it does not read are dropped by the exporter."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
        warnings.simplefilter("ignore")
        # the TorchScript exporter (dynamo=False) writes to a file object; torch annotates ``f`` as a path only
        torch.onnx.export(module.eval(), example, buffer, dynamo=False, input_names=list(input_names),  # type: ignore[arg-type]
                          output_names=None if output_names is None else list(output_names), opset_version=OPSET)  # fmt: skip
    return buffer.getvalue()


class OnnxStep:
    """An onnxruntime session on ``module`` exported with ``example`` inputs (shapes are fixed).

    Parameters
    ----------
    module : nn.Module
        A pure function of its tensor inputs returning a tuple of tensors.
    example : tuple of Tensor
        Inputs of the right shapes and dtypes.

    Raises
    ------
    Exception
        Whatever the exporter or onnxruntime raise for a graph they cannot handle (the caller falls back).
    """

    def __init__(self, module: nn.Module, example: tuple[Tensor, ...]) -> None:
        import onnxruntime as ort

        names = [f"in{i}" for i in range(len(example))]
        data = onnx_bytes(module, example, names)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        # the exporter drops inputs the graph does not use; keep the positions of those it kept
        kept = {i.name for i in self.session.get_inputs()}
        self._inputs = [(i, n) for i, n in enumerate(names) if n in kept]
        self.size = len(data)

    def __call__(self, *arrays: np.ndarray) -> list[np.ndarray]:
        """Run one frame: NumPy inputs in the order of ``example``, NumPy outputs."""
        return self.session.run(None, {n: arrays[i] for i, n in self._inputs})
