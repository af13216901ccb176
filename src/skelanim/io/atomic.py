"""Write files so that a failure never leaves a half-written output: write a temporary file beside the
target, then rename it over the target."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def _publish(tmp: str, target: Path) -> None:
    """Give the temporary file ordinary permissions (mkstemp makes it 0600) and rename it onto ``target``."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, (stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH) & ~umask)
    os.replace(tmp, target)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path (same suffix) beside ``path``; on success it is renamed onto ``path``, on
    error removed. For writers that insist on a filename (``np.savez``, safetensors)."""
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


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO]:
    """Open a temporary file beside ``path`` (see :func:`atomic_path`); on success it replaces ``path``,
    on error it is removed.

    ``mode`` is ``"w"`` (text, UTF-8, ``\\n`` newlines unless ``encoding``/``newline`` are given) or ``"wb"``
    (``kwargs`` are then ignored).
    """
    if "b" in mode:
        kwargs = {}
    else:
        kwargs = {"encoding": "utf-8", "newline": "\n", **kwargs}
    with atomic_path(path) as tmp, open(tmp, mode, **kwargs) as handle:
        yield handle
