"""Record a live VMC stream into a :class:`Motion`: skelanim as the *marionette* of any VMC performer (webcam and
VR mocap apps, VSeeFace, :mod:`skelanim.serve.vmc` itself).

What arrives is read as :mod:`.vmc` sends it (that module's docstring has the conventions): per frame the
local position and rotation of each humanoid bone, Unity's left-handed axes, metres, and the model's root
transform. Where a frame ends is learnt from the sender (:meth:`VMCRecorder._read`): at its time
(``/VMC/Ext/T``) when that follows the bones, at the next time when it precedes them, where a bone or the
root arrives again, or after :data:`GRACE` seconds of silence.
The skeleton is the bones that arrived, each hung from its nearest arrived ancestor in Unity's humanoid
hierarchy (:data:`~.avatar.UNITY_PARENTS`) at the local position it first arrived with; its zero pose is the sender's
rest, for a VRM model the T-pose. Frames are stamped with the sender's time where it sends one, else their
arrival (also when the sender's clock stands still or runs back), and resampled to a regular rate
(:func:`~skelanim.ops.resample.sample_frames`).
"""

from __future__ import annotations

import math
import socket
import struct
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from pythonosc.osc_packet import OscPacket, ParseError

from skelanim.core.motion import Motion
from skelanim.core.rotations import quat_apply, quat_multiply, quat_normalize
from skelanim.core.skeleton import Skeleton
from skelanim.io.bvh import MAX_LENGTH
from skelanim.ops.resample import sample_frames
from skelanim.serve.avatar import UNITY_PARENTS
from skelanim.serve.vmc import DEFAULT_PORT, StreamError, host_port, mirror_x

__all__ = ["GRACE", "ReceivedFrame", "VMCRecorder", "frames_to_motion"]

#: Seconds of silence after which the frame being assembled counts as whole (a sender that stopped).
GRACE = 0.25
_BONE, _ROOT, _TIME = "/VMC/Ext/Bone/Pos", "/VMC/Ext/Root/Pos", "/VMC/Ext/T"


@dataclass
class ReceivedFrame:
    """One received frame: ``bones`` maps a bone name to 7 floats (position x y z, rotation x y z w; Unity's
    axes), ``root`` is the root transform's 7 floats, ``time`` the sender's time (or ``None``), ``arrival`` the
    receiver's clock."""

    bones: dict[str, tuple[float, ...]]
    root: tuple[float, ...] | None
    time: float | None
    arrival: float
    sender: tuple[str, int] | None = field(default=None, compare=False)


