"""On-disk cache of parsed clips, so a second epoch (or a second run) never re-parses BVH.

Where
-----
``$SKELANIM_CACHE`` when set, else ``$XDG_CACHE_HOME/skelanim`` (``~/.cache/skelanim``), else, when that is
not writable, ``<tempdir>/skelanim-cache-<uid>`` (:func:`temporary_cache`: the user's own, mode 0700; one owned by
another user or writable by others, whose entries anyone could have planted, is not used: a fresh private folder
for the process instead, with a warning). Never inside a data folder: :func:`check_outside` refuses a
cache directory that lies within the folder of a file it would cache (the default one then gives way to
the temporary one, :func:`cache_outside`).

What
----
One safetensors file per (source file, settings) under ``clips/``: the tensors of a
:class:`~skelanim.data.clips.Clip` plus JSON metadata. The key hashes the file's resolved path, size,
modification and change times and inode, the settings (fps, ...) and :data:`CACHE_VERSION`, so an edited file (its
modification time restored or not) or a change to how clips are built misses the cache instead of reading stale
data. Each entry holds a digest of its metadata and its tensors' bytes, checked on reading: a damaged entry (or one written
before the digest) is rebuilt, never used. Writes are atomic; a cache that cannot be written is read from where it can be, and clips are built without
it otherwise (with a warning).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, safe_open, save_file

from skelanim.errors import TrainingDataError
from skelanim.io.atomic import atomic_path

__all__ = ["CACHE_VERSION", "cache_dir", "cache_key", "cache_outside", "check_outside", "read_cached", "temporary_cache",
           "write_cached"]  # fmt: skip

#: Bump when the content of cached clips changes.
CACHE_VERSION = 8  # 3: BVH frame rates read as the rate a rounded Frame Time stands for (io.common.nominal_fps); 4: DeepMimic durations too; 5: the up axis of turned captures (Motion.up_axis); 6: an upside-down source's foot contacts and facing (its signed up direction); 7: the digest covers the metadata too; 8: a turned static dummy root is a dummy (rig.body_root)


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".probe"):
            return True
    except OSError:
        return False


def _chosen(override: str | os.PathLike | None) -> Path | None:
    """The cache folder ``override`` or ``$SKELANIM_CACHE`` names (not created), ``None`` for the default lookup."""
    chosen = override if override is not None else os.environ.get("SKELANIM_CACHE") or None
    return None if chosen is None else Path(chosen).expanduser()


def _default_base() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skelanim"


def _created(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # it had been a bare PermissionError naming a subfolder
        raise TrainingDataError(f"cannot create the clip cache folder {path} ({err.strerror or err}); name a "
                                "writable one (SKELANIM_CACHE)") from None  # fmt: skip
    return path


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The cache directory (created).

    Parameters
    ----------
    override : path, optional
        Use this directory instead of the default lookup (module docstring).

    Returns
    -------
    Path
        A writable directory.
    """
    return cache_outside([], override)  # outside no data: the same lookup


def temporary_cache() -> Path:
    """``<tempdir>/skelanim-cache-<uid>``, the user's own (created with mode 0700). The temporary folder is shared by
    every user: a folder of that name that another user owns, or that others may write to, could hold entries planted
    under this user's keys (they are predictable), so it is not used; a fresh private folder is, for this process
    (removed when it exits), with a warning. Without POSIX user ids (Windows) the folder is ``skelanim-cache-user``
    in the user's own temporary folder, used as it is."""
    posix = hasattr(os, "getuid")  # elsewhere (Windows) the temporary folder is the user's own, and modes say nothing
    path = Path(tempfile.gettempdir()) / f"skelanim-cache-{os.getuid() if posix else 'user'}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode) and (not posix or (
            info.st_uid == os.getuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))):
        return path
    if path not in _PRIVATE:  # one folder (and one warning) per process, removed when it exits
        _PRIVATE[path] = fresh = Path(tempfile.mkdtemp(prefix="skelanim-cache-"))
        atexit.register(shutil.rmtree, fresh, ignore_errors=True)
        warnings.warn(f"the clip cache folder {path} is not this user's own (or others may write to it), so it is not "
                      f"used; caching in {fresh} for this run (set SKELANIM_CACHE to keep a cache)", stacklevel=2)
    return _PRIVATE[path]


