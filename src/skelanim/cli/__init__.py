"""The ``skelanim`` command line. Thin: parse arguments, call the library, print.

Every command group lives in its own module and registers itself on :data:`app`. Bad input never
shows a traceback: :func:`main` turns a :class:`skelanim.errors.SkelanimError` (or an OS error on a
named file) into one line ``error: FILE:LINE: what was expected`` on stderr and exit code 2, and a usage
error into one line ``error: COMMAND: MESSAGE (see COMMAND --help)``; a warning of the library is one line
``warning: MESSAGE``.
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import sys
import threading
from collections.abc import Iterator

import typer

from skelanim.errors import SkelanimError

app = typer.Typer(
    name="skelanim",
    help="Skeleton-based human animation: read, inspect, convert and process motion capture.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every sub-command's context
)


def _show_version(shown: bool) -> None:
    if shown:
        from skelanim import __version__

        typer.echo(f"skelanim {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_show_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """Skeleton-based human animation: read, inspect, convert and process motion capture."""

# Command modules register themselves on ``app`` when imported (in this order: the order of ``--help``).
# isort: off
from skelanim.cli import files as _files  # noqa: F401
from skelanim.cli import viz as _viz  # noqa: F401
from skelanim.cli import gait as _gait  # noqa: F401
from skelanim.cli import view as _view  # noqa: F401
from skelanim.cli import demo as _demo  # noqa: F401
from skelanim.cli import ik as _ik  # noqa: F401
from skelanim.cli import retarget as _retarget  # noqa: F401
from skelanim.cli import stream as _stream  # noqa: F401
from skelanim.cli import learn_recognize as _learn_recognize  # noqa: F401
from skelanim.cli import learn as _learn  # noqa: F401
from skelanim.cli import evaluate as _evaluate  # noqa: F401
from skelanim.cli import learn_predict as _learn_predict  # noqa: F401
from skelanim.cli import recognize as _recognize  # noqa: F401
# isort: on


def _flowing(doc: str) -> str:
    """A docstring as help text whose paragraphs flow: the lines of a paragraph joined by spaces (typer keeps a
    docstring's line breaks and wraps at the terminal's width as well, so ``--help`` broke lines mid-sentence);
    a paragraph whose lines are a list or indented (``- ``, ``* ``, leading spaces) keeps its lines."""
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines = paragraph.split("\n")
        kept = any(line[:1] in (" ", "\b") or line[:2] in ("- ", "* ") for line in lines[1:])  # not "--option"
        paragraphs.append(paragraph if kept else " ".join(line.strip() for line in lines))
    return "\n\n".join(paragraphs)


def _flow_help(group: typer.Typer) -> None:
    """:func:`_flowing` help text for every command of ``group`` and its sub-groups."""
    for command in group.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback is not None else None)
        if doc:
            command.help = _flowing(doc)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _flow_help(sub.typer_instance)


_flow_help(app)


#: click's exception base class, as typer vendors it (found through the one typer exports, not a private path).
_CLICK_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException" and issubclass(c, Exception)
)


def _given_value(err: Exception, argv: list[str]) -> str | None:
    """The text given on the command line for the option a usage error is about (``--opt V`` or ``--opt=V``)."""
    opts = getattr(getattr(err, "param", None), "opts", None) or []
    for i, word in enumerate(argv):
        for opt in opts:
            if word == opt and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(opt + "="):
                return word[len(opt) + 1 :]
    return None


def _usage_line(err: Exception, argv: list[str] | None = None) -> str:
    """A click usage error as one line: the command, the message, where to look. A bound said of a value that is
    not a number at all (``nan``: every comparison fails) is said as that."""
    ctx = getattr(err, "ctx", None)
    message = " ".join(str(err.format_message()).split())  # type: ignore[attr-defined]  # a click error has it
    given = _given_value(err, sys.argv[1:] if argv is None else argv)
    if given is not None and given.strip().lower() in ("nan", "+nan", "-nan") and "Input should be" in message:
        message = message[: message.index("Input should be")] + f"{given} is not a number"
    path = ctx.command_path if ctx is not None else _command_path(sys.argv[1:] if argv is None else argv)
    return f"{path}: {message} (see {path} --help)"


def _command_path(argv: list[str]) -> str:
    """``skelanim ik solve``: the command the words of ``argv`` name, for a usage error click raised before the
    command's context existed (an option given without its value: ``convert IN OUT --fps``)."""
    command: object = typer.main.get_command(app)
    path = ["skelanim"]
    for word in argv:
        commands = getattr(command, "commands", None)  # a group's sub-commands (typer vendors click's classes)
        if not isinstance(commands, dict) or word not in commands:
            break
        command = commands[word]
        path.append(word)
    return " ".join(path)


