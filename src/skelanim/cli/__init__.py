"""The ``skelanim`` command line. Thin: parse arguments, call the library, print.

Every command group lives in its own module and registers itself on :data:`app`. Bad input never
shows a traceback: :func:`main` turns a :class:`skelanim.errors.SkelanimError` (or an OS error on a
named file) into one line ``error: FILE:LINE: what was expected`` on stderr and exit code 2.
"""

from __future__ import annotations

import sys

import typer

from skelanim.errors import SkelanimError

app = typer.Typer(
    name="skelanim",
    help="Skeleton-based human animation: read, inspect, convert and process motion capture.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# Command modules register themselves on ``app`` when imported.
from skelanim.cli import files as _files  # noqa: E402,F401
from skelanim.cli import viz as _viz  # noqa: E402,F401
from skelanim.cli import gait as _gait  # noqa: E402,F401
from skelanim.cli import view as _view  # noqa: E402,F401
from skelanim.cli import demo as _demo  # noqa: E402,F401


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input)."""
    try:
        app(args=argv, prog_name="skelanim", standalone_mode=False)
    except SkelanimError as err:
        print(f"error: {err.one_line()}", file=sys.stderr)
        return 2
    except OSError as err:
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except SystemExit as exit_:
        return int(exit_.code or 0) if isinstance(exit_.code, int) else 1
    except Exception as err:  # click usage errors come through here in non-standalone mode
        import click

        if isinstance(err, click.exceptions.ClickException):
            err.show()
            return 2
        if isinstance(err, click.exceptions.Abort):
            return 1
        raise
    return 0


def entry_point() -> None:
    """Console-script entry point."""
    sys.exit(main())
