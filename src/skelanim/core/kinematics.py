"""Forward kinematics: local rotations and translations to world rotations and positions.

For joint ``j`` with parent ``p`` (see the README's *Conventions*)::

    R_world[j] = R_world[p] @ R_local[j]
    p_world[j] = p_world[p] + R_world[p] @ t_local[j]

where ``t_local[j]`` is the rest offset, or the animated translation for joints whose channels animate
it, and the root's world position is the root translation. Everything is batched over leading
dimensions ``(..., J)`` and differentiable.

:func:`forward_kinematics` gives world rotations and positions; :func:`forward_kinematics_positions` only
positions (leaf joints' world rotations are then skipped); :func:`forward_kinematics_components` serves
callers that hold component-major data (``Motion``, whose rotations may still be Euler angles). All three
run the same code (:func:`_fk_levels`). The Hamilton product and the quaternion-to-matrix formula are
used as constant coefficient tables derived from their one implementation in
:mod:`skelanim.core.rotations` (:func:`_bilinear_table`, :func:`_quadratic_table`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import torch

from skelanim.core._tensor import _check_broadcast, as_tensor, numpy_in_numpy_out
from skelanim.core.rotations import (
    _quat_product_parts,
    _scaled_past_sqrt,
    _unit_quat_matrix_parts,
    quat_to_matrix,
)
from skelanim.errors import ShapeError

__all__ = [
    "LocalBlock", "end_site_positions", "forward_kinematics", "forward_kinematics_components",
    "forward_kinematics_joints", "forward_kinematics_positions",
]  # fmt: skip


@functools.lru_cache(maxsize=256)
def _tree_levels(parents: tuple[int, ...]) -> list[tuple[list[int], int, list[int]]]:
    """The joints by depth, one entry per level: ``(joints, inner, parent)``. ``joints`` are the level's joints,
    those with children first (``inner`` of them), then the leaves, each group in file order; ``parent`` gives
    each joint's parent as a position in the previous level's ``joints`` (``[]`` for level 0, the roots).
    Parents always have children, so they are among the first ``inner`` joints of their level."""
    depth: list[int] = []
    has_children = [False] * len(parents)
    for j, p in enumerate(parents):
        if p >= j:
            raise ShapeError(f"parents must come before their children: joint {j} has parent {p}")
        if p < -1:
            raise ShapeError(f"a parent index is a joint's or -1 for a root: joint {j} has parent {p}")
        depth.append(0 if p < 0 else depth[p] + 1)
        if p >= 0:
            has_children[p] = True
    by_level: list[list[int]] = [[] for _ in range(max(depth, default=-1) + 1)]
    for j, d in enumerate(depth):
        by_level[d].append(j)
    levels: list[tuple[list[int], int, list[int]]] = []
    previous: dict[int, int] = {}  # joint -> its position in the previous level
    for level in by_level:
        joints = [j for j in level if has_children[j]] + [j for j in level if not has_children[j]]
        levels.append((joints, sum(has_children[j] for j in level), [previous[parents[j]] for j in joints]
                       if previous else []))
        previous = {j: i for i, j in enumerate(joints)}
    return levels


@functools.lru_cache(maxsize=256)
def _index_tensors(parents: tuple[int, ...], device: torch.device
                   ) -> tuple[list[tuple[torch.Tensor, int, torch.Tensor | None]], torch.Tensor]:
    """:func:`_tree_levels` as index tensors on ``device``, and the permutation that puts joints listed level
    after level back in file order."""
    levels = _tree_levels(parents)
    inverse = [0] * len(parents)
    for i, j in enumerate(j for joints, _, _ in levels for j in joints):
        inverse[j] = i
    with torch.inference_mode(False):  # cached: must serve autograd too when first built under inference mode
        return ([(torch.tensor(joints, device=device), inner,
                  torch.tensor(parent, dtype=torch.long, device=device) if parent else None)
                 for joints, inner, parent in levels], torch.tensor(inverse, device=device))


@functools.lru_cache(maxsize=256)
def _rotated_joints(parents: tuple[int, ...], rotations: bool, device: torch.device) -> torch.Tensor:
    """The joints whose world rotation :func:`_fk_levels` computes, in the order it takes their local rotations:
    level after level, every joint (``rotations``) or those with children (positions only)."""
    joints = [j for level, inner, _ in _tree_levels(parents) for j in (level if rotations else level[:inner])]
    with torch.inference_mode(False):
        return torch.tensor(joints, dtype=torch.long, device=device)


def _bilinear_table(formula: Callable[[list[torch.Tensor], list[torch.Tensor]], list[torch.Tensor]],
                    size: int) -> torch.Tensor:
    """``(K, size * size)`` coefficients ``T`` with ``formula(a, b)[k] == sum_ij T[k, i * size + j] a_i b_j``
    for a formula that is bilinear in the components of ``a`` and ``b``: found by evaluating it on pairs of
    basis vectors, so the math stays written once (in :mod:`skelanim.core.rotations`)."""
    eye = torch.eye(size, dtype=torch.float64)
    basis = [list(eye[i].reshape(size, 1)) for i in range(size)]
    columns = [torch.cat(formula(basis[i], basis[j])) for i in range(size) for j in range(size)]
    return torch.stack(columns, 1)


def _quadratic_table(formula: Callable[[list[torch.Tensor]], list[torch.Tensor]], size: int) -> torch.Tensor:
    """``(K, size * size)`` coefficients ``T`` with ``formula(q)[k] == sum_ij T[k, i * size + j] q_i q_j`` for
    unit vectors ``q``, where ``formula`` is quadratic up to a constant (which ``|q|^2 = 1`` makes quadratic):
    by polarisation on basis vectors and their normalised sums. The coefficients are small integers and are
    rounded to them."""
    eye = torch.eye(size, dtype=torch.float64)

    def value(v: torch.Tensor) -> torch.Tensor:
        return torch.cat(formula(list(v.reshape(size, 1))))

    diag = [value(eye[i]) for i in range(size)]
    table = torch.zeros(diag[0].shape[0], size, size, dtype=torch.float64)
    for i in range(size):
        table[:, i, i] = diag[i]
        for j in range(i + 1, size):
            both = value((eye[i] + eye[j]) / math.sqrt(2.0)) * 2.0 - diag[i] - diag[j]  # = T_ij + T_ji
            table[:, i, j] = both
    return table.reshape(-1, size * size).round()


_PRODUCT = _bilinear_table(_quat_product_parts, 4)  # (4, 16): Hamilton product a * b from a_i b_j
_MATRIX = _quadratic_table(_unit_quat_matrix_parts, 4)  # (9, 16): rotation matrix entries from q_i q_j


def _pairs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``(C, ...)`` and ``(D, ...)`` -> ``(C * D, N)`` products ``a_i b_j``, ``N`` the flattened rest."""
    return (a[:, None] * b[None]).reshape(a.shape[0] * b.shape[0], math.prod(a.shape[1:]))