_NO_MEMORY = "not enough memory for this (a smaller --fps, --dpi, --seconds, -n or input?)"


def _out_of_memory(err: RuntimeError) -> bool:
    """Whether a RuntimeError is torch's (or its allocator's) failure to allocate memory."""
    text = str(err)
    return "can't allocate memory" in text or "out of memory" in text.lower()


def error_line(err: SkelanimError | OSError) -> str:
    """A library or OS error on bad input as one line, naming the file where the error knows it."""
    if isinstance(err, SkelanimError):
        return err.one_line()
    where = f"{err.filename}: " if getattr(err, "filename", None) else ""
    return f"{where}{err.strerror or err}"


def _error(message: str) -> None:
    """Print ``error: message`` on stderr, on a line of its own: a progress bar the failure interrupted is closed
    first (its last state ends with a newline instead of running into the error)."""
    from tqdm import tqdm

    bars = list(getattr(tqdm, "_instances", ()))
    for bar in bars:
        with contextlib.suppress(Exception):  # a bar that cannot close must not hide the error
            bar.close()
    # a bar that clears itself on closing leaves "\r<spaces>\r" on its line: on a terminal the error overwrites it,
    # in a log it would share the bar's line (grep '^error:' would miss it)
    ended = bars and not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
    print(f"{chr(10) if ended else ''}error: {message}", file=sys.stderr)


#: Signals that end a run as Ctrl-C does (:func:`_interrupt_on_termination`).
TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def _interrupt_on_termination() -> Iterator[list[int]]:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` while the command runs, so that they end it as Ctrl-C does:
    a half-written output's temporary file is removed (Python killed by a signal runs no cleanup: an audit's
    ``kill -TERM`` of ``render`` left a 552 KB hidden GIF beside the output) and ``record`` writes what arrived.
    Yields the signals received (the exit code is then ``128 + signal``). Outside the main thread, nothing changes."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def interrupt(signum: int, _frame: object) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    # a signal the process was told to ignore stays ignored (nohup's SIGHUP; a parent's ignored SIGTERM)
    previous = {sig: signal.signal(sig, interrupt) for sig in TERMINATING if signal.getsignal(sig) is not signal.SIG_IGN}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 2 bad input or usage, 130 interrupted, 143 terminated).

    Library errors on bad input and usage errors (an unknown option, a value out of range) each become one
    ``error:`` line on stderr; a command called without arguments prints its help (exit 2). SIGTERM and SIGHUP
    end a command as Ctrl-C does (:func:`_interrupt_on_termination`).
    """
    received: list[int] = []
    try:
        with _interrupt_on_termination() as received:
            code = _run(argv)
    except KeyboardInterrupt:  # one that lands outside the command (typer turns those inside into exit 130)
        code = 130
    return 128 + received[0] if received else code


def _run(argv: list[str] | None) -> int:
    """:func:`main`'s run, its errors turned into exit codes."""
    from skelanim.cli.files import warnings_as_lines

    try:
        with warnings_as_lines():  # the library's warnings as one line each, in every command
            result = app(args=argv, prog_name="skelanim", standalone_mode=False)
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (SkelanimError, OSError) as err:
        _error(error_line(err))
        return 2
    except MemoryError:
        _error(_NO_MEMORY)
        return 2
    except typer.Abort:  # before RuntimeError: typer's Abort is one
        print("error: aborted", file=sys.stderr)
        return 1
    except RuntimeError as err:  # torch reports an allocation it cannot make as a RuntimeError
        if not _out_of_memory(err):
            raise
        _error(_NO_MEMORY)
        return 2
    except _CLICK_ERROR as err:
        if type(err).__name__ != "NoArgsIsHelpError":  # that one has printed the help already
            _error(_usage_line(err, argv))
        return int(getattr(err, "exit_code", 2))
    return result if isinstance(result, int) and not isinstance(result, bool) else 0  # typer.Exit's code


def entry_point() -> None:
    """Console-script entry point. A ``torchrun`` worker that joined a process group leaves it and exits
    without interpreter finalization (:func:`skelanim.nn.distributed.exit_worker`)."""
    code = main()
    distributed = sys.modules.get("skelanim.nn.distributed")  # imported only by the training commands
    if distributed is not None and distributed.world_size() > 1:
        distributed.exit_worker(code)
    sys.exit(code)
