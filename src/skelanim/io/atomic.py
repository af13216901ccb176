"""Write files so that a failure never leaves a half-written output: write a temporary file beside the
target, then rename it over the target.

An :class:`OSError` while preparing, writing or renaming is re-raised with the same type and ``errno``
but about the output asked for: ``filename`` is the target (never the hidden temporary name) and
``strerror`` says what went wrong, e.g. ``Permission denied (cannot create a file in out/)`` or
``Is a directory (expected a file name to write to)``. Nothing is left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

#: Bytes (UTF-8) of the target's name kept in its temporary file's name (hidden, ``.tmp-``, a random part and the
#: suffix added): a target name near the file system's 255-byte limit must not make the temporary one too long.
STEM_KEPT = 64
#: What marks a temporary file's name: ``.<stem>.tmp-<random><suffix>`` (the suffix kept: writers pick their format
#: by it). A process killed outright leaves one; folder listings skip hidden files (``data.expand_paths``).
TEMP_MARK = ".tmp-"


def _temporary_prefix(target: Path) -> str:
    """``.<stem>`` + :data:`TEMP_MARK`, the stem cut to :data:`STEM_KEPT` bytes of UTF-8 (at a character's end): 61
    four-byte characters had made a valid name's temporary file too long."""
    stem = target.stem.encode("utf-8", "surrogateescape")[:STEM_KEPT].decode("utf-8", "ignore")
    return f".{stem}{TEMP_MARK}"


def _publish(tmp: str, target: Path) -> None:
    """Give the temporary file the permissions (and, where allowed, the owner) of the file it replaces, else
    ordinary ones (mkstemp makes it 0600), and rename it onto ``target``: a private 0600 file had come back 0644."""
    try:
        before: os.stat_result | None = os.stat(target)
    except OSError:
        before = None
    if before is not None:
        os.chmod(tmp, stat.S_IMODE(before.st_mode))
        if hasattr(os, "chown"):  # POSIX only; only root may give a file away, others keep it as theirs
            with contextlib.suppress(OSError):
                if (before.st_uid, before.st_gid) != (os.getuid(), os.getgid()):
                    os.chown(tmp, before.st_uid, before.st_gid)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, (stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP | stat.S_IROTH | stat.S_IWOTH) & ~umask)
    os.replace(tmp, target)


def _written_through(target: Path) -> Path:
    """The file a symbolic link ``target`` points to (a link is written through, as ``open`` would, not replaced
    by a plain file); ``target`` itself otherwise."""
    if not target.is_symlink():
        return target
    try:
        os.stat(target)
    except OSError as exc:  # a link loop, as open() refuses it (it had been replaced by a plain file)
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "Too many levels of symbolic links (a link loop)", str(target)) from None
    return Path(os.path.realpath(target))


def _refuse_read_only(target: Path) -> None:
    """Refuse an existing ``target`` its owner made read-only (as ``open`` would; the rename had replaced it), or
    one on a read-only file system (``os.access`` answers no for both: the file system's flag tells them apart)."""
    if target.is_file() and not os.access(target, os.W_OK):
        if _read_only_mount(target):
            raise OSError(errno.EROFS, f"{os.strerror(errno.EROFS)} (cannot replace it)", str(target))
        raise PermissionError(errno.EACCES, "Permission denied (the file is read-only)", str(target))


def _read_only_mount(path: Path) -> bool:
    """Whether ``path`` lies on a file system mounted read-only (unknown, e.g. on Windows: no)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (AttributeError, OSError):
        return False


def _about_target(exc: OSError, target: Path, what: str) -> OSError:
    """``exc`` as the same kind of error about ``target``: ``filename`` the target, ``strerror`` the
    system's reason followed by ``what`` was being done. A writer that reports a short write without a system
    error (numpy: "N requested and M written") on a full disk gets the system's reason."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    code = exc.errno
    if code is None and _no_room(target.parent):
        code, reason = errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {reason}"
    said = reason if reason.endswith(f"({what})") else f"{reason} ({what})"  # a nested atomic write said it already
    return type(exc)(code, said, str(target))


def _no_room(folder: Path) -> bool:
    """Whether ``folder``'s file system has less than a megabyte free (unknown: no)."""
    try:
        return shutil.disk_usage(folder).free < 1 << 20
    except OSError:
        return False


def _blocking_file(folder: Path) -> Path | None:
    """The nearest existing ancestor of ``folder`` (or ``folder`` itself) that is not a directory."""
    for candidate in (folder, *folder.parents):
        if candidate.exists() or candidate.is_symlink():
            return None if candidate.is_dir() else candidate
    return None


def _refuse_misplaced(target: Path) -> None:
    """Refuse a ``target`` that is a folder, or whose folder cannot exist because a file stands on its path."""
    if target.is_dir():
        raise IsADirectoryError(errno.EISDIR, "Is a directory (expected a file name to write to)", str(target))
    blocker = _blocking_file(target.parent)
    if blocker is not None:
        raise NotADirectoryError(errno.ENOTDIR, f"Not a directory ({blocker} is a file, not a folder)", str(target))


