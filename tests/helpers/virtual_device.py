"""A stand-in accelerator for machines without one, to test that code runs on a device other than the CPU.

Inside ``with VirtualDevice():`` the ``meta`` device acts as a GPU would: ``x.to("meta")``, ``module.to("meta")``
and factories given ``device="meta"`` make :class:`OnDevice` tensors, which report ``device == meta`` but hold
real CPU values underneath, so results can be compared bit for bit with a CPU run. The rules CUDA enforces are
enforced here, each as a :class:`DeviceMismatch`:

* an operation mixing tensors on the device with CPU tensors of one or more dimensions (0-dim CPU tensors are
  scalars to CUDA too; CPU index tensors may index device tensors, and ``copy_`` copies across devices);
* a CPU ``torch.Generator`` drawing device tensors;
* a real (value-less) meta tensor, which only code that bypassed the device would make;
* float64 on the device (unless ``VirtualDevice(float64=True)``): Apple's MPS has none, and GPUs run it at a
  fraction of float32's speed, so a float64 tensor there is a slip (an unconverted CPU default).

``.cpu()`` / ``.to("cpu")`` bring a tensor back; ``.numpy()`` on a device tensor fails as it does for CUDA.
``torch.inference_mode()`` runs as ``torch.no_grad()`` inside (the wrappers cannot be inference tensors; values
and device rules are the same).
"""

from __future__ import annotations

import contextlib
from typing import Any, Self

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

#: The device the stand-in reports.
DEVICE = torch.device("meta")

aten = torch.ops.aten
#: Operations that may take CPU index tensors alongside device tensors, as CUDA's do.
_INDEXING = {aten.index.Tensor, aten.index_put.default, aten.index_put_.default, aten._index_put_impl_.default}


class DeviceMismatch(RuntimeError):
    """What CUDA would raise: tensors on two devices in one operation."""


class OnDevice(torch.Tensor):
    """A tensor "on the device": reports :data:`DEVICE`, computes with the CPU tensor it wraps."""

    cpu_data: torch.Tensor

    @staticmethod
    def __new__(cls, data: torch.Tensor) -> Self:
        return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, data.shape, strides=data.stride(), storage_offset=data.storage_offset(), dtype=data.dtype,
            device=DEVICE, requires_grad=data.requires_grad,
        )  # fmt: skip

    def __init__(self, data: torch.Tensor) -> None:
        self.cpu_data = data

    @property
    def is_meta(self) -> bool:  # type: ignore[override]
        """False: these hold values (torch would warn that loading a state dict into them does nothing)."""
        return False

    def __repr__(self) -> str:  # type: ignore[override]
        return f"OnDevice({self.cpu_data!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        raise RuntimeError(f"{func} on a virtual-device tensor outside `with VirtualDevice():`")


def _follow_metadata(tensor: OnDevice) -> None:
    """After an in-place view change (``transpose_``, ``unsqueeze_``, ...) of the CPU values, give the wrapper the
    same sizes and strides: ``as_strided_`` on the wrapper itself, run by the meta kernel (it holds no data)."""
    data = tensor.cpu_data
    if tensor.shape == data.shape and tensor.stride() == data.stride():
        return
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
        aten.as_strided_.default(tensor, data.shape, data.stride(), data.storage_offset())


def _is_device(device: Any) -> bool:
    return device is not None and torch.device(device) == DEVICE


class VirtualDevice:
    """``with VirtualDevice():`` makes :data:`DEVICE` behave as an accelerator (module docstring)."""

    def __init__(self, *, float64: bool = False) -> None:
        self._modes = (_Construction(), _Operations(float64))
        self._inference_mode = torch.inference_mode

    @property
    def operations(self) -> int:
        """How many operations ran on the device so far (a test can tell the device was used at all)."""
        return self._modes[1].count

    def __enter__(self) -> Self:
        for mode in self._modes:
            mode.__enter__()
        torch.inference_mode = _no_grad_inference  # type: ignore[assignment,misc]
        return self

    def __exit__(self, *exc: object) -> None:
        torch.inference_mode = self._inference_mode  # type: ignore[misc]
        for mode in reversed(self._modes):
            mode.__exit__(*exc)


