"""Run a call under a wall-clock limit, so that a test of a former endless loop fails instead of hanging."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any


def within(seconds: int, fn: Callable[[], Any]) -> Any:
    """``fn()``, failing the test (instead of hanging) after ``seconds`` (SIGALRM: main thread, POSIX)."""

    def stop(signum: int, frame: Any) -> None:
        raise AssertionError(f"still running after {seconds} s (an endless loop?)")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        return fn()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
