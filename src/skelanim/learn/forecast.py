"""Continuing a motion file: :func:`predict_motion` chains a predictor (or a baseline) ``horizon`` frames at a
time from the motion's last observed second (``skelanim predict IN.bvh -o OUT.bvh``); :func:`predict_retargeted`
does it for motion on another humanoid skeleton, through the model's (``skelanim predict --retarget``)."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor
from tqdm import tqdm

from skelanim.core.motion import Motion, require_motion
from skelanim.core.rotations import quat_apply, quat_inverse, quat_multiply
from skelanim.data.clips import clip_from_motion
from skelanim.data.dataset import MotionDataset
from skelanim.data.features import from_reference_frame, to_reference_frame
from skelanim.data.rig import Rig
from skelanim.errors import FormatError, SkeletonError
from skelanim.learn.common import skeleton_mismatch
from skelanim.learn.predict import LEARNED, METHODS, CombinedPredictor, Predictor
from skelanim.learn.predictors import constant_velocity, zero_velocity
from skelanim.ops.normalize import rotate, scale, turned_up
from skelanim.ops.resample import sample_frames, spline_frames
from skelanim.ops.subset import reorder_joints

__all__ = ["check_method", "continuation_metadata", "lift_out_of_floor", "model_reference_motion", "predict_motion", "predict_retargeted",
           "retarget_onto_model"]

#: Input continued on the model's skeleton beyond the second the prediction reads (seconds): the headings and
#: velocities of the first observed frames need frames before them.
TAIL_MARGIN_S = 0.5
#: Headings of the frames a prediction step reads are computed from a frame that is a multiple of this (see
#: :func:`_yaw_from`).
YAW_ALIGN = 64
#: The quantile of the input's per-frame lowest joint height that :func:`lift_out_of_floor` takes as its floor.
FLOOR_QUANTILE = 0.01


def check_method(method: str, model: Predictor | CombinedPredictor | None, seconds: float) -> None:
    """Refuse a method that is not one of :data:`~skelanim.learn.predict.METHODS`, a model that is not the method's
    (it would run one network and label the result with another's name), and a length that is not positive."""
    if method not in METHODS:
        raise ValueError(f"unknown prediction method {method!r}; choose from {', '.join(METHODS)}")
    given = ("none" if model is None else "a combined predictor" if isinstance(model, CombinedPredictor)
             else f"a {model.arch} predictor")
    if method in LEARNED and not (isinstance(model, Predictor) and model.arch == method):
        raise ValueError(f"method {method!r} needs a {method} Predictor as model, got {given}")
    if method == "combined" and not isinstance(model, CombinedPredictor):
        raise ValueError(f"method 'combined' needs a CombinedPredictor as model, got {given}")
    if isinstance(seconds, bool) or not (isinstance(seconds, numbers.Real) and math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number, got {seconds!r}")


@torch.no_grad()
def predict_motion(motion: Motion, *, method: str | None = None, model: Predictor | CombinedPredictor | None = None,
                   seconds: float = 1.0, rig: Rig | None = None, ground: bool = True,
                   progress: bool = False) -> Motion:  # fmt: skip
    """Continue a motion by ``seconds``: its last ``observed`` frames in, predictions chained ``horizon`` at a time.

    Parameters
    ----------
    motion : Motion
        Input on the model's skeleton topology (any fps: resampled to the model's and back; in other units or
        at another size, :meth:`~skelanim.data.rig.Rig.size_factor`: scaled to the rig's and back; up along
        another direction than the rig's, a Z-up file: turned onto it and back, :func:`~skelanim.ops.normalize.turned_up`,
        so a Z-up copy's continuation is the Y-up original's, turned).
    method : str, optional
        One of :data:`~skelanim.learn.predict.METHODS`; by default the model's (its architecture, or ``combined``),
        and without a model ``combined``, as ``skelanim predict``.
    model : Predictor or CombinedPredictor, optional
        The learned methods' network (by default the shipped one: :meth:`CombinedPredictor.shipped` for
        ``combined``); gives the rig and lengths for the baselines too.
    seconds : float
        Length of the continuation.
    rig : Rig, optional
        For the baselines without a model (default: the shipped predictors' rig, the Bandai-Namco skeleton's).
    ground : bool
        Lift predicted frames that would sink below the input's floor (:func:`lift_out_of_floor`).
    progress : bool
        Show a progress bar (stderr) over the predicted seconds.

    Returns
    -------
    Motion
        The input's frames unchanged, followed by ``round(seconds * motion.fps)`` predicted frames at the
        input's fps, on the input's skeleton (see :meth:`~skelanim.data.rig.Rig.to_motion`, ``like``).
        ``metadata["predicted_from_frame"]`` is the first predicted frame; with ``ground``,
        ``metadata["lift"]`` the lift of each predicted frame (a list, the motion's units; through the model's
        skeleton, :func:`predict_retargeted`, the lift there scaled by the heights plus the lift on the motion's).

    Raises
    ------
    SkeletonError
        When the motion's skeleton is not the rig's.
    FormatError
        When it lasts less than one model frame, or has non-finite values (no path: the caller knows it).
    ValueError
        An unknown ``method``, a model that is not the method's, or ``seconds`` not positive
        (:func:`check_method`).
    """
    motion = require_motion(motion)
    if method is None:
        method = model.arch if isinstance(model, Predictor) else "combined"
    if model is None and method == "combined":
        model = CombinedPredictor.shipped()
    elif model is None and method in LEARNED:
        model = Predictor.load(None, default=f"predict_{method}")
    check_method(method, model, seconds)
    if model is not None:
        rig = model.rig
    elif rig is None:  # a baseline alone: on the shipped predictors' rig, as the learned methods are
        rig = Predictor.load(None, default="predict_mlp").rig
    adopted = rig.adopt(motion)
    if adopted is not motion:  # the rig's joints in another order, or without its dummy root: predicted as the rig's
        out = predict_motion(adopted, method=method, model=model, seconds=seconds, rig=rig, ground=ground,
                             progress=progress)  # fmt: skip
        if adopted.num_joints == motion.num_joints:  # the same joints in the rig's order: back into the motion's
            back = reorder_joints(out, motion.skeleton.names)
            return back.copy(metadata={**out.metadata, **{k: v for k, v in motion.metadata.items()
                                                          if k not in out.metadata}})  # fmt: skip
        moved = None if motion.joint_translations is None else out.joint_translations[:, 1:]  # type: ignore[index]
        return Motion(motion.skeleton, out.rotations[:, 1:], out.positions()[:, 1], motion.fps, moved,
                      {**out.metadata, **{k: v for k, v in motion.metadata.items() if k not in out.metadata}})
    if not rig.skeleton.same_rig(motion.skeleton):
        raise SkeletonError(skeleton_mismatch("predictor", rig.skeleton, motion.skeleton),
                            path=motion.metadata.get("path"))  # its file, as the recogniser's names it
    upright, turn = turned_up(motion, rig.up)
    if turn is not None:  # up along another axis than the rig's (a Z-up file): predicted turned onto it, turned back
        out = predict_motion(upright, method=method, model=model, seconds=seconds, rig=rig, ground=ground,
                             progress=progress)  # fmt: skip
        back = rotate(out[motion.num_frames :], turn.T)
        return Motion.concatenate([motion.copy(metadata=out.metadata), back])
    factor = rig.size_factor(motion.skeleton)
    if factor != 1.0:  # the rig's joints in other units or at another size: predicted at the rig's, scaled back
        out = predict_motion(scale(motion, factor), method=method, model=model, seconds=seconds, rig=rig, ground=ground,
                             progress=progress)  # fmt: skip
        new = out[motion.num_frames :]
        moved = None if new.joint_translations is None else new.joint_translations / factor
        back = Motion(motion.skeleton, new.rotations, new.root_positions / factor, motion.fps, joint_translations=moved)
        metadata = {k: v for k, v in out.metadata.items() if k != "units"}
        if "units" in motion.metadata:
            metadata["units"] = motion.metadata["units"]
        if "lift" in metadata:
            metadata["lift"] = [value / factor for value in metadata["lift"]]
        return Motion.concatenate([motion.copy(metadata=metadata), back])
    observed = model.observed if model is not None else 25
    fps = model.fps if model is not None else 25.0
    # the model-rate frames end on the input's last frame, so every method continues from it exactly
    span = (motion.num_frames - 1) / motion.fps
    if span * fps < 1 - 1e-9:
        raise FormatError(f"{motion.num_frames} frame(s) over {span:.3f} s; prediction needs at least {1 / fps:g} s")
    before = torch.arange(math.floor(span * fps + 1e-9), -1, -1, dtype=torch.float64) / fps  # seconds before the end
    on_model_rate = sample_frames(motion, (span - before) * motion.fps, fps)
    ds = MotionDataset(clips=[clip_from_motion(on_model_rate, fps=fps, name="", up=rig.up)], rig=rig, fps=fps)  # errors: no path
    fr = ds.frames()
    rot, pelvis = fr["rot"], fr["pelvis"]
    last = motion_frames(ds) - 1  # the input's last frame
    new_frames = max(1, round(seconds * motion.fps))
    want = math.ceil(new_frames / motion.fps * fps - 1e-9)  # model-rate frames that cover them
    bar = tqdm(total=want, unit="frame", desc="predict", disable=not progress, leave=False, dynamic_ncols=True)
    horizon = model.horizon if model is not None else 25
    n = rot.shape[0]  # frames so far; the arrays hold room for every step's (no copy of the history per step)
    room = max(0, last + want + horizon + 1 - n)
    rot = torch.cat([rot, rot.new_empty((room, *rot.shape[1:]))])
    pelvis = torch.cat([pelvis, pelvis.new_empty((room, *pelvis.shape[1:]))])
    while n <= last + want:
        start = max(0, n - observed)  # the step reads frames start: (the first repeated where there are fewer)
        yaw = _yaw_from(rig, rot[:n], pelvis[:n], fps, start)  # (n - start,): only those frames' headings
        take = torch.arange(start, n)
        if len(take) < observed:
            take = torch.cat([take[:1].expand(observed - len(take)), take])
        r_rot, r_pel = to_reference_frame(rot[take][None], pelvis[take][None], yaw[take - start][None], observed - 1,
                                          up=rig.up, floor=rig.floor, height=rig.height)  # fmt: skip
        if method == "zero_velocity":
            p_rot, p_pel = zero_velocity(r_rot, r_pel, horizon)
        elif method == "constant_velocity":
            p_rot, p_pel = constant_velocity(r_rot, r_pel, horizon)
        else:
            assert model is not None  # check_method: a learned method has its model
            p_rot, p_pel = model.predict(r_rot, r_pel)
        w_rot, w_pel = from_reference_frame(p_rot, p_pel, yaw[take - start][-1:], pelvis[take][-1:], up=rig.up,
                                            floor=rig.floor, height=rig.height)  # fmt: skip
        k = w_rot.shape[1]
        if n + k > rot.shape[0]:  # a step longer than the horizon: more room
            rot, pelvis = torch.cat([rot[:n], w_rot[0].float()]), torch.cat([pelvis[:n], w_pel[0].float()])
        else:
            rot[n : n + k], pelvis[n : n + k] = w_rot[0].float(), w_pel[0].float()
        bar.update(min(horizon, last + want + 1 - n))
        n += k
    bar.close()
    # the continuation from the input's last frame, sampled at the input's rate through cubic splines (a slerp
    # between the 25 fps frames had moved a 120 fps prediction in straight pieces, with a jolt in its acceleration
    # every 4.8 frames; held and uniform continuations, the baselines', come out held and uniform as before)
    continuation = rig.to_motion(rot[last : last + want + 1], pelvis[last : last + want + 1], fps, like=motion)
    times = torch.arange(1, new_frames + 1, dtype=torch.float64) / motion.fps
    predicted = spline_frames(continuation, times * fps, motion.fps)
    metadata = continuation_metadata(motion, predicted_from_frame=motion.num_frames, method=method)
    result = Motion.concatenate([motion.copy(metadata=metadata), predicted])
    return _grounded(result, motion.num_frames, rig.up) if ground else result


def continuation_metadata(motion: Motion, **updates: Any) -> dict[str, Any]:
    """``motion``'s metadata for it followed by a predicted continuation, with ``updates``: the BVH values and
    per-frame durations read from its file dropped (they describe its frames only), and a loop undone (``"loop"``:
    ``"none"``): a continuation does not come back to the first frame, so a player that loops the file would jump
    at the seam (a DeepMimic walk's continuation had kept ``Loop: wrap``, 0.38 m from its last frame to its first)."""
    metadata = {k: v for k, v in motion.metadata.items() if k not in ("bvh_values", "frame_durations")}
    if "loop" in metadata:
        metadata["loop"] = "none"
    metadata.update(updates)
    return metadata


@torch.no_grad()
def predict_retargeted(motion: Motion, *, method: str = "combined", model: Predictor | CombinedPredictor,
                       seconds: float = 1.0, mapping: Mapping[str, Any] | str | os.PathLike | None = None,
                       ground: bool = True, progress: bool = False) -> Motion:  # fmt: skip
    """Continue a motion on another humanoid skeleton: retarget it onto the model's (copy, bone frames calibrated
    on each side's motion, :class:`~skelanim.retarget.Retargeter`), continue it there (:func:`predict_motion`)
    and retarget the continuation back onto the motion's skeleton.

    The way there and back is not the identity where the skeletons differ (joints between mapped ones keep their
    rest relation, the root's height is rescaled twice), so each predicted frame is corrected by what the round
    trip did to the last input frame: every joint's local rotation by the fixed turn ``R_rt^-1 R_in`` of that
    frame (right-multiplied, a turn of the joint's own frame), the root and every joint's own translation
    channels by the fixed shift ``p_in - p_rt``. The continuation thus starts exactly where the input ends.

    Parameters
    ----------
    motion : Motion
        Input on a humanoid skeleton the joint mapping recognises (:func:`~skelanim.retarget.mapping.map_skeleton`).
    method, model, seconds, ground, progress
        As :func:`predict_motion` (``model`` is required: its rig is the skeleton the prediction is made on;
        ``ground`` applies on the model's skeleton and again on the motion's).
    mapping : mapping or path, optional
        A joint mapping for the motion's skeleton (:func:`~skelanim.retarget.mapping.map_skeleton`), where the
        names do not tell.

    Returns
    -------
    Motion
        The input's frames unchanged, then ``round(seconds * motion.fps)`` predicted frames on its skeleton.
    """
    from skelanim.retarget import Retargeter

    check_method(method, model, seconds)
    observed = model.observed / model.fps  # seconds the prediction reads
    start = max(0, motion.num_frames - math.ceil((observed + TAIL_MARGIN_S) * motion.fps))
    tail = motion[start:]
    reference = model_reference_motion(model)
    onto = retarget_onto_model(motion, reference, mapping)[start:]  # the whole input sets the floor
    continued = predict_motion(onto, method=method, model=model, seconds=seconds, ground=ground, progress=progress)
    back = Retargeter(reference, motion, target_map=mapping)(continued)
    last, n = tail.num_frames - 1, tail.num_frames
    turn = quat_multiply(quat_inverse(back.rotations[last]), tail.rotations[last])  # (J, 4)
    rotations = quat_multiply(back.rotations[n:], turn.expand_as(back.rotations[n:]))
    root = back.root_positions[n:] + (tail.root_positions[last] - back.root_positions[last])
    moved = None  # joints' own translation channels (a body root under a static dummy root travels there)
    if tail.joint_translations is not None:
        back_translations = back.local_translations()
        moved = back_translations[n:] + (tail.joint_translations[last] - back_translations[last])
    predicted = Motion(motion.skeleton, rotations, root, motion.fps, joint_translations=moved)
    metadata = continuation_metadata(motion, predicted_from_frame=motion.num_frames, method=method,
                                     retargeted_through_model=True)  # fmt: skip
    result = Motion.concatenate([motion.copy(metadata=metadata), predicted])
    if not ground:
        return result
    result = _grounded(result, motion.num_frames)
    on_model = torch.tensor(continued.metadata["lift"], dtype=torch.float64) * (motion.height / onto.height)
    result.metadata["lift"] = (on_model + torch.tensor(result.metadata["lift"], dtype=torch.float64)).tolist()
    return result


def lift_out_of_floor(motion: Motion, first: int, *, up: int | None = None) -> tuple[Motion, Tensor]:
    """Raise frames ``first:`` of ``motion`` (a continuation) along its up direction wherever their lowest joint
    (End Sites included) would sink below the input's floor: the :data:`FLOOR_QUANTILE` quantile of the lowest
    joint's height over frames ``:first``, a low point the input reaches again and again (a minimum would be a
    capture glitch's: CMU's ``01_01`` dips below -1 % of its height in 3 of 2,752 frames (to -1.3 %), its 1 % quantile is +1.6 %).

    The learned predictors pull a motion unlike their training captures toward those captures' hips height
    (a CMU walk through the Bandai-Namco models sank 5 % of its height below its floor within the predicted
    second); a body lifted where it would sink keeps its feet on the ground it had. Joints that do not move
    over the input (a dummy root at the origin) do not count. The lift goes into the root's position, or, when
    the root stands still over the input and the joints below it carry their own translations (a body root
    under a static dummy root, as Bandai-Namco's ``Hips`` under ``joint_Root``), into the root's children's,
    so that the file keeps its layout.

    Parameters
    ----------
    motion : Motion
        Input frames followed by the continuation.
    first : int
        The first frame of the continuation (``1 <= first <= F``).
    up : int, optional
        The up axis (0, 1 or 2, its positive direction), as a model's rig has it (:func:`predict_motion` passes its
        rig's: the frame the prediction was made in). Default: :meth:`~skelanim.core.motion.Motion.up_direction`
        of the input frames ``:first``, so that predicted frames do not move the guess.

    Returns
    -------
    Motion
        ``motion`` with frames ``first:`` lifted (frames ``:first`` unchanged).
    Tensor
        ``(F - first,)`` float64 lift of each continued frame, in the motion's units (0 where nothing sank).
    """
    if not 1 <= first <= motion.num_frames:
        raise ValueError(f"the continuation starts at frame {first}, outside 1..{motion.num_frames}")
    axis, sign = motion[:first].up_direction() if up is None else (up, 1.0)
    heights = sign * motion.positions(end_sites=True)[..., axis]  # (F, J'), up positive
    moving = (heights[:first] - heights[:1]).abs().amax(0) > 1e-9 * max(motion.height, 1e-12)
    if not bool(moving.any()):
        moving = torch.ones_like(moving)
    lowest = heights[:, moving].min(-1).values  # (F,)
    floor = torch.quantile(lowest[:first], FLOOR_QUANTILE)
    lift = (floor - lowest[first:]).clamp_min(0.0)  # (F - first,)
    if not bool((lift > 0).any()):
        return motion, lift
    # a body root under a root that stands still over the input, with translations of its own (Bandai-Namco's
    # Hips under joint_Root), is lifted in them, so that the file keeps its layout
    static_root = bool((motion.root_positions[:first] - motion.root_positions[:1]).abs().max() == 0)
    return raise_frames(motion, lift, first, axis=axis, sign=sign, children=static_root), lift


def raise_frames(motion: Motion, lift: Tensor, first: int, *, axis: int, sign: float = 1.0, children: bool) -> Motion:
    """``motion`` with frames ``first:`` raised by ``lift`` ``(F - first,)`` along ``sign`` times axis ``axis``: the
    root's position moves, or, with ``children`` and joints that carry their own translations (a body root under a
    static dummy root, as Bandai-Namco's ``Hips`` under ``joint_Root``), the root's children's translations do, so
    that the file keeps its layout (the dummy root stays where it is)."""
    shift = torch.zeros(len(lift), 3, dtype=torch.float64)
    shift[:, axis] = sign * lift
    root, translations = motion.root_positions.clone(), motion.joint_translations
    if children and translations is not None:  # the body hangs from the root's children: lift them
        translations = translations.clone()
        below = [j for j, parent in enumerate(motion.skeleton.parents.tolist()) if parent == 0]
        local = quat_apply(quat_inverse(motion.rotations[first:, 0]), shift)  # (F - first, 3) in the root's frame
        translations[first:, below] += local[:, None].to(translations.dtype)
    else:
        root[first:] += shift.to(root.dtype)
    return Motion(motion.skeleton, motion.rotations, root, motion.fps, joint_translations=translations,
                  metadata=dict(motion.metadata))  # fmt: skip


def _grounded(motion: Motion, first: int, up: int | None = None) -> Motion:
    """:func:`lift_out_of_floor` with the lift recorded in ``metadata["lift"]``."""
    lifted, lift = lift_out_of_floor(motion, first, up=up)
    lifted.metadata["lift"] = lift.tolist()
    return lifted


def retarget_onto_model(motion: Motion, reference: Motion,
                        mapping: Mapping[str, Any] | str | os.PathLike | None = None) -> Motion:  # fmt: skip
    """``motion`` (any humanoid skeleton the joint mapping knows, or ``mapping`` tells) copied onto the skeleton
    of ``reference`` (:func:`model_reference_motion`), bone frames calibrated on each side's motion. The reference
    is passed as its calibrated rig, not as a clip: a mean pose's feet do not stand where the training captures
    stand theirs, so the motion's feet keep their height above its floor, scaled (the Retargeter's rule for a
    bare skeleton). Raises a :class:`~skelanim.errors.SkelanimError` for a skeleton that cannot be mapped."""
    from skelanim.retarget import Retargeter
    from skelanim.retarget.retargeter import make_rig

    return Retargeter(motion, make_rig(reference), source_map=mapping)(motion)


def model_reference_motion(model: Predictor | CombinedPredictor) -> Motion:
    """One frame on the model's skeleton in its training data's mean pose (the normaliser's mean frame vector):
    what the model skeleton's bone frames are calibrated on when motion is retargeted onto it."""
    first = model.models[0] if isinstance(model, CombinedPredictor) else model
    rot = first.mean_pose()[None]  # (1, M, 3, 3)
    pelvis = first.norm.mean.detach()[None, -3:].to("cpu", torch.float64) * first.rig.height
    return first.rig.to_motion(rot, pelvis, first.fps)


def motion_frames(ds: MotionDataset) -> int:
    """Frames of the single clip of ``ds``."""
    return int(ds.lengths[0])


def _yaw_from(rig: Rig, rot: Tensor, pelvis: Tensor, fps: float, start: int) -> Tensor:
    """``(F - start,)`` headings of frames ``start:`` of ``rot`` ``(F, M, 3, 3)`` and ``pelvis`` ``(F, 3)``.

    Only the frames from ``start`` rounded down to a multiple of :data:`YAW_ALIGN` go through :func:`_yaw_of`: a
    heading is a function of its own frame's pose (:func:`~skelanim.ops.normalize.facing_directions` does not smooth
    over time), so they are the bits of the whole history's headings, at a cost that does not grow with the history
    (each predicted second had computed the headings of the input and of every frame predicted before it: quadratic
    in the predicted length, 20 of the 22.6 s of a 480 s continuation). The rounding keeps every frame at the place
    within torch's SIMD blocks it has in the whole history (their leftover elements take a scalar ``atan2`` that
    can differ by an ulp).
    """
    first = start - start % YAW_ALIGN
    return _yaw_of(rig, rot[first:], pelvis[first:], fps)[start - first :]


def _yaw_of(rig: Rig, rot: Tensor, pelvis: Tensor, fps: float) -> Tensor:
    """``(F,)`` headings of frames given as model-joint arrays ``(F, M, 3, 3)``, ``(F, 3)`` (through a Motion, with
    the dataset's definition), each frame's from its own pose."""
    from skelanim.data.features import yaw_from_directions
    from skelanim.ops.normalize import facing_directions

    motion = rig.to_motion(rot, pelvis, fps)
    return yaw_from_directions(facing_directions(motion, up_axis=rig.up), rig.up).float()
