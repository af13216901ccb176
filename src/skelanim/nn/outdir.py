"""The output folder of a training run: checked before the run, locked while it runs, removed if it stays empty.

* :func:`check_output_folders` refuses, before a command loads its data, a new run into a folder that holds a
  trained model or a run's training state, saying which way out works for what the folder holds.
* :func:`training_folder` is what :func:`skelanim.nn.train.fit` runs inside: it creates the folder, holds an
  exclusive lock on it (:func:`folder_lock`: ``fcntl.flock`` on :data:`LOCK_NAME` inside it), so that a second
  training into the same folder is refused at once instead of mixing its files with the first's, and on an error
  (``KeyboardInterrupt`` included) removes the folders it created if they are still empty.

The lock file is hidden, holds nothing, and is removed when the lock is released; one left by a killed run is
taken over by the next (the kernel released its lock), and no folder check counts it as model content.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from skelanim.errors import FormatError, SkelanimError
from skelanim.io.atomic import removed_if_empty
from skelanim.nn import distributed as ddp
from skelanim.nn.checkpoint import CONFIG_NAME, STATE_NAME, read_model_config

try:
    import fcntl
except ImportError:  # not POSIX (Windows): folders are not locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_NAME", "check_output_folders", "check_same_kind", "folder_lock", "training_folder"]

#: The lock file a running training holds inside its output folder.
LOCK_NAME = ".training.lock"

#: ``flock`` errors of file systems that do not lock (some network mounts): the folder is then used unlocked.
_NO_LOCKING = frozenset({errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL})


def _busy(folder: Path) -> SkelanimError:
    return SkelanimError("another training is writing this folder: wait for it to end, or choose another output "
                         "folder", path=folder)  # fmt: skip


def _take(folder: Path) -> int | None:
    """An open descriptor of ``folder``'s lock file, locked; ``None`` where the file system does not lock."""
    path = folder / LOCK_NAME
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as exc:
            raise type(exc)(exc.errno, f"{exc.strerror} (cannot create the lock file {LOCK_NAME} in it)",
                            str(folder)) from None  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, BlockingIOError):
                raise _busy(folder) from None
            if exc.errno in _NO_LOCKING:
                return None
            raise
        try:  # the holder before may have removed the file after this open: lock the file that is there now
            here = os.stat(path)
        except FileNotFoundError:
            here = None
        mine = os.fstat(fd)
        if here is not None and (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino):
            return fd
        os.close(fd)


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock on the existing ``folder`` (``fcntl.flock`` of :data:`LOCK_NAME` in it, without
    waiting) until the block ends, then remove the lock file. Without ``fcntl`` (not POSIX), or on a file system
    that does not lock, the block runs unlocked.

    Raises
    ------
    SkelanimError
        When another process (or another lock in this one) holds it: "another training is writing this folder".
    OSError
        When the lock file cannot be created (``filename`` is ``folder``).
    """
    folder = Path(folder)
    fd = _take(folder) if fcntl is not None else None
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):  # removed while still held: no other process can be between
                os.unlink(folder / LOCK_NAME)
            os.close(fd)


@contextlib.contextmanager
def training_folder(folder: str | os.PathLike, *, main: bool = True) -> Iterator[None]:
    """Run a training's block with ``folder`` created and locked (:func:`folder_lock`) by the main process (the
    others wait for its answer under DDP, and are refused with it); on an error in the block, ``folder`` and the
    parents this created are removed if they are empty (:func:`~skelanim.io.atomic.removed_if_empty`).

    Raises
    ------
    SkelanimError
        When another training holds the folder.
    """
    folder = Path(folder)
    whole = Path(os.path.abspath(folder))
    with contextlib.ExitStack() as stack:
        refused: Exception | None = None
        if main:
            stack.enter_context(removed_if_empty(whole, *whole.parents))
            try:
                folder.mkdir(parents=True, exist_ok=True)
                stack.enter_context(folder_lock(folder))
            except (SkelanimError, OSError) as err:
                refused = err
        if ddp.any_rank(refused is not None):  # the other ranks stop with the main one (they had waited for it)
            raise refused or SkelanimError("the main process could not take the output folder", path=folder)
        yield


def check_same_kind(out_dir: Path, made: str | None, *, resume: bool = False) -> None:
    """Refuse to train a ``made`` model into a folder that holds a model of another format (a recogniser's folder
    given to a predictor's training had been replaced without a word), or to ``resume`` such a folder's run (that
    had been refused as options to change, some of them no command has); an unreadable or format-less config
    passes."""
    path = out_dir / CONFIG_NAME
    if made is None or not path.is_file():
        return
    try:
        held = read_model_config(path).get("format")
    except SkelanimError:
        return
    if isinstance(held, str) and held != made:
        if resume:
            raise FormatError(f"the folder holds a {held} model's run, not a {made}'s: --resume continues a run "
                              "with the command that started it", path=out_dir)  # fmt: skip
        raise FormatError(f"the folder holds a {held} model, which this run's {made} would replace: choose another "
                          "output folder", path=out_dir)  # fmt: skip


def check_output_folders(*folders: str | Path, resume: bool, overwrite: bool) -> None:
    """Before a training command loads its data: refuse a new run (neither ``resume`` nor ``overwrite``) into a
    folder that holds a trained model or a run's training state, which the run would replace
    (:func:`~skelanim.nn.train.fit` itself replaces them, and refuses a model of another kind even so). ``resume``
    with ``overwrite`` is refused as contradictory. The message names what works: ``--resume`` only where a training
    state is there to continue from (a run stopped before it saved one leaves a model alone, which only
    ``--overwrite`` replaces).

    Parameters
    ----------
    folders : path
        The folders the run writes model files into (the output folder; a two-stage run's stage folders too).
    """
    if resume and overwrite:
        raise SkelanimError("--resume continues the run in the output folder and --overwrite replaces it: give one")
    if resume or overwrite:
        return
    paths = [Path(f) for f in folders]
    states = [p for p in paths if (p / STATE_NAME).is_file()]
    if states:
        raise FormatError("the folder holds a trained model or an interrupted run, which this run would replace: "
                          "--resume continues an interrupted run, --overwrite replaces it, or choose another "
                          "output folder", path=states[0])  # fmt: skip
    models = [p for p in paths if (p / CONFIG_NAME).is_file()]
    if models:
        raise FormatError("the folder holds a trained model or an interrupted run, which this run would replace; it "
                          "has no training state, so --resume cannot continue it: --overwrite replaces it, or choose "
                          "another output folder", path=models[0])  # fmt: skip
