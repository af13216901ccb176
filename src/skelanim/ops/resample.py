"""Change a motion's frame rate: slerp for rotations, linear interpolation for translations.

Timing
------
Frame ``k`` of the result samples the original at time ``k / fps`` (frame ``0`` at time 0). The original
lasts ``D = (F - 1) / fps_old``; the result has ``round(D * fps) + 1`` frames, so its duration
``(F' - 1) / fps`` equals ``D`` **exactly when** ``D * fps`` is a whole number (e.g. 120 → 30 fps on any clip
of ``4 n + 1`` frames, or 30 → 60 fps on any clip), and otherwise differs from it by at most half a new
frame period. When the last sample time falls past ``D`` (by less than half a period) it takes the last
original frame: the motion is held, never extrapolated. Sample times that land on an original frame (to
1e-9 frames) reproduce that frame exactly.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import torch

from skelanim.core.motion import MAX_FRAMES, Motion
from skelanim.core.rotations import quat_normalize, quat_slerp
from skelanim.errors import ShapeError
from skelanim.ops.filters import check_fps

#: The most joint-frames (frames x joints) a resample makes: the result's float64 rotations take 32 bytes each
#: and joint translations 24 more, so 1.6 GB at the cap (2.8 GB with translations). The work beside the result is
#: done :data:`CHUNK_JOINT_FRAMES` at a time, so a resample's peak memory is the result plus a fixed ~100-150 MB:
#: measured at the cap (1.6 M frames of 31 joints), 1.77 GB (2.99 GB with translations). One pass over all frames
#: had taken ~270 bytes per joint-frame (13.5 GB at the cap); ``benchmarks/scaling.py`` measures both.
#: (:data:`~skelanim.core.motion.MAX_FRAMES` caps the frames.)
MAX_JOINT_FRAMES = 50_000_000
#: Joint-frames sampled at a time into the preallocated result (8,192 frames of 32 joints): the slerp's temporaries
#: (~300 bytes per joint-frame) are one chunk's. A chunk is a whole number of 64 frames, so that every chunk but the
#: last spans whole SIMD blocks of torch's kernels in every per-joint array (their leftover elements take a scalar
#: path, whose ``atan2`` can differ from the vectorised one by an ulp): the chunks give the same bits as one pass
#: over all frames (chunks of 33 frames of 21 joints did not). That holds at one intra-op thread; with several,
#: torch splits each kernel's elements between threads unaligned, and one pass too changed by an ulp in a few
#: joint-frames with the thread count.
CHUNK_JOINT_FRAMES = 262_144

__all__ = ["repeat_loop", "resample", "sample_frames", "sample_times", "spline_frames"]


def sample_times(num_frames: int, fps_in: float, fps_out: float) -> torch.Tensor:
    """Fractional source-frame indices at which the resampled frames are taken.

    Parameters
    ----------
    num_frames:
        ``F``, frames of the source.
    fps_in, fps_out:
        Source and target frame rates.

    Returns
    -------
    torch.Tensor
        ``(F',)`` float64 indices in ``[0, F - 1]`` (see the module docstring for ``F'``).
    """
    if num_frames < 1:
        raise ShapeError("cannot resample a motion without frames")
    for name, v in (("fps_in", fps_in), ("fps_out", fps_out)):
        if not (v > 0 and math.isfinite(v)):
            raise ShapeError(f"{name} must be a positive number, got {v}")
    span = (num_frames - 1) * fps_out / fps_in  # duration in target frames
    if not span < MAX_FRAMES:
        raise ShapeError(f"resampling {num_frames} frames from {fps_in:g} to {fps_out:g} fps makes {span + 1:.3g} "
                         f"frames, more than {MAX_FRAMES:,}")  # fmt: skip
    n = math.floor(span + 0.5 + 1e-9) + 1
    k = torch.arange(n, dtype=torch.float64)
    s = k * fps_in / fps_out
    nearest = torch.round(s)
    s = torch.where((s - nearest).abs() < 1e-9, nearest, s)
    return s.clamp(0.0, float(num_frames - 1))


def _lerp(x: torch.Tensor, i0: torch.Tensor, i1: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
    shape = (-1,) + (1,) * (x.ndim - 1)
    a = a.reshape(shape)
    # exact at a == 0 and a == 1 (no 0 * x rounding)
    return torch.where(a == 0, x[i0], torch.where(a == 1, x[i1], x[i0] + a * (x[i1] - x[i0])))


def resample(motion: Motion, fps: float) -> Motion:
    """Resample a motion to ``fps`` frames per second.

    Parameters
    ----------
    motion:
        The motion (not modified), ``F`` frames at ``motion.fps``.
    fps:
        Target frame rate.

    Returns
    -------
    Motion
        ``F'`` frames at ``fps`` (see the module docstring for ``F'`` and the last frame). Rotations are
        slerped along the shortest arc between the two neighbouring source frames; root positions and joint
        translations are interpolated linearly. The skeleton is the input's (shared, as the other ops that keep
        it share it); the metadata is copied. A motion without frames comes back without frames, at ``fps``.
    """
    fps = check_fps(fps)  # named as the caller knows it (sample_times names it fps_out)
    if motion.num_frames == 0:  # as the other ops: an empty motion comes back empty (it had been a ShapeError)
        return motion.copy(fps=fps)
    return sample_frames(motion, sample_times(motion.num_frames, motion.fps, fps), fps)


def sample_frames(motion: Motion, indices: torch.Tensor, fps: float) -> Motion:
    """The motion sampled at fractional frame indices, as :func:`resample` samples it.

    Parameters
    ----------
    motion:
        The motion (not modified), ``F`` frames.
    indices:
        ``(F',)`` fractional source-frame indices in ``[0, F - 1]``; those within 1e-9 of a whole number
        take that frame exactly.
    fps:
        Frame rate of the result.

    Returns
    -------
    Motion
        ``F'`` frames: rotations slerped along the shortest arc between the two neighbouring source frames
        (exactly a source frame at a whole index), root positions and joint translations interpolated linearly.
        Computed :data:`CHUNK_JOINT_FRAMES` joint-frames at a time into the result (see :data:`MAX_JOINT_FRAMES`).
    """
    s = _checked_indices(motion, indices)
    last = motion.num_frames - 1
    if motion.num_frames == 1:
        i0 = i1 = torch.zeros(len(s), dtype=torch.long)
        a = torch.zeros(len(s), dtype=torch.float64)
    else:
        i0 = torch.floor(s).long().clamp(max=last - 1)
        i1 = i0 + 1
        a = s - i0.to(torch.float64)
    source, translations = motion.rotations, motion.joint_translations
    rot = source.new_empty((len(s), *source.shape[1:]))  # (F', J, 4)
    root = motion.root_positions.new_empty((len(s), 3))
    jt = None if translations is None else translations.new_empty((len(s), *translations.shape[1:]))  # (F', J, 3)
    step = max(1, CHUNK_JOINT_FRAMES // (64 * source.shape[1])) * 64  # frames per chunk: see CHUNK_JOINT_FRAMES
    for first in range(0, len(s), step):
        part = slice(first, first + step)
        p0, p1, pa = i0[part], i1[part], a[part]
        q0, q1 = source[p0], source[p1]  # (C, J, 4)
        slerped = quat_slerp(q0, q1, pa[:, None].expand(-1, source.shape[1]))
        rot[part] = torch.where((pa == 0)[:, None, None], q0, torch.where((pa == 1)[:, None, None], q1, slerped))
        root[part] = _lerp(motion.root_positions, p0, p1, pa)
        if jt is not None and translations is not None:
            jt[part] = _lerp(translations, p0, p1, pa)
    return _sampled(motion, rot, root, jt, fps)


def spline_frames(motion: Motion, indices: torch.Tensor, fps: float) -> Motion:
    """The motion sampled at fractional frame indices through cubic splines, for sampling it more densely than it
    was made (a slerp between frames changes its angular velocity at every frame: a 25 fps prediction played at
    120 fps moved in straight pieces with a jolt every 4.8 frames).

    Parameters
    ----------
    motion:
        The motion (not modified), ``F`` frames.
    indices:
        ``(F',)`` fractional source-frame indices in ``[0, F - 1]``; whole ones take that frame exactly.
    fps:
        Frame rate of the result.

    Returns
    -------
    Motion
        ``F'`` frames: each joint's rotations by scipy's ``RotationSpline`` through its frames (angular velocity
        and acceleration continuous; a zero quaternion counts as the identity, :func:`quat_normalize`'s rule),
        root positions and joint translations by ``CubicSpline`` (not-a-knot ends). It runs in SciPy, so it passes
        no gradient back (with a warning where the motion needs one; :func:`sample_frames` keeps the graph). A
        motion of fewer than 3 frames is sampled as :func:`sample_frames` samples it.
    """
    if motion.num_frames < 3:
        return sample_frames(motion, indices, fps)
    from scipy.interpolate import CubicSpline
    from scipy.spatial.transform import Rotation, RotationSpline

    s = _checked_indices(motion, indices)
    if any(t is not None and t.requires_grad for t in (motion.rotations, motion.root_positions, motion.joint_translations)):
        warnings.warn("spline_frames runs in SciPy and passes no gradient back: its result is detached (sample_frames "
                      "keeps the graph)", stacklevel=2)  # fmt: skip
    knots = np.arange(motion.num_frames, dtype=np.float64)
    times = s.numpy()
    given = motion.rotations.detach().cpu().to(torch.float64)  # (F, J, 4) w, x, y, z
    source = quat_normalize(given).numpy()
    rot = np.empty((len(times), source.shape[1], 4))
    for j in range(source.shape[1]):  # scipy's quaternions are x, y, z, w
        spline = RotationSpline(knots, Rotation.from_quat(np.roll(source[:, j], -1, axis=-1)))
        rot[:, j] = np.roll(spline(times).as_quat(), 1, axis=-1)
    whole = (s == torch.round(s)).numpy()
    nearest = np.rint(times).astype(int)
    rot *= np.where((rot * source[nearest]).sum(-1, keepdims=True) < 0, -1.0, 1.0)  # the source's sign, as slerp's
    rot[whole] = given.numpy()[nearest[whole]]  # the frames as they are

    def cubic(values: torch.Tensor) -> torch.Tensor:
        array = values.detach().cpu().to(torch.float64).numpy()
        out = CubicSpline(knots, array, axis=0)(times)
        out[whole] = array[nearest[whole]]
        return torch.from_numpy(out).to(values.dtype)

    translations = motion.joint_translations
    return _sampled(motion, torch.from_numpy(rot).to(motion.rotations.dtype), cubic(motion.root_positions),
                    None if translations is None else cubic(translations), fps)  # fmt: skip


def _sampled(motion: Motion, rot: torch.Tensor, root: torch.Tensor, jt: torch.Tensor | None, fps: float) -> Motion:
    """``motion`` with sampled ``rot`` ``(F', J, 4)``, ``root`` ``(F', 3)`` and ``jt`` ``(F', J, 3)`` at ``fps``."""
    # a file's own numbers for its rate (BVH Frame Time, DeepMimic's duration) go with a new rate, and its per-frame
    # durations with any resampling (they had reached glTF's extras: a 30 fps copy carried 1/120 s)
    stale = ("frame_durations",) + (("frame_time", "frame_duration") if float(fps) != motion.fps else ())
    metadata = {key: value for key, value in motion.metadata.items() if key not in stale}
    return motion.copy(rotations=rot, root_positions=root, joint_translations=jt, fps=float(fps), metadata=metadata)


def _checked_indices(motion: Motion, indices: torch.Tensor) -> torch.Tensor:
    """``indices`` as float64 ``(F',)`` within ``[0, F - 1]``, those within 1e-9 of a whole number made whole; a
    :class:`ShapeError` for indices outside, not finite, or too many joint-frames (:data:`MAX_JOINT_FRAMES`)."""
    s = torch.as_tensor(indices, dtype=torch.float64)
    if len(s) * motion.skeleton.num_joints > MAX_JOINT_FRAMES:
        per_joint_frame = 32 if motion.joint_translations is None else 56  # float64 rotations (and translations)
        raise ShapeError(f"{len(s):,} frames of {motion.skeleton.num_joints} joints would take "
                         f"{len(s) * motion.skeleton.num_joints * per_joint_frame / 1e9:.3g} GB; at most {MAX_JOINT_FRAMES:,} "
                         "joint-frames are made at once (a lower frame rate, or a part of the clip)")  # fmt: skip
    last = motion.num_frames - 1
    if s.ndim != 1 or (len(s) and (not bool(torch.isfinite(s).all()) or float(s.min()) < -1e-9
                                   or float(s.max()) > last + 1e-9)):  # fmt: skip
        raise ShapeError(f"sample indices must be a vector of finite numbers within [0, {last}]")
    nearest = torch.round(s)
    return torch.where((s - nearest).abs() < 1e-9, nearest, s).clamp(0.0, float(last))  # whole frames exactly


def repeat_loop(motion: Motion, times: int) -> Motion:
    """A looping clip played ``times`` times in a row.

    A loop's last frame is where it starts again, moved on by the loop's travel (DeepMimic's ``"Loop": "wrap"``:
    time wraps at the last frame to frame 0 plus the root's travel from the first frame to the last). Each play is
    frames ``0 .. F - 2`` with the root path moved on by ``r`` travels, and the last play ends with the clip's last
    frame, so the result has ``times * (F - 1) + 1`` frames and one play is the clip itself.

    Parameters
    ----------
    motion:
        The loop (not modified), at least 2 frames.
    times:
        Number of plays, at least 1.

    Returns
    -------
    Motion
        The plays; rotations as in the loop, root positions ``p + r * (p[-1] - p[0])`` in play ``r``, and the
        same for the translation channels of the body root (:attr:`~skelanim.core.skeleton.Skeleton.pelvis`) and
        the joints above it, where it lies under the root (a loop that turns is repeated without its turn).
    """
    if times < 1 or motion.num_frames < 2:
        raise ShapeError(f"a loop of {motion.num_frames} frame(s) cannot play {times} time(s): 2 frames and 1 play at least")
    last = motion.num_frames - 1
    index = torch.cat([torch.arange(last).repeat(times), torch.tensor([last])])
    plays = torch.cat([torch.arange(times).repeat_interleave(last), torch.tensor([times - 1])])
    plays = plays.to(motion.root_positions.dtype)

    def moved_on(channel: torch.Tensor) -> torch.Tensor:
        """``channel`` ``(F, ..., 3)`` over the plays, each moved on by its travel over the loop."""
        travel = channel[-1] - channel[0]
        return channel[index] + plays.reshape((-1,) + (1,) * (channel.ndim - 1)) * travel

    root = moved_on(motion.root_positions)
    jt = None
    if motion.joint_translations is not None:
        # a body root under a static dummy root (Bandai's Hips under joint_Root) travels in its own translation
        # channels: they move on too, as do those of any joint between it and the root (a channel that stays put
        # has no travel); the other joints' translations repeat as they are
        jt = motion.joint_translations[index]
        chain = motion.skeleton.path_to_root(motion.skeleton.pelvis)[:-1] if motion.skeleton.pelvis else []
        if chain:
            jt[:, chain] = moved_on(motion.joint_translations[:, chain])
    return motion.copy(rotations=motion.rotations[index], root_positions=root, joint_translations=jt,
                       metadata=dict(motion.metadata))  # fmt: skip

