"""The stateful :class:`Retargeter`: one source skeleton onto one target skeleton, streamed or whole clips.

Methods (:data:`METHODS`):

=========  ======================================================================================
``copy``   rest-aware copy of bone rotations, hips by the leg-length ratio (travel: stride legs)
``ik``     copy positions at target proportions, feet held during contacts, two-bone + swing IK
``nkn``    the neural network of :mod:`.model` (the shipped model by default)
``naive``  local rotations copied joint to joint, ignoring rest poses (for contrast only)
=========  ======================================================================================

``step(frame)`` advances a stream by one frame; ``__call__(motion)`` runs a whole clip from a fresh state, in
blocks of frames that carry the stream state (:mod:`.blocks`: memory grows with the result only, the same bits).
Every method is causal, so a clip equals stepping through it frame by frame given the same floors and rate: a
clip's default floor is where its feet stand over the whole clip (:func:`standing_level`), which a stream cannot
know ahead, so a stream's is where the source clip the Retargeter was built from stands, else 0 (as the exported
step's, :mod:`.export`); pass ``floor`` (and ``target_floor``) to have both agree (tested). The NKN
reads a clip more than 5 % off its 30 fps training rate at that rate (resampled, the answer sampled back, which
looks half a source frame ahead); a stream runs at the ``fps`` it is given, best the training rate.
The output keeps the target's full skeleton; joints outside the canonical set hold their rest rotation.
The NKN may run on a GPU (``device``, or a model already there): only the network runs there, its inputs moved in
and its answers back, and streamed frames then run eagerly (the compiled step is onnxruntime's, on the CPU).
"""

from __future__ import annotations

import copy
import math
import numbers
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from skelanim.core.motion import Motion, require_motion
from skelanim.core.rotations import matrix_to_quat, quat_apply, quat_identity, quat_multiply, quat_to_matrix
from skelanim.core.skeleton import Skeleton
from skelanim.io.common import first_non_finite
from skelanim.nn.device import module_device, to_device
from skelanim.ops.normalize import rotate
from skelanim.ops.resample import resample, sample_frames
from skelanim.retarget.baselines import FEET, ContactState, IKRetarget, PinState, causal_contacts, copy_hips
from skelanim.retarget.blocks import clip_levels, first_non_finite_translation, run_clip
from skelanim.retarget.mapping import CANONICAL_JOINTS
from skelanim.retarget.model import DEFAULT_MODEL, NKN, NKNState, load_nkn
from skelanim.retarget.online import OnnxStep, onnx_available
from skelanim.retarget.rig import CanonicalRig, canonical_locals, frames_from_locals, physical_zero_pose
from skelanim.retarget.sides import RetargetError, bone_size, make_rig, target_floor_of, upright, world_turn
from skelanim.retarget.stance import CLEARANCE, floor_level, standing_level

__all__ = ["CLEARANCE", "DEFAULT_MODEL", "METHODS", "RUNTIMES", "RetargetError", "Retargeter", "floor_level", "load_nkn",
           "make_rig", "standing_level", "target_floor_of", "upright", "world_turn"]  # fmt: skip

METHODS: tuple[str, ...] = ("copy", "ik", "nkn", "naive")
#: How :meth:`Retargeter.step` runs.
RUNTIMES: tuple[str, ...] = ("auto", "onnx", "torch")
#: A clip whose rate differs from the NKN's training rate by more than this fraction is read at the training rate.
NKN_RATE_TOLERANCE = 0.05
#: A motion retargeted by a :class:`Retargeter` of another clip of its skeleton may have bones this far (a fraction,
#: :func:`bone_size`) from that clip's; further (other units, another body) is refused.
SIZE_TOLERANCE = 0.01