def _no_grad_inference(mode: bool = True) -> contextlib.AbstractContextManager[Any]:
    """``torch.inference_mode(mode)`` on the stand-in: ``no_grad`` (``mode=False``: nothing changes)."""
    return torch.no_grad() if mode else contextlib.nullcontext()


#: Constructors from Python data, which place their result without dispatching a device copy.
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray}
#: Their method forms, which place the result on ``self``'s device.
_NEW_FROM_DATA = {torch.Tensor.new_tensor}


_INDEXING_METHODS = {torch.Tensor.__getitem__, torch.Tensor.__setitem__}


def _list_indices_as_tensors(index: Any) -> Any:
    if isinstance(index, list):
        return torch.tensor(index)
    if isinstance(index, tuple):
        return tuple(torch.tensor(i) if isinstance(i, list) else i for i in index)
    return index


class _Construction(TorchFunctionMode):
    """``torch.tensor(data, device=DEVICE)`` and its kin: built on the CPU, then moved (a dispatched copy)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        if func in _FROM_DATA and _is_device(kwargs.get("device")):
            return func(*args, **{**kwargs, "device": "cpu"}).to(DEVICE)
        if func in _INDEXING_METHODS and isinstance(args[0], OnDevice):  # list indices: made CPU tensors here, as
            # torch would make them on the device without a dispatched copy
            return func(args[0], _list_indices_as_tensors(args[1]), *args[2:], **kwargs)
        if func in _NEW_FROM_DATA and isinstance(args[0], OnDevice) and kwargs.get("device") is None:
            return func(args[0].cpu_data, *args[1:], **kwargs).to(DEVICE)
        return func(*args, **kwargs)


def _leaves(out: Any) -> list[Any]:
    return list(out) if isinstance(out, (list, tuple)) else [out]


class _Operations(TorchDispatchMode):
    """Every operation: device rules checked, computed on the CPU values, results put back on the device."""

    def __init__(self, float64: bool) -> None:
        super().__init__()
        self.float64 = float64
        self.count = 0  # operations that ran on the device

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        kwargs = kwargs or {}
        on: list[OnDevice] = []
        off: list[torch.Tensor] = []
        generators: list[torch.Generator] = []

        def scan(x: Any) -> Any:
            if isinstance(x, OnDevice):
                on.append(x)
            elif isinstance(x, torch.Tensor):
                if x.device == DEVICE:
                    raise DeviceMismatch(f"{func}: a value-less meta tensor (made outside the virtual device)")
                if x.dim() > 0:
                    off.append(x)
            elif isinstance(x, torch.Generator):
                generators.append(x)
            return x

        tree_map(scan, (args, kwargs))
        target = kwargs.get("device")
        unwrapped_args, unwrapped_kwargs = tree_map(lambda x: x.cpu_data if isinstance(x, OnDevice) else x, (args, kwargs))
        if func is aten._to_copy.default and target is not None and not _is_device(target):
            return func(*unwrapped_args, **unwrapped_kwargs)  # leaving the device
        creates = _is_device(target)
        if on and off and func not in _INDEXING and func is not aten.copy_.default:
            raise DeviceMismatch(f"{func}: tensors on the device and a CPU tensor of shape {tuple(off[0].shape)}")
        if (on or creates) and any(g.device.type == "cpu" for g in generators):
            raise DeviceMismatch(f"{func}: a CPU generator drawing device tensors")
        if creates:
            unwrapped_kwargs = {**unwrapped_kwargs, "device": torch.device("cpu")}
        out = func(*unwrapped_args, **unwrapped_kwargs)
        if func is aten.copy_.default:
            return args[0]
        if not (on or creates) or func is aten._local_scalar_dense.default:
            return out
        self.count += 1
        if not self.float64 and any(isinstance(x, torch.Tensor) and x.dtype == torch.float64 for x in _leaves(out)):
            raise DeviceMismatch(f"{func}: float64 on the device (MPS has none; GPUs run it at a fraction of float32's speed)")
        if func._schema.name.endswith("_") and isinstance(args[0], OnDevice):  # in place: the same tensor back
            _follow_metadata(args[0])
            return args[0]
        return tree_map(lambda x: OnDevice(x) if isinstance(x, torch.Tensor) and not isinstance(x, OnDevice) else x, out)