class VMCRecorder:
    """Listen for VMC on a UDP port and collect frames.

    Parameters
    ----------
    host : str
        The address to listen on (``"0.0.0.0"``: every interface).
    port : int
        The UDP port (:data:`~.vmc.DEFAULT_PORT`; 0 picks a free one, see :attr:`port`).

    Attributes
    ----------
    port : int
        The port listened on (the one picked for 0).
    target : str
        ``host:port`` listened on, for messages (an IPv6 address in brackets: ``[::1]:39539``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
        port = int(port) if isinstance(port, np.integer) else port  # numpy's integers are ports; a bool is not
        if not (isinstance(port, int) and not isinstance(port, bool) and 0 <= port < 65536):
            raise StreamError(f"port must be 0-65535, got {port!r}")
        where = host_port(host, port)
        try:  # the host's own family: IPv6 (::1, ::) as well as IPv4
            family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM,
                                                                 flags=socket.AI_PASSIVE)[0]  # fmt: skip
            self._socket = socket.socket(family, kind, proto)
        except (OSError, UnicodeError) as err:
            raise StreamError(f"cannot listen on {where}: {getattr(err, 'strerror', None) or err}") from None
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)  # room for bursts (the OS may cap it)
        try:
            self._socket.bind(address)
        except (OSError, UnicodeError) as err:
            self._socket.close()
            raise StreamError(f"cannot listen on {where}: {getattr(err, 'strerror', None) or err}") from None
        self.port: int = self._socket.getsockname()[1]
        self.target = host_port(host, self.port)  # for messages: ``[::1]:39539`` for an IPv6 address
        self.ignored = 0  # datagrams that were not OSC, and messages with a non-number or a NaN where numbers go
        self._reset()

    def _reset(self) -> None:
        """Forget the frame being assembled (a new take)."""
        self._bones: dict[str, tuple[float, ...]] = {}  # every bone's last value
        self._pending: set[str] = set()  # bones of the frame being assembled
        self._root: tuple[float, ...] | None = None
        self._root_in_frame = False
        self._time: float | None = None  # the frame's sender time
        self._time_last: bool | None = None  # whether the sender sends a frame's time after its bones
        self._arrival = 0.0

    def close(self) -> None:
        """Stop listening."""
        self._socket.close()

    def __enter__(self) -> VMCRecorder:  # noqa: PYI034 (Python 3.10 has no typing.Self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _frame(self, sender: tuple[str, int] | None) -> ReceivedFrame:
        """The frame assembled so far (every bone at its last value); starts the next."""
        frame = ReceivedFrame(dict(self._bones), self._root, self._time, self._arrival, sender)
        self._pending, self._time, self._root_in_frame = set(), None, False
        return frame

    def _read(self, data: bytes, arrival: float, sender: tuple[str, int]) -> list[ReceivedFrame]:
        """The frames a datagram completes.

        Senders differ in where a frame ends, so the order is learnt from the first datagram with both bones and
        a time: most send the time after the bones (it ends the frame), some before (the next time ends it). A
        bone or the root arriving a second time also ends a frame (senders without a time; frames split over
        bundles keep together)."""
        try:
            messages = [(m.message.address, m.message.params) for m in OscPacket(data).messages]
        except (ParseError, UnicodeDecodeError, ValueError, IndexError, struct.error):  # python-osc's, on bad bytes
            self.ignored += 1  # (a corrupt string had raised UnicodeDecodeError, and the take was lost)
            return []
        if self._time_last is None:
            kinds = [a for a, _ in messages if a in (_BONE, _TIME)]
            if _BONE in kinds and _TIME in kinds:
                self._time_last = kinds.index(_TIME) > kinds.index(_BONE)
        frames = []
        for address, params in messages:
            if address not in (_BONE, _ROOT, _TIME):
                continue
            values = _finite(params[1:8] if address in (_BONE, _ROOT) else params[:1])
            if values is None or len(params) < (8 if address in (_BONE, _ROOT) else 1):  # a word, a blob, a NaN or
                self.ignored += 1  # a huge number where a number goes, or too few arguments
                continue
            if address == _BONE:
                name = str(params[0])
                if name in self._pending:
                    frames.append(self._frame(sender))
                if not self._pending:
                    self._arrival = arrival
                self._pending.add(name)
                self._bones[name] = values
            elif address == _ROOT:
                if self._pending and self._root_in_frame:
                    frames.append(self._frame(sender))
                self._root, self._root_in_frame = values, True  # v2.1 extras unused
            else:  # the time
                stamp = values[0]
                if self._time_last is not False:  # the time closes its frame (loose messages: the usual order)
                    if self._pending:
                        self._time = stamp
                        frames.append(self._frame(sender))
                else:  # the time opens its frame: a new one closes the last
                    if self._pending and self._time is not None and stamp != self._time:
                        frames.append(self._frame(sender))
                    self._time = stamp
        return frames

    def receive(
        self,
        *,
        seconds: float | None = None,
        frames: int | None = None,
        wait: float | None = None,
        give_up: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_frame: Callable[[ReceivedFrame], None] | None = None,
    ) -> list[ReceivedFrame]:
        """Collect frames until ``frames`` have arrived, ``seconds`` have passed since the first one, or nothing
        has arrived for ``wait`` seconds after the first one (a recorder started before its sender waits for it;
        with none of the three: until Ctrl-C, which returns what arrived); ``give_up``: return empty-handed when no
        frame has arrived that many seconds after the call (else it waits for the first frame as long as it takes)."""
        out: list[ReceivedFrame] = []
        first: float | None = None
        self._reset()
        last = start = clock()  # when something last arrived
        try:
            while frames is None or len(out) < frames:
                now = clock()
                deadlines = ([] if wait is None or first is None else [last + wait]) + (
                    [] if seconds is None or first is None else [first + seconds]) + (
                    [] if give_up is None or first is not None else [start + give_up])  # fmt: skip
                if deadlines and now >= min(deadlines):
                    break
                timeout = min(deadlines) - now if deadlines else None
                if self._pending:  # a sender gone quiet has sent its last frame whole
                    timeout = GRACE if timeout is None else min(timeout, GRACE)
                self._socket.settimeout(max(timeout, 1e-3) if timeout is not None else None)
                try:
                    data, sender = self._socket.recvfrom(65536)
                except TimeoutError:
                    if not (self._pending and clock() - last >= GRACE):
                        continue
                    new = [self._frame(None)]
                else:
                    last = clock()
                    new = self._read(data, last, sender)
                for frame in new:
                    first = frame.arrival if first is None else first
                    out.append(frame)
                    if on_frame is not None:
                        on_frame(frame)
        except KeyboardInterrupt:
            pass
        if self._pending and (frames is None or len(out) < frames):  # the last frame has nobody after it
            out.append(self._frame(None))
        return out[:frames] if frames is not None else out


def frames_to_motion(frames: list[ReceivedFrame], fps: float = 30.0) -> Motion:
    """A :class:`Motion` (right-handed, Y up, metres) from received frames, resampled to ``fps``.

    Raises
    ------
    StreamError
        When no frame carried the ``Hips``.
    """
    if not frames:
        raise StreamError("nothing arrived (is the sender sending to this host and port?)")
    frames = [f for f in frames if "Hips" in f.bones]
    if not frames:
        raise StreamError("no frame with the Hips arrived (is the sender sending VMC bones to this port?)")
    if not (math.isfinite(fps) and fps > 0):
        raise StreamError(f"fps must be a positive number, got {fps}")
    timed = [k for k, f in enumerate(frames) if f.time is not None]
    if timed:
        frames = frames[timed[0] :]  # frames before the sender's first time are not on its clock
    seen = {name for f in frames for name in f.bones}
    names = [n for n in UNITY_PARENTS if n in seen]  # parents first
    unknown = sorted(seen - set(UNITY_PARENTS))
    if unknown:
        warnings.warn(f"left out {len(unknown)} bones that are not Unity humanoid bones: {', '.join(unknown[:5])}"
                      + (", ..." if len(unknown) > 5 else ""), stacklevel=2)  # fmt: skip
    parents = []
    for n in names:
        p = UNITY_PARENTS[n]
        while p is not None and p not in seen:
            p = UNITY_PARENTS[p]
        parents.append(-1 if p is None else names.index(p))
    first_values = {n: next(f.bones[n] for f in frames if n in f.bones) for n in names}
    offsets = torch.tensor([first_values[n][:3] for n in names], dtype=torch.float64)
    # every frame holds a bone's last value (a sender may skip bones that did not move)
    held = dict(first_values)
    values = []
    for f in frames:
        held.update({n: v for n, v in f.bones.items() if n in held})
        values.append([held[n] for n in names])
    table = torch.tensor(values, dtype=torch.float64)  # (F, J, 7)
    rotations, positions = mirror_x(quat_normalize(table[..., [6, 3, 4, 5]]), table[..., :3])
    offsets = mirror_x(rotations[0], offsets)[1]
    offsets[0] = 0.0
    hips = positions[:, 0]
    roots = torch.tensor(
        [f.root if f.root is not None else (0.0, 0, 0, 0, 0, 0, 1) for f in frames], dtype=torch.float64
    )
    root_rot, root_pos = mirror_x(quat_normalize(roots[:, [6, 3, 4, 5]]), roots[:, :3])
    rotations[:, 0] = quat_multiply(root_rot, rotations[:, 0])
    root_positions = root_pos + quat_apply(root_rot, hips)
    skeleton = Skeleton(names, np.array(parents), offsets)
    raw = Motion(skeleton, rotations, root_positions, fps=1.0, metadata={"units": "m"})
    stamps = np.array([f.time if f.time is not None else math.nan for f in frames], dtype=np.float64)
    precision = float(np.finfo(np.float32).eps)  # /VMC/Ext/T is an OSC float32: 127/30 arrives as 4.2333331
    if not (np.all(np.isfinite(stamps)) and np.all(np.diff(stamps) > 0)):
        if timed:
            warnings.warn("the sender's times (/VMC/Ext/T) are missing, repeated or run back; frames are placed "
                          "by their arrival", stacklevel=2)  # fmt: skip
        stamps = np.array([f.arrival for f in frames], dtype=np.float64)
        precision = float(np.finfo(np.float64).eps)
    order = np.arange(len(frames), dtype=np.float64)
    magnitude = max(abs(float(stamps[0])), abs(float(stamps[-1])))
    grid = stamps[0] + np.arange(_grid_length(float(stamps[-1] - stamps[0]), magnitude, precision, fps)) / fps
    unique, first_index = np.unique(stamps, return_index=True)  # repeated stamps: the first frame of each
    indices = np.interp(grid, unique, order[first_index]) if len(unique) > 1 else np.zeros(1)
    return sample_frames(raw, torch.from_numpy(indices), fps)


def _grid_length(span: float, magnitude: float, precision: float, fps: float) -> int:
    """How many frames at ``fps`` a take holds: one per whole frame period of its span, its first frame included.

    Stamps are only as precise as their type: a span that falls short of a whole number of periods by less than
    their rounding is that number (a sender's 128 frames at 30 fps span 4.2333331 s on float32 stamps, not 127/30,
    and had come back as 127 frames). No more slack than that, and never half a period: a grid point past the last
    stamp would be a frame that was not sent.

    Parameters
    ----------
    span : float
        Seconds from the first stamp to the last.
    magnitude : float
        The largest stamp's size (seconds): the rounding of a stamp grows with it.
    precision : float
        Machine epsilon of the stamps' type (float32's for the sender's ``/VMC/Ext/T``, float64's for arrivals).
    fps : float
        The grid's frame rate.

    Returns
    -------
    int
        The number of grid frames, at least 1.
    """
    slack = min(max(4.0 * precision * max(magnitude, 1.0), 1e-9), 0.5 / fps)  # both ends' rounding, a margin
    return math.floor((span + slack) * fps) + 1


def _finite(params: Any) -> tuple[float, ...] | None:
    """OSC arguments as finite floats, or ``None`` where one is not a number or lies beyond the BVH reader's
    :data:`~skelanim.io.bvh.MAX_LENGTH` (a message to skip, not a take to lose: a 1e30 had been written into a file
    that ``load`` then refused)."""
    try:
        values = tuple(float(v) for v in params)
    except (TypeError, ValueError):
        return None
    return values if all(math.isfinite(v) and abs(v) <= MAX_LENGTH for v in values) else None
