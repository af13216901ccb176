"""MP4 encoding for :func:`skelanim.viz.video.render_video`: ffmpeg (imageio-ffmpeg's) with its failures seen.

imageio-ffmpeg's ``write_frames`` neither checks ffmpeg's exit status when it is closed nor keeps its messages,
so a failure that comes late (a full disk when the index is written at the end) went unseen and a truncated MP4
was published; here ffmpeg's messages go to a temporary file while it starts, its exit status is checked, and so
is the file written.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = ["write_mp4"]


#: The context ffmpeg puts before a message, ``[out#0/mp4 @ 0x55d0c1a2b640] `` (one or more).
_FFMPEG_CONTEXT = re.compile(r"^(?:\[[^\]]*\]\s*)+")
#: Errors of the file system that ffmpeg's message may name (by the system's text): the error raised carries its
#: number.
_STORAGE_ERRORS = tuple(
    getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS", "EACCES") if hasattr(errno, name)
)


@contextlib.contextmanager
def _stderr_into(log: IO[bytes]) -> Iterator[None]:
    """Inside the block, file descriptor 2 is ``log``: a process started there inherits it as its stderr (ffmpeg,
    which imageio-ffmpeg starts with our stderr). Keep the block to the start of the process: it is the whole
    process's stderr meanwhile. Without a stderr to restore (descriptor 2 closed), nothing is redirected."""
    with contextlib.suppress(ValueError, OSError):
        sys.stderr.flush()  # what Python had buffered goes where it was meant to
    try:
        saved = os.dup(2)
    except OSError:
        saved = -1
    if saved < 0:
        yield
        return
    try:
        os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _encoder_log() -> IO[bytes]:
    """A temporary file for ffmpeg's messages; the null device where none can be made (the messages are then lost,
    ffmpeg's exit status still counts)."""
    try:
        return tempfile.TemporaryFile()
    except OSError:
        return open(os.devnull, "r+b")  # closed by the caller


def _encoder_process(writer: Any) -> subprocess.Popen | None:
    """The ffmpeg process of a started imageio-ffmpeg ``write_frames`` generator (its local ``p``), whose exit
    status the generator does not check; None where there is none to see (another implementation)."""
    frame = getattr(writer, "gi_frame", None)
    process = frame.f_locals.get("p") if frame is not None else None
    return process if isinstance(process, subprocess.Popen) else None


def _encoder_messages(log: IO[bytes]) -> list[str]:
    """ffmpeg's messages in ``log``, one a line, without their ``[context @ address]``."""
    try:
        log.seek(0)
        text = log.read(1 << 16).decode("utf-8", "replace")
    except OSError:
        return []
    lines = (_FFMPEG_CONTEXT.sub("", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def _mp4_problem(path: Path) -> str | None:
    """What is wrong with the MP4 file ``path``, or None: its top-level boxes must run exactly to its end and
    include ``moov`` (the index ffmpeg writes last; a file cut short has none, "moov atom not found")."""
    size = os.path.getsize(path)
    kinds: set[bytes] = set()
    offset = 0
    with open(path, "rb") as handle:
        while offset < size:
            handle.seek(offset)
            head = handle.read(16)
            length = int.from_bytes(head[:4], "big") if len(head) >= 8 else 0
            if length == 1:  # a 64-bit size follows the type
                length = int.from_bytes(head[8:16], "big") if len(head) == 16 else 0
            elif length == 0 and len(head) >= 8:  # the last box, to the end of the file
                length = size - offset
            if length < 8 or offset + length > size:
                return f"the file is cut short at byte {offset} of {size}"
            kinds.add(head[4:8])
            offset += length
    return None if b"moov" in kinds else "the file has no index (no moov box)"


def _encoder_error(tmp: Path, target: Path, said: list[str], status: int | None, broken: OSError | None) -> OSError:
    """The failure of ffmpeg writing ``tmp`` as one OS error about ``tmp`` (the atomic write makes it about the
    output, :mod:`skelanim.io.atomic`): what ffmpeg ``said`` first (its later lines are consequences: "Task finished
    with error code", "Nothing was written"), else the signal that killed it, the broken pipe's message or its exit
    status. The error number is the file system's error that the message names (no space, a quota, a file too
    large), else none, so that the atomic write says when the disk is full."""
    text = "\n".join(said)
    code = next((c for c in _STORAGE_ERRORS if os.strerror(c) in text), None)
    killed = None
    if status is not None and status < 0:
        with contextlib.suppress(ValueError):
            killed = signal.Signals(-status).name
        killed = killed or f"signal {-status}"
        if code is None and killed == "SIGXFSZ":  # over the file size limit (ulimit -f)
            code = errno.EFBIG
    if said:
        detail = said[0].replace(str(tmp), str(target)).replace(tmp.name, target.name)
    elif killed:
        detail = f"killed by {killed}"
    elif broken is not None:
        detail = (str(broken).strip().splitlines() or [type(broken).__name__])[0]
    else:
        detail = f"exit status {status}"
    if code is not None:
        detail = detail.removesuffix(f": {os.strerror(code)}")
    head = f"the video encoder (ffmpeg) {'stopped' if broken is not None else 'failed'}: {detail}"
    return OSError(code, f"{os.strerror(code)}: {head}" if code is not None else head, str(tmp))


def write_mp4(frames: Iterator[np.ndarray], tmp: Path, target: Path, size: tuple[int, int], fps: float) -> None:
    """Encode ``frames`` into ``tmp`` with ffmpeg (libx264, yuv420p), ``target`` the output it stands for.

    imageio-ffmpeg's ``write_frames`` neither checks ffmpeg's exit status when it is closed nor keeps its
    messages, so a failure that comes late (a full disk when the index is written at the end) went unseen and a
    truncated MP4 was published: ffmpeg's messages go to a temporary file (:func:`_stderr_into`, while it starts),
    its exit status is checked, and so is the file written (:func:`_mp4_problem`).

    Raises
    ------
    OSError
        ffmpeg stopped or failed, or left an incomplete file (:func:`_encoder_error`); ``filename`` is ``tmp``.
    """
    import imageio_ffmpeg

    with _encoder_log() as log:
        writer = imageio_ffmpeg.write_frames(  # ffmpeg's errors into the log: its failure becomes one error below
            str(tmp), (int(size[0]), int(size[1])), fps=float(fps), codec="libx264", pix_fmt_out="yuv420p",
            quality=6, macro_block_size=1, ffmpeg_log_level="error", output_params=["-preset", "veryfast"],
        )
        process: subprocess.Popen | None = None
        broken: OSError | None = None
        try:
            with _stderr_into(log):
                writer.send(None)  # starts ffmpeg
            process = _encoder_process(writer)
            try:
                for frame in frames:
                    writer.send(np.ascontiguousarray(frame))
            finally:
                writer.close()  # ffmpeg finishes the file and exits (the generator waits for it)
        except OSError as exc:
            broken = exc
        status = process.wait() if process is not None else None  # it has ended: the generator waited for it
        if broken is not None or status:
            raise _encoder_error(tmp, target, _encoder_messages(log), status, broken)
    problem = _mp4_problem(tmp)
    if problem is not None:
        raise OSError(None, f"the video encoder (ffmpeg) left an incomplete MP4: {problem}", str(tmp))
