"""Atomic writes (skelanim.io.atomic): all or nothing, no temporary files left, ordinary permissions."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import numpy as np
import pytest

from skelanim.io.atomic import atomic_open, atomic_path, atomic_paths, removed_if_empty


def test_text_and_binary_writes_replace_the_target(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "out.txt"
    with atomic_open(target) as handle:
        handle.write("é\nline\n")
    assert target.read_bytes() == "é\nline\n".encode()  # UTF-8, \n newlines
    with atomic_open(target, "wb") as handle:
        handle.write(b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert os.listdir(target.parent) == ["out.txt"]


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_atomic_path_keeps_the_suffix_for_writers_that_want_a_name(tmp_path: Path) -> None:
    target = tmp_path / "arrays.npz"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".npz" and tmp.parent == tmp_path
        assert tmp.name.startswith(".arrays.tmp-")  # hidden and marked: folder listings skip a killed write's file
        np.savez(tmp, a=np.arange(3))  # np.savez would add .npz to a name without it
    assert np.load(target)["a"].tolist() == [0, 1, 2]
    assert os.listdir(tmp_path) == ["arrays.npz"]


def test_permissions_follow_the_umask_not_mkstemp(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        with atomic_open(tmp_path / "a.txt") as handle:
            handle.write("x")
        (tmp_path / "b.txt").write_text("x")  # what an ordinary open() gives
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == stat.S_IMODE((tmp_path / "b.txt").stat().st_mode)


# ----------------------------------------------------------------------------- errors name the output asked for
def _one_error(target: Path) -> OSError:
    with pytest.raises(OSError) as info, atomic_open(target) as handle:
        handle.write("x")
    return info.value


def test_output_that_is_a_directory_names_the_output(tmp_path: Path) -> None:
    target = tmp_path / "dir.bvh"
    target.mkdir()
    err = _one_error(target)
    assert isinstance(err, IsADirectoryError)
    assert err.filename == str(target) and "Is a directory" in err.strerror and "expected a file name" in err.strerror
    assert os.listdir(tmp_path) == ["dir.bvh"] and os.listdir(target) == []


def test_output_under_a_plain_file_names_the_output_and_the_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    for target in (tmp_path / "afile" / "x.bvh", tmp_path / "afile" / "deeper" / "x.bvh"):
        err = _one_error(target)
        assert isinstance(err, NotADirectoryError)
        assert err.filename == str(target) and f"{tmp_path / 'afile'} is a file" in err.strerror
    assert os.listdir(tmp_path) == ["afile"]


def test_unwritable_folder_names_the_output_not_the_temporary_file(tmp_path: Path, monkeypatch) -> None:
    """A read-only folder (simulated: the tests may run as root, who may write anywhere)."""
    target = tmp_path / "out.bvh"

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / ".out.x1y2z3.bvh"))

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    err = _one_error(target)
    assert isinstance(err, PermissionError) and err.errno == 13
    assert err.filename == str(target) and err.strerror.startswith("Permission denied (cannot create a file in")
    assert ".out." not in str(err)
    assert os.listdir(tmp_path) == []


def test_failed_rename_names_the_output_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")

    def denied(src, dst):
        raise PermissionError(13, "Permission denied", src, None, dst)

    monkeypatch.setattr(os, "replace", denied)
    err = _one_error(target)
    assert err.filename == str(target) and err.strerror == "Permission denied (cannot replace it)"
    assert os.listdir(tmp_path) == ["out.txt"] and target.read_text() == "old"


def test_write_error_without_a_file_name_gets_the_output(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(OSError) as info, atomic_open(target, "wb"):
        raise OSError(28, "No space left on device")
    assert info.value.filename == str(target) and info.value.strerror == "No space left on device (while writing)"
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_real_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        err = _one_error(folder / "out.bvh")
        assert err.filename == str(folder / "out.bvh") and "Permission denied" in err.strerror
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o755)


def test_a_read_only_file_system_is_called_so_not_permission_denied(tmp_path: Path, monkeypatch) -> None:
    """An audit: ``check_can_write`` (the CLI's check before any work) asked ``os.access``, which says no on a read-only
    mount too, and said "Permission denied" there, where ``save`` said "Read-only file system". Simulated as the
    kernel answers: ``access`` no, making a file EROFS, the file system's flags ST_RDONLY."""
    import errno

    from skelanim.io import atomic
    from skelanim.io.atomic import check_can_write

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(atomic.os, "access", lambda path, mode: not mode & os.W_OK)
    monkeypatch.setattr(tempfile, "mkstemp", read_only)

    def errors(target: Path) -> list[OSError]:  # what the CLI's check and what a save raise
        with pytest.raises(OSError) as info:
            check_can_write(target)
        return [info.value, _one_error(target)]

    target = tmp_path / "sub" / "out.bvh"
    for error in errors(target):
        assert (error.errno, error.filename) == (errno.EROFS, str(target))
        assert error.strerror.startswith("Read-only file system (cannot create a file in")
    existing = tmp_path / "old.bvh"  # a file there, which the rename would replace
    existing.write_text("old")
    flags = os.statvfs(tmp_path)
    monkeypatch.setattr(atomic.os, "statvfs", lambda path: type("F", (), {"f_flag": flags.f_flag | os.ST_RDONLY})())
    for error in errors(existing):
        assert (error.errno, error.strerror) == (errno.EROFS, "Read-only file system (cannot replace it)")
    assert existing.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["old.bvh"]


def test_a_batch_is_published_whole_or_not_at_all(tmp_path: Path) -> None:
    targets = [tmp_path / f"f{i}.txt" for i in range(3)]
    targets[1].write_text("old")
    with pytest.raises(OSError) as caught, atomic_paths(targets) as temps:  # the third write fails: a full disk
        for i, tmp in enumerate(temps):
            assert tmp.parent == tmp_path and tmp.suffix == ".txt" and tmp != targets[i]
            if i == 2:
                raise OSError(28, "No space left on device", str(tmp))
            tmp.write_text(f"new {i}")
    assert caught.value.filename == str(targets[2]) and "while writing" in caught.value.strerror
    assert sorted(os.listdir(tmp_path)) == ["f1.txt"] and targets[1].read_text() == "old"  # nothing of the batch
    with atomic_paths(targets) as temps:
        for i, tmp in enumerate(temps):
            tmp.write_text(f"new {i}")
    assert [t.read_text() for t in targets] == ["new 0", "new 1", "new 2"] and len(os.listdir(tmp_path)) == 3


def test_a_short_write_on_a_full_disk_says_so(tmp_path: Path, monkeypatch) -> None:
    """numpy reports a full disk as "N requested and M written" with no errno: the error says the disk is full."""
    import collections
    import errno
    import shutil

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6, 0))
    target = tmp_path / "x.npy"
    with pytest.raises(OSError) as caught, atomic_path(target) as tmp:
        raise OSError("12870 requested and 8176 written")  # numpy's message, no errno
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(target)
    assert caught.value.strerror.startswith("No space left on device: 12870 requested") and not target.exists()
    assert tmp.parent == tmp_path and list(tmp_path.iterdir()) == []


