"""What a refused command prints: exit code 2, one line ``error: ...`` on stderr, nothing on stdout, no traceback."""

from __future__ import annotations

import pytest


def one_line_error(capfd: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    """The one error line of a refused command (checked as the module docstring says), holding every needle."""
    out, err = capfd.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and out == ""
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one ``error: ...`` line on stderr of a command that may print other lines (progress, notes) beside it;
    no traceback."""
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``skelanim ARGV`` through :func:`skelanim.cli.main`: its exit code, stdout and stderr."""
    from skelanim.cli import main

    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err
