"""Whole clips retargeted in blocks of frames, so that :meth:`.Retargeter.__call__` holds one block's work at a time.

Retargeting a clip is causal but for one thing: where the clip's feet stand, its **standing level**
(:func:`~.stance.standing_level`, a quantile over every frame) and, for a target without a floor of its own, its
:func:`~.stance.floor_level` (a minimum over every frame). Those are measured first, block by block, from the
positions of the four foot and toe joints only (:meth:`.rig.CanonicalRig.slot_positions`: the same products as
the full encoding's, a quarter of its time); then the per-frame core runs on blocks of :data:`BLOCK_FRAMES` frames,
carrying the stream state that :meth:`~.Retargeter.step` threads from frame to frame (the causal contacts' running
floor and previous feet, the IK's foot pins, the NKN's recurrent states and previous hips), each block's answer
written into the whole result; the source's local translations are made block by block too. Until 2026-12-06 the
core ran on the whole clip at once and held its whole-clip tensors (bone frames, world rotations, their
conversions, float64 (F, J, 3, 3)): ``Retargeter(copy)`` on 160,000 CMU frames onto Bandai-Namco added 2.9 GB, 19
times the source's quaternions (``ik`` 1.4 GB at 40,000 frames); now 190 MB, the result's size (an audit). A clip
of one block runs as one, as before.

The answer is the one of the clip in one piece, to the bit (``tests/retarget/test_memory_blocks.py``, every method,
blocks of a few dozen frames): every step is per frame or carried by the stream state, and blocks are of equal
lengths, never short (:func:`frame_blocks`).
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_to_matrix
from skelanim.io.common import first_non_finite
from skelanim.retarget.baselines import FEET
from skelanim.retarget.rig import CanonicalRig
from skelanim.retarget.stance import floor_level, standing_level

if TYPE_CHECKING:
    from skelanim.retarget.retargeter import Retargeter

__all__ = ["BLOCK_FRAMES", "block_translations", "clip_levels", "feet_heights", "first_non_finite_translation",
           "frame_blocks", "run_clip"]  # fmt: skip

#: Frames retargeted at once by :func:`run_clip` (as ``io.bvh.save`` writes 2,048 frames at a time): 60-80 MB of
#: temporaries for CMU onto Bandai-Namco (copy, ik), whatever the clip's length.
BLOCK_FRAMES = 2048


def frame_blocks(frames: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of the fewest consecutive blocks of at most ``size`` frames covering ``frames``, of equal
    lengths give or take one: so no block is short when there are several (each holds at least ``size / 2``
    frames). A short block would take other code paths than the clip in one piece: the NKN's float32 products
    (MKL's sgemm) gave rows 1e-8 off in a block of fewer than 4 frames a thread (a last block of 3 frames of 195),
    and its GRU takes a lone frame through its fused cell."""
    count = max(1, -(-frames // max(1, int(size))))
    bounds = [i * frames // count for i in range(count + 1)]
    return list(pairwise(bounds))


def clip_levels(source: CanonicalRig, target: CanonicalRig, feet: Tensor, target_floor: float | None) -> tuple[float, float]:
    """``(level, lift)`` of a clip from the heights ``(F, 4)`` of its :data:`~.baselines.FEET` joints (canonical, up
    +Y): where its feet stand (:func:`~.stance.standing_level`), and how high the result is lifted, onto
    ``target_floor``, else as high above y = 0 as the source's feet stand above its floor, scaled by the leg ratio."""
    level = standing_level(feet)
    if target_floor is not None:
        return level, target_floor or 0.0
    return level, (level - floor_level(feet, source.height)) * target.leg_length / source.leg_length


def block_translations(clip: Motion, start: int, stop: int) -> Tensor:
    """``clip.local_translations()[start:stop]`` without the whole clip's: ``(stop - start, J, 3)``."""
    return clip[start:stop].local_translations()


def first_non_finite_translation(clip: Motion) -> tuple[int, ...] | None:
    """:func:`~skelanim.io.common.first_non_finite` of ``clip.local_translations()``, block by block."""
    for a, b in frame_blocks(clip.num_frames, BLOCK_FRAMES):
        bad = first_non_finite(block_translations(clip, a, b))
        if bad is not None:
            return (bad[0] + a, *bad[1:])
    return None


def feet_heights(source: CanonicalRig, rotations: Tensor, clip: Motion, spans: list[tuple[int, int]]) -> Tensor:
    """``(F, 4)`` heights of the :data:`~.baselines.FEET` joints of ``(F, J, 4)`` local quaternions and ``clip``'s
    local translations (canonical space), measured block by block (``spans``)."""
    feet = list(FEET)
    return torch.cat([source.slot_positions(quat_to_matrix(rotations[a:b]), block_translations(clip, a, b), feet)[..., 1]
                      for a, b in spans])  # fmt: skip


def run_clip(
    retargeter: Retargeter, rotations: Tensor, clip: Motion, fps: float, floor: float | None
) -> tuple[Tensor, Tensor, Tensor | None]:
    """:meth:`.Retargeter._run` on a whole clip, block by block (module docstring): target local quaternions
    ``(F, J_B, 4)``, root positions ``(F, 3)`` and joint translations ``(F, J_B, 3)`` or ``None``, from ``(F, J, 4)``
    local quaternions and ``clip``'s local translations. The stream state is the Retargeter's own, carried from
    block to block (start from a fresh one)."""
    n = rotations.shape[0]
    spans = frame_blocks(n, BLOCK_FRAMES)
    if len(spans) == 1:
        return retargeter._run(rotations, clip.local_translations(), fps, floor)
    with torch.inference_mode():  # the result is made of inference tensors, as the clip's in one piece
        lift = None
        if floor is None:  # the whole clip's feet first: where it stands is no causal measure
            feet = feet_heights(retargeter.source, rotations, clip, spans)
            floor, lift = clip_levels(retargeter.source, retargeter.target, feet, retargeter.target_floor)
            del feet
        q = root = trans = None
        for a, b in spans:
            qb, rb, tb = retargeter._run(rotations[a:b], block_translations(clip, a, b), fps, floor, lift)
            if q is None or root is None:
                q, root = qb.new_empty((n, *qb.shape[1:])), rb.new_empty((n, *rb.shape[1:]))
                trans = None if tb is None else tb.new_empty((n, *tb.shape[1:]))
            q[a:b], root[a:b] = qb, rb
            if trans is not None and tb is not None:
                trans[a:b] = tb
            del qb, rb, tb
    assert q is not None and root is not None
    return q, root, trans