def test_a_name_near_the_file_systems_limit_is_written(tmp_path):
    """A 250-character file name is legal (255 bytes), but its temporary name had 10 more and was refused as
    "File name too long" (an audit's finding); the temporary name keeps only the first part of the target's."""
    import skelanim
    from skelanim.data.samples import sample_path

    target = tmp_path / ("w" * 246 + ".bvh")
    assert len(target.name) == 250
    motion = skelanim.load(sample_path("walk"))
    skelanim.save(motion, target)
    assert skelanim.load(target).num_frames == motion.num_frames and sorted(p.name for p in tmp_path.iterdir()) == [target.name]


def test_a_long_name_of_wide_characters_is_written(tmp_path):
    """An audit: 61 four-byte emoji (244 bytes) + ``.bvh`` is a legal name, but the temporary name kept 64
    characters (256 bytes) of it and was refused as "File name too long"; it now keeps 64 bytes."""
    import skelanim
    from skelanim.data.samples import sample_path

    target = tmp_path / ("\U0001F600" * 61 + ".bvh")
    assert len(target.name.encode()) == 248
    motion = skelanim.load(sample_path("walk"))
    skelanim.save(motion, target)
    assert skelanim.load(target).num_frames == motion.num_frames and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_replaced_file_keeps_its_permissions_and_a_link_is_written_through(tmp_path: Path) -> None:
    """A CLI audit: a private 0600 file came back 0644 (the rename put a new file with default permissions in its
    place), and a symbolic link was replaced by a plain file instead of written through."""
    private = tmp_path / "private.txt"
    private.write_text("old")
    private.chmod(0o600)
    with atomic_open(private) as handle:
        handle.write("new")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text() == "new"
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old")
    link.symlink_to(real)
    with atomic_open(link) as handle:
        handle.write("through")
    assert link.is_symlink() and real.read_text() == "through" and sorted(os.listdir(tmp_path)) == [
        "link.txt", "private.txt", "real.txt"]  # fmt: skip
    loop_a, loop_b = tmp_path / "loop_a", tmp_path / "loop_b"
    loop_a.symlink_to(loop_b)
    loop_b.symlink_to(loop_a)
    with pytest.raises(OSError, match="link loop"), atomic_open(loop_a) as handle:  # as open() refuses it
        handle.write("x")
    assert loop_a.is_symlink() and loop_b.is_symlink()


