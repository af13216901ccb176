"""Tensor plumbing: numpy at the edges (for the whole package), shape checks and NaN-free norms (for
the rotation modules).

Torch is the compute backend; numpy is accepted and returned at the edges. A public array function is
written for tensors and decorated with :func:`numpy_in_numpy_out` (re-exported by
:mod:`skelanim.core.rotations`), which is the one place that converts between the two. Internal to
skelanim: users reach these through the modules that re-export them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np
import torch
from torch import Tensor

from skelanim.errors import ShapeError

F = TypeVar("F", bound=Callable[..., Any])
#: What array functions accept (and, by :func:`numpy_in_numpy_out`, give back in kind).
ArrayLike = np.ndarray | Tensor


# --------------------------------------------------------------------------------------------- edges


def as_tensor(x: Any, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Tensor:
    """Convert ``x`` (tensor, NumPy array, number or nested list) to a floating tensor.

    Parameters
    ----------
    x : Tensor | np.ndarray | float | list
        Input data. A floating tensor is returned as is (no copy) unless ``dtype``/``device`` ask otherwise; a
        NumPy array shares its memory unless it is read-only, reversed (a negative stride) or byte-swapped
        (then it is copied: :func:`_torch_layout`).
    dtype : torch.dtype, optional
        Target dtype. Default: keep a floating dtype, make anything else float64.
    device : torch.device | str, optional
        Target device. Default: keep.

    Returns
    -------
    Tensor
        Same shape as ``x``.
    """
    if not isinstance(x, Tensor):
        x = torch.from_numpy(_torch_layout(np.asarray(x)))
    if dtype is None and not x.is_floating_point():
        dtype = torch.float64
    return x if dtype is None and device is None else x.to(dtype=dtype, device=device)


def _torch_layout(arr: np.ndarray) -> np.ndarray:
    """``arr`` itself where ``torch.from_numpy`` can share its memory, else a C-contiguous copy in native byte
    order: for a read-only array, a view with a negative stride (``a[::-1]``, ``np.flip``) or a stride that is not
    a multiple of the item size, or a non-native byte order (``astype(">f8")``). Looks at the flags, dtype and
    strides only (O(ndim)); copies only where torch could not take the array."""
    size = arr.itemsize or 1
    if arr.flags.writeable and arr.dtype.isnative and all(s >= 0 and s % size == 0 for s in arr.strides):
        return arr
    return np.array(arr, dtype=arr.dtype.newbyteorder("="), order="C")


def to_numpy(out: Any) -> Any:
    """Tensors as NumPy arrays (detached, on the CPU), also inside a tuple; anything else as it is."""
    if isinstance(out, Tensor):
        return out.detach().cpu().numpy()
    if isinstance(out, tuple):
        return tuple(to_numpy(o) for o in out)
    return out


def numpy_in_numpy_out(fn: F) -> F:
    """Decorate a torch function so it also accepts NumPy arrays.

    NumPy array arguments become tensors (on the device of any tensor argument). If at least one argument
    is a NumPy array and none is a tensor, tensors in the result (or a tuple of results) come back as NumPy
    arrays; otherwise the result is returned untouched.

    Parameters
    ----------
    fn : Callable
        Function whose array arguments and results are tensors.

    Returns
    -------
    Callable
        The wrapped function, same signature.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        values = (*args, *kwargs.values())
        if not any(isinstance(v, np.ndarray) for v in values):
            return fn(*args, **kwargs)
        tensors = [v for v in values if isinstance(v, Tensor)]
        device = tensors[0].device if tensors else None

        def conv(v: Any) -> Any:
            return as_tensor(v, device=device) if isinstance(v, np.ndarray) else v

        out = fn(*(conv(a) for a in args), **{k: conv(v) for k, v in kwargs.items()})
        return out if tensors else to_numpy(out)

    return cast(F, wrapper)


# ------------------------------------------------------------------------------------------- helpers


def along_frames(fn: Callable[..., Tensor], x: Any, dim: int, name: str, *, vectors: bool = False,
                 **kwargs: Any) -> Tensor:  # fmt: skip
    """``fn(x, **kwargs)`` for a ``fn`` whose frames are axis 0, with the frames on axis ``dim`` of ``x`` instead:
    moved to the front and the result's moved back (``dim=1`` for a ``(B, F, ...)`` batch of clips).

    Parameters
    ----------
    fn : callable
        Takes a frames-first tensor and ``kwargs``.
    x : Tensor or np.ndarray
        The signal.
    dim : int
        Its frame axis (negative counts from the end).
    name : str
        ``x``'s name in errors.
    vectors : bool
        ``x``'s last axis holds each sample's components (a quaternion's four), never frames.
    """
    t = as_tensor(x)
    axis = dim + t.ndim if dim < 0 else dim
    if not 0 <= axis < t.ndim - (1 if vectors and t.ndim > 1 else 0):
        what = "a frame axis" if 0 <= axis < t.ndim else "an axis"
        raise ShapeError(f"dim={dim} is not {what} of {name} with shape {tuple(t.shape)}")
    return fn(t, **kwargs) if axis == 0 else fn(t.movedim(axis, 0), **kwargs).movedim(0, axis)


