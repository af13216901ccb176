r"""Classical IK baselines: analytic swing IK and per-frame Levenberg-Marquardt optimisation.

Both take world joint positions ``(F, J, 3)`` of an :class:`~skelanim.ik.frames.IKRig` and an initial pose
(local unit quaternions ``(F, J, 4)`` or ``(J, 4)``: the rest pose, a mean pose, or - through
:func:`solve_sequential` - the previous frame's answer) and return local quaternions ``(F, J, 4)`` plus
the local translations ``(F, J, 3)`` that place the IK root where it was observed. Bone lengths are the
rig's rest offsets.

Swing IK
--------
Parents first, for each joint ``j`` with parent world rotation ``R_p`` and initial local rotation
``L0``, start from ``R0 = R_p L0``:

* one child ``c`` (with a non-zero offset): ``R_j = S R0`` where ``S`` is the smallest rotation carrying
  the current bone direction ``R0 t_c`` onto the observed ``p_c - p_j``: the init's twist about the bone is
  kept;
* several non-collinear children: ``R_j`` is the least-squares (Kabsch / Wahba) rotation carrying the rest
  offsets ``t_c`` onto the observed ``p_c - p_j``, which fixes all three degrees of freedom;
* no child: ``R_j = R0`` (nothing observed).

On exact positions of the rig every bone ends where it was observed, so positions are reproduced exactly.

Optimisation
------------
Minimise ``sum_i |p_i(L) - p_i^obs|^2 / h^2 + w sum_k |log(L_init,k^T L_k)|^2`` over the local rotations
of joints that move something (``h`` the skeleton height, ``w`` a small prior toward the init) with
Levenberg-Marquardt, every frame its own problem, all frames batched. A local update
``L_k <- L_k exp(delta_k)`` turns joint ``k``'s subtree about the world axis ``R_k delta_k``, so the
Jacobian block of a descendant ``i`` is ``dp_i/d delta_k = -[p_i - p_k]_x R_k`` (zero otherwise): exact,
cheap, no autograd. The damping adapts per frame (halved on success, tripled on failure). It stops after a fixed
count of iterations, or earlier where asked: once every joint is within ``tol`` of its target, or once every frame's
proposed step turns no joint by more than ``step_tol`` radians (converged: the default of the ``optimize_*``
methods, :data:`CONVERGED_STEP`, so that a baseline is timed doing the work its answer needs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from skelanim.core._tensor import _cross, numpy_in_numpy_out
from skelanim.core.kinematics import forward_kinematics
from skelanim.core.rotations import (
    matrix_to_quat,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    quat_to_rotvec,
    rotvec_to_quat,
)
from skelanim.ik.frames import IKRig

__all__ = ["CONVERGED_STEP", "kabsch", "optimize_ik", "rotation_between", "solve_sequential", "swing_ik"]

_EPS = 1e-12

#: The ``optimize_*`` methods' convergence: every frame's next LM step turns no joint by more than this (radians;
#: 1e-5 rad is 0.0006 degrees). On 120 held-out Bandai poses (angry), one call each from the mean pose, the answers
#: are within 0.0007 degrees (max over joints and frames) of 100 fixed iterations', 0.0023 at 1 % noise; the fixed
#: 100 had timed 13 times the work the exact poses need (6.6 against 89 poses/s, one thread).
CONVERGED_STEP = 1e-5


# skew(v).flatten() = v @ _LEVI: one matmul (few graph nodes in ONNX), [[0, -z, y], [z, 0, -x], [-y, x, 0]]
_LEVI = torch.zeros(3, 9)
_LEVI[2, 1], _LEVI[1, 2], _LEVI[2, 3], _LEVI[0, 5], _LEVI[1, 6], _LEVI[0, 7] = -1.0, 1.0, 1.0, -1.0, -1.0, 1.0


def _skew(v: Tensor) -> Tensor:
    """``(..., 3)`` vectors to ``(..., 3, 3)`` cross-product matrices ``[v]_x`` (``[v]_x w = v x w``)."""
    return (v @ _LEVI.to(v.dtype)).unflatten(-1, (3, 3))


@numpy_in_numpy_out
def rotation_between(u: Tensor, v: Tensor, *, half_turn: bool = True) -> Tensor:
    """The smallest rotation carrying direction ``u`` onto direction ``v`` (Rodrigues' formula).

    ``R = I + [w]_x + [w]_x^2 / (1 + c)`` with ``w = u x v``, ``c = u . v`` for unit ``u, v``.

    Parameters
    ----------
    u, v : Tensor or ndarray
        ``(..., 3)`` vectors (any length; broadcast); NumPy in, NumPy out.
    half_turn : bool
        Handle exactly opposite vectors (``u . v < -1 + 1e-7``) with a half turn; ``False`` saves a dozen
        graph nodes and returns a finite but arbitrary matrix there (the network's swing chain, where the
        learned correction follows).

    Returns
    -------
    Tensor
        ``(..., 3, 3)`` rotation matrices; for opposite vectors a half turn about an axis normal to ``u``;
        the identity when either vector is zero.
    """
    u = u / u.norm(dim=-1, keepdim=True).clamp_min(_EPS)
    v = v / v.norm(dim=-1, keepdim=True).clamp_min(_EPS)
    u, v = torch.broadcast_tensors(u, v)
    c = (u * v).sum(-1)[..., None, None]
    k = _skew(_cross(u, v))
    eye = torch.eye(3, dtype=u.dtype, device=u.device)
    turn = eye + k + (k @ k) / (1.0 + c).clamp_min(1e-9)
    if not half_turn:
        return turn
    least = eye[u.abs().argmin(-1)]
    n = _cross(u, least)
    n = n / n.norm(dim=-1, keepdim=True).clamp_min(_EPS)
    half = 2.0 * n[..., :, None] * n[..., None, :] - eye
    return torch.where(c < -1.0 + 1e-7, half, turn)


def swing_polynomial(u: Tensor) -> tuple[Tensor, Tensor]:
    """Coefficients that give :func:`rotation_between` ``(u, v)`` for a fixed ``u`` as a ratio of
    polynomials in ``v`` (:func:`rotation_onto`), for a swing chain whose source axes are constants.

    For unit ``u`` and ``v`` (or ``v = 0``), with ``c = u . v`` and ``K = [u x v]_x``, Rodrigues' formula is
    ``R = N(v) / (1 + c)`` with ``N = (1 + c) I + (1 + c) K + K^2``: every entry of ``N`` and ``1 + c`` is a
    polynomial of degree at most 2 in ``v``, i.e. a fixed linear map of the monomials ``m(v) = (v, v v^T)``
    ``(12,)`` plus a constant. ``v = 0`` gives ``N = I``, ``1 + c = 1``: the identity, as in
    :func:`rotation_between`. The coefficients are fitted in float64 on random ``v`` (exact: the map lies
    in their span).

    Parameters
    ----------
    u : Tensor
        ``(..., 3)`` source axes (normalised here).

    Returns
    -------
    tuple of Tensor
        ``(..., 12, 10)`` linear coefficients and ``(..., 1, 10)`` constants, float64: the first 9 columns
        give ``N`` (row-major), the last ``1 + c``.
    """
    u = u.to(torch.float64)
    u = u / u.norm(dim=-1, keepdim=True).clamp_min(_EPS)
    gen = torch.Generator().manual_seed(0)
    v = torch.randn(64, 3, generator=gen, dtype=torch.float64)
    v = torch.cat([v / v.norm(dim=-1, keepdim=True), v])  # unit and other lengths: N is a plain polynomial

    def numerator(v: Tensor) -> Tensor:  # (..., K, 10)
        uu = u[..., None, :].expand(*u.shape[:-1], v.shape[0], 3)
        c = (uu * v).sum(-1)[..., None, None]
        k = _skew(_cross(uu, v.expand_as(uu)))
        n = (1.0 + c) * (torch.eye(3, dtype=v.dtype) + k) + k @ k
        return torch.cat([n.flatten(-2), 1.0 + c[..., 0]], -1)

    monomials = torch.cat([v, (v[:, :, None] * v[:, None, :]).flatten(-2)], -1)  # (K, 12)
    unique = torch.tensor([0, 1, 2, 3, 4, 5, 7, 8, 11])  # v and the upper triangle of v v^T: full rank
    constant = numerator(torch.zeros(1, 3, dtype=torch.float64))  # (..., 1, 10)
    fit = torch.linalg.lstsq(monomials[:, unique].expand(*u.shape[:-1], -1, -1), numerator(v) - constant).solution
    linear = torch.zeros(*u.shape[:-1], 12, 10, dtype=torch.float64)
    linear[..., unique, :] = fit  # the lower triangle's products get 0
    return linear, constant


def rotation_onto(v: Tensor, linear: Tensor, constant: Tensor) -> Tensor:
    """The smallest rotation carrying the fixed axis of :func:`swing_polynomial` onto ``v``: the same
    matrix as :func:`rotation_between` (without its half turn) in eleven graph nodes instead of ~28.

    Parameters
    ----------
    v : Tensor
        ``(..., 1, 3)`` unit (or zero) target axes as rows.
    linear, constant : Tensor
        From :func:`swing_polynomial`, broadcast against ``v``'s leading dims: ``(..., 12, 10)``, ``(..., 1, 10)``.

    Returns
    -------
    Tensor
        ``(..., 3, 3)`` rotation matrices.
    """
    outer = v.transpose(-1, -2) * v  # (..., 3, 3); its 9 entries by size, not flatten's -1 (an exported ONNX Reshape
    monomials = torch.cat([v, outer.reshape(*outer.shape[:-2], 1, 9)], -1)  # cannot infer -1 at batch 0) (..., 1, 12)
    n = monomials @ linear + constant  # (..., 1, 10)
    return (n[..., :9] / n[..., 9:].clamp_min(1e-9)).unflatten(-1, (3, 3))[..., 0, :, :]


@numpy_in_numpy_out
def kabsch(source: Tensor, target: Tensor) -> Tensor:
    """Rotation ``R`` minimising ``sum_k |R source_k - target_k|^2`` (proper, det +1).

    Parameters
    ----------
    source : Tensor or ndarray
        ``(..., K, 3)`` vectors; NumPy in, NumPy out.
    target : Tensor or ndarray
        ``(..., K, 3)`` vectors (broadcast with ``source``).

    Returns
    -------
    Tensor
        ``(..., 3, 3)`` rotation matrices.
    """
    h = target.transpose(-1, -2) @ source  # sum_k target_k source_k^T
    u, _, vh = torch.linalg.svd(h)
    d = torch.linalg.det(u @ vh)
    fix = torch.ones_like(h[..., 0, :])
    fix = torch.cat([fix[..., :2], d[..., None]], -1)
    return (u * fix[..., None, :]) @ vh


def _init_quats(init: Tensor, frames: int, dtype: torch.dtype) -> Tensor:
    init = torch.as_tensor(init, dtype=dtype)
    return quat_normalize(init.expand(frames, -1, -1) if init.ndim == 2 else init)


def swing_ik(
    positions: Tensor, rig: IKRig, init: Tensor, *, joints: Sequence[int] | None = None
) -> tuple[Tensor, Tensor]:
    """Analytic swing IK (see the module docstring).

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` observed world positions.
    rig : IKRig
        The skeleton.
    init : Tensor
        ``(F, J, 4)`` or ``(J, 4)`` initial local quaternions (their twist is kept).
    joints : sequence of int, optional
        Solve only these joints; every other joint keeps its initial local rotation (where only some joints'
        children moved away from the init's positions, the same answer for less work).

    Returns
    -------
    tuple of Tensor
        Local quaternions ``(F, J, 4)`` and local translations ``(F, J, 3)``.
    """
    positions = torch.as_tensor(positions, dtype=torch.float64)
    solved = set(range(rig.num_joints)) if joints is None else set(joints)
    f = positions.shape[0]
    q0 = _init_quats(init, f, positions.dtype)
    local0 = quat_to_matrix(q0)
    eye = torch.eye(3, dtype=positions.dtype).expand(f, 3, 3)
    offsets = rig.offsets.to(positions.dtype)
    world: list[Tensor] = []
    local: list[Tensor] = []
    for j in range(rig.num_joints):
        p = rig.parents[j]
        parent = eye if p < 0 else world[p]
        if rig.fixed[j]:
            world.append(eye)
            local.append(eye)
            continue
        start = parent @ local0[:, j]
        kids = rig.bone_children[j] if j in solved else []
        observed = positions[:, kids] - positions[:, j : j + 1]  # (F, K, 3)
        rest = offsets[kids]
        collinear = len(kids) < 2 or float(torch.linalg.cross(rest[:1].expand_as(rest), rest).norm(dim=-1).max()) < 1e-6
        if not kids:  # nothing observed (or not solved): the init's rotation
            rot = start
        elif collinear:
            current = start @ rest[0]
            rot = rotation_between(current, observed[:, 0]) @ start
        else:
            rot = kabsch(rest, observed)
        world.append(rot)
        local.append(parent.transpose(-1, -2) @ rot)
    quats = matrix_to_quat(torch.stack(local, 1))
    return quats, rig.translations(positions[:, rig.ik_root])


#: Frames fitted at once by :func:`optimize_ik` (its Jacobians take about 190 KB a frame: 10,000 frames took 2 GB).
LM_CHUNK = 1024


def optimize_ik(
    positions: Tensor,
    rig: IKRig,
    init: Tensor,
    *,
    iterations: int = 100,
    prior: float | Tensor = 1e-4,
    damping: float = 1e-3,
    tol: float | None = None,
    step_tol: float | None = None,
) -> tuple[Tensor, Tensor]:
    """Per-frame Levenberg-Marquardt IK, batched over frames (see the module docstring).

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)`` observed world positions.
    rig : IKRig
        The skeleton.
    init : Tensor
        ``(F, J, 4)`` or ``(J, 4)`` initial local quaternions.
    iterations : int
        LM iterations (a fixed count unless ``tol`` is given, so timings are comparable).
    prior : float or Tensor
        Weight ``w`` of the pull toward the init (radians^2 against squared height fractions); a ``(F,)``
        tensor gives each frame its own.
    damping : float
        Initial LM damping (relative to the diagonal of ``J^T J``).
    tol : float, optional
        Stop early once every joint of every frame is within ``tol`` (a fraction of height) of its target (every
        frame of a block of :data:`LM_CHUNK` frames: longer inputs are fitted block by block, the same per-frame
        fits).
    step_tol : float, optional
        Stop early once every frame's proposed step turns no joint by more than ``step_tol`` radians (accepted or
        not: a step the damping has shrunk that far changes nothing either), e.g. :data:`CONVERGED_STEP`.

    Returns
    -------
    tuple of Tensor
        Local quaternions ``(F, J, 4)`` and local translations ``(F, J, 3)``.
    """
    positions = torch.as_tensor(positions, dtype=torch.float64)
    f = positions.shape[0]
    if f > LM_CHUNK:  # each frame is fitted on its own: blocks of frames bound the Jacobians' memory
        init_t, prior_t = torch.as_tensor(init), torch.as_tensor(prior)
        blocks = [optimize_ik(positions[i : i + LM_CHUNK], rig, init_t[i : i + LM_CHUNK] if init_t.dim() == 3 else init_t,
                              iterations=iterations, prior=prior_t[i : i + LM_CHUNK] if prior_t.dim() else prior,
                              damping=damping, tol=tol, step_tol=step_tol) for i in range(0, f, LM_CHUNK)]  # fmt: skip
        return torch.cat([b[0] for b in blocks]), torch.cat([b[1] for b in blocks])
    q_init = _init_quats(init, f, positions.dtype).clone()
    q_init[:, rig.fixed] = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=positions.dtype)  # a dummy root never rotates
    trans = rig.translations(positions[:, rig.ik_root])
    var = [k for k in rig.evaluated if bool(rig.descendant[:, k].any()) and not rig.fixed[k]]
    res = [i for i in rig.evaluated if i != rig.ik_root]
    if not var or iterations <= 0:
        return q_init.clone(), trans
    mask = rig.descendant[res][:, var].to(positions.dtype)[None, :, :, None, None]  # (1, R, V, 1, 1)
    scale = 1.0 / rig.height
    target = positions[:, res] * scale
    n = 3 * len(var)
    eye_n = torch.eye(n, dtype=positions.dtype)
    prior = torch.as_tensor(prior, dtype=positions.dtype).expand(f)[:, None]  # (F, 1)

    def evaluate(q: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        world, pos = forward_kinematics(q, trans, rig.parents)
        resid = (pos[:, res] * scale - target).reshape(f, -1)
        dev = quat_to_rotvec(quat_multiply(quat_conjugate(q_init[:, var]), q[:, var])).reshape(f, -1)
        cost = (resid * resid).sum(-1) + prior[:, 0] * (dev * dev).sum(-1)
        return world, pos * scale, resid, torch.cat([cost[:, None], dev], -1)

    q = q_init.clone()
    world, pos, resid, extra = evaluate(q)
    mu = torch.full((f, 1, 1), damping, dtype=positions.dtype)
    for _ in range(iterations):
        if tol is not None and float(resid.reshape(f, -1, 3).square().sum(-1).max()) <= tol * tol:
            break
        cost, dev = extra[:, 0], extra[:, 1:]
        arm = pos[:, res, None, :] - pos[:, None, var, :]  # (F, R, V, 3)
        jac = -(_skew(arm) @ world[:, None, var]) * mask  # (F, R, V, 3, 3)
        jac = jac.permute(0, 1, 3, 2, 4).reshape(f, 3 * len(res), n)
        jtj = jac.transpose(1, 2) @ jac
        grad = jac.transpose(1, 2) @ resid[..., None] + prior[..., None] * dev[..., None]
        diag = torch.diagonal(jtj, dim1=-2, dim2=-1)[..., None] * eye_n
        system = jtj + prior[..., None] * eye_n + mu * (diag + 1e-9 * eye_n)
        chol, _ = torch.linalg.cholesky_ex(system)
        delta = -torch.cholesky_solve(grad, chol)[..., 0].reshape(f, len(var), 3)
        if step_tol is not None and float(delta.norm(dim=-1).max()) <= step_tol:
            break
        q_try = q.clone()
        q_try[:, var] = quat_normalize(quat_multiply(q[:, var], rotvec_to_quat(delta)))
        w_try, p_try, r_try, e_try = evaluate(q_try)
        better = (e_try[:, 0] < cost) & torch.isfinite(e_try[:, 0])
        b = better[:, None]
        q = torch.where(b[..., None], q_try, q)
        world = torch.where(b[..., None, None], w_try, world)
        pos = torch.where(b[..., None], p_try, pos)
        resid = torch.where(b, r_try, resid)
        extra = torch.where(b, e_try, extra)
        mu = torch.where(better[:, None, None], mu * 0.5, mu * 3.0).clamp(1e-9, 1e9)
    return q, trans


def solve_sequential(
    positions: Tensor,
    first: Tensor,
    step: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]],
    *,
    starts: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Run a per-frame solver frame after frame, each frame initialised with the previous answer.

    Parameters
    ----------
    positions : Tensor
        ``(F, J, 3)``.
    first : Tensor
        ``(J, 4)`` or ``(F, J, 4)`` init for frames that start a sequence.
    step : callable
        ``step(positions_batch, init_batch) -> (quats, translations)``, e.g. a partial of :func:`swing_ik`.
    starts : Tensor, optional
        ``(F,)`` bool, true where a new sequence starts (default: only frame 0). Frames are processed in
        runs: all sequences advance together, one frame per call.

    Returns
    -------
    tuple of Tensor
        ``(F, J, 4)`` quaternions and ``(F, J, 3)`` translations.
    """
    positions = torch.as_tensor(positions, dtype=torch.float64)
    f = positions.shape[0]
    starts = torch.zeros(f, dtype=torch.bool) if starts is None else starts.clone()
    starts[0] = True
    first = _init_quats(first, f, positions.dtype)
    run_start = torch.cummax(torch.where(starts, torch.arange(f), torch.zeros(f, dtype=torch.long)), 0).values
    offset = torch.arange(f) - run_start
    quats = torch.empty(f, positions.shape[1], 4, dtype=positions.dtype)
    trans = torch.empty(f, positions.shape[1], 3, dtype=positions.dtype)
    for k in range(int(offset.max()) + 1):
        idx = torch.nonzero(offset == k)[:, 0]
        init = first[idx] if k == 0 else quats[idx - 1]
        quats[idx], trans[idx] = step(positions[idx], init)
    return quats, trans