def test_a_read_only_file_is_refused_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``open`` refuses it (the rename had replaced a 0444 file); root may write it, so the check is shown with
    ``os.access`` answering as for another user, and for real below when not root."""
    from skelanim.io import atomic

    target = tmp_path / "keep.txt"
    target.write_text("kept")
    target.chmod(0o444)
    monkeypatch.setattr(atomic.os, "access", lambda path, mode: not (Path(path) == target and mode & os.W_OK))
    with pytest.raises(PermissionError, match="the file is read-only") as info, atomic_open(target) as handle:
        handle.write("lost")
    assert info.value.filename == str(target) and target.read_text() == "kept" and os.listdir(tmp_path) == ["keep.txt"]
    monkeypatch.undo()
    if os.geteuid() != 0:
        with pytest.raises(PermissionError), atomic_open(target) as handle:
            handle.write("lost")
        assert target.read_text() == "kept"


def test_a_nested_atomic_write_says_what_failed_once(tmp_path: Path) -> None:
    """A CLI audit: `generate` on a full disk said "No space left on device (while writing) (while writing)" (a
    batch of atomic paths, each written by an atomic save)."""
    from skelanim.io.atomic import atomic_paths

    with pytest.raises(OSError) as info, atomic_paths([tmp_path / "a.bvh"]) as (tmp,), atomic_open(tmp) as handle:
        handle.write("x")
        raise OSError(28, "No space left on device")
    assert info.value.strerror == "No space left on device (while writing)" and info.value.filename == str(tmp_path / "a.bvh")
    assert os.listdir(tmp_path) == []


def test_a_failed_write_removes_the_folders_it_made_and_only_those(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "new" / "sub" / "a.txt") as f:
        f.write("half")
        raise RuntimeError("interrupted")
    assert list(tmp_path.iterdir()) == []  # new/sub had been left behind, empty
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError), atomic_paths([tmp_path / "kept" / "x" / "a.npz", tmp_path / "y" / "b.npz"]):
        (tmp_path / "kept" / "note.txt").write_text("someone else's")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]  # it existed: kept, with what was put there
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["note.txt"]
    with atomic_open(tmp_path / "made" / "deep" / "c.txt") as f:
        f.write("whole")
    assert (tmp_path / "made" / "deep" / "c.txt").read_text() == "whole"  # a success keeps its folders


def test_removed_if_empty_leaves_a_folder_that_got_a_file(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt), removed_if_empty(out, out / "vae"):
        (out / "vae").mkdir(parents=True)
        raise KeyboardInterrupt
    assert not out.exists()
    with pytest.raises(KeyboardInterrupt), removed_if_empty(out):
        out.mkdir()
        (out / "log.txt").write_text("x")
        raise KeyboardInterrupt
    assert (out / "log.txt").exists()


def test_only_the_folders_this_write_made_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A review: the folders to remove had been the spellings that did not exist at the start, so an interrupted
    write to ``new/../results/a.gif`` removed the user's ``results`` too, ``../new/../<cwd>/out.bvh`` the working
    directory, and a folder another process made meanwhile was removed as if it were ours."""
    results = tmp_path / "results"
    results.mkdir()
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "new" / ".." / "results" / "a.gif", "wb"):
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # 'new' (made for the path) removed, not results
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    with pytest.raises(RuntimeError), atomic_open(Path("..") / "new2" / ".." / "work" / "out.bvh"):
        raise RuntimeError("interrupted")
    assert work.is_dir() and os.getcwd() == str(work)
    real_mkdir = os.mkdir

    def someone_else_first(path, *args, **kwargs):  # another process makes the folder between our look and mkdir
        real_mkdir(path, *args, **kwargs)
        raise FileExistsError(17, "File exists", str(path))

    monkeypatch.setattr(os, "mkdir", someone_else_first)
    with pytest.raises(RuntimeError), atomic_open(tmp_path / "theirs" / "b.txt"):
        raise RuntimeError("interrupted")
    assert (tmp_path / "theirs").is_dir()
    monkeypatch.setattr(os, "mkdir", real_mkdir)
    with pytest.raises(KeyboardInterrupt), removed_if_empty(tmp_path / "new3" / ".." / "results"):
        (tmp_path / "new3").mkdir()
        raise KeyboardInterrupt
    assert results.is_dir()


def test_the_folders_made_before_a_level_that_cannot_be_made_are_removed(tmp_path: Path) -> None:
    """A review: a name too long for the file system one level down left the folder made above it."""
    with pytest.raises(OSError, match="cannot create the folder"), atomic_open(tmp_path / "keep1" / ("x" * 300) / "a.txt"):
        pass
    assert list(tmp_path.iterdir()) == []