def _check_broadcast(*args: tuple[str, Tensor, int], over: str = "leading dims") -> tuple[int, ...]:
    """The broadcast shape of the arguments' leading dims, each given as ``(name, tensor, tail)``: all but its
    last ``tail`` dims (its components). Where they do not broadcast, a one-line :class:`ShapeError` naming
    every argument and its shape (torch's error names "tensor a" and "tensor b"). Shapes only: O(ndim). NumPy's
    ``broadcast_shapes``: torch's imports sympy on first use (a fifth of a second) and is slower per call."""
    try:
        return np.broadcast_shapes(*(tuple(x.shape[: x.ndim - tail]) for _, x, tail in args))
    except ValueError:
        named = [f"{name} {tuple(x.shape)}" for name, x, _ in args]
        raise ShapeError(f"{', '.join(named[:-1])} and {named[-1]} do not broadcast over their {over}") from None


def _check(x: Tensor, tail: tuple[int, ...], name: str) -> None:
    if x.ndim < len(tail) or tuple(x.shape[x.ndim - len(tail) :]) != tail:
        want = ", ".join(["..."] + [str(t) for t in tail])
        raise ShapeError(f"{name} must have shape ({want}), got {tuple(x.shape)}")


def _like(x: Any, ref: Tensor) -> Tensor:
    """``x`` as a floating tensor on ``ref``'s device (``ref``'s dtype unless ``x`` is already floating)."""
    if isinstance(x, Tensor) and x.is_floating_point():
        return x.to(device=ref.device)
    return as_tensor(x, dtype=ref.dtype, device=ref.device)


def _eps2(x: Tensor) -> float:
    return float(torch.finfo(x.dtype).eps) ** 2


def _sum_sq(x: Tensor, keepdim: bool = True) -> Tensor:
    return (x * x).sum(-1, keepdim=keepdim)


def _safe_norm(x: Tensor, keepdim: bool = True) -> Tensor:
    """Euclidean norm over the last dim; gradient 0 (not NaN) at ``x == 0``."""
    sq = _sum_sq(x, keepdim)
    ok = ~(sq <= 0)  # NaN stays NaN
    return torch.where(ok, torch.sqrt(torch.where(ok, sq, torch.ones_like(sq))), torch.zeros_like(sq))


def _safe_normalize(x: Tensor, fallback: Tensor, ref_sq: Tensor | float = 0.0, rel: float = 1.0) -> Tensor:
    """``x / |x|`` over the last dim, ``fallback`` where ``|x|^2 <= rel^2 eps^2 (1 + ref_sq)``."""
    sq = _sum_sq(x)
    ok = ~(sq <= (rel * rel * _eps2(x)) * (1.0 + ref_sq))  # NaN stays NaN
    return torch.where(ok, x / torch.sqrt(torch.where(ok, sq, torch.ones_like(sq))), fallback)


def _safe_atan2(y: Tensor, x: Tensor) -> Tensor:
    """``atan2(y, x)`` that is 0 with zero gradient at ``x == y == 0``."""
    ok = ~((x * x + y * y) <= 0)  # NaN stays NaN
    return torch.atan2(torch.where(ok, y, torch.zeros_like(y)), torch.where(ok, x, torch.ones_like(x)))


_CYCLES: dict[torch.device, tuple[Tensor, Tensor]] = {}


def _cross(a: Tensor, b: Tensor) -> Tensor:
    """``(..., 3)`` cross product ``a_yzx b_zxy - a_zxy b_yzx`` of broadcastable ``(..., 3)`` vectors: four
    gathers and three products (seven ONNX nodes instead of the 21 of the component form; also faster in eager
    torch)."""
    if a.device not in _CYCLES:
        with torch.inference_mode(False):  # cached for every later call: never an inference-mode tensor
            _CYCLES[a.device] = (torch.tensor([1, 2, 0], device=a.device), torch.tensor([2, 0, 1], device=a.device))
    yzx, zxy = _CYCLES[a.device]
    return a.index_select(-1, yzx) * b.index_select(-1, zxy) - a.index_select(-1, zxy) * b.index_select(-1, yzx)


