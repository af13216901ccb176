"""The ``skelanim`` console script.

It imports the command line only inside :func:`entry_point`, so that Ctrl-C while the commands and torch are
still importing (about a second) ends the run as an interrupt during a command does, with exit code 130 and no
traceback. During that import a Ctrl-C is only noted, and acted on once the import is done: raised inside
torch's C++ initialisation (pybind11), the KeyboardInterrupt had aborted the process (``terminate called after
throwing an instance of 'pybind11::error_already_set'``, exit -6).
"""

from __future__ import annotations

import signal
import sys
import threading
from typing import NoReturn


def _interrupted_exit() -> NoReturn:
    print(file=sys.stderr)  # end the line the terminal's ^C is on
    sys.exit(130)


def entry_point() -> None:
    """Run the ``skelanim`` command line (:func:`skelanim.cli.entry_point`)."""
    noted: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    # Python's own handler only (an ignored SIGINT stays ignored), and only where handlers can be set (the main thread)
    deferred = previous is signal.default_int_handler and threading.current_thread() is threading.main_thread()
    if deferred:
        signal.signal(signal.SIGINT, lambda signum, frame: noted.append(signum))
    try:
        from skelanim.cli import entry_point as run
    except KeyboardInterrupt:
        _interrupted_exit()
    finally:
        if deferred:
            signal.signal(signal.SIGINT, previous)
    if noted:
        _interrupted_exit()
    try:
        run()
    except KeyboardInterrupt:  # between the import and the command's own handling (a test's SIGINT once hit there)
        _interrupted_exit()
