"""``skelanim record`` run in a thread while a stream is sent to it (tests of the record command)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def record_while_sending(main: Callable[[list[str]], int], out: Path, frames: Any, options: Sequence[str], *,
                         host: str = "127.0.0.1", junk: bool = False, pause: float = 0.05) -> int:  # fmt: skip
    """Run ``skelanim record OUT --host HOST --port P OPTIONS`` (``main``, the CLI's) on a free port while ``frames``
    (:func:`skelanim.serve.vmc.avatar_frames`) are sent to it at a 30 fps clock until it ends, with a datagram that
    is not OSC after each frame where ``junk``; the command's exit code."""
    from skelanim.serve.record import VMCRecorder
    from skelanim.serve.vmc import AvatarStream

    with VMCRecorder(host, 0) as probe:  # a free port
        port = probe.port
    codes: list[int] = []
    args = ["record", str(out), "--host", host, "--port", str(port), *options]
    listener = threading.Thread(target=lambda: codes.append(main(args)))
    listener.start()
    with AvatarStream(host, port) as sender:
        for k in range(600):  # until the listener has its frames (it may start listening late)
            if not listener.is_alive():
                break
            sender.send(frames, k % frames.num_frames, k / 30)
            if junk:
                sender._socket.sendto(b"not osc", (host, port))
            time.sleep(pause)
    listener.join(60)
    return codes[0] if codes else -1


__all__ = ["record_while_sending"]