def _table(name: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return name if name.dtype == like.dtype and name.device == like.device else name.to(like)


def _widened(rotations: torch.Tensor, translations: torch.Tensor) -> torch.Tensor:
    """``rotations`` in the wider float dtype of the two, as the rotation functions compute mixed dtypes (float32
    rotations with float64 offsets had given float32 positions); the translations follow the rotations' dtype."""
    if translations.is_floating_point() and translations.dtype != rotations.dtype:
        return rotations.to(torch.promote_types(rotations.dtype, translations.dtype))
    return rotations


def _normalized(q: torch.Tensor) -> torch.Tensor:
    """``(4, ...)`` quaternion components scaled to unit length; zero quaternions become the identity (the
    rule of :func:`~skelanim.core.rotations.quat_normalize`, its overflow branch too)."""
    sq = (q * q).sum(0)
    if bool(torch.isinf(sq).any()):  # |q| past the float's square root: scaled down, not zeroed (a zero matrix had
        q = _scaled_past_sqrt(q, 0)  # collapsed the joint's subtree)
        sq = (q * q).sum(0)
    ok = ~(sq <= float(torch.finfo(q.dtype).eps) ** 2)  # NaN stays NaN: corrupt input is not drawn as a pose
    unit = q * torch.where(ok, sq, 1.0).rsqrt()
    identity = torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=q.dtype, device=q.device).reshape(4, *[1] * (q.ndim - 1))
    return torch.where(ok, unit, identity)