def _make_folders(folder: Path, created: list[Path]) -> None:
    """Create ``folder`` and its missing ancestors, one level at a time as spelled (``new/../out`` makes ``new``),
    appending each folder this call creates to ``created`` as it goes (so those made before a failing level are
    known too): not one that existed, nor one another process made meanwhile (its ``mkdir`` fails), so that
    removing them on failure removes nothing else."""
    for level in reversed([folder, *folder.parents]):
        if level.is_dir():
            continue
        try:
            os.mkdir(level)
        except FileExistsError:
            continue
        created.append(level)


def _prepare(target: Path, made: list[Path]) -> str:
    """Create ``target``'s folder if needed (appending what was created to ``made``) and a temporary file beside
    it; return the temporary name. Errors name ``target``."""
    _refuse_misplaced(target)
    _refuse_read_only(target)
    try:
        _make_folders(target.parent, made)
    except OSError as exc:
        raise _about_target(exc, target, f"cannot create the folder {exc.filename or target.parent}") from exc
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temporary_prefix(target), suffix=target.suffix, dir=target.parent)
    except OSError as exc:
        raise _about_target(exc, target, f"cannot create a file in {target.parent}{os.sep}") from exc
    os.close(fd)
    return tmp


def check_can_write(path: str | os.PathLike) -> None:
    """Fail now, as :func:`atomic_path` would later, if ``path`` cannot be written (a folder, a file where a folder
    should be, a folder that cannot be written to); leaves nothing behind (a temporary file in the nearest existing
    folder is made and removed). For commands that gather or compute their output before writing it (a recording,
    a prediction).

    Raises
    ------
    OSError
        ``filename`` is ``path``.
    """
    target = _written_through(Path(path))
    _refuse_misplaced(target)
    _refuse_read_only(target)
    existing = next(p for p in (target.parent, *target.parent.parents) if p.exists())
    # the one true test (a folder of another user, a read-only mount, /proc, a quota), with the system's own reason
    # (os.access had answered every refusal as "Permission denied", a read-only file system too)
    try:  # a temporary file made and removed at once
        fd, probe = tempfile.mkstemp(prefix=_temporary_prefix(target), suffix=".probe", dir=existing)
    except OSError as exc:
        raise _about_target(exc, target, f"cannot create a file in {existing}{os.sep}") from exc
    os.close(fd)
    os.unlink(probe)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path (same suffix) beside ``path``; on success it is renamed onto ``path``, on
    error removed. For writers that insist on a filename (``np.savez``, safetensors).

    Raises
    ------
    OSError
        The folder or the file cannot be created, written or replaced; ``filename`` is ``path``.
    """
    with atomic_paths([path]) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_paths(paths: Sequence[str | os.PathLike]) -> Iterator[list[Path]]:
    """:func:`atomic_path` for files written together (a batch): yields one temporary path per target, and
    none is renamed onto its target until the block has written them all; on error every one is removed, so
    a failure part-way (a full disk) leaves no part of the batch.

    Raises
    ------
    OSError
        As :func:`atomic_path`, ``filename`` the target of the temporary file that failed (an error naming no
        file is about the target when there is one).
    """
    targets = [_written_through(Path(p)) for p in paths]
    temps: list[str] = []
    made: list[Path] = []  # the folders created for the outputs, outermost first
    try:
        for target in targets:
            temps.append(_prepare(target, made))
        try:
            yield [Path(tmp) for tmp in temps]
        except OSError as exc:
            named = temps.index(exc.filename) if exc.filename in temps else None
            if named is None and (exc.filename is not None or len(temps) != 1):
                raise
            raise _about_target(exc, targets[named or 0], "while writing") from exc
        for tmp, target in zip(temps, targets, strict=True):
            try:
                _publish(tmp, target)
            except OSError as exc:
                what = "expected a file name to write to" if target.is_dir() else "cannot replace it"
                raise _about_target(exc, target, what) from exc
    except BaseException:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        _remove_empty(made[::-1])  # the folders made for the outputs, innermost first, if nothing was put there
        raise


@contextlib.contextmanager
def removed_if_empty(*folders: str | os.PathLike) -> Iterator[None]:
    """On an error, remove those of ``folders`` that did not exist before and are still empty (a run that
    failed before writing anything had left its output folder behind, empty). Paths are read with ``..`` collapsed
    (``new/../results`` is ``results``), so a folder that existed is never taken for a new one."""
    absolute = [Path(os.path.abspath(f)) for f in folders]
    fresh = sorted((f for f in absolute if not f.exists()), key=lambda p: -len(p.parts))  # the deepest first
    try:
        yield
    except BaseException:
        _remove_empty(fresh)
        raise


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove those of ``folders`` that are empty directories, in the order given (children before parents)."""
    for folder in folders:
        if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
            with contextlib.suppress(OSError):  # another process put something there, or it is not ours to remove
                folder.rmdir()


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