#: The private cache folder this process uses in place of each refused temporary one (:func:`temporary_cache`).
_PRIVATE: dict[Path, Path] = {}


def check_outside(cache: Path, files: list[Path]) -> None:
    """Raise :class:`~skelanim.errors.TrainingDataError` (a ``ValueError``) when the cache's ``clips/`` folder,
    where it writes, is or lies in the folder of one of ``files`` (data stays read-only; a cache folder named
    ``.../clips`` was checked, not the ``clips/`` in it)."""
    clips = (cache / "clips").resolve()
    for folder in {f.resolve().parent for f in files}:
        if clips == folder or folder in clips.parents:
            raise TrainingDataError(f"cache directory {cache} is inside the data folder {folder}; pick another "
                                    "(SKELANIM_CACHE)")  # fmt: skip


def cache_outside(files: list[Path], override: str | os.PathLike | None = None) -> Path:
    """:func:`cache_dir`, checked to lie outside the data (:func:`check_outside`). The default one that does not
    (data files kept in the home folder, whose ``~/.cache`` then lies in their folder) gives way to
    :func:`temporary_cache`; one chosen (``override``, ``$SKELANIM_CACHE``) is refused."""
    chosen = _chosen(override)
    if chosen is not None:
        check_outside(chosen, files)  # before it is made: a refused folder had been left behind in the data
        return _created(chosen)
    base = _default_base()
    try:
        check_outside(base, files)
    except TrainingDataError:
        pass
    else:
        if _writable(base):
            return base
    where = temporary_cache()
    check_outside(where, files)
    return where


def cache_key(path: str | os.PathLike, **settings: Any) -> str:
    """Hex key of a source file and the settings its clip was built with.

    Parameters
    ----------
    path : path
        The source motion file (must exist).
    **settings
        JSON-serialisable build settings (``fps=25.0``, ...).

    Returns
    -------
    str
        40 hex digits.
    """
    p = Path(path).resolve()
    st = p.stat()
    # the change time and inode too: a file edited with its size and mtime kept (cp -p, rsync -t, an archive) or
    # replaced by another of the same size and mtime had been served from the stale entry
    blob = json.dumps({"path": str(p), "size": st.st_size, "mtime": st.st_mtime_ns, "ctime": st.st_ctime_ns,
                       "inode": st.st_ino, "version": CACHE_VERSION, "settings": settings}, sort_keys=True)  # fmt: skip
    return hashlib.sha1(blob.encode()).hexdigest()


def _entry(cache: Path, key: str) -> Path:
    return cache / "clips" / f"{key}.safetensors"


def _digest(tensors: dict[str, torch.Tensor], meta: str) -> str:
    """BLAKE2b of the JSON metadata ``meta`` and the tensors' names, dtypes, shapes and bytes, in name order (the
    metadata too: an entry whose height, frame rate or joint names had been changed was served as it was)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(meta.encode())
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        h.update(json.dumps([name, str(t.dtype), list(t.shape)]).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def read_cached(cache: Path, key: str) -> tuple[dict[str, torch.Tensor], dict[str, Any]] | None:
    """The tensors and metadata stored under ``key``, or ``None`` when absent, unreadable, or not what was written
    (their digest differs from the one stored beside them, or there is none)."""
    path = _entry(cache, key)
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as handle:
            stored = handle.metadata() or {}
            meta = json.loads(stored["meta"])
        tensors = load_file(str(path))
    except (SafetensorError, OSError, KeyError, ValueError, RuntimeError):
        return None
    return (tensors, meta) if stored.get("digest") == _digest(tensors, stored["meta"]) else None


def write_cached(cache: Path, key: str, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Store ``tensors`` and JSON ``meta`` under ``key`` (atomically), with the digest :func:`read_cached` checks."""
    path = _entry(cache, key)
    tensors = {k: v.contiguous() for k, v in tensors.items()}
    text = json.dumps(meta)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={"meta": text, "digest": _digest(tensors, text)})