def _fk_levels(local: torch.Tensor, translations: torch.Tensor, root: torch.Tensor | None,
               parents: tuple[int, ...], rotations: bool) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Forward kinematics of one block of poses on component-major tensors: the one implementation behind
    :func:`forward_kinematics`, :func:`forward_kinematics_positions` and :func:`forward_kinematics_components`.

    Parameters
    ----------
    local:
        ``(4, Jr, B)`` unit local quaternion components of the joints :func:`_rotated_joints` lists, in its
        order (each level's are then one slice).
    translations:
        ``(3, J, B)`` or ``(3, J, 1)`` local translations, contiguous; a root's row is its world position
        unless ``root`` is given.
    root:
        ``(3, R, B)`` or ``(3, R, 1)`` world positions of the ``R`` roots, contiguous, or None.
    rotations:
        Whether world rotations are wanted; if not, they are computed only for joints with children.

    Returns
    -------
    Per level of the tree (joints as :func:`_tree_levels` lists them): ``(3, Jl, B)`` world positions and
    (if ``rotations``) ``(9, Jl, B)`` row-major world rotation matrix entries.

    Each level is a handful of operations on all its joints and poses at once: the world quaternions are
    Hamilton products ``parent * local`` (the pairwise products of components times a constant ``(4, 16)``
    table: one matrix product), the world matrices likewise from the pairwise products of each quaternion
    with itself, and each joint's position is its parent's plus the parent's matrix times its translation.
    """
    n = local.shape[-1]
    product, matrix = _table(_PRODUCT, local), _table(_MATRIX, local)
    world_q = world_m = world_p = None
    out_p: list[torch.Tensor] = []
    out_m: list[torch.Tensor] = []
    start = 0
    for joints, inner, parent in _index_tensors(parents, local.device)[0]:
        count = joints.shape[0]
        rotated = count if rotations else inner  # joints whose world rotation is needed
        q = local[:, start : start + rotated]
        start += rotated
        t = translations.index_select(1, joints)
        if parent is None:  # the roots
            p = (t if root is None else root).expand(3, count, n)
            wq = q
        else:
            assert world_q is not None and world_m is not None and world_p is not None
            if rotated:
                parent_q = world_q.index_select(1, parent[:rotated] if rotated < count else parent)
                wq = (product @ _pairs(parent_q, q)).view(4, rotated, n)
            else:
                wq = q
            parent_m = world_m.index_select(1, parent).view(3, 3, count, n)
            p = world_p.index_select(1, parent) + (parent_m * t[None]).sum(1)
        m = (matrix @ _pairs(wq, wq)).view(9, rotated, n) if rotated else wq.new_empty(9, 0, n)
        out_p.append(p)
        if rotations:
            out_m.append(m)
        world_q, world_m, world_p = wq[:, :inner], m[:, :inner], p[:, :inner]
    return out_p, out_m


_BLOCK = 49152  # joint-poses per block: the temporaries of a block stay in cache and are reused by the next
#: Poses per block per tree level, at least (up to :data:`_MIN_POSES`): each block pays every level's operations
#: once, so a deep chain (hundreds of levels of one joint) in blocks of _BLOCK // J poses had paid them F J / _BLOCK
#: times (time ~ F J^2); a shallow rig keeps blocks of _BLOCK // J poses, whose temporaries stay in cache
_POSES_PER_LEVEL = 16
_MIN_POSES = 1024

#: Local quaternion components of poses ``[start, stop)`` and of the given joints (in their order):
#: ``(start, stop, joints) -> (4, len(joints), stop - start)``.
LocalBlock = Callable[[int, int, torch.Tensor], torch.Tensor]


def _fk_blocks(local: torch.Tensor | LocalBlock, n: int, translations: torch.Tensor, root: torch.Tensor | None,
               parents: tuple[int, ...], rotations: bool, unit: bool = False
               ) -> tuple[torch.Tensor | None, torch.Tensor]:
    """:func:`_fk_levels` over ``n`` poses in blocks of about :data:`_BLOCK` joint-poses (their temporaries
    stay in cache and are reused by the next block).

    ``local`` is ``(4, J, n)`` (any strides) or a function giving the components of a block of poses for
    the joints whose rotations are used (:data:`LocalBlock`); they are normalised (zero means identity)
    unless ``unit``. ``translations`` is ``(3, J, n or
    1)``, ``root`` ``(3, R, n or 1)`` or None. Returns contiguous ``(n, J, 9)`` world matrix entries (None
    unless ``rotations``) and ``(n, J, 3)`` world positions.

    Without autograd each block's results are copied into its slice of the outputs, already pose-major;
    with it, the blocks are joined out of place (in-place copies into one buffer would make the backward
    pass copy the whole gradient once per block).
    """
    n_joints = len(parents)
    inverse = _index_tensors(parents, translations.device)[1]
    needed = _rotated_joints(parents, rotations, translations.device)
    levels = len(_tree_levels(parents))
    step = max(_BLOCK // max(n_joints, 1), min(_MIN_POSES, _POSES_PER_LEVEL * levels), 1)

    def block(x: torch.Tensor, i: int) -> torch.Tensor:
        return (x if x.shape[-1] == 1 else x[..., i : i + step]).contiguous()

    out_p = out_m = None
    joined_p: list[torch.Tensor] = []
    joined_m: list[torch.Tensor] = []
    grad = None  # decided on the first block, the same for all
    for i in range(0, n, step):
        if isinstance(local, torch.Tensor):  # (the gather reads a contiguous block: index_select copies others whole)
            q = block(local, i).index_select(1, needed)
        else:
            q = local(i, min(i + step, n), needed)
        t, r = block(translations, i), None if root is None else block(root, i)
        ps, ms = _fk_levels(q if unit else _normalized(q), t, r, parents, rotations)
        if grad is None:
            grad = torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in (q, t, r))
        p = torch.cat(ps, 1).index_select(1, inverse) if len(ps) > 1 else ps[0]  # (3, J, B), file order
        m = (torch.cat(ms, 1).index_select(1, inverse) if len(ms) > 1 else ms[0]) if rotations else None
        if grad:
            joined_p.append(p)
            if m is not None:
                joined_m.append(m)
            continue
        if out_p is None:
            out_p = q.new_empty(n, n_joints, 3)
            out_m = q.new_empty(n, n_joints, 9) if rotations else None
        out_p[i : i + step] = p.permute(2, 1, 0)  # back to pose-major order, block by block (in cache)
        if out_m is not None and m is not None:
            out_m[i : i + step] = m.permute(2, 1, 0)
    if joined_p:  # with autograd: joined out of place, then the one copy back to pose-major order
        out_p = (torch.cat(joined_p, 2) if len(joined_p) > 1 else joined_p[0]).permute(2, 1, 0).contiguous()
        if rotations:
            out_m = (torch.cat(joined_m, 2) if len(joined_m) > 1 else joined_m[0]).permute(2, 1, 0).contiguous()
    if out_p is None:  # no poses
        dtype = translations.dtype if not isinstance(local, torch.Tensor) else local.dtype
        out_p = translations.new_empty(0, n_joints, 3, dtype=dtype)
        out_m = translations.new_empty(0, n_joints, 9, dtype=dtype) if rotations else None
    return out_m, out_p


def _prepare(rotations: torch.Tensor, translations: torch.Tensor, parents: list[int] | torch.Tensor
             ) -> tuple[tuple[int, ...], tuple[int, ...], int, torch.Tensor, torch.Tensor]:
    """Checks; ``(parents, lead dims, J, (4, J, N) rotations, (3, J, N or 1) translations)`` as views."""
    parents_t = tuple(int(p) for p in (parents.tolist() if isinstance(parents, torch.Tensor) else parents))
    if rotations.ndim < 2 or rotations.shape[-1] != 4 or translations.ndim < 2 or translations.shape[-1] != 3:
        raise ShapeError(f"forward kinematics needs rotations (..., J, 4) and translations (..., J, 3), got "
                         f"{tuple(rotations.shape)} and {tuple(translations.shape)}")  # fmt: skip
    if not rotations.is_floating_point():
        rotations = rotations.to(torch.float64)
    rotations = _widened(rotations, translations)
    shape = _check_broadcast(("rotations", rotations, 1), ("translations", translations, 1),
                             over="leading dims and joints")
    lead, n_joints = shape[:-1], shape[-1]
    if n_joints != len(parents_t):
        raise ShapeError(f"rotations/translations have {n_joints} joints, parents {len(parents_t)}")
    n = math.prod(lead)
    q = rotations.expand(*shape, 4).reshape(n, n_joints, 4).permute(2, 1, 0)
    t = translations.to(q.dtype)
    if t.ndim == 2:  # the same translations for every pose: no copies
        t = t.T[:, :, None]
    else:
        t = t.expand(*shape, 3).reshape(n, n_joints, 3).permute(2, 1, 0)
    return parents_t, lead, n_joints, q, t


@numpy_in_numpy_out
def forward_kinematics(
    rotations: torch.Tensor,
    translations: torch.Tensor,
    parents: list[int] | torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """World rotation matrices and positions from local quaternions.

    Parameters
    ----------
    rotations:
        ``(..., J, 4)`` local quaternions (w, x, y, z); normalised on the way (zero means identity).
    translations:
        ``(..., J, 3)`` local translations; row ``j`` of a root (parent ``-1``, e.g. joint 0) is its world
        position, of any other joint its translation in its parent's frame (the rest offset unless
        animated). Broadcast against rotations.
    parents:
        ``(J,)`` parent indices, parents before children, ``-1`` for the root.

    Returns
    -------
    world_rotations:
        ``(..., J, 3, 3)`` world rotation matrices (``matrix_to_quat`` gives quaternions).
    world_positions:
        ``(..., J, 3)`` world positions.

    Notes
    -----
    The work is done one depth level of the tree at a time, on quaternion and vector *components*
    (``(4, Jl, N)`` tensors, ``N`` the leading dims flattened), each step one operation for all the level's
    joints and poses (see :func:`_fk_levels`), in blocks of poses; the one copy into the result puts joints
    back in file order. Against the previous version (one tensor operation per term of the component
    formulas), CPU-time medians of interleaved runs, one thread, on a 2-core machine at load 5-6: 2752
    poses of 31 joints 27.5 vs 31.3 ms (positions only, :func:`forward_kinematics_positions`: 14.1 ms);
    22 joints, forward / forward and backward: 2752 poses 21.6-24.5 / 52-57 ms, the same as before within
    the noise of three runs; 256 poses 1.5 / 5.4 vs 1.9 / 7.1 ms; 32 poses 1.4 / 3.0 vs 2.0 / 4.4 ms;
    1 pose 1.2 / 4.4 vs 1.7 / 6.9 ms. ``tests/core/test_kinematics.py`` checks it against a scipy reference.
    """
    parents_t, lead, n_joints, q, t = _prepare(rotations, translations, parents)
    world_r, world_p = _fk_blocks(q, q.shape[-1], t, None, parents_t, True)
    assert world_r is not None
    return world_r.reshape(*lead, n_joints, 3, 3), world_p.reshape(*lead, n_joints, 3)


@numpy_in_numpy_out
def forward_kinematics_positions(
    rotations: torch.Tensor,
    translations: torch.Tensor,
    parents: list[int] | torch.Tensor,
) -> torch.Tensor:
    """World positions only: ``forward_kinematics(...)[1]``, without computing world rotations of leaf joints
    (which move no joint) or returning the others.

    Parameters
    ----------
    rotations, translations, parents:
        As for :func:`forward_kinematics`.

    Returns
    -------
    ``(..., J, 3)`` world positions.
    """
    parents_t, lead, n_joints, q, t = _prepare(rotations, translations, parents)
    return _fk_blocks(q, q.shape[-1], t, None, parents_t, False)[1].reshape(*lead, n_joints, 3)


def forward_kinematics_components(local: torch.Tensor | LocalBlock, num_poses: int, translations: torch.Tensor,
                                  root: torch.Tensor | None, parents: list[int] | tuple[int, ...], *,
                                  rotations: bool = True, unit: bool = False
                                  ) -> tuple[torch.Tensor | None, torch.Tensor]:
    """:func:`forward_kinematics` for callers that hold their data component-major (:class:`~skelanim.Motion`):
    no transposition in, the local rotations made block by block if wanted, positions only if wanted.

    Parameters
    ----------
    local:
        ``(4, J, N)`` local quaternion components ``w, x, y, z`` (any strides), or a function
        ``(start, stop, joints) -> (4, len(joints), stop - start)`` giving those of poses ``start`` to
        ``stop`` for the joints listed (in that order): called once per block of poses, so the caller's
        temporaries stay small too, and only for joints whose rotation moves another joint or is returned.
    num_poses:
        ``N``.
    translations:
        ``(3, J, N)`` local translations, or ``(3, J, 1)`` for the same ones in every pose.
    root:
        ``(3, R, N)`` or ``(3, R, 1)`` world positions of the ``R`` roots, or None to take their rows of
        ``translations``.
    parents:
        ``J`` parent indices, parents first, ``-1`` for a root.
    rotations:
        Return world rotations too; without them, those of leaf joints (which move no joint) are skipped.
    unit:
        The quaternions are unit already (e.g. made from Euler angles): skip normalising them.

    Returns
    -------
    world_rotations:
        ``(N, J, 3, 3)``, or None without ``rotations``.
    world_positions:
        ``(N, J, 3)``.
    """
    parents_t = tuple(int(p) for p in parents)
    if translations.shape[1] != len(parents_t):
        raise ShapeError(f"translations have {translations.shape[1]} joints, parents {len(parents_t)}")
    world_r, world_p = _fk_blocks(local, num_poses, translations, root, parents_t, rotations, unit)
    return None if world_r is None else world_r.unflatten(-1, (3, 3)), world_p


@numpy_in_numpy_out
def end_site_positions(
    world_rotations: torch.Tensor,
    world_positions: torch.Tensor,
    joints: list[int],
    offsets: torch.Tensor,
) -> torch.Tensor:
    """World positions of End Sites.

    Parameters
    ----------
    world_rotations:
        ``(..., J, 3, 3)`` world rotation matrices (from :func:`forward_kinematics`).
    world_positions:
        ``(..., J, 3)``.
    joints:
        ``E`` joint indices carrying the End Sites.
    offsets:
        ``(E, 3)`` End Site offsets in their joint's frame (a tensor, an array or a list).

    Returns
    -------
    ``(..., E, 3)`` End Site world positions.
    """
    idx = as_tensor(joints, dtype=torch.long, device=world_positions.device)
    offsets = as_tensor(offsets, dtype=world_positions.dtype, device=world_positions.device)  # a skeleton's: CPU
    return world_positions[..., idx, :] + (world_rotations[..., idx, :, :] @ offsets[..., None])[..., 0]


@functools.lru_cache(maxsize=256)
def _root_paths(parents: tuple[int, ...], joints: tuple[int, ...]) -> torch.Tensor:
    """``(S, D)`` joint indices from the root down to each of ``joints``, padded at the end with ``J``."""
    paths = []
    for j in joints:
        path = [j]
        while parents[path[-1]] >= 0:
            path.append(parents[path[-1]])
        paths.append(path[::-1])
    depth = max(len(p) for p in paths)
    with torch.inference_mode(False):  # cached: must serve autograd too when first built under inference mode
        return torch.tensor([p + [len(parents)] * (depth - len(p)) for p in paths], dtype=torch.long)


@numpy_in_numpy_out
def forward_kinematics_joints(
    rotations: torch.Tensor,
    translations: torch.Tensor,
    parents: Sequence[int] | torch.Tensor,
    joints: list[int] | tuple[int, ...],
) -> tuple[torch.Tensor, torch.Tensor]:
    """World rotations and positions of selected joints only: :func:`forward_kinematics` for few frames.

    The same convention and result as :func:`forward_kinematics` at ``joints``, evaluated as products of
    4x4 transforms along each joint's root path, one batched product per depth level: a dozen operations
    whatever the number of joints, which is what a single streamed frame needs (online retargeting); for
    long clips of whole skeletons :func:`forward_kinematics` is faster.

    Parameters
    ----------
    rotations:
        ``(..., J, 4)`` local quaternions (normalised on the way) or ``(..., J, 3, 3)`` local rotation matrices.
    translations:
        ``(..., J, 3)`` local translations, row 0 the root's world position (as in :func:`forward_kinematics`).
    parents:
        ``(J,)`` parent indices, ``-1`` for the root.
    joints:
        ``S`` joint indices wanted (any order, repeats allowed).

    Returns
    -------
    world_rotations:
        ``(..., S, 3, 3)``.
    world_positions:
        ``(..., S, 3)``.
    """
    parents_t = tuple(int(p) for p in (parents.tolist() if isinstance(parents, torch.Tensor) else parents))
    matrices = rotations.ndim >= 3 and tuple(rotations.shape[-2:]) == (3, 3)
    if (not matrices and (rotations.ndim < 2 or rotations.shape[-1] != 4)) or translations.ndim < 2 \
            or translations.shape[-1] != 3:
        raise ShapeError(f"forward_kinematics_joints needs rotations (..., J, 4) or (..., J, 3, 3) and translations "
                         f"(..., J, 3), got {tuple(rotations.shape)} and {tuple(translations.shape)}")  # fmt: skip
    n_joints = rotations.shape[-3 if matrices else -2]
    if len(parents_t) != n_joints:
        raise ShapeError(f"rotations have {n_joints} joints, parents {len(parents_t)}")
    _tree_levels(parents_t)  # parents before their children (a cycle never reached the root)
    if any(not 0 <= int(j) < len(parents_t) for j in joints):
        raise ShapeError(f"joints {list(joints)} must lie in 0 .. {len(parents_t) - 1}")
    # as forward_kinematics' _prepare: rotations and translations broadcast over their leading dims and joints
    *lead, n_joints = _check_broadcast(("rotations", rotations, 2 if matrices else 1),
                                       ("translations", translations, 1), over="leading dims and joints")
    if n_joints != len(parents_t):
        raise ShapeError(f"translations have {translations.shape[-2]} joints, parents {len(parents_t)}")
    rotations = _widened(rotations, translations)
    local = rotations if matrices else quat_to_matrix(rotations)
    if not joints:
        return local.new_zeros(*lead, 0, 3, 3), local.new_zeros(*lead, 0, 3)
    paths = _root_paths(parents_t, tuple(int(j) for j in joints)).to(local.device)
    local = local.expand(*lead, -1, -1, -1)
    translations = translations.to(local.dtype).expand(*lead, n_joints, 3)
    top = torch.cat([local, translations[..., None]], dim=-1)  # (..., J, 3, 4)
    bottom = local.new_tensor([0.0, 0.0, 0.0, 1.0]).expand(*lead, local.shape[-3], 1, 4)
    pad = torch.eye(4, dtype=local.dtype, device=local.device).expand(*lead, 1, 4, 4)  # index J: the identity
    h = torch.cat([torch.cat([top, bottom], dim=-2), pad], dim=-3)
    world = h.index_select(-3, paths[:, 0])
    for d in range(1, paths.shape[1]):
        world = world @ h.index_select(-3, paths[:, d])
    return world[..., :3, :3], world[..., :3, 3]
