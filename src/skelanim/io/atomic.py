"""Write files so that a failure never leaves a half-written output: write a temporary file beside the
target, then rename it over the target."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Iterator


def _publish(tmp: str, target: Path) -> None:
    """Give the temporary file ordinary permissions (mkstemp makes it 0600) and rename it onto ``target``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, (stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH) & ~umask)
    os.replace(tmp, target)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success it replaces ``path``, on error it is removed.

    ``mode`` is ``"w"`` (text, UTF-8, ``\\n`` newlines unless ``newline`` is given) or ``"wb"``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        if "b" in mode:
            handle = os.fdopen(fd, mode)
        else:
            kwargs.setdefault("encoding", "utf-8")
            kwargs.setdefault("newline", "\n")
            handle = os.fdopen(fd, mode, **kwargs)
        with handle:
            yield handle
        _publish(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path (same suffix) for writers that insist on a filename (``np.savez``,
    safetensors); it is renamed onto ``path`` on success and removed on error."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=target.suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        _publish(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
