"""Typed errors carrying the facts a user needs: which file, where in it, and what was expected.

Every error the library raises on bad input derives from :class:`SkelanimError`. The CLI turns it into
one line ``error: FILE:LINE: message`` (or ``FILE: frame F, joint J: message``) and exit code 2. Lines are
counted from 1, as an editor shows them; frames from 0, as ``motion[F]`` indexes them, in every format.
"""

from __future__ import annotations

import os


class SkelanimError(Exception):
    """Base class for every error skelanim raises on bad input.

    Parameters
    ----------
    message:
        What was wrong and what was expected.
    path:
        The file concerned, if any.
    line:
        1-based line number in that file, if the problem has one.
    where:
        A free-form location when a line does not apply (e.g. ``"frame 12, joint LeftArm"``).
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike[str] | None = None,
        line: int | None = None,
        where: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.where = where
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The error as a single line: ``FILE:LINE: message`` (parts that are unknown are left out)."""
        location = self.path or ""
        if self.line is not None:
            location = f"{location}:{self.line}" if location else f"line {self.line}"
        if self.where:
            location = f"{location}: {self.where}" if location else self.where
        return f"{location}: {self.message}" if location else self.message


class FormatError(SkelanimError):
    """A file could not be parsed: corrupt, truncated, wrong counts, non-finite numbers."""


class UnsupportedFormatError(SkelanimError):
    """The file suffix names no format skelanim reads or writes."""


class SkeletonError(SkelanimError):
    """A skeleton is inconsistent, or a joint name/index does not exist."""


class ShapeError(SkelanimError, ValueError):
    """An array has the wrong shape or dtype for the operation."""


class TrainingDataError(SkelanimError, ValueError):
    """The data cannot train the requested model: too few samples for one batch, a missing split part."""


class TrainingError(SkelanimError, RuntimeError):
    """A training run failed as it went: a loss, gradient or validation metric that is not finite (it diverged)."""