def _is_real(value: Any) -> bool:
    """A real number: Python's, NumPy's scalars (an fps read from an ``.npz``) or a 0-d real tensor; not a bool."""
    if isinstance(value, torch.Tensor):
        return value.ndim == 0 and not value.is_complex() and value.dtype != torch.bool
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class Retargeter:
    """Retarget motion of ``source_skeleton`` onto ``target_skeleton``.

    Parameters
    ----------
    source_skeleton, target_skeleton : Skeleton, CanonicalRig or Motion
        The skeletons (a prepared rig is used as it is). A motion stands for its skeleton with the bone frames
        calibrated on that motion where its zero pose is no body pose, as ``skelanim retarget`` does with SRC and
        the ``--to`` file: ``Retargeter(cmu_clip, any_bandai_clip)(cmu_clip)``.
    method : str
        One of :data:`METHODS`.
    source_map, target_map : mapping or path, optional
        User joint mappings (see :func:`~.mapping.map_skeleton`).
    source_rest, target_rest : Tensor, optional
        ``(J, 4)`` local quaternions of each skeleton's rest (bind) pose; default its zero pose.
    source_calibration, target_calibration : Tensor, optional
        ``(T, J, 4)`` local quaternions of motion on each skeleton: its bone frames are calibrated on them
        (:class:`~.rig.CanonicalRig`), for a zero pose that is no body pose (Bandai-Namco's, the production
        rig's; :func:`~.rig.physical_zero_pose`), whose limb twist is otherwise off by up to a half turn; giving
        the skeletons as motions does this where it is needed. The shipped NKN model was trained on calibrated
        frames; a model that was not refuses them.
    model : NKN, path or None
        The network for ``nkn`` (default: the shipped model).
    fps : float, optional
        Frame rate of streamed frames (:meth:`step`); clips use their own. Default: the source clip's, where the
        source is given as a clip (as its floor is: a stream of its own frames then equals the clip's result; it
        had streamed a 120 fps clip's frames as 30 fps ones, 32 cm off), else 30.
    floor : float, optional
        Height the source's feet stand on, along its up (a clip that is not Y up is first turned so,
        :func:`world_turn`; the result is turned back into a Z-up target clip's world). Default: for a clip,
        :func:`standing_level` of its
        foot and toe joints (files differ: the production rig's floor lies a metre below its origin, CMU's toe
        joints stand above its y = 0); for a stream, that of the source clip given (its feet had streamed 5 cm
        above the clip's result, a CMU walk onto Bandai), else 0. Hips heights are scaled from there up.
    target_floor : float, optional
        Height the result's feet stand on in the target's canonical space (up +Y). Default: when the target is
        given as a clip, that clip's (:func:`target_floor_of`), so that a take retargeted onto its own skeleton
        comes back as it was, and standing toes land where the target's captures stand theirs. Else a clip's
        feet stand as high above y = 0 as the source's stand above its floor (:func:`floor_level`), scaled by the
        leg-length ratio (so a clip onto its own skeleton comes back as it was), and a stream's on y = 0.
    runtime : str
        How :meth:`step` runs (:data:`RUNTIMES`): ``auto`` an onnxruntime graph of the frame where the
        method allows (not a network off the CPU) and eager torch otherwise, ``onnx`` insist on it,
        ``torch`` always eager. Whole clips (:meth:`__call__`) always run in torch.
    device : torch.device or str, optional
        Where the NKN runs (a copy of the model is moved there; default: where the model is, the CPU for a
        loaded one). Inputs and results stay on the CPU.
    source_turn, target_turn : Tensor, optional
        ``(3, 3)`` turn of each side's world up onto +Y (:func:`world_turn` of its clip) where the skeleton is given
        as a rig, which shows no up: build the rig from the clip turned so (``ops.rotate(clip, turn)``), as the
        command line does. A side given as a clip finds its own.
    """

    def __init__(
        self,
        source_skeleton: Skeleton | CanonicalRig | Motion,
        target_skeleton: Skeleton | CanonicalRig | Motion,
        method: str = "copy",
        *,
        source_map: Mapping[str, Any] | str | os.PathLike | None = None,
        target_map: Mapping[str, Any] | str | os.PathLike | None = None,
        source_rest: Tensor | None = None,
        target_rest: Tensor | None = None,
        source_calibration: Tensor | None = None,
        target_calibration: Tensor | None = None,
        model: NKN | str | os.PathLike | None = None,
        fps: float | None = None,
        floor: float | None = None,
        target_floor: float | None = None,
        runtime: str = "auto",
        device: torch.device | str | None = None,
        source_turn: Tensor | None = None,
        target_turn: Tensor | None = None,
    ) -> None:
        if method not in METHODS:
            raise RetargetError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
        if runtime not in RUNTIMES:
            raise RetargetError(f"unknown runtime {runtime!r}; choose from {', '.join(RUNTIMES)}")
        #: a rate off the NKN's training rate is said when given, or, taken from the clip, on the first streamed frame
        self._rate_note = fps is None
        if fps is None:
            fps = source_skeleton.fps if isinstance(source_skeleton, Motion) else 30.0
        if not (_is_real(fps) and math.isfinite(fps) and fps > 0):
            raise RetargetError(f"fps must be a positive number, got {fps!r}")
        if floor is not None and not (_is_real(floor) and math.isfinite(floor)):
            raise RetargetError(f"floor must be a finite number or None, got {floor!r}")
        if target_floor is not None and not (_is_real(target_floor) and math.isfinite(target_floor)):
            raise RetargetError(f"target_floor must be a finite number or None, got {target_floor!r}")
        fps = float(fps)
        floor = None if floor is None else float(floor)
        target_floor = None if target_floor is None else float(target_floor)
        self.runtime = runtime
        #: The turns of the source's and the target's world up onto +Y (``None``: Y up, or a bare skeleton)
        self.source_turn, self.target_turn = source_turn, target_turn
        if isinstance(source_skeleton, Motion):
            source_skeleton, self.source_turn = upright(source_skeleton)
        if isinstance(target_skeleton, Motion):
            target_skeleton, self.target_turn = upright(target_skeleton)
        # the same turns as quaternions, for the root of each streamed frame (in, and back out)
        self._turn_in = None if self.source_turn is None else matrix_to_quat(self.source_turn)
        self._turn_out = None if self.target_turn is None else matrix_to_quat(self.target_turn.T)
        self.source = make_rig(source_skeleton, source_map, source_rest, calibration=source_calibration)
        self.target = make_rig(target_skeleton, target_map, target_rest, calibration=target_calibration)
        if target_floor is None and isinstance(target_skeleton, Motion) and target_skeleton.num_frames > 0:
            target_floor = target_floor_of(self.target, target_skeleton)
        #: Where the result's feet stand; ``None``: a clip's source's clearance above its floor, scaled.
        self.target_floor = None if target_floor is None else float(target_floor)
        self.method = method
        self.fps = float(fps)
        self.floor = floor
        clip = source_skeleton if isinstance(source_skeleton, Motion) and source_skeleton.num_frames > 0 else None
        #: ``floor``, or the source clip whose standing level :attr:`stream_floor` measures on first use, or 0
        self._floor_of: Motion | float = clip if floor is None and clip is not None else float(floor or 0.0)
        self.net: NKN | None = None
        if method == "nkn":
            self.net = model if isinstance(model, NKN) else load_nkn(model)
            if device is not None and module_device(self.net) != torch.device(device):
                self.net = copy.deepcopy(self.net).to(device)  # not the caller's (or load_nkn's cached) model
            calibrated = self.source.calibration is not None or self.target.calibration is not None
            if calibrated and not self.net.config.calibrated_frames:
                raise RetargetError("this NKN model was trained on uncalibrated bone frames: retarget without "
                                    "calibration (--no-calibrate), or with a model trained since 2026-12-03")  # fmt: skip
            if not self._rate_note:
                self._warn_off_rate()
            if self.net.config.calibrated_frames:
                for side, given, rig in (("source", source_skeleton, self.source), ("target", target_skeleton, self.target)):
                    if isinstance(given, Skeleton) and rig.calibration is None and not physical_zero_pose(given, rig.mapping):
                        warnings.warn(f"the {side} skeleton's zero pose is no body pose and its bone frames are not "
                                      f"calibrated: give the NKN a clip of it (Retargeter(source_clip, target_clip)) "
                                      f"or {side}_calibration=ROTATIONS; uncalibrated, its feet slide far more",
                                      stacklevel=2)  # fmt: skip
        self._ik = IKRetarget(self.target) if method == "ik" else None
        s, t = self.source, self.target
        self._nkn_args = (s.offsets.float()[None], torch.tensor([s.leg_length]), t.offsets.float()[None],
                          torch.tensor([t.leg_length]))  # fmt: skip
        # naive: target joint <- source joint for canonical joints both have
        src_index, tgt_index = s.mapping.index, t.mapping.index  # type: ignore[union-attr]  # set in __post_init__
        pairs = [(int(a), int(b)) for a, b in zip(src_index, tgt_index) if a >= 0 and b >= 0]
        self._naive_src = torch.tensor([a for a, _ in pairs])
        self._naive_tgt = torch.tensor([b for _, b in pairs])
        self._extra_joints = self._extras()
        self._varying = t.varying_joints(None if self._extra_joints is None else self._extra_joints[0].tolist())
        self._compiled: OnnxStep | bool | None = None
        self.reset()

    @property
    def stream_floor(self) -> float:
        """Where streamed frames' feet stand (:meth:`step`): ``floor``, else where the source clip's stand (measured
        on first use: a clip only retargeted had paid for it, 7 times the building of a 33k-frame one), else 0."""
        if isinstance(self._floor_of, Motion):
            self._floor_of = target_floor_of(self.source, self._floor_of)
        return self._floor_of

    @property
    def source_skeleton(self) -> Skeleton:
        """The source skeleton."""
        return self.source.skeleton

    @property
    def target_skeleton(self) -> Skeleton:
        """The target skeleton."""
        return self.target.skeleton

    def reset(self) -> None:
        """Forget the stream: the next :meth:`step` starts a new one."""
        self._contacts = ContactState()
        self._nkn_state = NKNState()
        self._pins = PinState.fresh()
        self._stream: list[np.ndarray] | None = None

    # ------------------------------------------------------------------ core
    def _extras(self) -> tuple[Tensor, list[int], Tensor] | None:
        """Target joints outside the canonical set that the source has too (same name, not mapped on either
        side): instead of holding their rest rotation they take the source's world rotation, aligned like
        their nearest mapped ancestor ``a``: ``R^B_k = R^A_k W^A_k{}^T G^A_a G^B_a{}^T W^B_k`` (``W`` rest world
        rotations, ``G`` rest bone frames). On one and the same skeleton this makes the copy exact.

        Returns
        -------
        tuple or None
            Target joints ``(K,)``, the source's ``K`` joints and alignments ``(K, 3, 3)``.
        """
        s, t = self.source, self.target
        src_names = {n: i for i, n in enumerate(s.skeleton.names)}
        mapped_s = set(s.mapping.joints.values())  # type: ignore[union-attr]  # set in __post_init__
        mapped_t = set(t.mapping.joints.values())  # type: ignore[union-attr]  # set in __post_init__
        pairs = [(k, src_names[n]) for k, n in enumerate(t.skeleton.names)
                 if n in src_names and k not in mapped_t and src_names[n] not in mapped_s
                 and int(t.anchor[k]) < len(CANONICAL_JOINTS) and int(s.anchor[src_names[n]]) == int(t.anchor[k])]  # fmt: skip
        if not pairs:
            return None
        tk = torch.tensor([k for k, _ in pairs])
        sa = torch.tensor([a for _, a in pairs])
        slot = t.anchor[tk]
        align = s.rest_frames[slot] @ t.rest_frames[slot].transpose(-1, -2)
        fix = s.rest_world[sa].transpose(-1, -2) @ align @ t.rest_world[tk]
        return tk, sa.tolist(), fix

    def _core(
        self, rotations: Tensor, translations: Tensor, fps: float, floor: float | None,
        contacts: ContactState, state: NKNState, pins: PinState, lift: float | None = None,
    ) -> tuple[Tensor, Tensor, Tensor | None, ContactState, NKNState, PinState]:  # fmt: skip
        """Target local quaternions ``(F, J_B, 4)``, root positions ``(F, 3)``, joint translations (or
        ``None``) and the new stream states (contacts, the NKN's, the IK's foot pins) for ``F`` source frames
        (``floor`` ``None``: the frames' :func:`standing_level`, lifted as :func:`~.blocks.clip_levels` says; else
        lifted by ``lift``, default onto ``target_floor``). A pure function of its inputs (what :meth:`step` traces)."""
        s, t = self.source, self.target
        local = quat_to_matrix(rotations)
        extras = self._extra_joints
        frames, pos, extra_world = s.encode_matrices(local, translations, None if extras is None else extras[1])
        if floor is None:  # a clip: from where its feet stand; onto where the target's do, else as high above y = 0
            level, lift = clip_levels(s, t, pos[:, list(FEET), 1], self.target_floor)
        else:
            level = floor
            lift = (self.target_floor or 0.0) if lift is None else lift
        if level != 0.0:
            pos = pos - torch.tensor([0.0, level, 0.0], dtype=pos.dtype)
        hips = copy_hips(pos[:, 0], s, t)
        if self.method == "naive":  # lifted as every method is (it had stood its feet at y = 0: 4 cm low on Bandai)
            q = quat_identity((rotations.shape[0], t.skeleton.num_joints), dtype=rotations.dtype)
            q[:, self._naive_tgt] = rotations[:, self._naive_src]
            root, trans = t.place_root(_lifted(hips, lift))
            return q, root, trans, contacts, state, pins
        if self.method == "ik":
            labels, contacts = causal_contacts(pos[:, list(FEET)], fps, s.height, contacts)
            assert self._ik is not None
            frames, pins = self._ik(frames, hips, labels, fps, pins)
        elif self.method == "nkn":
            labels, contacts = causal_contacts(pos[:, list(FEET)], fps, s.height, contacts)
            out_local, out_hips, state = self._nkn(canonical_locals(frames).float()[None], pos[None, :, 0].float(),
                                                   labels[None], fps, state)  # fmt: skip
            frames = frames_from_locals(out_local[0].to("cpu", torch.float64))
            hips = out_hips[0].to("cpu", torch.float64)
        world = t.decode_world(frames)
        if extras is not None and extra_world is not None:
            world[:, extras[0]] = extra_world @ extras[2]
        root, trans = t.place_root(_lifted(hips, lift))  # every method works above a floor at 0: onto the target's
        return t.locals_from_world(world, self._varying), root, trans, contacts, state, pins

    def _nkn(self, local: Tensor, hips: Tensor, labels: Tensor, fps: float, state: NKNState) -> tuple[Tensor, Tensor, NKNState]:
        """The network on ``(1, F, 22, 3, 3)`` canonical locals, ``(1, F, 3)`` hips and ``(1, F, 4)`` contacts (CPU
        tensors), on its device: its ``(1, F, 22, 3, 3)`` and ``(1, F, 3)`` answers there, and its stream state,
        kept there between frames."""
        assert self.net is not None
        device = module_device(self.net)
        inputs = (local, hips, labels, *self._nkn_args)
        if device.type != "cpu":  # a traced (exported) step runs on the CPU, without copies
            inputs = to_device(inputs, device)
        return self.net(*inputs, fps, state)

    def _run(
        self, rotations: Tensor, translations: Tensor, fps: float, floor: float | None, lift: float | None = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """:meth:`_core` on the Retargeter's own stream state (updated)."""
        with torch.inference_mode():
            q, root, trans, self._contacts, self._nkn_state, self._pins = self._core(
                rotations, translations, fps, floor, self._contacts, self._nkn_state, self._pins, lift)  # fmt: skip
        return q, root, trans

    def _step_module(self) -> nn.Module:
        """:meth:`_core` for one frame as a module of tensors only (stream state in and out): what
        :class:`~.online.OnnxStep` exports."""
        outer = self
        floor = self.stream_floor

        class _Step(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.net = outer.net

            def forward(self, rot: Tensor, root: Tensor, offsets: Tensor, started: Tensor, low: Tensor, prev: Tensor,
                        enc: Tensor, dec: Tensor, hips: Tensor, pins: Tensor, pinned: Tensor, pin_offsets: Tensor,
                        hang: Tensor) -> tuple[Tensor, ...]:  # fmt: skip
                trans = torch.cat([root[None], offsets[1:]])[None]
                q, root2, jt, c, st, p = outer._core(rot[None], trans, outer.fps, floor, ContactState(low, prev, started),
                                                     NKNState(enc, dec, hips, started), PinState(pins, pinned, pin_offsets, hang))  # fmt: skip
                assert c.floor is not None and c.previous is not None
                enc2 = enc if st.encoder is None else st.encoder
                dec2 = dec if st.decoder is None else st.decoder
                hips2 = hips if st.hips is None else st.hips
                return (q[0], root2[0], root2[0] if jt is None else jt[0], torch.ones_like(started), c.floor,
                        c.previous, enc2, dec2, hips2, p.pins, p.pinned, p.offsets, p.hang)  # fmt: skip

        return _Step()

    def _fresh_stream_state(self) -> tuple[Tensor, ...]:
        """Stream state of a compiled step at the start: all zeros (the ``started`` flag 0 makes the first frame
        ignore the floor, previous feet and previous hips it is given; zero GRU states, no foot pinned)."""
        hidden = self.net.config.hidden if self.net is not None else 1
        zeros = torch.zeros(1, 1, hidden)
        pins = PinState.fresh()
        return (torch.zeros(1, dtype=torch.float64), torch.zeros(1, 4, dtype=torch.float64),
                torch.zeros(1, 4, 3, dtype=torch.float64), zeros, zeros.clone(), torch.zeros(1, 3), pins.pins,
                pins.pinned, pins.offsets, pins.hang)  # fmt: skip

    def _compiled_step(self) -> OnnxStep | None:
        """The onnxruntime step (built on first use), or ``None`` (runtime ``torch``, a network off the CPU, or
        export failed)."""
        off_cpu = self.net is not None and module_device(self.net).type != "cpu"
        if self.runtime == "torch" or off_cpu or not onnx_available():
            if self.runtime == "onnx":
                raise RetargetError(f"no onnxruntime step for method {self.method!r} (or onnxruntime is missing)"
                                    + (" with the network off the CPU" if off_cpu else ""))  # fmt: skip
            return None
        n = self.source.skeleton.num_joints
        offsets = self.source.skeleton.offsets
        example = (quat_identity((n,)), offsets[0].clone(), offsets.clone(), *self._fresh_stream_state())
        try:
            return OnnxStep(self._step_module(), example)
        except Exception as err:  # noqa: BLE001  # any export failure: the eager step still works
            if self.runtime == "onnx":
                raise RetargetError(f"the streamed step could not be exported to ONNX: {err}".splitlines()[0]) from None
            return None

    def compile(self) -> bool:
        """Build the compiled step now rather than on the first :meth:`step` (about a second: do it before a
        live stream starts). Returns whether :meth:`step` runs compiled (onnxruntime) or eagerly."""
        if self._compiled is None:
            self._compiled = self._compiled_step() or False
        return bool(self._compiled)

    def step(
        self, rotations: Tensor, root_position: Tensor, joint_translations: Tensor | None = None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Retarget one frame of a stream.

        The first call builds the compiled step (an in-memory ONNX export; about a second; :meth:`compile`
        does it ahead), later calls run it (see :mod:`.online`).

        Parameters
        ----------
        rotations : Tensor
            ``(J_A, 4)`` local quaternions of the source skeleton.
        root_position : Tensor
            ``(3,)`` source root position.
        joint_translations : Tensor, optional
            ``(J_A, 3)`` animated local translations (default: the rest offsets; row 0 is ignored).

        Returns
        -------
        tuple
            ``(J_B, 4)`` target local quaternions, ``(3,)`` target root position and ``(J_B, 3)`` local
            translations when the target animates its hips' translation (Bandai-Namco; see
            :meth:`.rig.CanonicalRig.place_root`), else ``None`` (float64).
        """
        if self._rate_note:  # the rate taken from the source clip: said where a stream starts, not for whole clips
            self._rate_note = False
            self._warn_off_rate()
        rot = torch.as_tensor(rotations, dtype=torch.float64)
        root = torch.as_tensor(root_position, dtype=torch.float64)
        n = self.source.skeleton.num_joints
        if tuple(rot.shape) != (n, 4) or tuple(root.shape) != (3,):
            raise RetargetError(f"a frame needs ({n}, 4) rotations and a (3,) root position for the source "
                                f"skeleton, got {tuple(rot.shape)} and {tuple(root.shape)}")  # fmt: skip
        if self.source_turn is not None or self.target_turn is not None:
            rot = rot.clone()
            rot[0], root = self._turned_in(rot[0], root)
            q, out_root, jt = self._step(rot, root, joint_translations)
            q = q.clone()
            q[0], out_root = self._turned_out(q[0], out_root)
            return q, out_root, jt
        return self._step(rot, root, joint_translations)

    def _warn_off_rate(self) -> None:
        """Warn where the NKN streams at a rate more than :data:`NKN_RATE_TOLERANCE` off its training rate."""
        if self.net is not None and abs(self.fps / self.net.train_fps - 1.0) > NKN_RATE_TOLERANCE:
            warnings.warn(f"the NKN streams at {self.fps:g} fps but learned {self.net.train_fps:g} fps steps (a 120 fps "
                          f"walk streamed at its rate skated twice as much): feed the stream {self.net.train_fps:g} "
                          "fps frames where you can; a whole clip is resampled for it", stacklevel=3)  # fmt: skip

    def _step(
        self, rot: Tensor, root: Tensor, joint_translations: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """:meth:`step` in the Y-up worlds of both sides."""
        n = self.source.skeleton.num_joints
        offsets = self.source.skeleton.offsets
        if joint_translations is not None:
            offsets = torch.as_tensor(joint_translations, dtype=torch.float64)
            if tuple(offsets.shape) != (n, 3):
                raise RetargetError(f"joint translations must be ({n}, 3), got {tuple(offsets.shape)}")
        for label, values in (("rotation", rot), ("root position", root), ("joint translation", offsets)):
            bad = first_non_finite(values)
            if bad is not None:
                raise RetargetError(f"a frame with a non-finite {label} (index {bad})")
        if self.compile():
            assert isinstance(self._compiled, OnnxStep)  # compile() is true only with a built step
            if self._stream is None:
                self._stream = [t.numpy() for t in self._fresh_stream_state()]
            q_np, root_np, jt_np, *state = self._compiled(rot.numpy(), root.numpy(), offsets.numpy(), *self._stream)
            self._stream = state
            jt_out = torch.from_numpy(jt_np) if self.target.hips_translated else None
            return torch.from_numpy(q_np), torch.from_numpy(root_np), jt_out
        trans = offsets.clone()
        trans[0] = root
        q, root2, jt = self._run(rot[None], trans[None], self.fps, self.stream_floor)
        return q[0], root2[0], None if jt is None else jt[0]

    def _turned_in(self, rot: Tensor, root: Tensor) -> tuple[Tensor, Tensor]:
        """A source frame's root rotation ``(4,)`` and position ``(3,)`` with the world turned Y up."""
        if self._turn_in is None:
            return rot, root
        return quat_multiply(self._turn_in, rot), quat_apply(self._turn_in, root)

    def _turned_out(self, rot: Tensor, root: Tensor) -> tuple[Tensor, Tensor]:
        """A target frame's root rotation ``(4,)`` and position ``(3,)`` turned back into the target's world."""
        if self._turn_out is None:
            return rot, root
        return quat_multiply(self._turn_out, rot), quat_apply(self._turn_out, root)

    def __call__(self, motion: Motion) -> Motion:
        """Retarget a whole clip (from a fresh stream state; the state is reset afterwards).

        Parameters
        ----------
        motion : Motion
            A motion of the source skeleton (``F`` frames).

        Returns
        -------
        Motion
            ``F`` frames on the target's full skeleton at the clip's frame rate. The NKN reads a clip whose rate
            is more than :data:`NKN_RATE_TOLERANCE` off its training rate (30 fps) resampled to that rate, and its
            answer is sampled back at the clip's frame times (slerp); a stream (:meth:`step`) runs at ``fps``.
        """
        motion = require_motion(motion)
        if not motion.skeleton.same_topology(self.source.skeleton):
            raise RetargetError("the motion's skeleton is not the Retargeter's source skeleton")
        size = bone_size(motion.skeleton, self.source.skeleton)
        if abs(size - 1.0) > SIZE_TOLERANCE:  # the rig's leg lengths and calibration are the source's
            raise RetargetError(f"the motion's joints are those of the Retargeter's source, its bones not ({size:.4g} "
                                "times as long: other units, or another body): build a Retargeter for it",
                                path=motion.metadata.get("path"))  # fmt: skip
        if motion.num_frames == 0:
            raise RetargetError("the motion has no frames", path=motion.metadata.get("path"))
        bad = first_non_finite(motion.rotations)  # then the local translations, never whole (.blocks)
        label, bad = ("rotation", bad) if bad is not None else ("position", first_non_finite_translation(motion))
        if bad is not None:
            raise RetargetError(f"non-finite {label}", path=motion.metadata.get("path"),
                                where=f"frame {bad[0]}, joint {motion.skeleton.names[bad[1]]}")  # fmt: skip
        if self.net is not None and abs(motion.fps / self.net.train_fps - 1.0) > NKN_RATE_TOLERANCE:
            # the NKN's recurrent steps learned the training rate: a 120 fps clip read at 120 fps skated twice as
            # much as read at 30 (an audit: 0.066 against 0.033, copy 0.076 / 0.070); read at the training rate,
            # then sampled back at the clip's own frame times
            at_training_rate = self(resample(motion, self.net.train_fps))
            times = torch.arange(motion.num_frames, dtype=torch.float64) * (self.net.train_fps / motion.fps)
            times = times.clamp(max=float(at_training_rate.num_frames - 1))
            return sample_frames(at_training_rate, times, motion.fps)
        rotations, clip = motion.rotations.to(torch.float64), motion
        if self.source_turn is not None:  # the clip's world turned Y up, as the source rig was built
            clip = rotate(motion, self.source_turn)
            rotations = clip.rotations
        self.reset()
        q, root, trans = run_clip(self, rotations, clip, motion.fps, self.floor)  # in blocks of frames (.blocks)
        self.reset()
        meta = {"retarget_method": self.method, "retarget_source": str(motion.metadata.get("path", ""))}
        out = Motion(self.target.skeleton, q, root, motion.fps, joint_translations=trans, metadata=meta)
        return out if self.target_turn is None else rotate(out, self.target_turn.T)


def _lifted(hips: Tensor, lift: float | None) -> Tensor:
    """``(F, 3)`` canonical hip positions raised by ``lift`` along +Y (``None`` or 0: as they are)."""
    return hips + torch.tensor([0.0, lift, 0.0], dtype=hips.dtype) if lift else hips
