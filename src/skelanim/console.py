"""The ``skelanim`` console script.

It imports the command line only inside :func:`entry_point`, so that Ctrl-C while the commands and torch are
still importing (about a second) ends the run as an interrupt during a command does, with exit code 130 and no
traceback.
"""

from __future__ import annotations

import sys


def entry_point() -> None:
    """Run the ``skelanim`` command line (:func:`skelanim.cli.entry_point`)."""
    try:
        from skelanim.cli import entry_point as run
    except KeyboardInterrupt:
        print(file=sys.stderr)  # end the line the terminal's ^C is on
        sys.exit(130)
    try:
        run()
    except KeyboardInterrupt:  # between the import and the command's own handling (a test's SIGINT once hit there)
        print(file=sys.stderr)
        sys.exit(130)
